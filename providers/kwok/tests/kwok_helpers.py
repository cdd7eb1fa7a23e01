"""NodeClasses and launch requests for the KWOK tests, built as the core builds them."""

from __future__ import annotations

from collections.abc import Iterable

from nodewright.plugin import (
    NODEPOOL_LABEL,
    InstanceType,
    LaunchRequest,
    NodeClaim,
    NodeClaimSpec,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
    ObjectMeta,
    Requirements,
)
from nodewright_kwok.nodeclass import KWOKNodeClass, KWOKNodeClassSpec
from nodewright_kwok.provider import KWOKProvider

RequirementSpec = tuple[str, str, Iterable[str]]


def node_class(name: str = "default", delay: str | None = None) -> KWOKNodeClass:
    return KWOKNodeClass(
        metadata=ObjectMeta(name=name),
        spec=KWOKNodeClassSpec(node_registration_delay=delay),
    )


def launch_request(
    provider: KWOKProvider,
    name: str = "default-abcde",
    *requirements: RequirementSpec,
    uid: str | None = None,
    nodeclass: KWOKNodeClass | None = None,
    labels: dict[str, str] | None = None,
) -> LaunchRequest:
    """What the core would send: the NodeClaim, and the provider's types that fit it with
    only their compatible offerings, cheapest first."""
    wanted = Requirements.of(*requirements)
    options: list[InstanceType] = []
    for instance_type in provider.catalog.instance_types:
        if wanted.intersects(instance_type.requirements):
            continue
        offerings = [o for o in instance_type.offerings if not wanted.intersects(o.requirements())]
        if offerings:
            options.append(instance_type.with_offerings(offerings))
    options.sort(key=lambda it: min(o.price for o in it.offerings))
    nodeclass = nodeclass or node_class()
    claim = NodeClaim(
        metadata=ObjectMeta(
            name=name,
            uid=uid or f"uid-{name}",
            labels={NODEPOOL_LABEL: "default", **(labels or {})},
        ),
        spec=NodeClaimSpec(
            requirements=[
                NodeSelectorRequirementWithMinValues(key=k, operator=op, values=list(values))
                for k, op, values in requirements
            ],
            node_class_ref=NodeClassReference(
                group="karpenter.kwok.sh", kind="KWOKNodeClass", name=nodeclass.name
            ),
        ),
    )
    return LaunchRequest(
        node_claim=claim,
        node_class=nodeclass,
        instance_types=tuple(options),
        requirements=wanted,
    )
