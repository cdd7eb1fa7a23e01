"""Running variants on this machine: in this process, or in worker processes, one variant
at a time each, results handed back as they finish.

Ctrl-C (SIGINT to the terminal's process group) stops the run: workers ignore it, this
process terminates them, and the results finished so far are kept. Each worker gets the
pickled job once and unpickles it afresh for every variant.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Sequence

from nodewright.simulation.tune.job import Variant
from nodewright.simulation.tune.worker import VariantResult, run_variant

#: Called with each result as it arrives.
OnResult = Callable[[VariantResult], None]

#: The pickled job, in a worker process (set when it starts).
_worker: dict[str, bytes] = {}


def run_here(payload: bytes, variants: Sequence[Variant], on_result: OnResult) -> bool:
    """Run the variants one after the other in this process; True when interrupted."""
    try:
        for variant in variants:
            on_result(run_variant(payload, variant))
    except KeyboardInterrupt:
        return True
    return False


def run_processes(
    payload: bytes, variants: Sequence[Variant], processes: int, on_result: OnResult
) -> bool:
    """Run the variants in ``processes`` worker processes; True when interrupted."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        # The server imports the simulation once; each worker starts from it.
        context.set_forkserver_preload([__name__])
    pool = context.Pool(processes, initializer=_start_worker, initargs=(payload,))
    try:
        for result in pool.imap_unordered(_run, variants, chunksize=1):
            on_result(result)
    except KeyboardInterrupt:
        pool.terminate()
        pool.join()
        return True
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
    return False


def _start_worker(payload: bytes) -> None:
    # The terminal's Ctrl-C reaches every process of its group: the parent decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker["payload"] = payload


def _run(variant: Variant) -> VariantResult:
    return run_variant(_worker["payload"], variant)
