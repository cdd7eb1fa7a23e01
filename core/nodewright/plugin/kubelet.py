"""Kubelet command-line flags for a provider's node bootstrap (user data, custom data).

Bootstrap scripts pass the kubelet its settings as ``--name=value`` flags; every provider
writes the same shapes: booleans in lower case, lists joined by commas, maps as sorted
``key<separator>value`` pairs (``--node-labels=a=1,b=2``, ``--eviction-hard=memory.available<5%``).
:func:`kubelet_flag` writes one; an unset setting (None, an empty list or map) writes none::

    kubelet_flags(
        kubelet_flag("max-pods", 58),
        kubelet_flag("node-labels", labels),
        kubelet_flag("eviction-hard", {"memory.available": "5%"}, separator="<"),
        kubelet_flag("cpu-cfs-quota", None),  # left out
    )  # ["--max-pods=58", "--node-labels=...", "--eviction-hard=memory.available<5%"]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

KubeletFlagValue = str | int | float | bool | Sequence[str] | Mapping[str, str] | None
"""What a kubelet flag can be set to."""


def kubelet_flag(name: str, value: KubeletFlagValue, separator: str = "=") -> str | None:
    """``--name=value``, or None when the setting is unset (None, or an empty list or map).

    Booleans are written ``true``/``false``, lists comma-joined, maps as comma-joined
    ``key<separator>value`` pairs sorted by key; anything else as ``str`` gives it.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, Mapping):
        if not value:
            return None
        text = ",".join(f"{key}{separator}{value[key]}" for key in sorted(value))
    elif isinstance(value, Sequence):
        if not value:
            return None
        text = ",".join(str(item) for item in value)
    else:
        text = str(value)
    return f"--{name}={text}"


def kubelet_flags(*flags: str | None) -> list[str]:
    """The flags that are set, in the order given."""
    return [flag for flag in flags if flag]
