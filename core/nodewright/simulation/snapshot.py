"""A snapshot of a real cluster, loaded into the embedded one (``simulate --from-cluster`` and
``--from-dump``).

A snapshot is a ``v1`` List of objects, as ``kubectl get ... -A -o yaml`` writes it or as the
read-only listing of :mod:`nodewright.cluster.kube.snapshot` returns it. Loading it:

* cleans each object of what the API server owns (``resourceVersion``, ``uid``,
  ``managedFields``, timestamps), keeping the status the simulation needs (a pod's phase and
  node, a node's allocatable and conditions, a NodeClaim's provider ID and conditions);
* reads each through the manifests' one loading path, so a malformed object is reported with
  its kind, name and field; kinds a simulation does not use (Services, ConfigMaps...) are
  skipped and counted;
* adopts the existing nodes as Karpenter's state does: a Node with a ``karpenter.sh/nodepool``
  label whose NodePool is in the snapshot is managed, and gets a NodeClaim (launched,
  registered and initialized) when the snapshot has none; any other Node is unmanaged but
  still holds its pods;
* creates owners before what they own and points owner references at the new UIDs, so no
  workload is rolled or duplicated by being loaded: a Deployment keeps the ReplicaSets the
  real cluster made (the embedded controller finds its current one by template, as
  kube-controller-manager does), and a StatefulSet or DaemonSet the revision labels of its
  pods, which the pods it recreates carry too.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    Deployment,
    Job,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
)
from nodewright.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Service,
)
from nodewright.api.excerpt import cut, excerpt
from nodewright.api.karpenter import (
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    CONDITION_READY,
    CONDITION_REGISTERED,
    NodeClaim,
    NodeClaimSpec,
    NodeClaimStatus,
    NodeClass,
    NodePool,
    NodeSelectorRequirementWithMinValues,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    ZONE_LABEL,
)
from nodewright.api.manifests.documents import (
    json_limit_problem,
    json_size_problem,
    parse_documents,
)
from nodewright.api.manifests.errors import ManifestError, UnknownKindError
from nodewright.api.manifests.files import read_manifest
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.limits import LIMITS, MiB
from nodewright.api.manifests.loading import ExtraRules, parse_object
from nodewright.api.meta import Condition, KubeObject, ObjectMeta, OwnerReference
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.cluster import AlreadyExistsError
from nodewright.controllers.state.solverdata import nodepool_hash
from nodewright.simulation.kubernetes.revisions import (
    CONTROLLER_REVISION_HASH_LABEL,
    POD_TEMPLATE_GENERATION_LABEL,
)
from nodewright.simulation.limits import Limits, asked_pods
from nodewright.simulation.runner import Simulation

#: What the API server writes in ``metadata`` and a snapshot does not carry over.
SERVER_METADATA = (
    "resourceVersion",
    "uid",
    "managedFields",
    "selfLink",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
#: Kinds whose ``status`` is kept: what the simulation cannot recompute (where a pod runs,
#: what a node offers, which instance a NodeClaim is, whether a volume is bound, how much of a
#: Job is done). The providers' NodeClasses keep theirs too: what the cloud resolved for them
#: (an EC2NodeClass's subnets, and so its zones), which an offline provider cannot look up.
#: Controllers recompute every other status.
STATUS_KEPT = frozenset(
    {"Pod", "Node", "NodeClaim", "PersistentVolumeClaim", "PersistentVolume", "Job"}
)
#: A dump holds a whole cluster in one file (10 MB of JSON for 5,000 pods): the manifests'
#: limits but the file's size, which allows a cluster of the most pods a simulation runs.
DUMP_LIMITS = replace(LIMITS, file_bytes=512 * MiB, values=8_000_000)
#: The order objects are created in: owners first, then what they own.
LOAD_ORDER: tuple[type[KubeObject], ...] = (
    Namespace,
    StorageClass,
    CSINode,
    PersistentVolume,
    NodePool,
    NodeOverlay,
    NodeClaim,
    Node,
    PersistentVolumeClaim,
    Service,
    PodDisruptionBudget,
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
    ReplicaSet,
    Pod,
)
#: The DaemonSet controller's annotation of the generation its pods are labelled with.
DAEMONSET_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
#: Written in place of a NodeClaim's hash when the real cluster saw it drifted from its
#: NodePool, so it stays drifted under nodewright's own hash.
DRIFTED_HASH = "drifted-in-snapshot"


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded; each line names the source, object and field."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


@dataclass
class Snapshot:
    """The objects of a snapshot, read and cleaned, in load order."""

    source: str
    objects: list[KubeObject] = field(default_factory=list)
    #: Each object's UID in the real cluster (by ``id()`` of the object), to remap owners.
    uids: dict[int, str] = field(default_factory=dict)
    #: Objects of kinds a simulation does not use, by kind.
    skipped: Counter[str] = field(default_factory=Counter)
    #: Nodes adopted as managed (a NodeClaim found or made), and unmanaged ones.
    managed_nodes: list[str] = field(default_factory=list)
    unmanaged_nodes: list[str] = field(default_factory=list)
    #: NodeClaims made for managed Nodes the snapshot had none for.
    made_claims: list[str] = field(default_factory=list)
    #: Things the user should know about the snapshot, one line each.
    notes: list[str] = field(default_factory=list)
    #: The revision labels of each StatefulSet's and DaemonSet's pods (by ``id()`` of the
    #: workload), for the pods the run recreates.
    revisions: dict[int, dict[str, str]] = field(default_factory=dict)

    def count(self, kind: type[KubeObject]) -> int:
        return sum(1 for obj in self.objects if isinstance(obj, kind))


# -- reading ------------------------------------------------------------------------------------


def read_dump(
    path: Path, registry: KindRegistry, rules: ExtraRules | None = None, *, limits: Limits
) -> Snapshot:
    """A ``kubectl get ... -o yaml`` (or ``-o json``) dump: one ``v1`` List, within
    ``limits``."""
    source = str(path)
    try:
        text = read_manifest(path, DUMP_LIMITS)
        documents = (
            _json_documents(text, source)
            if _is_json(text)
            else parse_documents(text, source, DUMP_LIMITS)
        )
    except ManifestError as error:
        raise SnapshotError([str(error)]) from None
    if len(documents) != 1 or not _is_list(documents[0]):
        kinds = ", ".join(sorted({excerpt(d.get("kind")) for d in documents})) or "nothing"
        raise SnapshotError(
            [
                f"{source}: a dump is one List (kubectl get nodes,pods,... -A -o yaml), "
                f"got {len(documents)} document(s) of kind {kinds}"
            ]
        )
    items = documents[0].get("items")
    if not isinstance(items, list):
        raise SnapshotError([f"{source}: List: items: must be a list, got {excerpt(items)}"])
    return read_items(items, source, registry, rules, limits=limits)


def _is_json(text: str) -> bool:
    return text.lstrip()[:1] == "{"


def _json_documents(text: str, source: str) -> list[dict[str, object]]:
    """A ``kubectl get -o json`` dump: read by the JSON parser, about twenty times faster
    than YAML (which marks every line), without line numbers, within the same limits (the
    values counted before parsing, the depth and strings after)."""
    problem = json_size_problem(text, DUMP_LIMITS)
    if problem:
        raise ManifestError(source, f"refused: {problem}")
    try:
        document = json.loads(text)
    except RecursionError:
        raise ManifestError(source, "refused: nested too deeply") from None
    except ValueError as error:
        raise ManifestError(source, f"malformed JSON: {cut(str(error), 200)}") from None
    problem = json_limit_problem(document, DUMP_LIMITS)
    if problem:
        raise ManifestError(source, f"refused: {problem}")
    if not isinstance(document, dict):
        raise ManifestError(source, f"expected a JSON object, got {excerpt(document)}")
    return [document]


def read_items(
    items: Sequence[object],
    source: str,
    registry: KindRegistry,
    rules: ExtraRules | None = None,
    *,
    limits: Limits,
) -> Snapshot:
    """Read, clean and adopt the objects of a snapshot; every problem is raised together. A
    snapshot beyond ``limits`` is refused."""
    snapshot = Snapshot(source)
    problems: list[str] = []
    read: list[tuple[KubeObject, str]] = []
    #: Each StatefulSet's ``status.updateRevision``: the status itself is not kept.
    update_revisions: dict[tuple[str, str], str] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            problems.append(f"{source}: items[{index}]: expected an object, got {excerpt(item)}")
            continue
        document: dict[str, Any] = item if isinstance(item, dict) else dict(item)
        if document.get("kind") == "StatefulSet":
            _update_revision(document, update_revisions)
        uid = _clean(document)
        try:
            obj = parse_object(document, registry, source, rules)
        except UnknownKindError as error:
            if error.kind.endswith("NodeClass"):
                problems.append(str(error))
            else:
                snapshot.skipped[error.kind or "?"] += 1
            continue
        except ManifestError as error:
            problems.extend(str(e) for e in error.errors)
            continue
        except ValueError as error:  # ManifestErrors
            problems.extend(str(e) for e in getattr(error, "errors", [error]))
            continue
        read.append((obj, uid))
    if problems:
        raise SnapshotError(problems)
    too_big = _too_big(source, [obj for obj, _ in read], limits)
    if too_big is not None:
        raise SnapshotError([too_big])
    order = {kind: position for position, kind in enumerate(LOAD_ORDER)}
    # NodeClasses (provider kinds) go with the NodePools, before anything refers to them.
    nodepool_position = order[NodePool]
    read.sort(
        key=lambda pair: order.get(
            type(pair[0]),
            nodepool_position if isinstance(pair[0], NodeClass) else len(order),
        )
    )
    for obj, uid in read:
        snapshot.objects.append(obj)
        if uid:
            snapshot.uids[id(obj)] = uid
    _adopt_nodes(snapshot)
    _keep_drift(snapshot)
    _adopt_revisions(snapshot, update_revisions)
    return snapshot


def _too_big(source: str, objects: Sequence[KubeObject], limits: Limits) -> str | None:
    """Why a simulation within ``limits`` cannot start from these objects (None: it can)."""
    nodes = sum(1 for obj in objects if isinstance(obj, Node))
    if nodes > limits.snapshot_nodes:
        return (
            f"{source}: refused: {nodes:,} Nodes; a simulation starts from "
            f"{limits.at_most('snapshot_nodes')}; or dump the Nodes of fewer NodePools, with "
            "their pods"
        )
    too_many = asked_pods(objects).problem(limits)
    return None if too_many is None else f"{source}: {too_many}"


def _update_revision(document: Mapping[str, Any], found: dict[tuple[str, str], str]) -> None:
    metadata, status = document.get("metadata"), document.get("status")
    if isinstance(metadata, Mapping) and isinstance(status, Mapping):
        revision = status.get("updateRevision")
        name, namespace = metadata.get("name"), metadata.get("namespace") or "default"
        if isinstance(revision, str) and revision and isinstance(name, str):
            found[(str(namespace), name)] = revision


def _is_list(document: Mapping[str, object]) -> bool:
    kind = document.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in document


def _clean(document: dict[str, Any]) -> str:
    """Drop the server's fields from ``document`` (in place); returns its UID."""
    metadata = document.get("metadata")
    uid = ""
    if isinstance(metadata, dict):
        value = metadata.get("uid")
        uid = value if isinstance(value, str) else ""
        for key in SERVER_METADATA:
            metadata.pop(key, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    kind = document.get("kind")
    if kind not in STATUS_KEPT and not (isinstance(kind, str) and kind.endswith("NodeClass")):
        document.pop("status", None)
    return uid


# -- adopting nodes ------------------------------------------------------------------------------


def _adopt_nodes(snapshot: Snapshot) -> None:
    """Managed Nodes get a NodeClaim when they have none; the others are noted unmanaged."""
    pools = {obj.name: obj for obj in snapshot.objects if isinstance(obj, NodePool)}
    claimed = {
        obj.status.provider_id
        for obj in snapshot.objects
        if isinstance(obj, NodeClaim) and obj.status.provider_id
    }
    made: list[NodeClaim] = []
    for node in [obj for obj in snapshot.objects if isinstance(obj, Node)]:
        pool_name = node.metadata.labels.get(NODEPOOL_LABEL)
        pool = pools.get(pool_name or "")
        provider_id = node.spec.provider_id or ""
        if pool is None or not provider_id:
            snapshot.unmanaged_nodes.append(node.name)
            if pool_name and pool is None:
                snapshot.notes.append(
                    f'node {node.name}: NodePool "{pool_name}" is not in the snapshot; '
                    "the node is kept as unmanaged"
                )
            elif pool is not None and not provider_id:
                snapshot.notes.append(
                    f"node {node.name}: no spec.providerID; the node is kept as unmanaged"
                )
            continue
        snapshot.managed_nodes.append(node.name)
        _as_registered(node)
        if provider_id not in claimed:
            made.append(_claim_for(node, pool))
            claimed.add(provider_id)
    if made:
        at = next(
            i for i, obj in enumerate(snapshot.objects) if isinstance(obj, Node)
        )  # NodeClaims go before the Nodes
        snapshot.objects[at:at] = made
        snapshot.made_claims = [claim.name for claim in made]


def _as_registered(node: Node) -> None:
    """What Karpenter's registration leaves on a managed Node, when a snapshot lacks it."""
    labels = node.metadata.labels
    labels.setdefault(REGISTERED_LABEL, "true")
    labels.setdefault(INITIALIZED_LABEL, "true")
    if TERMINATION_FINALIZER not in node.metadata.finalizers:
        node.metadata.finalizers.append(TERMINATION_FINALIZER)


def _claim_for(node: Node, pool: NodePool) -> NodeClaim:
    """The NodeClaim Karpenter would hold for a managed Node: launched, registered and
    initialized, for the instance the Node runs on."""
    template = pool.spec.template
    labels = {k: v for k, v in node.metadata.labels.items() if k != HOSTNAME_LABEL}
    requirements = [
        NodeSelectorRequirementWithMinValues(key=key, operator="In", values=[labels[key]])
        for key in (NODEPOOL_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, CAPACITY_TYPE_LABEL)
        if labels.get(key)
    ]
    annotations = {
        key: value
        for key, value in node.metadata.annotations.items()
        if key in (NODEPOOL_HASH_ANNOTATION, NODEPOOL_HASH_VERSION_ANNOTATION)
    }
    conditions = [
        Condition(type=kind, status="True", reason=kind)
        for kind in (CONDITION_LAUNCHED, CONDITION_REGISTERED, CONDITION_INITIALIZED)
    ]
    conditions.append(Condition(type=CONDITION_READY, status="True", reason="Ready"))
    return NodeClaim(
        metadata=ObjectMeta(
            name=node.name,
            labels=labels,
            annotations=annotations,
            finalizers=[TERMINATION_FINALIZER],
            owner_references=[
                OwnerReference(
                    api_version=pool.api_version,
                    kind=pool.kind,
                    name=pool.name,
                    uid="",
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=NodeClaimSpec(
            requirements=requirements,
            taints=list(template.spec.taints),
            node_class_ref=template.spec.node_class_ref.model_copy(),
            expire_after=template.spec.expire_after,
            termination_grace_period=template.spec.termination_grace_period,
        ),
        status=NodeClaimStatus(
            node_name=node.name,
            provider_id=node.spec.provider_id,
            capacity=dict(node.status.capacity),
            allocatable=dict(node.status.allocatable),
            conditions=conditions,
        ),
    )


def _keep_drift(snapshot: Snapshot) -> None:
    """Karpenter's NodePool hash is not nodewright's: restate it in nodewright's, keeping
    which NodeClaims the real cluster saw drifted (a different hash) and which not."""
    pools = {obj.name: obj for obj in snapshot.objects if isinstance(obj, NodePool)}
    written: dict[str, str | None] = {}
    for name, each in pools.items():
        annotations = each.metadata.annotations
        written[name] = annotations.get(NODEPOOL_HASH_ANNOTATION)
        annotations.pop(NODEPOOL_HASH_ANNOTATION, None)
        annotations.pop(NODEPOOL_HASH_VERSION_ANNOTATION, None)
    for claim in snapshot.objects:
        if not isinstance(claim, NodeClaim):
            continue
        pool = pools.get(claim.metadata.labels.get(NODEPOOL_LABEL, ""))
        own = claim.metadata.annotations
        if pool is None or NODEPOOL_HASH_ANNOTATION not in own:
            continue
        real = written[pool.name]
        same = real is None or own[NODEPOOL_HASH_ANNOTATION] == real
        own[NODEPOOL_HASH_ANNOTATION] = nodepool_hash(pool) if same else DRIFTED_HASH
        own[NODEPOOL_HASH_VERSION_ANNOTATION] = NODEPOOL_HASH_VERSION


def _adopt_revisions(snapshot: Snapshot, update_revisions: Mapping[tuple[str, str], str]) -> None:
    """The revision labels the real cluster gave the pods of each StatefulSet and DaemonSet,
    so the pods the run recreates carry them too (a Deployment's ReplicaSets carry theirs in
    their templates)."""
    pods: dict[tuple[str, str, str], list[Pod]] = {}
    for obj in snapshot.objects:
        if isinstance(obj, Pod):
            ref = next((r for r in obj.metadata.owner_references if r.controller), None)
            if ref is not None and ref.kind in ("StatefulSet", "DaemonSet"):
                pods.setdefault((ref.kind, obj.namespace, ref.name), []).append(obj)
    for obj in snapshot.objects:
        if isinstance(obj, StatefulSet):
            owned = pods.get(("StatefulSet", obj.namespace, obj.name), [])
            revision = update_revisions.get((obj.namespace, obj.name)) or _most_common(
                owned, CONTROLLER_REVISION_HASH_LABEL
            )
            if revision:
                snapshot.revisions[id(obj)] = {CONTROLLER_REVISION_HASH_LABEL: revision}
        elif isinstance(obj, DaemonSet):
            owned = pods.get(("DaemonSet", obj.namespace, obj.name), [])
            generation = obj.metadata.annotations.get(DAEMONSET_GENERATION_ANNOTATION)
            current = [
                pod
                for pod in owned
                if pod.metadata.labels.get(POD_TEMPLATE_GENERATION_LABEL) == generation
            ]
            labels = {
                key: value
                for key in (CONTROLLER_REVISION_HASH_LABEL, POD_TEMPLATE_GENERATION_LABEL)
                if (value := _most_common(current or owned, key))
            }
            if CONTROLLER_REVISION_HASH_LABEL in labels:
                snapshot.revisions[id(obj)] = labels


def _most_common(pods: Sequence[Pod], label: str) -> str | None:
    """The value of ``label`` most of ``pods`` carry (the greatest of equally common ones)."""
    counts = Counter(p.metadata.labels[label] for p in pods if p.metadata.labels.get(label))
    if not counts:
        return None
    return max(counts.items(), key=lambda item: (item[1], item[0]))[0]


# -- loading ------------------------------------------------------------------------------------


def load_snapshot(simulation: Simulation, snapshot: Snapshot) -> None:
    """Create the snapshot's objects in the embedded cluster, owners first, with owner
    references pointing at the new UIDs."""
    cluster = simulation.cluster
    new_uids: dict[str, str] = {}
    by_name: dict[tuple[str, str, str], str] = {}
    now = simulation.clock.now()
    for obj in snapshot.objects:
        _rebase_times(obj, now)
        for ref in obj.metadata.owner_references:
            owner_ns = obj.namespace if _namespaced_owner(ref.kind) else ""
            ref.uid = (
                new_uids.get(ref.uid) or by_name.get((ref.kind, owner_ns, ref.name)) or ref.uid
            )
        try:
            created = cluster.create(obj)
        except AlreadyExistsError:
            snapshot.notes.append(f"{obj.kind} {obj.key}: listed twice; the first one is kept")
            continue
        uid = created.metadata.uid or ""
        revision = snapshot.revisions.get(id(obj))
        if revision is not None and isinstance(created, StatefulSet | DaemonSet):
            simulation.kube.revisions.adopt(created, revision)
        old = snapshot.uids.get(id(obj))
        if old:
            new_uids[old] = uid
        by_name[(created.kind, created.namespace if created.NAMESPACED else "", created.name)] = uid


def _rebase_times(obj: KubeObject, now: datetime) -> None:
    """The snapshot's moments, seen from the simulated clock: the run starts at the moment of
    the snapshot. A NodeClaim's conditions date from now (consolidateAfter and readiness
    count from the start of the run) and a pod started no later than now."""
    if isinstance(obj, NodeClaim):
        for condition in obj.status.conditions:
            condition.last_transition_time = now
        obj.status.last_pod_event_time = None
    elif isinstance(obj, Pod):
        started = obj.status.start_time
        if started is None or started > now:
            obj.status.start_time = now


def _namespaced_owner(kind: str) -> bool:
    return kind not in ("Node", "NodePool", "NodeClaim", "Namespace")


def describe(snapshot: Snapshot) -> str:
    """One line: what was read."""
    parts = [
        f"{len(snapshot.managed_nodes)} managed node(s)",
        f"{len(snapshot.unmanaged_nodes)} unmanaged node(s)",
        f"{snapshot.count(Pod)} pod(s)",
        f"{snapshot.count(NodePool)} NodePool(s)",
    ]
    if snapshot.made_claims:
        parts.append(f"{len(snapshot.made_claims)} NodeClaim(s) made for nodes without one")
    if snapshot.skipped:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(snapshot.skipped.items()))
        parts.append(f"skipped kinds a simulation does not use: {cut(kinds, 200)}")
    return f"{snapshot.source}: " + ", ".join(parts)
