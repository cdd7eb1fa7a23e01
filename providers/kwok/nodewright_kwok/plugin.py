"""The KWOK provider's hook implementations (entry point ``kwok`` in ``nodewright.providers``).

Each hook delegates to one :class:`~nodewright_kwok.provider.KWOKProvider`. Tests and
scenarios reach its state here: ``plugin.faults`` to inject faults, ``plugin.ledger`` to see
every instance the fake cloud runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.plugin import hookimpl
from nodewright.plugin.model import (
    Instance,
    InstanceType,
    LaunchRequest,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
)
from nodewright_kwok.faults import Faults
from nodewright_kwok.ledger import Ledger
from nodewright_kwok.provider import KWOKProvider, provider_info

#: The provider behind the hooks.
provider = KWOKProvider()
#: Faults in force; ``faults.reset()`` clears them.
faults: Faults = provider.faults
#: Every instance launched; ``ledger.instances()`` lists the live ones.
ledger: Ledger = provider.ledger


@hookimpl
def nodewright_provider_info() -> ProviderInfo:
    return provider_info()


@hookimpl
def nodewright_configure(context: ProviderContext) -> None:
    provider.configure(context)


@hookimpl
def nodewright_node_class_status(node_class: NodeClass) -> NodeClassReadiness | None:
    return provider.node_class_status(node_class)


@hookimpl
def nodewright_instance_types(node_class: NodeClass) -> Sequence[InstanceType] | None:
    return provider.instance_types(node_class)


@hookimpl
def nodewright_offerings(
    node_class: NodeClass, instance_types: Sequence[InstanceType]
) -> Mapping[str, Sequence[Offering]] | None:
    return provider.offerings(node_class, instance_types)


@hookimpl
def nodewright_launch(request: LaunchRequest) -> Instance | None:
    return provider.launch(request)


@hookimpl
def nodewright_get(provider_id: str) -> Instance | None:
    return provider.get(provider_id)


@hookimpl
def nodewright_list() -> Sequence[Instance] | None:
    return provider.list()


@hookimpl
def nodewright_delete(provider_id: str) -> None:
    provider.delete(provider_id)


@hookimpl
def nodewright_node_labels(node_claim: NodeClaim, instance: Instance) -> Mapping[str, str] | None:
    return provider.node_labels(node_claim, instance)


@hookimpl
def nodewright_is_drifted(node_claim: NodeClaim, node_class: NodeClass) -> str | None:
    return provider.is_drifted(node_claim, node_class)


@hookimpl
def nodewright_reconcile(now: datetime) -> timedelta | None:
    return provider.reconcile(now)
