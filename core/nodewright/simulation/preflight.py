"""Checks run before simulating, so a provider that cannot work stops the run at once.

Without them a typo'd ``--provider-option`` or a missing region is logged, then the run goes
on with every pod pending and exits 0. Each problem is one line naming the provider and the
option (or setting) to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from nodewright.api.karpenter import NodePool
from nodewright.api.meta import KubeObject
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.plugin.registry import LoadedProvider

_CONFIGURE_FAILED = "nodewright_configure failed: "


def option_problems(host: PluginHost, options: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Options given to a provider that is not installed, or that its configure refused."""
    providers = {entry.name: entry for entry in host.providers if entry.info is not None}
    installed = ", ".join(sorted(providers)) or "none"
    lines = []
    for name, settings in options.items():
        entry = providers.get(name)
        given = ", ".join(f"{name}.{key}" for key in settings)
        if entry is None:
            lines.append(
                f"--provider-option {given}: no provider named {name!r} is installed "
                f"(installed: {installed})"
            )
        elif entry.error is not None:
            lines.append(f"--provider-option {_named(entry, settings)}: {_reason(entry)}")
    return lines


def unusable_providers(
    host: PluginHost,
    objects: Iterable[KubeObject],
    where: Callable[[NodePool], str] | None = None,
) -> list[str]:
    """The providers the NodePools in ``objects`` need that are broken or not configured.
    With ``where``, each line starts with where the first NodePool needing that provider
    names its NodeClass (``file:line: NodePool "name": spec.template.spec.nodeClassRef``)."""
    needed: dict[str, tuple[LoadedProvider | PluginError, NodePool]] = {}
    for obj in objects:
        if not isinstance(obj, NodePool):
            continue
        ref = obj.spec.template.spec.node_class_ref
        try:
            entry = host.provider_for(ref.group, ref.kind)
        except UnknownNodeClassError:
            continue  # reported with the manifests
        except PluginError as broken:
            needed.setdefault(broken.plugin, (broken, obj))
            continue
        needed.setdefault(entry.name, (entry, obj))
    lines = []
    for name, (found, pool) in sorted(needed.items()):
        if isinstance(found, PluginError):
            problem: str | None = found.detail.removeprefix(_CONFIGURE_FAILED)
        else:
            try:
                problem = host.configuration_problem(name)
            except PluginError as error:
                problem = str(error)
        if problem:
            line = f"provider {name}: {problem}"
            lines.append(line if where is None else f"{where(pool)}: {line}")
    return lines


def _named(entry: LoadedProvider, settings: Mapping[str, str]) -> str:
    """The option the provider's error names (``kwok.registraton-delay=5s``), else all."""
    reason = _reason(entry)
    named = [key for key in settings if f"'{key}'" in reason or reason.startswith(f"{key}:")]
    keys = named[:1] or list(settings)
    return ", ".join(f"{entry.name}.{key}={settings[key]}" for key in keys)


def _reason(entry: LoadedProvider) -> str:
    assert entry.error is not None
    detail = entry.error.detail.removeprefix(_CONFIGURE_FAILED)
    return detail.removeprefix("ValueError: ").removeprefix("SettingsError: ")
