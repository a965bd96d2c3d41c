"""The MariaDB end of an end-to-end pipeline: a database, binlog capture into the broker, source reads.

Like ``e2e_pipeline.PgPipeline`` (whose ingest side it reuses): own database, topic prefix,
capture offsets and schema history files, and per ingest job its own warehouse.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymysql
from e2e_lake import SourceColumn, SourceTable, arrow_type_of
from e2e_pipeline import PgPipeline

from lakecdc.capture.runner import run_capture


class MariaDbPipeline(PgPipeline):
    """Same ingest jobs and checks as ``PgPipeline``; the source is a MariaDB database."""

    def __init__(self, mariadb: Any, broker: Any, spark: Any, tmp_path: Path, name: str) -> None:
        self.mariadb, self.broker, self.spark, self.dir, self.name = mariadb, broker, spark, tmp_path, name
        mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{name}`;\nCREATE DATABASE `{name}` CHARACTER SET utf8mb4;\n")
        self.properties = self._write_mysql_properties()
        self.lakes = {}
        self.lake_properties = {}
        self.timings = []
        self.source_schema = name  # topics are <prefix>.<database>.<table>

    def connect(self) -> Any:  # type: ignore[override]
        conn = pymysql.connect(**self.mariadb.connect_kwargs(self.name), autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")  # TIMESTAMP values read and written as UTC
        return conn

    def _write_mysql_properties(self) -> Path:
        props = {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "topic.prefix": self.name,
            "database.include.list": self.name,
            "snapshot.mode": "initial",
            "provide.transaction.metadata": "true",
            "skipped.operations": "none",
            "bootstrap.servers": self.broker.bootstrap_servers,
            "producer.linger.ms": "5",
            "schema.history.internal.file.filename": str(self.dir / f"{self.name}.history.jsonl"),
            "offset.storage.file.filename": str(self.dir / f"{self.name}.offsets.json"),
            "offset.flush.interval.ms": "500",
        }
        props.update(self.mariadb.connection_properties())
        path = self.dir / f"{self.name}-capture.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        path.chmod(0o600)
        return path

    def _binlog_readers(self) -> set[int]:
        conn = pymysql.connect(**self.mariadb.connect_kwargs(self.name))
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW PROCESSLIST")
                return {int(r[0]) for r in cur.fetchall() if str(r[4]).startswith("Binlog Dump")}
        finally:
            conn.close()

    @contextmanager
    def capture_while(self, idle_s: float = 2.5, timeout: float = 300) -> Iterator[None]:
        before = self._binlog_readers()
        errors: list[BaseException] = []

        def target() -> None:
            try:
                run_capture(self.properties, f"kafka:{self.broker.bootstrap_servers}", stop_when_idle=idle_s,
                            show_progress=False)
            except BaseException as exc:  # re-raised below
                errors.append(exc)
        thread = threading.Thread(target=target, name="e2e-mysql-capture", daemon=True)
        started = time.monotonic()
        thread.start()
        while not (self._binlog_readers() - before):
            if not thread.is_alive():
                raise AssertionError(f"capture stopped before it read the binlog: {errors}")
            if time.monotonic() - started > 120:
                raise TimeoutError("capture did not connect to the binlog")
            time.sleep(0.1)
        yield
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"capture did not stop within {timeout:.0f} s of idleness")
        if errors:
            raise errors[0]
        self.timings.append(f"capture+workload {time.monotonic() - started:.1f}s")

    def source_tables(self, keys: dict[str, tuple[str, ...]]) -> dict[str, SourceTable]:
        out: dict[str, SourceTable] = {}
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                for table, key in keys.items():
                    cur.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE "
                                "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                                "ORDER BY ORDINAL_POSITION", (self.name, table))
                    columns = []
                    for name, data_type, column_type, precision, scale in cur.fetchall():
                        arrow, kind = arrow_type_of(data_type, column_type, precision, scale)
                        columns.append(SourceColumn(name, arrow, kind))
                    cur.execute(f"SELECT * FROM `{table}`")
                    names = [d[0] for d in cur.description]
                    rows = [dict(zip(names, r)) for r in cur.fetchall()]
                    out[table] = SourceTable(table, key, tuple(columns), {tuple(r[k] for k in key): r for r in rows})
        finally:
            conn.close()
        return out

    def close(self) -> None:
        self.mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{self.name}`;\n")
