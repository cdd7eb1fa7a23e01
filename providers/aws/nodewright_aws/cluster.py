"""The cluster the nodes join: EKS DescribeCluster (once) and the Kubernetes version.

The options (``aws.kubernetes-version``, ``aws.cluster-endpoint`` ...) win; EKS fills the
rest. A cluster that is not EKS is remembered as such (an empty description).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import botocore.exceptions

from nodewright_aws.clients import AWSClients, error_code, error_text
from nodewright_aws.options import Settings

log = logging.getLogger(__name__)


class EKSCluster:
    """EKS DescribeCluster of the configured cluster, asked once."""

    def __init__(self, clients: AWSClients, settings: Settings, cluster_name: str) -> None:
        self.clients = clients
        self.settings = settings
        self.name = cluster_name
        self._description: dict[str, Any] | None = None

    def description(self) -> Mapping[str, Any]:
        """EKS DescribeCluster, once; empty when the cluster is not EKS (or not reachable).

        ``aws.eks-control-plane=false`` never asks; ``true`` says the cluster is EKS, so a
        cluster EKS does not know is a warning, asked again next time, not "not EKS"."""
        eks = self.settings.eks_control_plane
        if eks is False:
            return {}
        if self._description is None:
            try:
                self._description = dict(
                    self.clients.eks.describe_cluster(name=self.name)["cluster"]
                )
            except botocore.exceptions.ClientError as error:
                if eks:
                    log.warning(
                        "EKS DescribeCluster %s failed (aws.eks-control-plane=true): %s",
                        self.name,
                        error_text(error),
                    )
                    return {}
                log.info("EKS DescribeCluster %s: %s", self.name, error_text(error))
                if error_code(error) == "ResourceNotFoundException":
                    self._description = {}  # not an EKS cluster: the options are the only source
                return {}
        return self._description

    def kubernetes_version(self) -> str | None:
        if self.settings.kubernetes_version:
            return self.settings.kubernetes_version
        return str(self.description().get("version") or "") or None
