"""The ``bootstrappingclient`` provision mode (Karpenter Azure's NodeBootstrappingClient and
ProvisionClientBootstrap): a VM's custom data, and the command its CustomScript extension
runs, come from the AKS node bootstrapping server (``azure.nodebootstrapping-server-url``),
which is given the node's provision profile (size, image distro, labels, taints, kubelet and
Linux OS settings, ...). Where the server left the TLS bootstrap token's placeholder, the
token (``azure.bootstrap-token-file``) is put in, in both. The VM is created with that custom
data and gets the ``cse-agent-karpenter`` extension with the command once it exists.

Nothing here is logged: the custom data and the command carry the bootstrap token.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from nodewright.plugin import (
    InstanceType,
    LaunchError,
    NodeClassNotReadyError,
    Taint,
    TemporaryProviderError,
)
from nodewright_azure import aksapi, skus
from nodewright_azure import labels as L
from nodewright_azure.clients import AzureClients, azure_errors
from nodewright_azure.linuxosconfig import kubelet_config, machine_linux_os_config
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.options import Settings

#: Where the server's answer expects the TLS bootstrap token.
TOKEN_PLACEHOLDER = "{{.TokenID}}.{{.TokenSecret}}"
#: The CustomScript extension of a Linux node.
CSE_NAME = "cse-agent-karpenter"
#: The server's answer is awaited this long.
TIMEOUT_SECONDS = 30

#: Image definition (the segment of an image ID after ``images/``) -> AKS image distro.
DISTROS = {
    "2204gen2containerd": "aks-ubuntu-containerd-22.04-gen2",
    "2204containerd": "aks-ubuntu-containerd-22.04",
    "2204gen2arm64containerd": "aks-ubuntu-arm64-containerd-22.04-gen2",
    "2404gen2containerd": "aks-ubuntu-containerd-24.04-gen2",
    "2404containerd": "aks-ubuntu-containerd-24.04",
    "2404gen2arm64containerd": "aks-ubuntu-arm64-containerd-24.04-gen2",
    "V2gen2": "aks-azurelinux-v2-gen2",
    "V2": "aks-azurelinux-v2",
    "V2gen2arm64": "aks-azurelinux-v2-arm64-gen2",
    "V3gen2": "aks-azurelinux-v3-gen2",
    "V3": "aks-azurelinux-v3",
    "V3gen2arm64": "aks-azurelinux-v3-arm64-gen2",
}
#: GPU sizes that take NVIDIA's GRID driver rather than CUDA (Karpenter Azure's converged
#: driver sizes, those of this provider's GPU registry).
GRID_SIZES = frozenset(f"standard_nv{n}ads_a10_v5" for n in (6, 12, 18, 36, 72)) | frozenset(
    {"standard_nv36adms_a10_v5"}
)


def image_distro(image_id: str) -> str:
    """The AKS distro of a node image (by its definition); NodeClassNotReadyError for an
    image the bootstrapping server would not know."""
    parts = image_id.split("/")
    for index, part in enumerate(parts[:-1]):
        if part.lower() == "images" and parts[index + 1] in DISTROS:
            return DISTROS[parts[index + 1]]
    raise NodeClassNotReadyError(
        f"azure.provision-mode=bootstrappingclient: no AKS image distro is known for image "
        f"{image_id!r}"
    )


def _taint(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def provision_values(
    *,
    settings: Settings,
    spec: AKSNodeClassSpec,
    instance_type: InstanceType,
    sku: skus.Sku | None,
    image_id: str,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    startup_taints: tuple[Taint, ...],
    max_pods: int,
) -> dict[str, Any]:
    """The request body (Karpenter Azure's ``ProvisionValues``): the provision profile and
    the size's CPUs and memory."""
    arch = skus.arch(sku) if sku else "amd64"
    ephemeral = skus.ephemeral_os_max_gb(sku) if sku else None
    family = spec.image_family
    profile: dict[str, Any] = {
        "name": "",
        "architecture": "x64" if arch == "amd64" else "Arm64",
        "osType": "Linux",
        "osSku": "AzureLinux" if family == "AzureLinux" else "Ubuntu",
        "vmSize": instance_type.name,
        "distro": image_distro(image_id),
        "customNodeLabels": dict(labels),
        "orchestratorVersion": settings.kubernetes_version,
        "vnetSubnetID": spec.vnet_subnet_id or settings.vnet_subnet_id,
        "storageProfile": "Ephemeral"
        if ephemeral is not None and ephemeral >= spec.os_disk_size_gb
        else "ManagedDisks",
        "nodeInitializationTaints": [_taint(t) for t in startup_taints],
        "nodeTaints": [_taint(t) for t in taints],
        "securityProfile": {"sshAccess": "LocalUser"},
        "maxPods": max_pods,
        "vnetCidrs": [],
        "enableFIPS": spec.fips_mode == "FIPS",
        "artifactStreamingProfile": {
            "enabled": bool(spec.artifact_streaming and spec.artifact_streaming.enabled)
            and arch == "amd64"
        },
        "mode": "System" if labels.get(L.AKS_MODE) == "system" else "User",
    }
    kubelet = kubelet_config(spec.kubelet)
    if kubelet is not None:
        profile["customKubeletConfig"] = kubelet
    linux = machine_linux_os_config(spec.linux_os_config)
    if linux is not None:
        profile["customLinuxOSConfig"] = linux
    gpu = skus.GPU_REGISTRY.get(instance_type.name.lower())
    if gpu is not None and gpu[0] == "nvidia":
        profile["gpuProfile"] = {
            "driverType": "GRID" if instance_type.name.lower() in GRID_SIZES else "CUDA",
            "installGPUDriver": not (spec.gpu is not None and spec.gpu.mode == "None"),
        }
    helper: dict[str, Any] = {}
    if sku is not None:
        helper = {"skuCPU": float(sku.cpus), "skuMemory": float(sku.memory_gib)}
    return {"provisionProfile": profile, "provisionHelperValues": helper}


def hydrate(custom_data: str, cse: str, token: str) -> tuple[str, str]:
    """The server's custom data (base64) and command with the bootstrap token put in."""
    try:
        decoded = base64.b64decode(custom_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise LaunchError(
            "NodeBootstrappingFailed", "the node bootstrapping server's customData is not base64"
        ) from None
    hydrated = base64.b64encode(decoded.replace(TOKEN_PLACEHOLDER, token).encode()).decode()
    return hydrated, cse.replace(TOKEN_PLACEHOLDER, token)


class NodeBootstrappingClient:
    """Asks the node bootstrapping server for a node's custom data and command, through the
    ARM pipeline (its credential and token scope, CA bundle and retries)."""

    def __init__(self, settings: Settings, clients: AzureClients) -> None:
        self.settings = settings
        self.clients = clients

    def url(self) -> str:
        s = self.settings
        return (
            f"{s.node_bootstrapping_server_url.rstrip('/')}/subscriptions/{s.subscription_id}/"
            f"resourceGroups/{s.resource_group}/providers/Microsoft.ContainerService/"
            f"managedclusters/{s.cluster_name}/nodeBootstrapping"
        )

    def get(self, values: Mapping[str, Any], token: str) -> tuple[str, str]:
        """(custom data, command), the token put in; LaunchError when the server answers
        without them, TemporaryProviderError when it cannot be asked."""
        compute, _ = self.clients.clients()
        try:
            with azure_errors("asking the node bootstrapping server"):
                _, answer, _ = aksapi.request(
                    compute,
                    "GET",
                    "",
                    url=self.url(),
                    body=values,
                    options={"connection_timeout": TIMEOUT_SECONDS},
                )
        except TemporaryProviderError as error:
            raise TemporaryProviderError(
                f"{error} (azure.nodebootstrapping-server-url="
                f"{self.settings.node_bootstrapping_server_url})"
            ) from None
        custom_data, cse = answer.get("customData"), answer.get("cse")
        for name, value in (("cse", cse), ("customData", custom_data)):
            if not isinstance(value, str) or not value:
                raise LaunchError(
                    "NodeBootstrappingFailed",
                    f"the node bootstrapping server answered without {name}",
                )
        return hydrate(str(custom_data), str(cse), token)


def create_extension(
    compute: Any, settings: Settings, vm: str, cse: str, tags: Mapping[str, str]
) -> None:
    """Give VM ``vm`` the CustomScript extension that runs ``cse`` (its only setting is
    protected, so ARM never shows it back)."""
    from azure.mgmt.compute.models import VirtualMachineExtension  # noqa: PLC0415

    extension = VirtualMachineExtension(
        {
            "location": settings.location,
            "tags": dict(tags),
            "properties": {
                "publisher": "Microsoft.Azure.Extensions",
                "type": "CustomScript",
                "typeHandlerVersion": "2.0",
                "autoUpgradeMinorVersion": True,
                "settings": {},
                "protectedSettings": {"commandToExecute": cse},
            },
        }
    )
    compute.virtual_machine_extensions.begin_create_or_update(
        settings.resource_group, vm, CSE_NAME, extension
    ).result()
