"""``nodewright run``: operate a real cluster; its flags, and wiring settings to the service."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys

from nodewright.api.meta import build_models
from nodewright.cluster import ClusterError
from nodewright.cluster.objects import tune_collector
from nodewright.commands.command import EXIT_INVALID_INPUT, Command
from nodewright.commands.host import load_host
from nodewright.commands.kubeconfig import kubeconfig_problem
from nodewright.service import logs

log = logging.getLogger("nodewright.run")

# The service (the API client, the HTTP endpoints) and the settings (pydantic-settings) are
# imported when ``run`` runs or shows its flags, not with the module: every ``nodewright``
# command imports this one to list it.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from nodewright.settings.run import add_flags  # noqa: PLC0415 (see above)

    add_flags(parser)


def run(args: argparse.Namespace) -> int:
    from nodewright.service.runner import RunService, connect  # noqa: PLC0415 (see above)
    from nodewright.settings.run import SettingsError, load_settings  # noqa: PLC0415

    tune_collector()
    try:
        settings = load_settings(args)
    except SettingsError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    try:
        logs.configure(settings.log_level, settings.log_format, output_paths=settings.output_paths)
    except OSError as error:
        print(f"error: --log-output-paths / LOG_OUTPUT_PATHS: {error}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    host = load_host()
    if not host.node_class_kinds():
        print('error: no provider installed; e.g. pip install "nodewright[kwok]"', file=sys.stderr)
        return EXIT_INVALID_INPUT
    build_models()  # before any thread reads or writes an object (see build_models)
    problem = kubeconfig_problem(settings.kubeconfig)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
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
    code = service.run()
    _exit_now(code)
    return code  # not reached


def _exit_now(code: int) -> None:
    """End the process at once. Everything is released and logged by now; an ordinary exit
    would then free the caches object by object, which takes seconds with thousands of pods
    (and a pod's terminationGracePeriod is counting)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


COMMAND = Command(
    "run",
    help="operate a real cluster (kubeconfig or in-cluster service account)",
    description="Run the controllers against a Kubernetes API server on the wall clock, "
    "with leader election, /healthz, /readyz and /metrics. Every flag is also an "
    "environment variable (the flag's name in upper case with underscores).",
    run=run,
    add_arguments=add_arguments,
)
