"""Manifest text for tests: NodePools, Deployments, pods and PodDisruptionBudgets as a user
writes them, to feed ``nodewright simulate``, a simulated cluster or an API server.

Each builder returns one YAML document ending in ``---``, so documents concatenate::

    simulate(KWOK_NODE_CLASS + node_pool(requirements=...) + deployment("web", 3))

A provider's tests pass their own NodeClass as ``node_class_ref`` (the KWOK one is the default),
e.g. ``{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from types import MappingProxyType

#: ``spec.template.spec.nodeClassRef`` of the default KWOKNodeClass below.
KWOK_NODE_CLASS_REF: Mapping[str, str] = MappingProxyType(
    {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
)


def kwok_node_class(name: str = "default") -> str:
    """A KWOKNodeClass (it has no spec)."""
    return f"""
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: {name}
---
"""


KWOK_NODE_CLASS = kwok_node_class()


def node_pool(
    name: str = "default",
    *,
    weight: int | None = 1,
    requirements: str = "[]",
    taints: str = "[]",
    limits: str = "{}",
    labels: str = "{}",
    template_spec: str = "",
    disruption: str | None = None,
    replicas: int | None = None,
    node_class_ref: Mapping[str, str] = KWOK_NODE_CLASS_REF,
) -> str:
    """A NodePool; ``requirements``, ``taints``, ``limits``, ``labels`` and ``disruption``
    are YAML flow text, ``template_spec`` more YAML lines for ``spec.template.spec``;
    ``weight``, ``disruption`` and ``replicas`` (a static NodePool's) None leave them unset."""
    weight_line = "" if weight is None else f"\n  weight: {weight}"
    replicas_line = "" if replicas is None else f"\n  replicas: {replicas}"
    disruption_line = "" if disruption is None else f"\n  disruption: {disruption}"
    extra = "\n" + _indent(template_spec, 6) if template_spec else ""
    ref = "".join(f"\n        {key}: {value}" for key, value in node_class_ref.items())
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:{weight_line}{replicas_line}{disruption_line}
  template:
    metadata:
      labels: {labels}
    spec:
      requirements: {requirements}
      taints: {taints}
      nodeClassRef:{ref}{extra}
  limits: {limits}
---
"""


def deployment(
    name: str,
    replicas: int,
    cpu: str = "1",
    memory: str | None = "100Mi",
    *,
    namespace: str = "default",
    annotations: str = "{}",
    extra_spec: str = "",
    container: str = "app",
    image: str = "pause",
) -> str:
    """A Deployment of ``replicas`` pods labelled ``app: <name>``, each requesting ``cpu`` and
    ``memory`` (None: no memory request); ``extra_spec`` is more YAML for the pod spec,
    ``annotations`` YAML flow text for the pods."""
    spec = _indent(extra_spec, 6)
    requests = _requests(cpu, memory)
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {namespace}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
      annotations: {annotations}
    spec:
{spec}
      containers:
        - name: {container}
          image: {image}
          resources:
            requests: {{{requests}}}
---
"""


def pod(
    name: str = "web",
    *,
    namespace: str = "default",
    labels: str = "{}",
    cpu: str = "1",
    memory: str | None = None,
    container: str = "app",
    image: str = "pause",
    extra: str = "",
) -> str:
    """A bare pod with one container requesting ``cpu`` and ``memory`` (None: no memory
    request); ``labels`` is YAML flow text, ``extra`` more top-level YAML lines (a misspelt
    field, say)."""
    requests = _requests(cpu, memory)
    more = "\n" + textwrap.dedent(extra).strip() if extra else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}
spec:
  containers:
    - name: {container}
      image: {image}
      resources: {{requests: {{{requests}}}}}{more}
---
"""


def pod_disruption_budget(app: str, max_unavailable: int) -> str:
    """A PodDisruptionBudget over the pods labelled ``app: <app>``."""
    return f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {app}, namespace: default}}
spec:
  maxUnavailable: {max_unavailable}
  selector: {{matchLabels: {{app: {app}}}}}
---
"""


def _requests(cpu: str, memory: str | None) -> str:
    return f'cpu: "{cpu}"' if memory is None else f'cpu: "{cpu}", memory: "{memory}"'


def _indent(text: str, spaces: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip(), " " * spaces) if text else ""
