"""Scheduling maths: pure functions over plain data, no I/O.

:mod:`~nodewright.scheduling.requirements` is Karpenter's label-requirement algebra,
:mod:`~nodewright.scheduling.resources` resource arithmetic, :mod:`~nodewright.scheduling.pods`
what a pod asks of a node, and :mod:`~nodewright.scheduling.solver` the solver that places
pods on existing nodes, in-flight NodeClaims and new NodeClaims.
"""
