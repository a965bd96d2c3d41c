"""The small PostgreSQL pipeline the status and metrics tests watch: two tables (one ingested into
Iceberg, one into Delta) seeded with a few rows, then a known workload of inserts, updates and deletes,
so every count the tools report is known in advance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

SEED_ROWS, INSERTS, UPDATES, DELETES = 10, 5, 3, 2
TABLES = {"items": "iceberg", "parts": "delta"}


def capture_properties(name: str, pg: Any, broker: Any, directory: Path) -> Path:
    """The capture's Debezium properties (transaction metadata, tombstones), written to ``directory``."""
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "name": name, "topic.prefix": name,
        "slot.name": f"{name}_slot", "publication.name": f"{name}_pub", "publication.autocreate.mode": "all_tables",
        "snapshot.mode": "initial", "provide.transaction.metadata": "true", "tombstones.on.delete": "true",
        "bootstrap.servers": broker.bootstrap_servers,
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(directory / "offsets.json"), "offset.flush.interval.ms": "500",
        **pg.connection_properties(name)}
    path = directory / "capture.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def create_tables(conn: psycopg.Connection) -> None:
    """Both tables with ``SEED_ROWS`` rows each, analysed (reltuples: the snapshot's estimate)."""
    for table in TABLES:
        ident = sql.Identifier(table)
        conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, name text)").format(ident))
        conn.execute(sql.SQL("INSERT INTO {} SELECT g, 'row ' || g FROM generate_series(1, %s) g").format(ident),
                     (SEED_ROWS,))
        conn.execute(sql.SQL("ANALYZE {}").format(ident))


def workload(conn: psycopg.Connection, table: str) -> None:
    """``INSERTS`` inserts in one transaction, then ``UPDATES`` updates and ``DELETES`` deletes."""
    ident = sql.Identifier(table)
    with conn.transaction():
        for i in range(SEED_ROWS + 1, SEED_ROWS + INSERTS + 1):
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(ident), (i, f"new {i}"))
    for i in range(1, UPDATES + 1):
        conn.execute(sql.SQL("UPDATE {} SET name = name || '!' WHERE id = %s").format(ident), (i,))
    conn.execute(sql.SQL("DELETE FROM {} WHERE id > %s").format(ident), (SEED_ROWS + INSERTS - DELETES,))
