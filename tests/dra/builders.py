"""DRA objects and example inputs the DRA tests share: claims allocated as kube-scheduler
leaves them, and an example's manifests as one text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodewright.api.core import Pod
from nodewright.api.resource import ResourceClaim
from nodewright.scheduling.dra.pools import NODE_NAME_FIELD
from nodewright.testing.catalog import GPU_DRIVER
from tests.disruption.harness import Harness

#: What a pod whose claim no instance type's devices can meet is told.
NO_INSTANCE_TYPE_FOR_ALLOCATION = (
    'Failed to schedule pod, incompatible with nodepool "default", allocating dynamic '
    "resources, no instance type can satisfy the allocation"
)


def example_manifests(example: Path) -> str:
    """Every manifest of an example, in file order, as one multi-document text."""
    return "\n---\n".join(p.read_text() for p in sorted((example / "manifests").iterdir()))


def claim_spec(**exactly: Any) -> dict[str, Any]:
    """A claim's spec: one request ``gpu`` of device class ``gpu``, with ``exactly``'s fields."""
    return {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", **exactly}}]}
    }


def allocated_claim(
    harness: Harness,
    claim: str,
    result: dict[str, Any],
    consumers: list[Pod],
    *,
    spec: dict[str, Any] | None = None,
    node: str | None = None,
) -> None:
    """Create claim ``claim`` allocated ``result`` (its pool, device, and any share) for request
    ``gpu`` and reserved for ``consumers``; ``node`` names the node a node-local pool's device
    ties it to."""
    allocation: dict[str, Any] = {
        "devices": {"results": [{"request": "gpu", "driver": GPU_DRIVER, **result}]}
    }
    if node is not None:
        allocation["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}
            ]
        }
    harness.cluster.create(
        ResourceClaim.model_validate(
            {
                "metadata": {"name": claim, "namespace": "default"},
                "spec": spec if spec is not None else claim_spec(),
                "status": {
                    "allocation": allocation,
                    "reservedFor": [
                        {"resource": "pods", "name": p.name, "uid": p.metadata.uid}
                        for p in consumers
                    ],
                },
            }
        )
    )
