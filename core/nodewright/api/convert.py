"""Converting Karpenter's retired API versions to the current ones, on plain dicts.

Karpenter's upgrade guides move fields between kinds as the API matured:

* ``karpenter.sh/v1alpha5`` Provisioner → ``karpenter.sh/v1`` NodePool, and its inline
  ``provider:`` block or referenced ``karpenter.k8s.aws/v1alpha1`` AWSNodeTemplate →
  ``karpenter.k8s.aws/v1`` EC2NodeClass;
* ``karpenter.sh/v1beta1`` NodePool and NodeClaim → ``karpenter.sh/v1``;
* ``karpenter.azure.com/v1alpha2`` AKSNodeClass → ``karpenter.azure.com/v1beta1``.

Conversion works on a batch of documents because some moves cross objects (a Provisioner's
``kubeletConfiguration`` lands in its EC2NodeClass; a v1beta1 ``nodeClassRef`` without a kind
is resolved against the NodeClasses in the batch). Nothing changes silently: every field that
is dropped, or whose value is inferred, is a warning naming the object and the field; a
document that cannot be converted faithfully (an old object of the wrong shape, a
``nodeClassRef`` nothing tells the kind of) is an error, and produces no output. Documents of
any other version pass through unchanged (the same object).

The result is not checked here: the loader (:mod:`nodewright.api.manifests`) reads every
converted document with the current models and rules, as it reads any manifest.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldError

CORE_GROUP = "karpenter.sh"
AWS_GROUP = "karpenter.k8s.aws"
AZURE_GROUP = "karpenter.azure.com"

NODEPOOL_V1 = f"{CORE_GROUP}/v1"
EC2NODECLASS_V1 = f"{AWS_GROUP}/v1"
AKSNODECLASS_V1BETA1 = f"{AZURE_GROUP}/v1beta1"

#: The NodeClass kind of each provider group Karpenter's v1beta1 manifests refer to.
_KNOWN_NODE_CLASSES = {
    AWS_GROUP: "EC2NodeClass",
    AZURE_GROUP: "AKSNodeClass",
    "karpenter.kwok.sh": "KWOKNodeClass",
}

#: Metadata the API server owns: it belongs to the old object, not to the converted one.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
#: Hash annotations Karpenter recomputes for the new version (keeping them would look drifted).
_STALE_ANNOTATIONS = (
    "karpenter.sh/provisioner-hash",
    "karpenter.sh/nodepool-hash",
    "karpenter.sh/nodepool-hash-version",
    "karpenter.k8s.aws/nodeclass-hash",
    "karpenter.k8s.aws/ec2nodeclass-hash",
    "karpenter.k8s.aws/ec2nodeclass-hash-version",
)

#: v1alpha5 AWS ``amiFamily`` → the v1 ``amiSelectorTerms`` alias that picks the same images.
_AMI_ALIASES = {
    "AL2": "al2@latest",
    "AL2023": "al2023@latest",
    "Bottlerocket": "bottlerocket@latest",
    "Windows2019": "windows2019@latest",
    "Windows2022": "windows2022@latest",
}

#: Fields of a v1alpha5 AWS provider (inline block or AWSNodeTemplate spec) copied as they are.
_AWS_SAME_FIELDS = (
    "amiFamily",
    "instanceProfile",
    "userData",
    "tags",
    "metadataOptions",
    "blockDeviceMappings",
    "detailedMonitoring",
    "associatePublicIPAddress",
)

#: Every field of a v1alpha5 ProvisionerSpec; anything else is a typo the old CRD refused.
_PROVISIONER_FIELDS = (
    "requirements", "labels", "annotations", "taints", "startupTaints",
    "kubeletConfiguration", "limits", "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired",
    "consolidation", "weight", "provider", "providerRef",
)  # fmt: skip

#: v1beta1 NodePool fields, and where they are (a typo there is refused, not carried over
#: beside the default conversion adds).
_V1BETA1_POOL_FIELDS = ("template", "disruption", "limits", "weight")
_V1BETA1_DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "expireAfter", "budgets")

#: For each retired kind, mappings whose every field is known (paths in the old document).
_FIELDS: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = {
    "Provisioner": ((("spec",), _PROVISIONER_FIELDS),),
    "NodePool": (
        (("spec",), _V1BETA1_POOL_FIELDS),
        (("spec", "disruption"), _V1BETA1_DISRUPTION_FIELDS),
    ),
}

_TOP_LEVEL_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
_METADATA_FIELDS = (
    "name", "generateName", "namespace", "labels", "annotations", "uid", "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
    "ownerReferences", "finalizers", "managedFields", "selfLink",
)  # fmt: skip


@dataclass(frozen=True)
class ConversionNote:
    """Something about one input document: a field dropped or inferred (a warning), or a
    reason it cannot be converted (an error). ``origin`` is the document's index in the
    batch; ``error.field`` is a path in that document."""

    origin: int
    error: FieldError

    def __str__(self) -> str:
        return str(self.error)


@dataclass
class ConversionResult:
    documents: list[dict[str, Any]] = field(default_factory=list)
    #: For each output document, the index of the input document it came from.
    origins: list[int] = field(default_factory=list)
    warnings: list[ConversionNote] = field(default_factory=list)
    errors: list[ConversionNote] = field(default_factory=list)
    #: How many input documents were converted (the rest passed through).
    converted: int = 0


def _key(document: Mapping[str, Any]) -> tuple[str, str] | None:
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if isinstance(api_version, str) and isinstance(kind, str):
        return api_version, kind
    return None


def needs_conversion(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` is one of the retired versions this module converts."""
    key = _key(document)
    return key is not None and key in _CONVERTERS


def convert_documents(documents: Iterable[Mapping[str, Any]]) -> ConversionResult:
    """Convert every retired document; others pass through as the same objects."""
    batch = list(documents)
    converter = _Converter(batch)
    result = ConversionResult()
    for index, document in enumerate(batch):
        key = _key(document)
        handler = _CONVERTERS.get(key) if key is not None else None
        if handler is None:
            result.documents.append(document)  # type: ignore[arg-type]
            result.origins.append(index)
            continue
        result.converted += 1
        converter.origin = index
        problems = _shape_problems(document)
        if problems:
            converter.errors.extend(ConversionNote(index, p) for p in problems)
            continue
        outputs = handler(converter, document)
        result.documents.extend(outputs)
        result.origins.extend([index] * len(outputs))
    for node_class, origin in converter.pending_node_classes():
        result.documents.append(node_class)
        result.origins.append(origin)
    result.warnings = converter.warnings
    result.errors = converter.errors
    return result


def source_path(kind: str, location: Sequence[object]) -> list[object]:
    """Where a field of a converted document was written in the ``kind`` it came from, so
    an error in the converted document points at the line the user wrote."""
    parts = list(location)
    if kind == "Provisioner" and parts[:1] == ["spec"]:
        rest = parts[1:]
        if rest[:2] in (["template", "spec"], ["template", "metadata"]):
            rest = rest[2:]
            if rest[:1] == ["expireAfter"]:
                return ["spec", "ttlSecondsUntilExpired"]
            return ["spec", *rest]
        if rest[:1] == ["limits"]:
            return ["spec", "limits", "resources", *rest[1:]]
        if rest[:1] == ["disruption"]:
            return ["spec"]
    if kind == "NodePool" and parts == ["spec", "template", "spec", "expireAfter"]:
        return ["spec", "disruption", "expireAfter"]
    return parts


# --- helpers -----------------------------------------------------------------------------------


def format_seconds(seconds: int) -> str:
    """Seconds as a Karpenter duration string: ``30s``, ``5m``, ``720h``, ``1h30m``."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return "".join(parts)


def _name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("name")
        return name if isinstance(name, str) else ""
    return ""


def _kind(document: Mapping[str, Any]) -> str:
    kind = document.get("kind")
    return kind if isinstance(kind, str) else ""


def _is_whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _metadata(document: Mapping[str, Any]) -> dict[str, Any]:
    metadata = copy.deepcopy(dict(document.get("metadata") or {}))
    for key in _SERVER_METADATA:
        metadata.pop(key, None)
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        for key in _STALE_ANNOTATIONS:
            annotations.pop(key, None)
        if not annotations:
            metadata.pop("annotations")
    return metadata


def _selector_terms(selector: Any, id_key: str) -> list[dict[str, Any]]:
    """A v1alpha5 ``{tag: value}`` selector as v1 selector terms.

    The special key ``aws-ids`` (comma-separated IDs) becomes one ``{id}`` term per ID; every
    other key is a tag, and all tags form one term (they were ANDed).
    """
    if not isinstance(selector, Mapping):
        return []
    terms: list[dict[str, Any]] = []
    tags: dict[str, str] = {}
    for key, value in selector.items():
        if key == "aws-ids":
            terms.extend({id_key: part.strip()} for part in str(value).split(",") if part.strip())
        else:
            tags[str(key)] = str(value)
    if tags:
        terms.insert(0, {"tags": tags})
    return terms


# --- the shape an old document must have to be converted ---------------------------------------

#: For each retired kind, the fields that must be mappings or lists when present (paths in
#: the old document). A value of another type cannot be moved faithfully.
_MAPPINGS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Provisioner": (
        ("spec",), ("spec", "labels"), ("spec", "annotations"), ("spec", "limits"),
        ("spec", "limits", "resources"), ("spec", "provider"), ("spec", "providerRef"),
        ("spec", "consolidation"), ("spec", "kubeletConfiguration"),
    ),
    "AWSNodeTemplate": (("spec",),),
    "NodePool": (
        ("spec",), ("spec", "template"), ("spec", "template", "spec"),
        ("spec", "template", "metadata"), ("spec", "disruption"),
        ("spec", "template", "spec", "nodeClassRef"),
    ),
    "NodeClaim": (("spec",), ("spec", "nodeClassRef")),
    "AKSNodeClass": (("spec",),),
}  # fmt: skip
_LISTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Provisioner": (("spec", "requirements"), ("spec", "taints"), ("spec", "startupTaints")),
    "NodePool": (("spec", "template", "spec", "requirements"),),
    "NodeClaim": (("spec", "requirements"),),
}


def _shape_problems(document: Mapping[str, Any]) -> list[FieldError]:
    kind, name = _kind(document), _name(document)
    problems: list[FieldError] = []

    def add(path: str, message: str) -> None:
        problems.append(FieldError(kind, name, path, message))

    for key in document:
        if key not in _TOP_LEVEL_FIELDS:
            if key in _METADATA_FIELDS:
                add(str(key), f"unknown field {key!r} at the top level; indent it under metadata")
            else:
                add(_field_name(key), _unknown_message(key, _TOP_LEVEL_FIELDS))
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        add("metadata", f"must be a mapping with a name, got {excerpt(metadata)}")
    elif not isinstance(metadata.get("name"), str) or not metadata.get("name"):
        add("metadata.name", f"must be a non-empty string, got {excerpt(metadata.get('name'))}")
    for path in _MAPPINGS.get(kind, ()):
        value = _get(document, path)
        if value is not None and not isinstance(value, Mapping):
            add(".".join(path), f"must be a mapping, got {excerpt(value)}")
    for path in _LISTS.get(kind, ()):
        value = _get(document, path)
        if value is not None and not isinstance(value, list):
            add(".".join(path), f"must be a list, got {excerpt(value)}")
    spec = document.get("spec")
    for path, known in _FIELDS.get(kind, ()):
        value = _get(document, path)
        if isinstance(value, Mapping):
            for key in value:
                if key not in known:
                    add(f"{'.'.join(path)}.{_field_name(key)}", _unknown_message(key, known))
    if kind == "Provisioner" and isinstance(spec, Mapping):
        for key, what in (
            ("ttlSecondsAfterEmpty", "a whole number of seconds"),
            ("ttlSecondsUntilExpired", "a whole number of seconds"),
            ("weight", "a whole number"),
        ):
            value = spec.get(key)
            if value is not None and not (_is_whole_number(value) and value >= 0):
                add(f"spec.{key}", f"must be {what}, got {excerpt(value)}")
        consolidation = spec.get("consolidation")
        if isinstance(consolidation, Mapping):
            enabled = consolidation.get("enabled")
            if enabled is not None and not isinstance(enabled, bool):
                add("spec.consolidation.enabled", f"must be true or false, got {excerpt(enabled)}")
    return problems


def _field_name(key: object) -> str:
    """A key as a field path part: itself when a short string, else an excerpt."""
    return key if isinstance(key, str) and len(key) <= 80 else excerpt(key)


def _unknown_message(key: object, known: Sequence[str]) -> str:
    message = f"unknown field {excerpt(key)} in this version"
    close = difflib.get_close_matches(str(key)[:100], known, n=1, cutoff=0.6)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def _get(document: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = document
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# --- conversion --------------------------------------------------------------------------------


class _Converter:
    """Conversion state for one batch: NodeClasses seen, NodeClasses to emit, notes."""

    def __init__(self, batch: list[Mapping[str, Any]]) -> None:
        self.warnings: list[ConversionNote] = []
        self.errors: list[ConversionNote] = []
        #: Index of the document being converted, for notes.
        self.origin = 0
        #: NodeClass kinds (group, kind) in the batch, converted or current.
        self._node_class_kinds: set[tuple[str, str]] = set()
        self._templates: dict[str, tuple[int, Mapping[str, Any]]] = {}
        for index, document in enumerate(batch):
            key = _key(document)
            if key is None:
                continue
            api_version, kind = key
            group = api_version.split("/", 1)[0]
            if kind == "AWSNodeTemplate":
                self._node_class_kinds.add((AWS_GROUP, "EC2NodeClass"))
                self._templates[_name(document)] = (index, document)
            elif kind.endswith("NodeClass"):
                self._node_class_kinds.add((group, kind))
        #: EC2NodeClasses built from AWSNodeTemplates, by name, emitted after the batch so a
        #: Provisioner's kubelet settings can still be merged into them.
        self._ec2_from_templates: dict[str, tuple[dict[str, Any], int]] = {}

    def warn(self, document: Mapping[str, Any], field_path: str, message: str) -> None:
        self.warnings.append(
            ConversionNote(
                self.origin, FieldError(_kind(document), _name(document), field_path, message)
            )
        )

    def refuse(self, document: Mapping[str, Any], field_path: str, message: str) -> None:
        self.errors.append(
            ConversionNote(
                self.origin, FieldError(_kind(document), _name(document), field_path, message)
            )
        )

    def pending_node_classes(self) -> list[tuple[dict[str, Any], int]]:
        return list(self._ec2_from_templates.values())

    # -- v1alpha5 Provisioner ---------------------------------------------------------------

    def provisioner(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        spec: Mapping[str, Any] = document.get("spec") or {}
        name = _name(document)
        template_spec: dict[str, Any] = {}
        template_metadata: dict[str, Any] = {}
        out: list[dict[str, Any]] = []

        for key in ("labels", "annotations"):
            if spec.get(key):
                template_metadata[key] = copy.deepcopy(spec[key])
        requirements = copy.deepcopy(list(spec.get("requirements") or []))
        for index, requirement in enumerate(requirements):
            if (
                isinstance(requirement, dict)
                and requirement.get("key") == "karpenter.sh/provisioner-name"
            ):
                requirement["key"] = "karpenter.sh/nodepool"
                self.warn(
                    document,
                    f"spec.requirements[{index}].key",
                    "karpenter.sh/provisioner-name renamed to karpenter.sh/nodepool",
                )
        template_spec["requirements"] = requirements
        for key in ("taints", "startupTaints"):
            if spec.get(key):
                template_spec[key] = copy.deepcopy(spec[key])

        node_class: dict[str, Any] | None = None
        if spec.get("provider") is not None:
            node_class = self._ec2_node_class(
                document, "spec.provider", {"name": name}, spec["provider"]
            )
            out.append(node_class)
            template_spec["nodeClassRef"] = {
                "group": AWS_GROUP,
                "kind": "EC2NodeClass",
                "name": name,
            }
            if spec.get("providerRef") is not None:
                self.warn(document, "spec.providerRef", "dropped: spec.provider is also set")
        elif isinstance(spec.get("providerRef"), Mapping):
            ref_name = spec["providerRef"].get("name")
            if not isinstance(ref_name, str) or not ref_name:
                self.refuse(
                    document,
                    "spec.providerRef.name",
                    f"must name an AWSNodeTemplate, got {excerpt(ref_name)}",
                )
                return []
            template_spec["nodeClassRef"] = {
                "group": AWS_GROUP,
                "kind": "EC2NodeClass",
                "name": ref_name,
            }
            pending = self._ec2_from_templates.get(ref_name)
            node_class = pending[0] if pending is not None else None
            if node_class is None and ref_name in self._templates:
                origin, template = self._templates[ref_name]
                if not _shape_problems(template):  # else refused when its turn comes
                    node_class = self.aws_node_template_class(template, origin)
        else:
            self.refuse(
                document,
                "spec.providerRef",
                "neither provider nor providerRef is set, so nothing says which node class "
                "the NodePool uses; set one (or write the NodePool's nodeClassRef yourself)",
            )
            return []

        if spec.get("kubeletConfiguration"):
            if node_class is not None:
                node_class["spec"]["kubelet"] = copy.deepcopy(spec["kubeletConfiguration"])
            else:
                self.warn(
                    document,
                    "spec.kubeletConfiguration",
                    "dropped: it moves to the EC2NodeClass's spec.kubelet, which is not in "
                    "these manifests",
                )

        ttl_expired = spec.get("ttlSecondsUntilExpired")
        if ttl_expired is not None:
            template_spec["expireAfter"] = format_seconds(ttl_expired)
        else:
            template_spec["expireAfter"] = "Never"  # v1alpha5 nodes never expired by default

        disruption: dict[str, Any]
        consolidation = spec.get("consolidation")
        consolidation_enabled = isinstance(consolidation, Mapping) and bool(
            consolidation.get("enabled")
        )
        ttl_empty = spec.get("ttlSecondsAfterEmpty")
        if consolidation_enabled:
            disruption = {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
            }
            if ttl_empty is not None:
                self.warn(
                    document, "spec.ttlSecondsAfterEmpty", "dropped: consolidation is enabled"
                )
        elif ttl_empty is not None:
            disruption = {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": format_seconds(ttl_empty),
            }
        else:  # neither: v1alpha5 never removed nodes
            disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}

        pool_spec: dict[str, Any] = {}
        pool_template: dict[str, Any] = {}
        if template_metadata:
            pool_template["metadata"] = template_metadata
        pool_template["spec"] = template_spec
        pool_spec["template"] = pool_template
        pool_spec["disruption"] = disruption
        limits = spec.get("limits")
        if isinstance(limits, Mapping):
            if isinstance(limits.get("resources"), Mapping):
                pool_spec["limits"] = copy.deepcopy(dict(limits["resources"]))
            for key in sorted(set(limits) - {"resources"}, key=str):
                self.warn(
                    document,
                    f"spec.limits.{_field_name(key)}",
                    "dropped: v1alpha5 limits hold only resources",
                )
        if spec.get("weight") is not None:
            pool_spec["weight"] = spec["weight"]
        pool = {
            "apiVersion": NODEPOOL_V1,
            "kind": "NodePool",
            "metadata": _metadata(document),
            "spec": pool_spec,
        }
        return [pool, *out]

    # -- AWS ----------------------------------------------------------------------------------

    def aws_node_template(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.aws_node_template_class(document, self.origin)
        return []  # emitted at the end of the batch, with kubelet settings merged in

    def aws_node_template_class(self, document: Mapping[str, Any], origin: int) -> dict[str, Any]:
        name = _name(document)
        existing = self._ec2_from_templates.get(name)
        if existing is not None:
            return existing[0]
        current = self.origin
        self.origin = origin  # notes about the template name the template's own document
        node_class = self._ec2_node_class(
            document, "spec", _metadata(document), document.get("spec") or {}
        )
        self.origin = current
        self._ec2_from_templates[name] = (node_class, origin)
        return node_class

    def _ec2_node_class(
        self,
        document: Mapping[str, Any],
        where: str,
        metadata: dict[str, Any],
        provider: Mapping[str, Any],
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        for key in _AWS_SAME_FIELDS:
            if key in provider:
                spec[key] = copy.deepcopy(provider[key])
        spec["subnetSelectorTerms"] = _selector_terms(provider.get("subnetSelector"), "id")
        spec["securityGroupSelectorTerms"] = _selector_terms(
            provider.get("securityGroupSelector"), "id"
        )
        for key in ("subnetSelector", "securityGroupSelector"):
            if not provider.get(key):
                self.warn(document, f"{where}.{key}", f"is missing; EC2NodeClass needs {key}Terms")
            elif not isinstance(provider.get(key), Mapping):
                self.refuse(
                    document,
                    f"{where}.{key}",
                    f"must be a mapping of tags, got {excerpt(provider.get(key))}",
                )
        ami_terms = _ami_terms(provider.get("amiSelector"))
        family = str(provider.get("amiFamily", "AL2"))
        if not ami_terms:
            alias = _AMI_ALIASES.get(family)
            if alias is not None:
                ami_terms = [{"alias": alias}]
                spec.pop("amiFamily", None)  # the alias names the family
            else:
                self.warn(
                    document,
                    f"{where}.amiSelector",
                    f"amiFamily {excerpt(family)} needs amiSelectorTerms",
                )
        elif "amiFamily" not in spec:
            spec["amiFamily"] = family
        spec["amiSelectorTerms"] = ami_terms
        if "instanceProfile" not in spec:
            self.warn(
                document,
                f"{where}.instanceProfile",
                "is missing (it came from the controller's settings); set spec.role or "
                "spec.instanceProfile on the EC2NodeClass",
            )
        for key in ("launchTemplate", "launchTemplateName"):
            if key in provider:
                self.warn(
                    document,
                    f"{where}.{key}",
                    "dropped: launch templates are not supported in v1; "
                    "move its settings into the EC2NodeClass",
                )
        handled = {
            *_AWS_SAME_FIELDS,
            "subnetSelector",
            "securityGroupSelector",
            "amiSelector",
            "launchTemplate",
            "launchTemplateName",
        }
        for key in sorted(set(provider) - handled, key=str):
            self.warn(
                document,
                f"{where}.{_field_name(key)}",
                "dropped: has no equivalent in karpenter.k8s.aws/v1 EC2NodeClass",
            )
        return {
            "apiVersion": EC2NODECLASS_V1,
            "kind": "EC2NodeClass",
            "metadata": metadata,
            "spec": spec,
        }

    # -- v1beta1 NodePool / NodeClaim --------------------------------------------------------

    def _node_class_ref(
        self,
        document: Mapping[str, Any],
        where: str,
        ref: Mapping[str, Any],
        requirements: list[Any],
    ) -> dict[str, Any] | None:
        """A v1beta1 ``{apiVersion, kind, name}`` reference as a v1 ``{group, kind, name}``.

        What the reference leaves out is inferred from the NodeClasses in the batch or from
        the provider labels the requirements use, with a warning; with nothing to infer it
        from, the document cannot be converted.
        """
        for key in sorted(set(ref) - {"apiVersion", "kind", "name"}, key=str):
            self.warn(
                document,
                f"{where}.{_field_name(key)}",
                "dropped: has no equivalent in v1 nodeClassRef",
            )
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        for key, value in (("apiVersion", api_version), ("kind", kind), ("name", name)):
            if value is not None and not isinstance(value, str):
                self.refuse(document, f"{where}.{key}", f"must be a string, got {excerpt(value)}")
                return None
        group = api_version.split("/", 1)[0] if api_version else ""
        if group and kind:
            return {"group": group, "kind": kind, "name": name or ""}
        candidates = sorted(self._node_class_kinds)
        if group:
            of_group = [k for g, k in candidates if g == group] or (
                [_KNOWN_NODE_CLASSES[group]] if group in _KNOWN_NODE_CLASSES else []
            )
            if len(of_group) == 1:
                self.warn(
                    document,
                    f"{where}.kind",
                    f"not set; {of_group[0]} inferred from apiVersion {excerpt(api_version)}",
                )
                return {"group": group, "kind": of_group[0], "name": name or ""}
        elif kind:
            of_kind = {g for g, k in candidates if k == kind} | {
                g for g, k in _KNOWN_NODE_CLASSES.items() if k == kind
            }
            if len(of_kind) == 1:
                (only,) = of_kind
                self.warn(
                    document,
                    f"{where}.apiVersion",
                    f"not set; group {only} inferred from kind {excerpt(kind)}",
                )
                return {"group": only, "kind": kind, "name": name or ""}
        else:
            if len(candidates) == 1:
                ((only_group, only_kind),) = candidates
                self.warn(
                    document,
                    f"{where}.kind",
                    f"not set; {only_kind} ({only_group}) inferred from the only NodeClass kind "
                    "in these manifests",
                )
                return {"group": only_group, "kind": only_kind, "name": name or ""}
            keys = " ".join(str(r.get("key", "")) for r in requirements if isinstance(r, Mapping))
            hinted = [(g, k) for g, k in _KNOWN_NODE_CLASSES.items() if f"{g}/" in keys]
            if len(hinted) == 1:
                ((hint_group, hint_kind),) = hinted
                self.warn(
                    document,
                    f"{where}.kind",
                    f"not set; {hint_kind} ({hint_group}) inferred from the {hint_group} "
                    "labels in the requirements",
                )
                return {"group": hint_group, "kind": hint_kind, "name": name or ""}
        self.refuse(
            document,
            where,
            "does not say which NodeClass it names (no apiVersion and kind) and nothing in "
            "these manifests tells; add apiVersion and kind (e.g. karpenter.k8s.aws/v1beta1 "
            "EC2NodeClass), or convert it together with its NodeClass",
        )
        return None

    def _convert_template_spec(
        self, document: Mapping[str, Any], where: str, spec: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        out = copy.deepcopy(dict(spec))
        requirements = list(out.get("requirements") or [])
        ref = out.get("nodeClassRef")
        if isinstance(ref, Mapping):
            converted = self._node_class_ref(document, f"{where}.nodeClassRef", ref, requirements)
            if converted is None:
                return None
            out["nodeClassRef"] = converted
        if "kubelet" in out:
            out.pop("kubelet")
            self.warn(
                document,
                f"{where}.kubelet",
                "moved to the NodeClass in v1 "
                "(EC2NodeClass/AKSNodeClass spec.kubelet); set it there",
            )
        if "resources" in out and where.endswith("template.spec"):
            out.pop("resources")
            self.warn(document, f"{where}.resources", "dropped: removed in v1; it had no effect")
        return out

    def node_pool_v1beta1(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        result = copy.deepcopy(dict(document))
        result["apiVersion"] = NODEPOOL_V1
        result["metadata"] = _metadata(document)
        spec: dict[str, Any] = result.setdefault("spec", None) or {}
        result["spec"] = spec
        template = spec.get("template") or {}
        spec["template"] = template
        template_spec = self._convert_template_spec(
            document, "spec.template.spec", template.get("spec") or {}
        )
        if template_spec is None:
            return []
        disruption: dict[str, Any] = spec.get("disruption") or {}
        spec["disruption"] = disruption
        if "expireAfter" in disruption:
            template_spec["expireAfter"] = disruption.pop("expireAfter")
        else:
            template_spec.setdefault("expireAfter", "720h")
        template["spec"] = template_spec
        policy = disruption.get("consolidationPolicy", "WhenUnderutilized")
        if policy == "WhenUnderutilized":
            disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
        disruption.setdefault("consolidateAfter", "0s")
        return [result]

    def node_claim_v1beta1(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        result = copy.deepcopy(dict(document))
        result["apiVersion"] = NODEPOOL_V1
        result["metadata"] = _metadata(document)
        spec = self._convert_template_spec(document, "spec", document.get("spec") or {})
        if spec is None:
            return []
        result["spec"] = spec
        return [result]

    # -- Azure ---------------------------------------------------------------------------------

    def aks_node_class_v1alpha2(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        result = copy.deepcopy(dict(document))
        result["apiVersion"] = AKSNODECLASS_V1BETA1
        result["metadata"] = _metadata(document)
        return [result]


def _ami_terms(selector: Any) -> list[dict[str, Any]]:
    if not isinstance(selector, Mapping):
        return []
    terms: list[dict[str, Any]] = []
    term: dict[str, Any] = {}
    tags: dict[str, str] = {}
    for key, value in selector.items():
        if key in ("aws-ids", "aws::ids"):
            terms.extend({"id": part.strip()} for part in str(value).split(",") if part.strip())
        elif key == "aws::name":
            term["name"] = str(value)
        elif key == "aws::owners":
            term["owner"] = str(value)
        else:
            tags[str(key)] = str(value)
    if tags:
        term["tags"] = tags
    if term:
        terms.insert(0, term)
    return terms


_Handler = Callable[[_Converter, Mapping[str, Any]], list[dict[str, Any]]]

_CONVERTERS: dict[tuple[str, str], _Handler] = {
    (f"{CORE_GROUP}/v1alpha5", "Provisioner"): _Converter.provisioner,
    (f"{AWS_GROUP}/v1alpha1", "AWSNodeTemplate"): _Converter.aws_node_template,
    (f"{CORE_GROUP}/v1beta1", "NodePool"): _Converter.node_pool_v1beta1,
    (f"{CORE_GROUP}/v1beta1", "NodeClaim"): _Converter.node_claim_v1beta1,
    (f"{AZURE_GROUP}/v1alpha2", "AKSNodeClass"): _Converter.aks_node_class_v1alpha2,
}
