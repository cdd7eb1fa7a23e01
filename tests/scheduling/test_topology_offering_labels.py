"""Zone spread domains follow the offerings a NodePool may use: an offering label the pool
excludes (Azure's ``placement-scope``) keeps that offering's zone out of the pool's domains,
and zones reached only through ``fallback`` offerings (Azure's regional zone ``0``) are
filled last among equally loaded zones."""

from __future__ import annotations

from nodewright.api.labels import ZONE_LABEL
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.solver.scheduler import solve
from nodewright.testing.catalog import ZONES
from tests.scheduling.scheduling_fakes import instance_type, node_pool
from tests.scheduling.test_topology import make_pod, spread, zones_of

SCOPE = "example.com/placement-scope"
REGIONAL = "0"


def _catalog() -> list[InstanceType]:
    """One type offered in three zones (zonal) and in zone "0" (regional, a fallback)."""
    offerings = [
        *(Offering(z, "on-demand", 1.0, labels={SCOPE: "zonal"}) for z in ZONES),
        Offering(REGIONAL, "on-demand", 1.0, labels={SCOPE: "regional"}, fallback=True),
    ]
    return [instance_type("vm", cpu="1", offerings=offerings)]


def _web(replicas: int) -> list[PodRequest]:
    return [
        make_pod(labels={"app": "web"}, cpu="900m", spread=[spread(ZONE_LABEL)])
        for _ in range(replicas)
    ]


def test_a_pool_that_excludes_an_offering_label_does_not_spread_into_its_zone() -> None:
    pool = node_pool(requirements=[(SCOPE, "In", ["zonal"])], instance_types=_catalog())
    result = solve(_web(6), [], [pool])
    assert not result.errors
    assert sorted(zones_of(result).items()) == [(z, 2) for z in sorted(ZONES)]


def test_a_fallback_zone_is_filled_last_among_equally_loaded_zones() -> None:
    pool = node_pool(instance_types=_catalog())
    first = solve(_web(1), [], [pool])
    assert REGIONAL not in zones_of(first)
    four = solve(_web(4), [], [node_pool(instance_types=_catalog())])
    assert not four.errors
    # "0" is a domain of a pool that may launch there: the fourth replica goes to it
    assert zones_of(four) == {**dict.fromkeys(ZONES, 1), REGIONAL: 1}
