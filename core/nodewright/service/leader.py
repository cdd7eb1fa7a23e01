"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules.

A candidate takes the Lease when nobody holds it or the holder has not renewed it for
``lease_duration`` (measured on this process's monotonic clock from when it last saw the
record change, so clock skew between replicas does not matter). The leader renews every
``retry_period``; if it cannot renew within ``renew_deadline`` it stops leading. Writes carry
the Lease's resourceVersion, so two candidates racing for it cannot both win: the loser gets
a conflict. On shutdown the leader releases the Lease so a standby takes over at once.
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
from nodewright.cluster.objects import mutable

log = logging.getLogger("nodewright.leader")


class LeaseStore(Protocol):
    """What the elector needs from the cluster: live reads and versioned writes."""

    def read(self, kind: type[Lease], name: str, namespace: str = "") -> Lease | None: ...

    def create(self, obj: Lease) -> Lease: ...

    def update(self, obj: Lease) -> Lease: ...


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
        self._observed: tuple[str | None, datetime | None] | None = None
        self._observed_at = 0.0
        self._last_renewed = 0.0
        self._leading = threading.Event()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def wait_for_leadership(self, timeout: float) -> bool:
        return self._leading.wait(timeout)

    # -- one round -------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards."""
        now = self._monotonic()
        wall = _micro(self._wall())
        try:
            lease = self._store.read(Lease, self.name, self.namespace)
        except ClusterError as error:
            log.warning("could not read Lease %s/%s: %s", self.namespace, self.name, error)
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
                self._store.create(fresh)
            except ClusterError as error:
                log.info("lost the race to create Lease %s: %s", self.name, error)
                return False
            self._observe(fresh, now)
            return True
        record = (lease.spec.holder_identity, lease.spec.renew_time)
        if record != self._observed:
            self._observe(lease, now)
        holder = lease.spec.holder_identity
        held_by_other = bool(holder) and holder != self.identity
        lease_seconds = lease.spec.lease_duration_seconds or duration
        if held_by_other and self._observed_at + lease_seconds > now:
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
            written = self._store.update(lease)
        except ClusterError as error:
            log.info("could not take or renew Lease %s: %s", self.name, error)
            return False
        self._observe(written, now)
        return True

    def _observe(self, lease: Lease, now: float) -> None:
        self._observed = (lease.spec.holder_identity, lease.spec.renew_time)
        self._observed_at = now

    def release(self) -> None:
        """Give the Lease up (on shutdown) so a standby need not wait for it to expire."""
        if not self.leading:
            return
        self._leading.clear()
        try:
            lease = self._store.read(Lease, self.name, self.namespace)
            if lease is None or lease.spec.holder_identity != self.identity:
                return
            lease = mutable(lease)
            wall = _micro(self._wall())
            lease.spec.holder_identity = ""
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = wall
            lease.spec.acquire_time = wall
            self._store.update(lease)
            log.info("released Lease %s/%s", self.namespace, self.name)
        except ClusterError as error:
            log.warning("could not release Lease %s: %s", self.name, error)

    # -- the loop --------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._retry + 5)
        if release:
            self.release()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.leading:
                if self.try_acquire_or_renew():
                    self._last_renewed = self._monotonic()
                elif self._monotonic() - self._last_renewed > self._renew_deadline:
                    log.error(
                        "lost Lease %s/%s: not renewed within %gs",
                        self.namespace,
                        self.name,
                        self._renew_deadline,
                    )
                    self._leading.clear()
                    self.lost.set()
                    return
            elif self.try_acquire_or_renew():
                self._last_renewed = self._monotonic()
                log.info(
                    "became leader (Lease %s/%s, %s)", self.namespace, self.name, self.identity
                )
                self._leading.set()
            self._stop.wait(self._retry)
