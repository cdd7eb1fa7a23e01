"""NodeClass hashes on NodeClaims: what providers compare to tell static drift.

A provider returns its NodeClass hash in ``Instance.annotations`` at launch, with a hash
version. Hashes of different versions cannot be compared, so a claim stamped under another
version (Karpenter's own, or an older release) would never drift. :func:`restamp_hashes`
does what Karpenter's hash controllers do on a version change: stamp the class's current
hash on such claims, so later changes to the class drift them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.cluster import ConflictError
from nodewright.cluster.objects import mutable
from nodewright.plugin.model import ProviderCluster

log = logging.getLogger("nodewright.plugin.hashes")

C = TypeVar("C", bound=NodeClass)


def restamp_hashes(
    cluster: ProviderCluster,
    model: type[C],
    version_annotation: str,
    version: str,
    annotations_for: Callable[[C], Mapping[str, str]],
) -> list[str]:
    """Stamp ``annotations_for(node class)`` on launched NodeClaims of ``model`` whose
    ``version_annotation`` is not ``version``; return their names.

    Claims not launched yet are left to their launch; a claim written meanwhile (a conflict)
    is left to the next call.
    """
    group = model.API_VERSION.split("/", 1)[0]
    restamped: list[str] = []
    for claim in cluster.list(NodeClaim):
        ref = claim.spec.node_class_ref
        annotations = claim.metadata.annotations
        if (
            ref.group != group
            or ref.kind != model.KIND
            or claim.metadata.deletion_timestamp is not None
            or not claim.status.provider_id
            or annotations.get(version_annotation) == version
        ):
            continue
        node_class = cluster.get(model, ref.name)
        if not isinstance(node_class, model):
            continue
        stamped = mutable(claim)
        stamped.metadata.annotations = {**annotations, **annotations_for(node_class)}
        try:
            cluster.update(stamped)
        except ConflictError:
            continue
        restamped.append(claim.name)
        log.info("NodeClaim %s: %s hash re-stamped as %s", claim.name, model.KIND, version)
    return restamped
