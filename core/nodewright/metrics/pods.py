"""``karpenter_pods_state``: one series per pod, value 1.

A prometheus_client labelled gauge makes a child object (with its own lock and value) for every
label combination, and a pod changes labels two or three times on its way to Running: at
100,000 pods that is a large share of a simulation's CPU and memory, and formatting every pod's
line on each scrape is most of a scrape. This collector keeps each pod's line, formatted when
the pod metrics controller sets it (see :mod:`nodewright.metrics.text`).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from nodewright.metrics.text import PREFORMATTED, header, label_text, sample_line


class PodStates(Collector):
    """Each pod's ``pods_state`` series, by a key the caller chooses."""

    def __init__(self, name: str, documentation: str, label_names: Sequence[str]) -> None:
        self._name = name
        self._documentation = documentation
        self._label_names = tuple(label_names)
        self._lock = threading.Lock()
        #: key -> (label values, the formatted line)
        self._series: dict[Hashable, tuple[tuple[str, ...], str]] = {}
        PREFORMATTED.register(self)

    def set(self, key: Hashable, labels: tuple[str, ...]) -> None:
        """The pod at ``key`` now has these label values (in ``label_names`` order)."""
        pairs = zip(self._label_names, labels, strict=True)
        line = sample_line(self._name, label_text(pairs), 1.0)
        with self._lock:
            self._series[key] = (labels, line)

    def remove(self, key: Hashable) -> None:
        with self._lock:
            self._series.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._series.clear()

    def text(self) -> str:
        """The family as the Prometheus text format writes it."""
        with self._lock:
            lines = [line for _, line in self._series.values()]
        return header(self._name, self._documentation) + "".join(lines)

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            series = [labels for labels, _ in self._series.values()]
        family = GaugeMetricFamily(self._name, self._documentation, labels=self._label_names)
        for labels in series:
            family.add_metric(labels, 1.0)
        yield family
