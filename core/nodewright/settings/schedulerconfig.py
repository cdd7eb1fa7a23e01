"""``SCHEDULER_CONFIG``: the parts of the cluster's kube-scheduler configuration that
provisioning must mirror (Karpenter's ``SchedulerConfiguration``, kubernetes-sigs/karpenter
#3205). Today that is ``podTopologySpread.defaultConstraints``: spreads kube-scheduler gives
every pod that declares none of its own.

The value is a YAML or JSON document with the shape of the scheduler's own fields, so the
``defaultConstraints`` of a ``KubeSchedulerConfiguration``'s PodTopologySpread plugin args can
be pasted under ``podTopologySpread``. Unknown fields and constraints kube-scheduler would
refuse are errors that name the field, as ``ValidatePodTopologySpreadArgs`` words them.
nodewright also takes the name of a file holding the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pydantic
from pydantic import Field

from nodewright.api.core import TopologySpreadConstraint
from nodewright.api.excerpt import excerpt
from nodewright.api.manifests.documents import line_of, parse_yaml
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.files import read_document
from nodewright.api.manifests.limits import LIMITS
from nodewright.api.meta import StrictModel
from nodewright.api.names import qualified_name_problems

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


class SchedulerConfigError(ValueError):
    """A malformed or invalid scheduler configuration; the message names the field."""


class PodTopologySpreadConfig(StrictModel):
    default_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)


class SchedulerConfig(StrictModel):
    pod_topology_spread: PodTopologySpreadConfig | None = None

    @property
    def default_constraints(self) -> tuple[TopologySpreadConstraint, ...]:
        spread = self.pod_topology_spread
        return tuple(spread.default_constraints) if spread is not None else ()


#: A scheduler configuration file is a few lines; anything near this is not one.
CONFIG_LIMITS = replace(LIMITS, file_bytes=1024 * 1024, documents=1)


def _looks_like_a_document(value: str) -> bool:
    return any(mark in value for mark in (":", "{", "\n"))


def load_scheduler_config(value: str) -> SchedulerConfig | None:
    """The configuration in ``value`` (a document, or the name of a file holding one); None
    when empty. Raises :class:`SchedulerConfigError`, naming the file and line when the
    problem is in a file."""
    text = value.strip()
    if not text:
        return None
    if _looks_like_a_document(text):
        try:
            document = parse_yaml(text, "", CONFIG_LIMITS)
        except ManifestError as error:
            raise SchedulerConfigError(f"decoding scheduler config, {error.message}") from None
        return scheduler_config_of(document)
    path = Path(text)
    try:
        document = read_document(path, CONFIG_LIMITS)
    except ManifestError as error:
        if error.message in ("no such file or directory", "not a valid path"):
            raise SchedulerConfigError(f"cannot read {excerpt(value)}: {error.message}") from None
        raise SchedulerConfigError(f"decoding scheduler config, {error}") from None
    return scheduler_config_of(document, str(path))


def scheduler_config_of(document: object, source: str = "") -> SchedulerConfig | None:
    """The configuration a parsed document holds; problems name ``source`` (a file) and the
    line when there is one."""
    if document is None:
        return None

    def at(location: Sequence[object]) -> str:
        line = line_of(document, location) if isinstance(document, dict) else None
        return f"{source}:{line}: " if source and line else (f"{source}: " if source else "")

    if not isinstance(document, dict):
        raise SchedulerConfigError(
            f"decoding scheduler config, {at(())}expected a mapping, got {excerpt(document)}"
        )
    try:
        config = SchedulerConfig.model_validate(document)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SchedulerConfigError(
            f"decoding scheduler config, {at(_camel(first['loc']))}{where}: {first['msg']}"
        ) from None
    for index, constraint in enumerate(config.default_constraints):
        path = f"podTopologySpread.defaultConstraints[{index}]"
        location = ("podTopologySpread", "defaultConstraints", index)
        if constraint.model_extra:
            unknown = sorted(constraint.model_extra)[0]
            raise SchedulerConfigError(
                f"decoding scheduler config, {at((*location, unknown))}{path}.{unknown}: "
                "unknown field"
            )
        problem = _constraint_problem(constraint)
        if problem is not None:
            raise SchedulerConfigError(
                f"validating scheduler config, {at(location)}{path}{problem}"
            )
        for earlier_index, earlier in enumerate(config.default_constraints[:index]):
            if (earlier.topology_key, earlier.when_unsatisfiable) == (
                constraint.topology_key,
                constraint.when_unsatisfiable,
            ):
                raise SchedulerConfigError(
                    f"validating scheduler config, {at(location)}{path} is a duplicate of "
                    f"[{earlier_index}], {{{constraint.topology_key}, "
                    f"{constraint.when_unsatisfiable}}}"
                )
    return config


def _camel(location: Sequence[object]) -> tuple[object, ...]:
    """pydantic's error location as the document's keys (they are camelCase aliases)."""
    return tuple(part for part in location if not isinstance(part, str) or part[:1].islower())


def _constraint_problem(constraint: TopologySpreadConstraint) -> str | None:
    """kube-scheduler's checks of one default constraint, as a suffix of its field path."""
    if constraint.max_skew <= 0:
        return ".maxSkew must be greater than 0"
    if not constraint.topology_key:
        return ".topologyKey must be set"
    problems = qualified_name_problems(constraint.topology_key)
    if problems:
        return (
            f".topologyKey {excerpt(constraint.topology_key)} is not a valid label name, "
            + ", ".join(problems)
        )
    if constraint.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        return (
            f".whenUnsatisfiable {excerpt(constraint.when_unsatisfiable)} must be one of "
            f'"{DO_NOT_SCHEDULE}" or "{SCHEDULE_ANYWAY}"'
        )
    if constraint.label_selector is not None:
        return ".labelSelector must not be set, as selectors are deduced for each pod"
    if constraint.match_label_keys:
        return ".matchLabelKeys must not be set, as it has no effect on default constraints"
    return None
