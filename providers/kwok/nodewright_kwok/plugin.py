"""The KWOK provider's hook implementations (entry point ``kwok`` in ``nodewright.providers``).

Each hook delegates to one :class:`~nodewright_kwok.provider.KWOKProvider`. Tests and
scenarios reach its state here: ``plugin.faults`` to inject faults, ``plugin.ledger`` to see
every instance the fake cloud runs.

:class:`KWOKPlugin` holds the hooks for any provider object; the module exposes one of them
at module level, which is what the entry point loads. A test that restarts nodewright builds
a fresh ``KWOKPlugin(KWOKProvider(ledger=plugin.ledger))``: a new provider over the same fake
cloud.
"""

from __future__ import annotations

from nodewright.plugin import ProviderPlugin
from nodewright_kwok.faults import Faults
from nodewright_kwok.ledger import Ledger
from nodewright_kwok.provider import KWOKProvider, provider_info


class KWOKPlugin(ProviderPlugin[KWOKProvider]):
    """The hooks of the contract over one :class:`KWOKProvider`."""

    def __init__(self, provider: KWOKProvider) -> None:
        super().__init__(provider, provider_info)


#: The provider behind the module's hooks.
provider = KWOKProvider()
#: Faults in force; ``faults.reset()`` clears them.
faults: Faults = provider.faults
#: Every instance launched; ``ledger.instances()`` lists the live ones.
ledger: Ledger = provider.ledger

# The module is the plugin the entry point names: its hooks are one KWOKPlugin's bound methods
# (pluggy reads the @hookimpl marks through them).
_plugin = KWOKPlugin(provider)
globals().update(_plugin.hooks())
