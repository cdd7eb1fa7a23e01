"""The :class:`~nodewright.cluster.Cluster` adapter over a real Kubernetes API server.

This is the only package that talks to the API server (and imports the ``kubernetes``
client, in :mod:`.credentials`). It keeps the semantics of
:class:`~nodewright.cluster.memory.MemoryCluster` that controllers rely on:

* reads come from a list+watch cache per kind (started on first use, listed a page at a
  time, its watch resumed where it broke, relisted on 410 Gone and every
  ``resync_period``), holding each object trimmed to what nodewright reads; the cache also
  takes in what this process writes, so a controller reads its own writes at once;
* writes go to the server with the object's ``resourceVersion`` (409 -> ConflictError, the
  caller re-reads and retries); ``update`` replaces metadata and spec and ``update_status``
  the status subresource; a ``create`` carrying a status writes it through the status
  subresource, as the in-memory store keeps it;
* ``bind`` posts a Binding and ``evict`` an Eviction (429 -> EvictionBlockedError);
* every call waits for a client-side token bucket (QPS and burst), has a timeout, and is
  retried with exponential backoff on 429 (honouring Retry-After) and, for reads, on 5xx
  and broken connections; no write is sent while the fence (:mod:`nodewright.cluster.fence`)
  is closed, nor waited for past it;
* Events are queued and written by a background thread (:meth:`KubeCluster.record_event`).

Kinds are routed by their model's ``API_VERSION`` and ``KIND``; the REST plural comes from
:func:`plural_of`. Credentials live in the client's configuration and are never logged.

One concept per module: :mod:`.transport` (HTTP, rate limit, retries, errors),
:mod:`.credentials` (the HTTP client from a kubeconfig or the service account),
:mod:`.routing` (paths), :mod:`.patch` (JSON patches and preconditions), :mod:`.events`
(events.k8s.io/v1 translation), :mod:`.eventwriter` (the queue and thread that write Events),
:mod:`.informer` (list+watch cache), :mod:`.slim` (what the caches keep of each object),
:mod:`.replace` (replacing an object the caches keep trimmed), :mod:`.lease` (the leader
election's Lease requests), :mod:`.adapter` (:class:`KubeCluster`).
"""

from nodewright.cluster.kube.adapter import KubeCluster
from nodewright.cluster.kube.events import EVENT_ACTIONS, EVENTS_V1, event_from_v1, event_to_v1
from nodewright.cluster.kube.patch import JSON_PATCH, MERGE_PATCH, json_patch
from nodewright.cluster.kube.routing import collection_path, object_path, plural_of
from nodewright.cluster.kube.transport import (
    ClientSettings,
    ServerUnavailableError,
    TokenBucket,
    TooManyRequestsError,
)

__all__ = [
    "EVENTS_V1",
    "EVENT_ACTIONS",
    "JSON_PATCH",
    "MERGE_PATCH",
    "ClientSettings",
    "KubeCluster",
    "ServerUnavailableError",
    "TokenBucket",
    "TooManyRequestsError",
    "collection_path",
    "event_from_v1",
    "event_to_v1",
    "json_patch",
    "object_path",
    "plural_of",
]
