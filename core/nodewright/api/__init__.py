"""API models: Kubernetes and Karpenter kinds as typed, validated data.

Nothing in this package does I/O. :mod:`nodewright.api.karpenter` holds NodePool, NodeClaim
and the NodeClass base; :mod:`nodewright.api.core` and :mod:`nodewright.api.apps` the
Kubernetes kinds the controllers use; :mod:`nodewright.api.validation` Karpenter's
validation rules, :mod:`nodewright.api.names` the syntax of names and labels, and
:mod:`nodewright.api.fielderror` the problem every check reports;
:mod:`nodewright.api.manifests` turns YAML documents into models.
"""
