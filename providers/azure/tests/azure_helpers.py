from __future__ import annotations

import time
from typing import Any

from azure.core.credentials import AccessToken

from nodewright_azure.nodeclass import AKSNodeClass
from providers.azure.tests.fake_azure import FakeAzure

RESOURCE_GROUP = "MC_rg_cluster_japaneast"
SUBNET = (
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/"
    f"{RESOURCE_GROUP}/providers/Microsoft.Network/virtualNetworks/aks-vnet-1/subnets/aks-subnet"
)


class FakeTokenCredential:
    """A credential whose tokens the fake ARM accepts (auth itself is tested apart)."""

    def __init__(self, fake: FakeAzure) -> None:
        self.fake = fake
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.calls += 1
        return AccessToken(self.fake.issue_token(), int(time.time()) + 3600)


def fake_options(fake: FakeAzure, **extra: str) -> dict[str, str]:
    return {
        "subscription-id": fake.subscription,
        "resource-group": RESOURCE_GROUP,
        "location": fake.region,
        "cluster-name": "aks-test",
        "arm-endpoint": fake.url,
        "prices-endpoint": fake.url,
        "ca-bundle": str(fake.ca_file),
        "vnet-subnet-id": SUBNET,
        "polling-interval": "0",
        "retry-backoff": "0",
        **{k.replace("_", "-"): v for k, v in extra.items()},
    }


def node_class(**spec: Any) -> AKSNodeClass:
    return AKSNodeClass.model_validate({"metadata": {"name": "default"}, "spec": spec})
