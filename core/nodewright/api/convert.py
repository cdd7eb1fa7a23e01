"""Converting Karpenter's retired API versions to the current ones, on plain dicts.

Karpenter's upgrade guides move fields between kinds as the API matured:

* ``karpenter.sh/v1alpha5`` Provisioner → ``karpenter.sh/v1`` NodePool, and its inline
  ``provider:`` block or referenced ``karpenter.k8s.aws/v1alpha1`` AWSNodeTemplate →
  ``karpenter.k8s.aws/v1`` EC2NodeClass;
* ``karpenter.sh/v1beta1`` NodePool and NodeClaim → ``karpenter.sh/v1``;
* ``karpenter.azure.com/v1alpha2`` AKSNodeClass → ``karpenter.azure.com/v1beta1``.

Conversion works on a batch of documents because some moves cross objects (a Provisioner's
``kubeletConfiguration`` lands in its EC2NodeClass; a v1beta1 ``nodeClassRef`` without a kind
is resolved against the NodeClasses in the batch). Every field that cannot be carried over is
reported as a :class:`ConversionWarning` naming the object and the field; nothing is dropped
silently. Documents of any other version pass through unchanged (the same object).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.validation import FieldError

CORE_GROUP = "karpenter.sh"
AWS_GROUP = "karpenter.k8s.aws"
AZURE_GROUP = "karpenter.azure.com"

NODEPOOL_V1 = f"{CORE_GROUP}/v1"
EC2NODECLASS_V1 = f"{AWS_GROUP}/v1"
AKSNODECLASS_V1BETA1 = f"{AZURE_GROUP}/v1beta1"

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


#: A field of an old object that has no place in the converted one: named as a validation
#: error names a broken field.
ConversionWarning = FieldError


@dataclass
class ConversionResult:
    documents: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[ConversionWarning] = field(default_factory=list)
    #: How many input documents were converted (the rest passed through).
    converted: int = 0


def needs_conversion(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` is one of the retired versions this module converts."""
    return (document.get("apiVersion"), document.get("kind")) in _CONVERTERS


def convert_documents(documents: Iterable[Mapping[str, Any]]) -> ConversionResult:
    """Convert every retired document; others pass through as the same objects."""
    batch = list(documents)
    converter = _Converter(batch)
    result = ConversionResult()
    for document in batch:
        key = (document.get("apiVersion"), document.get("kind"))
        handler = _CONVERTERS.get(key)
        if handler is None:
            result.documents.append(document)  # type: ignore[arg-type]
            continue
        result.converted += 1
        result.documents.extend(handler(converter, document))
    result.documents.extend(converter.pending_node_classes())
    result.warnings = converter.warnings
    return result


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
        return str(metadata.get("name", ""))
    return ""


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


def _convert_ref_v1beta1(ref: Mapping[str, Any], group: str, kind: str) -> dict[str, str]:
    api_version = str(ref.get("apiVersion", ""))
    return {
        "group": api_version.split("/", 1)[0] if api_version else group,
        "kind": str(ref.get("kind") or kind),
        "name": str(ref.get("name", "")),
    }


class _Converter:
    """Conversion state for one batch: NodeClasses seen, NodeClasses to emit, warnings."""

    def __init__(self, batch: list[Mapping[str, Any]]) -> None:
        self.warnings: list[ConversionWarning] = []
        self._node_class_kinds: set[tuple[str, str]] = set()
        self._templates: dict[str, Mapping[str, Any]] = {}
        for document in batch:
            api_version = str(document.get("apiVersion", ""))
            kind = str(document.get("kind", ""))
            group = api_version.split("/", 1)[0]
            if kind == "AWSNodeTemplate":
                self._node_class_kinds.add((AWS_GROUP, "EC2NodeClass"))
                self._templates[_name(document)] = document
            elif kind.endswith("NodeClass"):
                self._node_class_kinds.add((group, kind))
        #: EC2NodeClasses built from AWSNodeTemplates, by name, emitted after the batch so a
        #: Provisioner's kubelet settings can still be merged into them.
        self._ec2_from_templates: dict[str, dict[str, Any]] = {}

    def warn(self, document: Mapping[str, Any], field_path: str, message: str) -> None:
        self.warnings.append(
            ConversionWarning(str(document.get("kind", "")), _name(document), field_path, message)
        )

    def pending_node_classes(self) -> list[dict[str, Any]]:
        return list(self._ec2_from_templates.values())

    # -- v1alpha5 Provisioner ---------------------------------------------------------------

    def provisioner(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        spec: Mapping[str, Any] = document.get("spec") or {}
        name = _name(document)
        template_spec: dict[str, Any] = {}
        template_metadata: dict[str, Any] = {}
        out: list[dict[str, Any]] = []
        known = {
            "requirements", "labels", "annotations", "taints", "startupTaints",
            "kubeletConfiguration", "limits", "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired",
            "consolidation", "weight", "provider", "providerRef",
        }  # fmt: skip
        for key in sorted(set(spec) - known):
            self.warn(document, f"spec.{key}", "has no equivalent in karpenter.sh/v1 NodePool")

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
                self.warn(document, "spec.providerRef", "ignored: spec.provider is also set")
        elif isinstance(spec.get("providerRef"), Mapping):
            ref_name = str(spec["providerRef"].get("name", ""))
            template_spec["nodeClassRef"] = {
                "group": AWS_GROUP,
                "kind": "EC2NodeClass",
                "name": ref_name,
            }
            node_class = self._ec2_from_templates.get(ref_name)
            if node_class is None and ref_name in self._templates:
                node_class = self.aws_node_template_class(self._templates[ref_name])
        else:
            self.warn(
                document,
                "spec.providerRef",
                "neither provider nor providerRef is set; set spec.template.spec.nodeClassRef",
            )

        if spec.get("kubeletConfiguration"):
            if node_class is not None:
                node_class["spec"]["kubelet"] = copy.deepcopy(spec["kubeletConfiguration"])
            else:
                self.warn(
                    document,
                    "spec.kubeletConfiguration",
                    "moves to the EC2NodeClass's spec.kubelet, which is not in these manifests",
                )

        ttl_expired = spec.get("ttlSecondsUntilExpired")
        if isinstance(ttl_expired, int) and not isinstance(ttl_expired, bool):
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
                    document, "spec.ttlSecondsAfterEmpty", "ignored: consolidation is enabled"
                )
        elif isinstance(ttl_empty, int) and not isinstance(ttl_empty, bool):
            disruption = {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": format_seconds(ttl_empty),
            }
        else:  # neither: v1alpha5 never removed nodes
            disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}

        pool_spec: dict[str, Any] = {}
        template: dict[str, Any] = {}
        if template_metadata:
            template["metadata"] = template_metadata
        template["spec"] = template_spec
        pool_spec["template"] = template
        pool_spec["disruption"] = disruption
        limits = spec.get("limits")
        if isinstance(limits, Mapping) and isinstance(limits.get("resources"), Mapping):
            pool_spec["limits"] = copy.deepcopy(dict(limits["resources"]))
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
        self.aws_node_template_class(document)
        return []  # emitted at the end of the batch, with kubelet settings merged in

    def aws_node_template_class(self, document: Mapping[str, Any]) -> dict[str, Any]:
        name = _name(document)
        existing = self._ec2_from_templates.get(name)
        if existing is not None:
            return existing
        node_class = self._ec2_node_class(
            document, "spec", _metadata(document), document.get("spec") or {}
        )
        self._ec2_from_templates[name] = node_class
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
        ami_terms = _ami_terms(provider.get("amiSelector"))
        family = str(provider.get("amiFamily", "AL2"))
        if not ami_terms:
            alias = _AMI_ALIASES.get(family)
            if alias is not None:
                ami_terms = [{"alias": alias}]
                spec.pop("amiFamily", None)  # the alias names the family
            else:
                self.warn(
                    document, f"{where}.amiSelector", f"amiFamily {family} needs amiSelectorTerms"
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
                    "launch templates are not supported in v1; "
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
        for key in sorted(set(provider) - handled):
            self.warn(
                document, f"{where}.{key}", "has no equivalent in karpenter.k8s.aws/v1 EC2NodeClass"
            )
        return {
            "apiVersion": EC2NODECLASS_V1,
            "kind": "EC2NodeClass",
            "metadata": metadata,
            "spec": spec,
        }

    # -- v1beta1 NodePool / NodeClaim --------------------------------------------------------

    def _default_node_class(
        self, document: Mapping[str, Any], requirements: list[Any]
    ) -> tuple[str, str]:
        """The NodeClass a v1beta1 ``nodeClassRef`` without a kind meant."""
        if len(self._node_class_kinds) == 1:
            return next(iter(self._node_class_kinds))
        keys = " ".join(str(r.get("key", "")) for r in requirements if isinstance(r, Mapping))
        if f"{AZURE_GROUP}/" in keys:
            return AZURE_GROUP, "AKSNodeClass"
        return AWS_GROUP, "EC2NodeClass"

    def _convert_template_spec(
        self, document: Mapping[str, Any], where: str, spec: Mapping[str, Any]
    ) -> dict[str, Any]:
        out = copy.deepcopy(dict(spec))
        requirements = list(out.get("requirements") or [])
        ref = out.get("nodeClassRef")
        if isinstance(ref, Mapping):
            if ref.get("kind") and ref.get("apiVersion"):
                group, kind = "", ""
            else:
                group, kind = self._default_node_class(document, requirements)
            out["nodeClassRef"] = _convert_ref_v1beta1(ref, group, kind)
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
            self.warn(document, f"{where}.resources", "removed in v1; it had no effect")
        return out

    def node_pool_v1beta1(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        result = copy.deepcopy(dict(document))
        result["apiVersion"] = NODEPOOL_V1
        result["metadata"] = _metadata(document)
        spec: dict[str, Any] = result.setdefault("spec", {})
        template = spec.setdefault("template", {})
        template_spec = self._convert_template_spec(
            document, "spec.template.spec", template.get("spec") or {}
        )
        disruption: dict[str, Any] = spec.setdefault("disruption", {})
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
        result["spec"] = self._convert_template_spec(document, "spec", document.get("spec") or {})
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
        if key == "aws-ids":
            terms.extend({"id": part.strip()} for part in str(value).split(",") if part.strip())
        elif key == "aws::name":
            term["name"] = str(value)
        elif key == "aws::owners":
            term["owner"] = str(value)
        elif key == "aws::ids":
            terms.extend({"id": part.strip()} for part in str(value).split(",") if part.strip())
        else:
            tags[str(key)] = str(value)
    if tags:
        term["tags"] = tags
    if term:
        terms.insert(0, term)
    return terms


_CONVERTERS: dict[tuple[Any, Any], Any] = {
    (f"{CORE_GROUP}/v1alpha5", "Provisioner"): _Converter.provisioner,
    (f"{AWS_GROUP}/v1alpha1", "AWSNodeTemplate"): _Converter.aws_node_template,
    (f"{CORE_GROUP}/v1beta1", "NodePool"): _Converter.node_pool_v1beta1,
    (f"{CORE_GROUP}/v1beta1", "NodeClaim"): _Converter.node_claim_v1beta1,
    (f"{AZURE_GROUP}/v1alpha2", "AKSNodeClass"): _Converter.aks_node_class_v1alpha2,
}
