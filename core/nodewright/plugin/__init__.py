"""The public provider kit: everything a provider package needs, importable from here.

A provider imports from ``nodewright.plugin`` only (and, in its tests, from
``nodewright.testing``); an import-linter contract holds the shipped providers to it. The
modules behind these names are the core's own and may move; these names stay.

A provider is a module with ``nodewright_*`` functions, registered as an entry point::

    # pyproject.toml
    [project.entry-points."nodewright.providers"]
    mycloud = "nodewright_mycloud.plugin"

    # nodewright_mycloud/plugin.py
    from nodewright.plugin import ProviderInfo, NodeClassKind, hookimpl

    @hookimpl
    def nodewright_provider_info() -> ProviderInfo:
        return ProviderInfo(name="mycloud", node_classes=(NodeClassKind(...),))

or, simpler, one object that answers every hook (:class:`Provider`) wrapped by
:class:`ProviderPlugin`. :mod:`nodewright.plugin.hookspecs` is the contract: each hook, when
it is called, what it returns and which errors it may raise.

What is here, by use:

Hooks
    :data:`hookimpl` (marks a hook implementation), :class:`Provider` and
    :class:`ProviderPlugin` (one object answering every hook), :data:`NAME`,
    :data:`ENTRY_POINT_GROUP`, :mod:`hookspecs`.
What hooks take and return
    :class:`ProviderInfo`, :class:`NodeClassKind`, :class:`ProviderContext` (with
    :class:`ProviderCluster` and :class:`ClockLike`), :class:`LaunchRequest`,
    :class:`LaunchResult`, :class:`Instance`, :class:`NodeClassReadiness`,
    :class:`RepairPolicy`, :class:`InstanceType`, :class:`InstanceTypeOverhead`,
    :class:`Offering`, :class:`Reservation`; the DRA devices an instance type offers,
    :class:`DynamicResources` (:class:`ResourceSliceTemplate`, :class:`Device`,
    :class:`AttributeBinding`, :class:`DeviceID`, :class:`Semver`; shared devices'
    :class:`RequestPolicy` and :class:`ValidRange`, partitionable devices'
    :class:`CounterSet` and :class:`CounterConsumption`), checked by
    :func:`dynamic_resources_problem`, and the slices a node's drivers publish for them,
    :func:`node_slices`;
    :data:`DEFAULT_RECONCILE_PERIOD`,
    :data:`UNAVAILABLE_OFFERING_TTL`; :class:`Poll` (a background wait that only looks again).
Errors a provider raises
    :class:`ProviderError` and its kinds :class:`InstanceNotFoundError`,
    :class:`InsufficientCapacityError`, :class:`NodeClassNotReadyError`,
    :class:`LaunchError`, :class:`TemporaryProviderError`. Errors the host raises about
    plugins: :class:`PluginError` (:class:`PluginLoadError`, :class:`PluginConflictError`,
    :class:`PluginContractError`), :class:`UnknownNodeClassError`. Errors from
    :class:`ProviderCluster`: :class:`ClusterError`, :class:`ConflictError`.
Kubernetes objects a provider reads or writes
    :class:`NodeClass` (base of a provider's NodeClass model, with
    :class:`NodeClassStatus`), :class:`NodeClaim` (:class:`NodeClaimSpec`,
    :class:`NodeClassReference`, :class:`NodeSelectorRequirementWithMinValues`),
    :class:`Node` (:class:`NodeSpec`, :class:`NodeStatus`, :class:`NodeCondition`),
    :class:`Pod` (:class:`PodSpec`, :class:`PodCondition`), :class:`Taint`,
    :class:`Lease` (:class:`LeaseSpec`), :class:`ObjectMeta`, :class:`OwnerReference`,
    :class:`Condition`, :func:`find_condition`, :class:`Model` and :class:`StrictModel`
    (bases for settings and spec models), :func:`mutable` (the writable copy of a shared
    object); the cluster's change feeds :class:`ClusterState`, :class:`ChangeFeed`,
    :class:`Change`.
Requirements, resources, quantities, durations
    :class:`Requirements`, :class:`Requirement`, :class:`RequirementError`;
    :data:`ResourceList`, :data:`CPU`, :data:`MEMORY`, :data:`PODS`,
    :data:`EPHEMERAL_STORAGE`, :func:`resources`, :func:`parse_resources`,
    :func:`format_resources`; :func:`parse_quantity`, :func:`format_quantity`,
    :class:`QuantityError`; :func:`parse_duration`, :class:`DurationError`.
Well-known labels, annotations and taints
    :data:`ARCH_LABEL`, :data:`OS_LABEL`, :data:`WINDOWS_BUILD_LABEL`,
    :data:`INSTANCE_TYPE_LABEL`, :data:`ZONE_LABEL`, :data:`REGION_LABEL`,
    :data:`HOSTNAME_LABEL`, :data:`NODEPOOL_LABEL`, :data:`CAPACITY_TYPE_LABEL` with
    :data:`CAPACITY_TYPE_ON_DEMAND`, :data:`CAPACITY_TYPE_SPOT`,
    :data:`CAPACITY_TYPE_RESERVED`, :data:`CAPACITY_TYPES`; :func:`node_class_label`;
    :data:`UNREGISTERED_TAINT_KEY`; :data:`SIMULATED_CONDITIONS_ANNOTATION`.
Drift hashes
    :func:`restamp_hashes` (re-stamp NodeClass hashes after a hash-version change).
The NodeClass CRD, generated from the model (:mod:`nodewright.plugin.crd`)
    :func:`node_class_crd` (for ``NodeClassKind.crd``), :func:`model_schema`; declared beside
    a field: :class:`Rule` (CEL), :class:`Schema` (OpenAPI keywords), :class:`SchemaFrom`,
    :data:`Int32`, :data:`Int64`; on a model: :func:`validations`; printer columns
    :func:`column`, :data:`READY_COLUMN`, :data:`AGE_COLUMN`; :class:`ServedVersion`,
    :class:`ResolvedRequirement`, :class:`CrdGenerationError`; :data:`QUANTITY_PATTERN` (a
    Kubernetes quantity, for ``Schema(pattern=...)``).
Node bootstrap
    :func:`kubelet_flag` and :func:`kubelet_flags` (kubelet command-line flags for user or
    custom data, in the shapes every provider writes).
Offline catalogs
    :func:`encode_catalog`, :func:`decode_catalog`, :func:`catalog_differences` and
    :func:`write_or_check_catalog` (a bundled catalog file and its generation script's tail).
Files of user input
    :func:`read_document` (one YAML or JSON document of a file a user names, a catalog say,
    read as manifests are: a regular file, within size, depth and alias limits, with libyaml
    where installed) and the :class:`DocumentError` it raises, naming the file and line.
"""

from __future__ import annotations

import pluggy

from nodewright.api.cel.values import Semver
from nodewright.api.coordination import Lease, LeaseSpec
from nodewright.api.core import (
    Node,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    Pod,
    PodCondition,
    PodSpec,
    Taint,
)
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import (
    NodeClaim,
    NodeClaimSpec,
    NodeClass,
    NodeClassReference,
    NodeClassStatus,
    NodeSelectorRequirementWithMinValues,
)
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    CAPACITY_TYPES,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    REGION_LABEL,
    SIMULATED_CONDITIONS_ANNOTATION,
    UNREGISTERED_TAINT_KEY,
    WINDOWS_BUILD_LABEL,
    ZONE_LABEL,
    node_class_label,
)
from nodewright.api.manifests.errors import ManifestError as DocumentError
from nodewright.api.manifests.files import read_document
from nodewright.api.meta import (
    Condition,
    Model,
    ObjectMeta,
    OwnerReference,
    StrictModel,
    find_condition,
)
from nodewright.api.quantity import QuantityError, format_quantity, parse_quantity
from nodewright.clock import Poll
from nodewright.cluster import ClusterError, ConflictError
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Change, ChangeFeed, ClusterState
from nodewright.plugin import hookspecs
from nodewright.plugin.crd import (
    AGE_COLUMN,
    QUANTITY_PATTERN,
    READY_COLUMN,
    CrdGenerationError,
    Int32,
    Int64,
    ResolvedRequirement,
    Rule,
    Schema,
    SchemaFrom,
    ServedVersion,
    column,
    model_schema,
    node_class_crd,
    validations,
)
from nodewright.plugin.delegate import Provider, ProviderPlugin
from nodewright.plugin.devices import dynamic_resources_problem
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    NodeClassNotReadyError,
    PluginConflictError,
    PluginContractError,
    PluginError,
    PluginLoadError,
    ProviderError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.hashes import restamp_hashes
from nodewright.plugin.kubelet import kubelet_flag, kubelet_flags
from nodewright.plugin.model import (
    DEFAULT_RECONCILE_PERIOD,
    UNAVAILABLE_OFFERING_TTL,
    AttributeBinding,
    ClockLike,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceID,
    DynamicResources,
    Instance,
    InstanceType,
    InstanceTypeOverhead,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderCluster,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    RequestPolicy,
    Reservation,
    ResourceSliceTemplate,
    ValidRange,
)
from nodewright.plugin.names import ENTRY_POINT_GROUP, NAME
from nodewright.plugin.offlinecatalog import (
    catalog_differences,
    decode_catalog,
    encode_catalog,
    write_or_check_catalog,
)
from nodewright.scheduling.dra.publish import node_slices
from nodewright.scheduling.requirements import Requirement, RequirementError, Requirements
from nodewright.scheduling.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ResourceList,
    format_resources,
    parse_resources,
    resources,
)

#: Marks a function as a hook implementation.
hookimpl = pluggy.HookimplMarker(NAME)

__all__ = [
    "AGE_COLUMN",
    "ARCH_LABEL",
    "CAPACITY_TYPES",
    "CAPACITY_TYPE_LABEL",
    "CAPACITY_TYPE_ON_DEMAND",
    "CAPACITY_TYPE_RESERVED",
    "CAPACITY_TYPE_SPOT",
    "CPU",
    "DEFAULT_RECONCILE_PERIOD",
    "ENTRY_POINT_GROUP",
    "EPHEMERAL_STORAGE",
    "HOSTNAME_LABEL",
    "INSTANCE_TYPE_LABEL",
    "MEMORY",
    "NAME",
    "NODEPOOL_LABEL",
    "OS_LABEL",
    "PODS",
    "QUANTITY_PATTERN",
    "READY_COLUMN",
    "REGION_LABEL",
    "SIMULATED_CONDITIONS_ANNOTATION",
    "UNAVAILABLE_OFFERING_TTL",
    "UNREGISTERED_TAINT_KEY",
    "WINDOWS_BUILD_LABEL",
    "ZONE_LABEL",
    "AttributeBinding",
    "Change",
    "ChangeFeed",
    "ClockLike",
    "ClusterError",
    "ClusterState",
    "Condition",
    "ConflictError",
    "CounterConsumption",
    "CounterSet",
    "CrdGenerationError",
    "Device",
    "DeviceID",
    "DocumentError",
    "DurationError",
    "DynamicResources",
    "Instance",
    "InstanceNotFoundError",
    "InstanceType",
    "InstanceTypeOverhead",
    "InsufficientCapacityError",
    "Int32",
    "Int64",
    "LaunchError",
    "LaunchRequest",
    "LaunchResult",
    "Lease",
    "LeaseSpec",
    "Model",
    "Node",
    "NodeClaim",
    "NodeClaimSpec",
    "NodeClass",
    "NodeClassKind",
    "NodeClassNotReadyError",
    "NodeClassReadiness",
    "NodeClassReference",
    "NodeClassStatus",
    "NodeCondition",
    "NodeSelectorRequirementWithMinValues",
    "NodeSpec",
    "NodeStatus",
    "ObjectMeta",
    "Offering",
    "OwnerReference",
    "PluginConflictError",
    "PluginContractError",
    "PluginError",
    "PluginLoadError",
    "Pod",
    "PodCondition",
    "PodSpec",
    "Poll",
    "Provider",
    "ProviderCluster",
    "ProviderContext",
    "ProviderError",
    "ProviderInfo",
    "ProviderPlugin",
    "QuantityError",
    "RepairPolicy",
    "RequestPolicy",
    "Requirement",
    "RequirementError",
    "Requirements",
    "Reservation",
    "ResolvedRequirement",
    "ResourceList",
    "ResourceSliceTemplate",
    "Rule",
    "Schema",
    "SchemaFrom",
    "Semver",
    "ServedVersion",
    "StrictModel",
    "Taint",
    "TemporaryProviderError",
    "UnknownNodeClassError",
    "ValidRange",
    "catalog_differences",
    "column",
    "decode_catalog",
    "dynamic_resources_problem",
    "encode_catalog",
    "find_condition",
    "format_quantity",
    "format_resources",
    "hookimpl",
    "hookspecs",
    "kubelet_flag",
    "kubelet_flags",
    "model_schema",
    "mutable",
    "node_class_crd",
    "node_class_label",
    "node_slices",
    "parse_duration",
    "parse_quantity",
    "parse_resources",
    "read_document",
    "resources",
    "restamp_hashes",
    "validations",
    "write_or_check_catalog",
]
