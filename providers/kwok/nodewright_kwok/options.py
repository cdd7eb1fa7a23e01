"""The KWOK provider's options (``--provider-option kwok.<name>=<value>``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from nodewright.plugin import DEFAULT_RECONCILE_PERIOD, DurationError, parse_duration
from nodewright_kwok import faults

REGISTRATION_DELAY = "registration-delay"
INSTANCE_TYPES_FILE = "instance-types-file"
MANAGE_NODES = "manage-nodes"
KUBELET_PERIOD = "kubelet-period"
OPTIONS = (REGISTRATION_DELAY, INSTANCE_TYPES_FILE, MANAGE_NODES, KUBELET_PERIOD, *faults.OPTIONS)

_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")


@dataclass(frozen=True)
class Settings:
    """Parsed options; the ``fault-*`` options are parsed by :meth:`Faults.configure`."""

    #: Overrides every NodeClass's ``nodeRegistrationDelay`` when set.
    registration_delay: timedelta | None = None
    #: A catalog file replacing the default instance types.
    instance_types_file: str | None = None
    #: Emulate kubelets: keep the provider's Nodes Ready and run pods bound to them.
    manage_nodes: bool = True
    #: How often the emulated kubelets look at their Nodes and pods.
    kubelet_period: timedelta = DEFAULT_RECONCILE_PERIOD


def parse_settings(options: Mapping[str, str]) -> Settings:
    """Parse the options; an unknown option or a bad value is a ValueError naming it."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown kwok option {unknown[0]!r}; known options: {', '.join(OPTIONS)}")
    delay = _duration(options, REGISTRATION_DELAY)
    period = _duration(options, KUBELET_PERIOD)
    if period is not None and period <= timedelta(0):
        raise ValueError(f"{KUBELET_PERIOD}: must be longer than 0s")
    manage = options.get(MANAGE_NODES, "true").strip().lower()
    if manage not in _TRUE + _FALSE:
        raise ValueError(f"{MANAGE_NODES}: {manage!r} is not true or false")
    return Settings(
        registration_delay=delay,
        instance_types_file=options.get(INSTANCE_TYPES_FILE, "").strip() or None,
        manage_nodes=manage in _TRUE,
        kubelet_period=period or DEFAULT_RECONCILE_PERIOD,
    )


def _duration(options: Mapping[str, str], name: str) -> timedelta | None:
    text = options.get(name, "").strip()
    if not text:
        return None
    try:
        return parse_duration(text)
    except DurationError as error:
        raise ValueError(f"{name}: {error}") from error
