"""Errors providers raise, and errors the plugin host raises about providers.

The provider taxonomy follows Karpenter's ``pkg/cloudprovider/types.go``: each error tells the
core what to do next. Anything else a hook raises is treated as a temporary failure, retried
with backoff, and reported with the provider's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta


class ProviderError(Exception):
    """Base for errors a provider raises on purpose."""


class InstanceNotFoundError(ProviderError):
    """The instance does not exist (any more). From ``delete``: deletion is complete."""


class InsufficientCapacityError(ProviderError):
    """No capacity for the requested offerings.

    ``offerings`` lists ``(instance_type, zone, capacity_type)`` triples that failed; the
    core marks them unavailable for a while, deletes the NodeClaim and schedules its pods
    again with what remains.
    """

    def __init__(
        self,
        message: str,
        offerings: Sequence[tuple[str, str, str]] = (),
        ttl: timedelta = timedelta(minutes=3),
    ) -> None:
        super().__init__(message)
        self.offerings = tuple(offerings)
        self.ttl = ttl


class NodeClassNotReadyError(ProviderError):
    """The NodeClass cannot be used yet; the NodeClaim is deleted and retried later."""


class LaunchError(ProviderError):
    """Launch failed for a reason the user can act on; shown on the NodeClaim's
    ``Launched`` condition with ``reason`` and retried with backoff."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class TemporaryProviderError(ProviderError):
    """A transient failure (throttling, a timeout); retry after ``delay``."""

    def __init__(self, message: str, delay: timedelta = timedelta(seconds=5)) -> None:
        super().__init__(message)
        self.delay = delay


# -- errors about plugins (raised by the host) ----------------------------------------------


class PluginError(Exception):
    """A problem with a plugin; the message names the plugin and its distribution."""

    def __init__(self, plugin: str, distribution: str, message: str) -> None:
        where = f"plugin {plugin!r}" + (f" (distribution {distribution})" if distribution else "")
        super().__init__(f"{where}: {message}")
        self.plugin = plugin
        self.distribution = distribution
        self.detail = message


class PluginLoadError(PluginError):
    """A plugin failed to import, or its hook implementations do not match the specs."""


class PluginConflictError(PluginError):
    """Two plugins claim the same provider name or NodeClass kind."""


class PluginContractError(PluginError):
    """A hook returned something other than what its spec promises, or raised unexpectedly."""


class UnknownNodeClassError(Exception):
    """No loaded provider serves a NodeClass kind; says which distribution would."""

    def __init__(self, group: str, kind: str, hint: str = "") -> None:
        message = f"no installed provider serves NodeClass kind {kind!r} (group {group!r})"
        if hint:
            message += f"; {hint}"
        super().__init__(message)
        self.group = group
        self.kind = kind
        self.hint = hint
