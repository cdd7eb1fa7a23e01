"""Plugin sources and objects the plugin tests load."""

from __future__ import annotations

from typing import ClassVar

from nodewright.api.karpenter import NodeClass
from nodewright.plugin import NodeClassKind, ProviderInfo, hookimpl
from nodewright.testing import FakeProvider


def provider_source(name: str, extra: str = "") -> str:
    """A module-level provider named ``name`` with its own NodeClass kind
    (``<Name>NodeClass`` in group ``<name>.example.com``); ``extra`` is appended, so it may
    redefine any hook."""
    kind = f"{name.capitalize()}NodeClass"
    group = f"{name}.example.com"
    return f'''
from typing import ClassVar

from nodewright.api.karpenter import NodeClass
from nodewright.plugin import InstanceNotFoundError, NodeClassKind, ProviderInfo, hookimpl


class {kind}(NodeClass):
    API_VERSION: ClassVar[str] = "{group}/v1"
    KIND: ClassVar[str] = "{kind}"


@hookimpl
def nodewright_provider_info():
    return ProviderInfo(name="{name}", node_classes=(NodeClassKind("{group}", "{kind}", {kind}),))


@hookimpl
def nodewright_instance_types(node_class):
    return []


@hookimpl
def nodewright_launch(request):
    raise NotImplementedError


@hookimpl
def nodewright_get(provider_id):
    raise InstanceNotFoundError(provider_id)


@hookimpl
def nodewright_list():
    return []


@hookimpl
def nodewright_delete(provider_id):
    raise InstanceNotFoundError(provider_id)
{extra}
'''


class OtherNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = "other.example.com/v1"
    KIND: ClassVar[str] = "OtherNodeClass"


class OtherProvider(FakeProvider):
    """A FakeProvider that owns a different NodeClass kind, for routing tests."""

    def __init__(self, name: str = "other") -> None:
        super().__init__(name)

    @hookimpl
    def nodewright_provider_info(self) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            node_classes=(NodeClassKind("other.example.com", "OtherNodeClass", OtherNodeClass),),
            restricted_label_domains=frozenset({"other.example.com"}),
        )
