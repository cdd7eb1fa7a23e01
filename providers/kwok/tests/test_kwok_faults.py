from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.plugin import (
    INSTANCE_TYPE_LABEL,
    Instance,
    InsufficientCapacityError,
    LaunchError,
    LaunchResult,
    Node,
    TemporaryProviderError,
)
from nodewright.testing import MemoryCluster, SimulatedClock, launched_instance
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request


def test_without_spot_capacity_launch_falls_back_to_on_demand(provider: KWOKProvider) -> None:
    provider.faults.add_insufficient_capacity(capacity_type="spot")
    result = provider.launch(launch_request(provider))
    assert isinstance(result, LaunchResult)
    assert result.instance.capacity_type == "on-demand"
    assert result.instance.instance_type == "c-1x-amd64-linux"
    # The spot offerings passed over are reported, so the core stops offering them.
    assert result.unavailable_offerings
    assert {ct for _, _, ct in result.unavailable_offerings} == {"spot"}
    assert ("c-1x-amd64-linux", "test-zone-a", "spot") in result.unavailable_offerings


def test_an_exhausted_zone_is_skipped(provider: KWOKProvider) -> None:
    provider.faults.add_insufficient_capacity(zone="test-zone-a")
    result = provider.launch(launch_request(provider))
    assert isinstance(result, LaunchResult)
    assert result.instance.zone == "test-zone-b"
    assert {zone for _, zone, _ in result.unavailable_offerings} == {"test-zone-a"}


def test_a_launch_with_capacity_everywhere_reports_nothing(provider: KWOKProvider) -> None:
    assert isinstance(provider.launch(launch_request(provider)), Instance)


def test_when_nothing_has_capacity_launch_names_the_offerings(provider: KWOKProvider) -> None:
    provider.faults.add_insufficient_capacity(instance_type="c-2x-amd64-linux")
    request = launch_request(provider, "nc", (INSTANCE_TYPE_LABEL, "In", ["c-2x-amd64-linux"]))
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.launch(request)
    assert len(raised.value.offerings) == 8
    assert ("c-2x-amd64-linux", "test-zone-a", "spot") in raised.value.offerings
    assert provider.ledger.instances() == []


def test_a_request_with_no_compatible_offering_is_insufficient_capacity(
    provider: KWOKProvider,
) -> None:
    request = launch_request(provider, "nc", (INSTANCE_TYPE_LABEL, "In", ["no-such-type"]))
    assert request.instance_types == ()
    with pytest.raises(InsufficientCapacityError, match="no available offering"):
        provider.launch(request)


def test_the_quota_stops_launches_until_an_instance_is_deleted(provider: KWOKProvider) -> None:
    provider.faults.instance_quota = 2
    provider.launch(launch_request(provider, "a"))
    provider.launch(launch_request(provider, "b"))
    with pytest.raises(LaunchError) as raised:
        provider.launch(launch_request(provider, "c"))
    assert raised.value.reason == "QuotaExceeded"
    # a repeated launch of an existing NodeClaim is not a new instance
    assert launched_instance(provider.launch(launch_request(provider, "a"))).node_claim == "a"
    provider.delete("kwok://a")
    assert launched_instance(provider.launch(launch_request(provider, "c"))).node_claim == "c"


def test_api_errors_fail_the_next_calls_then_stop(provider: KWOKProvider) -> None:
    provider.faults.fail_next("launch", 2)
    provider.faults.fail_next("list")
    request = launch_request(provider)
    for _ in range(2):
        with pytest.raises(TemporaryProviderError):
            provider.launch(request)
    instance = launched_instance(provider.launch(request))
    with pytest.raises(TemporaryProviderError):
        provider.list_instances()
    assert provider.list_instances() == [instance]


def test_latency_delays_registration(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider.faults.latency = timedelta(seconds=3)
    provider.launch(launch_request(provider, "late"))
    assert provider.reconcile(clock.now()) == timedelta(seconds=3)
    assert cluster.get(Node, "late") is None
    clock.advance(timedelta(seconds=3))
    provider.reconcile(clock.now())
    assert cluster.get(Node, "late") is not None


def test_reset_clears_every_fault(provider: KWOKProvider) -> None:
    provider.faults.add_insufficient_capacity()
    provider.faults.instance_quota = 0
    provider.faults.fail_next("launch")
    provider.faults.latency = timedelta(minutes=1)
    provider.faults.reset()
    assert launched_instance(provider.launch(launch_request(provider))).capacity_type == "spot"


def test_faults_can_be_set_through_options(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(
        fault_insufficient_capacity="spot, c-1x-amd64-linux/test-zone-a/*",
        fault_instance_quota="1",
        fault_api_errors="get=1",
        fault_latency="2s",
        manage_nodes="off",
    )
    result = provider.launch(launch_request(provider))
    assert isinstance(result, LaunchResult)
    instance = result.instance
    assert (instance.zone, instance.capacity_type) == ("test-zone-b", "on-demand")
    with pytest.raises(LaunchError):
        provider.launch(launch_request(provider, "second"))
    with pytest.raises(TemporaryProviderError):
        provider.get(instance.provider_id)
    assert provider.get(instance.provider_id) == instance
    assert provider.reconcile(clock.now()) == timedelta(seconds=2)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("fault-insufficient-capacity", "cheap"),
        ("fault-insufficient-capacity", "a/b/c/d"),
        ("fault-insufficient-capacity", "*/*/cheap"),
        ("fault-instance-quota", "-1"),
        ("fault-instance-quota", "many"),
        ("fault-api-errors", "reboot=1"),
        ("fault-api-errors", "launch=x"),
        ("fault-latency", "soon"),
        ("fault-rate", "lanch:0.2"),
        ("fault-rate", "launch"),
        ("fault-rate", "launch:2"),
        ("fault-rate", "get:often"),
        ("fault-rate", "latency:0.5"),
        ("registration-delay", "5 seconds"),
        ("manage-nodes", "perhaps"),
        ("kubelet-period", "0s"),
        ("registration_delay", "5s"),
    ],
)
def test_a_bad_option_is_an_error_naming_it(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock, option: str, value: str
) -> None:
    from nodewright.plugin import ProviderContext

    with pytest.raises(ValueError, match=option):
        provider.configure(ProviderContext(cluster=cluster, clock=clock, options={option: value}))


# -- faults as rates ---------------------------------------------------------------------------


def _configured(
    cluster: MemoryCluster, clock: SimulatedClock, seed: int, **options: str
) -> KWOKProvider:
    from nodewright.plugin import ProviderContext

    provider = KWOKProvider()
    provider.configure(ProviderContext(cluster=cluster, clock=clock, options=options, seed=seed))
    return provider


def _failures(provider: KWOKProvider, hook: str, calls: int) -> list[int]:
    failed = []
    message = ""
    for call in range(calls):
        try:
            provider.faults.check_api(hook)
        except TemporaryProviderError as error:
            failed.append(call)
            message = str(error)
    if failed:
        assert message == f"kwok: injected API error in {hook} (rate 0.2)"
    return failed


def test_a_fault_rate_fails_that_share_of_calls_the_same_way_for_the_same_seed(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    first = _failures(_configured(cluster, clock, 7, **{"fault-rate": "get:0.2"}), "get", 1000)
    again = _failures(_configured(cluster, clock, 7, **{"fault-rate": "get:0.2"}), "get", 1000)
    other = _failures(_configured(cluster, clock, 8, **{"fault-rate": "get:0.2"}), "get", 1000)
    assert 150 <= len(first) <= 250
    assert first == again
    assert first != other
    quiet = _configured(cluster, clock, 7, **{"fault-rate": "get:0.2"})
    for _ in range(100):
        quiet.faults.check_api("list")  # hooks without a rate never fail


def test_a_capacity_rate_moves_launches_to_other_offerings(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = _configured(cluster, clock, 3, **{"fault-rate": "capacity:0.5"})
    offerings = set()
    for index in range(20):
        try:
            launched = provider.launch(launch_request(provider, f"nc-{index}"))
        except InsufficientCapacityError:
            continue
        instance = launched.instance if isinstance(launched, LaunchResult) else launched
        offerings.add((instance.instance_type, instance.zone, instance.capacity_type))
    # Without faults every launch takes the one cheapest offering.
    assert len(offerings) > 1


def test_a_latency_rate_delays_that_share_of_registrations(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = _configured(
        cluster, clock, 1, **{"fault-rate": "latency:0.5", "fault-latency": "2m"}
    )
    for index in range(20):
        provider.launch(launch_request(provider, f"nc-{index}"))
    provider.reconcile(clock.now())
    registered = [n for n in range(20) if cluster.get(Node, f"nc-{n}") is not None]
    assert 0 < len(registered) < 20
    clock.advance(timedelta(minutes=2))
    provider.reconcile(clock.now())
    assert all(cluster.get(Node, f"nc-{index}") is not None for index in range(20))
