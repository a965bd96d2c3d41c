"""The ingest job's Prometheus metrics, fed after every committed micro-batch by ``ingest.metrics.BatchMetrics``.

``lakecdc ingest`` serves them when ``metrics.port`` is set in the ingest configuration or
``--metrics-port`` is given; a program running ``run_ingest`` itself (a Databricks job) does::

    with serve_ingest_metrics("conf/ingest.yaml", port=9464):
        run_ingest("conf/ingest.yaml", trigger="continuous")

Every ``BatchMetrics`` created while the block runs reports to that endpoint. Metrics, label
``connector`` (the job's ``name``); per table also ``table`` (``db.schema.table``, as capture's) and
``format`` (``iceberg`` / ``delta``):

- ``lakecdc_ingest_events_total{table,format}``: changes applied to bronze and silver;
- ``lakecdc_ingest_batches_total``, ``lakecdc_ingest_batch_duration_seconds`` (histogram);
- ``lakecdc_ingest_dead_letters_total``: records written to the dead-letter table;
- ``lakecdc_ingest_replayed_events_total``: events already in the tables (a restart), skipped;
- ``lakecdc_ingest_held_events``: events held back for transactions not yet complete;
- ``lakecdc_ingest_source_timestamp_seconds``: newest source commit time (``source.ts_ms``) applied;
- ``lakecdc_ingest_lag_seconds``: source-to-silver lag, table commit time minus that source time;
- ``lakecdc_ingest_source_to_silver_seconds`` (histogram): the same per applied change (snapshot
  reads excluded), for quantiles;
- ``lakecdc_ingest_table_stopped{table}``: 1 for a table stopped by a schema-evolution error;
- per table, at its last batch: ``lakecdc_ingest_table_source_timestamp_seconds{table}`` (newest source
  commit time applied), ``lakecdc_ingest_table_lag_seconds{table}`` (table commit time minus it: a
  quiet table's lag stays at its last value, like capture's) and
  ``lakecdc_ingest_table_source_position{table,field}`` (the newest change's source position, named
  as capture's ``lakecdc_capture_source_position``: ``lsn`` PostgreSQL commit LSN, ``pos`` MySQL
  binlog position, ``commit_lsn`` SQL Server, ``scn`` Oracle commit SCN): how far silver is behind
  capture is the difference between the two gauges.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakecdc.events.position_text import seq_position
from lakecdc.metrics.prometheus import DURATION_BUCKETS, LAG_BUCKETS, MetricsEndpoint, parse_port

if TYPE_CHECKING:
    import pyarrow as pa

    from lakecdc.config.ingest import IngestConfig
    from lakecdc.ingest.processor import BatchReport

_serving: list[IngestExporter] = []


def active_ingest_exporter() -> IngestExporter | None:
    """The endpoint ``serve_ingest_metrics`` opened, if one is open."""
    return _serving[-1] if _serving else None


@contextmanager
def serve_ingest_metrics(config: str | Path | IngestConfig,
                         port: int | None = None) -> Iterator[IngestExporter | None]:
    """Serve ingest metrics on ``port`` (else the configuration's ``metrics.port``) while the block runs;
    yields None, serving nothing, when neither is set."""
    from lakecdc.config.ingest import load_ingest_config

    cfg = load_ingest_config(config)
    chosen = parse_port(port if port is not None else cfg.metrics_port)
    if chosen is None:
        yield None
        return
    exporter = IngestExporter(MetricsEndpoint(chosen, f"ingest {cfg.name}"), cfg.name)
    _serving.append(exporter)
    try:
        yield exporter
    finally:
        _serving.remove(exporter)
        exporter.close()


class IngestExporter:
    """The metrics of the module docstring, in the endpoint's own registry."""

    def __init__(self, endpoint: MetricsEndpoint, job: str) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.endpoint = endpoint
        self.port = endpoint.port
        self._job = job
        registry, job_label = endpoint.registry, ["connector"]
        self.events = Counter("lakecdc_ingest_events", "Changes applied to the bronze and silver tables",
                              ["connector", "table", "format"], registry=registry)
        self.batches = Counter("lakecdc_ingest_batches", "Micro-batches committed", job_label, registry=registry)
        self.duration = Histogram("lakecdc_ingest_batch_duration_seconds", "Micro-batch duration, read to commit",
                                  job_label, buckets=DURATION_BUCKETS, registry=registry)
        self.dead_letters = Counter("lakecdc_ingest_dead_letters", "Records written to the dead-letter table",
                                    job_label, registry=registry)
        self.replayed = Counter("lakecdc_ingest_replayed_events", "Events already in the tables, skipped",
                                job_label, registry=registry)
        self.held = Gauge("lakecdc_ingest_held_events", "Events held back for incomplete transactions",
                          job_label, registry=registry)
        self.source_ts = Gauge("lakecdc_ingest_source_timestamp_seconds",
                               "Newest source commit time applied to the tables", job_label, registry=registry)
        self.lag = Gauge("lakecdc_ingest_lag_seconds", "Table commit time minus the newest source commit time "
                         "applied, at the last batch", job_label, registry=registry)
        self.latency = ArrowHistogram("lakecdc_ingest_source_to_silver_seconds",
                                      "Source commit to table commit, per applied change", job)
        registry.register(self.latency)
        self.stopped = Gauge("lakecdc_ingest_table_stopped", "1 when a table is stopped by a schema error",
                             ["connector", "table"], registry=registry)
        table_label = ["connector", "table"]
        self.table_source_ts = Gauge("lakecdc_ingest_table_source_timestamp_seconds",
                                     "Newest source commit time applied to the table", table_label, registry=registry)
        self.table_lag = Gauge("lakecdc_ingest_table_lag_seconds", "Table commit time minus the newest source "
                               "commit time applied to it, at its last batch", table_label, registry=registry)
        self.table_position = Gauge("lakecdc_ingest_table_source_position",
                                    "Source position of the newest change applied to the table",
                                    [*table_label, "field"], registry=registry)
        self.held.labels(job).set(0)

    def batch(self, report: BatchReport, now_ms: int | None = None) -> None:
        """Count one committed micro-batch."""
        job = self._job
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        formats = {target.source_name: target.format for target in report.targets}
        formats.update({target.topic: target.format for target in report.targets})
        for table, events in report.tables.items():
            self.events.labels(job, table, formats.get(table, "")).inc(events)
        for table in report.failed_tables:
            self.stopped.labels(job, table).set(1)
        self.batches.labels(job).inc()
        self.duration.labels(job).observe(report.seconds)
        self.dead_letters.labels(job).inc(report.dead_letters)
        self.replayed.labels(job).inc(report.replayed)
        self.held.labels(job).set(report.held_events)
        if report.max_source_ts_ms is not None:
            self.source_ts.labels(job).set(report.max_source_ts_ms / 1000)
            self.lag.labels(job).set(max(0, now_ms - report.max_source_ts_ms) / 1000)
        connectors = {target.source_name or target.topic: target.connector for target in report.targets}
        for table, ts_ms in report.table_source_ts_ms.items():
            self.table_source_ts.labels(job, table).set(ts_ms / 1000)
            self.table_lag.labels(job, table).set(max(0, now_ms - ts_ms) / 1000)
        for table, seq in report.table_max_seq.items():
            try:
                position_field, position = seq_position(connectors.get(table, ""), seq)
            except ValueError:  # a connector without a known position: the metrics never stop a job
                continue
            self.table_position.labels(job, table, position_field).set(position)
        for values in report.latency_ms:
            self.latency.observe_ms(values)

    def close(self) -> None:
        self.endpoint.close()


class ArrowHistogram:
    """A histogram over ``LAG_BUCKETS`` filled a batch at a time with Arrow compute: a batch of 100,000
    changes costs one vectorised comparison per bucket, not 100,000 ``Histogram.observe`` calls."""

    def __init__(self, name: str, documentation: str, job: str) -> None:
        self.name, self.documentation, self._job = name, documentation, job
        self._cumulative = [0] * len(LAG_BUCKETS)
        self._count = 0
        self._sum = 0.0
        self._lock = threading.Lock()  # batches are counted by the job's thread, scrapes by the server's

    def observe_ms(self, values: pa.Array) -> None:
        """Count milliseconds ``values`` (nulls skipped, negatives as 0) as seconds."""
        import pyarrow as pa
        import pyarrow.compute as pc

        present = pc.drop_null(values)
        if len(present) == 0:
            return
        seconds = pc.divide(pc.cast(pc.max_element_wise(present, 0), pa.float64()), 1000.0)
        below = [pc.sum(pc.less_equal(seconds, bound)).as_py() or 0 for bound in LAG_BUCKETS]
        total = pc.sum(seconds).as_py() or 0.0
        with self._lock:
            self._cumulative = [a + b for a, b in zip(self._cumulative, below)]
            self._count += len(present)
            self._sum += total

    def describe(self) -> list[Any]:
        from prometheus_client.core import HistogramMetricFamily

        return [HistogramMetricFamily(self.name, self.documentation, labels=["connector"])]

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        family = HistogramMetricFamily(self.name, self.documentation, labels=["connector"])
        with self._lock:
            buckets = [(floatToGoString(b), float(n)) for b, n in zip(LAG_BUCKETS, self._cumulative)]
            family.add_metric([self._job], [*buckets, ("+Inf", float(self._count))], self._sum)
        yield family
