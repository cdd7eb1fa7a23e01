"""Image resolution through the Community Gallery image-versions API (served by the fake), the
images written to status, the image each VM size boots, and drift (NodeClass hash, image)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from nodewright.api.core import Node
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.plugin.model import ProviderContext
from nodewright.testing import launched_instance, make_node_claim
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.drift import drift_annotations
from nodewright_azure.images import HYPERV_GENERATION
from nodewright_azure.nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    AKSNodeClass,
)
from providers.azure.tests.azure_helpers import (
    RESOURCE_GROUP,
    FakeTokenCredential,
    fake_options,
    node_class,
)
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.fake_azure_catalog import AZURE_LINUX_GALLERY, UBUNTU_GALLERY
from providers.azure.tests.test_azure_instances import D2_ZONE_2, request_for

NEWEST = "202406.07.0"


def ubuntu(definition: str, version: str = NEWEST) -> str:
    return f"/CommunityGalleries/{UBUNTU_GALLERY}/images/{definition}/versions/{version}"


def vm_image(fake: FakeAzure, node_claim: str) -> dict[str, Any]:
    vm = fake.vms[f"{RESOURCE_GROUP.lower()}/aks-{node_claim}"]
    reference: dict[str, Any] = vm["properties"]["storageProfile"]["imageReference"]
    return reference


def test_status_lists_the_newest_version_of_each_definition_in_priority_order(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    readiness = provider.node_class_status(node_class(imageFamily="Ubuntu2204"))
    assert readiness.ready
    assert readiness.status["images"] == [
        {
            "id": ubuntu("2204gen2containerd"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": HYPERV_GENERATION, "operator": "In", "values": ["2"]},
            ],
        },
        {
            "id": ubuntu("2204containerd"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": HYPERV_GENERATION, "operator": "In", "values": ["1"]},
            ],
        },
        {
            "id": ubuntu("2204gen2arm64containerd"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                {"key": HYPERV_GENERATION, "operator": "In", "values": ["2"]},
            ],
        },
    ]
    # The versions were read from the gallery API, through its pages (page size 2).
    listed = [p for m, p in fake.requests if "/communityGalleries/" in p]
    assert any("2204gen2containerd/versions" in p and "skiptoken" in p for p in listed)


def test_the_image_family_picks_the_definitions(
    make_provider: Callable[..., AzureProvider],
) -> None:
    def ids(provider: AzureProvider, family: str) -> list[str]:
        images = provider.node_class_status(node_class(imageFamily=family)).status["images"]
        return [str(i["id"]).split("/images/")[1].split("/")[0] for i in images]

    plain = make_provider()
    assert ids(plain, "Ubuntu") == [
        "2204gen2containerd",
        "2204containerd",
        "2204gen2arm64containerd",
    ]
    assert ids(plain, "Ubuntu2404")[0] == "2404gen2containerd"
    assert ids(plain, "AzureLinux") == ["V2gen2", "V2", "V2gen2arm64"]
    k132 = make_provider(kubernetes_version="v1.32.1")
    assert ids(k132, "AzureLinux") == ["V3gen2", "V3", "V3gen2arm64"]
    status = k132.node_class_status(node_class(imageFamily="AzureLinux")).status
    assert status["kubernetesVersion"] == "1.32.1"
    assert str(status["images"][0]["id"]).startswith(f"/CommunityGalleries/{AZURE_LINUX_GALLERY}/")


def test_no_resolvable_image_makes_the_node_class_not_ready(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    for key in [k for k in fake.gallery_images if k[0] == AZURE_LINUX_GALLERY]:
        del fake.gallery_images[key]
    readiness = provider.node_class_status(node_class(imageFamily="AzureLinux"))
    assert not readiness.ready
    assert readiness.reason == "ImagesNotReady"
    assert "V2gen2" in readiness.message
    assert "japaneast" in readiness.message
    # Ubuntu still resolves.
    assert provider.node_class_status(node_class(imageFamily="Ubuntu2204")).ready


def test_each_vm_size_boots_the_first_compatible_image(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    instance = launched_instance(provider.launch(request_for(provider, "gen2-aaaaa", D2_ZONE_2)))
    assert vm_image(fake, "gen2-aaaaa") == {"communityGalleryImageId": ubuntu("2204gen2containerd")}
    assert instance.image_id == ubuntu("2204gen2containerd")

    arm = [(INSTANCE_TYPE_LABEL, "In", ["Standard_D2pls_v5"])]
    provider.launch(request_for(provider, "arm-bbbbb", arm))
    assert vm_image(fake, "arm-bbbbb") == {
        "communityGalleryImageId": ubuntu("2204gen2arm64containerd")
    }


def test_a_gen1_only_size_boots_the_gen1_image(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    for sku in fake.skus:
        if sku["name"] == "Standard_D2_v3":
            for capability in sku["capabilities"]:
                if capability["name"] == "HyperVGenerations":
                    capability["value"] = "V1"
    provider = make_provider()
    wanted = [
        (INSTANCE_TYPE_LABEL, "In", ["Standard_D2_v3"]),
        (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
    ]
    provider.launch(request_for(provider, "gen1-ccccc", wanted))
    assert vm_image(fake, "gen1-ccccc") == {"communityGalleryImageId": ubuntu("2204containerd")}


def test_sizes_no_image_boots_are_not_launched(provider: AzureProvider, fake: FakeAzure) -> None:
    del fake.gallery_images[(UBUNTU_GALLERY, "2204gen2arm64containerd")]
    arm_or_d2 = [(INSTANCE_TYPE_LABEL, "In", ["Standard_D2pls_v5", "Standard_D2_v4"])]
    request = request_for(provider, "mixed-ddddd", arm_or_d2)
    assert {t.name for t in request.instance_types} == {"Standard_D2pls_v5", "Standard_D2_v4"}
    instance = launched_instance(provider.launch(request))
    # The arm64 size is cheaper in the fake's prices, but no arm64 image resolves.
    assert instance.instance_type == "Standard_D2_v4"


def test_a_pinned_image_is_used_as_is(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    pinned = (
        "/subscriptions/s/resourceGroups/images/providers/Microsoft.Compute/galleries/g/"
        "images/mine/versions/1.0.0"
    )
    provider = make_provider(image_id=pinned)
    status = provider.node_class_status(node_class()).status
    assert status["images"] == [{"id": pinned, "requirements": []}]
    provider.launch(request_for(provider, "pinned-eeeee", D2_ZONE_2))
    assert vm_image(fake, "pinned-eeeee") == {"id": pinned}
    assert not [p for _, p in fake.requests if "/communityGalleries/" in p]


# -- drift ------------------------------------------------------------------------------------


def claim_with(nc: AKSNodeClass, annotations: dict[str, str], image: str | None = None) -> Any:
    claim = make_node_claim("default-65f84", nc, [])
    claim.metadata.annotations.update(annotations)
    claim.status.image_id = image
    return claim


def test_spec_changes_drift_but_tags_do_not(provider: AzureProvider) -> None:
    launched = node_class(imageFamily="Ubuntu2204", osDiskSizeGB=128, tags={"team": "web"})
    annotations = drift_annotations(launched.spec)
    assert annotations[HASH_VERSION_ANNOTATION] == HASH_VERSION
    assert annotations[HASH_ANNOTATION].isdigit()
    claim = claim_with(launched, annotations)
    assert provider.is_drifted(claim, launched) is None
    retagged = node_class(imageFamily="Ubuntu2204", osDiskSizeGB=128, tags={"team": "db"})
    assert provider.is_drifted(claim, retagged) is None
    bigger_disk = node_class(imageFamily="Ubuntu2204", osDiskSizeGB=256, tags={"team": "web"})
    assert provider.is_drifted(claim, bigger_disk) == "NodeClassDrift"
    kubelet = node_class(imageFamily="Ubuntu2204", kubelet={"cpuManagerPolicy": "static"})
    assert provider.is_drifted(claim, kubelet) == "NodeClassDrift"
    # A hash written by another hash version is not compared (no mass replacement).
    old = claim_with(launched, {**annotations, HASH_VERSION_ANNOTATION: "v2"})
    assert provider.is_drifted(old, bigger_disk) is None
    # Nor is one Karpenter Azure wrote (its v3 hash is computed from the Go struct).
    karpenter = claim_with(
        launched, {HASH_ANNOTATION: "12393960163388511505", HASH_VERSION_ANNOTATION: "v3"}
    )
    assert provider.is_drifted(karpenter, launched) is None


def test_a_newly_published_image_drifts_the_node_after_the_refresh(
    provider: AzureProvider, fake: FakeAzure, clock: SimulatedClock
) -> None:
    nc = node_class(imageFamily="Ubuntu2204")
    instance = launched_instance(
        provider.launch(request_for(provider, "img-fffff", D2_ZONE_2, nc=nc))
    )
    claim = claim_with(nc, drift_annotations(nc.spec), image=instance.image_id)
    assert provider.is_drifted(claim, nc) is None
    fake.publish_image(
        UBUNTU_GALLERY, "2204gen2containerd", "202406.21.0", "2024-06-22T08:00:00+00:00"
    )
    assert provider.is_drifted(claim, nc) is None  # the resolved version is cached a while
    clock.advance(timedelta(minutes=6))
    assert provider.is_drifted(claim, nc) == "ImageDrift"
    status = provider.node_class_status(nc).status
    assert status["images"][0]["id"] == ubuntu("2204gen2containerd", "202406.21.0")


def test_launch_returns_the_drift_annotations_and_the_node_name(
    provider: AzureProvider,
) -> None:
    nc = node_class(imageFamily="Ubuntu2204")
    instance = launched_instance(
        provider.launch(request_for(provider, "default-65f84", D2_ZONE_2, nc=nc))
    )
    assert instance.annotations == drift_annotations(nc.spec)
    assert instance.node_name == "aks-default-65f84"
    # Launch again (a retry after a crash): the same VM, the same annotations.
    again = launched_instance(
        provider.launch(request_for(provider, "default-65f84", D2_ZONE_2, nc=nc))
    )
    assert again.provider_id == instance.provider_id
    assert again.annotations == instance.annotations


def test_a_kubelet_of_another_kubernetes_version_drifts(
    fake: FakeAzure, clock: SimulatedClock
) -> None:
    cluster = MemoryCluster(clock)
    credential = FakeTokenCredential(fake)
    provider = AzureProvider(credential_factory=lambda _settings: credential)
    provider.configure(
        ProviderContext(
            cluster=cluster,
            clock=clock,
            options=fake_options(fake, kubernetes_version="1.30.3"),
        )
    )
    nc = node_class(imageFamily="Ubuntu2204")
    claim = claim_with(nc, drift_annotations(nc.spec))
    claim.status.node_name = "aks-default-65f84"
    assert provider.is_drifted(claim, nc) is None  # no Node yet
    node = Node.model_validate(
        {
            "metadata": {"name": "aks-default-65f84"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.30.3"}},
        }
    )
    cluster.create(node)
    assert provider.is_drifted(claim, nc) is None
    stored = cluster.get(Node, "aks-default-65f84")
    assert stored is not None
    node = stored.clone()
    node.status.model_extra["nodeInfo"]["kubeletVersion"] = "v1.29.9"  # type: ignore[index]
    cluster.update_status(node)  # as a kubelet writes it
    assert provider.is_drifted(claim, nc) == "K8sVersionDrift"
    provider.close()


def test_claims_hashed_by_karpenter_azure_are_restamped_and_then_drift(
    fake: FakeAzure, clock: SimulatedClock
) -> None:
    cluster = MemoryCluster(clock)
    credential = FakeTokenCredential(fake)
    provider = AzureProvider(credential_factory=lambda _settings: credential)
    provider.configure(ProviderContext(cluster=cluster, clock=clock, options=fake_options(fake)))
    nc = cluster.create(node_class(imageFamily="Ubuntu2204", osDiskSizeGB=128))
    karpenter = claim_with(
        nc, {HASH_ANNOTATION: "12393960163388511505", HASH_VERSION_ANNOTATION: "v3"}
    )
    karpenter.status.provider_id = "azure:///subscriptions/s/resourceGroups/g/providers/x/vm-1"
    created = mutable(cluster.create(karpenter))
    created.status.provider_id = karpenter.status.provider_id
    cluster.update_status(created)
    cluster.create(make_node_claim("not-launched", nc, []))

    assert provider.restamp_hashes() == ["default-65f84"]
    current = cluster.get(type(created), "default-65f84")
    assert current is not None
    assert current.metadata.annotations == drift_annotations(nc.spec)
    assert provider.is_drifted(current, nc) is None
    bigger_disk = node_class(imageFamily="Ubuntu2204", osDiskSizeGB=256)
    assert provider.is_drifted(current, bigger_disk) == "NodeClassDrift"
    pending = cluster.get(type(created), "not-launched")
    assert pending is not None
    assert HASH_ANNOTATION not in pending.metadata.annotations
    assert provider.restamp_hashes() == []
    provider.close()
