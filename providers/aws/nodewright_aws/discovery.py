"""Discovery: an EC2NodeClass's selectors resolved into subnets, security groups, AMIs and an
instance profile (Karpenter's subnet, securitygroup, amifamily and instanceprofile providers
and its nodeclass status controller), with Ready only when all resolve and a message naming
the field that did not. :class:`NodeClassDiscovery` keeps each class's result for a minute."""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import botocore.exceptions

from nodewright.plugin import (
    ARCH_LABEL,
    InstanceType,
    NodeClassNotReadyError,
    Requirement,
    Requirements,
    TemporaryProviderError,
)
from nodewright_aws.clients import (
    AWSClients,
    MissingConfigurationError,
    aws_errors,
    error_code,
    error_text,
)
from nodewright_aws.cluster import EKSCluster
from nodewright_aws.labels import INSTANCE_ACCELERATOR_COUNT, INSTANCE_GPU_COUNT
from nodewright_aws.nodeclass import AMISelectorTerm, EC2NodeClass

log = logging.getLogger(__name__)

_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
#: How long a class's resolution is reused before EC2 is asked again.
RESOLUTION_TTL = timedelta(minutes=1)


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str
    zone_id: str
    available_ips: int = 0

    def status(self) -> dict[str, str]:
        return {"id": self.id, "zone": self.zone, "zoneID": self.zone_id}


@dataclass(frozen=True)
class AMI:
    id: str
    name: str
    #: (key, operator, values) node-selector requirements: which types may use it.
    requirements: tuple[tuple[str, str, tuple[str, ...]], ...]
    creation_date: str = ""
    deprecated: bool = False

    def status(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            **({"deprecated": True} if self.deprecated else {}),
            "requirements": [
                {"key": k, "operator": op, **({"values": list(v)} if v else {})}
                for k, op, v in self.requirements
            ],
        }


@dataclass
class Resolution:
    """What an EC2NodeClass resolved to; ``problem`` says what did not."""

    subnets: list[Subnet] = field(default_factory=list)
    security_groups: list[dict[str, str]] = field(default_factory=list)
    amis: list[AMI] = field(default_factory=list)
    instance_profile: str | None = None
    reason: str = ""
    problem: str = ""

    @property
    def ready(self) -> bool:
        return not self.problem

    def status(self) -> dict[str, Any]:
        return {
            "subnets": [s.status() for s in self.subnets],
            "security_groups": self.security_groups,
            "amis": [a.status() for a in self.amis],
            "instance_profile": self.instance_profile,
        }


def _tag_filters(tags: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"Name": "tag-key", "Values": [k]} if v == "*" else {"Name": f"tag:{k}", "Values": [v]}
        for k, v in sorted(tags.items())
    ]


def resolve_subnets(clients: AWSClients, node_class: EC2NodeClass) -> list[Subnet]:
    ec2 = clients.ec2
    found: dict[str, Subnet] = {}
    queries: list[list[dict[str, Any]]] = [
        _tag_filters(t.tags) for t in node_class.spec.subnet_selector_terms if t.tags
    ]
    ids = [t.id for t in node_class.spec.subnet_selector_terms if t.id]
    if ids:
        queries.append([{"Name": "subnet-id", "Values": ids}])
    for filters in queries:
        for page in ec2.get_paginator("describe_subnets").paginate(Filters=filters):
            for s in page.get("Subnets", []):
                found[s["SubnetId"]] = Subnet(
                    s["SubnetId"],
                    s.get("AvailabilityZone", ""),
                    s.get("AvailabilityZoneId", ""),
                    s.get("AvailableIpAddressCount", 0),
                )
    return sorted(found.values(), key=lambda s: (-s.available_ips, s.id))


def resolve_security_groups(clients: AWSClients, node_class: EC2NodeClass) -> list[dict[str, str]]:
    ec2 = clients.ec2
    terms = node_class.spec.security_group_selector_terms
    queries = [_tag_filters(t.tags) for t in terms if t.tags]
    ids = [t.id for t in terms if t.id]
    names = [t.name for t in terms if t.name]
    if ids:
        queries.append([{"Name": "group-id", "Values": ids}])
    if names:
        queries.append([{"Name": "group-name", "Values": names}])
    found: dict[str, str] = {}
    for filters in queries:
        for page in ec2.get_paginator("describe_security_groups").paginate(Filters=filters):
            for g in page.get("SecurityGroups", []):
                found[g["GroupId"]] = g.get("GroupName", "")
    return [{"id": i, "name": n} for i, n in sorted(found.items())]


def alias_parameters(family: str, version: str, k8s: str) -> list[tuple[str, str, str]]:
    """(SSM parameter, arch, variant) for an alias; Karpenter's published paths."""
    out: list[tuple[str, str, str]] = []
    if family == "AL2023":
        for arch in ("x86_64", "arm64"):
            for variant in ("standard", "nvidia", "neuron"):
                if arch == "arm64" and variant == "neuron":
                    continue
                leaf = (
                    "recommended"
                    if version == "latest"
                    else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
                )
                out.append(
                    (
                        f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id",
                        arch,
                        variant,
                    )
                )
    elif family == "AL2":
        leaf = "recommended" if version == "latest" else f"amazon-eks-node-{k8s}-{version}"
        for suffix, arch, variant in (
            ("", "x86_64", "standard"),
            ("-arm64", "arm64", "standard"),
            ("-gpu", "x86_64", "nvidia"),
        ):
            out.append(
                (
                    f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2{suffix}/{leaf}/image_id",
                    arch,
                    variant,
                )
            )
    elif family == "Bottlerocket":
        for arch in ("x86_64", "arm64"):
            for suffix, variant in (("", "standard"), ("-nvidia", "nvidia")):
                out.append(
                    (
                        f"/aws/service/bottlerocket/aws-k8s-{k8s}{suffix}/{arch}/{version}/image_id",
                        arch,
                        variant,
                    )
                )
    elif family.startswith("Windows"):
        year = family.removeprefix("Windows")
        out.append(
            (
                f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id",
                "x86_64",
                "standard",
            )
        )
    return out


def _variant_requirements(arch: str, variant: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    reqs: list[tuple[str, str, tuple[str, ...]]] = [(ARCH_LABEL, "In", (_ARCH.get(arch, arch),))]
    if variant == "nvidia":
        reqs.append((INSTANCE_GPU_COUNT, "Exists", ()))
    elif variant == "neuron":
        reqs.append((INSTANCE_ACCELERATOR_COUNT, "Exists", ()))
    else:
        reqs.append((INSTANCE_GPU_COUNT, "DoesNotExist", ()))
        reqs.append((INSTANCE_ACCELERATOR_COUNT, "DoesNotExist", ()))
    return tuple(reqs)


def _ssm_value(clients: AWSClients, name: str) -> str | None:
    try:
        value = clients.ssm.get_parameter(Name=name)["Parameter"].get("Value", "")
    except botocore.exceptions.ClientError as error:
        if error_code(error) == "ParameterNotFound":
            log.debug("SSM parameter %s not found", name)
            return None
        raise
    return value if value.startswith("ami-") else None


def _describe_images(
    clients: AWSClients,
    filters: list[dict[str, Any]],
    owners: Iterable[str] = (),
    image_ids: Iterable[str] = (),
) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {"Filters": filters}
    if image_ids:
        kwargs["ImageIds"] = list(image_ids)
    if owners:
        kwargs["Owners"] = list(owners)
    images: list[dict[str, Any]] = list(clients.ec2.describe_images(**kwargs).get("Images", []))
    return images


def resolve_amis(clients: AWSClients, node_class: EC2NodeClass, k8s_version: str) -> list[AMI]:
    candidates: list[AMI] = []
    for term in node_class.spec.ami_selector_terms:
        candidates.extend(_resolve_term(clients, term, k8s_version))
    # The newest non-deprecated image per requirement set wins.
    best: dict[tuple[tuple[str, str, tuple[str, ...]], ...], AMI] = {}
    for ami in sorted(candidates, key=lambda a: (a.deprecated, _neg(a.creation_date), a.id)):
        best.setdefault(ami.requirements, ami)
    return sorted(best.values(), key=lambda a: a.id)


def _neg(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def _resolve_term(clients: AWSClients, term: AMISelectorTerm, k8s: str) -> list[AMI]:
    if term.alias:
        family, version = term.alias_family() or "", term.alias_version() or "latest"
        wanted: dict[str, tuple[str, str]] = {}
        for name, arch, variant in alias_parameters(family, version, k8s):
            image_id = _ssm_value(clients, name)
            if image_id:
                wanted[image_id] = (arch, variant)
        if not wanted:
            return []
        images = _describe_images(clients, [], image_ids=sorted(wanted))
        return [
            AMI(
                i["ImageId"],
                i.get("Name", ""),
                _variant_requirements(*wanted[i["ImageId"]]),
                i.get("CreationDate", ""),
                bool(i.get("DeprecationTime")),
            )
            for i in images
            if i["ImageId"] in wanted
        ]
    filters: list[dict[str, Any]] = []
    owners: list[str] = []
    ids: list[str] = []
    if term.ssm_parameter:
        image_id = _ssm_value(clients, term.ssm_parameter)
        if not image_id:
            return []
        ids.append(image_id)
    if term.id:
        ids.append(term.id)
    if term.name:
        filters.append({"Name": "name", "Values": [term.name]})
        owners = [term.owner] if term.owner else ["self", "amazon"]
    elif term.owner:
        owners = [term.owner]
    filters.extend(_tag_filters(term.tags))
    return [
        AMI(
            i["ImageId"],
            i.get("Name", ""),
            ((ARCH_LABEL, "In", (_ARCH.get(i.get("Architecture", "x86_64"), "amd64"),)),),
            i.get("CreationDate", ""),
            bool(i.get("DeprecationTime")),
        )
        for i in _describe_images(clients, filters, owners, ids)
    ]


def instance_profile_name(cluster: str, region: str, node_class: EC2NodeClass) -> str:
    """Karpenter-style ``<cluster>_<hash>``, stable for a class and its role."""
    digest = hashlib.sha256(
        f"{region}/{node_class.metadata.uid or node_class.name}/{node_class.spec.role}".encode()
    ).hexdigest()[:16]
    return f"{cluster}_{digest}"


def ensure_instance_profile(
    clients: AWSClients, cluster: str, node_class: EC2NodeClass, default: str | None = None
) -> str:
    """The instance profile: as given, or one made for ``spec.role`` (idempotently)."""
    if node_class.spec.instance_profile:
        return node_class.spec.instance_profile
    if node_class.spec.role is None:
        return default or ""
    iam = clients.client("iam")
    name = instance_profile_name(cluster, clients.region, node_class)
    path = f"/karpenter/{clients.region}/{cluster}/{node_class.metadata.uid or node_class.name}/"
    try:
        profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    except botocore.exceptions.ClientError as error:
        if error_code(error) != "NoSuchEntity":
            raise
        profile = iam.create_instance_profile(
            InstanceProfileName=name,
            Path=path,
            Tags=[
                {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
                {"Key": "eks:eks-cluster-name", "Value": cluster},
                {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": node_class.name},
                {"Key": "topology.kubernetes.io/region", "Value": clients.region},
            ],
        )["InstanceProfile"]
    roles = [r["RoleName"] for r in profile.get("Roles", [])]
    if node_class.spec.role not in roles:
        for role in roles:
            iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=role)
        iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=node_class.spec.role)
    return name


def resolve(
    clients: AWSClients,
    node_class: EC2NodeClass,
    cluster: str,
    k8s_version: str | None,
    default_instance_profile: str | None = None,
    *,
    subnets: Callable[[], list[Subnet]] | None = None,
    amis: Callable[[str], list[AMI]] | None = None,
) -> Resolution:
    """Resolve every part; the first that fails sets reason and a message naming the field.
    ``subnets`` and ``amis`` (given the Kubernetes version) stand in for asking EC2."""
    result = Resolution()
    steps: list[tuple[str, str, str]] = [
        ("subnets", "SubnetsNotFound", "spec.subnetSelectorTerms"),
        ("security_groups", "SecurityGroupsNotFound", "spec.securityGroupSelectorTerms"),
        ("amis", "AMINotFound", "spec.amiSelectorTerms"),
        ("instance_profile", "InstanceProfileNotReady", "spec.role"),
    ]
    for part, reason, where in steps:
        try:
            if part == "subnets":
                result.subnets = (
                    subnets() if subnets is not None else resolve_subnets(clients, node_class)
                )
                empty = not result.subnets
            elif part == "security_groups":
                result.security_groups = resolve_security_groups(clients, node_class)
                empty = not result.security_groups
            elif part == "amis":
                if k8s_version is None and any(t.alias for t in node_class.spec.ami_selector_terms):
                    result.reason, result.problem = (
                        "KubernetesVersionUnknown",
                        f"{where}: an alias needs the cluster's Kubernetes version; set "
                        "--provider-option aws.kubernetes-version=<1.xx> or make the EKS "
                        "cluster describable",
                    )
                    return result
                version = k8s_version or ""
                result.amis = (
                    amis(version)
                    if amis is not None
                    else resolve_amis(clients, node_class, version)
                )
                empty = not result.amis
            else:
                result.instance_profile = ensure_instance_profile(
                    clients, cluster, node_class, default_instance_profile
                )
                empty = not result.instance_profile
        except botocore.exceptions.ClientError as error:
            code = error_code(error)
            result.reason = (
                "Unauthorized"
                if code in ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException")
                else reason
            )
            result.problem = f"{where}: resolving failed ({error_text(error)})"
            return result
        if empty:
            result.reason = reason
            result.problem = f"{where}: no {part.replace('_', ' ')} match the selector terms"
            if part == "instance_profile":
                result.problem = (
                    "spec.role / spec.instanceProfile: neither is set; set one, or "
                    "--provider-option aws.default-instance-profile=<name>"
                )
            return result
    return result


def ami_for(instance_type: InstanceType, amis: Sequence[AMI]) -> AMI | None:
    """The first AMI whose requirements (architecture, accelerators) the type meets."""
    for ami in amis:
        if instance_type.requirements.meets(_ami_requirements(ami.requirements)):
            return ami
    return None


@functools.lru_cache(maxsize=256)
def _ami_requirements(terms: tuple[tuple[str, str, tuple[str, ...]], ...]) -> Requirements:
    """An AMI's requirements as a set (a launch asks for each of its types' AMI)."""
    return Requirements(Requirement.of(k, op, v) for k, op, v in terms)


class NodeClassDiscovery:
    """Each EC2NodeClass's resolution, reused for a minute (per class generation); its subnets
    for ``subnet_refresh`` and its AMIs for ``ami_refresh`` (Karpenter's
    ``--subnet-refresh-interval`` and ``--ami-refresh-interval``, a minute by default)."""

    def __init__(
        self,
        clients: AWSClients,
        cluster: EKSCluster,
        default_instance_profile: str | None,
        now: Callable[[], datetime],
        *,
        subnet_refresh: timedelta = RESOLUTION_TTL,
        ami_refresh: timedelta = RESOLUTION_TTL,
    ) -> None:
        self.clients = clients
        self.cluster = cluster
        self.default_instance_profile = default_instance_profile
        self.now = now
        self.subnet_refresh = subnet_refresh
        self.ami_refresh = ami_refresh
        self.resolutions: dict[tuple[str, int], tuple[datetime, Resolution]] = {}
        self._subnets: dict[tuple[str, int], tuple[datetime, list[Subnet]]] = {}
        self._amis: dict[tuple[str, int, str], tuple[datetime, list[AMI]]] = {}

    def resolution(self, node_class: EC2NodeClass) -> Resolution:
        key = (node_class.name, node_class.metadata.generation or 0)
        now = self.now()
        cached = self.resolutions.get(key)
        if cached is not None and now - cached[0] < RESOLUTION_TTL:
            return cached[1]
        with aws_errors(f"resolving EC2NodeClass {node_class.name!r}"):
            result = resolve(
                self.clients,
                node_class,
                self.cluster.name,
                self.cluster.kubernetes_version(),
                self.default_instance_profile,
                subnets=lambda: self._cached_subnets(key, node_class),
                amis=lambda version: self._cached_amis(key, node_class, version),
            )
        self.resolutions = {k: v for k, v in self.resolutions.items() if k[0] != node_class.name}
        self.resolutions[key] = (now, result)
        return result

    def _cached_subnets(self, key: tuple[str, int], node_class: EC2NodeClass) -> list[Subnet]:
        now = self.now()
        cached = self._subnets.get(key)
        if cached is not None and now - cached[0] < self.subnet_refresh:
            return cached[1]
        found = resolve_subnets(self.clients, node_class)
        self._subnets = {k: v for k, v in self._subnets.items() if k[0] != key[0]}
        self._subnets[key] = (now, found)
        return found

    def _cached_amis(
        self, key: tuple[str, int], node_class: EC2NodeClass, version: str
    ) -> list[AMI]:
        now = self.now()
        cached = self._amis.get((*key, version))
        if cached is not None and now - cached[0] < self.ami_refresh:
            return cached[1]
        found = resolve_amis(self.clients, node_class, version)
        self._amis = {k: v for k, v in self._amis.items() if k[0] != key[0]}
        self._amis[(*key, version)] = (now, found)
        return found

    def ready(self, node_class: EC2NodeClass) -> Resolution:
        """The class's resolution; NodeClassNotReadyError naming the problem if not ready."""
        try:
            result = self.resolution(node_class)
        except MissingConfigurationError as error:
            raise NodeClassNotReadyError(str(error)) from None
        if not result.ready:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name!r} is not ready: {result.problem}"
            )
        return result

    def zone_ids(self, node_class: EC2NodeClass) -> dict[str, str]:
        """Zone name to zone ID of the class's subnets; {} while they cannot be resolved."""
        try:
            result = self.resolution(node_class)
        except (MissingConfigurationError, TemporaryProviderError):
            return {}
        return {s.zone: s.zone_id or s.zone for s in result.subnets}

    def amis(self, node_class: EC2NodeClass) -> list[AMI]:
        try:
            return self.resolution(node_class).amis
        except (MissingConfigurationError, TemporaryProviderError):
            return []

    def zone_id_of_subnet(self, subnet_id: str | None) -> str:
        """The zone ID of a subnet some class resolved to; "" if none did."""
        for _, resolution in self.resolutions.values():
            for s in resolution.subnets:
                if s.id == subnet_id:
                    return s.zone_id
        return ""
