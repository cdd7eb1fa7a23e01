"""What every VM of a launch is made with besides its size and zone (Karpenter Azure's
launchtemplate provider): the tags, and the node bootstrap (custom data) built from the
cluster options, the AKSNodeClass's kubelet settings and the NodeClaim's labels and taints;
under ``bootstrappingclient``, the custom data and extension command the node bootstrapping
server gives for them."""

from __future__ import annotations

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
    InstanceType,
    LaunchRequest,
    NodeClassNotReadyError,
    Offering,
)
from nodewright_azure import bootstrap, nodebootstrapping, skus
from nodewright_azure import labels as L
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.options import Settings


def read_option_file(path: str, option: str) -> str:
    """The stripped text of the file an ``azure.<option>`` names ("" when none is named)."""
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except OSError as error:
        raise NodeClassNotReadyError(
            f"azure.{option}: cannot read {path}: {error.strerror}"
        ) from None


class LaunchTemplateProvider:
    def __init__(
        self,
        settings: Settings,
        bootstrapping: nodebootstrapping.NodeBootstrappingClient | None = None,
    ) -> None:
        self.settings = settings
        #: The node bootstrapping server's client (``bootstrappingclient`` only).
        self.bootstrapping = bootstrapping

    def tags(self, request: LaunchRequest, spec: AKSNodeClassSpec) -> dict[str, str]:
        """The NIC's and VM's tags: the class's (``/`` as ``_``), then nodewright's own."""
        node_pool = request.node_claim.metadata.labels.get(NODEPOOL_LABEL, "")
        tags = {k.replace("/", "_"): v for k, v in spec.tags.items()}
        tags.update(
            {
                L.TAG_CLUSTER: self.settings.cluster_name,
                L.TAG_BILLING: "linux",
                L.TAG_NODEPOOL: node_pool,
                L.TAG_NODECLAIM: request.node_claim.name,
                L.TAG_NODECLAIM_UID: request.idempotency_key,
                L.TAG_NODECLASS: request.node_class.name,
            }
        )
        return tags

    def labels(
        self,
        *,
        request: LaunchRequest,
        spec: AKSNodeClassSpec,
        instance_type: InstanceType,
        offering: Offering,
        sku: skus.Sku | None,
    ) -> dict[str, str]:
        """The node's labels: the size's, the offering's, AKS's, then the NodeClaim's."""
        settings = self.settings
        labels: dict[str, str] = {}
        if sku is not None:
            labels.update(skus.sku_labels(sku, spec))
        labels.update(
            {
                INSTANCE_TYPE_LABEL: instance_type.name,
                ZONE_LABEL: offering.zone,
                CAPACITY_TYPE_LABEL: offering.capacity_type,
                REGION_LABEL: settings.location,
                **L.aks_node_labels(
                    settings.resource_group,
                    settings.network_plugin,
                    spec.vnet_subnet_id or settings.vnet_subnet_id,
                    dataplane=settings.network_dataplane,
                    kubelet_identity=settings.kubelet_identity_client_id,
                ),
            }
        )
        labels.update(request.node_claim.metadata.labels)
        return labels

    def custom_data(
        self,
        name: str,
        *,
        request: LaunchRequest,
        spec: AKSNodeClassSpec,
        instance_type: InstanceType,
        offering: Offering,
        sku: skus.Sku | None,
    ) -> str:
        """The node bootstrap (base64) for this VM: cluster settings from the options, kubelet
        flags from the NodeClass, the NodeClaim's labels and taints."""
        settings = self.settings
        cluster = bootstrap.ClusterBootstrap(
            cluster_name=settings.cluster_name,
            endpoint=settings.cluster_endpoint,
            ca_pem=read_option_file(settings.cluster_ca_file, "cluster-ca-file"),
            bootstrap_token=read_option_file(settings.bootstrap_token_file, "bootstrap-token-file"),
            kubernetes_version=settings.kubernetes_version,
            network_plugin=settings.network_plugin,
            dns_service_ip=settings.dns_service_ip,
            subscription_id=settings.subscription_id,
            resource_group=settings.resource_group,
            location=settings.location,
            tenant_id=settings.tenant_id,
            subnet_id=spec.vnet_subnet_id or settings.vnet_subnet_id,
            network_policy=settings.network_policy,
            kubelet_identity_client_id=settings.kubelet_identity_client_id,
        )
        claim = request.node_claim
        node = bootstrap.NodeBootstrap(
            node_name=name,
            labels=self.labels(
                request=request,
                spec=spec,
                instance_type=instance_type,
                offering=offering,
                sku=sku,
            ),
            taints=bootstrap.register_taints(claim.spec.taints, claim.spec.startup_taints),
            max_pods=spec.max_pods or settings.default_max_pods,
            kube_reserved_cpu_millis=skus.kube_reserved_cpu_millis(sku.cpus) if sku else 0,
            kube_reserved_memory_mib=skus.kube_reserved_memory_mib(sku.memory_gib) if sku else 0,
            kubelet=spec.kubelet,
            arch=skus.arch(sku) if sku else "amd64",
        )
        return bootstrap.custom_data(cluster, node)

    def custom_scripts(
        self,
        *,
        request: LaunchRequest,
        spec: AKSNodeClassSpec,
        instance_type: InstanceType,
        offering: Offering,
        sku: skus.Sku | None,
        image_id: str,
    ) -> tuple[str, str]:
        """Under ``bootstrappingclient``: the VM's custom data and its extension's command,
        from the node bootstrapping server."""
        if self.bootstrapping is None:
            raise NodeClassNotReadyError("the node bootstrapping client is not configured")
        claim = request.node_claim
        taints = tuple(claim.spec.taints)
        every = bootstrap.register_taints(taints, claim.spec.startup_taints)
        values = nodebootstrapping.provision_values(
            settings=self.settings,
            spec=spec,
            instance_type=instance_type,
            sku=sku,
            image_id=image_id,
            labels=self.labels(
                request=request,
                spec=spec,
                instance_type=instance_type,
                offering=offering,
                sku=sku,
            ),
            taints=taints,
            startup_taints=every[len(taints) :],
            max_pods=spec.max_pods or self.settings.default_max_pods,
        )
        token = read_option_file(self.settings.bootstrap_token_file, "bootstrap-token-file")
        return self.bootstrapping.get(values, token)
