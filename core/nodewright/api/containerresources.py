"""A container's resource requests and limits by the API server's rules, in its words.

A real API server refuses a container asking for ``gpu`` (not a standard resource, not
fully qualified), for half an ``example.com/gpu`` (an extended resource is counted in whole
units), for an extended resource or huge pages without an equal limit (they cannot be
overcommitted), for huge pages without cpu or memory, and for a request above its limit.
``nodewright simulate`` refuses the same, at the same field paths, with the same words and
the quantities written back as the server writes them (``1.5`` is ``"1500m"``).

A Pod's requests default to its limits before the server validates it (a pod template's do
not), so a Pod limiting ``example.com/gpu: 1.5`` is refused at both ``limits`` and
``requests``, a Deployment's template only at ``limits``.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api.core import ResourceRequirements
from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldErrors, invalid_value
from nodewright.api.names import qualified_name_problems, qualified_name_server_problems
from nodewright.api.quantity import QuantityError, canonical_quantity, parse_quantity

#: Names a resource may have without a domain: the API server's standard resources (those of
#: containers and of quotas).
STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
#: The standard resources a container may ask for, besides huge pages.
CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
HUGE_PAGES_PREFIX = "hugepages-"
#: What an extended resource's name must be qualified with, as a quota counts it.
_QUOTA_PREFIX = "requests."


def is_native(name: str) -> bool:
    """Kubernetes' own: unqualified, or qualified within ``kubernetes.io/``."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """A resource a device plugin or an operator adds (``example.com/gpu``): counted in whole
    units, never overcommitted."""
    if is_native(name) or name.startswith(_QUOTA_PREFIX):
        return False
    return not qualified_name_problems(_QUOTA_PREFIX + name)


def _may_overcommit(name: str) -> bool:
    return is_native(name) and not name.startswith(HUGE_PAGES_PREFIX)


def check_resource_list(
    report: FieldErrors, path: str, resources: Mapping[str, str]
) -> dict[str, int]:
    """Resource names and non-negative quantities; the parsed values, in milli-units."""
    parsed: dict[str, int] = {}
    for name, text in resources.items():
        where = f"{path}[{name}]"
        problems = qualified_name_server_problems(name)
        if problems:
            report.add_all(where, (invalid_value(name, p) for p in problems))
            continue
        try:
            value = parse_quantity(text)
        except QuantityError as error:
            report.add(where, str(error))
            continue
        if value < 0:
            report.add(where, f"must be greater than or equal to 0, got {excerpt(text)}")
            continue
        parsed[name] = value
    return parsed


class _Report:
    """One container's problems, each told once (the API server folds repeats)."""

    def __init__(self, report: FieldErrors) -> None:
        self.report = report
        self.seen: set[tuple[str, str]] = set()

    def add(self, path: str, message: str) -> None:
        if (path, message) not in self.seen:
            self.seen.add((path, message))
            self.report.add(path, message)


def check_container_resources(
    report: FieldErrors, path: str, resources: ResourceRequirements, *, defaulted: bool
) -> None:
    """Every rule of the API server's for the requests and limits at ``path`` (a container's
    ``resources``); ``defaulted`` for a Pod's, whose unset requests take their limits."""
    once = _Report(report)
    limits = resources.limits
    requests = {**limits, **resources.requests} if defaulted else resources.requests
    limit_values = _check_entries(once, f"{path}.limits", limits)
    request_values = _check_entries(once, f"{path}.requests", requests)
    for name, request in request_values.items():
        limit = limit_values.get(name)
        shown = canonical_quantity(requests[name])
        if limit is not None:
            if request != limit and not _may_overcommit(name):
                detail = f"must be equal to {name} limit of {canonical_quantity(limits[name])}"
                once.add(f"{path}.requests", invalid_value(shown, detail))
            elif request > limit:
                detail = (
                    f"must be less than or equal to {name} limit of "
                    f"{canonical_quantity(limits[name])}"
                )
                once.add(f"{path}.requests", invalid_value(shown, detail))
        elif name not in limits and not _may_overcommit(name):
            once.add(
                f"{path}.limits",
                "Required value: Limit must be set for non overcommitable resources",
            )
    named = {*limits, *requests}
    if any(n.startswith(HUGE_PAGES_PREFIX) for n in named) and not named & {"cpu", "memory"}:
        once.add(path, "Forbidden: HugePages require cpu or memory")


def _check_entries(once: _Report, path: str, resources: Mapping[str, str]) -> dict[str, int]:
    """Each name and quantity of one list; the quantities that parse, in milli-units."""
    parsed: dict[str, int] = {}
    for name, text in resources.items():
        where = f"{path}[{name}]"
        _check_name(once, where, name)
        try:
            value = parse_quantity(text)
        except QuantityError as error:
            once.add(where, str(error))
            continue
        parsed[name] = value
        shown = canonical_quantity(text)
        if value < 0:
            once.add(where, invalid_value(shown, "must be greater than or equal to 0"))
        if is_extended(name) and value % 1000:
            once.add(where, invalid_value(shown, "must be an integer"))
        if name.startswith(HUGE_PAGES_PREFIX) and not _whole_pages(name, value):
            detail = f"{shown} is not positive integer multiple of {name}"
            once.add(where, invalid_value(shown, detail))
    return parsed


def _check_name(once: _Report, where: str, name: str) -> None:
    problems = qualified_name_server_problems(name)
    for problem in problems:
        once.add(where, invalid_value(name, problem))
    if "/" not in name:
        if not problems and name not in STANDARD_RESOURCES and not _quota_huge_pages(name):
            once.add(
                where, invalid_value(name, "must be a standard resource type or fully qualified")
            )
        if name not in CONTAINER_RESOURCES and not name.startswith(HUGE_PAGES_PREFIX):
            once.add(where, invalid_value(name, "must be a standard resource for containers"))
    elif not is_native(name) and not is_extended(name):
        once.add(where, invalid_value(name, "doesn't follow extended resource name standard"))


def _quota_huge_pages(name: str) -> bool:
    return name.startswith((HUGE_PAGES_PREFIX, _QUOTA_PREFIX + HUGE_PAGES_PREFIX))


def _whole_pages(name: str, milli: int) -> bool:
    """Whether ``milli`` (rounded up to a whole byte) is a multiple of the named page size."""
    try:
        page = parse_quantity(name.removeprefix(HUGE_PAGES_PREFIX))
    except QuantityError:
        return False
    if page <= 0 or page % 1000:
        return False
    return -(-milli // 1000) % (page // 1000) == 0
