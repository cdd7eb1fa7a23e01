"""The rest of Kubernetes, as much of it as a node-autoscaling simulation needs.

A simulated cluster needs the controllers that turn workloads into pods (Deployment,
ReplicaSet, StatefulSet, Job, DaemonSet), a scheduler that binds pending pods to nodes that
fit them and explains why the others do not fit, a kubelet that starts pods on nodes the
KWOK provider does not manage, pod garbage collection for vanished nodes, and persistent
volume provisioning. :class:`EmbeddedKubernetes` runs them all, one pass per
:meth:`~EmbeddedKubernetes.reconcile`, against a :class:`~nodewright.cluster.memory.
MemoryCluster`; each lives in a module of its own here.

Each controller is a simplified, deterministic version of the real one: objects are visited
in namespace/name order, generated names come from the store's seeded generator, and there
are no rollouts, backoffs or ordered start-up. What nodewright can observe (which pods exist,
where they are bound, why the others are pending, where their volumes live) follows
Kubernetes.
"""

from __future__ import annotations

from nodewright.simulation.kubernetes.embedded import EmbeddedKubernetes

__all__ = ["EmbeddedKubernetes"]
