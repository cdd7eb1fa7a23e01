"""What converting one batch of documents shares: the API groups and versions, the notes
(warnings and errors) about each input document, the NodeClasses the batch holds or will
emit, and the helpers every conversion uses on plain dicts."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldError

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


@dataclass(frozen=True)
class ConversionNote:
    """Something about one input document: a field dropped or inferred (a warning), or a
    reason it cannot be converted (an error). ``origin`` is the document's index in the
    batch; ``error.field`` is a path in that document."""

    origin: int
    error: FieldError

    def __str__(self) -> str:
        return str(self.error)


def document_key(document: Mapping[str, Any]) -> tuple[str, str] | None:
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if isinstance(api_version, str) and isinstance(kind, str):
        return api_version, kind
    return None


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


def document_name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("name")
        return name if isinstance(name, str) else ""
    return ""


def document_kind(document: Mapping[str, Any]) -> str:
    kind = document.get("kind")
    return kind if isinstance(kind, str) else ""


def _is_whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def converted_metadata(document: Mapping[str, Any]) -> dict[str, Any]:
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


def field_name(key: object) -> str:
    """A key as a field path part: itself when a short string, else an excerpt."""
    return key if isinstance(key, str) and len(key) <= 80 else excerpt(key)


class ConversionBatch:
    """Conversion state for one batch: NodeClasses seen, NodeClasses to emit, notes."""

    def __init__(self, documents: list[Mapping[str, Any]]) -> None:
        self.warnings: list[ConversionNote] = []
        self.errors: list[ConversionNote] = []
        #: Index of the document being converted, for notes.
        self.origin = 0
        #: NodeClass kinds (group, kind) in the batch, converted or current.
        self.node_class_kinds: set[tuple[str, str]] = set()
        self.templates: dict[str, tuple[int, Mapping[str, Any]]] = {}
        for index, document in enumerate(documents):
            key = document_key(document)
            if key is None:
                continue
            api_version, kind = key
            group = api_version.split("/", 1)[0]
            if kind == "AWSNodeTemplate":
                self.node_class_kinds.add((AWS_GROUP, "EC2NodeClass"))
                self.templates[document_name(document)] = (index, document)
            elif kind.endswith("NodeClass"):
                self.node_class_kinds.add((group, kind))
        #: EC2NodeClasses built from AWSNodeTemplates, by name, emitted after the batch so a
        #: Provisioner's kubelet settings can still be merged into them.
        self.ec2_from_templates: dict[str, tuple[dict[str, Any], int]] = {}

    def warn(self, document: Mapping[str, Any], field_path: str, message: str) -> None:
        self.warnings.append(
            ConversionNote(
                self.origin,
                FieldError(document_kind(document), document_name(document), field_path, message),
            )
        )

    def refuse(self, document: Mapping[str, Any], field_path: str, message: str) -> None:
        self.errors.append(
            ConversionNote(
                self.origin,
                FieldError(document_kind(document), document_name(document), field_path, message),
            )
        )

    def pending_node_classes(self) -> list[tuple[dict[str, Any], int]]:
        return list(self.ec2_from_templates.values())
