"""Bootstrap user data per AMI family, shaped as Karpenter's AWS provider generates it.

- AL2023: a MIME multipart archive whose first part is nodeadm's ``NodeConfig`` (cluster
  name, API server endpoint, CA, service CIDR; the kubelet config with ``maxPods``, the class's
  kubelet settings and ``registerWithTaints``; ``--node-labels`` as a kubelet flag), followed
  by the user's parts (a MIME archive's parts, or one NodeConfig / shell-script part).
- AL2: a MIME archive with the user's parts first, then the ``/etc/eks/bootstrap.sh`` script
  with ``--kubelet-extra-args`` (``--node-labels``, ``--register-with-taints``, ``--max-pods``
  and the kubelet settings).
- Bottlerocket: the user's TOML with Karpenter's ``settings.kubernetes`` written over it.
- Windows: the user's PowerShell, then ``Start-EKSBootstrap.ps1`` with the same arguments.
- Custom: the user's user data, unchanged.

The NodeClaim's labels and its taints, startup taints and ``karpenter.sh/unregistered`` go
into every generated form, so the node registers with them.
"""

from __future__ import annotations

import base64
import email
import email.message
import email.policy
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from nodewright.plugin import kubelet_flag, kubelet_flags
from nodewright_aws.nodeclass import KubeletConfiguration

BOUNDARY = "//"
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="us-ascii"'
UNREGISTERED_TAINT = ("karpenter.sh/unregistered", "", "NoExecute")
WINDOWS_BOOTSTRAP = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"


class UserDataError(ValueError):
    """The EC2NodeClass's ``spec.userData`` cannot be merged (names the field and why)."""


@dataclass(frozen=True)
class BootstrapOptions:
    """What a node needs to join: the cluster, the kubelet settings, labels and taints."""

    cluster_name: str
    cluster_endpoint: str = ""
    #: Base64 PEM of the cluster CA, as EKS DescribeCluster returns it.
    ca_bundle: str = ""
    #: Service CIDR (nodeadm's ``cluster.cidr``).
    cluster_cidr: str = ""
    max_pods: int | None = None
    kubelet: KubeletConfiguration | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    #: (key, value, effect), in order, without duplicates.
    taints: Sequence[tuple[str, str, str]] = ()
    custom: str = ""
    instance_store_policy: str | None = None


def claim_taints(
    taints: Sequence[Any], startup_taints: Sequence[Any]
) -> tuple[tuple[str, str, str], ...]:
    """taints + startupTaints + ``karpenter.sh/unregistered:NoExecute`` (once), Karpenter's set."""
    out: list[tuple[str, str, str]] = []
    for taint in [*taints, *startup_taints]:
        entry = (taint.key, taint.value or "", taint.effect)
        if entry not in out:
            out.append(entry)
    if not any(t[0] == UNREGISTERED_TAINT[0] and t[2] == UNREGISTERED_TAINT[2] for t in out):
        out.append(UNREGISTERED_TAINT)
    return tuple(out)


def generate(family: str, options: BootstrapOptions) -> str:
    """The user data (plain text, not base64) for ``family``."""
    if family == "AL2023":
        return _nodeadm(options)
    if family == "AL2":
        return _eks_bootstrap(options)
    if family == "Bottlerocket":
        return _bottlerocket(options)
    if family.startswith("Windows"):
        return _windows(options)
    return options.custom


# -- shared pieces -----------------------------------------------------------------------------


def _kubelet_map(kubelet: KubeletConfiguration | None) -> dict[str, Any]:
    """The class's kubelet settings as KubeletConfiguration JSON keys (unset ones left out)."""
    if kubelet is None:
        return {}
    return dict(kubelet.model_dump(mode="json", by_alias=True, exclude_none=True))


def _kubelet_args(options: BootstrapOptions) -> list[str]:
    """``--kubelet-extra-args`` content of bootstrap.sh and Start-EKSBootstrap.ps1."""
    k = options.kubelet or KubeletConfiguration()
    taints = [f"{key}={value}:{effect}" for key, value, effect in options.taints]
    return kubelet_flags(
        kubelet_flag("node-labels", options.labels),
        kubelet_flag("register-with-taints", taints),
        kubelet_flag("max-pods", options.max_pods),
        kubelet_flag("pods-per-core", k.pods_per_core),
        kubelet_flag("system-reserved", k.system_reserved),
        kubelet_flag("kube-reserved", k.kube_reserved),
        kubelet_flag("eviction-hard", k.eviction_hard, separator="<"),
        kubelet_flag("eviction-soft", k.eviction_soft, separator="<"),
        kubelet_flag("eviction-soft-grace-period", k.eviction_soft_grace_period),
        kubelet_flag("eviction-max-pod-grace-period", k.eviction_max_pod_grace_period),
        kubelet_flag("image-gc-high-threshold", k.image_gc_high_threshold_percent),
        kubelet_flag("image-gc-low-threshold", k.image_gc_low_threshold_percent),
        kubelet_flag("cpu-cfs-quota", k.cpu_cfs_quota),
    )


def _is_mime(text: str) -> bool:
    head = text.lstrip()
    return head.startswith(("MIME-Version:", "Content-Type:"))


def mime_parts(text: str) -> list[tuple[str, str]]:
    """(content type, body) of each part of a MIME multipart archive."""
    message = email.message_from_string(text.lstrip(), policy=email.policy.compat32)
    if not message.is_multipart():
        raise UserDataError("spec.userData: a MIME document must be multipart")
    parts = []
    for part in message.get_payload():
        if not isinstance(part, email.message.Message):
            continue
        payload = part.get_payload(decode=True)
        body = payload.decode("utf-8") if isinstance(payload, bytes) else str(part.get_payload())
        parts.append((part.get("Content-Type", SHELL_CONTENT_TYPE), body))
    return parts


def _archive(parts: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"--{BOUNDARY}\nContent-Type: {ct}\n\n{content}\n" for ct, content in parts)
    return (
        f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n'
        f"{body}--{BOUNDARY}--\n"
    )


# -- AL2023 (nodeadm) --------------------------------------------------------------------------


def node_config(options: BootstrapOptions) -> dict[str, Any]:
    cluster: dict[str, Any] = {"name": options.cluster_name}
    if options.cluster_endpoint:
        cluster["apiServerEndpoint"] = options.cluster_endpoint
    if options.ca_bundle:
        cluster["certificateAuthority"] = options.ca_bundle
    if options.cluster_cidr:
        cluster["cidr"] = options.cluster_cidr
    config = _kubelet_map(options.kubelet)
    if options.max_pods is not None:
        config["maxPods"] = options.max_pods
    if options.taints:
        config["registerWithTaints"] = [
            {"key": k, **({"value": v} if v else {}), "effect": e} for k, v, e in options.taints
        ]
    kubelet: dict[str, Any] = {"config": config}
    if options.labels:
        kubelet["flags"] = kubelet_flags(kubelet_flag("node-labels", options.labels))
    return {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"cluster": cluster, "kubelet": kubelet},
    }


def _nodeadm(options: BootstrapOptions) -> str:
    generated = "# Karpenter Generated NodeConfig\n" + yaml.safe_dump(
        node_config(options), sort_keys=False
    )
    parts = [(NODECONFIG_CONTENT_TYPE, generated)]
    custom = options.custom
    if custom.strip():
        if _is_mime(custom):
            parts += mime_parts(custom)
        else:
            try:
                is_yaml = isinstance(yaml.safe_load(custom), dict)
            except yaml.YAMLError:
                is_yaml = False
            parts.append((NODECONFIG_CONTENT_TYPE if is_yaml else SHELL_CONTENT_TYPE, custom))
    return _archive(parts)


# -- AL2 (bootstrap.sh) ------------------------------------------------------------------------


def _eks_bootstrap(options: BootstrapOptions) -> str:
    k = options.kubelet or KubeletConfiguration()
    lines = [
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
    ]
    command = f"/etc/eks/bootstrap.sh '{options.cluster_name}'"
    if options.cluster_endpoint:
        command += f" --apiserver-endpoint '{options.cluster_endpoint}'"
    if options.ca_bundle:
        command += f" --b64-cluster-ca '{options.ca_bundle}'"
    extra = []
    if k.cluster_dns:
        extra.append(f"--dns-cluster-ip '{k.cluster_dns[0]}'")
    if options.max_pods is not None:
        extra.append("--use-max-pods false")
    args = _kubelet_args(options)
    if args:
        extra.append(f"--kubelet-extra-args '{' '.join(args)}'")
    if options.instance_store_policy == "RAID0":
        extra.append("--local-disks raid0")
    script = "\n".join(lines) + "\n" + " \\\n".join([command, *extra]) + "\n"
    parts: list[tuple[str, str]] = []
    if options.custom.strip():
        parts += (
            mime_parts(options.custom)
            if _is_mime(options.custom)
            else [(SHELL_CONTENT_TYPE, options.custom)]
        )
    parts.append((SHELL_CONTENT_TYPE, script))
    return _archive(parts)


# -- Bottlerocket (TOML) -----------------------------------------------------------------------


def _bottlerocket(options: BootstrapOptions) -> str:
    try:
        document: dict[str, Any] = tomllib.loads(options.custom) if options.custom else {}
    except tomllib.TOMLDecodeError as error:
        raise UserDataError(f"spec.userData: not valid TOML for Bottlerocket: {error}") from None
    settings = document.setdefault("settings", {})
    if not isinstance(settings, dict):
        raise UserDataError("spec.userData: 'settings' must be a table")
    autoscaling = settings.get("autoscaling")
    if isinstance(autoscaling, dict) and "should-wait" in autoscaling:
        autoscaling["should-wait"] = False  # no Auto Scaling group would ever answer
    kubernetes = settings.setdefault("kubernetes", {})
    kubernetes["cluster-name"] = options.cluster_name
    kubernetes["api-server"] = options.cluster_endpoint
    if options.ca_bundle:
        kubernetes["cluster-certificate"] = options.ca_bundle
    labels = dict(kubernetes.get("node-labels") or {})
    labels.update(options.labels)
    if labels:
        kubernetes["node-labels"] = labels
    if options.max_pods is not None:
        kubernetes["max-pods"] = options.max_pods
    k = options.kubelet
    if k is not None:
        if k.cluster_dns:
            kubernetes["cluster-dns-ip"] = k.cluster_dns[0]
        for key, value in (
            ("system-reserved", k.system_reserved),
            ("kube-reserved", k.kube_reserved),
            ("eviction-hard", k.eviction_hard),
            ("eviction-soft", k.eviction_soft),
            ("eviction-soft-grace-period", k.eviction_soft_grace_period),
        ):
            if value is not None:
                kubernetes[key] = dict(value)
        if k.eviction_max_pod_grace_period is not None:
            kubernetes["eviction-max-pod-grace-period"] = k.eviction_max_pod_grace_period
        if k.image_gc_high_threshold_percent is not None:
            kubernetes["image-gc-high-threshold-percent"] = str(k.image_gc_high_threshold_percent)
        if k.image_gc_low_threshold_percent is not None:
            kubernetes["image-gc-low-threshold-percent"] = str(k.image_gc_low_threshold_percent)
        if k.cpu_cfs_quota is not None:
            kubernetes["cpu-cfs-quota-enforced"] = k.cpu_cfs_quota
    taint_table: dict[str, list[str]] = {}
    for taint_key, taint_value, effect in options.taints:
        taint_table.setdefault(taint_key, []).append(f"{taint_value}:{effect}")
    kubernetes["node-taints"] = taint_table
    if options.instance_store_policy == "RAID0":
        commands = settings.setdefault("bootstrap-commands", {})
        commands["000-mount-instance-storage"] = {
            "commands": [
                ["apiclient", "ephemeral-storage", "init"],
                [
                    "apiclient",
                    "ephemeral-storage",
                    "bind",
                    "--dirs",
                    "/var/lib/containerd",
                    "/var/lib/kubelet",
                    "/var/log/pods",
                ],
            ],
            "essential": True,
            "mode": "always",
        }
    return dump_toml(document)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise UserDataError(f"spec.userData: cannot write TOML value {value!r}")


def _toml_key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum()
    return key if bare else json.dumps(key)


def dump_toml(document: Mapping[str, Any], prefix: str = "") -> str:
    """Tables as ``[a.b]`` sections, scalars and lists inline (enough for Bottlerocket)."""
    scalars = [(k, v) for k, v in document.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in document.items() if isinstance(v, dict)]
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars]
    out = ""
    if prefix and (lines or not tables):
        out += f"[{prefix}]\n"
    if lines:
        out += "\n".join(lines) + "\n\n"
    elif prefix and not tables:
        out += "\n"
    for key, table in tables:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        # label/taint maps and the like are leaf tables: keep them as their own section
        out += dump_toml(table, name)
    return out


# -- Windows (PowerShell) ----------------------------------------------------------------------


def _windows(options: BootstrapOptions) -> str:
    custom = options.custom.strip()
    if custom.startswith("<powershell>") and custom.endswith("</powershell>"):
        custom = custom.removeprefix("<powershell>").removesuffix("</powershell>").strip()
    command = (
        "& $EKSBootstrapScriptFile -EKSClusterName "
        f"'{options.cluster_name}' -APIServerEndpoint '{options.cluster_endpoint}'"
    )
    if options.ca_bundle:
        command += f" -Base64ClusterCA '{options.ca_bundle}'"
    args = _kubelet_args(options)
    if args:
        command += f" -KubeletExtraArgs '{' '.join(args)}'"
    k = options.kubelet
    if k is not None and k.cluster_dns:
        command += f" -DNSClusterIP '{k.cluster_dns[0]}'"
    lines = ["<powershell>"]
    if custom:
        lines.append(custom)
    lines += [
        f'[string]$EKSBootstrapScriptFile = "{WINDOWS_BOOTSTRAP}"',
        command,
        "</powershell>",
    ]
    return "\n".join(lines) + "\n"


def encode(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
