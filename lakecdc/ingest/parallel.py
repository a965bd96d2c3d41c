"""The tables of one micro-batch, applied side by side (``apply.parallelism`` threads).

Applying one table is a chain of small Spark jobs and table commits (bronze append, delete-ledger
append, silver MERGE, each with metadata reads in between); most of its time is driver-side
planning, scheduling and commit I/O rather than executor work, so tables applied one after
another leave the cores idle while a batch touching four tables takes four times as long.
Threads overlap them: PySpark runs each Python thread's calls on its own JVM thread (pinned-thread
mode, the default since Spark 3.2), where Spark accepts concurrent jobs, and delta-rs releases
the GIL while it works.

What makes it safe:

- every task gets its own table: no two threads write one table (bronze, ledger, silver);
- ``TableApplyPool.run`` waits for every task, even after one fails, and returns the outcomes in
  the order the tasks were given: the caller merges them into its state in that order, so the
  result does not depend on which thread finished first, and a failure never hides the progress
  other tables committed;
- the thread-local state the writers rely on (Iceberg's ``CommitMetadata`` commit properties) is
  per JVM thread, hence per Python thread.

``parallelism = 1`` runs every task in the calling thread, exactly as before threads existed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One task's result, or the exception it raised."""

    value: T | None = None
    error: BaseException | None = None


class TableApplyPool:
    """A long-lived thread pool for the per-table applies of the job's micro-batches.

    The threads live as long as the job: each keeps its JVM thread and Py4J connection, which a
    pool per batch would set up again every time.
    """

    def __init__(self, parallelism: int) -> None:
        if parallelism < 1:
            raise ValueError(f"parallelism must be at least 1, not {parallelism}")
        self.parallelism = parallelism
        self._executor: ThreadPoolExecutor | None = None

    def run(self, tasks: Sequence[Callable[[], T]]) -> list[Outcome[T]]:
        """Run every task; outcomes in task order. Never raises for a task's exception."""
        if self.parallelism == 1 or len(tasks) <= 1:
            return [_call(task) for task in tasks]
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.parallelism, thread_name_prefix="lakecdc-apply")
        futures: list[Future[Outcome[T]]] = [self._executor.submit(_call, task) for task in tasks]
        return [future.result() for future in futures]  # _call catches: result() does not raise

    def close(self) -> None:
        """Stop the threads (they are idle between batches; the job calls this when it ends)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _call(task: Callable[[], T]) -> Outcome[T]:
    try:
        return Outcome(value=task())
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, who decides (re-raises)
        return Outcome(error=exc)
