"""The disruption controllers work from changes; a full resync must find nothing they missed.

Each scenario runs with a full resync requested before every step of the simulation, so every
pass that runs is also checked against a from-scratch evaluation: a NodeClaim, node or pod the
change-driven path would have left stale is counted in ``missed``. At the end a forced resync
must write nothing and record no event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.core import Event, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import KubeObject
from nodewright.controllers.disruption import candidates as candidates_module
from nodewright.controllers.disruption import conditions as conditions_module
from nodewright.controllers.disruption import verdicts as verdicts_module
from nodewright_kwok.provider import KWOKProvider
from tests.builders import pool_manifest
from tests.disruption.harness import Harness


def _resync_both(harness: Harness) -> Callable[[], None]:
    disruption = harness.operator.disruption

    def resync() -> None:
        disruption.conditions.resync(at_once=False)
        disruption.resync()

    return resync


def every_pass(harness: Harness) -> None:
    """Run every controller on every pass, as ``nodewright run`` does (a simulation leaves
    out those with nothing to do): the resync asked for before each step then runs at once."""
    harness.sim.operator.skip_unchanged = False


@contextmanager
def checked(harness: Harness) -> Iterator[None]:
    """Ask for a full resync before every step; afterwards assert it never found anything."""
    every_pass(harness)
    harness.sim.on_step = _resync_both(harness)
    yield
    harness.sim.on_step = None
    disruption = harness.operator.disruption
    assert disruption.conditions.missed == 0
    assert disruption.verdicts.missed == 0
    assert_forced_resync_changes_nothing(harness)


def assert_forced_resync_changes_nothing(harness: Harness) -> None:
    disruption = harness.operator.disruption
    conditions = disruption.conditions
    conditions.reconcile()
    disruption.refresh()
    version = harness.cluster.resource_version()
    events = _events(harness)
    seen = _disruption_view(harness)
    conditions.resync()
    conditions.reconcile()
    disruption.resync()
    disruption.refresh()
    assert conditions.missed == 0
    assert disruption.verdicts.missed == 0
    assert harness.cluster.resource_version() == version
    assert _events(harness) == events
    assert _disruption_view(harness) == seen


def _disruption_view(harness: Harness) -> list[Any]:
    """Candidates of each class and method, budget counts and marked nodes, by name."""
    disruption = harness.operator.disruption
    verdicts = disruption.verdicts
    queued = disruption.queue.provider_ids()
    total, unavailable = verdicts.budget_counts(queued)
    return [
        [[c.name for c in verdicts.candidates(cls, queued)] for cls in ("graceful", "eventual")],
        [[c.name for c in verdicts.eligible(i, queued)] for i in range(len(disruption.methods))],
        {pool: count for pool, count in total.items() if count},
        {pool: count for pool, count in unavailable.items() if count},
        verdicts.marked(),
    ]


def _events(harness: Harness) -> list[tuple[str, int, Any]]:
    return [(e.name, e.count, e.last_timestamp) for e in harness.cluster.list(Event)]


def _scenario(harness: Harness) -> None:
    """Pods come and go, a PDB and do-not-disrupt durations block, the NodePool drifts and
    nodes expire."""
    small = harness.launch_nodes(3, "small-instance-type")
    expiring = harness.launch_nodes(1, "default-instance-type", expire_after="2h")
    harness.bind_pods(small[0], 2)
    harness.bind_pods(small[1], 1, owner="guarded", labels={"guard": "yes"})
    harness.pdb("guard", {"guard": "yes"})
    harness.bind_pods(
        small[2], 1, owner="pinned", annotations={"karpenter.sh/do-not-disrupt": "3m"}
    )
    harness.bind_pods(expiring[0], 1, owner="long")
    harness.run(20)
    for pod in harness.cluster.list(Pod, "default"):
        if pod.metadata.labels.get("app") == "app":
            harness.cluster.delete(Pod, pod.name, "default")
            break
    harness.run(5 * 60)
    harness.apply(NodePool.model_validate(pool_manifest(labels={"v": "2"})))
    harness.run(10 * 60)
    harness.run(2 * 60 * 60)


def test_a_full_resync_finds_nothing_the_change_driven_passes_missed(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="30s")])
    with checked(harness):
        _scenario(harness)
    assert harness.operator.disruption.history.records, "the scenario disrupted nothing"


def test_the_providers_drift_answer_is_checked_by_the_resync_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = Harness(tmp_path)
    with checked(harness):
        node = harness.node("small-instance-type")
        harness.bind_pods(node, 1)
        harness.run(10)
        monkeypatch.setattr(KWOKProvider, "is_drifted", lambda self, claim, nc: "ImageDrifted")
        harness.run(5 * 60 + 20)
    assert node not in harness.live_claim_names()


def _dropping(kind_name: str) -> Callable[[Any, Any], None]:
    original = conditions_module.NodeClaimDisruptionConditions._note

    def note(self: Any, change: Any) -> None:
        if change.kind.__name__ != kind_name:
            original(self, change)

    return note


@pytest.mark.parametrize("kind", ["Pod", "NodePool"])
def test_the_check_notices_a_missing_invalidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Proof the check can fail: forget one kind of change and the resync finds it."""
    monkeypatch.setattr(conditions_module.NodeClaimDisruptionConditions, "_note", _dropping(kind))
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="30s")])
    conditions = harness.operator.disruption.conditions
    every_pass(harness)
    harness.sim.on_step = conditions.resync
    _scenario(harness)
    assert conditions.missed > 0


def _verdicts_ignoring(kind: type[KubeObject]) -> Callable[[Any], set[str]]:
    original = verdicts_module.NodeVerdicts._changed_nodes

    def changed_nodes(self: Any) -> set[str]:
        feed = self._changes
        kept = [c for c in feed.drain() if c.kind is not kind]
        for change in kept:
            feed.record(change.kind, change.key, change.old, change.new)
        return original(self)

    return changed_nodes


@pytest.mark.parametrize("kind", [Pod, NodeClaim])
def test_the_check_notices_a_missing_verdict_invalidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: type[KubeObject]
) -> None:
    monkeypatch.setattr(verdicts_module.NodeVerdicts, "_changed_nodes", _verdicts_ignoring(kind))
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="30s")])
    disruption = harness.operator.disruption
    every_pass(harness)
    harness.sim.on_step = disruption.resync
    _scenario(harness)
    assert disruption.verdicts.missed > 0


def test_the_check_notices_a_do_not_disrupt_duration_running_out_unseen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = verdicts_module.NodeVerdicts._store

    def store(self: Any, name: str, kept: Any, verdict: Any) -> None:
        original(self, name, kept, verdict)
        self._expiring.forget(name)

    monkeypatch.setattr(verdicts_module.NodeVerdicts, "_store", store)
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="30s")])
    disruption = harness.operator.disruption
    every_pass(harness)
    harness.sim.on_step = disruption.resync
    _scenario(harness)
    assert disruption.verdicts.missed > 0


def test_a_pass_works_out_only_the_nodes_and_nodeclaims_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="Never")])
    nodes = harness.launch_nodes(4, "small-instance-type")
    for node in nodes:
        harness.bind_pods(node, 1)
    harness.run(30)
    judged: list[str] = []
    reconciled: list[str] = []
    reconcile = conditions_module.NodeClaimDisruptionConditions._reconcile

    def counting_judge(node: Any, *args: Any, **kwargs: Any) -> Any:
        judged.append(node.name)
        return candidates_module.judge(node, *args, **kwargs)

    def counting_reconcile(self: Any, claim: Any, *args: Any) -> Any:
        reconciled.append(claim.name)
        return reconcile(self, claim, *args)

    monkeypatch.setattr(verdicts_module, "judge", counting_judge)
    monkeypatch.setattr(
        conditions_module.NodeClaimDisruptionConditions, "_reconcile", counting_reconcile
    )
    harness.run(20)
    assert judged == []
    assert reconciled == []
    pods = harness.cluster.state.feed(Pod)
    (pod,) = (p for p in harness.cluster.list(Pod, "default") if p.spec.node_name == nodes[2])
    harness.cluster.delete(Pod, pod.name, "default")
    harness.run(1)
    # The ReplicaSet puts a new pod on another node: those two nodes changed, no other.
    touched = {
        p.spec.node_name
        for change in pods.drain()
        for p in (change.old, change.new)
        if isinstance(p, Pod) and p.spec.node_name
    }
    assert nodes[2] in touched
    assert len(touched) < len(nodes)
    assert set(judged) == touched
    assert set(reconciled) == touched
