"""What a forked capture worker process (snapshot or streaming) does first.

The capture process installs SIGINT/SIGTERM handlers that ask the coordinator to stop after the
current batch (``Coordinator.install_signal_handlers``). A process forked from it inherits them, so
``Pool.terminate`` (which sends SIGTERM and then waits) would wait forever on a worker that merely
sets a stop flag nobody reads. Workers therefore take the default SIGTERM back, and ignore SIGINT:
Ctrl-C reaches the whole process group, and the capture process alone decides what it means.
"""

from __future__ import annotations

import signal


def default_signals() -> None:
    """SIGTERM ends the worker; SIGINT is left to the capture process."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
