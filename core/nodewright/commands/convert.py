"""``nodewright convert``: print retired Karpenter manifests as current ones.

Files are read by the same loader as ``simulate`` (:func:`nodewright.api.manifests.
loading.load_manifests`), which converts retired versions (:mod:`nodewright.api.convert`) and reads
every result with the current models and rules. So ``convert`` prints only manifests that
``simulate`` and the API server would accept: anything it cannot convert faithfully is an
error (``file:line``, exit status 2, nothing printed), and every field it drops or infers is a
warning on stderr. Documents of kinds nodewright does not read (a Service, a ConfigMap) pass
through unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import ExtraRules, load_manifests
from nodewright.commands.command import EXIT_INVALID_INPUT, EXIT_OK, Command
from nodewright.commands.host import load_host
from nodewright.simulation.inputs import karpenter_rules, kind_registry


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the YAML loader's marked subclasses do not dump cleanly)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def run_convert(
    paths: Sequence[Path],
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    registry: KindRegistry | None = None,
    rules: ExtraRules | None = None,
) -> int:
    """Convert every document in ``paths`` (files or directories) and print them as YAML."""
    out = out or sys.stdout
    err = err or sys.stderr
    result = load_manifests(paths, registry or KindRegistry(), rules=rules, keep_unknown_kinds=True)
    for warning in result.warnings:
        print(f"warning: {warning}", file=err)
    if result.errors:
        for error in result.errors:
            print(f"error: {error}", file=err)
        return EXIT_INVALID_INPUT
    out.write(
        yaml.safe_dump_all(
            [_plain(m.document) for m in result.manifests],
            sort_keys=False,
            default_flow_style=False,
        )
    )
    return EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE", help="manifest files or directories")


def run(args: argparse.Namespace) -> int:
    host = load_host()
    return run_convert(
        [Path(p) for p in args.paths], registry=kind_registry(host), rules=karpenter_rules(host)
    )


COMMAND = Command(
    "convert",
    help="print retired Karpenter manifests (v1alpha5, v1beta1, v1alpha2) as current ones",
    description="Convert Provisioner/AWSNodeTemplate (v1alpha5), v1beta1 NodePool/NodeClaim "
    "and v1alpha2 AKSNodeClass documents to karpenter.sh/v1 and current NodeClasses; other "
    "documents pass through. Fields that cannot be carried over are named on stderr.",
    run=run,
    add_arguments=add_arguments,
)
