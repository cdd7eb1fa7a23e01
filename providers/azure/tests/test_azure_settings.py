"""Karpenter Azure's settings in the VM mode: network-policy and the kubelet identity in the
node bootstrap, the Cilium dataplane and kubelet identity labels, KubeletIdentityDrift, and
use-sig (node images from AKS's NodeImageVersions API and its shared galleries)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.api.core import Node
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.plugin.model import ProviderContext
from nodewright.testing import launched_instance, make_node_claim
from nodewright_azure import labels as L
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.drift import drift_annotations
from nodewright_azure.options import SettingsError, parse_settings
from providers.azure.tests.azure_helpers import (
    RESOURCE_GROUP,
    FakeTokenCredential,
    fake_options,
    node_class,
)
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.test_azure_bootstrap import bootstrap_options, flags, script_of
from providers.azure.tests.test_azure_instances import D2_ZONE_2, request_for

IDENTITY = "6b2a58c2-04b1-4c6e-a2b5-2a4c6d8e9f01"
SIG = "10945678-1234-1234-1234-123456789012"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"network-dataplane": "calico"}, "not a valid network dataplane"),
        ({"kubelet-identity-client-id": "not-a-uuid"}, "is malformed"),
        ({"use-sig": "true"}, "sig-subscription-id is required"),
        ({"use-sig": "maybe"}, "is not true or false"),
        ({"provider-batch-max-size": "51"}, "between 1 and 50"),
        (
            {"provider-batch-idle-duration": "6s", "provider-batch-max-duration": "5s"},
            "must be >=",
        ),
        ({"nodebootstrapping-server-url": "http://bootstrap"}, "must be an https:// URL"),
    ],
)
def test_bad_values_are_refused_naming_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_settings(options)


def test_defaults_are_karpenter_azures() -> None:
    settings = parse_settings({})
    assert settings.provision_mode == "aksscriptless"
    assert settings.network_dataplane == "cilium"
    assert (settings.network_policy, settings.kubelet_identity_client_id) == ("", "")
    assert (settings.batch_idle, settings.batch_max, settings.batch_size) == (1.0, 5.0, 50)
    assert not settings.use_sig
    assert not settings.aks_machines_visible


def test_network_policy_dataplane_and_identity_reach_the_node(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path
) -> None:
    provider = make_provider(
        **bootstrap_options(tmp_path),
        network_policy="calico",
        network_dataplane="cilium",
        kubelet_identity_client_id=IDENTITY,
    )
    instance = launched_instance(provider.launch(request_for(provider, "default-65f84", D2_ZONE_2)))
    exported = script_of(fake, "default-65f84")
    assert exported["NETWORK_POLICY"] == "calico"
    assert exported["USER_ASSIGNED_IDENTITY_ID"] == IDENTITY
    labels = dict(pair.split("=", 1) for pair in flags(exported)["node-labels"].split(","))
    assert labels[L.AKS_EBPF_DATAPLANE] == "cilium"
    assert labels[L.AKS_KUBELET_IDENTITY] == IDENTITY
    assert instance.labels[L.AKS_KUBELET_IDENTITY] == IDENTITY
    azure = make_provider(**bootstrap_options(tmp_path), network_dataplane="azure")
    launched_instance(azure.launch(request_for(azure, "default-a1b2c", D2_ZONE_2)))
    exported = script_of(fake, "default-a1b2c")
    assert exported["NETWORK_POLICY"] == ""
    assert L.AKS_EBPF_DATAPLANE not in flags(exported)["node-labels"]


def test_a_node_with_another_kubelet_identity_drifts(
    fake: FakeAzure, clock: SimulatedClock
) -> None:
    cluster = MemoryCluster(clock)
    credential = FakeTokenCredential(fake)
    provider = AzureProvider(credential_factory=lambda _settings: credential)
    provider.configure(
        ProviderContext(
            cluster=cluster,
            clock=clock,
            options=fake_options(fake, kubelet_identity_client_id=IDENTITY),
        )
    )
    nc = node_class(imageFamily="Ubuntu2204")
    claim = make_node_claim("default-65f84", nc, [])
    claim.metadata.annotations.update(drift_annotations(nc.spec))
    claim.status.node_name = "aks-default-65f84"
    for label, drifted in (("", None), (IDENTITY, None), ("0b1c-old", "KubeletIdentityDrift")):
        labels = {L.AKS_KUBELET_IDENTITY: label} if label else {}
        existing = cluster.get(Node, "aks-default-65f84")
        if existing is not None:
            cluster.delete(Node, "aks-default-65f84")
        cluster.create(
            Node.model_validate({"metadata": {"name": "aks-default-65f84", "labels": labels}})
        )
        assert provider.is_drifted(claim, nc) == drifted, label
    provider.close()


def test_use_sig_takes_images_from_the_node_image_versions_api(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    provider = make_provider(use_sig="true", sig_subscription_id=SIG)
    readiness = provider.node_class_status(node_class(imageFamily="Ubuntu2204"))
    assert readiness.ready
    ids = [image["id"] for image in readiness.status["images"]]
    prefix = (
        f"/subscriptions/{SIG}/resourceGroups/AKS-Ubuntu/providers/Microsoft.Compute/"
        "galleries/AKSUbuntu/images"
    )
    assert ids == [
        f"{prefix}/2204gen2containerd/versions/202511.03.0",
        f"{prefix}/2204containerd/versions/202511.03.0",
        f"{prefix}/2204gen2arm64containerd/versions/202511.03.0",
    ]
    assert any("/nodeImageVersions" in p for _, p in fake.requests)
    assert not any("communityGalleries" in p for _, p in fake.requests)
    launched_instance(provider.launch(request_for(provider, "default-65f84", D2_ZONE_2)))
    body = fake.vm_bodies[f"{RESOURCE_GROUP.lower()}/aks-default-65f84"]
    assert body["properties"]["storageProfile"]["imageReference"] == {"id": ids[0]}
