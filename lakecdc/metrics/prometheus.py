"""The Prometheus HTTP endpoint capture and ingest serve their metrics on (``prometheus_client``).

Off unless a port is given: ``metrics.port`` in the connector properties or the ingest
configuration, or ``--metrics-port`` on ``lakecdc capture`` / ``lakecdc ingest``. Each exporter
owns its own ``CollectorRegistry``, so two jobs in one process (tests, the demo) never collide,
and the endpoint shows only lakecdc's metrics (no process or GC collectors of the default registry).

Naming follows Prometheus' conventions: the ``lakecdc_`` prefix, ``_total`` for counters (the
client adds it), base units in the name (``_seconds``), and the labels ``connector`` (the
connector's or ingest job's ``name``), ``table`` (the source table, ``db.schema.table`` as in
the event's ``source`` block) and ``format`` (iceberg / delta). Rates (events/s) are left to
PromQL, ``rate(lakecdc_capture_events_total[1m])``, as Prometheus recommends for counters.
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.errors import ConfigError

log = logging.getLogger(__name__)

PORT_PROPERTY = "metrics.port"
#: seconds; from a quick commit to a multi-minute first batch
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: seconds from the source commit to the table commit
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)


def parse_port(value: Any, name: str = PORT_PROPERTY) -> int | None:
    """A configured port: None when unset or empty (metrics off); 0 lets the system choose."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        port = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"'{name}' must be a TCP port number, got {value!r}", name) from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"'{name}' must be between 0 and 65535, got {port}", name)
    return port


class MetricsEndpoint:
    """A registry and the HTTP server exposing it on ``/metrics`` until ``close``."""

    def __init__(self, port: int, what: str, host: str = "0.0.0.0") -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise ConfigError("metrics need the prometheus_client package: pip install 'lakecdc[metrics]'",
                              PORT_PROPERTY) from None
        self.registry = CollectorRegistry(auto_describe=True)
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"cannot serve {what} metrics on port {port}: {exc.strerror or exc}",
                              PORT_PROPERTY) from None
        self.port: int = self._server.server_port
        log.info("%s metrics on http://%s:%d/metrics", what, host, self.port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
