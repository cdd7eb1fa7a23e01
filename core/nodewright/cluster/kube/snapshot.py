"""A read-only snapshot of a cluster for ``simulate --from-cluster``: one paged list (GET) per
kind, no watch, no cache, and nothing ever written.

Kinds the server does not serve (no Karpenter CRDs, no CSINodes) are left out. The items come
back as the server wrote them, each with its ``apiVersion`` and ``kind``, to be read and
cleaned like a ``kubectl get -o yaml`` dump.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.meta import KubeObject
from nodewright.cluster import ClusterError
from nodewright.cluster.kube.adapter import KubeCluster
from nodewright.cluster.kube.routing import collection_path, plural_of
from nodewright.cluster.kube.transport import (
    ClientSettings,
    ServerUnavailableError,
    Transport,
)

#: Objects asked for per list call (the API server's pages, as kubectl's ``--chunk-size``).
PAGE_SIZE = 500
#: A snapshot is a one-off: fail soon when the server cannot be reached.
SNAPSHOT_SETTINGS = ClientSettings(connect_timeout=5.0, request_timeout=60.0, max_attempts=3)


@dataclass
class ClusterSnapshot:
    #: The API server's address (never its credentials).
    server: str
    items: list[dict[str, Any]] = field(default_factory=list)
    #: Kinds the server does not serve (404 on their list).
    not_served: list[str] = field(default_factory=list)


def take_snapshot(
    kinds: Sequence[type[KubeObject]],
    kubeconfig: str | None = None,
    context: str | None = None,
    settings: ClientSettings = SNAPSHOT_SETTINGS,
) -> ClusterSnapshot:
    """List every object of ``kinds`` in all namespaces; raises ``ClusterError`` (credentials
    that do not load, a server that cannot be reached or refuses a list)."""
    cluster = KubeCluster.connect(kubeconfig, context, settings, in_cluster=False)
    try:
        snapshot = ClusterSnapshot(cluster.host)
        for kind in kinds:
            items = list_all(cluster._api, kind)
            if items is None:
                snapshot.not_served.append(kind.KIND)
            else:
                snapshot.items.extend(items)
        return snapshot
    except ServerUnavailableError as error:
        raise ServerUnavailableError(
            f"the API server {cluster.host} cannot be reached: {error}"
        ) from None
    finally:
        cluster.close()


def list_all(api: Transport, kind: type[KubeObject]) -> list[dict[str, Any]] | None:
    """Every ``kind`` object, page by page; None when the server does not serve the kind."""
    items: list[dict[str, Any]] = []
    token = ""
    path = collection_path(kind, None)
    while True:
        query = {"limit": str(PAGE_SIZE)}
        if token:
            query["continue"] = token
        answer = api.call("GET", path, query)
        if answer.status == 404 and not items:
            return None
        if not 200 <= answer.status < 300:
            raise ClusterError(
                f"listing {plural_of(kind.KIND)}: HTTP {answer.status} {answer.message}"
            )
        for item in answer.body.get("items") or []:
            if isinstance(item, dict):
                item["apiVersion"] = kind.API_VERSION
                item["kind"] = kind.KIND
                items.append(item)
        metadata = answer.body.get("metadata")
        token = str(metadata.get("continue") or "") if isinstance(metadata, dict) else ""
        if not token:
            return items
