"""The ``source`` block of every change event, per connector, as Debezium 3.x writes it.

Every connector starts with Debezium's common fields, then adds its own::

    version, connector, name, ts_ms, snapshot, db, sequence, ts_us, ts_ns, <connector fields>

PostgreSQL example (Debezium 3.6.3, from the shared conformance run)::

    {"version": "3.6.3.Final", "connector": "postgresql", "name": "dbz", "ts_ms": 1795336045068,
     "snapshot": "false", "db": "dbzref", "sequence": "[\\"99091160\\",\\"99091416\\"]",
     "ts_us": 1795336045068358, "ts_ns": 1795336045068358000, "schema": "public",
     "table": "customers", "txId": 1264, "lsn": 99091416, "xmin": null, "origin": null,
     "origin_lsn": null}

Builders return plain dicts in schema field order; build them per event with keyword arguments
(no per-event schema work).
"""

from __future__ import annotations

from typing import Any

from lakecdc.events.schema import (
    INT32,
    INT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    STRING,
    ConnectSchema,
    primitive,
    struct,
)

#: The Debezium releases whose events lakecdc reproduces, newest first. ``source.version`` names the
#: first by default; the connector property ``lakecdc.debezium.version`` selects another. Between
#: 3.6.3 and 3.7.0 the PostgreSQL events differ only in that field (measured by
#: ``tests/conformance/test_pg_debezium_next.py``).
DEBEZIUM_VERSIONS = ("3.7.0.Final", "3.6.3.Final")
DEBEZIUM_VERSION = DEBEZIUM_VERSIONS[0]

#: ``source.snapshot`` values (Debezium ``SnapshotRecord``), in the order of the Enum parameter.
SNAPSHOT_VALUES = (
    "true",
    "first",
    "first_in_data_collection",
    "last_in_data_collection",
    "last",
    "false",
    "incremental",
)

SNAPSHOT_FIELD = primitive(
    "string",
    True,
    name="io.debezium.data.Enum",
    version=1,
    parameters={"allowed": ",".join(SNAPSHOT_VALUES)},
    default="false",
)


def _common(connector_fields: list[tuple[str, ConnectSchema]], name: str) -> ConnectSchema:
    fields = [
        ("version", STRING),
        ("connector", STRING),
        ("name", STRING),
        ("ts_ms", INT64),
        ("snapshot", SNAPSHOT_FIELD),
        ("db", STRING),
        ("sequence", OPTIONAL_STRING),
        ("ts_us", OPTIONAL_INT64),
        ("ts_ns", OPTIONAL_INT64),
        *connector_fields,
    ]
    return struct(fields, name=name, version=1)


POSTGRES_SOURCE = _common(
    [
        ("schema", STRING),
        ("table", STRING),
        ("txId", OPTIONAL_INT64),
        ("lsn", OPTIONAL_INT64),
        ("xmin", OPTIONAL_INT64),
        ("origin", OPTIONAL_STRING),
        ("origin_lsn", OPTIONAL_INT64),
    ],
    "io.debezium.connector.postgresql.Source",
)

_BINLOG_FIELDS: list[tuple[str, ConnectSchema]] = [
    ("table", OPTIONAL_STRING),
    ("server_id", INT64),
    ("gtid", OPTIONAL_STRING),
    ("file", STRING),
    ("pos", INT64),
    ("row", INT32),
    ("thread", OPTIONAL_INT64),
    ("query", OPTIONAL_STRING),
]
MYSQL_SOURCE = _common(_BINLOG_FIELDS, "io.debezium.connector.mysql.Source")
MARIADB_SOURCE = _common(_BINLOG_FIELDS, "io.debezium.connector.mariadb.Source")

SQLSERVER_SOURCE = _common(
    [
        ("schema", STRING),
        ("table", STRING),
        ("change_lsn", OPTIONAL_STRING),
        ("commit_lsn", OPTIONAL_STRING),
        ("event_serial_no", OPTIONAL_INT64),
    ],
    "io.debezium.connector.sqlserver.Source",
)

ORACLE_SOURCE = _common(
    [
        ("schema", STRING),
        ("table", STRING),
        ("txId", OPTIONAL_STRING),
        ("scn", OPTIONAL_STRING),
        ("commit_scn", OPTIONAL_STRING),
        ("lcr_position", OPTIONAL_STRING),
        ("rs_id", OPTIONAL_STRING),
        ("ssn", OPTIONAL_INT64),
        ("redo_thread", OPTIONAL_INT32),
        ("user_name", OPTIONAL_STRING),
        ("redo_sql", OPTIONAL_STRING),
        ("row_id", OPTIONAL_STRING),
        ("commit_ts_ms", OPTIONAL_INT64),
        ("start_scn", OPTIONAL_STRING),
        ("start_ts_ms", OPTIONAL_INT64),
        ("txSeq", OPTIONAL_INT64),
    ],
    "io.debezium.connector.oracle.Source",
)

SOURCE_SCHEMAS: dict[str, ConnectSchema] = {
    "postgresql": POSTGRES_SOURCE,
    "mysql": MYSQL_SOURCE,
    "mariadb": MARIADB_SOURCE,
    "sqlserver": SQLSERVER_SOURCE,
    "oracle": ORACLE_SOURCE,
}


def source_schema(connector: str) -> ConnectSchema:
    """The source struct schema for ``connector`` (postgresql, mysql, mariadb, sqlserver, oracle)."""
    key = "postgresql" if connector.lower() == "postgres" else connector.lower()
    try:
        return SOURCE_SCHEMAS[key]
    except KeyError:
        raise ValueError(f"no source schema for connector {connector!r}; known: {sorted(SOURCE_SCHEMAS)}") from None


def snapshot_marker(is_snapshot: bool, first: bool = False, last: bool = False,
                    first_in_table: bool = False, last_in_table: bool = False) -> str:
    """The ``snapshot`` text for a row: Debezium marks the first and last rows of the snapshot
    (``first``, ``last``) and of each table (``first_in_data_collection``,
    ``last_in_data_collection``); streamed events say ``false``. Precedence as in Debezium: first, last,
    last_in_data_collection, first_in_data_collection."""
    if not is_snapshot:
        return "false"
    if first:
        return "first"
    if last:
        return "last"
    if last_in_table:  # a table's only row is "last_in_data_collection" (seen in Debezium 3.6.3)
        return "last_in_data_collection"
    if first_in_table:
        return "first_in_data_collection"
    return "true"


class PostgresSourceBuilder:
    """Builds PostgreSQL source payloads; constant parts are fixed at construction.

    ``last_commit_lsn`` and ``lsn`` also give ``sequence`` (``["<last commit>","<lsn>"]``).
    ``ts_us`` is the commit time in microseconds; ``ts_ms``/``ts_ns`` derive from it, as Debezium does.
    """

    __slots__ = ("version", "name", "db")

    def __init__(self, server_name: str, db: str, version: str = DEBEZIUM_VERSION) -> None:
        self.version = version
        self.name = server_name
        self.db = db

    def build(
        self,
        *,
        schema: str,
        table: str,
        ts_us: int,
        lsn: int | None,
        last_commit_lsn: int | None,
        tx_id: int | None,
        snapshot: str = "false",
        xmin: int | None = None,
        origin: str | None = None,
        origin_lsn: int | None = None,
    ) -> dict[str, Any]:
        if lsn is None:
            sequence = None
        else:
            commit = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
            sequence = f'[{commit},"{lsn}"]'
        return {
            "version": self.version,
            "connector": "postgresql",
            "name": self.name,
            "ts_ms": ts_us // 1000,
            "snapshot": snapshot,
            "db": self.db,
            "sequence": sequence,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": schema,
            "table": table,
            "txId": tx_id,
            "lsn": lsn,
            "xmin": xmin,
            "origin": origin,
            "origin_lsn": origin_lsn,
        }


class BinlogSourceBuilder:
    """Builds MySQL / MariaDB source payloads (``connector`` is "mysql" or "mariadb")."""

    __slots__ = ("version", "name", "connector")

    def __init__(self, server_name: str, connector: str = "mysql", version: str = DEBEZIUM_VERSION) -> None:
        if connector not in ("mysql", "mariadb"):
            raise ValueError(f"binlog source connector must be 'mysql' or 'mariadb', not {connector!r}")
        self.version = version
        self.name = server_name
        self.connector = connector

    def build(
        self,
        *,
        db: str,
        table: str | None,
        ts_ms: int,
        server_id: int,
        file: str,
        pos: int,
        row: int,
        snapshot: str = "false",
        gtid: str | None = None,
        thread: int | None = None,
        query: str | None = None,
        ts_us: int | None = None,
    ) -> dict[str, Any]:
        micros = ts_us if ts_us is not None else ts_ms * 1000
        return {
            "version": self.version,
            "connector": self.connector,
            "name": self.name,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "sequence": None,
            "ts_us": micros,
            "ts_ns": micros * 1000,
            "table": table,
            "server_id": server_id,
            "gtid": gtid,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": thread,
            "query": query,
        }


class SqlServerSourceBuilder:
    """Builds SQL Server source payloads; LSNs in text form ``00000027:00000758:0003``."""

    __slots__ = ("version", "name")

    def __init__(self, server_name: str, version: str = DEBEZIUM_VERSION) -> None:
        self.version = version
        self.name = server_name

    def build(
        self,
        *,
        db: str,
        schema: str,
        table: str,
        ts_ms: int,
        commit_lsn: str | None,
        change_lsn: str | None,
        event_serial_no: int | None,
        snapshot: str = "false",
    ) -> dict[str, Any]:
        return {
            "version": self.version,
            "connector": "sqlserver",
            "name": self.name,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "sequence": None,
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "schema": schema,
            "table": table,
            "change_lsn": change_lsn,
            "commit_lsn": commit_lsn,
            "event_serial_no": event_serial_no,
        }


class OracleSourceBuilder:
    """Builds Oracle source payloads; SCNs as decimal text, as Debezium writes them."""

    __slots__ = ("version", "name")

    def __init__(self, server_name: str, version: str = DEBEZIUM_VERSION) -> None:
        self.version = version
        self.name = server_name

    def build(
        self,
        *,
        db: str,
        schema: str,
        table: str,
        ts_ms: int,
        scn: int | None,
        commit_scn: int | None = None,
        tx_id: str | None = None,
        rs_id: str | None = None,
        ssn: int | None = 0,
        redo_thread: int | None = None,
        user_name: str | None = None,
        snapshot: str = "false",
        commit_ts_ms: int | None = None,
        start_scn: int | None = None,
        start_ts_ms: int | None = None,
        tx_sequence: int | None = None,
        row_id: str | None = None,
        redo_sql: str | None = None,
    ) -> dict[str, Any]:
        return {
            "version": self.version,
            "connector": "oracle",
            "name": self.name,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "sequence": None,
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "schema": schema,
            "table": table,
            "txId": tx_id,
            "scn": None if scn is None else str(scn),
            "commit_scn": None if commit_scn is None else str(commit_scn),
            "lcr_position": None,
            "rs_id": rs_id,
            "ssn": ssn,
            "redo_thread": redo_thread,
            "user_name": user_name,
            "redo_sql": redo_sql,
            "row_id": row_id,
            "commit_ts_ms": commit_ts_ms,
            "start_scn": None if start_scn is None else str(start_scn),
            "start_ts_ms": start_ts_ms,
            "txSeq": tx_sequence,
        }
