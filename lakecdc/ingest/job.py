"""The ingest job: Debezium topics -> bronze change logs and silver current state, exactly once.

``run_ingest(config, trigger)`` is what ``lakecdc ingest`` and the Databricks entry points call::

    from lakecdc.ingest.job import run_ingest
    summary = run_ingest("conf/ingest.yaml", trigger="available-now")

Triggers:

- ``available-now``: process everything present in the topics, then return (scheduled jobs);
- ``continuous``: micro-batches back to back until stopped;
- ``every:30s`` (``every:500ms``, ``every:2m``): one micro-batch per interval until stopped.

SIGTERM / SIGINT stop the job cleanly: the batch in progress finishes and commits, then
``run_ingest`` returns (``lakecdc ingest`` exits 0). A second signal is not intercepted.

Every micro-batch starts where the tables' committed offsets say, whichever reader fetches it
(``reader``: the driver's Python consumer, the Spark executors, or Spark's Kafka source as a bounded
batch read; see ``spark_reader``); each goes through ``processor.BatchProcessor``.
"""

from __future__ import annotations

import logging
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lakecdc.config.ingest import IngestConfig, load_ingest_config
from lakecdc.errors import ConfigError
from lakecdc.ingest.exporter import active_ingest_exporter, serve_ingest_metrics
from lakecdc.ingest.job_state import load_state
from lakecdc.ingest.metrics import BatchMetrics
from lakecdc.ingest.offset_ranges import StartOffset
from lakecdc.ingest.processor import BatchProcessor, BatchReport, DriverDecoded
from lakecdc.ingest.read_ahead import ReadAhead, locked
from lakecdc.ingest.reader import KafkaMicroBatch, PythonKafkaReader
from lakecdc.ingest.spark_reader import SparkRangeReader
from lakecdc.maintenance.periodic import PeriodicMaintenance
from lakecdc.spark.jvm_exit import explain_driver_exit
from lakecdc.spark.session import ingest_session, ingest_spark_log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

_EVERY = re.compile(r"^every:(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Trigger:
    """When micro-batches run: once over what is present, or every ``interval`` seconds."""

    available_now: bool
    interval: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Trigger:
        """``available-now`` | ``continuous`` | ``every:<n><ms|s|m|h>``.

        >>> Trigger.parse("every:30s")
        Trigger(available_now=False, interval=30.0)
        """
        value = text.strip().lower()
        if value in ("available-now", "availablenow", "once"):
            return cls(True)
        if value == "continuous":
            return cls(False, 0.0)
        match = _EVERY.match(value)
        if match:
            return cls(False, float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
        raise ConfigError(f"unknown trigger {text!r}: use available-now, continuous or every:<n>s "
                          "(e.g. every:30s)", "trigger")


@dataclass
class IngestSummary:
    """What a run did, in total."""

    batches: int = 0
    events: int = 0
    dead_letters: int = 0
    tables: dict[str, int] = field(default_factory=dict)
    failed_tables: dict[str, str] = field(default_factory=dict)
    held_events: int = 0
    stopped_by_signal: bool = False
    seconds: float = 0.0

    def add(self, report: BatchReport) -> None:
        self.batches += 1
        self.events += report.events
        self.dead_letters += report.dead_letters
        for table, n in report.tables.items():
            self.tables[table] = self.tables.get(table, 0) + n
        self.failed_tables.update(report.failed_tables)
        self.held_events = report.held_events


def run_ingest(config: str | Path | IngestConfig, trigger: str | None = None, *,
               spark: SparkSession | None = None, stop: threading.Event | None = None,
               on_batch: Callable[[BatchReport], None] | None = None) -> IngestSummary:
    """Run the ingest job until ``trigger`` says it is done or it is stopped (module docstring).

    ``stop`` lets a caller (a test, the demo) stop the job like a signal does; ``on_batch`` is
    called after every committed micro-batch.
    """
    cfg = load_ingest_config(config)
    chosen = Trigger.parse(trigger or cfg.trigger_interval)
    stop_event = stop or threading.Event()
    session = spark or ingest_session(cfg)
    state = load_state(cfg.progress_dir)
    processor = BatchProcessor(cfg, session, state, _writer_factory(cfg, session))
    periodic = _periodic_maintenance(cfg, session)
    summary = IngestSummary()
    # metrics.port serves Prometheus metrics for callers of run_ingest too (the Databricks job), unless
    # the caller (lakecdc ingest --metrics-port) already serves them
    serving = nullcontext() if active_ingest_exporter() is not None else serve_ingest_metrics(cfg)
    started = time.monotonic()

    def handle(report: BatchReport) -> None:
        summary.add(report)
        metrics.report(report)
        periodic.after_batch(report.targets)  # every table of the batch has committed
        if on_batch is not None:
            on_batch(report)

    log.info("ingest %s: reading topics matching %s into the %s tables under %s (%s)", cfg.name,
             cfg.subscribe_pattern, cfg.table_format, cfg.warehouse,
             "available now" if chosen.available_now else f"every {chosen.interval:g}s")
    with serving, _stop_on_signals(stop_event) as signalled:
        metrics = BatchMetrics()
        try:
            # behind a backlog the Spark readers' batches grow: an out-of-memory error names that limit too
            grown = backlog_records(cfg, session) if reader_kind(cfg, session) != "python" else None
            with explain_driver_exit(session, ingest_spark_log(cfg), cfg.max_batch_records, grown):
                _run_batches(cfg, session, processor, chosen, stop_event, handle)
        finally:
            processor.close()
        summary.stopped_by_signal = signalled()
        summary.seconds = time.monotonic() - started
        metrics.finish(summary)
    return summary


def _run_batches(cfg: IngestConfig, spark: SparkSession, processor: BatchProcessor, trigger: Trigger,
                 stop: threading.Event, handle: Callable[[BatchReport], None]) -> None:
    """Every reader's loop: its batches start where the tables' committed offsets say (``start_offset``)."""
    processing = threading.Lock()  # a partition the read-ahead meets reads its table's offsets under it
    reader = _open_reader(cfg, spark, trigger, stop, locked(processing, processor.start_offset))
    # Drains and continuous jobs read (and decode) the next batch while this one is applied
    # (``read_ahead``); a continuous job's next batch ends once this one is done (``wanted``). The Spark
    # readers' batches are decoded on the executors, and their DataFrames live only until the next one is read.
    ahead: ReadAhead[tuple[KafkaMicroBatch, DriverDecoded]] | None = None
    if isinstance(reader, PythonKafkaReader) and (trigger.available_now or trigger.interval == 0):
        wanted = None if trigger.available_now else threading.Event()
        ahead = ReadAhead(((b, processor.decode(b)) for b in reader.batches(wanted)), wanted=wanted)
    try:
        next_at = time.monotonic()
        for batch, decoded in ahead or ((b, None) for b in reader.batches()):
            if ahead is not None and stop.is_set():
                break  # a stop finishes the batch in progress; one read ahead is read again by the next run
            # An empty batch matters only when reading has reached the end with something waiting for
            # it: held transactions whose other events will not come, a consistency point held below
            # snapshot rows.
            if batch.num_records or (batch.at_end_of_data and processor.waits_for_end_of_data):
                with processing:
                    report = processor.process(batch, decoded)
                handle(report)
            if trigger.interval > 0 and not trigger.available_now:
                next_at += trigger.interval
                stop.wait(max(0.0, next_at - time.monotonic()))
    finally:
        if ahead is not None:
            ahead.close()
        reader.close()


def _open_reader(cfg: IngestConfig, spark: SparkSession, trigger: Trigger, stop: threading.Event,
                 start_offset: StartOffset) -> PythonKafkaReader | SparkRangeReader:
    kind = reader_kind(cfg, spark)
    if cfg.checkpoint_path:
        log.warning("spark.checkpoint.location is not used: every reader resumes from the offsets the tables "
                    "committed, so no checkpoint can skip events; remove the setting")
    if kind == "python":
        return PythonKafkaReader(cfg, start_offset, stop, trigger.available_now, spark)
    engine: Literal["executors", "kafka-source"] = "kafka-source" if kind == "spark-kafka" else "executors"
    log.info("reading Kafka %s", "through Spark's Kafka source (bounded batch reads)" if engine == "kafka-source"
             else "on the Spark executors (offset ranges fetched with confluent-kafka)")
    backlog = backlog_records(cfg, spark)
    if backlog < cfg.backlog_batch_records:
        log.info("batches stay at batch.max.records (%s) behind a backlog: delta-rs writes from the driver, "
                 "which holds each batch (set batch.backlog.max.records to let them grow)",
                 f"{cfg.max_batch_records:,}")
    return SparkRangeReader(cfg, start_offset, stop, trigger.available_now, spark, engine, backlog_records=backlog)


def backlog_records(cfg: IngestConfig, spark: SparkSession) -> int:
    """The largest batch the Spark readers read behind a backlog: ``batch.backlog.max.records``, except
    that batches keep ``batch.max.records`` when a table is written by delta-rs and the property is not
    set: delta-rs writes from the driver, so each batch's rows pass through the driver's memory (a batch
    grown to a budget of 400,000 records filled a 1 GB driver JVM)."""
    from lakecdc.writers.base import delta_in_session

    formats = {cfg.table_format, *(o.format for o in cfg.table_overrides().values() if o.format)}
    if "delta" in formats and cfg.backlog_batch_records_raw is None and not delta_in_session(spark):
        return cfg.max_batch_records
    return cfg.backlog_batch_records


def reader_kind(cfg: IngestConfig, spark: SparkSession) -> str:
    """``python`` | ``spark`` | ``spark-kafka``; ``auto`` is ``python`` on a local master, else ``spark``.

    In local mode the executors share the driver's machine, so fetching there adds a Spark job per
    batch and nothing else; on a cluster the executors fetch and the driver only plans.
    """
    if cfg.reader == "spark-kafka":
        from lakecdc.ingest.kafka_source import spark_kafka_available

        if not spark_kafka_available(spark):
            raise ConfigError("reader=spark-kafka but Spark's Kafka source is not on the classpath (add "
                              "org.apache.spark:spark-sql-kafka-0-10_2.12, or use reader=spark, which fetches "
                              "on the executors with confluent-kafka)", "reader")
        return "spark-kafka"
    if cfg.reader != "auto":
        return cfg.reader
    master = spark.sparkContext.master or ""
    return "python" if master == "local" or master.startswith("local[") else "spark"


def _periodic_maintenance(cfg: IngestConfig, spark: SparkSession) -> PeriodicMaintenance:
    from lakecdc.maintenance.run import Maintainer, maintainer_for
    from lakecdc.writers.base import delta_in_session

    get = maintainer_for(cfg, lambda: spark)

    def chosen(table_format: str) -> Maintainer | None:
        # Delta written by Spark's own Delta (Databricks): OPTIMIZE / VACUUM / predictive optimization
        # maintain those tables, which need not live under the warehouse directory.
        if table_format == "delta" and delta_in_session(spark):
            return None
        return get(table_format)
    return PeriodicMaintenance(cfg.maintenance_every_batches, chosen)


def _writer_factory(cfg: IngestConfig, spark: SparkSession) -> Callable[[str], Any]:
    from lakecdc.writers.base import create_writer

    def make(table_format: str) -> Any:
        return create_writer(table_format, spark, catalog=cfg.catalog, warehouse=cfg.warehouse)
    return make


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[Callable[[], bool]]:
    """SIGTERM/SIGINT set ``stop`` (the batch in progress finishes); restored on exit."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signum)
        log.info("received %s: finishing the current batch, then stopping", signal.Signals(signum).name)
        stop.set()
        signal.signal(signum, previous[signal.Signals(signum)])  # a second signal is not intercepted

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in previous:
        signal.signal(s, on_signal)
    try:
        yield lambda: bool(received)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
