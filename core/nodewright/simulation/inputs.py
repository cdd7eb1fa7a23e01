"""What a simulation is given: manifests loaded with the installed providers' kinds, checked
with Karpenter's rules and against each other, before anything runs.

``simulate``'s PATHs and a scenario's ``apply`` steps load through :func:`load_checked`, so both
report the same problems the same way: one line each, naming the file, object and field.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nodewright.api.capacitybuffer import CapacityBuffer, validate_capacity_buffer
from nodewright.api.fielderror import FieldError
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.manifests.documents import at_line, line_of
from nodewright.api.manifests.errors import ManifestError, UnknownKindError
from nodewright.api.manifests.files import manifest_files
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import ExtraRules, LoadResult, Manifest, load_manifests
from nodewright.api.meta import KubeObject
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.validation import (
    validate_node_claim,
    validate_node_overlay,
    validate_node_pool,
)
from nodewright.controllers.options import Options
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.simulation.limits import Limits, asked_pods

#: Says what a file that did not load as manifests is instead (a scenario, say), or None.
FileHint = Callable[[Path], str | None]


class InputError(Exception):
    """Problems with what the user gave us; each line names the file, object and field."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def kind_registry(host: PluginHost) -> KindRegistry:
    """The kinds manifests may hold: the core's and every installed provider's NodeClasses."""
    registry = KindRegistry()
    for kind in host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    return registry


def karpenter_rules(host: PluginHost) -> ExtraRules:
    """Karpenter's NodePool, NodeClaim and NodeOverlay rules, with the providers' label domains."""
    domains, well_known = host.restricted_label_domains(), host.well_known_labels()

    def rules(obj: KubeObject) -> Sequence[FieldError]:
        if isinstance(obj, NodePool):
            return validate_node_pool(obj, restricted_domains=domains, well_known_labels=well_known)
        if isinstance(obj, NodeClaim):
            return validate_node_claim(
                obj, restricted_domains=domains, well_known_labels=well_known
            )
        if isinstance(obj, CapacityBuffer):
            return validate_capacity_buffer(obj)
        if isinstance(obj, NodeOverlay):
            return validate_node_overlay(
                obj, restricted_domains=domains, well_known_labels=well_known
            )
        return ()

    return rules


def load_checked(
    paths: Sequence[Path],
    host: PluginHost,
    existing: Sequence[KubeObject] = (),
    *,
    file_hint: FileHint,
    limits: Limits,
    node_class_refs: dict[str, str] | None = None,
) -> list[KubeObject]:
    """Load, check and convert manifests; warnings are printed, problems raised as
    :class:`InputError`. ``existing`` are objects already in the simulation (a NodePool may
    name a NodeClass applied earlier); ``file_hint`` explains a file that is not manifests;
    the workloads and static NodePools must fit in ``limits``. ``node_class_refs``, when
    given, gets where each NodePool names its NodeClass (:func:`node_class_ref_places`)."""
    result = load_manifests(paths, kind_registry(host), rules=karpenter_rules(host))
    if node_class_refs is not None:
        node_class_refs.update(node_class_ref_places(result.manifests))
    for line in conversion_notices(result.manifests):
        print(f"warning: {line}", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if result.errors:
        raise InputError(_loading_problems(result, paths, host, file_hint))
    problems = _cross_object_problems(result.manifests, host, limits, existing)
    if problems:
        raise InputError(problems)
    return result.objects


#: The field by which a NodePool needs its provider.
NODE_CLASS_REF = "spec.template.spec.nodeClassRef"


def node_class_ref_places(manifests: Sequence[Manifest]) -> dict[str, str]:
    """Per NodePool name, where it names its NodeClass, as a problem with its provider is
    reported: ``file:line: NodePool "name": spec.template.spec.nodeClassRef`` (the line the
    user wrote, in a retired Provisioner too)."""
    return {
        m.obj.name: f'{m.where(NODE_CLASS_REF)}: NodePool "{m.obj.name}": {NODE_CLASS_REF}'
        for m in manifests
        if isinstance(m.obj, NodePool)
    }


def conversion_notices(manifests: Sequence[Manifest]) -> list[str]:
    """One line for each object written in a retired Karpenter version (v1alpha5, v1beta1,
    v1alpha2), read as the current one: where it is and what it became."""
    became: dict[int, list[Manifest]] = {}
    for manifest in manifests:
        if manifest.original is not None:
            became.setdefault(id(manifest.original), []).append(manifest)
    lines = []
    for converted in became.values():
        original = converted[0].original
        assert original is not None
        name = original.get("metadata")
        name = name.get("name") if isinstance(name, Mapping) else None
        targets = " and ".join(
            f"{m.document.get('apiVersion')} {m.document.get('kind')}" for m in converted
        )
        lines.append(
            f"{at_line(converted[0].source, line_of(original, ['apiVersion']))}: "
            f'{original.get("kind")} "{name}": {original.get("apiVersion")} is retired; '
            f"read as {targets} (nodewright convert writes it so)"
        )
    return lines


def warn_static_without_gate(objects: Sequence[KubeObject], options: Options) -> None:
    """Say so when static NodePools will launch nothing because the gate is off."""
    if options.static_capacity:
        return
    for obj in objects:
        if isinstance(obj, NodePool) and obj.spec.replicas is not None:
            print(
                f'warning: NodePool "{obj.name}" is static (spec.replicas) but the '
                "StaticCapacity feature gate is off, so it launches no nodes; "
                "pass --feature-gates StaticCapacity=true",
                file=sys.stderr,
            )


def _loading_problems(
    result: LoadResult, paths: Sequence[Path], host: PluginHost, file_hint: FileHint
) -> list[str]:
    """The load's errors as lines for the user: a NodeClass kind nobody serves is explained
    as a provider to install, and a file ``file_hint`` recognises (a scenario) as what it is."""
    hints: dict[str, str] = {}
    files, _ = manifest_files(paths)
    for file in files:
        name = str(file)
        if any(_in_file(error, name) for error in result.errors):
            hint = file_hint(file)
            if hint:
                hints[name] = hint
    lines: list[str] = []
    for error in result.errors:
        hinted = next((f for f in hints if _in_file(error, f)), None)
        if hinted is not None:
            if hints[hinted] not in lines:
                lines.append(hints[hinted])
            continue
        if isinstance(error, UnknownKindError) and error.kind.endswith("NodeClass"):
            group = error.api_version.split("/", 1)[0] if "/" in error.api_version else ""
            try:
                host.provider_for(group, error.kind)
            except UnknownNodeClassError as missing:
                lines.append(f"{error.source}: {error.kind}: {missing}")
                continue
            except PluginError as broken:
                lines.append(
                    f"{error.source}: {error.kind}: the provider for it failed to load: {broken}"
                )
                continue
        lines.append(str(error))
    return lines


def _in_file(error: ManifestError, file: str) -> bool:
    return error.source == file or error.source.startswith((f"{file}:", f"{file} "))


def _cross_object_problems(
    manifests: Sequence[Manifest],
    host: PluginHost,
    limits: Limits,
    existing: Sequence[KubeObject] = (),
) -> list[str]:
    """Problems between objects: a NodePool's NodeClass must be served and present (given
    here or applied by an earlier step), and the workloads must fit in a simulation."""
    problems: list[str] = []
    objects = [m.obj for m in manifests if m.obj is not None]
    node_classes = {(o.api_version.split("/", 1)[0], o.kind, o.name) for o in [*existing, *objects]}
    static_nodes = 0
    for manifest in manifests:
        obj = manifest.obj
        if not isinstance(obj, NodePool):
            continue
        static_nodes += obj.spec.replicas or 0
        ref = obj.spec.template.spec.node_class_ref
        path = NODE_CLASS_REF
        where = f'{manifest.where(path)}: NodePool "{obj.name}"'
        try:
            host.provider_for(ref.group, ref.kind)
        except (UnknownNodeClassError, PluginError) as error:
            problems.append(f"{where}: {path}: {error}")
            continue
        if (ref.group, ref.kind, ref.name) not in node_classes:
            problems.append(
                f'{manifest.where(f"{path}.name")}: NodePool "{obj.name}": {path}.name: '
                f'{ref.kind} "{ref.name}" is neither in the given manifests nor applied earlier'
            )
    too_many = asked_pods(objects).problem(limits)
    if too_many is not None:
        problems.append(f"{', '.join(sorted({m.source for m in manifests}))}: {too_many}")
    too_many_nodes = limits.static_nodes_problem(static_nodes)
    if too_many_nodes is not None:
        problems.append(f"{', '.join(sorted({m.source for m in manifests}))}: {too_many_nodes}")
    return problems
