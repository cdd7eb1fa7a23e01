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

from collections.abc import Mapping
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
        self._provider_ids: set[str] = set()

    def clear(self) -> None:
        self._entries.clear()
        self._provider_ids.clear()

    def record(self, entry: LedgerEntry) -> None:
        self._entries.append(entry)
        self._provider_ids.add(entry.instance.provider_id)

    def entries(self, *, include_terminated: bool = False) -> list[LedgerEntry]:
        return [e for e in self._entries if include_terminated or e.state != TERMINATED]

    def instances(self, *, include_terminated: bool = False) -> list[Instance]:
        """Instances in launch order; terminated ones only when asked for."""
        return [e.instance for e in self.entries(include_terminated=include_terminated)]

    def by_provider_id(self, provider_id: str) -> LedgerEntry | None:
        """The live (not terminated) instance with this provider ID."""
        for entry in self._entries:
            if entry.instance.provider_id == provider_id and entry.state != TERMINATED:
                return entry
        return None

    def knows(self, provider_id: str) -> bool:
        """Whether this ledger has an entry for ``provider_id`` (terminated ones too)."""
        return provider_id in self._provider_ids

    def by_idempotency_key(self, key: str) -> LedgerEntry | None:
        """The live instance launched for this key."""
        for entry in self._entries:
            if entry.idempotency_key == key and entry.state != TERMINATED:
                return entry
        return None
