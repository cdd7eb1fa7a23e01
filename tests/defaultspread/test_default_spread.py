"""Default topology spread (``SCHEDULER_CONFIG``'s ``podTopologySpread.defaultConstraints``):
pods without a spread of their own get the defaults, with the selector kube-scheduler deduces
from the Services selecting them and their ReplicaSet / StatefulSet / ReplicationController;
provisioning and the simulated kube-scheduler agree, so the nodes launched are the nodes used.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from nodewright.commands import main
from nodewright.settings.schedulerconfig import SchedulerConfigError, load_scheduler_config
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate, SimulateResult

ZONE_SPREAD = (
    "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, "
    "topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}}"
)

OWN_LOOSE_SPREAD = """
topologySpreadConstraints:
  - maxSkew: 5
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
"""


def bare_pods(count: int, labels: str = "{app: cache}") -> str:
    return "".join(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: cache-{i}, namespace: default, labels: {labels}}}
spec:
  containers:
    - name: app
      image: pause
      resources: {{requests: {{cpu: 100m}}}}
---
"""
        for i in range(count)
    )


SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: cache, namespace: default}
spec:
  selector: {app: cache}
  ports: [{port: 80}]
---
"""


def zones_of_pods(result: SimulateResult) -> Counter[str]:
    """How many bound pods each zone holds."""
    return Counter(n["zone"] for n in result.nodes() for _ in n["pods"])


def test_replicas_spread_over_zones_only_with_the_default(simulate: Simulate) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("web", 3, cpu="100m")
    plain = simulate(manifests)
    assert plain.exit_code == 0
    assert len(plain.nodes()) == 1

    spread = simulate(manifests, None, "--scheduler-config", ZONE_SPREAD)
    assert spread.exit_code == 0
    assert spread.pending() == []
    # One replica per zone, on the nodes provisioning launched for them: the simulated
    # kube-scheduler honours the same default, so no node is left empty.
    assert sorted(zones_of_pods(spread).values()) == [1, 1, 1]
    assert len(spread.nodes()) == 3
    assert all(len(n["pods"]) == 1 for n in spread.nodes())


def test_a_pod_with_its_own_spread_keeps_it(simulate: Simulate) -> None:
    manifests = (
        node_pool()
        + KWOK_NODE_CLASS
        + deployment("web", 3, cpu="100m", extra_spec=OWN_LOOSE_SPREAD)
    )
    result = simulate(manifests, None, "--scheduler-config", ZONE_SPREAD)
    assert result.exit_code == 0
    assert len(result.nodes()) == 1, "maxSkew 5 of its own lets all three share a zone"


def test_bare_pods_are_spread_only_when_a_service_selects_them(simulate: Simulate) -> None:
    alone = simulate(
        node_pool() + KWOK_NODE_CLASS + bare_pods(3), None, "--scheduler-config", ZONE_SPREAD
    )
    assert alone.exit_code == 0
    assert len(alone.nodes()) == 1, "no owner and no Service: no selector, no default"

    served = simulate(
        node_pool() + KWOK_NODE_CLASS + SERVICE + bare_pods(3),
        None,
        "--scheduler-config",
        ZONE_SPREAD,
    )
    assert served.exit_code == 0
    assert served.pending() == []
    assert sorted(zones_of_pods(served).values()) == [1, 1, 1]


def test_the_config_may_be_a_file(simulate: Simulate, tmp_path: Path) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "podTopologySpread:\n  defaultConstraints:\n    - maxSkew: 1\n"
        "      topologyKey: topology.kubernetes.io/zone\n      whenUnsatisfiable: DoNotSchedule\n"
    )
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 3, cpu="100m"),
        None,
        "--scheduler-config",
        str(config),
    )
    assert result.exit_code == 0
    assert len(result.nodes()) == 3


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule}]}}",
            "podTopologySpread.defaultConstraints[0].maxSkew must be greater than 0",
        ),
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: Sometimes}]}}",
            "podTopologySpread.defaultConstraints[0].whenUnsatisfiable 'Sometimes' must be one of",
        ),
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}}]}}",
            ".labelSelector must not be set, as selectors are deduced for each pod",
        ),
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [a]}]}}",
            ".matchLabelKeys must not be set",
        ),
        (
            "{podTopologySpread: {defaultConstraints: ["
            "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule},"
            "{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}}",
            "podTopologySpread.defaultConstraints[1] is a duplicate of [0], {zone, DoNotSchedule}",
        ),
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: 'bad key', "
            "whenUnsatisfiable: DoNotSchedule}]}}",
            ".topologyKey 'bad key' is not a valid label name",
        ),
        ("{podTopologySpreads: {}}", "podTopologySpreads: Extra inputs are not permitted"),
        (
            "{podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule, minDomain: 2}]}}",
            "defaultConstraints[0].minDomain: unknown field",
        ),
        ("podTopologySpread: [", "decoding scheduler config"),
        ("/nonexistent/scheduler.yaml", "cannot read '/nonexistent/scheduler.yaml'"),
    ],
)
def test_a_malformed_config_is_refused_naming_the_field(value: str, message: str) -> None:
    with pytest.raises(SchedulerConfigError) as error:
        load_scheduler_config(value)
    assert message in str(error.value)


def test_an_empty_config_means_no_defaults() -> None:
    assert load_scheduler_config("") is None
    config = load_scheduler_config(ZONE_SPREAD)
    assert config is not None
    assert [c.topology_key for c in config.default_constraints] == ["topology.kubernetes.io/zone"]


def test_simulate_refuses_a_malformed_config(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS, None, "--scheduler-config", "{bogus: 1}")
    assert result.exit_code == 2
    assert "error: --scheduler-config: decoding scheduler config, bogus:" in result.stderr


def test_run_refuses_a_malformed_config(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_CONFIG", "{podTopologySpread: {defaultConstraints: [{}]}}")
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --scheduler-config / SCHEDULER_CONFIG: decoding scheduler config")
    assert "Traceback" not in err
