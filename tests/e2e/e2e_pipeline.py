"""One end-to-end pipeline per test: a PostgreSQL database -> capture -> broker -> ingest jobs.

Each pipeline has its own database, replication slot, publication, topic prefix, capture offsets
file and, per ingest job, its own warehouse and state directory, so tests never see each other's
data. Capture runs in a thread while a workload runs (``capture_while``) and stops by itself when
the source has been idle for a moment; the ingest jobs then run ``available-now``.

Typical use::

    pipe = PgPipeline(pg, broker, spark, tmp_path, "e2ea")
    with pipe.capture_while():
        workload.run()
    pipe.ingest_all()
    check(pipe.compare_all(log))
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from e2e_lake import Differences, Lake, SourceColumn, SourceTable, arrow_type_of, compare_bronze, compare_silver
from pg_slots import drop_slot
from psycopg import sql
from workloads.changelog import ChangeLog

from lakecdc.capture.runner import run_capture
from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import IngestSummary, run_ingest


def unique_name(label: str) -> str:
    return f"{label}{uuid.uuid4().hex[:6]}"


def fresh_database(pg: Any, name: str) -> str:
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return pg.create_database(name)


def drop_database(pg: Any, name: str, slot: str) -> None:
    """The slot first (it would pin WAL for the rest of the session), then the database."""
    drop_slot(pg.dsn_for("postgres"), slot, grace_s=0)
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


class CaptureRun:
    """``run_capture`` into the broker in a thread; ``join`` re-raises its error."""

    def __init__(self, properties: Path, bootstrap: str, idle_s: float) -> None:
        self.error: BaseException | None = None
        self.stats: Any = None

        def target() -> None:
            try:
                self.stats = run_capture(properties, f"kafka:{bootstrap}", stop_when_idle=idle_s,
                                         show_progress=False)
            except BaseException as exc:  # re-raised by join
                self.error = exc
        self.thread = threading.Thread(target=target, name="e2e-capture", daemon=True)
        self.thread.start()

    def join(self, timeout: float = 300) -> Any:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"capture did not stop within {timeout:.0f} s of idleness")
        if self.error is not None:
            raise self.error
        return self.stats


class PgPipeline:
    """A source database, its capture configuration and the ingest jobs reading its topics."""

    def __init__(self, pg: Any, broker: Any, spark: Any, tmp_path: Path, name: str,
                 capture: dict[str, str] | None = None) -> None:
        """``capture``: capture properties that replace the defaults (e.g. transaction metadata off)."""
        self.pg, self.broker, self.spark, self.dir = pg, broker, spark, tmp_path
        self.capture_overrides = dict(capture or {})
        self.name = name  # database, topic prefix, slot and table namespaces derive from it
        self.slot = f"{name}_slot"
        self.dsn = fresh_database(pg, name)
        self.properties = self._write_capture_properties()
        self.lakes: dict[str, tuple[IngestConfig, Lake]] = {}
        self.lake_properties: dict[str, dict[str, Any]] = {}
        self.timings: list[str] = []  # printed by the tests: where the e2e time goes

    # ------------------------------------------------------------------ source

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True)

    def _write_capture_properties(self) -> Path:
        props = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "topic.prefix": self.name,
            "slot.name": self.slot,
            "publication.name": f"{self.name}_pub",
            "publication.autocreate.mode": "all_tables",
            "plugin.name": "pgoutput",
            "snapshot.mode": "initial",
            "provide.transaction.metadata": "true",
            "skipped.operations": "none",  # TRUNCATE events too
            "tombstones.on.delete": "true",
            "bootstrap.servers": self.broker.bootstrap_servers,
            "producer.linger.ms": "5",
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(self.dir / f"{self.name}.offsets.json"),
            "offset.flush.interval.ms": "500",
        }
        props.update(self.capture_overrides)
        props.update(self.pg.connection_properties(self.name))
        path = self.dir / f"{self.name}-capture.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        path.chmod(0o600)
        return path

    def slot_active(self) -> bool:
        with psycopg.connect(self.pg.dsn_for("postgres"), autocommit=True) as conn:
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                               (self.slot,)).fetchone()
        return bool(row and row[0])

    @contextmanager
    def capture_while(self, idle_s: float = 2.5, timeout: float = 300) -> Iterator[None]:
        """Capture streams while the ``with`` body changes the source, then drains and stops."""
        run = CaptureRun(self.properties, self.broker.bootstrap_servers, idle_s)
        deadline = time.monotonic() + 120
        while not self.slot_active():
            if not run.thread.is_alive():
                run.join(0)
                raise AssertionError("capture stopped before it streamed")
            if time.monotonic() > deadline:
                raise TimeoutError(f"capture did not start streaming from slot {self.slot}")
            time.sleep(0.1)
        started = time.monotonic()
        yield
        run.join(timeout)
        self.timings.append(f"capture+workload {time.monotonic() - started:.1f}s")

    def source_tables(self, keys: dict[str, tuple[str, ...]]) -> dict[str, SourceTable]:
        """Every listed table's rows and column types, read from the source now."""
        out: dict[str, SourceTable] = {}
        with self.connect() as conn:
            for table, key in keys.items():
                info = conn.execute(
                    "SELECT c.column_name, c.data_type, c.udt_name, c.numeric_precision, c.numeric_scale, "
                    "e.data_type FROM information_schema.columns c LEFT JOIN information_schema.element_types e "
                    "ON e.object_schema = c.table_schema AND e.object_name = c.table_name "
                    "AND e.collection_type_identifier = c.dtd_identifier "
                    "WHERE c.table_schema = 'public' AND c.table_name = %s ORDER BY c.ordinal_position",
                    (table,)).fetchall()
                columns = []
                for name, data_type, udt, precision, scale, element in info:
                    arrow, kind = arrow_type_of(data_type, udt, precision, scale, element)
                    columns.append(SourceColumn(name, arrow, kind))
                cur = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))
                names = [d.name for d in cur.description]
                rows = [dict(zip(names, r)) for r in cur.fetchall()]
                by_key = {tuple(r[k] for k in key): r for r in rows} if key else {}
                out[table] = SourceTable(table, key, tuple(columns), by_key)
        return out

    # ------------------------------------------------------------------ ingest

    def add_lake(self, label: str, table_format: str, tables: list[str], **extra: str) -> Lake:
        """An ingest job writing every table in ``table_format`` (``mixed:t1,t2`` puts those in Delta)."""
        warehouse = self.dir / f"{label}-warehouse"
        warehouse.mkdir(exist_ok=True)
        namespace = f"{self.name}_{label}"
        props: dict[str, Any] = {
            "name": namespace, "kafka.bootstrap.servers": self.broker.bootstrap_servers,
            "topic.prefix": self.name, "warehouse": str(warehouse),
            "table.format": table_format if table_format in ("iceberg", "delta") else "iceberg",
            "table.name.format.bronze": f"{namespace}_bronze.{{table}}",
            "table.name.format.silver": f"{namespace}_silver.{{table}}",
            "progress.path": str(self.dir / f"{label}-state"), "batch.max.wait.ms": "300", **extra}
        formats = {t: props["table.format"] for t in tables}
        if table_format.startswith("mixed:"):
            for table in table_format.split(":", 1)[1].split(","):
                props[f"table.mapping.{self.name}.public.{table}.format"] = "delta"
                formats[table] = "delta"
        config = IngestConfig.from_properties(props)
        self.lake_properties[label] = props
        spark = self.spark if table_format == "delta" else _session_for(self.spark, warehouse)
        lake = Lake(spark, warehouse, namespace, formats)
        self.lakes[label] = (config, lake)
        return lake

    def ingest(self, label: str) -> IngestSummary:
        config, lake = self.lakes[label]
        started = time.monotonic()
        summary = run_ingest(config, "available-now", spark=lake.spark)
        self.timings.append(f"ingest {label} {summary.events} events {time.monotonic() - started:.1f}s")
        assert not summary.failed_tables, f"{label}: ingest stopped tables: {summary.failed_tables}"
        assert summary.dead_letters == 0, f"{label}: {summary.dead_letters} records went to the dead-letter table"
        assert summary.held_events == 0, f"{label}: {summary.held_events} events held (incomplete transactions)"
        return summary

    def ingest_config_file(self, label: str) -> Path:
        """The ingest job's configuration as the file ``lakecdc ingest --config`` reads."""
        path = self.dir / f"{label}-ingest.yaml"
        path.write_text("".join(f"{k}: {json.dumps(str(v))}\n" for k, v in self.lake_properties[label].items()))
        return path

    def ingest_all(self) -> dict[str, IngestSummary]:
        return {label: self.ingest(label) for label in self.lakes}

    # ------------------------------------------------------------------ checks

    def compare(self, label: str, log: ChangeLog, phase: str,
                silver_tables: list[str] | None = None) -> list[Differences]:
        """Every silver table against its source table and every bronze table against the log."""
        _, lake = self.lakes[label]
        source = self.source_tables(log.keys)
        tag = f"[{label} after {phase}]"
        diffs = []
        for table, key in log.keys.items():
            diffs.append(compare_bronze(table, key, log.expected(table), lake.bronze(table), tag))
            if table in log.keyless:
                if lake.silver(table) is not None:
                    d = Differences()
                    d.add(f"{tag}: table {table} has no primary key but a silver table was written")
                    diffs.append(d)
                continue
            if silver_tables is None or table in silver_tables:
                diffs.append(compare_silver(source[table], lake.silver(table), tag, lake.formats[table]))
        return diffs

    def compare_all(self, log: ChangeLog, phase: str) -> list[Differences]:
        return [d for label in self.lakes for d in self.compare(label, log, phase)]

    def close(self) -> None:
        drop_database(self.pg, self.name, self.slot)


def _session_for(spark: Any, warehouse: Path) -> Any:
    """A session whose ``lake`` Iceberg catalog lives in this pipeline's own warehouse."""
    from lakecdc.devstack.spark import spark_session

    return spark_session(warehouse, app_name="lakecdc-e2e")
