"""Leader election rules, on a Lease in the in-memory store with a hand-moved clock."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.coordination import Lease
from nodewright.clock import SystemClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.service.leader import LeaderElector


class LeaseStore:
    def __init__(self) -> None:
        self.cluster = MemoryCluster(SystemClock())

    def read(self, kind: type[Lease], name: str, namespace: str = "") -> Lease | None:
        return self.cluster.get(kind, name, namespace)

    def create(self, obj: Lease) -> Lease:
        return self.cluster.create(obj)

    def update(self, obj: Lease) -> Lease:
        return self.cluster.update(obj)


def _elector(store: LeaseStore, identity: str, now: list[float]) -> LeaderElector:
    return LeaderElector(
        store,
        "lock",
        "kube-system",
        identity,
        lease_duration=timedelta(seconds=15),
        renew_deadline=timedelta(seconds=10),
        retry_period=timedelta(seconds=2),
        monotonic=lambda: now[0],
    )


def test_one_leader_until_its_lease_expires() -> None:
    store = LeaseStore()
    now = [100.0]
    a, b = _elector(store, "a", now), _elector(store, "b", now)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    now[0] += 10
    assert a.try_acquire_or_renew()  # a renews
    now[0] += 10
    assert not b.try_acquire_or_renew()  # b saw the renewal 10s ago: still valid
    now[0] += 16  # a stopped renewing 16s ago
    assert b.try_acquire_or_renew()
    lease = store.read(Lease, "lock", "kube-system")
    assert lease is not None
    assert lease.spec.holder_identity == "b"
    assert lease.spec.lease_transitions == 1
    assert not a.try_acquire_or_renew()  # a's view is stale: it must not take it back


def test_racing_candidates_cannot_both_win() -> None:
    store = LeaseStore()
    now = [0.0]
    a, b = _elector(store, "a", now), _elector(store, "b", now)
    assert a.try_acquire_or_renew()
    a._leading.set()
    a.release()
    released = store.read(Lease, "lock", "kube-system")
    assert a.try_acquire_or_renew()  # a takes it again first ...

    class StaleReads(LeaseStore):
        def read(self, kind: type[Lease], name: str, namespace: str = "") -> Lease | None:
            return None if released is None else released.model_copy(deep=True)

    racing = StaleReads()
    racing.cluster = store.cluster
    b._store = racing
    assert not b.try_acquire_or_renew()  # ... so b's write from the old read conflicts
    lease = store.read(Lease, "lock", "kube-system")
    assert lease is not None
    assert lease.spec.holder_identity == "a"


def test_release_hands_over_at_once() -> None:
    store = LeaseStore()
    now = [0.0]
    a, b = _elector(store, "a", now), _elector(store, "b", now)
    assert a.try_acquire_or_renew()
    a._leading.set()
    a.release()
    assert b.try_acquire_or_renew()  # no need to wait 15s
