"""The Azure provider's options (``--provider-option azure.<name>=<value>``).

Parsing does no I/O and needs no credentials: options that are missing are reported when the
provider first needs them (:meth:`Settings.require`), so the plugin loads anywhere.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SUBSCRIPTION_ID = "subscription-id"
RESOURCE_GROUP = "resource-group"
LOCATION = "location"
CLUSTER_NAME = "cluster-name"
ARM_ENDPOINT = "arm-endpoint"
AUTHORITY_HOST = "authority-host"
PRICES_ENDPOINT = "prices-endpoint"
PRICING = "pricing"
AUTH_MODE = "auth-mode"
TENANT_ID = "tenant-id"
CLIENT_ID = "client-id"
CLIENT_SECRET_FILE = "client-secret-file"
TOKEN_FILE = "federated-token-file"
CA_BUNDLE = "ca-bundle"
VNET_SUBNET_ID = "vnet-subnet-id"
NETWORK_PLUGIN = "network-plugin"
VM_MEMORY_OVERHEAD = "vm-memory-overhead-percent"
POLLING_INTERVAL = "polling-interval"
LAUNCH_WAIT = "launch-wait"
RETRY_BACKOFF = "retry-backoff"
IMAGE_ID = "image-id"
SSH_PUBLIC_KEY = "ssh-public-key"
ADMIN_USERNAME = "admin-username"
KUBERNETES_VERSION = "kubernetes-version"
NIC_GC_GRACE = "nic-gc-grace"
CLUSTER_ENDPOINT = "cluster-endpoint"
CLUSTER_CA_FILE = "cluster-ca-file"
BOOTSTRAP_TOKEN_FILE = "bootstrap-token-file"
DNS_SERVICE_IP = "dns-service-ip"
OFFLINE = "offline"
PROVISION_MODE = "provision-mode"
MANAGE_EXISTING_AKS_MACHINES = "manage-existing-aks-machines"
AKS_MACHINES_POOL_NAME = "aks-machines-pool-name"
CLUSTER_RESOURCE_GROUP = "cluster-resource-group"
USE_SIG = "use-sig"
SIG_SUBSCRIPTION_ID = "sig-subscription-id"
NETWORK_POLICY = "network-policy"
NETWORK_DATAPLANE = "network-dataplane"
KUBELET_IDENTITY_CLIENT_ID = "kubelet-identity-client-id"
NODEBOOTSTRAPPING_SERVER_URL = "nodebootstrapping-server-url"
BATCH_IDLE = "provider-batch-idle-duration"
BATCH_MAX = "provider-batch-max-duration"
BATCH_SIZE = "provider-batch-max-size"

OPTIONS = (
    OFFLINE,
    PROVISION_MODE,
    MANAGE_EXISTING_AKS_MACHINES,
    AKS_MACHINES_POOL_NAME,
    CLUSTER_RESOURCE_GROUP,
    USE_SIG,
    SIG_SUBSCRIPTION_ID,
    NETWORK_POLICY,
    NETWORK_DATAPLANE,
    KUBELET_IDENTITY_CLIENT_ID,
    NODEBOOTSTRAPPING_SERVER_URL,
    BATCH_IDLE,
    BATCH_MAX,
    BATCH_SIZE,
    SUBSCRIPTION_ID,
    RESOURCE_GROUP,
    LOCATION,
    CLUSTER_NAME,
    ARM_ENDPOINT,
    AUTHORITY_HOST,
    PRICES_ENDPOINT,
    PRICING,
    AUTH_MODE,
    TENANT_ID,
    CLIENT_ID,
    CLIENT_SECRET_FILE,
    TOKEN_FILE,
    CA_BUNDLE,
    VNET_SUBNET_ID,
    NETWORK_PLUGIN,
    VM_MEMORY_OVERHEAD,
    POLLING_INTERVAL,
    LAUNCH_WAIT,
    RETRY_BACKOFF,
    IMAGE_ID,
    SSH_PUBLIC_KEY,
    ADMIN_USERNAME,
    KUBERNETES_VERSION,
    NIC_GC_GRACE,
    CLUSTER_ENDPOINT,
    CLUSTER_CA_FILE,
    BOOTSTRAP_TOKEN_FILE,
    DNS_SERVICE_IP,
)

#: Options that name a server or an identity: meaningless, so refused, with ``offline``.
ONLINE_ONLY = (
    ARM_ENDPOINT,
    AUTHORITY_HOST,
    PRICES_ENDPOINT,
    AUTH_MODE,
    TENANT_ID,
    CLIENT_ID,
    CLIENT_SECRET_FILE,
    TOKEN_FILE,
    CA_BUNDLE,
)
#: What ``offline`` fills in when the options leave it unset.
OFFLINE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
OFFLINE_RESOURCE_GROUP = "nodewright-offline"
OFFLINE_SUBNET = (
    "/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/"
    "virtualNetworks/nodewright-offline/subnets/nodes"
)

AUTH_MODES = ("default", "workload-identity", "client-secret", "managed-identity")
#: How nodes are made (Karpenter Azure's PROVISION_MODE): a NIC and a VM with a scriptless
#: bootstrap; the same with custom data from the node bootstrapping server; or AKS machines
#: in an agent pool (one PUT each, or batched per template).
SCRIPTLESS = "aksscriptless"
BOOTSTRAPPING_CLIENT = "bootstrappingclient"
MACHINE_API = "aksmachineapi"
MACHINE_API_BATCH = "aksmachineapiheaderbatch"
PROVISION_MODES = (SCRIPTLESS, BOOTSTRAPPING_CLIENT, MACHINE_API, MACHINE_API_BATCH)
NETWORK_DATAPLANES = ("azure", "cilium", "")
#: The AKS machine API's limit of machines in one batched PUT.
MAX_BATCH = 50
#: Default maxPods by network plugin (Karpenter's ``GetMaxPods``).
NETWORK_PLUGINS = {"azure-overlay": 250, "azure": 30, "none": 250, "kubenet": 110}


class SettingsError(ValueError):
    """An option is missing or invalid; the message names it."""


@dataclass(frozen=True)
class Settings:
    subscription_id: str = ""
    resource_group: str = ""
    location: str = ""
    cluster_name: str = ""
    arm_endpoint: str = "https://management.azure.com"
    authority_host: str = "login.microsoftonline.com"
    prices_endpoint: str = "https://prices.azure.com"
    pricing: str = "api"
    auth_mode: str = "default"
    tenant_id: str = ""
    client_id: str = ""
    client_secret_file: str = field(default="", repr=False)
    federated_token_file: str = ""
    ca_bundle: str = ""
    vnet_subnet_id: str = ""
    network_plugin: str = "azure-overlay"
    vm_memory_overhead: float = 0.075
    polling_interval: float = 3.0
    #: How long launch waits for the VM create before returning it as pending.
    launch_wait: float = 30.0
    retry_backoff: float = 0.8
    #: Pins every VM to this image; empty: resolve the image family through the Community
    #: Gallery image-versions API.
    image_id: str = ""
    ssh_public_key: str = ""
    admin_username: str = "azureuser"
    #: The cluster's Kubernetes version (``status.kubernetesVersion``; picks Azure Linux 2/3).
    kubernetes_version: str = ""
    #: How long a NIC without a VM is left alone before garbage collection deletes it.
    nic_gc_grace: float = 180.0
    #: Node bootstrap: the API server nodes join, its CA (PEM file), the TLS bootstrap token
    #: (file; never on the command line, never logged) and the cluster DNS service IP.
    cluster_endpoint: str = ""
    cluster_ca_file: str = ""
    bootstrap_token_file: str = field(default="", repr=False)
    dns_service_ip: str = "10.0.0.10"
    #: ``azure.offline=LOCATION``: every Azure call is answered in-process from the bundled
    #: catalog of that location (nodewright_azure.offline); no server, no identity.
    offline: bool = False
    provision_mode: str = SCRIPTLESS
    #: AKS machines a machine-API mode made stay managed (listed, read, deleted) in VM modes.
    manage_existing_aks_machines: bool = False
    #: The agent pool AKS machines are made in, and the AKS cluster's own resource group.
    aks_machines_pool_name: str = ""
    cluster_resource_group: str = ""
    #: Node images from AKS's shared image galleries (NodeImageVersions API), not community
    #: galleries; the galleries' subscription.
    use_sig: bool = False
    sig_subscription_id: str = ""
    #: The cluster's network policy and dataplane, as the node bootstrap and labels need them.
    network_policy: str = ""
    network_dataplane: str = "cilium"
    #: The kubelet identity's client ID: node label, bootstrap, KubeletIdentityDrift.
    kubelet_identity_client_id: str = ""
    node_bootstrapping_server_url: str = ""
    #: AKS machine creates of one template are batched until idle this long, at most this
    #: long, and at most this many (``aksmachineapiheaderbatch``).
    batch_idle: float = 1.0
    batch_max: float = 5.0
    batch_size: int = MAX_BATCH

    @property
    def machine_api(self) -> bool:
        return self.provision_mode in (MACHINE_API, MACHINE_API_BATCH)

    @property
    def aks_machines_visible(self) -> bool:
        """AKS machines are this provider's to list, read and delete."""
        return (self.machine_api or self.manage_existing_aks_machines) and bool(
            self.aks_machines_pool_name
        )

    @property
    def default_max_pods(self) -> int:
        return NETWORK_PLUGINS[self.network_plugin]

    def missing(self) -> list[str]:
        """The required options not given."""
        wanted = {
            SUBSCRIPTION_ID: self.subscription_id,
            RESOURCE_GROUP: self.resource_group,
            LOCATION: self.location,
        }
        return [name for name, value in wanted.items() if not value]

    def require(self) -> None:
        missing = self.missing()
        if missing:
            raise SettingsError(
                "the azure provider needs "
                + ", ".join(f"--provider-option azure.{name}=..." for name in missing)
            )


def parse_settings(options: Mapping[str, str], cluster_name: str = "") -> Settings:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SettingsError(
            f"unknown azure option {unknown[0]!r}; known options: {', '.join(OPTIONS)}"
        )
    values = {k: v.strip() for k, v in options.items()}
    if values.get(OFFLINE):
        values = _offline_values(values)
    auth_mode = values.get(AUTH_MODE, "default") or "default"
    if auth_mode not in AUTH_MODES:
        raise SettingsError(f"{AUTH_MODE}: {auth_mode!r} is not one of {', '.join(AUTH_MODES)}")
    pricing = values.get(PRICING, "api") or "api"
    if pricing not in ("api", "static"):
        raise SettingsError(f"{PRICING}: {pricing!r} is not 'api' or 'static'")
    plugin = values.get(NETWORK_PLUGIN, "azure-overlay") or "azure-overlay"
    if plugin not in NETWORK_PLUGINS:
        raise SettingsError(
            f"{NETWORK_PLUGIN}: {plugin!r} is not one of {', '.join(NETWORK_PLUGINS)}"
        )
    for name in (ARM_ENDPOINT, PRICES_ENDPOINT, NODEBOOTSTRAPPING_SERVER_URL):
        if values.get(name) and not values[name].startswith("https://"):
            raise SettingsError(f"{name}: {values[name]!r} must be an https:// URL")
    machine = _machine_settings(values)
    return Settings(
        subscription_id=values.get(SUBSCRIPTION_ID, ""),
        resource_group=values.get(RESOURCE_GROUP, ""),
        location=values.get(LOCATION, "").lower(),
        cluster_name=values.get(CLUSTER_NAME, "") or cluster_name,
        arm_endpoint=values.get(ARM_ENDPOINT) or Settings.arm_endpoint,
        authority_host=values.get(AUTHORITY_HOST) or Settings.authority_host,
        prices_endpoint=values.get(PRICES_ENDPOINT) or Settings.prices_endpoint,
        pricing=pricing,
        auth_mode=auth_mode,
        tenant_id=values.get(TENANT_ID, ""),
        client_id=values.get(CLIENT_ID, ""),
        client_secret_file=values.get(CLIENT_SECRET_FILE, ""),
        federated_token_file=values.get(TOKEN_FILE, ""),
        ca_bundle=values.get(CA_BUNDLE, ""),
        vnet_subnet_id=values.get(VNET_SUBNET_ID, ""),
        network_plugin=plugin,
        vm_memory_overhead=_fraction(values, VM_MEMORY_OVERHEAD, 0.075),
        polling_interval=_seconds(values, POLLING_INTERVAL, 3.0),
        launch_wait=_seconds(values, LAUNCH_WAIT, 30.0),
        retry_backoff=_seconds(values, RETRY_BACKOFF, 0.8),
        image_id=values.get(IMAGE_ID, ""),
        ssh_public_key=values.get(SSH_PUBLIC_KEY, ""),
        admin_username=values.get(ADMIN_USERNAME) or "azureuser",
        kubernetes_version=_kubernetes_version(values.get(KUBERNETES_VERSION, "")),
        nic_gc_grace=_seconds(values, NIC_GC_GRACE, 180.0),
        cluster_endpoint=values.get(CLUSTER_ENDPOINT, ""),
        cluster_ca_file=values.get(CLUSTER_CA_FILE, ""),
        bootstrap_token_file=values.get(BOOTSTRAP_TOKEN_FILE, ""),
        dns_service_ip=values.get(DNS_SERVICE_IP) or "10.0.0.10",
        offline=bool(values.get(OFFLINE)),
        **machine,
    )


def _machine_settings(values: Mapping[str, str]) -> dict[str, Any]:
    """The provision mode, AKS machine, image gallery, network and identity options, checked
    as Karpenter Azure checks them."""
    mode = values.get(PROVISION_MODE) or SCRIPTLESS
    if mode not in PROVISION_MODES:
        raise SettingsError(
            f"{PROVISION_MODE}: {mode!r} is not one of {', '.join(PROVISION_MODES)}"
        )
    use_sig = _flag(values, USE_SIG)
    pool = values.get(AKS_MACHINES_POOL_NAME, "")
    if mode == BOOTSTRAPPING_CLIENT and not values.get(NODEBOOTSTRAPPING_SERVER_URL):
        raise SettingsError(
            f"{NODEBOOTSTRAPPING_SERVER_URL} is required when {PROVISION_MODE} is {mode}"
        )
    if mode == BOOTSTRAPPING_CLIENT and values.get(OFFLINE):
        raise SettingsError(
            f"{OFFLINE} and {PROVISION_MODE}={mode} conflict: the offline cloud has no node "
            "bootstrapping server; simulate with the default provision mode"
        )
    if mode in (MACHINE_API, MACHINE_API_BATCH):
        if values.get(OFFLINE):
            raise SettingsError(
                f"{OFFLINE} and {PROVISION_MODE}={mode} conflict: the offline cloud has no AKS "
                "machine API; simulate with the default provision mode"
            )
        if not pool:
            raise SettingsError(
                f"{AKS_MACHINES_POOL_NAME} is required when {PROVISION_MODE} is {mode}"
            )
        if not use_sig:
            raise SettingsError(f"{USE_SIG} must be true when {PROVISION_MODE} is {mode}")
    elif use_sig and not values.get(SIG_SUBSCRIPTION_ID):
        raise SettingsError(f"{SIG_SUBSCRIPTION_ID} is required when {USE_SIG} is true")
    dataplane = values.get(NETWORK_DATAPLANE, "cilium")
    if dataplane not in NETWORK_DATAPLANES:
        raise SettingsError(
            f"{NETWORK_DATAPLANE}: {dataplane!r} is not a valid network dataplane "
            "('azure', 'cilium' or empty)"
        )
    identity = values.get(KUBELET_IDENTITY_CLIENT_ID, "")
    if identity:
        try:
            uuid.UUID(identity)
        except ValueError:
            raise SettingsError(
                f"{KUBELET_IDENTITY_CLIENT_ID}: {identity!r} is malformed"
            ) from None
    size_text = values.get(BATCH_SIZE) or str(MAX_BATCH)
    if not size_text.isdigit() or not 1 <= int(size_text) <= MAX_BATCH:
        raise SettingsError(f"{BATCH_SIZE} must be between 1 and {MAX_BATCH}, got {size_text}")
    idle = _seconds(values, BATCH_IDLE, 1.0)
    longest = _seconds(values, BATCH_MAX, 5.0)
    if longest < idle:
        raise SettingsError(f"{BATCH_MAX} ({longest}s) must be >= {BATCH_IDLE} ({idle}s)")
    return {
        "provision_mode": mode,
        "manage_existing_aks_machines": _flag(values, MANAGE_EXISTING_AKS_MACHINES),
        "aks_machines_pool_name": pool,
        "cluster_resource_group": values.get(CLUSTER_RESOURCE_GROUP, ""),
        "use_sig": use_sig,
        "sig_subscription_id": values.get(SIG_SUBSCRIPTION_ID, ""),
        "network_policy": values.get(NETWORK_POLICY, ""),
        "network_dataplane": dataplane,
        "kubelet_identity_client_id": identity,
        "node_bootstrapping_server_url": values.get(NODEBOOTSTRAPPING_SERVER_URL, ""),
        "batch_idle": idle,
        "batch_max": longest,
        "batch_size": int(size_text),
    }


def _flag(values: Mapping[str, str], name: str) -> bool:
    text = values.get(name, "").lower()
    if text in ("", "0", "f", "false"):
        return False
    if text in ("1", "t", "true"):
        return True
    raise SettingsError(f"{name}: {values[name]!r} is not true or false")


def _offline_values(values: Mapping[str, str]) -> dict[str, str]:
    """The options of an offline run: its location checked against the bundled catalog,
    server and identity options refused, the rest of what Azure would need filled in."""
    from nodewright_azure.offline.catalog import load_catalog  # noqa: PLC0415

    location = values[OFFLINE].lower()
    locations = load_catalog().locations
    if location not in locations:
        raise SettingsError(
            f"{OFFLINE}: no bundled catalog for location {location!r}; "
            f"available: {', '.join(locations)}"
        )
    conflicting = [name for name in ONLINE_ONLY if values.get(name)]
    if conflicting:
        raise SettingsError(
            f"{OFFLINE} and {conflicting[0]} conflict: offline mode talks to no server and "
            f"uses no identity; drop azure.{conflicting[0]} or azure.{OFFLINE}"
        )
    if values.get(LOCATION) and values[LOCATION].lower() != location:
        raise SettingsError(
            f"{OFFLINE}={location} and {LOCATION}={values[LOCATION]} conflict: offline mode "
            f"simulates the location it names; drop azure.{LOCATION}"
        )
    subscription = values.get(SUBSCRIPTION_ID) or OFFLINE_SUBSCRIPTION
    group = values.get(RESOURCE_GROUP) or OFFLINE_RESOURCE_GROUP
    return {
        **values,
        LOCATION: location,
        SUBSCRIPTION_ID: subscription,
        RESOURCE_GROUP: group,
        VNET_SUBNET_ID: values.get(VNET_SUBNET_ID)
        or OFFLINE_SUBNET.format(subscription=subscription, group=group),
        POLLING_INTERVAL: values.get(POLLING_INTERVAL) or "0",
        RETRY_BACKOFF: values.get(RETRY_BACKOFF) or "0",
    }


def _kubernetes_version(text: str) -> str:
    version = text.removeprefix("v")
    if version and not re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", version):
        raise SettingsError(f"{KUBERNETES_VERSION}: {text!r} is not a version such as 1.30.3")
    return version


def _fraction(values: Mapping[str, str], name: str, default: float) -> float:
    text = values.get(name, "")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise SettingsError(f"{name}: {text!r} is not a number") from None
    if not 0 <= value < 1:
        raise SettingsError(f"{name}: {text!r} must be a fraction between 0 and 1, e.g. 0.075")
    return value


def _seconds(values: Mapping[str, str], name: str, default: float) -> float:
    text = values.get(name, "").removesuffix("s")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise SettingsError(f"{name}: {values[name]!r} is not a number of seconds") from None
    if value < 0:
        raise SettingsError(f"{name}: must not be negative")
    return value
