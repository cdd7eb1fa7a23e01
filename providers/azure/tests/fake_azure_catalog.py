"""What the provider reads about the cloud in the fake: Resource SKUs, Community Gallery image
versions (AKS's node images) and the Retail Prices API."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from providers.azure.tests.fake_azure_arm import JSON, error, page

if TYPE_CHECKING:
    from providers.azure.tests.fake_azure import FakeAzure

UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"


def skus(
    fake: FakeAzure, path: str, query: dict[str, list[str]]
) -> tuple[int, dict[str, str], JSON]:
    """Resource SKUs, filtered by ``location eq '...'``."""
    text = query.get("$filter", [""])[0]
    location = re.search(r"location eq '([^']+)'", text)
    found = [
        s
        for s in fake.skus
        if location is None or location.group(1).lower() in [x.lower() for x in s["locations"]]
    ]
    return page(fake, path, query, found, fake.sku_page_size)


def gallery_versions(
    fake: FakeAzure,
    path: str,
    query: dict[str, list[str]],
    *,
    location: str,
    gallery: str,
    image: str,
) -> tuple[int, dict[str, str], JSON]:
    """The versions of one community gallery image."""
    versions = fake.gallery_images.get((gallery, image))
    if versions is None:
        return error(
            404,
            "GalleryImageNotFound",
            f"The gallery image {image} is not found in community gallery {gallery}.",
        )
    items = [
        {
            "name": v["name"],
            "location": location,
            "type": "Microsoft.Compute/locations/communityGalleries/images/versions",
            "identifier": {
                "uniqueId": f"/CommunityGalleries/{gallery}/Images/{image}/Versions/{v['name']}"
            },
            "properties": {
                "publishedDate": v["publishedDate"],
                "excludeFromLatest": False,
                "storageProfile": {"osDiskImage": {"diskSizeGB": 30, "hostCaching": "ReadOnly"}},
            },
        }
        for v in versions
    ]
    return page(fake, path, query, items, fake.gallery_page_size)


def default_gallery_images() -> dict[tuple[str, str], list[JSON]]:
    """AKS's node images, three versions each; the newest is not listed last (the API lists in
    no particular order, the newest is found by publishedDate)."""
    versions = [
        {"name": "202405.20.0", "publishedDate": "2024-05-21T08:00:00+00:00"},
        {"name": "202406.07.0", "publishedDate": "2024-06-08T08:00:00+00:00"},
        {"name": "202404.16.0", "publishedDate": "2024-04-17T08:00:00+00:00"},
    ]
    definitions = [
        (UBUNTU_GALLERY, d)
        for d in (
            "2204gen2containerd",
            "2204containerd",
            "2204gen2arm64containerd",
            "2404gen2containerd",
            "2404containerd",
            "2404gen2arm64containerd",
        )
    ] + [
        (AZURE_LINUX_GALLERY, d)
        for d in ("V2gen2", "V2", "V2gen2arm64", "V3gen2", "V3", "V3gen2arm64")
    ]
    return {key: [dict(v) for v in versions] for key in definitions}


def default_node_image_versions() -> list[JSON]:
    """What AKS's NodeImageVersions API lists: two versions of each image definition of the
    AKSUbuntu and AKSAzureLinux galleries (listed oldest last) and an image of a gallery
    Karpenter does not use."""
    found: list[JSON] = []
    for os, skus in (
        ("AKSUbuntu", ("2204gen2containerd", "2204containerd", "2204gen2arm64containerd")),
        ("AKSAzureLinux", ("V2gen2", "V2", "V3gen2", "V3")),
    ):
        for sku in skus:
            for version in ("202511.03.0", "202509.21.1"):
                found.append(
                    {"fullName": f"{os}-{sku}-{version}", "os": os, "sku": sku, "version": version}
                )
    found.append(
        {
            "fullName": "AKSWindows-2022-202511.03.0",
            "os": "AKSWindows",
            "sku": "2022",
            "version": "202511.03.0",
        }
    )
    return found


def prices(fake: FakeAzure, query: dict[str, list[str]]) -> tuple[int, dict[str, str], JSON]:
    """The Retail Prices API: items of ``armRegionName eq '...'``, paged by ``$skip``."""
    text = query.get("$filter", [""])[0]
    region = re.search(r"armRegionName eq '([^']+)'", text)
    items = [i for i in fake.price_items if region is None or i["armRegionName"] == region.group(1)]
    skip = int(query.get("$skip", ["0"])[0])
    found = items[skip : skip + fake.price_page_size]
    more = skip + fake.price_page_size < len(items)
    next_link = None
    if more:
        params = {k: v[0] for k, v in query.items()}
        params["$skip"] = str(skip + fake.price_page_size)
        next_link = f"{fake.url}/api/retail/prices?{urlencode(params)}"
    return (
        200,
        {},
        {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": found,
            "NextPageLink": next_link,
            "Count": len(found),
        },
    )
