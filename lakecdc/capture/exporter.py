"""Capture's Prometheus metrics, fed by the coordinator at its commit steps (``capture/coordinator.py``).

``capture_metrics(connector)`` returns the exporter when the connector's properties set
``metrics.port`` (``lakecdc capture --metrics-port`` sets it too), else a no-op. Metrics, labels
``connector`` (the ``name`` property) and ``table`` (``db.schema.table`` of the event's source):

- ``lakecdc_capture_events_total{op}``: change events handed to the sink, by Debezium ``op``
  (``r`` snapshot read, ``c``, ``u``, ``d``, ``t``); events/s is ``rate()`` of it;
- ``lakecdc_capture_source_timestamp_seconds``: source commit time (``source.ts_ms``) of the newest
  streamed event of the table made durable in Kafka;
- ``lakecdc_capture_lag_seconds``: source-to-Kafka lag, measured when that event became durable
  (sink flush returned): flush time minus its ``source.ts_ms``; like Debezium's
  ``MilliSecondsBehindSource`` it keeps its last value while the source is quiet;
- ``lakecdc_capture_source_position{field}``: the committed offset's position (``lsn`` PostgreSQL,
  ``pos`` MySQL binlog, ``scn`` Oracle, ``commit_lsn`` SQL Server as a number);
- ``lakecdc_capture_commits_total``, ``lakecdc_capture_commit_duration_seconds`` (histogram of
  flush + store offset + acknowledge);
- ``lakecdc_capture_snapshot_rows_total`` / ``lakecdc_capture_snapshot_rows_estimate``: snapshot
  progress per table (rows read, the database's estimate; incremental snapshot chunks count as
  reads too); ``lakecdc_capture_snapshot_running`` is 1 during an initial or ad hoc snapshot.

Snapshot rows carry the snapshot's start time as ``source.ts_ms``, so they are not lag.
"""

from __future__ import annotations

import time
from typing import Any

from lakecdc.capture.snapshot_estimates import Estimator, estimator_for
from lakecdc.events.position_text import sqlserver_lsn_from_text
from lakecdc.metrics.prometheus import DURATION_BUCKETS, PORT_PROPERTY, MetricsEndpoint, parse_port

#: offset fields naming the position, in the order looked for (one per connector)
POSITION_FIELDS = ("lsn", "pos", "scn", "commit_lsn")


class CaptureMetrics:
    """No metrics: what the coordinator calls when ``metrics.port`` is not set."""

    port: int | None = None

    def sent(self, records: list[Any]) -> None:
        """``records`` were handed to the sink (commit step 1)."""

    def committed(self, offset: dict[str, Any], seconds: float) -> None:
        """Everything sent so far is durable and ``offset`` stored (steps 2-4 took ``seconds``)."""

    def snapshot_running(self, running: bool) -> None: ...

    def close(self) -> None: ...


def capture_metrics(connector: Any) -> CaptureMetrics:
    """The exporter for ``connector`` when its configuration sets ``metrics.port``, else a no-op."""
    config = getattr(connector, "config", None)
    passthrough = getattr(config, "passthrough", None) or {}
    port = parse_port(passthrough.get(PORT_PROPERTY))
    if port is None:
        return CaptureMetrics()
    return PrometheusCaptureMetrics(MetricsEndpoint(port, f"capture {connector.name}"), connector.name,
                                    estimator_for(connector))


def table_label(source: dict[str, Any]) -> str:
    """``db.schema.table`` (MySQL: ``db.table``): the ingest job's ``TableTarget.source_name``."""
    return ".".join(str(p) for p in (source.get("db"), source.get("schema"), source.get("table")) if p)


class PrometheusCaptureMetrics(CaptureMetrics):
    """The metrics of the module docstring, in the endpoint's own registry."""

    def __init__(self, endpoint: MetricsEndpoint, connector: str, estimate: Estimator | None) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.endpoint = endpoint
        self.port = endpoint.port
        self._connector = connector
        self._estimate = estimate
        self._estimated: set[str] = set()
        #: table -> (source.ts_ms) of the newest streamed event sent since the last commit
        self._pending: dict[str, int] = {}
        registry, table = endpoint.registry, ["connector", "table"]
        self.events = Counter("lakecdc_capture_events", "Change events sent to Kafka, by Debezium op",
                              [*table, "op"], registry=registry)
        self.source_ts = Gauge("lakecdc_capture_source_timestamp_seconds",
                               "Source commit time of the newest event durable in Kafka", table, registry=registry)
        self.lag = Gauge("lakecdc_capture_lag_seconds",
                         "Source commit to durable in Kafka, for the newest event of the table", table,
                         registry=registry)
        self.position = Gauge("lakecdc_capture_source_position", "Source position of the committed offset",
                              ["connector", "field"], registry=registry)
        self.commits = Counter("lakecdc_capture_commits", "Offsets committed (sink flushed, offset stored)",
                               ["connector"], registry=registry)
        self.commit_duration = Histogram("lakecdc_capture_commit_duration_seconds",
                                         "Sink flush + offset store + source acknowledgement",
                                         ["connector"], buckets=DURATION_BUCKETS, registry=registry)
        self.snapshot_rows = Counter("lakecdc_capture_snapshot_rows", "Snapshot rows read and sent", table,
                                     registry=registry)
        self.snapshot_estimate = Gauge("lakecdc_capture_snapshot_rows_estimate",
                                       "The source database's row estimate of a table being snapshotted", table,
                                       registry=registry)
        self.snapshot_gauge = Gauge("lakecdc_capture_snapshot_running", "1 while a snapshot runs",
                                    ["connector"], registry=registry)
        self.snapshot_gauge.labels(connector).set(0)

    def sent(self, records: list[Any]) -> None:
        counts: dict[tuple[str, str], int] = {}
        pending = self._pending
        for record in records:
            value = record.value
            # data change events only: not tombstones, transaction metadata, heartbeats, schema changes
            if value.__class__ is not dict or "op" not in value:
                continue
            source = value.get("source") or {}
            label = table_label(source)
            op = value["op"]
            counts[(label, op)] = counts.get((label, op), 0) + 1
            if op != "r" and source.get("ts_ms") is not None:
                pending[label] = max(pending.get(label, 0), int(source["ts_ms"]))
            elif op == "r" and label not in self._estimated:
                self._estimated.add(label)
                self._set_estimate(label, source)
        for (label, op), n in counts.items():
            self.events.labels(self._connector, label, op).inc(n)
            if op == "r":
                self.snapshot_rows.labels(self._connector, label).inc(n)

    def _set_estimate(self, label: str, source: dict[str, Any]) -> None:
        rows = self._estimate(source) if self._estimate is not None else None
        if rows is not None:
            self.snapshot_estimate.labels(self._connector, label).set(rows)

    def committed(self, offset: dict[str, Any], seconds: float) -> None:
        now_ms = time.time() * 1000
        for label, ts_ms in self._pending.items():
            self.source_ts.labels(self._connector, label).set(ts_ms / 1000)
            self.lag.labels(self._connector, label).set(max(0.0, now_ms - ts_ms) / 1000)
        self._pending.clear()
        position = offset_position(offset)
        if position is not None:
            self.position.labels(self._connector, position[0]).set(position[1])
        self.commits.labels(self._connector).inc()
        self.commit_duration.labels(self._connector).observe(seconds)

    def snapshot_running(self, running: bool) -> None:
        self.snapshot_gauge.labels(self._connector).set(1 if running else 0)

    def close(self) -> None:
        self.endpoint.close()


def offset_position(offset: dict[str, Any] | None) -> tuple[str, float] | None:
    """(field, value) of the offset's position, e.g. ``("lsn", 24023128.0)``; None when it has none."""
    for field in POSITION_FIELDS:
        value = (offset or {}).get(field)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                return field, float(sqlserver_lsn_from_text(value) if ":" in value else int(value))
            except ValueError:
                continue
        return field, float(value)
    return None
