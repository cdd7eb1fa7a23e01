"""Leader election rules, on a Lease in the in-memory store with a hand-moved clock."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest

from nodewright.api.coordination import Lease
from nodewright.clock import SystemClock
from nodewright.cluster.fence import NotLeaderError
from nodewright.cluster.kube import ServerUnavailableError
from nodewright.cluster.memory import MemoryCluster
from nodewright.service.leader import LeaderElector
from tests.kube.polling import eventually


class LeaseStore:
    def __init__(self) -> None:
        self.cluster = MemoryCluster(SystemClock())

    def read(self, name: str, namespace: str, *, timeout: float) -> Lease | None:
        return self.cluster.get(Lease, name, namespace)

    def create(self, lease: Lease, *, timeout: float) -> Lease:
        return self.cluster.create(lease)

    def update(self, lease: Lease, *, timeout: float) -> Lease:
        return self.cluster.update(lease)


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
    lease = store.read("lock", "kube-system", timeout=1.0)
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
    released = store.read("lock", "kube-system", timeout=1.0)
    assert a.try_acquire_or_renew()  # a takes it again first ...

    class StaleReads(LeaseStore):
        def read(self, name: str, namespace: str, *, timeout: float) -> Lease | None:
            return None if released is None else released.model_copy(deep=True)

    racing = StaleReads()
    racing.cluster = store.cluster
    b._store = racing
    assert not b.try_acquire_or_renew()  # ... so b's write from the old read conflicts
    lease = store.read("lock", "kube-system", timeout=1.0)
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


def test_the_fence_is_open_until_the_renew_deadline_after_the_last_renewal_began() -> None:
    store = LeaseStore()
    now = [100.0]
    a = _elector(store, "a", now)
    assert a.fence.remaining() <= 0  # a candidate may not act
    assert a.try_acquire_or_renew()
    assert a.fence.remaining() == 10.0
    now[0] += 9.5
    assert a.fence.check("create nodeclaim") == 0.5
    now[0] += 0.5
    with pytest.raises(NotLeaderError, match="create nodeclaim: not done"):
        a.fence.check("create nodeclaim")
    assert a.try_acquire_or_renew()  # renewed: open again for a full deadline
    assert a.fence.remaining() == 10.0


class Outage(LeaseStore):
    """A Lease store whose API server stops answering while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.timeouts: list[float] = []

    def read(self, name: str, namespace: str, *, timeout: float) -> Lease | None:
        self.timeouts.append(timeout)
        if self.down.is_set():
            raise ServerUnavailableError("GET lease: ReadTimeoutError: timed out")
        return super().read(name, namespace, timeout=timeout)


def _running(store: LeaseStore) -> LeaderElector:
    elector = LeaderElector(
        store,
        "lock",
        "kube-system",
        "a",
        lease_duration=timedelta(seconds=1.5),
        renew_deadline=timedelta(seconds=1),
        retry_period=timedelta(milliseconds=100),
    )
    elector.start()
    assert elector.wait_for_leadership(5)
    return elector


def test_a_leader_cut_off_warns_then_steps_down_at_the_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Outage()
    elector = _running(store)
    try:
        with caplog.at_level(logging.INFO, logger="nodewright.leader"):
            caplog.clear()
            store.down.set()
            assert elector.lost.wait(5)
        assert not elector.leading
        with pytest.raises(NotLeaderError):
            elector.fence.check("launch")
        records = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= 30]
        levels = [level for level, _ in records]
        assert levels == ["WARNING", "ERROR"], records  # one warning per outage
        assert "could not read Lease kube-system/lock" in records[0][1]
        assert "still leading for" in records[0][1]
        assert "stepping down" in records[1][1]
        assert max(store.timeouts) <= 0.5  # every Lease request ends before the deadline
    finally:
        elector.stop(release=False)


def test_a_leader_whose_api_server_comes_back_in_time_keeps_leading_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Outage()
    elector = _running(store)
    try:
        with caplog.at_level(logging.INFO, logger="nodewright.leader"):
            caplog.clear()
            store.down.set()
            eventually(lambda: bool(caplog.records), "the warning", 5)
            store.down.clear()
            eventually(
                lambda: any("answers again" in r.getMessage() for r in caplog.records),
                "the line saying the API server is back",
                5,
            )
        assert elector.leading
        assert not elector.lost.is_set()
        assert elector.fence.remaining() > 0
    finally:
        elector.stop(release=False)
