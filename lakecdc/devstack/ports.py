"""Loopback port allocation and readiness probes shared by every devstack part."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port on ``host`` that nothing listens on right now.

    The port is only reserved while this function runs; a part that loses the race gets an
    "address in use" start failure, which ``start_with_retry`` in each part turns into a retry.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_open(port: int, host: str = LOOPBACK, timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(
    condition: Callable[[], bool],
    timeout: float,
    interval: float = 0.1,
    still_alive: Callable[[], bool] | None = None,
) -> bool:
    """Poll ``condition`` until it is true or ``timeout`` seconds pass.

    ``still_alive`` lets a caller stop waiting as soon as the process it waits for has exited,
    instead of burning the whole timeout on a server that already crashed.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if still_alive is not None and not still_alive():
            return condition()
        time.sleep(interval)
    return condition()
