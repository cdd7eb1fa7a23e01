"""Running variants on this machine: in this process, or in worker processes, one variant
at a time each, results handed back as they finish.

Each worker process gets the pickled job once, when it starts, and then one variant at a time
through a pipe of its own; this process waits on the pipes and on the processes themselves, so
it spends no CPU while the variants run. A worker that dies while it runs a variant (killed,
say by the kernel when memory runs out, or a variant's run that exits the process) fails that
variant, with how the process ended, and a new worker takes the variants still to run. The
variant is not run again: a run depends only on the job and the variant, so one that ended its
process once would most likely do it again, at the cost of another run.

Ctrl-C (SIGINT to the terminal's process group) stops the run: workers ignore it, this
process terminates them, and the results finished so far are kept.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess

from nodewright.simulation.tune.job import Variant
from nodewright.simulation.tune.worker import VariantResult, run_variant

#: Called with each result as it arrives.
OnResult = Callable[[VariantResult], None]

#: How long (seconds) a worker told to stop may take to exit before it is terminated.
_STOP_WAIT = 5.0


def run_here(payload: bytes, variants: Sequence[Variant], on_result: OnResult) -> bool:
    """Run the variants one after the other in this process; True when interrupted."""
    try:
        for variant in variants:
            on_result(_run_variant(payload, variant))
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
    todo = deque(variants)
    workers: list[_Worker] = []
    try:
        while todo and len(workers) < processes:
            workers.append(_Worker(context, payload, todo.popleft()))
        while workers:
            # A result in a pipe, or a process that ended.
            waited: dict[object, _Worker] = {w.connection: w for w in workers}
            waited.update({w.process.sentinel: w for w in workers})
            ready = wait([w.connection for w in workers] + [w.process.sentinel for w in workers])
            woken = {waited[each] for each in ready}
            for worker in [w for w in workers if w in woken]:
                result = worker.receive()
                if result is None:
                    # The process ended without handing the result back.
                    result = VariantResult(worker.variant.index, error=worker.death())
                    worker.close()
                    workers.remove(worker)
                    if todo:
                        workers.append(_Worker(context, payload, todo.popleft()))
                elif todo:
                    variant = todo.popleft()
                    if not worker.give(variant):
                        # It ended after handing back its result: the next one goes to a new
                        # worker.
                        worker.kill()
                        workers.remove(worker)
                        workers.append(_Worker(context, payload, variant))
                else:
                    worker.stop()
                    workers.remove(worker)
                on_result(result)
    except KeyboardInterrupt:
        for worker in workers:
            worker.kill()
        return True
    except BaseException:
        for worker in workers:
            worker.kill()
        raise
    return False


class _Worker:
    """A worker process and this process's end of its pipe, with the variant it runs."""

    def __init__(self, context: BaseContext, payload: bytes, variant: Variant) -> None:
        self.connection, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(  # type: ignore[attr-defined]
            target=_serve, args=(payload, theirs), daemon=True
        )
        self.process.start()
        theirs.close()
        self.variant = variant
        # A worker that dies before it takes its variant fails it, as one that dies later.
        self.give(variant)

    def give(self, variant: Variant) -> bool:
        """Hand it ``variant``; False when its process has ended."""
        self.variant = variant
        try:
            self.connection.send(variant)
        except OSError:  # BrokenPipeError: nobody reads the other end
            return False
        return True

    def receive(self) -> VariantResult | None:
        """The result of the variant it ran; None when the process ended without one."""
        try:
            if self.connection.poll():
                result: VariantResult = self.connection.recv()
                return result
        except (EOFError, OSError):
            pass
        return None

    def death(self) -> str:
        """How the process ended, as the reason its variant failed."""
        self.process.join(_STOP_WAIT)
        code = self.process.exitcode
        if code is None:
            return "its worker process stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"its worker process was killed by {name} before the run finished"
        return f"its worker process exited with status {code} before the run finished"

    def stop(self) -> None:
        """No more variants: the worker exits once its pipe closes."""
        self.connection.close()
        self.process.join(_STOP_WAIT)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        self.process.close()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.close()

    def close(self) -> None:
        self.connection.close()
        self.process.close()


def _serve(payload: bytes, connection: Connection) -> None:
    """A worker process: run each variant it is handed until its pipe closes."""
    # The terminal's Ctrl-C reaches every process of its group: the parent decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            variant: Variant = connection.recv()
        except EOFError:
            return
        connection.send(_run_variant(payload, variant))


def _run_variant(payload: bytes, variant: Variant) -> VariantResult:
    """The variant's result; an exception in its run (a fault, not bad input, which is
    checked before anything runs) fails that variant only, saying what it was."""
    try:
        return run_variant(payload, variant)
    except Exception as error:
        said = str(error).strip().splitlines()
        what = f"{type(error).__name__}: {said[0]}" if said else type(error).__name__
        return VariantResult(variant.index, error=f"its run raised {what}")
