"""The fake cloud's own record of instances, kept apart from the cluster's Node objects.

A real cloud knows its machines whether or not a Node exists for them; keeping that record
separate is what lets tests see leaked instances (no NodeClaim), doubles (two instances for
one NodeClaim) and Nodes the cloud never launched.

The record lives in one process. On a real cluster a new leader's ledger starts empty, so
the provider adopts the instances other processes launched from the Nodes they registered
(``KWOKProvider.adopt``): a registered KWOK instance *is* its Node, as in Karpenter's KWOK
provider. An instance launched but not yet registered when its process died is lost with
that process (its Node never appears; the NodeClaim's launch is repeated).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from nodewright.plugin import Instance

PENDING = "pending"
RUNNING = "running"
TERMINATED = "terminated"


@dataclass
class LedgerEntry:
    """One instance and what the fake cloud needs to bring its Node up."""

    instance: Instance
    idempotency_key: str
    #: When the instance's Node appears in the cluster.
    registers_at: datetime
    #: The NodeClaim's labels and annotations at launch, copied onto the Node.
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def node_name(self) -> str:
        return self.instance.node_claim

    @property
    def state(self) -> str:
        return self.instance.state

    def set_state(self, state: str) -> None:
        self.instance = replace(self.instance, state=state)


class Ledger:
    """Every instance the fake cloud ever launched, in launch order."""

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []
        #: The entries of each provider ID and of each idempotency key, in launch order (an
        #: entry keeps both for life; only its state changes).
        self._by_provider_id: dict[str, list[LedgerEntry]] = {}
        self._by_key: dict[str, list[LedgerEntry]] = {}

    def clear(self) -> None:
        self._entries.clear()
        self._by_provider_id.clear()
        self._by_key.clear()

    def record(self, entry: LedgerEntry) -> None:
        self._entries.append(entry)
        self._by_provider_id.setdefault(entry.instance.provider_id, []).append(entry)
        self._by_key.setdefault(entry.idempotency_key, []).append(entry)

    def entries(self, *, include_terminated: bool = False) -> list[LedgerEntry]:
        return [e for e in self._entries if include_terminated or e.state != TERMINATED]

    def instances(self, *, include_terminated: bool = False) -> list[Instance]:
        """Instances in launch order; terminated ones only when asked for."""
        return [e.instance for e in self.entries(include_terminated=include_terminated)]

    def by_provider_id(self, provider_id: str) -> LedgerEntry | None:
        """The live (not terminated) instance with this provider ID."""
        return _live(self._by_provider_id.get(provider_id, ()))

    def knows(self, provider_id: str) -> bool:
        """Whether this ledger has an entry for ``provider_id`` (terminated ones too)."""
        return provider_id in self._by_provider_id

    def by_idempotency_key(self, key: str) -> LedgerEntry | None:
        """The live instance launched for this key."""
        return _live(self._by_key.get(key, ()))


def _live(entries: Iterable[LedgerEntry]) -> LedgerEntry | None:
    """The first of ``entries`` not terminated."""
    return next((entry for entry in entries if entry.state != TERMINATED), None)
