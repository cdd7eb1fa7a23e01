"""Prometheus text lines written once per change instead of once per scrape.

The series with one member per node or per pod (tens of thousands at 2,000 nodes) cost most of
a scrape when prometheus_client formats every sample each time. Their collectors keep each
member's lines already formatted, exactly as prometheus_client's ``generate_latest`` writes them
(labels sorted by name, values as Go formats floats), update them when the member changes, and
join them when scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import cast

from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

#: The preformatted collectors. They are not on prometheus_client's default registry (whose
#: generic scrape would format them again); :func:`nodewright.metrics.exposition` appends them.
PREFORMATTED = CollectorRegistry(auto_describe=False)

#: How prometheus_client writes a value (Go's float formatting: "+Inf", "1.0", "1e+06").
go_float = cast(Callable[[float], str], floatToGoString)


def label_text(pairs: Iterable[tuple[str, str]]) -> str:
    """``{a="1",b="2"}``: the pairs sorted by name and escaped; "" without labels."""
    body = ",".join(f'{name}="{escape(value)}"' for name, value in sorted(pairs))
    return f"{{{body}}}" if body else ""


def escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def header(name: str, documentation: str, kind: str = "gauge") -> str:
    """The ``# HELP`` and ``# TYPE`` lines of a family."""
    help_text = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def sample_line(name: str, labels: str, value: float) -> str:
    return f"{name}{labels} {go_float(value)}\n"
