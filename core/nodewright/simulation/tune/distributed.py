"""Running variants on a Ray cluster (``tune --ray ADDRESS``, the optional extra
``nodewright[distributed]``): each variant one Ray task, results handed back as they finish,
as :mod:`.local` does on this machine.

What travels is what a local worker process gets: the pickled job (the inputs read and checked
here, the space, which providers to load), put in the cluster's object store once, and each
task's variant. The cluster's nodes need nodewright and the same providers installed; no files,
no environment. A variant's result does not depend on where it ran (:mod:`.worker`).

Ray is imported only when a tune runs on it. Anything that keeps the cluster from running the
variants (Ray not installed, the address unreachable, a worker that died and stayed dead, the
workers unable to import nodewright) is a :class:`ClusterError` naming the address; an
exception in a variant's own run is that variant's failure, as a scenario step it breaks is.
Ctrl-C disconnects from the cluster, which stops the tasks not yet finished; the results that
are finished are kept.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nodewright.api.excerpt import cut
from nodewright.simulation.tune.job import Variant
from nodewright.simulation.tune.local import OnResult
from nodewright.simulation.tune.worker import VariantResult, run_variant

if TYPE_CHECKING:
    from ray import ObjectRef

#: How long the address may take to answer before the cluster counts as unreachable.
CONNECT_TIMEOUT = 10.0
#: How often (seconds) the wait for results wakes, so that Ctrl-C is seen promptly.
_WAIT = 1.0
#: Ray retries a task whose worker process died this many times before giving up.
_RETRIES = 2


class ClusterError(Exception):
    """The Ray cluster cannot run the variants; the message names the address."""


def run_on_ray(
    payload: bytes, variants: Sequence[Variant], address: str, on_result: OnResult
) -> bool:
    """Run the variants as tasks of the Ray cluster at ``address``; True when interrupted,
    :class:`ClusterError` when the cluster cannot run them (the results handed to
    ``on_result`` before it are kept)."""
    # Read when Ray is imported. Ray's own C++ logging (connection retries, shutdown) would
    # interleave with the progress lines; what matters of it comes back as an exception.
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    # Under `uv run`, Ray would upload the working directory and start every worker with
    # `uv run` in it; the workers run the nodewright installed on the cluster's nodes.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray  # noqa: PLC0415 (only with --ray, and only where the extra is installed)
    except ImportError:
        raise ClusterError(
            f"--ray {address}: Ray is not installed here; install the extra "
            "nodewright[distributed] (pip install 'nodewright[distributed]')"
        ) from None
    _check_reachable(address)
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        with _held_back_stderr():
            ray.init(
                address=address,
                log_to_driver=False,
                logging_level=logging.ERROR,
                include_dashboard=False,
            )
    except KeyboardInterrupt:
        return True
    except Exception as error:
        raise ClusterError(f"--ray {address}: cannot connect: {_refusal(ray, error)}") from None
    try:
        return _run(ray, payload, variants, address, on_result)
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, sigterm)


def _run(
    ray: Any, payload: bytes, variants: Sequence[Variant], address: str, on_result: OnResult
) -> bool:
    task = ray.remote(num_cpus=1, max_retries=_RETRIES)(run_variant)
    pending: dict[ObjectRef[VariantResult], Variant] = {}
    try:
        job = ray.put(payload)
        pending = {task.remote(job, variant): variant for variant in variants}
        while pending:
            # Whatever finished within the wait: one pass over the refs per wait, not per
            # result (a search has up to 10,000 variants).
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_WAIT)
            for ref in done:
                variant = pending.pop(ref)
                on_result(_result(ray, ref, variant, address))
    except KeyboardInterrupt:
        # Not ray.cancel: the driver's disconnect ends the job, and the cluster stops its
        # workers (cancelling tasks as they finish can abort the driver).
        return True
    except ray.exceptions.RayError as error:
        raise ClusterError(f"--ray {address}: {_first_line(error)}") from None
    except ConnectionError as error:
        raise ClusterError(f"--ray {address}: lost the cluster: {_first_line(error)}") from None
    return False


def _result(
    ray: Any, ref: ObjectRef[VariantResult], variant: Variant, address: str
) -> VariantResult:
    """The variant's result; its own exception as its failure; a worker that died (after
    Ray's retries) or cannot import nodewright as a :class:`ClusterError`."""
    try:
        result: VariantResult = ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        cause = error.cause
        missing = _import_failure(ray, cause)
        if missing is not None:
            raise ClusterError(
                f"--ray {address}: the cluster's workers cannot run nodewright: "
                f"{missing} (install nodewright and its providers on every node)"
            ) from None
        what = _first_line(cause) if cause is not None else _first_line(error)
        return VariantResult(
            variant.index, error=f"failed on a Ray worker: {type(cause).__name__}: {what}"
        )
    except ray.exceptions.RayError as error:
        raise ClusterError(
            f"--ray {address}: variant {variant.index} did not finish: {_first_line(error)}"
        ) from None
    return result


def _import_failure(ray: Any, cause: BaseException | None) -> str | None:
    """What a worker could not import, when that is why the task failed: raised by the task
    itself, or (a worker that cannot load the task's arguments, which name nodewright's
    classes) by Ray's loading of them, which it hands on as a system error."""
    seen: object = cause
    while isinstance(seen, BaseException):
        if isinstance(seen, ImportError):
            return _first_line(seen)
        if isinstance(seen, ray.exceptions.RaySystemError):
            seen = seen.client_exc
        else:
            seen = seen.__cause__ or seen.__context__
    return None


def _check_reachable(address: str) -> None:
    """:class:`ClusterError` unless ``HOST:PORT`` (or ``ray://HOST:PORT``) takes a
    connection; Ray itself would retry an unreachable address for many minutes."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep:
        return  # "auto" and the like: Ray looks for the cluster itself
    if not port.isdigit() or not host:
        raise ClusterError(
            f"--ray {address}: expected HOST:PORT, ray://HOST:PORT or auto "
            "(the address of the cluster's head)"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise ClusterError(f"--ray {address}: cannot reach the Ray cluster: {reason}") from None


@contextmanager
def _held_back_stderr() -> Iterator[None]:
    """Ray's connection retries write to the process's stderr from C++, once a second, for as
    long as it tries; the refusal comes back as an exception, said once."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _refusal(ray: Any, error: BaseException) -> str:
    """Why ``ray.init`` failed: a token the cluster asks for, else what Ray said first."""
    seen: BaseException | None = error
    while seen is not None:
        # Ray wraps the refusal in errors that quote it as text.
        if isinstance(seen, ray.exceptions.AuthenticationError) or "InvalidAuthToken" in str(seen):
            return (
                "the cluster asks for a token (Ray's token authentication): give it in "
                "RAY_AUTH_TOKEN, or in a file RAY_AUTH_TOKEN_PATH names"
            )
        seen = seen.__cause__ or seen.__context__
    return _first_line(error)


def _first_line(error: BaseException) -> str:
    """The first non-empty line of what ``error`` says (Ray's messages run to pages)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return cut(lines[0] if lines else type(error).__name__)
