"""Provisioning: pending pods to NodeClaims, with the default topology spread they are given."""
