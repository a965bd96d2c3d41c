"""Ordinary (SQL) connection work: captured tables, primary keys, privileges, publication, slot.

Everything here runs over a psycopg 3 connection in autocommit mode; the replication stream itself
lives in ``replication.py``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.errors import (
    PostgresCaptureError,
    PostgresUnavailable,
    PrivilegeError,
    PublicationMissingError,
    scrub,
)
from lakecdc.events.topics import TableId

log = logging.getLogger(__name__)


def quoted(table: TableId) -> sql.Composed:
    """``"schema"."table"`` as a SQL fragment."""
    return sql.SQL("{}.{}").format(sql.Identifier(table.schema or "public"), sql.Identifier(table.table))


def regclass_text(table: TableId) -> str:
    """Text for ``%s::regclass`` that survives mixed-case and dotted names."""
    return '"' + (table.schema or "public").replace('"', '""') + '"."' + table.table.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class SlotState:
    exists: bool
    active: bool = False
    confirmed_flush_lsn: int | None = None
    restart_lsn: int | None = None
    wal_status: str | None = None  # 'lost' when PostgreSQL removed the WAL the slot needs
    plugin: str | None = None


def connect(config: PostgresConnectorConfig) -> psycopg.Connection:
    """An autocommit SQL connection; failures become errors without the password. The
    ``database.initial.statements`` run on it first."""
    try:
        conn = psycopg.connect(config.conninfo(), autocommit=True)
    except psycopg.OperationalError as exc:
        text = scrub(str(exc)).strip()
        if "password authentication failed" in text or "does not exist" in text:
            raise PostgresCaptureError(f"connecting to {config.describe_target()}: {text}") from None
        raise PostgresUnavailable(f"connecting to {config.describe_target()}: {text}") from None
    for statement in config.initial_statements:
        conn.execute(statement)  # the user's own SQL, as Debezium runs it
    return conn


def _lsn(text: str | None) -> int | None:
    if text is None:
        return None
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def one_row(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The one row of a query that always returns one (a server function, the current role)."""
    row = cursor.fetchone()
    if row is None:
        raise PostgresCaptureError("the server returned no row for a query that always returns one")
    return tuple(row)


def server_version(conn: psycopg.Connection) -> int:
    return conn.info.server_version


def captured_tables(conn: psycopg.Connection, config: PostgresConnectorConfig) -> list[TableId]:
    """Ordinary and partitioned tables the filters select, partitions included, in Debezium's
    snapshot order: the order of ``table.include.list`` entries, then by name. As in Debezium
    (whose JDBC table list holds partitions as tables), a filter selecting a partitioned table and
    its partitions snapshots both, and one selecting only partitions captures them alone.
    pg_catalog and information_schema are left out by the filters unless ``table.ignore.builtin=false``."""
    rows = conn.execute(
        """
        SELECT n.nspname, c.relname
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind IN ('r', 'p')
           AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp%%'
        """
    ).fetchall()
    selected = [TableId(None, s, t) for s, t in rows if config.table_filter.matches(s, t)]
    patterns = [p.strip() for p in (config.table_include_list or "").split(",") if p.strip()]

    def rank(table: TableId) -> tuple[int, str, str]:
        for i, pattern in enumerate(patterns):
            if re.fullmatch(pattern, str(table)):
                return (i, table.schema or "", table.table)
        return (len(patterns), table.schema or "", table.table)

    return sorted(selected, key=rank)


def primary_key_columns(conn: psycopg.Connection, table: TableId) -> list[str]:
    """Primary-key columns in index order (Debezium reads them over JDBC; pgoutput's key flags
    describe the replica identity instead, which may differ)."""
    rows = conn.execute(
        """
        SELECT a.attname
          FROM pg_index i
          JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
         WHERE i.indrelid = %s::regclass AND i.indisprimary
         ORDER BY k.ord
        """,
        (regclass_text(table),),
    ).fetchall()
    return [r[0] for r in rows]


def replica_identity(conn: psycopg.Connection, table: TableId) -> str:
    row = conn.execute(
        "SELECT relreplident FROM pg_class WHERE oid = %s::regclass", (regclass_text(table),)
    ).fetchone()
    return row[0] if row else "d"


# -- privileges ---------------------------------------------------------------------------------
def check_privileges(
    conn: psycopg.Connection, config: PostgresConnectorConfig, tables: list[TableId], creates_publication: bool
) -> None:
    """Raise ``PrivilegeError`` listing every missing privilege with the GRANT that fixes it."""
    user = one_row(conn.execute("SELECT current_user"))[0]
    super_, repl = one_row(conn.execute(
        "SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user"
    ))
    fixes: list[str] = []
    if not (super_ or repl):
        in_rds = conn.execute(
            "SELECT pg_has_role(current_user, oid, 'member') FROM pg_roles WHERE rolname = 'rds_replication'"
        ).fetchone()
        if not (in_rds and in_rds[0]):
            fixes.append(f'ALTER ROLE "{user}" WITH REPLICATION;  -- logical replication slots')
    if not super_:
        db = config.database_dbname or "postgres"
        can_connect = one_row(conn.execute("SELECT has_database_privilege(current_database(), 'CONNECT')"))[0]
        if not can_connect:
            fixes.append(f'GRANT CONNECT ON DATABASE "{db}" TO "{user}";')
        for table in tables:
            usage = one_row(conn.execute("SELECT has_schema_privilege(%s, 'USAGE')", (table.schema,)))[0]
            if not usage:
                fixes.append(f'GRANT USAGE ON SCHEMA "{table.schema}" TO "{user}";')
            ok = one_row(conn.execute(
                "SELECT has_table_privilege(%s::regclass, 'SELECT')", (regclass_text(table),)
            ))[0]
            if not ok:
                fixes.append(f'GRANT SELECT ON "{table.schema}"."{table.table}" TO "{user}";')
        if creates_publication:
            can_create = one_row(conn.execute("SELECT has_database_privilege(current_database(), 'CREATE')"))[0]
            if not can_create:
                fixes.append(f'GRANT CREATE ON DATABASE "{db}" TO "{user}";  -- to create the publication')
            if config.publication_autocreate_mode == "filtered":
                for table in publishable(config, tables):
                    owner = one_row(conn.execute(
                        "SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c "
                        "WHERE c.oid = %s::regclass", (regclass_text(table),)
                    ))[0]
                    if not owner:
                        fixes.append(
                            f'-- publication "{config.publication_name}" FOR TABLE needs ownership of '
                            f'"{table.schema}"."{table.table}": GRANT <owner role> TO "{user}"; or create '
                            "the publication as its owner and set publication.autocreate.mode=disabled"
                        )
            elif config.publication_autocreate_mode == "all_tables":
                fixes.append(
                    f'-- publication "{config.publication_name}" FOR ALL TABLES needs a superuser: create '
                    "it as one, or use publication.autocreate.mode=filtered"
                )
    if fixes:
        listing = "\n  ".join(dict.fromkeys(fixes))
        raise PrivilegeError(
            f"user '{user}' lacks privileges lakecdc needs on {config.describe_target()}; run:\n  {listing}"
        )


# -- publication --------------------------------------------------------------------------------
def publication_exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,)).fetchone() is not None


def publishable(config: PostgresConnectorConfig, tables: list[TableId]) -> list[TableId]:
    """The tables a publication can hold: PostgreSQL refuses system catalogs (pg_catalog,
    information_schema), which ``table.ignore.builtin=false`` lets the snapshot read."""
    return [t for t in tables if t.schema not in config.excluded_schemas]


def _publication_options(config: PostgresConnectorConfig) -> sql.Composable:
    # Debezium's PostgresReplicationConnection appends WITH (publish_via_partition_root = true):
    # changes to a partition are then published as changes of its partitioned root table.
    if config.publish_via_partition_root:
        return sql.SQL(" WITH (publish_via_partition_root = true)")
    return sql.SQL("")


def _check_via_root(conn: psycopg.Connection, config: PostgresConnectorConfig) -> None:
    """An existing publication keeps its own setting, as in Debezium; say so when it differs."""
    row = conn.execute("SELECT pubviaroot FROM pg_publication WHERE pubname = %s",
                       (config.publication_name,)).fetchone()
    if row is not None and bool(row[0]) != config.publish_via_partition_root:
        log.warning(
            "publication %s has publish_via_partition_root = %s but publish.via.partition.root=%s: the "
            "existing publication's setting decides how partition changes arrive (ALTER PUBLICATION %s SET "
            "(publish_via_partition_root = %s) to change it)", config.publication_name, bool(row[0]),
            str(config.publish_via_partition_root).lower(), config.publication_name,
            str(config.publish_via_partition_root).lower())


def ensure_publication(conn: psycopg.Connection, config: PostgresConnectorConfig, tables: list[TableId]) -> None:
    """Create or update the publication per ``publication.autocreate.mode`` (Debezium's rules):
    all_tables creates ``FOR ALL TABLES`` if missing; filtered creates it for the captured tables,
    or resets an existing one to them; no_tables creates an empty one; disabled requires it.
    ``publish.via.partition.root`` is applied when lakecdc creates the publication."""
    name = config.publication_name
    mode = config.publication_autocreate_mode
    exists = publication_exists(conn, name)
    ident = sql.Identifier(name)
    options = _publication_options(config)
    tables = publishable(config, tables)
    if exists:
        _check_via_root(conn, config)
    if mode == "disabled":
        if not exists:
            raise PublicationMissingError(
                f"publication '{name}' does not exist and publication.autocreate.mode=disabled; create it "
                f"(CREATE PUBLICATION \"{name}\" FOR TABLE ...) or change the mode"
            )
        return
    if mode == "all_tables":
        if not exists:
            log.info("creating publication %s FOR ALL TABLES", name)
            conn.execute(sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES{}").format(ident, options))
        return
    if mode == "no_tables":
        if not exists:
            conn.execute(sql.SQL("CREATE PUBLICATION {}{}").format(ident, options))
        return
    # filtered
    if not tables:
        raise PostgresCaptureError(
            f"publication.autocreate.mode=filtered but no table matches the include/exclude lists on "
            f"{config.describe_target()}"
        )
    table_list = sql.SQL(", ").join(quoted(t) for t in tables)
    if not exists:
        log.info("creating publication %s for %d tables", name, len(tables))
        conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}{}").format(ident, table_list, options))
        return
    current = {
        TableId(None, s, t)
        for s, t in conn.execute(
            "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s", (name,)
        ).fetchall()
    }
    if current != set(tables):
        log.info("updating publication %s to the %d captured tables", name, len(tables))
        conn.execute(sql.SQL("ALTER PUBLICATION {} SET TABLE {}").format(ident, table_list))


# -- slot ---------------------------------------------------------------------------------------
def slot_state(conn: psycopg.Connection, slot_name: str) -> SlotState:
    has_wal_status = server_version(conn) >= 130000
    row = conn.execute(
        "SELECT active, confirmed_flush_lsn::text, restart_lsn::text, "
        + ("wal_status" if has_wal_status else "NULL")
        + ", plugin FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()",
        (slot_name,),
    ).fetchone()
    if row is None:
        return SlotState(False)
    return SlotState(True, bool(row[0]), _lsn(row[1]), _lsn(row[2]), row[3], row[4])


def drop_slot(conn: psycopg.Connection, slot_name: str, wait_s: float = 10.0) -> None:
    """Drop the slot once inactive: our walsender ends asynchronously after the replication
    connection closes, and dropping an active slot fails."""
    deadline = time.monotonic() + wait_s
    state = slot_state(conn, slot_name)
    while state.active and time.monotonic() < deadline:
        time.sleep(0.05)
        state = slot_state(conn, slot_name)
    if state.exists:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot_name,))
        log.info("dropped replication slot %s (slot.drop.on.stop=true)", slot_name)


def terminate_slot_holder(conn: psycopg.Connection, slot_name: str) -> None:
    """End a stale walsender still holding the slot (a killed capture's connection)."""
    conn.execute(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
        "WHERE slot_name = %s AND active_pid IS NOT NULL AND active_pid <> pg_backend_pid()",
        (slot_name,),
    )
