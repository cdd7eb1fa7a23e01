"""Summaries with quantiles, as Karpenter's Go client exports them.

prometheus_client's :class:`~prometheus_client.Summary` exports only a count and a sum, but
Karpenter's dashboards read ``{quantile="0.5"}`` and friends of its summaries. This one keeps
the observations of the last ten minutes (Go's default ``MaxAge``, at most ``max_samples`` of
them) and exports their 0, 0.5, 0.9, 0.99 and 1 quantiles, plus the all-time count and sum.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import REGISTRY, Collector

#: Karpenter's summary objectives (``metrics.SummaryObjectives``).
QUANTILES = (0.0, 0.5, 0.9, 0.99, 1.0)
#: Go's ``prometheus.DefMaxAge``.
MAX_AGE = 600.0


class Window:
    """The observations of one label set: recent ones for quantiles, all for count and sum."""

    def __init__(self, max_age: float, max_samples: int, now: Callable[[], float]) -> None:
        self._max_age = max_age
        self._now = now
        self._recent: deque[tuple[float, float]] = deque(maxlen=max_samples)
        self._lock = threading.Lock()
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        with self._lock:
            self._recent.append((self._now(), value))
            self.count += 1
            self.sum += value

    def quantiles(self) -> list[tuple[float, float]]:
        """(quantile, value) of the observations younger than the window; NaN when none."""
        with self._lock:
            oldest = self._now() - self._max_age
            while self._recent and self._recent[0][0] < oldest:
                self._recent.popleft()
            values = sorted(v for _, v in self._recent)
        if not values:
            return [(q, math.nan) for q in QUANTILES]
        return [(q, values[max(0, math.ceil(q * len(values)) - 1)]) for q in QUANTILES]


class QuantileSummary(Collector):
    """A summary metric, by label values, registered on the default registry."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        max_age: float = MAX_AGE,
        max_samples: int = 10_000,
        now: Callable[[], float] = time.monotonic,
        register: bool = True,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._max_age = max_age
        self._max_samples = max_samples
        self._now = now
        self._children: dict[tuple[str, ...], Window] = {}
        self._lock = threading.Lock()
        if register:
            REGISTRY.register(self)

    def labels(self, *values: str) -> Window:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
        with self._lock:
            child = self._children.get(values)
            if child is None:
                child = Window(self._max_age, self._max_samples, self._now)
                self._children[values] = child
            return child

    def observe(self, value: float) -> None:
        """Observe ``value`` (a summary without labels)."""
        self.labels().observe(value)

    def describe(self) -> Iterator[Metric]:
        yield Metric(self.name, self.documentation, "summary")

    def collect(self) -> Iterator[Metric]:
        family = Metric(self.name, self.documentation, "summary")
        with self._lock:
            children = list(self._children.items())
        for values, child in children:
            labels = dict(zip(self.labelnames, values, strict=True))
            for quantile, value in child.quantiles():
                family.add_sample(self.name, {**labels, "quantile": format(quantile, "g")}, value)
            family.add_sample(self.name + "_count", labels, float(child.count))
            family.add_sample(self.name + "_sum", labels, child.sum)
        yield family
