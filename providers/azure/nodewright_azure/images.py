"""Node images: which AKS community-gallery image definitions an AKSNodeClass may use, and
which resolved image a given VM size boots.

As Karpenter Azure: each image family lists definitions in priority order (Gen2 amd64, Gen1
amd64, Gen2 arm64), each with requirements on ``kubernetes.io/arch`` and the internal
``karpenter.azure.com/sku-hyperv-generation``; the version is the most recently published one
the Community Gallery image-versions API lists; at launch the first image compatible with the
VM size wins. :class:`ImageProvider` resolves them, caching each version a few minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core.exceptions import ResourceNotFoundError

from nodewright.plugin import TemporaryProviderError
from nodewright_azure import aksapi, skus
from nodewright_azure.clients import AzureClients, azure_errors
from nodewright_azure.instancetype import InstanceTypeProvider
from nodewright_azure.labels import GROUP
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.options import Settings

log = logging.getLogger(__name__)

UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
#: The AKS shared image gallery (resource group, gallery) behind each community gallery.
SHARED_GALLERIES = {
    UBUNTU_GALLERY: ("AKS-Ubuntu", "AKSUbuntu"),
    AZURE_LINUX_GALLERY: ("AKS-AzureLinux", "AKSAzureLinux"),
}
ARCH_LABEL = "kubernetes.io/arch"
#: Restricted: Karpenter Azure uses it to match images, users cannot select on it.
HYPERV_GENERATION = f"{GROUP}/sku-hyperv-generation"
#: How long a resolved image version is used before the gallery is asked again.
IMAGE_REFRESH = timedelta(minutes=5)


@dataclass(frozen=True)
class ImageDefinition:
    """One community-gallery image definition and the VM sizes it boots."""

    gallery: str
    definition: str
    arch: str
    generation: str

    def image_id(self, version: str) -> str:
        return f"/CommunityGalleries/{self.gallery}/images/{self.definition}/versions/{version}"

    @property
    def shared_gallery(self) -> str:
        """The AKS shared image gallery holding the same definition (``AKSUbuntu``, ...)."""
        return SHARED_GALLERIES[self.gallery][1]

    def shared_image_id(self, subscription: str, version: str) -> str:
        group, gallery = SHARED_GALLERIES[self.gallery]
        return (
            f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Compute/"
            f"galleries/{gallery}/images/{self.definition}/versions/{version}"
        )


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


def _version_key(version: str) -> tuple[int, ...]:
    """``202511.03.1`` as (202511, 3, 1): node image versions compare segment by segment."""
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return ()


def _published(version: Any) -> datetime:
    properties = getattr(version, "properties", None)
    published = getattr(properties, "published_date", None)
    if not isinstance(published, datetime):
        return datetime.min.replace(tzinfo=UTC)
    return published if published.tzinfo else published.replace(tzinfo=UTC)


class ImageProvider:
    """The images an AKSNodeClass resolves to: ``azure.image-id``, else the newest version of
    each of its family's gallery definitions (asked again after a few minutes)."""

    def __init__(
        self,
        settings: Settings,
        clients: AzureClients,
        instance_types: InstanceTypeProvider,
        now: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.clients = clients
        self.instance_types = instance_types
        self.now = now
        self.versions: dict[ImageDefinition, tuple[str | None, datetime]] = {}
        self.shared: tuple[dict[tuple[str, str], str], datetime] | None = None

    def node_images(self, spec: AKSNodeClassSpec) -> list[NodeImage]:
        """The images the NodeClass may boot, in priority order (``status.images``): from the
        community galleries, or with ``use-sig`` from AKS's shared galleries, at the newest
        version the NodeImageVersions API lists."""
        if self.settings.image_id:
            return [NodeImage(self.settings.image_id)]
        found: list[NodeImage] = []
        shared = self._shared_versions() if self.settings.use_sig else {}
        for definition in definitions(spec.image_family, self.settings.kubernetes_version):
            if self.settings.use_sig:
                version = shared.get((definition.shared_gallery, definition.definition))
                image = (
                    definition.shared_image_id(self.settings.sig_subscription_id, version)
                    if version
                    else None
                )
            else:
                version = self._latest_version(definition)
                image = definition.image_id(version) if version else None
            if image:
                found.append(NodeImage(image, definition.arch, definition.generation))
        return found

    def _shared_versions(self) -> dict[tuple[str, str], str]:
        """(gallery, image definition) -> the newest version AKS lists for the location
        (the AKS node image versions of the Ubuntu and Azure Linux galleries only)."""
        now = self.now()
        if self.shared is not None and now - self.shared[1] < IMAGE_REFRESH:
            return self.shared[0]
        compute, _ = self.clients.clients()
        path = (
            f"/subscriptions/{self.settings.subscription_id}/providers/"
            f"Microsoft.ContainerService/locations/{self.settings.location}/nodeImageVersions"
        )
        try:
            with azure_errors("listing AKS node image versions"):
                listed = list(aksapi.pages(compute, path))
        except TemporaryProviderError:
            if self.shared is not None:
                return self.shared[0]
            raise
        newest: dict[tuple[str, str], str] = {}
        for item in listed:
            key = (str(item.get("os", "")), str(item.get("sku", "")))
            version = str(item.get("version", ""))
            if key[0] not in ("AKSUbuntu", "AKSAzureLinux") or not version:
                continue
            if key not in newest or _version_key(version) > _version_key(newest[key]):
                newest[key] = version
        self.shared = (newest, now)
        return newest

    def _latest_version(self, definition: ImageDefinition) -> str | None:
        """The most recently published version of a gallery image (cached a few minutes)."""
        now = self.now()
        cached = self.versions.get(definition)
        if cached is not None and now - cached[1] < IMAGE_REFRESH:
            return cached[0]
        compute, _ = self.clients.clients()
        try:
            with azure_errors(f"listing versions of image {definition.definition}"):
                versions = list(
                    compute.community_gallery_image_versions.list(
                        self.settings.location, definition.gallery, definition.definition
                    )
                )
        except ResourceNotFoundError:
            versions = []
        except TemporaryProviderError:
            if cached is not None:
                return cached[0]  # keep using what resolved before
            raise
        newest = max(
            (v for v in versions if v.name),
            key=_published,
            default=None,
        )
        name = newest.name if newest is not None else None
        if cached is None or cached[0] != name:
            log.info("azure: image %s resolves to version %s", definition.definition, name)
        self.versions[definition] = (name, now)
        return name

    def bootable(self, node_images: list[NodeImage], size: str) -> NodeImage | None:
        """The first of ``node_images`` the VM size boots (the first image if the size is
        unknown)."""
        sku = self.instance_types.sku(size)
        if sku is None:
            return node_images[0] if node_images else None
        generations = hyperv_generations(sku.capability("HyperVGenerations"))
        return first_compatible(node_images, skus.arch(sku), generations)
