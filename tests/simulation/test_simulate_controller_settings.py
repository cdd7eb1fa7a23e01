"""simulate takes run's controller settings (issue 16): --preference-policy, --min-values-policy
and --feature-gates, so what they change can be tried offline."""

from __future__ import annotations

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

SPREAD_BY_PREFERENCE = """
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
"""


def test_preferences_are_respected_unless_the_policy_ignores_them(simulate: Simulate) -> None:
    manifests = (
        node_pool() + KWOK_NODE_CLASS + deployment("web", 3, extra_spec=SPREAD_BY_PREFERENCE)
    )
    respected = simulate(manifests)
    assert respected.exit_code == 0
    assert len(respected.nodes()) == 3  # one pod per node, as preferred
    ignored = simulate(manifests, None, "--preference-policy", "Ignore")
    assert ignored.exit_code == 0
    assert len(ignored.nodes()) == 1


# KWOK's catalog has three instance families (c, s, m): five cannot be had.
MIN_VALUES = "[{key: karpenter.kwok.sh/instance-family, operator: Exists, minValues: 5}]"


def test_min_values_that_cannot_be_met_launch_only_with_best_effort(simulate: Simulate) -> None:
    manifests = node_pool(requirements=MIN_VALUES) + KWOK_NODE_CLASS + deployment("web", 2)
    strict = simulate(manifests)
    assert strict.exit_code == 0
    assert strict.nodes() == []
    best_effort = simulate(manifests, None, "--min-values-policy", "BestEffort")
    assert best_effort.exit_code == 0
    assert len(best_effort.nodes()) == 1


def test_an_unknown_feature_gate_is_refused(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS, None, "--feature-gates", "SpotToSpot=true")
    assert result.exit_code == 2
    assert "error: --feature-gates SpotToSpot=true: unknown feature gate 'SpotToSpot'" in (
        result.stderr
    )
