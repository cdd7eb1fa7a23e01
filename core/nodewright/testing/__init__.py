"""The test kit for provider authors and for the core's own tests.

* :class:`FakeProvider`: an in-memory provider with a call log, error injection and
  Karpenter's fake catalog (:mod:`nodewright.testing.catalog`, also for building NodePools).
* :class:`ProviderConformance`: the contract every provider must pass; subclass it in a
  provider package's tests (needs pytest).
* :func:`make_node_claim`, :func:`launch_request`: build what the core would send;
  :func:`launched_instance`: the Instance of a launch a test made on its provider directly.
* :class:`MemoryCluster`, :class:`SimulatedClock`: the in-memory cluster and the clock to
  build a :class:`~nodewright.plugin.ProviderContext` from in a provider's tests.

Modules to import by name:

* :mod:`nodewright.testing.manifests`: manifest text as a user writes it (NodePools,
  Deployments, PodDisruptionBudgets), to feed a simulation.
* :mod:`nodewright.testing.simulate`: run ``nodewright simulate`` from a test and read its
  JSON report.
* :mod:`nodewright.testing.pytest_plugin`: opt-in fixtures (``fake_provider``,
  ``simulated_clock``, ``make_plugin_host``, ``plugin_host``).

A provider's tests import from here and from :mod:`nodewright.plugin` only.

Nothing in the core imports this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.testing.catalog import (
    default_instance_types,
    fake_instance_type,
    gpu_instance_type,
    karpenter_instance_types,
    price_from_resources,
)
from nodewright.testing.fake_provider import (
    FakeNodeClass,
    FakeNodeClassSpec,
    FakeProvider,
    fake_node_class,
)
from nodewright.testing.launches import launched_instance

if TYPE_CHECKING:
    from nodewright.testing.conformance import (
        ProviderConformance,
        launch_request,
        make_node_claim,
        node_claim_requirements,
    )

_NEEDS_PYTEST = {
    "ProviderConformance",
    "launch_request",
    "make_node_claim",
    "node_claim_requirements",
}


def __getattr__(name: str) -> Any:
    # The conformance suite imports pytest; load it only when asked for.
    if name in _NEEDS_PYTEST:
        return getattr(importlib.import_module("nodewright.testing.conformance"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FakeNodeClass",
    "FakeNodeClassSpec",
    "FakeProvider",
    "MemoryCluster",
    "ProviderConformance",
    "SimulatedClock",
    "default_instance_types",
    "fake_instance_type",
    "fake_node_class",
    "gpu_instance_type",
    "karpenter_instance_types",
    "launch_request",
    "launched_instance",
    "make_node_claim",
    "node_claim_requirements",
    "price_from_resources",
]
