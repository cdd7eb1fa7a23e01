"""The chart's RBAC: enough for every request nodewright makes, per enabled provider, and no
broader than Karpenter's chart for the same providers, except where nodewright does a job
Karpenter leaves to others (listed in EXCEPTIONS, each with its reason)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
    VolumeAttachment,
)
from nodewright.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import KubeObject
from tests.charts.helm import REQUIRED, merge, render

RELEASE_NAMESPACE = "kube-system"
NODE_LEASES = "kube-node-lease"
CLUSTER = ""  # scope of ClusterRole grants


@dataclass(frozen=True)
class Grant:
    """One verb on one resource, cluster-wide or in a namespace, maybe for named objects."""

    scope: str
    group: str
    resource: str
    verb: str
    named: bool = False


def expand(rules: Iterable[Mapping[str, Any]], scope: str) -> Iterator[Grant]:
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    yield Grant(scope, group, resource, verb, bool(rule.get("resourceNames")))


def grants(objects: list[dict[str, Any]]) -> set[Grant]:
    """What the chart's ServiceAccount may do, through every role bound to it."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
    }
    found: set[Grant] = set()
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        namespace = binding["metadata"].get("namespace", "")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], "" if ref["kind"] == "ClusterRole" else namespace, ref["name"])]
        found |= set(expand(role["rules"], namespace or CLUSTER))
    return found


def _rules(*rules: tuple[list[str], list[str], list[str]]) -> list[dict[str, Any]]:
    return [{"apiGroups": g, "resources": r, "verbs": v} for g, r, v in rules]


#: Karpenter's chart (aws/karpenter-provider-aws charts/karpenter, templates/clusterrole-core.yaml
#: and role.yaml), the rules of its controller's ServiceAccount; ``services`` as current
#: Karpenter reads them for default topology spreads (kubernetes-sigs/karpenter kwok/charts
#: templates/clusterrole.yaml).
KARPENTER_CORE = _rules(
    (
        ["karpenter.sh"],
        [
            "nodepools",
            "nodepools/status",
            "nodeclaims",
            "nodeclaims/status",
            "nodeoverlays",
            "nodeoverlays/status",
        ],
        ["get", "list", "watch"],
    ),
    (
        ["autoscaling.x-k8s.io"],
        ["capacitybuffers", "capacitybuffers/status"],
        ["get", "list", "watch"],
    ),
    ([""], ["podtemplates"], ["get", "list", "watch"]),
    (
        [""],
        [
            "pods",
            "nodes",
            "persistentvolumes",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "namespaces",
            "services",
        ],
        ["get", "list", "watch"],
    ),
    (
        ["storage.k8s.io"],
        ["storageclasses", "csinodes", "volumeattachments"],
        ["get", "watch", "list"],
    ),
    (
        ["apps"],
        ["daemonsets", "deployments", "replicasets", "statefulsets"],
        ["get", "list", "watch"],
    ),
    (["policy"], ["poddisruptionbudgets"], ["get", "list", "watch"]),
    ([""], ["events"], ["get", "list", "watch"]),
    (
        ["karpenter.sh"],
        ["nodeclaims", "nodeclaims/status"],
        ["create", "delete", "update", "patch"],
    ),
    (
        ["karpenter.sh"],
        ["nodepools", "nodepools/status", "nodeoverlays/status"],
        ["update", "patch"],
    ),
    (["autoscaling.x-k8s.io"], ["capacitybuffers/status"], ["update", "patch"]),
    ([""], ["events"], ["create", "patch"]),
    ([""], ["nodes"], ["patch", "delete", "update"]),
    ([""], ["pods/eviction"], ["create"]),
    ([""], ["pods"], ["delete"]),
)
KARPENTER_LEADER_ELECTION = [
    *_rules((["coordination.k8s.io"], ["leases"], ["get", "watch"])),
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["patch", "update"],
        "resourceNames": ["karpenter-leader-election"],
    },
    *_rules((["coordination.k8s.io"], ["leases"], ["create"])),
]
#: Each provider's own ClusterRole in its Karpenter chart: AWS (charts/karpenter
#: templates/clusterrole.yaml), Azure (Azure/karpenter-provider-azure, the same file) and
#: KWOK (kubernetes-sigs/karpenter kwok/charts, whose core role also creates Nodes).
KARPENTER_PROVIDER = {
    "aws": _rules(
        (["karpenter.k8s.aws"], ["ec2nodeclasses"], ["get", "list", "watch"]),
        (["karpenter.k8s.aws"], ["ec2nodeclasses", "ec2nodeclasses/status"], ["patch", "update"]),
    ),
    "azure": _rules(
        (["karpenter.azure.com"], ["aksnodeclasses"], ["get", "list", "watch"]),
        (["karpenter.azure.com"], ["aksnodeclasses", "aksnodeclasses/status"], ["patch", "update"]),
    ),
    "kwok": _rules(
        (["karpenter.kwok.sh"], ["kwoknodeclasses"], ["get", "list", "watch"]),
        (["karpenter.kwok.sh"], ["kwoknodeclasses", "kwoknodeclasses/status"], ["patch", "update"]),
        ([""], ["nodes"], ["create"]),
    ),
}


def karpenter(providers: Iterable[str]) -> set[Grant]:
    allowed = set(expand(KARPENTER_CORE, CLUSTER))
    allowed |= set(expand(KARPENTER_LEADER_ELECTION, RELEASE_NAMESPACE))
    for provider in providers:
        allowed |= set(expand(KARPENTER_PROVIDER[provider], CLUSTER))
    return allowed


#: What nodewright may do beyond Karpenter's chart, and why.
EXCEPTIONS: dict[str, tuple[set[Grant], str]] = {
    "events.k8s.io": (
        {Grant(CLUSTER, "events.k8s.io", "events", v) for v in ("get", "list", "create", "patch")},
        "nodewright writes its Events through events.k8s.io/v1 (Karpenter writes the same "
        "objects through core/v1, which nodewright falls back to)",
    ),
    "kwok": (
        {
            Grant(CLUSTER, "", r, v)
            for r in ("nodes/status", "pods/status")
            for v in ("update", "patch")
        }
        | {
            Grant(NODE_LEASES, "coordination.k8s.io", "leases", v)
            for v in ("get", "create", "update")
        },
        "the KWOK provider plays kubelet for its Nodes (Karpenter's KWOK provider needs a "
        "separate KWOK controller for that): Node and Pod status, one Lease per Node",
    ),
}


def _covered(grant: Grant, allowed: set[Grant]) -> bool:
    unnamed = Grant(grant.scope, grant.group, grant.resource, grant.verb)
    return unnamed in allowed or (grant.named and grant in allowed)


PROVIDER_SETS = ["kwok", "aws", "azure", "aws,kwok", "aws,azure,kwok"]


@pytest.mark.parametrize("providers", PROVIDER_SETS)
def test_no_broader_than_karpenters_chart(providers: str) -> None:
    enabled = providers.split(",")
    granted = grants(render(merge(REQUIRED, {"providers": {"enabled": providers}})))
    allowed = karpenter(enabled) | EXCEPTIONS["events.k8s.io"][0]
    if "kwok" in enabled:
        allowed |= EXCEPTIONS["kwok"][0]
    broader = sorted(str(g) for g in granted if not _covered(g, allowed))
    assert broader == []


def _needs(models: Iterable[type[KubeObject]], verbs: Iterable[str]) -> set[Grant]:
    needed = set()
    for model in models:
        group = model.API_VERSION.rpartition("/")[0]
        resource = model.KIND.lower() + ("es" if model.KIND.endswith("s") else "s")
        needed |= {Grant(CLUSTER, group, resource, verb) for verb in verbs}
    return needed


#: What the core controllers do (the kinds nodewright run watches, and its writes).
CORE_NEEDS = (
    _needs(
        [
            Pod,
            Node,
            NodeClaim,
            NodePool,
            DaemonSet,
            ReplicaSet,
            StatefulSet,
            Namespace,
            PodDisruptionBudget,
            PersistentVolume,
            PersistentVolumeClaim,
            StorageClass,
            CSINode,
            VolumeAttachment,
            Service,  # default topology spread selectors (SCHEDULER_CONFIG)
            ReplicationController,
        ],
        ["list", "watch"],
    )
    | _needs([NodeClaim], ["create", "update", "patch", "delete"])
    | _needs([NodePool], ["update", "patch"])
    | _needs([Node], ["update", "patch", "delete"])
    | {
        Grant(CLUSTER, "karpenter.sh", f"{r}/status", v)
        for r in ("nodeclaims", "nodepools")
        for v in ("update", "patch")
    }
    | {Grant(CLUSTER, "", "pods", "delete"), Grant(CLUSTER, "", "pods/eviction", "create")}
    | {
        Grant(CLUSTER, g, "events", v)
        for g in ("", "events.k8s.io")
        for v in ("get", "list", "create", "patch")
    }
    | {Grant(RELEASE_NAMESPACE, "coordination.k8s.io", "leases", v) for v in ("get", "create")}
    | {Grant(RELEASE_NAMESPACE, "coordination.k8s.io", "leases", "update", named=True)}
)
NODE_CLASSES = {
    "kwok": ("karpenter.kwok.sh", "kwoknodeclasses"),
    "aws": ("karpenter.k8s.aws", "ec2nodeclasses"),
    "azure": ("karpenter.azure.com", "aksnodeclasses"),
}


@pytest.mark.parametrize("providers", PROVIDER_SETS)
def test_enough_for_the_core_and_the_enabled_providers_only(providers: str) -> None:
    enabled = providers.split(",")
    granted = grants(render(merge(REQUIRED, {"providers": {"enabled": providers}})))
    assert sorted(str(g) for g in CORE_NEEDS if not _covered(g, granted)) == []
    for provider, (group, resource) in NODE_CLASSES.items():
        needs = {Grant(CLUSTER, group, resource, v) for v in ("get", "list", "watch")}
        needs |= {Grant(CLUSTER, group, f"{resource}/status", v) for v in ("update", "patch")}
        if provider in enabled:
            assert needs <= granted, provider
        else:
            assert not {(g.group, g.resource.split("/")[0]) for g in granted} & {(group, resource)}
    kwok_needs = EXCEPTIONS["kwok"][0] | {Grant(CLUSTER, "", "nodes", "create")}
    if "kwok" in enabled:
        assert kwok_needs <= granted
    else:
        assert not kwok_needs & granted


def test_nothing_that_reaches_secrets_or_binds_pods_or_lists_leases() -> None:
    granted = grants(render(merge(REQUIRED, {"providers": {"enabled": "aws,azure,kwok"}})))
    assert not [g for g in granted if "*" in (g.group, g.resource, g.verb)]
    assert not [
        g
        for g in granted
        if g.resource in ("secrets", "configmaps", "pods/binding", "serviceaccounts/token")
    ]
    leases = {g for g in granted if g.resource == "leases"}
    assert not {g for g in leases if g.verb in ("list", "watch", "delete", "deletecollection")}
    # updates only to nodewright's own Lease in the release namespace
    assert {g for g in leases if g.scope == RELEASE_NAMESPACE and g.verb == "update"} == {
        Grant(RELEASE_NAMESPACE, "coordination.k8s.io", "leases", "update", named=True)
    }


def test_additional_cluster_role_rules_are_added_to_the_core_role() -> None:
    extra = {
        "apiGroups": ["example.com"],
        "resources": ["widgetnodeclasses"],
        "verbs": ["get", "list", "watch"],
    }
    objects = render(merge(REQUIRED, {"additionalClusterRoleRules": [extra]}))
    (core,) = [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-core")
    ]
    assert core["rules"][-1] == extra
    assert Grant(CLUSTER, "example.com", "widgetnodeclasses", "watch") in grants(objects)


def test_a_provider_the_chart_does_not_know_gets_no_node_class_rules() -> None:
    objects = render(merge(REQUIRED, {"providers": {"enabled": "gcp"}}))
    assert not [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "nodewright"
    ]
    assert grants(objects) == {
        g for g in grants(render()) if g.group not in ("karpenter.kwok.sh",)
    } - (EXCEPTIONS["kwok"][0] | {Grant(CLUSTER, "", "nodes", "create")})


DRA_READS = {
    Grant(CLUSTER, "resource.k8s.io", r, v)
    for r in ("resourceslices", "resourceclaims", "deviceclasses")
    for v in ("get", "list", "watch")
}


@pytest.mark.parametrize("providers", ["kwok", "aws"])
def test_dra_objects_are_readable_only_when_dra_requests_are_not_ignored(providers: str) -> None:
    default = grants(render(merge(REQUIRED, {"providers": {"enabled": providers}})))
    assert not {g for g in default if g.group == "resource.k8s.io"}
    values = {"providers": {"enabled": providers}, "settings": {"ignoreDRARequests": False}}
    objects = render(merge(REQUIRED, values))
    granted = grants(objects)
    publish = Grant(CLUSTER, "resource.k8s.io", "resourceslices", "create")
    assert granted >= DRA_READS
    assert (publish in granted) == (providers == "kwok")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "IGNORE_DRA_REQUESTS", "value": "false"} in container["env"]
