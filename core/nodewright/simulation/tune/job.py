"""What every variant of a tune shares, in a form that travels: the inputs read and checked
once, the space, and which providers to load. A worker (this process or a local worker
process; one on another machine would be the same) needs nothing else: no files, no
environment.

A variant is the baseline (index 0: the inputs as given) or one combination of the space's
values. :func:`vary` sets a variant's values in every object a parameter names, each object
read again through the manifests' checks, so a value the API server would refuse is an input
error before anything runs, named by the space file's line.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.api.manifests.errors import ManifestError, ManifestErrors
from nodewright.api.manifests.loading import parse_object
from nodewright.api.meta import KubeObject
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import InputError, karpenter_rules, kind_registry
from nodewright.simulation.scenario import Scenario
from nodewright.simulation.session import SimulationInputs
from nodewright.simulation.snapshot import Snapshot
from nodewright.simulation.tune.fields import FieldPath, FieldPathError, set_field
from nodewright.simulation.tune.space import Setting, Space, render_value

#: Server-side metadata a NodePool to apply leaves out.
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: At most this many problems are listed when variants do not check.
_MAX_PROBLEMS = 20


@dataclass(frozen=True)
class Variant:
    """One configuration to run: 0 is the baseline, the inputs as given."""

    index: int
    settings: tuple[Setting, ...] = ()

    @property
    def baseline(self) -> bool:
        return self.index == 0

    def describe(self, space: Space) -> list[tuple[str, str]]:
        """(label, value) of each setting, as tables show them."""
        return [(space.parameters[s.parameter].label, render_value(s.value)) for s in self.settings]


@dataclass
class PortableSnapshot:
    """A :class:`Snapshot` whose per-object facts are kept by position, not by ``id()``, so
    they survive pickling."""

    snapshot: Snapshot
    uids: list[str | None]
    revisions: list[dict[str, str] | None]

    @classmethod
    def of(cls, snapshot: Snapshot) -> PortableSnapshot:
        objects = snapshot.objects
        return cls(
            replace(snapshot, uids={}, revisions={}),
            [snapshot.uids.get(id(obj)) for obj in objects],
            [snapshot.revisions.get(id(obj)) for obj in objects],
        )

    def restore(self, objects: list[KubeObject]) -> Snapshot:
        """The snapshot with ``objects`` (the same length, each in its original's place)."""
        uids = {id(obj): uid for obj, uid in zip(objects, self.uids, strict=True) if uid}
        revisions = {
            id(obj): revision
            for obj, revision in zip(objects, self.revisions, strict=True)
            if revision is not None
        }
        base = self.snapshot
        return replace(
            base,
            objects=objects,
            uids=uids,
            revisions=revisions,
            skipped=Counter(base.skipped),
            notes=list(base.notes),
        )


@dataclass
class TuneJob:
    """The inputs of every variant; pickled once, unpickled afresh for each run."""

    space: Space
    #: The inputs without the snapshot (``snapshot`` holds it).
    inputs: SimulationInputs
    snapshot: PortableSnapshot | None
    #: The providers to load (None: every installed one), and those never to load.
    plugins: list[str] | None = None
    blocked: list[str] = field(default_factory=list)

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    def inputs_for(self, variant: Variant, host: PluginHost) -> SimulationInputs:
        """The inputs with the variant's values set (this job's objects are changed: unpickle
        a fresh job for each run)."""
        snapshot = None
        if self.snapshot is not None:
            objects = vary(self.snapshot.snapshot.objects, self.space, variant, host)
            snapshot = self.snapshot.restore(objects)
        steps = tuple(
            replace(step, objects=tuple(vary(list(step.objects), self.space, variant, host)))
            if step.objects is not None
            else step
            for step in self.inputs.scenario.steps
        )
        return replace(
            self.inputs,
            objects=vary(self.inputs.objects, self.space, variant, host),
            scenario=Scenario(steps),
            snapshot=snapshot,
        )

    def starting_objects(self) -> list[KubeObject]:
        """The objects a run starts from: the snapshot's, and the manifests' in the place of
        those they replace."""
        found = list(self.snapshot.snapshot.objects) if self.snapshot is not None else []
        by_key = {
            (type(obj), obj.namespace, obj.name): obj for obj in [*found, *self.inputs.objects]
        }
        return list(by_key.values())

    def all_objects(self) -> list[KubeObject]:
        """Every object of the inputs: the snapshot's, the manifests', the scenario's."""
        found = list(self.snapshot.snapshot.objects) if self.snapshot is not None else []
        found.extend(self.inputs.objects)
        for step in self.inputs.scenario.steps:
            found.extend(step.objects or ())
        return found


def make_job(
    space: Space,
    inputs: SimulationInputs,
    plugins: list[str] | None = None,
    blocked: Sequence[str] = (),
) -> TuneJob:
    snapshot = PortableSnapshot.of(inputs.snapshot) if inputs.snapshot is not None else None
    return TuneJob(space, replace(inputs, snapshot=None), snapshot, plugins, list(blocked))


def targets(space: Space, objects: Sequence[KubeObject]) -> list[str]:
    """Problems: parameters that name no object of the inputs."""
    problems = []
    for parameter in space.parameters:
        if any(_targeted(parameter.kind, parameter.name, obj) for obj in objects):
            continue
        same_kind = sorted({obj.name for obj in objects if obj.kind == parameter.kind})
        what = f'{parameter.kind} "{parameter.name}"' if parameter.name else f"{parameter.kind}"
        there = (
            f"the inputs have {parameter.kind} {', '.join(same_kind)}"
            if same_kind
            else f"the inputs have no {parameter.kind}"
        )
        problems.append(f"{parameter.where}: no {what} to vary; {there}")
    return problems


def check_variants(job: TuneJob, variants: Sequence[Variant], host: PluginHost) -> None:
    """Set every variant's values, as a worker will; :class:`InputError` listing the values
    the API server or Karpenter would refuse, each named by its parameter's line, and the
    variants that would start beyond the run's limits (a varied replica count)."""
    objects = job.all_objects()
    starting = job.starting_objects()
    problems: list[str] = []
    for variant in variants:
        try:
            vary(objects, job.space, variant, host)
            beyond = job.inputs.limits.start_problem(vary(starting, job.space, variant, host))
        except InputError as error:
            problems.extend(line for line in error.lines if line not in problems)
            continue
        if beyond is not None:
            values = ", ".join(f"{label}={value}" for label, value in variant.describe(job.space))
            problems.append(f"{job.space.source}: {values}: {beyond}")
        if len(problems) >= _MAX_PROBLEMS:
            problems.append("(more problems not shown)")
            break
    if problems:
        raise InputError(problems)


def vary(
    objects: list[KubeObject], space: Space, variant: Variant, host: PluginHost
) -> list[KubeObject]:
    """``objects`` with the variant's values set in those its parameters name, in place
    (the others are the same objects); :class:`InputError` when a value does not check."""
    if variant.baseline:
        return objects
    registry, rules = kind_registry(host), karpenter_rules(host)
    result = []
    for obj in objects:
        settings = [
            s
            for s in variant.settings
            if _targeted(
                space.parameters[s.parameter].kind, space.parameters[s.parameter].name, obj
            )
        ]
        if not settings:
            result.append(obj)
            continue
        document = obj.to_dict()
        for setting in settings:
            parameter = space.parameters[setting.parameter]
            try:
                set_field(document, parameter.field, setting.value)
            except FieldPathError as error:
                # The error starts with the path as far as it got.
                value = f"{parameter.label}={render_value(setting.value)}"
                raise InputError(
                    [f'{parameter.where}: {value}: {obj.kind} "{obj.name}": {error}']
                ) from None
        try:
            result.append(parse_object(document, registry, "", rules))
        except (ManifestError, ManifestErrors) as error:
            raise InputError(
                [_problem(space, settings, obj, problem) for problem in error.errors]
            ) from None
    return result


def _problem(space: Space, settings: list[Setting], obj: KubeObject, error: ManifestError) -> str:
    """The problem named by the parameter whose field it is in, else by all the settings."""
    named = [
        s for s in settings if error.field.startswith(space.parameters[s.parameter].field.text)
    ] or [
        s
        for s in settings
        if error.field.startswith(space.parameters[s.parameter].field.text.split("[", 1)[0])
    ]
    shown = named[:1] if len(named) == 1 else settings
    where = space.parameters[shown[0].parameter].where if len(shown) == 1 else space.source
    values = ", ".join(
        f"{space.parameters[s.parameter].label}={render_value(s.value)}" for s in shown
    )
    field_text = f"{error.field}: " if error.field else ""
    return f'{where}: {values}: {obj.kind} "{obj.name}": {field_text}{error.message}'


def _targeted(kind: str, name: str, obj: KubeObject) -> bool:
    return obj.kind == kind and (not name or obj.name == name)


def applicable(
    obj: KubeObject, settings: Sequence[tuple[FieldPath, object]] = ()
) -> dict[str, Any]:
    """The object as a manifest to apply: what differs from the API's defaults, the fields
    ``settings`` set written out even when they equal them, no status, no server-side
    metadata."""
    document = obj.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    document["apiVersion"], document["kind"] = obj.api_version, obj.kind
    for path, value in settings:
        set_field(document, path, value)
    document.pop("status", None)
    metadata = document.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        metadata.pop(key, None)
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(_LAST_APPLIED, None)
        if not annotations:
            metadata.pop("annotations", None)
    return {"apiVersion": obj.api_version, "kind": obj.kind, **document}


def winning_manifests(job: TuneJob, variant: Variant, host: PluginHost) -> list[dict[str, Any]]:
    """The objects the space varies, as the variant sets them, each once (as last given), as
    manifests to apply."""
    objects = job.all_objects()
    varied = vary(objects, job.space, variant, host)
    found: dict[tuple[str, str, str], KubeObject] = {}
    for obj in varied:
        if any(_targeted(p.kind, p.name, obj) for p in job.space.parameters):
            found[(obj.kind, obj.namespace, obj.name)] = obj
    manifests = []
    for obj in found.values():
        settings = [
            (job.space.parameters[s.parameter].field, s.value)
            for s in variant.settings
            if _targeted(
                job.space.parameters[s.parameter].kind, job.space.parameters[s.parameter].name, obj
            )
        ]
        manifests.append(applicable(obj, settings))
    return manifests
