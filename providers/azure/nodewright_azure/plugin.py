"""The Azure provider's hook implementations (entry point ``azure`` in
``nodewright.providers``).

:class:`AzurePlugin` holds the hooks over one
:class:`~nodewright_azure.cloudprovider.AzureProvider`; the module exposes one of them at module
level, which is what the entry point loads. Loading and configuring it makes no Azure call.
"""

from __future__ import annotations

from nodewright.plugin import ProviderPlugin
from nodewright_azure.cloudprovider import AzureProvider, provider_info


class AzurePlugin(ProviderPlugin[AzureProvider]):
    """The hooks of the contract over one :class:`AzureProvider`."""

    def __init__(self, provider: AzureProvider) -> None:
        super().__init__(provider, provider_info)


#: The provider behind the module's hooks.
provider = AzureProvider()

# The module is the plugin the entry point names: its hooks are one AzurePlugin's bound methods
# (pluggy reads the @hookimpl marks through them).
_plugin = AzurePlugin(provider)
globals().update(_plugin.hooks())
