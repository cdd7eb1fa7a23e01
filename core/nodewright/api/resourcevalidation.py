"""The API server's rules for the ``resource.k8s.io/v1`` kinds and a pod's ``resourceClaims``.

Checked against a real API server (v1.36): a DeviceClass or claim whose CEL selector does not
compile, a request with neither or both of ``exactly`` and ``firstAvailable``, a constraint
naming a request the claim lacks, a ResourceSlice that says no (or two) ways of reaching its
devices, an attribute with no value or two ... are refused with the server's field paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodewright.api.cel.parse import CelError, CelUnsupported
from nodewright.api.cel.program import compile_selector
from nodewright.api.cel.values import Semver, VersionError
from nodewright.api.core import PodSpec
from nodewright.api.devicesharing import (
    check_capacity,
    check_consumes_counters,
    check_shared_counters,
)
from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldErrors, unsupported_value
from nodewright.api.names import dns_label_problems, dns_subdomain_problems
from nodewright.api.resource import (
    ALL,
    ALLOCATION_MODES,
    MAX_ATTRIBUTE_ID_LENGTH,
    MAX_ATTRIBUTE_STRING_LENGTH,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    MAX_CEL_EXPRESSION_LENGTH,
    MAX_CONSTRAINTS_PER_CLAIM,
    MAX_DEVICES_PER_SLICE,
    MAX_DRIVER_NAME_LENGTH,
    MAX_REQUESTS_PER_CLAIM,
    MAX_SELECTORS,
    MAX_SUBREQUESTS,
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REACH = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def check_resource_object(report: FieldErrors, obj: object) -> None:
    """Add the problems of a DRA object to ``report``."""
    if isinstance(obj, DeviceClass):
        _check_selectors(report, "spec.selectors", obj.spec.selectors)
    elif isinstance(obj, ResourceClaim):
        _check_device_claim(report, "spec.devices", obj.spec.devices)
    elif isinstance(obj, ResourceClaimTemplate):
        _check_device_claim(report, "spec.spec.devices", obj.spec.spec.devices)
    elif isinstance(obj, ResourceSlice):
        _check_slice(report, obj)


def _check_selectors(report: FieldErrors, path: str, selectors: Sequence[DeviceSelector]) -> None:
    if len(selectors) > MAX_SELECTORS:
        report.add(path, f"must have at most {MAX_SELECTORS} items, got {len(selectors)}")
    for index, selector in enumerate(selectors):
        where = f"{path}[{index}].cel"
        if selector.cel is None:
            report.add(where, "Required value")
            continue
        expression = selector.cel.expression
        if len(expression) > MAX_CEL_EXPRESSION_LENGTH:
            report.add(
                f"{where}.expression",
                f"may not be longer than {MAX_CEL_EXPRESSION_LENGTH} characters",
            )
            continue
        try:
            compile_selector(expression)
        except CelUnsupported:
            continue  # valid CEL nodewright does not evaluate: said when allocating
        except CelError as exc:
            report.add(
                f"{where}.expression",
                f"Invalid value: {excerpt(expression)}: compilation failed: {exc}",
            )


def _check_device_class_name(report: FieldErrors, path: str, name: str) -> None:
    if not name:
        report.add(path, "Required value")
    else:
        report.add_all(path, dns_subdomain_problems(name))


def _check_device_claim(report: FieldErrors, path: str, devices: DeviceClaim) -> None:
    requests = devices.requests
    if len(requests) > MAX_REQUESTS_PER_CLAIM:
        report.add(
            f"{path}.requests",
            f"must have at most {MAX_REQUESTS_PER_CLAIM} items, got {len(requests)}",
        )
    names: set[str] = set()
    subrequests: set[str] = set()
    for index, request in enumerate(requests):
        where = f"{path}.requests[{index}]"
        report.add_all(f"{where}.name", dns_label_problems(request.name))
        if request.name in names:
            report.add(where, f"Duplicate value: {excerpt(request.name)}")
        names.add(request.name)
        exact, first = request.exactly, request.first_available
        if exact is None and not first:
            report.add(where, "exactly one of `exactly` or `firstAvailable` is required")
        elif exact is not None and first:
            report.add(
                where,
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
                "are set",
            )
        if exact is not None:
            _check_device_class_name(
                report, f"{where}.exactly.deviceClassName", exact.device_class_name
            )
            _check_selectors(report, f"{where}.exactly.selectors", exact.selectors)
            _check_mode(report, f"{where}.exactly", exact.allocation_mode, exact.count)
        for sub_index, sub in enumerate(first or ()):
            sub_where = f"{where}.firstAvailable[{sub_index}]"
            report.add_all(f"{sub_where}.name", dns_label_problems(sub.name))
            subrequests.add(f"{request.name}/{sub.name}")
            _check_device_class_name(report, f"{sub_where}.deviceClassName", sub.device_class_name)
            _check_selectors(report, f"{sub_where}.selectors", sub.selectors)
            _check_mode(report, sub_where, sub.allocation_mode, sub.count)
        if first and len(first) > MAX_SUBREQUESTS:
            report.add(f"{where}.firstAvailable", f"must have at most {MAX_SUBREQUESTS} items")
    constraints = devices.constraints
    if len(constraints) > MAX_CONSTRAINTS_PER_CLAIM:
        report.add(
            f"{path}.constraints",
            f"must have at most {MAX_CONSTRAINTS_PER_CLAIM} items, got {len(constraints)}",
        )
    for index, constraint in enumerate(constraints):
        where = f"{path}.constraints[{index}]"
        for request_index, name in enumerate(constraint.requests):
            if name not in names and name not in subrequests:
                report.add(
                    f"{where}.requests[{request_index}]",
                    f"Invalid value: {excerpt(name)}: must be the name of a request in the claim "
                    "or the name of a request and a subrequest separated by '/'",
                )
        attributes = [
            (field, value)
            for field, value in (
                ("matchAttribute", constraint.match_attribute),
                ("distinctAttribute", constraint.distinct_attribute),
            )
            if value is not None
        ]
        if len(attributes) != 1:
            report.add(
                where,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                "multiple fields are set",
            )
        for field, value in attributes:
            if "/" not in value:
                report.add(
                    f"{where}.{field}",
                    f"Invalid value: {excerpt(value)}: a fully qualified name must be a domain "
                    "and a name separated by a slash",
                )
            else:
                _check_attribute_name(report, f"{where}.{field}", value)


def _check_mode(report: FieldErrors, path: str, mode: str | None, count: int | None) -> None:
    if mode is not None and mode not in ALLOCATION_MODES:
        report.add(f"{path}.allocationMode", unsupported_value(mode, sorted(ALLOCATION_MODES)))
    if mode == ALL and count:
        report.add(
            f"{path}.count",
            f"Invalid value: {count}: must not be specified when allocationMode is 'All'",
        )
    elif count is not None and count < 0:
        report.add(f"{path}.count", f"Invalid value: {count}: must be greater than zero")


def _check_attribute_name(report: FieldErrors, path: str, name: str) -> None:
    domain, slash, ident = name.rpartition("/")
    if slash:
        report.add_all(path, (f"domain {p}" for p in dns_subdomain_problems(domain)))
    if len(ident) > MAX_ATTRIBUTE_ID_LENGTH:
        report.add(path, f"name may not be longer than {MAX_ATTRIBUTE_ID_LENGTH} characters")
    if not _C_IDENTIFIER.fullmatch(ident):
        report.add(
            path,
            f"Invalid value: {excerpt(ident)}: a valid C identifier must start with alphabetic "
            "character or '_', followed by a string of alphanumeric characters or '_'",
        )


def _check_attribute(report: FieldErrors, path: str, value: DeviceAttribute) -> None:
    set_values = [
        v
        for v in (value.int_value, value.bool_value, value.string_value, value.version_value)
        if v is not None
    ]
    extra = value.model_extra or {}
    set_values += [v for k, v in extra.items() if k in ("ints", "bools", "strings", "versions")]
    if len(set_values) != 1:
        report.add(path, "exactly one value must be specified")
        return
    if value.string_value is not None and len(value.string_value) > MAX_ATTRIBUTE_STRING_LENGTH:
        report.add(path, f"string may not be longer than {MAX_ATTRIBUTE_STRING_LENGTH} characters")
    if value.version_value is not None:
        try:
            Semver.parse(value.version_value)
        except VersionError:
            report.add(
                f"{path}.version",
                f"Invalid value: {excerpt(value.version_value)}: must be a string compatible "
                "with semver.org spec 2.0.0",
            )


def _check_slice(report: FieldErrors, obj: ResourceSlice) -> None:
    spec = obj.spec
    if not spec.driver:
        report.add("spec.driver", "Required value")
    else:
        report.add_all("spec.driver", dns_subdomain_problems(spec.driver))
        if len(spec.driver) > MAX_DRIVER_NAME_LENGTH:
            report.add("spec.driver", f"must be no more than {MAX_DRIVER_NAME_LENGTH} characters")
    pool = spec.pool
    if not pool.name:
        report.add("spec.pool.name", "Required value")
    else:
        for part in pool.name.split("/"):
            report.add_all("spec.pool.name", dns_subdomain_problems(part))
    if pool.resource_slice_count <= 0:
        report.add(
            "spec.pool.resourceSliceCount",
            f"Invalid value: {pool.resource_slice_count}: must be greater than zero",
        )
    if pool.generation < 0:
        report.add(
            "spec.pool.generation",
            f"Invalid value: {pool.generation}: must be greater than or equal to zero",
        )
    if spec.all_nodes is False:
        report.add("spec.allNodes", "Invalid value: false: must be either unset or set to true")
    reach = [
        name
        for name, value in zip(
            _REACH,
            (spec.node_name, spec.node_selector, spec.all_nodes, spec.per_device_node_selection),
            strict=True,
        )
        if value
    ]
    choices = (
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
        "is required"
    )
    if not reach:
        report.add("spec", f"Required value: {choices}")
    elif len(reach) > 1:
        report.add("spec", f"{choices}, but multiple fields are set")
    if spec.node_name:
        report.add_all("spec.nodeName", dns_subdomain_problems(spec.node_name))
    devices = spec.devices or []
    if len(devices) > MAX_DEVICES_PER_SLICE:
        report.add("spec.devices", f"must have at most {MAX_DEVICES_PER_SLICE} items")
    names: set[str] = set()
    for index, device in enumerate(devices):
        where = f"spec.devices[{index}]"
        report.add_all(f"{where}.name", dns_label_problems(device.name))
        if device.name in names:
            report.add(f"{where}.name", f"Duplicate value: {excerpt(device.name)}")
        names.add(device.name)
        if len(device.attributes) + len(device.capacity) > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
            report.add(
                where,
                f"the total number of attributes and capacities must not exceed "
                f"{MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}",
            )
        for name, value in device.attributes.items():
            _check_attribute_name(report, f"{where}.attributes[{name}]", name)
            _check_attribute(report, f"{where}.attributes[{name}]", value)
        for name in device.capacity:
            _check_attribute_name(report, f"{where}.capacity[{name}]", name)
        check_capacity(report, where, device)
        check_consumes_counters(report, where, device.consumes_counters)
    check_shared_counters(report, spec.shared_counters, spec.devices is not None)


def check_pod_claims(report: FieldErrors, path: str, spec: PodSpec) -> None:
    """A pod's ``resourceClaims`` and its containers' ``resources.claims``."""
    names: list[str] = []
    for index, claim in enumerate(spec.resource_claims or ()):
        where = f"{path}.resourceClaims[{index}]"
        report.add_all(f"{where}.name", dns_label_problems(claim.name))
        if claim.name in names:
            report.add(f"{where}.name", f"Duplicate value: {excerpt(claim.name)}")
        names.append(claim.name)
        sources = [s for s in (claim.resource_claim_name, claim.resource_claim_template_name) if s]
        if not sources:
            report.add(
                where, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )
        elif len(sources) > 1:
            report.add(
                where,
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                "specified",
            )
    for group, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for index, container in enumerate(containers):
            for claim_index, used in enumerate(container.resources.claims or ()):
                name = used.get("name") if isinstance(used, dict) else None
                if name not in names:
                    report.add(
                        f"{path}.{group}[{index}].resources.claims[{claim_index}]",
                        f"Not found: {excerpt(str(name))}: must be one of the names in "
                        f"pod.spec.resourceClaims: {', '.join(names) or '(none)'}",
                    )
