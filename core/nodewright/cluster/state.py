"""The cluster state: every object an adapter holds, indexed, and kept current by its changes.

Karpenter keeps one in-memory picture of the cluster (``pkg/controllers/state``) that its
informers update and every controller reads. This is nodewright's: both adapters (the
in-memory store and the Kubernetes informers) call :meth:`ClusterState.apply` after each change
they see, and controllers read its indexes and drain :class:`ChangeFeed` s instead of listing
the cluster, so the cost of a pass follows what changed, not how big the cluster is.

Objects held here are shared, never copied on read: treat them as read-only. A controller that
wants to change an object takes :func:`~nodewright.cluster.mutable` copy, changes that and writes
it back; adapters replace stored objects on every write and never mutate one in place, so an
object read once stays exactly as it was read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple, TypeVar, cast

from nodewright.api.apps import PodDisruptionBudget
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.api.meta import KubeObject

T = TypeVar("T", bound=KubeObject)

#: (namespace, name); namespace is "" for cluster-scoped kinds.
Key = tuple[str, str]

TERMINAL_PHASES = ("Succeeded", "Failed")

_EMPTY: Mapping[Key, KubeObject] = {}
#: Kinds also indexed by namespace.
_BY_NAMESPACE: frozenset[type[KubeObject]] = frozenset({Pod, PodDisruptionBudget})
_NO_PODS: Mapping[Key, Pod] = {}
_NO_CLAIMS: Mapping[Key, NodeClaim] = {}
_NO_NODES: Mapping[Key, Node] = {}


def object_key(obj: KubeObject) -> Key:
    """The key an object is stored under."""
    return (obj.metadata.namespace or "", obj.metadata.name) if obj.NAMESPACED else ("", obj.name)


def is_terminal(pod: Pod) -> bool:
    """A pod that finished (Succeeded or Failed) and holds no resources any more."""
    return pod.status.phase in TERMINAL_PHASES


class Change(NamedTuple):
    """The net change to one object since a feed was last drained.

    ``old`` is the object as the feed's reader last saw it (None: created since), ``new`` the
    object as it is now (None: deleted since). A tuple, so a feed builds hundreds of thousands
    of them cheaply.
    """

    kind: type[KubeObject]
    key: Key
    old: KubeObject | None
    new: KubeObject | None


#: Builds a Change from a 4-tuple without NamedTuple's Python-level constructor: a write to a
#: pod is recorded in a dozen feeds, hundreds of thousands of times in a large simulation.
_change = tuple.__new__


def _record(
    pending: dict[tuple[type[KubeObject], Key], Change],
    slot: tuple[type[KubeObject], Key],
    change: Change,
) -> None:
    """Fold ``change`` into a feed's pending changes: one net change per object."""
    earlier = pending.get(slot)
    if earlier is None:
        pending[slot] = change
    elif earlier.old is None and change.new is None:
        del pending[slot]  # created and deleted since the reader looked: nothing
    else:
        pending[slot] = _change(Change, (change.kind, change.key, earlier.old, change.new))


class ChangeFeed:
    """Changes to some kinds, collected between drains, one net :class:`Change` per object.

    A reader keeps one feed and drains it at the start of each pass; its memory is bounded by
    the number of distinct objects that changed, whatever the number of writes.
    """

    def __init__(self, kinds: frozenset[type[KubeObject]]) -> None:
        self.kinds = kinds
        #: (kind, key) -> the net change since the last drain
        self._pending: dict[tuple[type[KubeObject], Key], Change] = {}

    def record(
        self, kind: type[KubeObject], key: Key, old: KubeObject | None, new: KubeObject | None
    ) -> None:
        _record(self._pending, (kind, key), _change(Change, (kind, key, old, new)))

    def drain(self) -> list[Change]:
        """Every net change since the last drain, in the order objects first changed."""
        changes = list(self._pending.values())
        self._pending.clear()
        return changes

    def __len__(self) -> int:
        return len(self._pending)

    def __bool__(self) -> bool:
        return bool(self._pending)


class ClusterState:
    """Objects by kind and key, with the indexes controllers query, updated per change."""

    def __init__(self) -> None:
        self._objects: dict[type[KubeObject], dict[Key, KubeObject]] = {}
        self._sorted_keys: dict[type[KubeObject], list[Key]] = {}
        self._feeds: dict[type[KubeObject], list[ChangeFeed]] = {}
        self._kind_versions: dict[type[KubeObject], int] = {}
        #: Bumped on every change: a cheap "has anything changed" counter.
        self.version = 0
        # -- indexes --
        self._pods_by_node: dict[str, dict[Key, Pod]] = {}
        #: node name -> a counter bumped whenever the pods bound to it change
        self._node_pods_versions: dict[str, int] = {}
        self._unbound_pods: dict[Key, Pod] = {}
        #: provider ID -> node name -> Node (more than one only when something is wrong)
        self._nodes_by_provider_id: dict[str, dict[str, Node]] = {}
        self._claims_by_provider_id: dict[str, NodeClaim] = {}
        self._claims_by_pool: dict[str, dict[Key, NodeClaim]] = {}
        self._nodes_by_pool: dict[str, dict[Key, Node]] = {}
        self._controlled: dict[tuple[type[KubeObject], str], dict[Key, KubeObject]] = {}
        self._by_namespace: dict[tuple[type[KubeObject], str], dict[Key, KubeObject]] = {}

    # -- feeding the state (adapters only) ----------------------------------------------------

    def apply(
        self, kind: type[KubeObject], key: Key, old: KubeObject | None, new: KubeObject | None
    ) -> None:
        """Record that the object at ``key`` changed from ``old`` to ``new`` (None: absent).

        ``new`` is stored as is and must never be mutated afterwards.
        """
        objects = self._objects.setdefault(kind, {})
        if new is None:
            if objects.pop(key, None) is not None:
                self._sorted_keys.pop(kind, None)
        else:
            if key not in objects:
                self._sorted_keys.pop(kind, None)
            objects[key] = new
        self._index(kind, key, old, new)
        self.version += 1
        self._kind_versions[kind] = self._kind_versions.get(kind, 0) + 1
        feeds = self._feeds.get(kind)
        if feeds:
            slot = (kind, key)
            change = _change(Change, (kind, key, old, new))  # shared: a tuple, never changed
            for feed in feeds:
                _record(feed._pending, slot, change)

    def replace(self, kind: type[KubeObject], objects: Mapping[Key, KubeObject]) -> None:
        """Make ``kind``'s objects exactly ``objects`` (a relist), as a series of changes."""
        current = self._objects.get(kind, {})
        for key in [k for k in current if k not in objects]:
            self.apply(kind, key, current[key], None)
        for key, obj in objects.items():
            old = current.get(key)
            if old is not obj:
                self.apply(kind, key, old, obj)

    # -- change feeds ----------------------------------------------------------------------------

    def feed(self, *kinds: type[KubeObject]) -> ChangeFeed:
        """A new feed of changes to ``kinds`` from now on."""
        feed = ChangeFeed(frozenset(kinds))
        for kind in kinds:
            self._feeds.setdefault(kind, []).append(feed)
        return feed

    def held_changes(self) -> int:
        """Changes recorded in feeds and not drained yet (each holds an object's old version)."""
        return sum(
            len(feed) for feed in {id(f): f for fs in self._feeds.values() for f in fs}.values()
        )

    def close(self, feed: ChangeFeed) -> None:
        """Stop recording into ``feed``."""
        for kind in feed.kinds:
            feeds = self._feeds.get(kind, [])
            if feed in feeds:
                feeds.remove(feed)

    def kind_version(self, kind: type[KubeObject]) -> int:
        """A counter bumped by every change to an object of ``kind``."""
        return self._kind_versions.get(kind, 0)

    # -- reads -------------------------------------------------------------------------------

    def objects(self, kind: type[T]) -> Mapping[Key, T]:
        """Every object of ``kind`` by key (live and read-only: do not keep it across writes)."""
        return cast(Mapping[Key, T], self._objects.get(kind, _EMPTY))

    def get(self, kind: type[T], key: Key) -> T | None:
        return cast("T | None", self._objects.get(kind, _EMPTY).get(key))

    def sorted(self, kind: type[T], namespace: str | None = None) -> Iterator[T]:
        """Objects of ``kind`` in namespace/name order (in ``namespace`` only, if given)."""
        objects = self._objects.get(kind)
        if not objects:
            return
        keys = self._sorted_keys.get(kind)
        if keys is None:
            keys = sorted(objects)
            self._sorted_keys[kind] = keys
        if namespace is None:
            for key in keys:
                yield cast(T, objects[key])
            return
        for key in keys:
            if key[0] == namespace:
                yield cast(T, objects[key])

    def count(self, kind: type[KubeObject]) -> int:
        return len(self._objects.get(kind, _EMPTY))

    def pods_on(self, node_name: str) -> Mapping[Key, Pod]:
        """Pods bound to ``node_name`` that have not finished (terminating ones included)."""
        return self._pods_by_node.get(node_name) or _NO_PODS

    def node_pods_version(self, node_name: str) -> int:
        """A counter bumped whenever a pod bound to ``node_name`` changes, comes or goes."""
        return self._node_pods_versions.get(node_name, 0)

    def nodes_with_pods(self) -> Mapping[str, Mapping[Key, Pod]]:
        """Node name → its pods that have not finished, for every node with any."""
        return self._pods_by_node

    def unbound_pods(self) -> Mapping[Key, Pod]:
        """Pods not bound to any node that have not finished (pending ones)."""
        return self._unbound_pods

    def node_by_provider_id(self, provider_id: str) -> Node | None:
        """The Node with that provider ID (the first by name if several claim it)."""
        nodes = self._nodes_by_provider_id.get(provider_id)
        if not nodes:
            return None
        return nodes[min(nodes)] if len(nodes) > 1 else next(iter(nodes.values()))

    def nodes_with_provider_id(self, provider_id: str) -> list[Node]:
        """Every Node with that provider ID, by name (one, unless something is wrong)."""
        nodes = self._nodes_by_provider_id.get(provider_id)
        if not nodes:
            return []
        return [nodes[name] for name in sorted(nodes)]

    def claim_by_provider_id(self, provider_id: str) -> NodeClaim | None:
        return self._claims_by_provider_id.get(provider_id)

    def claim_for(self, node: Node) -> NodeClaim | None:
        """The NodeClaim a node was launched for (joined by provider ID)."""
        if not node.spec.provider_id:
            return None
        return self._claims_by_provider_id.get(node.spec.provider_id)

    def node_for(self, claim: NodeClaim) -> Node | None:
        """The Node a NodeClaim registered as (joined by provider ID)."""
        if not claim.status.provider_id:
            return None
        return self.node_by_provider_id(claim.status.provider_id)

    def claims_of_pool(self, pool: str) -> Mapping[Key, NodeClaim]:
        """NodeClaims labelled with NodePool ``pool``."""
        return self._claims_by_pool.get(pool) or _NO_CLAIMS

    def nodes_of_pool(self, pool: str) -> Mapping[Key, Node]:
        """Nodes labelled with NodePool ``pool``."""
        return self._nodes_by_pool.get(pool) or _NO_NODES

    def controlled_by(self, kind: type[T], owner_uid: str) -> Mapping[Key, T]:
        """Objects of ``kind`` whose controller ownerReference names ``owner_uid``."""
        return cast(Mapping[Key, T], self._controlled.get((kind, owner_uid), _EMPTY))

    def in_namespace(self, kind: type[T], namespace: str) -> Mapping[Key, T]:
        """Objects of ``kind`` in ``namespace``, for the kinds indexed that way (pods, PDBs)."""
        return cast(Mapping[Key, T], self._by_namespace.get((kind, namespace), _EMPTY))

    # -- indexes -------------------------------------------------------------------------------

    def _index(
        self, kind: type[KubeObject], key: Key, old: KubeObject | None, new: KubeObject | None
    ) -> None:
        if old is not None:
            self._unindex(kind, key, old)
        if new is None:
            return
        owner = _controller_uid(new)
        if owner is not None:
            self._controlled.setdefault((kind, owner), {})[key] = new
        if kind in _BY_NAMESPACE:
            self._by_namespace.setdefault((kind, key[0]), {})[key] = new
        if kind is Pod:
            pod = cast(Pod, new)
            if not is_terminal(pod):
                if pod.spec.node_name:
                    self._pods_by_node.setdefault(pod.spec.node_name, {})[key] = pod
                    self._bump_node(pod.spec.node_name)
                else:
                    self._unbound_pods[key] = pod
            elif pod.spec.node_name:
                self._bump_node(pod.spec.node_name)
        elif kind is Node:
            node = cast(Node, new)
            if node.spec.provider_id:
                self._nodes_by_provider_id.setdefault(node.spec.provider_id, {})[key[1]] = node
            node_pool = node.metadata.labels.get(NODEPOOL_LABEL)
            if node_pool is not None:
                self._nodes_by_pool.setdefault(node_pool, {})[key] = node
        elif kind is NodeClaim:
            claim = cast(NodeClaim, new)
            if claim.status.provider_id:
                self._claims_by_provider_id[claim.status.provider_id] = claim
            pool = claim.metadata.labels.get(NODEPOOL_LABEL)
            if pool is not None:
                self._claims_by_pool.setdefault(pool, {})[key] = claim

    def _unindex(self, kind: type[KubeObject], key: Key, old: KubeObject) -> None:
        owner = _controller_uid(old)
        if owner is not None:
            _discard(self._controlled, (kind, owner), key)
        if kind in _BY_NAMESPACE:
            bucket: tuple[type[KubeObject], str] = (kind, key[0])
            _discard(self._by_namespace, bucket, key)
        if kind is Pod:
            pod = cast(Pod, old)
            if pod.spec.node_name:
                _discard(self._pods_by_node, pod.spec.node_name, key)
                self._bump_node(pod.spec.node_name)
            else:
                self._unbound_pods.pop(key, None)
        elif kind is Node:
            node = cast(Node, old)
            if node.spec.provider_id:
                _discard_name(self._nodes_by_provider_id, node.spec.provider_id, key[1])
            node_pool = node.metadata.labels.get(NODEPOOL_LABEL)
            if node_pool is not None:
                _discard(self._nodes_by_pool, node_pool, key)
        elif kind is NodeClaim:
            claim = cast(NodeClaim, old)
            pid = claim.status.provider_id
            if pid and self._claims_by_provider_id.get(pid) is old:
                del self._claims_by_provider_id[pid]
            pool = claim.metadata.labels.get(NODEPOOL_LABEL)
            if pool is not None:
                _discard(self._claims_by_pool, pool, key)

    def _bump_node(self, node_name: str) -> None:
        self._node_pods_versions[node_name] = self._node_pods_versions.get(node_name, 0) + 1


def _discard_name(index: dict[str, dict[str, Node]], bucket: str, name: str) -> None:
    members = index.get(bucket)
    if members is None:
        return
    members.pop(name, None)
    if not members:
        del index[bucket]


def _controller_uid(obj: KubeObject) -> str | None:
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return ref.uid
    return None


_K = TypeVar("_K")
_V = TypeVar("_V")


def _discard(index: dict[_K, dict[Key, _V]], bucket: _K, key: Key) -> None:
    members = index.get(bucket)
    if members is None:
        return
    members.pop(key, None)
    if not members:
        del index[bucket]
