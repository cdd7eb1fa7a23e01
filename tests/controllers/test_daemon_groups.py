"""Daemonset overhead grouped over a pool's types, kept from pass to pass by the controllers
(``DaemonGroupMemo``): each call answers as a fresh grouping of the daemon pods and the
catalog it is given now."""

from __future__ import annotations

from nodewright.api.core import Pod
from nodewright.controllers.nodepool.templates import DaemonGroupMemo, daemon_overhead_groups
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import DaemonOverheadGroup
from nodewright.scheduling.requirements import Requirements
from tests.builders import pod
from tests.scheduling.scheduling_fakes import instance_type


def _daemon(name: str, arch: str | None = None) -> Pod:
    selector = {"kubernetes.io/arch": arch} if arch else {}
    return pod(name, requests={"cpu": "100m", "memory": "64Mi"}, nodeSelector=selector)


def _groups(
    daemons: list[Pod], catalog: list[InstanceType], memo: DaemonGroupMemo
) -> tuple[DaemonOverheadGroup, ...]:
    kept = daemon_overhead_groups(daemons, Requirements(), (), catalog, memo=memo)
    assert kept == daemon_overhead_groups(daemons, Requirements(), (), catalog)
    return kept


def test_kept_groupings_follow_the_daemon_pods_and_the_catalog() -> None:
    memo = DaemonGroupMemo()
    catalog = [instance_type("x86", arch="amd64"), instance_type("graviton", arch="arm64")]
    everywhere = [_daemon("logs")]
    (group,) = _groups(everywhere, catalog, memo)
    assert group.instance_types == frozenset({"x86", "graviton"})
    assert _groups(everywhere, catalog, memo) == (group,)
    # A daemonset now bound to arm64: its pod lands on graviton alone.
    arm_only = [_daemon("logs", arch="arm64")]
    (group,) = _groups(arm_only, catalog, memo)
    assert group.instance_types == frozenset({"graviton"})
    # Another catalog (a new list) with one more arm64 type.
    grown = [*catalog, instance_type("graviton-large", arch="arm64", cpu="16")]
    (group,) = _groups(arm_only, grown, memo)
    assert group.instance_types == frozenset({"graviton", "graviton-large"})
    # Two daemonsets, one everywhere: the arm64 types carry both.
    both = [_daemon("logs"), _daemon("metrics", arch="arm64")]
    groups = _groups(both, grown, memo)
    assert {g.instance_types: g.overhead["cpu"] for g in groups} == {
        frozenset({"x86"}): 100,
        frozenset({"graviton", "graviton-large"}): 200,
    }
