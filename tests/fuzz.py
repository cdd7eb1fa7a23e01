"""The Hypothesis settings every fuzz test runs with: the same examples on every run (no
database, derandomized), no deadline (one example runs nodewright, about a second) and no
health checks (the generated inputs are large on purpose)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def fuzz_settings(examples: int) -> settings:
    """Settings for a fuzz test that tries ``examples`` inputs."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
