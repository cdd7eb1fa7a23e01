"""``nodewright crds``: the CustomResourceDefinitions to install, as YAML.

NodePool and NodeClaim from the core (:mod:`nodewright.api.crds`), and the NodeClass CRD of
every installed provider (``NodeClassKind.custom_resource_definition``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from nodewright.api.crds import core_crds
from nodewright.commands.command import EXIT_INVALID_INPUT, EXIT_OK, Command
from nodewright.commands.host import load_host
from nodewright.plugin.host import PluginHost


class CrdError(Exception):
    """A CRD that cannot be built or written; the message says which and why."""


def all_crds(host: PluginHost) -> list[Mapping[str, Any]]:
    """Core CRDs first, then each provider's NodeClass CRDs in the host's order.

    Raises :class:`CrdError` naming the kind when a provider's CRD cannot be built.
    """
    crds: list[Mapping[str, Any]] = list(core_crds())
    for kind in host.node_class_kinds():
        try:
            crd = kind.custom_resource_definition()
            name = crd["metadata"]["name"]
        except Exception as error:  # a provider's bug must not become a traceback here
            raise CrdError(
                f"the CRD of {kind.kind} ({kind.group}) cannot be built: "
                f"{type(error).__name__}: {error}"
            ) from error
        if not isinstance(name, str) or not name:
            raise CrdError(f"the CRD of {kind.kind} ({kind.group}) has no metadata.name")
        crds.append(crd)
    return crds


def dump(crd: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(crd), sort_keys=False, default_flow_style=False, width=100)


def run_crds(
    host: PluginHost,
    output_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print every CRD, or write one ``<name>.yaml`` per CRD into ``output_dir``.

    A CRD that cannot be built or a directory that cannot be written is one ``error:`` line
    on stderr and exit status 2.
    """
    try:
        crds = all_crds(host)
        if output_dir is not None:
            _write(crds, output_dir)
            return EXIT_OK
    except CrdError as error:
        print(f"error: {error}", file=err or sys.stderr)
        return EXIT_INVALID_INPUT
    stream = out or sys.stdout
    stream.write("".join(f"---\n{dump(crd)}" for crd in crds))
    return EXIT_OK


def _write(crds: Sequence[Mapping[str, Any]], output_dir: Path) -> None:
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        for crd in crds:
            (output_dir / f"{crd['metadata']['name']}.yaml").write_text(dump(crd), encoding="utf-8")
    except OSError as error:
        raise CrdError(
            f"{error.filename or output_dir}: cannot write: {error.strerror or error}"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir", metavar="DIR", help="write one YAML file per CRD into DIR instead"
    )


def run(args: argparse.Namespace) -> int:
    return run_crds(load_host(), Path(args.output_dir) if args.output_dir else None)


COMMAND = Command(
    "crds",
    help="print the CRDs: NodePool, NodeClaim and each installed provider's NodeClass",
    run=run,
    add_arguments=add_arguments,
)
