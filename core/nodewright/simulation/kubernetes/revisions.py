"""Which revision of its workload a pod is: the labels kube-controller-manager writes on the
pods it creates (``pod-template-hash`` through a Deployment's ReplicaSet,
``controller-revision-hash`` for StatefulSets and DaemonSets), and the revisions a cluster
snapshot already had.

The embedded controllers name a template they made themselves by a hash of its own (not the
FNV hash kube-controller-manager computes); a workload adopted from a snapshot keeps the
values the real cluster wrote for as long as its template is the one it was adopted with, so
a pod recreated during the run is labelled as its siblings are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from nodewright.api.apps import DaemonSet, StatefulSet
from nodewright.api.core import PodTemplateSpec
from nodewright.api.meta import KubeObject

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
#: The DaemonSet controller's (deprecated) label of the generation a pod was made from.
POD_TEMPLATE_GENERATION_LABEL = "pod-template-generation"


def template_hash(template: PodTemplateSpec) -> str:
    """A stable name suffix for a pod template: a change to the template changes it."""
    text = json.dumps(template.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def without_hash_label(template: PodTemplateSpec) -> PodTemplateSpec:
    """The template without its ``pod-template-hash`` label (kube's ``EqualIgnoreHash``)."""
    labels = template.metadata.labels
    if POD_TEMPLATE_HASH_LABEL not in labels:
        return template
    kept = {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH_LABEL}
    metadata = template.metadata.model_copy(update={"labels": kept})
    return template.model_copy(update={"metadata": metadata})


class TemplateHashes:
    """Each workload's template hash, computed once per generation of the object."""

    def __init__(self) -> None:
        self._hashes: dict[str, tuple[int | None, str]] = {}

    def of(self, owner: KubeObject, template: PodTemplateSpec) -> str:
        """The hash of ``template``, the template of ``owner`` (its ``pod-template-hash``
        label aside), as of the owner's generation."""
        uid = owner.metadata.uid or ""
        generation = owner.metadata.generation
        known = self._hashes.get(uid)
        if uid and known is not None and known[0] == generation:
            return known[1]
        value = template_hash(without_hash_label(template))
        if uid:
            self._hashes[uid] = (generation, value)
        return value


class Revisions:
    """The revision labels of the pods a StatefulSet or DaemonSet creates."""

    def __init__(self) -> None:
        self.hashes = TemplateHashes()
        #: Workload UID -> (hash of the template it was adopted with, the labels then).
        self._adopted: dict[str, tuple[str, dict[str, str]]] = {}

    def adopt(self, workload: StatefulSet | DaemonSet, labels: Mapping[str, str]) -> None:
        """Keep the revision labels a snapshot's pods of ``workload`` carry, for the pods
        made from the same template."""
        if labels and workload.metadata.uid:
            current = self.hashes.of(workload, workload.spec.template)
            self._adopted[workload.metadata.uid] = (current, dict(labels))

    def labels(self, workload: StatefulSet | DaemonSet) -> dict[str, str]:
        """The labels that say which revision a new pod of ``workload`` is."""
        current = self.hashes.of(workload, workload.spec.template)
        adopted = self._adopted.get(workload.metadata.uid or "")
        if adopted is not None and adopted[0] == current:
            return dict(adopted[1])
        # StatefulSets label pods with the revision's name, DaemonSets with its hash.
        value = f"{workload.name}-{current}" if isinstance(workload, StatefulSet) else current
        return {CONTROLLER_REVISION_HASH_LABEL: value}
