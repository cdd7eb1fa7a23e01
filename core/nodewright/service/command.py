"""The ``nodewright run`` subcommand: flags, and wiring settings to the service."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any

from nodewright.cluster import ClusterError
from nodewright.plugin.host import PluginHost
from nodewright.service import logs
from nodewright.service.runner import RunService, connect
from nodewright.settings import SettingsError, add_flags, load_settings

EXIT_INVALID_INPUT = 2

log = logging.getLogger("nodewright.run")


def add_run_command(commands: Any, load_host: Callable[[], PluginHost]) -> None:
    """Register ``run`` on the CLI's subparsers."""
    run = commands.add_parser(
        "run",
        help="operate a real cluster (kubeconfig or in-cluster service account)",
        description="Run the controllers against a Kubernetes API server on the wall clock, "
        "with leader election, /healthz, /readyz and /metrics. Every flag is also an "
        "environment variable (the flag's name in upper case with underscores).",
    )
    add_flags(run)
    run.set_defaults(handler=lambda args: cmd_run(args, load_host))


def cmd_run(args: argparse.Namespace, load_host: Callable[[], PluginHost]) -> int:
    try:
        settings = load_settings(args)
    except SettingsError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    logs.configure(settings.log_level, settings.log_format)
    host = load_host()
    if not host.node_class_kinds():
        print('error: no provider installed; e.g. pip install "nodewright[kwok]"', file=sys.stderr)
        return EXIT_INVALID_INPUT
    try:
        cluster = connect(settings)
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    service = RunService(settings, cluster, host)
    try:
        service.start_endpoints()
    except OSError as error:
        print(f"error: cannot listen on the metrics or health port: {error}", file=sys.stderr)
        cluster.close()
        return EXIT_INVALID_INPUT
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: service.request_stop())
    log.info("starting against %s as %s", cluster.host, service.identity)
    return service.run()
