"""The HTTP client, from a kubeconfig file or the pod's service account: the only module that
imports the ``kubernetes`` client. Credentials live in the client's configuration and are
never logged."""

from __future__ import annotations

from typing import Any

import urllib3
import yaml

from nodewright.cluster import ClusterError


def api_client(kubeconfig: str | None, context: str | None, in_cluster: bool | None) -> Any:
    """A ``kubernetes.client.ApiClient`` for ``kubeconfig`` (and ``context``), the in-cluster
    service account (``in_cluster``), or, when neither is said, the service account if there
    is one and ``~/.kube/config`` otherwise. Raises ClusterError when none loads."""
    # Imported here: the client takes a third of a second to import, and only this needs it
    # (``nodewright simulate`` never does).
    from kubernetes import client as kube_client  # noqa: PLC0415
    from kubernetes import config as untyped_config  # noqa: PLC0415

    kube_config: Any = untyped_config  # the config loaders are untyped
    configuration = kube_client.Configuration()
    try:
        if kubeconfig or in_cluster is False:
            kube_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        elif in_cluster:
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            try:
                kube_config.load_incluster_config(client_configuration=configuration)
            except kube_config.ConfigException:
                kube_config.load_kube_config(context=context, client_configuration=configuration)
    except (kube_config.ConfigException, OSError, ValueError, yaml.YAMLError) as error:
        where = kubeconfig or "the in-cluster service account or ~/.kube/config"
        raise ClusterError(f"cannot load Kubernetes credentials from {where}: {error}") from None
    # Retries are ours (rate limit aware); urllib3 only retries failed connects.
    configuration.retries = urllib3.Retry(
        total=None,
        connect=1,
        read=0,
        redirect=0,
        status=0,
        other=0,
        respect_retry_after_header=False,
        raise_on_status=False,
    )
    configuration.client_go_retries = False
    return kube_client.ApiClient(configuration)
