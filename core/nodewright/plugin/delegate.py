"""Hooks answered by one provider object, so a provider package writes a class, not the hooks.

Every hook of the contract calls the provider method of the same name without the
``nodewright_`` prefix (``nodewright_list`` calls ``list_instances``). ``node_labels``,
``is_drifted``, ``repair_policies``, ``reconcile``, ``configuration_problem`` and
``report_notes`` are optional: a provider without them leaves those hooks unanswered. A
provider package's plugin module is then::

    provider = ToyProvider()
    plugin = ProviderPlugin(provider, provider_info)
    globals().update(plugin.hooks())  # the module is what the entry point names
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

import pluggy

from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.plugin.model import (
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
)
from nodewright.plugin.names import NAME

_hookimpl = pluggy.HookimplMarker(NAME)


class Provider(Protocol):
    """What a provider object must answer; see :mod:`nodewright.plugin.hookspecs`."""

    def configure(self, context: ProviderContext) -> None: ...

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness | None: ...

    def instance_types(self, node_class: NodeClass) -> Sequence[InstanceType]: ...

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]]: ...

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult: ...

    def get(self, provider_id: str) -> Instance: ...

    def list_instances(self) -> Sequence[Instance]: ...

    def delete(self, provider_id: str) -> None: ...


P = TypeVar("P", bound=Provider)


class ProviderPlugin(Generic[P]):
    """The hooks of the contract over one provider object."""

    def __init__(self, provider: P, info: Callable[[], ProviderInfo]) -> None:
        self.provider = provider
        self._info = info

    def hooks(self) -> dict[str, Callable[..., Any]]:
        """The hook implementations by name, to expose at a plugin module's top level."""
        return {name: getattr(self, name) for name in dir(self) if name.startswith("nodewright_")}

    def _optional(self, method: str, *args: object) -> Any:
        found = getattr(self.provider, method, None)
        return None if found is None else found(*args)

    @_hookimpl
    def nodewright_provider_info(self) -> ProviderInfo:
        return self._info()

    @_hookimpl
    def nodewright_configure(self, context: ProviderContext) -> None:
        self.provider.configure(context)

    @_hookimpl
    def nodewright_configuration_problem(self) -> str | None:
        result: str | None = self._optional("configuration_problem")
        return result

    @_hookimpl
    def nodewright_report_notes(self) -> Sequence[str] | None:
        result: Sequence[str] | None = self._optional("report_notes")
        return result

    @_hookimpl
    def nodewright_node_class_status(self, node_class: NodeClass) -> NodeClassReadiness | None:
        return self.provider.node_class_status(node_class)

    @_hookimpl
    def nodewright_instance_types(self, node_class: NodeClass) -> Sequence[InstanceType] | None:
        return self.provider.instance_types(node_class)

    @_hookimpl
    def nodewright_offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]] | None:
        return self.provider.offerings(node_class, instance_types)

    @_hookimpl
    def nodewright_launch(self, request: LaunchRequest) -> Instance | LaunchResult | None:
        return self.provider.launch(request)

    @_hookimpl
    def nodewright_get(self, provider_id: str) -> Instance | None:
        return self.provider.get(provider_id)

    @_hookimpl
    def nodewright_list(self) -> Sequence[Instance] | None:
        return self.provider.list_instances()

    @_hookimpl
    def nodewright_delete(self, provider_id: str) -> None:
        self.provider.delete(provider_id)

    @_hookimpl
    def nodewright_node_labels(
        self, node_claim: NodeClaim, instance: Instance
    ) -> Mapping[str, str] | None:
        result: Mapping[str, str] | None = self._optional("node_labels", node_claim, instance)
        return result

    @_hookimpl
    def nodewright_is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        result: str | None = self._optional("is_drifted", node_claim, node_class)
        return result

    @_hookimpl
    def nodewright_repair_policies(self) -> Sequence[RepairPolicy] | None:
        result: Sequence[RepairPolicy] | None = self._optional("repair_policies")
        return result

    @_hookimpl
    def nodewright_reconcile(self, now: datetime) -> timedelta | None:
        result: timedelta | None = self._optional("reconcile", now)
        return result
