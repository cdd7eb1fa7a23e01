"""What every object of the EKS dump (:mod:`providers.aws.tests.eks_dump`) carries as the API
server lists it: a UID, a resourceVersion, managedFields, a creation time; and the random-looking
suffixes kube-controller-manager gives generated names."""

from __future__ import annotations

import hashlib
from typing import Any

CREATED = "2026-03-02T08:15:00Z"
#: The alphabet of the random suffixes and hashes kube-controller-manager writes.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: (type, vCPU, memory GiB, allocatable memory Mi, pods): what a node of it reports.


def suffix(seed: str, length: int = 5) -> str:
    """A stable stand-in for the random suffix of a generated name."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def uid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def object_metadata(
    kind: str, name: str, namespace: str | None = "default", **extra: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "uid": uid(f"{kind}/{namespace}/{name}"),
        "resourceVersion": "81234567",
        "creationTimestamp": CREATED,
        "managedFields": [
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "time": CREATED,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {}},
            }
        ],
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata.update(extra)
    return metadata


def controller_owner(
    api_version: str, kind: str, name: str, namespace: str = "default"
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid(f"{kind}/{namespace}/{name}"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
