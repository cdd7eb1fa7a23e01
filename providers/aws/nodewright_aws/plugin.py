"""The AWS provider's hook implementations (entry point ``aws`` in ``nodewright.providers``).

Each hook delegates to one :class:`~nodewright_aws.cloudprovider.AWSProvider`. Loading this
module and ``configure`` make no AWS call: a missing region or credentials is reported on
first use, as a NodeClass condition or a provider error naming what to set.
"""

from __future__ import annotations

from nodewright.plugin import ProviderPlugin
from nodewright_aws.cloudprovider import AWSProvider, provider_info


class AWSPlugin(ProviderPlugin[AWSProvider]):
    """The hooks of the contract over one :class:`AWSProvider`."""

    def __init__(self, provider: AWSProvider) -> None:
        super().__init__(provider, provider_info)


#: The provider behind the module's hooks.
provider = AWSProvider()

# The module is the plugin the entry point names: its hooks are one AWSPlugin's bound methods
# (pluggy reads the @hookimpl marks through them).
_plugin = AWSPlugin(provider)
globals().update(_plugin.hooks())
