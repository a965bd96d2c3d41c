"""Snapshot worker processes end on SIGTERM even though the capture process asks SIGTERM to stop
gracefully (``Coordinator.install_signal_handlers``): ``Pool.terminate`` sends SIGTERM and waits, and
a worker that inherited the graceful handler would keep it waiting forever (CI hung 900 s on it)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lakecdc.capture.mysql import snapshot_parallel as mysql_parallel
from lakecdc.capture.postgres import snapshot_parallel as pg_parallel


@pytest.fixture
def graceful_sigterm() -> Iterator[threading.Event]:
    """The capture process's handlers: SIGTERM and SIGINT only set a flag."""
    asked = threading.Event()
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in previous:
        signal.signal(s, lambda *_: asked.set())
    yield asked
    for s, handler in previous.items():
        signal.signal(s, handler)


Starter = Callable[[], tuple[Callable[..., None], tuple[Any, ...]]]


def _pg_start() -> tuple[Callable[..., None], tuple[Any, ...]]:
    # a config the worker cannot connect with: the initializer keeps the error (as for a wrong snapshot name)
    return pg_parallel._start_worker, (pg_parallel._WorkerState(None, None, None, "x", {}),)  # type: ignore[arg-type]


def _mysql_start() -> tuple[Callable[..., None], tuple[Any, ...]]:
    return mysql_parallel._start_worker, (None, {}, multiprocessing.get_context("fork").Barrier(1))


@pytest.mark.parametrize("start", [_pg_start, _mysql_start], ids=["postgres", "mysql"])
def test_terminating_the_pool_ends_its_workers(graceful_sigterm: threading.Event, start: Starter) -> None:
    initializer, args = start()
    pool = multiprocessing.get_context("fork").Pool(2, initializer, args)
    pool.apply(int)  # the workers are up
    for _ in range(2):  # and busy (idle ones would end on the pool's end-of-work sentinel)
        pool.apply_async(time.sleep, (60,))
    time.sleep(0.5)
    workers = list(pool._pool)  # type: ignore[attr-defined]
    stopper = threading.Thread(target=pool.terminate, daemon=True)
    stopper.start()
    stopper.join(20)
    for worker in workers:  # a failing run must not leave them behind
        if worker.is_alive():
            os.kill(worker.pid, signal.SIGKILL)
    assert not stopper.is_alive(), "Pool.terminate still waits for workers that ignored SIGTERM"
    assert not graceful_sigterm.is_set(), "the capture process's own handler is not the workers' business"


def test_the_capture_puts_the_previous_handlers_back() -> None:
    """After ``run_capture(install_signals=True)`` (the CLI, run in-process by tests or a notebook)
    returns, SIGTERM and SIGINT are the caller's again: left on the dead capture's stop flag, they
    made every process forked later unable to be terminated (a pool test hung after a CLI test)."""
    from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    connector = type("Connector", (), {"name": "signals", "partition": {"server": "signals"}})()
    coordinator = CaptureCoordinator(connector, None, None, CoordinatorSettings())  # type: ignore[arg-type]
    restore = coordinator.install_signal_handlers()
    assert all(signal.getsignal(s) is not handler for s, handler in before.items())
    restore()
    assert {s: signal.getsignal(s) for s in before} == before
