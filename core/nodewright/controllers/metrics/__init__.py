"""Metrics controllers (per-pod, per-node and per-NodePool series) and the disruption counters
every controller records.
"""
