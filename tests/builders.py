"""Kubernetes objects for the core's tests: pods, pod templates, Deployments and NodePool
manifests as dicts, built the one way every test builds them (manifest text for ``simulate``
is :mod:`nodewright.testing.manifests`).

Fields the builders do not name pass through as the API spells them (``nodeSelector=...``,
``meta={"generateName": "web-"}``), so a test states only what it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.api.apps import Deployment
from nodewright.api.core import Pod
from nodewright.api.meta import OwnerReference
from nodewright.testing.manifests import KWOK_NODE_CLASS_REF

NAMESPACE = "default"


def controller_ref(kind: str, name: str, uid: str, api_version: str = "apps/v1") -> OwnerReference:
    """The owner reference a workload controller (ReplicaSet, DaemonSet, ...) sets on its pods."""
    return OwnerReference(api_version=api_version, kind=kind, name=name, uid=uid, controller=True)


def container(
    name: str = "app",
    *,
    image: str | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One container; ``requests`` and ``limits`` None leave them unset."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {
        "name": name,
        **({"image": image} if image is not None else {}),
        **({"resources": resources} if resources else {}),
    }


def pod(
    name: str,
    *,
    namespace: str | None = NAMESPACE,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: OwnerReference | None = None,
    node: str | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    image: str | None = None,
    container_name: str = "app",
    meta: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Pod:
    """A pod; it has one container when ``requests``, ``limits`` or ``image`` is given and none
    otherwise, ``namespace`` None leaves the namespace for the server to fill, ``meta`` and
    ``spec`` are more metadata and spec fields."""
    metadata: dict[str, Any] = {"name": name, **(meta or {})}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    if node is not None:
        spec = {"nodeName": node, **spec}
    if requests is not None or limits is not None or image is not None:
        made = container(container_name, image=image, requests=requests, limits=limits)
        spec = {"containers": [made], **spec}
    return Pod.model_validate({"metadata": metadata, "spec": spec})


def pod_template(
    app: str, cpu: str = "1", *, image: str | None = None, **spec: Any
) -> dict[str, Any]:
    """A pod template labelled ``app: <app>`` with one container asking for ``cpu``."""
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [container(image=image, requests={"cpu": cpu})], **spec},
    }


def deployment(
    name: str,
    replicas: int,
    cpu: str = "1",
    *,
    namespace: str = NAMESPACE,
    image: str | None = None,
    **spec: Any,
) -> Deployment:
    """A Deployment of :func:`pod_template` pods labelled ``app: <name>``."""
    return Deployment.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(name, cpu, image=image, **spec),
            },
        }
    )


def pool_manifest(
    name: str = "default",
    *,
    policy: str | None = "WhenEmptyOrUnderutilized",
    consolidate_after: str | None = "0s",
    budgets: list[dict[str, Any]] | None = None,
    requirements: list[dict[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    expire_after: str | None = "720h",
    limits: Mapping[str, str] | None = None,
    weight: int | None = None,
) -> dict[str, Any]:
    """A NodePool over the default KWOKNodeClass as a dict (for ``NodePool.model_validate`` or
    a CRD's rules). The defaults let every node be disrupted at once (budget ``100%``); None
    leaves a field unset."""
    template_spec: dict[str, Any] = {
        "requirements": requirements or [],
        "nodeClassRef": dict(KWOK_NODE_CLASS_REF),
    }
    if expire_after is not None:
        template_spec["expireAfter"] = expire_after
    disruption: dict[str, Any] = {}
    if policy is not None:
        disruption["consolidationPolicy"] = policy
    if consolidate_after is not None:
        disruption["consolidateAfter"] = consolidate_after
    disruption["budgets"] = budgets if budgets is not None else [{"nodes": "100%"}]
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": dict(labels or {})}, "spec": template_spec},
        "disruption": disruption,
    }
    if limits is not None:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }
