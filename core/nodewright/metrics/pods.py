"""``karpenter_pods_state``: one series per pod, value 1, exported on scrape.

A prometheus_client labelled gauge makes a child object (with its own lock and value) for every
label combination, and a pod changes labels two or three times on its way to Running: at
100,000 pods that is a large share of a simulation's CPU and memory. This collector keeps only
each pod's label values, set by the pod metrics controller as pods change, and builds the family
when scraped.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector


class PodStates(Collector):
    """Each pod's ``pods_state`` label values, by a key the caller chooses."""

    def __init__(self, name: str, documentation: str, label_names: Sequence[str]) -> None:
        self._name = name
        self._documentation = documentation
        self._label_names = list(label_names)
        self._lock = threading.Lock()
        self._series: dict[Hashable, tuple[str, ...]] = {}
        REGISTRY.register(self)

    def set(self, key: Hashable, labels: tuple[str, ...]) -> None:
        """The pod at ``key`` now has these label values (in ``label_names`` order)."""
        if len(labels) != len(self._label_names):
            raise ValueError(f"{self._name}: {len(labels)} label values for {self._label_names}")
        with self._lock:
            self._series[key] = labels

    def remove(self, key: Hashable) -> None:
        with self._lock:
            self._series.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._series.clear()

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            series = list(self._series.values())
        family = GaugeMetricFamily(self._name, self._documentation, labels=self._label_names)
        for labels in sorted(series):
            family.add_metric(labels, 1.0)
        yield family
