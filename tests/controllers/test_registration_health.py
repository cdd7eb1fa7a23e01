"""A NodePool's ``NodeRegistrationHealthy`` condition, as ``kubectl get nodepool -o yaml``
shows it: True once its nodes register, False after two of its last four NodeClaims fail to
launch or register in time, Unknown again when the NodePool or its NodeClass changes. The
checklist is Karpenter's ``nodepool/registrationhealth`` suite and the registration health
cases of its lifecycle ``liveness`` and ``registration`` suites."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.karpenter import API_VERSION, NodeClaim, NodePool
from nodewright.api.meta import OwnerReference, find_condition
from nodewright.cluster.objects import mutable
from nodewright.testing import make_node_claim
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.conftest import Simulate
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool

HEALTHY = "NodeRegistrationHealthy"
AWAITING = ("Unknown", "AwaitingReconciliation", "object is awaiting reconciliation")


def condition(world: KWOKWorld, pool: str = "default") -> tuple[str, str, str] | None:
    found = world.cluster.get(NodePool, pool)
    assert found is not None
    cond = find_condition(found.status.conditions, HEALTHY)
    return None if cond is None else (cond.status, cond.reason or "", cond.message or "")


def world_with_pool(provider_options: dict[str, str] | None = None) -> KWOKWorld:
    world = KWOKWorld(provider_options)
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS)
    world.settle()
    return world


def test_a_new_pool_is_unknown_and_turns_true_when_its_first_node_registers() -> None:
    world = world_with_pool()
    assert condition(world) == AWAITING
    pool = world.cluster.get(NodePool, "default")
    assert pool is not None
    assert pool.status.node_class_observed_generation == 1
    world.apply(deployment("web", 1, "1"))
    world.settle()
    assert len(world.nodes()) == 1
    assert condition(world) == ("True", HEALTHY, "")
    # Not part of readiness: the pool was Ready before and stays so.
    assert pool is not None
    assert find_condition(pool.status.conditions, "Ready") is not None


def test_two_launch_timeouts_turn_the_pool_false_with_the_launch_failure() -> None:
    world = world_with_pool()
    world.provider.faults.rates["launch"] = 1.0  # every launch fails, with one message
    world.apply(deployment("web", 1, "1"))
    world.advance(timedelta(seconds=5))
    world.advance(timedelta(minutes=5, seconds=30))  # the first NodeClaim times out
    assert condition(world) == AWAITING
    world.advance(timedelta(minutes=5, seconds=30))  # and its replacement
    status, reason, message = condition(world) or ("", "", "")
    assert (status, reason) == ("False", "LaunchFailed")
    assert "launch" in message


def test_two_registration_timeouts_turn_the_pool_false() -> None:
    world = world_with_pool({"registration-delay": "1h"})
    world.apply(deployment("web", 1, "1"))
    world.advance(timedelta(seconds=5))
    world.advance(timedelta(minutes=15, seconds=30))
    assert condition(world) == AWAITING
    world.advance(timedelta(minutes=15, seconds=30))
    assert condition(world) == ("False", "RegistrationFailed", "Failed to register node")


def unhealthy_world() -> KWOKWorld:
    """A pool turned False by two registration timeouts, whose nodes now register in 30 s."""
    world = world_with_pool({"registration-delay": "1h"})
    world.apply(deployment("web", 1, "1"))
    world.advance(timedelta(seconds=5))
    world.advance(timedelta(minutes=31))
    assert condition(world) == ("False", "RegistrationFailed", "Failed to register node")
    world.provider_options["registration-delay"] = "30s"
    world.restart()
    for claim in world.claims():  # the user gives up on the NodeClaim still waiting
        world.cluster.delete(NodeClaim, claim.name)
    world.advance(timedelta(seconds=1))
    return world


def test_after_a_restart_a_false_pool_needs_healthy_registrations_to_turn_true() -> None:
    """The outcomes are gone after a restart: the pool resumes from its condition, as if two
    of its last four NodeClaims had failed, so one registration is not enough."""
    world = unhealthy_world()
    world.advance(timedelta(minutes=2))
    assert len(world.nodes()) == 1
    assert condition(world) == ("False", "RegistrationFailed", "Failed to register node")
    for replicas in (2, 3):
        world.apply(deployment("web", replicas, "3"))
        world.advance(timedelta(minutes=2))
        assert len(world.nodes()) == replicas
    assert condition(world) == ("True", HEALTHY, "")


def test_changing_the_pool_starts_its_health_over() -> None:
    world = unhealthy_world()
    world.apply(four_cpu_pool(template_spec="expireAfter: 24h"))
    world.advance(timedelta(seconds=1))
    assert condition(world) == AWAITING
    world.advance(timedelta(minutes=2))
    assert condition(world) == ("True", HEALTHY, "")


def test_changing_the_node_class_starts_its_pools_health_over() -> None:
    world = unhealthy_world()
    node_class = world.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    changed = mutable(node_class)
    changed.spec.node_registration_delay = "10s"
    world.cluster.update(changed)
    world.advance(timedelta(seconds=1))
    assert condition(world) == AWAITING
    pool = world.cluster.get(NodePool, "default")
    assert pool is not None
    assert pool.status.node_class_observed_generation == 2


def test_a_pool_whose_node_class_is_missing_gets_no_condition() -> None:
    world = KWOKWorld()
    world.apply(node_pool("orphan"))
    world.settle()
    assert condition(world, "orphan") is None


def test_nodeclaims_a_pool_does_not_own_count_for_nothing() -> None:
    """Karpenter: 'should not update NodeRegistrationHealthy status condition if nodePool
    owning the nodeClaim is deleted': NodeClaims left by an earlier pool of the same name."""
    world = world_with_pool({"registration-delay": "1h"})
    node_class = world.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    for name in ("left-1", "left-2"):
        claim = make_node_claim(name, node_class)
        claim.metadata.owner_references = [
            OwnerReference(api_version=API_VERSION, kind="NodePool", name="default", uid="gone")
        ]
        world.create(claim)
    world.settle()
    world.advance(timedelta(minutes=16))
    assert world.claims() == []
    assert condition(world) == AWAITING


def test_simulate_reports_a_pool_whose_nodes_never_register(simulate: Simulate) -> None:
    result = simulate(
        node_pool("slow") + KWOK_NODE_CLASS + deployment("web", 1),
        "steps:\n  - advance: 31m\n",
        "--provider-option",
        "kwok.registration-delay=1h",
    )
    assert result.exit_code == 0, result.stderr
    (pool,) = result.report["nodePools"]
    conditions = {c["type"]: c for c in pool["conditions"]}
    assert conditions[HEALTHY] == {
        "type": HEALTHY,
        "status": "False",
        "reason": "RegistrationFailed",
        "message": "Failed to register node",
    }
    assert conditions["Ready"]["status"] == "True"
