"""What a pod's volumes demand of a node, as Karpenter reads them before picking one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.volumes import (
    BIND_COMPLETED_ANNOTATION,
    PodVolumes,
    VolumeProblem,
    add_usage,
    node_volume_limits,
    pod_volume_usage,
    pod_volumes,
)

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
EBS = "ebs.csi.aws.com"


def pod(*volumes: dict[str, Any], name: str = "db-0") -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"volumes": list(volumes)}}
    )


def claim_volume(claim: str, name: str = "data") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str = "scratch", storage_class: str | None = "wait") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"]}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}


def claim(
    name: str,
    *,
    storage_class: str | None = "wait",
    volume: str | None = None,
    phase: str | None = None,
    deleting: bool = False,
    bind_completed: bool = True,
) -> PersistentVolumeClaim:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if volume and bind_completed:
        metadata["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return PersistentVolumeClaim.model_validate(
        {
            "metadata": metadata,
            "spec": spec,
            "status": {"phase": phase or ("Bound" if volume else "Pending")},
        }
    )


def volume(
    name: str,
    *terms: list[tuple[str, str, list[str]]],
    driver: str | None = EBS,
    local: bool = False,
    deleting: bool = False,
) -> PersistentVolume:
    spec: dict[str, Any] = {}
    if terms:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": op, "values": v} for k, op, v in term
                        ]
                    }
                    for term in terms
                ]
            }
        }
    if driver:
        spec["csi"] = {"driver": driver, "volumeHandle": name}
    if local:
        spec["local"] = {"path": "/mnt/disks/ssd1"}
    metadata: dict[str, Any] = {"name": name}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return PersistentVolume.model_validate({"metadata": metadata, "spec": spec})


def storage_class(
    name: str,
    *,
    mode: str | None = "WaitForFirstConsumer",
    provisioner: str = EBS,
    topologies: list[dict[str, list[str]]] | None = None,
    default: bool = False,
) -> StorageClass:
    data: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode:
        data["volumeBindingMode"] = mode
    if default:
        data["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if topologies:
        data["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": v} for k, v in term.items()]}
            for term in topologies
        ]
    return StorageClass.model_validate(data)


def facts(
    subject: Pod,
    claims: Sequence[PersistentVolumeClaim] = (),
    volumes: Sequence[PersistentVolume] = (),
    classes: Sequence[StorageClass] = (),
) -> PodVolumes:
    return pod_volumes(
        subject,
        {c.key: c for c in claims},
        {v.name: v for v in volumes},
        {sc.name: sc for sc in classes},
    )


def zones(result: PodVolumes) -> list[set[str]]:
    """Each alternative's allowed zones."""
    return [set(alternative[ZONE].values) for alternative in result.requirements]


# -- topology ----------------------------------------------------------------------------------


def test_pod_without_claims_has_no_volume_constraints() -> None:
    result = facts(pod({"name": "tmp", "emptyDir": {}}))
    assert result == PodVolumes((), {})


def test_bound_claim_follows_its_volumes_node_affinity() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", volume="pv-1")],
        [volume("pv-1", [(ZONE, "In", ["zone-b"])])],
        [storage_class("wait")],
    )
    assert result.requirements == (Requirements.of((ZONE, "In", ["zone-b"])),)
    assert result.usage == {EBS: frozenset({"default/data"})}


def test_each_node_affinity_term_is_an_alternative() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", volume="pv-1")],
        [volume("pv-1", [(ZONE, "In", ["zone-a"])], [(ZONE, "In", ["zone-c"])])],
    )
    assert zones(result) == [{"zone-a"}, {"zone-c"}]


def test_local_volume_drops_its_hostname_requirement() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", volume="pv-1")],
        [
            volume(
                "pv-1",
                [(HOSTNAME, "In", ["node-1"]), (ZONE, "In", ["zone-a"])],
                [(HOSTNAME, "In", ["node-2"])],
                local=True,
            )
        ],
    )
    assert result.requirements == (Requirements.of((ZONE, "In", ["zone-a"])), Requirements())


def test_network_volume_keeps_its_hostname_requirement() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", volume="pv-1")],
        [volume("pv-1", [(HOSTNAME, "In", ["node-1"])])],
    )
    assert result.requirements == (Requirements.of((HOSTNAME, "In", ["node-1"])),)


def test_unbound_wait_for_first_consumer_claim_follows_allowed_topologies() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", storage_class="zonal")],
        [],
        [storage_class("zonal", topologies=[{ZONE: ["zone-a", "zone-b"]}, {ZONE: ["zone-c"]}])],
    )
    assert zones(result) == [{"zone-a", "zone-b"}, {"zone-c"}]
    assert result.usage == {EBS: frozenset({"default/data"})}


def test_class_without_allowed_topologies_places_no_constraint() -> None:
    result = facts(pod(claim_volume("data")), [claim("data")], [], [storage_class("wait")])
    assert result.requirements == ()


def test_several_volumes_cross_and_drop_impossible_combinations() -> None:
    subject = pod(claim_volume("logs", "logs"), claim_volume("data", "data"))
    result = facts(
        subject,
        [claim("logs", volume="pv-logs"), claim("data", storage_class="zonal")],
        [volume("pv-logs", [(ZONE, "In", ["zone-a"])], [(ZONE, "In", ["zone-b"])])],
        [storage_class("zonal", topologies=[{ZONE: ["zone-b"]}, {ZONE: ["zone-c"]}])],
    )
    # a x b, a x c and b x c cannot be met by one node; only b x b remains
    assert zones(result) == [{"zone-b"}]
    assert result.usage == {EBS: frozenset({"default/logs", "default/data"})}


def test_volumes_no_node_can_satisfy_together_keep_every_combination() -> None:
    subject = pod(claim_volume("logs", "logs"), claim_volume("data", "data"))
    result = facts(
        subject,
        [claim("logs", volume="pv-a"), claim("data", volume="pv-c")],
        [volume("pv-a", [(ZONE, "In", ["zone-a"])]), volume("pv-c", [(ZONE, "In", ["zone-c"])])],
    )
    (only,) = result.requirements
    assert len(only[ZONE]) == 0  # the solver finds no node, as in Karpenter


def test_claim_without_class_uses_the_default_class() -> None:
    result = facts(
        pod(claim_volume("data")),
        [claim("data", storage_class=None)],
        [],
        [
            storage_class("other", mode=None, provisioner="other.csi"),
            storage_class(
                "std",
                provisioner="kubernetes.io/aws-ebs",
                default=True,
                topologies=[{ZONE: ["zone-a"]}],
            ),
        ],
    )
    assert zones(result) == [{"zone-a"}]
    assert result.usage == {EBS: frozenset({"default/data"})}  # the in-tree name translates


# -- generic ephemeral volumes -----------------------------------------------------------------


def test_ephemeral_volume_not_yet_created_uses_its_template() -> None:
    result = facts(
        pod(ephemeral_volume("scratch", "zonal"), name="web-1"),
        [],
        [],
        [storage_class("zonal", topologies=[{ZONE: ["zone-b"]}])],
    )
    assert zones(result) == [{"zone-b"}]
    assert result.usage == {EBS: frozenset({"default/web-1-scratch"})}


def test_ephemeral_volume_once_created_uses_its_claim() -> None:
    result = facts(
        pod(ephemeral_volume("scratch", "zonal"), name="web-1"),
        [claim("web-1-scratch", volume="pv-9")],
        [volume("pv-9", [(ZONE, "In", ["zone-c"])], driver="disk.csi.azure.com")],
        [storage_class("zonal", topologies=[{ZONE: ["zone-b"]}])],
    )
    assert zones(result) == [{"zone-c"}]
    assert result.usage == {"disk.csi.azure.com": frozenset({"default/web-1-scratch"})}


# -- why a pod is ignored ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "volumes", "classes", "expected"),
    [
        ([], [], [], 'persistentvolumeclaim "data" not found'),
        ([claim("data", deleting=True)], [], [storage_class("wait")], "is being deleted"),
        ([claim("data", volume="pv-1", phase="Lost")], [volume("pv-1")], [], "non-existent"),
        ([claim("data", volume="pv-1")], [], [], 'persistentvolume "pv-1", which does not exist'),
        ([claim("data", volume="pv-1")], [volume("pv-1", deleting=True)], [], "being deleted"),
        (
            [claim("data", volume="pv-1", bind_completed=False)],
            [volume("pv-1")],
            [],
            f"does not contain annotation {BIND_COMPLETED_ANNOTATION}",
        ),
        ([claim("data", storage_class="")], [], [], "must define a storage class"),
        ([claim("data", storage_class=None)], [], [], "must define a storage class"),
        (
            [claim("data", storage_class="gone")],
            [],
            [],
            'storageclass "gone", which does not exist',
        ),
        (
            [claim("data", storage_class="now")],
            [],
            [storage_class("now", mode="Immediate")],
            "immediate volume binding mode must be bound",
        ),
        (
            [claim("data", storage_class="now")],
            [],
            [storage_class("now", mode=None)],  # Immediate is the default mode
            "immediate volume binding mode must be bound",
        ),
    ],
)
def test_pods_karpenter_ignores_say_why(
    claims: list[PersistentVolumeClaim],
    volumes: list[PersistentVolume],
    classes: list[StorageClass],
    expected: str,
) -> None:
    with pytest.raises(VolumeProblem, match=expected):
        facts(pod(claim_volume("data")), claims, volumes, classes)


def test_invalid_volume_node_affinity_is_a_volume_problem() -> None:
    with pytest.raises(VolumeProblem, match="invalid node affinity"):
        facts(
            pod(claim_volume("data")),
            [claim("data", volume="pv-1")],
            [volume("pv-1", [("rank", "Gt", ["high"])])],
        )


# -- attach limits -----------------------------------------------------------------------------


def test_node_volume_limits_come_from_csi_node_drivers_with_a_count() -> None:
    csi_node = CSINode.model_validate(
        {
            "metadata": {"name": "node-1"},
            "spec": {
                "drivers": [
                    {"name": EBS, "nodeID": "i-1", "allocatable": {"count": 25}},
                    {"name": "efs.csi.aws.com", "nodeID": "i-1"},
                    {"name": "other.csi", "nodeID": "i-1", "allocatable": {}},
                ]
            },
        }
    )
    assert node_volume_limits(csi_node) == {EBS: 25}
    assert node_volume_limits(None) == {}


def test_volume_usage_adds_unique_claims_per_driver() -> None:
    used = {EBS: frozenset({"default/a", "default/b"})}
    assert add_usage(used, {EBS: frozenset({"default/a"})}) == used
    assert add_usage(used, {EBS: frozenset({"default/c"}), "x": frozenset({"default/d"})}) == {
        EBS: frozenset({"default/a", "default/b", "default/c"}),
        "x": frozenset({"default/d"}),
    }


def test_usage_of_a_running_pod_skips_vanished_claims_and_non_csi_volumes() -> None:
    subject = pod(
        claim_volume("data", "data"),
        claim_volume("gone", "gone"),
        claim_volume("nfs", "nfs"),
        {"name": "tmp", "emptyDir": {}},
    )
    usage = pod_volume_usage(
        subject,
        {c.key: c for c in [claim("data", volume="pv-1"), claim("nfs", volume="pv-nfs")]},
        {v.name: v for v in [volume("pv-1"), volume("pv-nfs", driver=None)]},
        {},
    )
    assert usage == {EBS: frozenset({"default/data"})}
