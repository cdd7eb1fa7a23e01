"""The public plugin API: mark hook implementations with :data:`hookimpl`.

A provider is a module with ``nodewright_*`` functions, registered as an entry point::

    # pyproject.toml
    [project.entry-points."nodewright.providers"]
    mycloud = "nodewright_mycloud.plugin"

    # nodewright_mycloud/plugin.py
    from nodewright.plugin import ProviderInfo, NodeClassKind, hookimpl

    @hookimpl
    def nodewright_provider_info() -> ProviderInfo:
        return ProviderInfo(name="mycloud", node_classes=(NodeClassKind(...),))

See :mod:`nodewright.plugin.hookspecs` for every hook and its contract.
"""

from __future__ import annotations

import pluggy

from nodewright.cluster import ClusterError, ConflictError
from nodewright.cluster.state import Change, ChangeFeed, ClusterState
from nodewright.plugin.delegate import Provider, ProviderPlugin
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    NodeClassNotReadyError,
    PluginConflictError,
    PluginContractError,
    PluginError,
    PluginLoadError,
    ProviderError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.model import (
    Instance,
    InstanceType,
    InstanceTypeOverhead,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    Reservation,
)
from nodewright.plugin.names import ENTRY_POINT_GROUP, NAME

#: Marks a function as a hook implementation.
hookimpl = pluggy.HookimplMarker(NAME)

__all__ = [
    "ENTRY_POINT_GROUP",
    "NAME",
    "Change",
    "ChangeFeed",
    "ClusterError",
    "ClusterState",
    "ConflictError",
    "Instance",
    "InstanceNotFoundError",
    "InstanceType",
    "InstanceTypeOverhead",
    "InsufficientCapacityError",
    "LaunchError",
    "LaunchRequest",
    "LaunchResult",
    "NodeClassKind",
    "NodeClassNotReadyError",
    "NodeClassReadiness",
    "Offering",
    "PluginConflictError",
    "PluginContractError",
    "PluginError",
    "PluginLoadError",
    "Provider",
    "ProviderContext",
    "ProviderError",
    "ProviderInfo",
    "ProviderPlugin",
    "RepairPolicy",
    "Reservation",
    "TemporaryProviderError",
    "UnknownNodeClassError",
    "hookimpl",
]
