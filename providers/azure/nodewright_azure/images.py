"""Node images: which AKS community-gallery image definitions an AKSNodeClass may use, and
which resolved image a given VM size boots.

As Karpenter Azure: each image family lists definitions in priority order (Gen2 amd64, Gen1
amd64, Gen2 arm64), each with requirements on ``kubernetes.io/arch`` and the internal
``karpenter.azure.com/sku-hyperv-generation``; the version is the most recently published one
the Community Gallery image-versions API lists; at launch the first image compatible with the
VM size wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodewright_azure.labels import GROUP

UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
ARCH_LABEL = "kubernetes.io/arch"
#: Restricted: Karpenter Azure uses it to match images, users cannot select on it.
HYPERV_GENERATION = f"{GROUP}/sku-hyperv-generation"


@dataclass(frozen=True)
class ImageDefinition:
    """One community-gallery image definition and the VM sizes it boots."""

    gallery: str
    definition: str
    arch: str
    generation: str

    def image_id(self, version: str) -> str:
        return f"/CommunityGalleries/{self.gallery}/images/{self.definition}/versions/{version}"


def _family(gallery: str, gen2: str, gen1: str, arm64: str) -> tuple[ImageDefinition, ...]:
    return (
        ImageDefinition(gallery, gen2, "amd64", "2"),
        ImageDefinition(gallery, gen1, "amd64", "1"),
        ImageDefinition(gallery, arm64, "arm64", "2"),
    )


UBUNTU_2204 = _family(
    UBUNTU_GALLERY, "2204gen2containerd", "2204containerd", "2204gen2arm64containerd"
)
UBUNTU_2404 = _family(
    UBUNTU_GALLERY, "2404gen2containerd", "2404containerd", "2404gen2arm64containerd"
)
AZURE_LINUX_2 = _family(AZURE_LINUX_GALLERY, "V2gen2", "V2", "V2gen2arm64")
AZURE_LINUX_3 = _family(AZURE_LINUX_GALLERY, "V3gen2", "V3", "V3gen2arm64")


def _version_at_least(version: str, major: int, minor: int) -> bool:
    parts = version.strip().removeprefix("v").split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except (IndexError, ValueError):
        return False


def definitions(image_family: str, kubernetes_version: str = "") -> tuple[ImageDefinition, ...]:
    """The definitions of an ``imageFamily``, in priority order.

    ``AzureLinux`` is Azure Linux 3 from Kubernetes 1.32 (2 before, or when the version is not
    known); ``Ubuntu`` (the default family) is Ubuntu 22.04 here.
    """
    if image_family == "Ubuntu2404":
        return UBUNTU_2404
    if image_family == "AzureLinux":
        return AZURE_LINUX_3 if _version_at_least(kubernetes_version, 1, 32) else AZURE_LINUX_2
    return UBUNTU_2204


@dataclass(frozen=True)
class NodeImage:
    """A resolved image (``status.images[]``): its id and the VM sizes it boots."""

    id: str
    arch: str = ""
    generation: str = ""

    def requirements(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if self.arch:
            found.append({"key": ARCH_LABEL, "operator": "In", "values": [self.arch]})
        if self.generation:
            found.append({"key": HYPERV_GENERATION, "operator": "In", "values": [self.generation]})
        return found

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "requirements": self.requirements()}

    def boots(self, arch: str, generations: frozenset[str]) -> bool:
        return (not self.arch or self.arch == arch) and (
            not self.generation or self.generation in generations
        )


def first_compatible(
    images: list[NodeImage], arch: str, generations: frozenset[str]
) -> NodeImage | None:
    """The first image (priority order) a VM size of that arch and Hyper-V generations boots."""
    return next((image for image in images if image.boots(arch, generations)), None)


def hyperv_generations(capability: str) -> frozenset[str]:
    """``HyperVGenerations`` (``V1,V2``) as ``{"1", "2"}``; Gen1 when the SKU does not say."""
    found = frozenset(
        part.strip().upper().removeprefix("V") for part in capability.split(",") if part.strip()
    )
    return found or frozenset({"1"})
