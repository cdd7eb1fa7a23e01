"""``nodewright crds``: the CustomResourceDefinitions to install, as YAML.

NodePool and NodeClaim from the core (:mod:`nodewright.api.crds`), and the NodeClass CRD of
every installed provider that supplies one (``NodeClassKind.crd``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from nodewright.api.crds import core_crds
from nodewright.plugin.host import PluginHost

EXIT_OK = 0


def all_crds(host: PluginHost) -> list[Mapping[str, Any]]:
    """Core CRDs first, then each provider's NodeClass CRDs in the host's order."""
    crds: list[Mapping[str, Any]] = list(core_crds())
    for kind in host.node_class_kinds():
        if kind.crd is not None:
            crds.append(kind.crd())
    return crds


def dump(crd: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(crd), sort_keys=False, default_flow_style=False, width=100)


def run_crds(host: PluginHost, output_dir: Path | None = None, out: TextIO | None = None) -> int:
    """Print every CRD, or write one ``<name>.yaml`` per CRD into ``output_dir``."""
    crds = all_crds(host)
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
        for crd in crds:
            name = crd["metadata"]["name"]
            (output_dir / f"{name}.yaml").write_text(dump(crd), encoding="utf-8")
        return EXIT_OK
    stream = out or sys.stdout
    stream.write("".join(f"---\n{dump(crd)}" for crd in crds))
    return EXIT_OK


def names(crds: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(crd["metadata"]["name"]) for crd in crds]
