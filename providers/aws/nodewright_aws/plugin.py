"""The AWS provider's hook implementations (entry point ``aws`` in ``nodewright.providers``).

Each hook delegates to one :class:`~nodewright_aws.provider.AWSProvider`. Loading this
module and ``configure`` make no AWS call: a missing region or credentials is reported on
first use, as a NodeClass condition or a provider error naming what to set.
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
from nodewright_aws.provider import AWSProvider, provider_info


class AWSPlugin:
    """The hooks of the contract over one :class:`AWSProvider`."""

    def __init__(self, provider: AWSProvider) -> None:
        self.provider = provider

    @hookimpl
    def nodewright_provider_info(self) -> ProviderInfo:
        return provider_info()

    @hookimpl
    def nodewright_configure(self, context: ProviderContext) -> None:
        self.provider.configure(context)

    @hookimpl
    def nodewright_node_class_status(self, node_class: NodeClass) -> NodeClassReadiness | None:
        return self.provider.node_class_status(node_class)

    @hookimpl
    def nodewright_instance_types(self, node_class: NodeClass) -> Sequence[InstanceType] | None:
        return self.provider.instance_types(node_class)

    @hookimpl
    def nodewright_offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]] | None:
        return self.provider.offerings(node_class, instance_types)

    @hookimpl
    def nodewright_launch(self, request: LaunchRequest) -> Instance | None:
        return self.provider.launch(request)

    @hookimpl
    def nodewright_get(self, provider_id: str) -> Instance | None:
        return self.provider.get(provider_id)

    @hookimpl
    def nodewright_list(self) -> Sequence[Instance] | None:
        return self.provider.list_instances()

    @hookimpl
    def nodewright_delete(self, provider_id: str) -> None:
        self.provider.delete(provider_id)

    @hookimpl
    def nodewright_is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        return self.provider.is_drifted(node_claim, node_class)

    @hookimpl
    def nodewright_reconcile(self, now: datetime) -> timedelta | None:
        return self.provider.reconcile(now)


#: The provider behind the module's hooks.
provider = AWSProvider()

_plugin = AWSPlugin(provider)
nodewright_provider_info = _plugin.nodewright_provider_info
nodewright_configure = _plugin.nodewright_configure
nodewright_node_class_status = _plugin.nodewright_node_class_status
nodewright_instance_types = _plugin.nodewright_instance_types
nodewright_offerings = _plugin.nodewright_offerings
nodewright_launch = _plugin.nodewright_launch
nodewright_get = _plugin.nodewright_get
nodewright_list = _plugin.nodewright_list
nodewright_delete = _plugin.nodewright_delete
nodewright_is_drifted = _plugin.nodewright_is_drifted
nodewright_reconcile = _plugin.nodewright_reconcile
