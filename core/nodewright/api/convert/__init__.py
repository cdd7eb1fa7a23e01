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

This module dispatches each document to its conversion: :mod:`.provisioner` (v1alpha5
Provisioner), :mod:`.nodeclass` (AWSNodeTemplate, v1alpha2 AKSNodeClass), :mod:`.v1beta1`
(NodePool, NodeClaim); :mod:`.shape` refuses old documents of the wrong shape first, and
:mod:`.batch` holds what the conversions of one batch share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.convert.batch import (
    AWS_GROUP,
    AZURE_GROUP,
    CORE_GROUP,
    ConversionBatch,
    ConversionNote,
    document_key,
)
from nodewright.api.convert.nodeclass import aks_node_class_v1alpha2, aws_node_template
from nodewright.api.convert.provisioner import provisioner
from nodewright.api.convert.shape import shape_problems
from nodewright.api.convert.v1beta1 import node_claim_v1beta1, node_pool_v1beta1

_Handler = Callable[[ConversionBatch, Mapping[str, Any]], list[dict[str, Any]]]

_CONVERTERS: dict[tuple[str, str], _Handler] = {
    (f"{CORE_GROUP}/v1alpha5", "Provisioner"): provisioner,
    (f"{AWS_GROUP}/v1alpha1", "AWSNodeTemplate"): aws_node_template,
    (f"{CORE_GROUP}/v1beta1", "NodePool"): node_pool_v1beta1,
    (f"{CORE_GROUP}/v1beta1", "NodeClaim"): node_claim_v1beta1,
    (f"{AZURE_GROUP}/v1alpha2", "AKSNodeClass"): aks_node_class_v1alpha2,
}


@dataclass
class ConversionResult:
    documents: list[dict[str, Any]] = field(default_factory=list)
    #: For each output document, the index of the input document it came from.
    origins: list[int] = field(default_factory=list)
    warnings: list[ConversionNote] = field(default_factory=list)
    errors: list[ConversionNote] = field(default_factory=list)
    #: How many input documents were converted (the rest passed through).
    converted: int = 0


def needs_conversion(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` is one of the retired versions this module converts."""
    key = document_key(document)
    return key is not None and key in _CONVERTERS


def convert_documents(documents: Iterable[Mapping[str, Any]]) -> ConversionResult:
    """Convert every retired document; others pass through as the same objects."""
    inputs = list(documents)
    batch = ConversionBatch(inputs)
    result = ConversionResult()
    for index, document in enumerate(inputs):
        key = document_key(document)
        handler = _CONVERTERS.get(key) if key is not None else None
        if handler is None:
            result.documents.append(document)  # type: ignore[arg-type]
            result.origins.append(index)
            continue
        result.converted += 1
        batch.origin = index
        problems = shape_problems(document)
        if problems:
            batch.errors.extend(ConversionNote(index, p) for p in problems)
            continue
        outputs = handler(batch, document)
        result.documents.extend(outputs)
        result.origins.extend([index] * len(outputs))
    for node_class, origin in batch.pending_node_classes():
        result.documents.append(node_class)
        result.origins.append(origin)
    result.warnings = batch.warnings
    result.errors = batch.errors
    return result


def source_path(
    kind: str, location: Sequence[object], original: Mapping[str, object] | None = None
) -> list[object]:
    """Where a field of a converted document was written in the ``kind`` it came from (the
    document ``original``), so an error in the converted document points at the line the
    user wrote."""
    parts = list(location)
    if kind == "Provisioner" and parts[:1] == ["spec"]:
        rest = parts[1:]
        if rest[:2] in (["template", "spec"], ["template", "metadata"]):
            rest = rest[2:]
            if rest[:1] == ["expireAfter"]:
                return ["spec", "ttlSecondsUntilExpired"]
            if rest[:1] == ["nodeClassRef"]:
                # From spec.providerRef, or made from the inline spec.provider block.
                spec = original.get("spec") if original is not None else None
                if isinstance(spec, Mapping) and "providerRef" not in spec and "provider" in spec:
                    return ["spec", "provider"]
                return ["spec", "providerRef", *rest[1:]]
            return ["spec", *rest]
        if rest[:1] == ["limits"]:
            return ["spec", "limits", "resources", *rest[1:]]
        if rest[:1] == ["disruption"]:
            return ["spec"]
    if kind == "NodePool" and parts == ["spec", "template", "spec", "expireAfter"]:
        return ["spec", "disruption", "expireAfter"]
    return parts
