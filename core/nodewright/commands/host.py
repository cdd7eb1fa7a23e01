"""The providers a command loads: every installed one, narrowed by environment variables."""

from __future__ import annotations

import os

from nodewright.plugin.host import PluginHost

#: Comma-separated provider names to load (all installed ones when unset).
PLUGINS_ENV = "NODEWRIGHT_PLUGINS"
#: Comma-separated provider names never to load.
DISABLE_PLUGINS_ENV = "NODEWRIGHT_DISABLE_PLUGINS"


def _names(variable: str) -> list[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def load_host() -> PluginHost:
    """Load providers from entry points, honouring the selection environment variables."""
    return PluginHost.load(only=_names(PLUGINS_ENV), blocked=_names(DISABLE_PLUGINS_ENV) or ())


def plugin_selection() -> tuple[list[str] | None, list[str]]:
    """The providers to load (None: every installed one) and those never to load, as the
    environment variables say: what a worker on another machine is told to load."""
    return _names(PLUGINS_ENV), _names(DISABLE_PLUGINS_ENV) or []
