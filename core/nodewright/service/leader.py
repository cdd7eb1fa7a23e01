"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules, and the fence
that keeps a leader cut off from the API server from acting.

A candidate takes the Lease when nobody holds it or the holder has not renewed it for
``lease_duration`` (measured on this process's monotonic clock from when it last saw the
record change, so clock skew between replicas does not matter). The leader renews every
``retry_period``. Writes carry the Lease's resourceVersion, so two candidates racing for it
cannot both win: the loser gets a conflict. On shutdown the leader releases the Lease so a
standby takes over at once.

Each successful renewal opens the :class:`~nodewright.cluster.fence.Fence` until
``renew_deadline`` after the moment the renewal began; the Kubernetes adapter refuses writes
and the plugin host provider calls once it closes. Every Lease request has a timeout shorter
than the renew deadline, so the elector notices in time. When a renewal fails the elector
logs a warning (the API server stopped answering, or the Lease changed hands); at the deadline
it logs an error, closes the fence and steps down; a renewal that gets through again before
then logs that the API server answers again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from nodewright.api.coordination import Lease, LeaseSpec
from nodewright.api.meta import ObjectMeta
from nodewright.cluster import ClusterError
from nodewright.cluster.fence import Fence
from nodewright.cluster.objects import mutable

log = logging.getLogger("nodewright.leader")

#: The shortest timeout a Lease request is given (seconds).
MIN_REQUEST_TIMEOUT = 0.5
#: How long releasing the Lease on shutdown may take (seconds).
RELEASE_TIMEOUT = 1.0


class LeaseStore(Protocol):
    """What the elector needs from the cluster: live reads and versioned writes, each
    bounded by a timeout."""

    def read(self, name: str, namespace: str, *, timeout: float) -> Lease | None: ...

    def create(self, lease: Lease, *, timeout: float) -> Lease: ...

    def update(self, lease: Lease, *, timeout: float) -> Lease: ...


def _micro(now: datetime) -> datetime:
    """Leases carry MicroTime."""
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now


class LeaderElector:
    def __init__(
        self,
        store: LeaseStore,
        name: str,
        namespace: str,
        identity: str,
        *,
        lease_duration: timedelta = timedelta(seconds=15),
        renew_deadline: timedelta = timedelta(seconds=10),
        retry_period: timedelta = timedelta(seconds=2),
        fence: Fence | None = None,
        on_lost: Callable[[], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if not renew_deadline < lease_duration:
            raise ValueError("the renew deadline must be shorter than the lease duration")
        self._store = store
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self._duration = lease_duration.total_seconds()
        self._renew_deadline = renew_deadline.total_seconds()
        self._retry = retry_period.total_seconds()
        self._monotonic = monotonic
        self._wall = wall
        #: Open while this process may act; the elector owns it.
        self.fence = fence if fence is not None else Fence(open_=False, monotonic=monotonic)
        self._on_lost = on_lost
        self._observed: tuple[str | None, datetime | None] | None = None
        self._observed_at = 0.0
        #: When the last successful renewal began (monotonic seconds).
        self._renewed_at = 0.0
        #: When renewals began to fail (None: the last one succeeded).
        self._failing_since: float | None = None
        self._leading = threading.Event()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def wait_for_leadership(self, timeout: float) -> bool:
        return self._leading.wait(timeout)

    @property
    def _deadline(self) -> float:
        return self._renewed_at + self._renew_deadline

    def _request_timeout(self, started: float) -> float:
        """How long the next Lease request may take: never past the renew deadline while
        leading (the elector must be free to step down on time), half of it otherwise."""
        budget = self._renew_deadline / 2
        if self.leading:
            budget = min(budget, self._deadline - self._monotonic())
        else:
            budget -= self._monotonic() - started
        return max(MIN_REQUEST_TIMEOUT, budget)

    # -- one round -------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards."""
        started = self._monotonic()
        wall = _micro(self._wall())
        try:
            lease = self._store.read(
                self.name, self.namespace, timeout=self._request_timeout(started)
            )
        except ClusterError as error:
            self._failed(f"could not read Lease {self.namespace}/{self.name}: {error}")
            return False
        duration = max(1, round(self._duration))
        if lease is None:
            fresh = Lease(
                metadata=ObjectMeta(name=self.name, namespace=self.namespace),
                spec=LeaseSpec(
                    holder_identity=self.identity,
                    lease_duration_seconds=duration,
                    acquire_time=wall,
                    renew_time=wall,
                    lease_transitions=0,
                ),
            )
            try:
                self._store.create(fresh, timeout=self._request_timeout(started))
            except ClusterError as error:
                self._failed(f"lost the race to create Lease {self.name}: {error}")
                return False
            self._observe(fresh, self._monotonic())
            self._renewed(started)
            return True
        now = self._monotonic()
        record = (lease.spec.holder_identity, lease.spec.renew_time)
        if record != self._observed:
            self._observe(lease, now)
        holder = lease.spec.holder_identity
        held_by_other = bool(holder) and holder != self.identity
        lease_seconds = lease.spec.lease_duration_seconds or duration
        if held_by_other and self._observed_at + lease_seconds > now:
            self._answered()
            if self.leading:
                self._failed(f"Lease {self.namespace}/{self.name} is held by {holder!r}")
            return False
        lease = mutable(lease)
        spec = lease.spec
        if holder != self.identity:
            spec.acquire_time = wall
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            log.info("acquiring Lease %s/%s (was held by %r)", self.namespace, self.name, holder)
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = duration
        spec.renew_time = wall
        try:
            written = self._store.update(lease, timeout=self._request_timeout(started))
        except ClusterError as error:
            self._failed(f"could not take or renew Lease {self.name}: {error}")
            return False
        self._observe(written, self._monotonic())
        self._renewed(started)
        return True

    def _observe(self, lease: Lease, now: float) -> None:
        self._observed = (lease.spec.holder_identity, lease.spec.renew_time)
        self._observed_at = now

    def _failed(self, why: str) -> None:
        """A Lease request failed: say so once per outage (a warning while leading)."""
        if self._failing_since is not None:
            log.debug("%s", why)
            return
        self._failing_since = self._monotonic()
        if self.leading:
            left = max(0.0, self._deadline - self._monotonic())
            log.warning("%s; still leading for %.1fs unless a renewal gets through", why, left)
        else:
            log.warning("%s", why)

    def _answered(self) -> None:
        """The API server answered a Lease request: end an outage the log reported."""
        if self._failing_since is not None:
            log.info(
                "the API server answers again (Lease %s/%s requests failed for %.1fs)",
                self.namespace,
                self.name,
                self._monotonic() - self._failing_since,
            )
            self._failing_since = None

    def _renewed(self, started: float) -> None:
        self._answered()
        self._renewed_at = started
        self.fence.open_until(started + self._renew_deadline)

    def release(self) -> None:
        """Give the Lease up (on shutdown) so a standby need not wait for it to expire."""
        if not self.leading:
            return
        self._leading.clear()
        self.fence.close()
        try:
            lease = self._store.read(self.name, self.namespace, timeout=RELEASE_TIMEOUT)
            if lease is None or lease.spec.holder_identity != self.identity:
                return
            lease = mutable(lease)
            wall = _micro(self._wall())
            lease.spec.holder_identity = ""
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = wall
            lease.spec.acquire_time = wall
            self._store.update(lease, timeout=RELEASE_TIMEOUT)
            log.info("released Lease %s/%s", self.namespace, self.name)
        except ClusterError as error:
            log.warning("could not release Lease %s: %s", self.name, error)

    # -- the loop --------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        """Stop renewing; with ``release``, give the Lease up. Waits for a Lease request in
        flight only briefly: a release racing it cannot be undone by it (both carry the
        resourceVersion they read)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(RELEASE_TIMEOUT)
        if release:
            self.release()
        else:
            self._leading.clear()
            self.fence.close()

    def _step_down(self) -> None:
        log.error(
            "lost Lease %s/%s: not renewed within the renew deadline (%gs); stepping down",
            self.namespace,
            self.name,
            self._renew_deadline,
        )
        self.fence.close()
        self._leading.clear()
        self.lost.set()
        if self._on_lost is not None:
            self._on_lost()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.leading and self._monotonic() >= self._deadline:
                self._step_down()
                return
            if self.try_acquire_or_renew():
                if not self.leading and not self._stop.is_set():
                    log.info(
                        "became leader (Lease %s/%s, %s)", self.namespace, self.name, self.identity
                    )
                    self._leading.set()
                wait = self._retry
            elif self.leading:
                left = self._deadline - self._monotonic()
                if left <= 0:
                    self._step_down()
                    return
                wait = min(self._retry, left)
            else:
                wait = self._retry
            self._stop.wait(wait)
