"""Every PostgreSQL type, every mode set: our schema and value == what real Debezium 3.6.3 emitted.

The golden files ``tests/data/pg_types/golden_<mode set>.jsonl`` were recorded from Debezium by
``tests/conformance/pg_types_golden.py`` (regenerate there). This test needs no JVM: it loads the
same tables and rows into a real PostgreSQL 15 (the ``pg15`` fixture; 15 because the embedded 18
build has no libxml), reads each value as PostgreSQL's text output -- what pgoutput and COPY send --
and checks ``column_schema`` and ``value_converter`` against every recorded field and value,
snapshot rows (``snapshot=True``) and streamed rows alike, including unchanged-TOAST placeholders.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from lakecdc.capture.postgres.types import (
    UNCHANGED_TOAST,
    PgColumn,
    TypeModes,
    column_schema,
    load_table_columns,
    load_type_catalog,
    value_converter,
)
from lakecdc.events.serde import jackson_dumps
from lakecdc.events.values import connect_to_json


def _load_generator() -> Any:
    """The golden generator module (a script in tests/conformance, not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "conformance" / "pg_types_golden.py"
    spec = importlib.util.spec_from_file_location("pg_types_golden", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


_generator = _load_generator()
DATA_DIR: Path = _generator.DATA_DIR
MODE_SETS: dict[str, dict[str, str]] = _generator.MODE_SETS
STREAM_ID_OFFSET: int = _generator.STREAM_ID_OFFSET
sql_statements = _generator.sql_statements

pytestmark = pytest.mark.integration

psycopg = pytest.importorskip("psycopg")

# Session settings of pgoutput's walsender / a COPY snapshot (see types.py docstring).
SESSION = "SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC'; SET lc_monetary = 'C'"
# Values that legitimately differ between the recording and this database: the insert time.
MASKED = _generator.VOLATILE_COLUMNS
# Debezium prints the elements of a multi-dimensional text array as Java object identities
# ("[Ljava.lang.String;@6f86ecd4"), which no implementation can reproduce; we emit null for them.
JAVA_IDENTITY = "[Ljava.lang.String;@"
TABLES = ["t_num", "t_text", "t_time", "t_misc", "t_array", "t_default", "t_toast", "t_domain", "t_xml",
          "t_postgis"]
# In the streamed updates of stream_after.sql every big_* column arrives as unchanged TOAST.
UNCHANGED_PREFIX = "big_"


def _golden(modes: str) -> list[dict[str, Any]]:
    path = DATA_DIR / f"golden_{modes}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module", params=["pg15", "pg"], ids=["pg15", "pg18"])
def typed_db(request: pytest.FixtureRequest) -> Any:
    """The fixture tables with the snapshot rows and the re-inserted streaming rows (ids + 100),
    on PostgreSQL 15 and 18, read back as text before and after the TOAST-preserving update."""
    server = request.getfixturevalue(request.param)
    dsn = server.create_database("pg_types_golden")
    with psycopg.connect(dsn, autocommit=True) as conn:
        missing = _missing_tables(conn)
        conn.execute("SET lc_monetary = 'C'")
        for path, offset in (("schema.sql", 0), ("rows.sql", 0), ("rows.sql", STREAM_ID_OFFSET)):
            for stmt in sql_statements(DATA_DIR / path, offset):
                if _runs_here(stmt, missing):
                    conn.execute(stmt)
        conn.execute(SESSION)
        tables_here = [t for t in TABLES if t not in missing]
        catalog = load_type_catalog(conn)
        tables = {t: load_table_columns(conn, catalog, "public", t) for t in tables_here}
        for oid in range(1, 100_000):  # every value as the type's output function prints it
            if catalog.get(oid) is not None:
                conn.adapters.register_loader(oid, _OutputText)
        texts = {table: _read_texts(conn, table, columns) for table, columns in tables.items()}
        for stmt in sql_statements(DATA_DIR / "stream_after.sql"):
            if _runs_here(stmt, missing):
                conn.execute(stmt)
        updated = {table: _read_texts(conn, table, columns) for table, columns in tables.items()}
    yield tables, texts, updated
    with psycopg.connect(server.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE pg_types_golden")


def _missing_tables(conn: Any) -> set[str]:
    """Fixture tables this server cannot hold: t_xml needs libxml (the embedded 18 lacks it),
    t_postgis the PostGIS extension (Debian's postgresql-15-postgis-3)."""
    missing = set()
    try:
        conn.execute("SELECT '<a/>'::xml")
    except psycopg.errors.FeatureNotSupported:
        missing.add("t_xml")
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'").fetchone() is None:
        missing.add("t_postgis")
    return missing


def _runs_here(stmt: str, missing: set[str]) -> bool:
    if "t_postgis" in missing and "postgis" in stmt:
        return False
    return not any(table in stmt for table in missing)


class _OutputText(psycopg.adapt.Loader):
    """Load every value as its text, untouched (not ``::text``, which differs for bool, bpchar,
    inet and xml)."""

    def load(self, data: Any) -> str:
        return bytes(data).decode()


def _read_texts(conn: Any, table: str, columns: list[PgColumn]) -> dict[int, dict[str, str | None]]:
    select = ", ".join(f'"{c.name}"' for c in columns)
    out = {}
    for row in conn.execute(f"SELECT {select} FROM {table} ORDER BY id").fetchall():
        values = dict(zip([c.name for c in columns], row))
        out[int(values["id"])] = values
    return out


def _wire(schema: Any, value: Any) -> Any:
    """The payload value as the JSON converter writes it, read back (bytes -> base64, NaN -> "NaN")."""
    return json.loads(jackson_dumps(connect_to_json(schema, value)))


def _check_table(modes_name: str, table: str, typed_db: Any) -> list[str]:
    tables, texts, updated = typed_db
    modes = TypeModes.from_properties(MODE_SETS[modes_name])
    columns: list[PgColumn] = tables[table]
    problems: list[str] = []
    records = [r for r in _golden(modes_name) if r["table"] == table]
    assert records, f"no golden records for {table} in {modes_name}"
    propagate = "column.propagate.source.type" in MODE_SETS[modes_name]
    phase_schemas = {
        phase: {c.name: column_schema(c, modes, propagate_source_type=propagate, snapshot=phase == "snapshot")
                for c in columns}
        for phase in ("snapshot", "streaming")
    }
    schemas = phase_schemas["streaming"]
    emitted = [c.name for c in columns if schemas[c.name] is not None]
    converters = {
        phase: {c.name: value_converter(c, modes, snapshot=phase == "snapshot") for c in columns
                if schemas[c.name] is not None}
        for phase in ("snapshot", "streaming")
    }
    schema_problems: set[str] = set()
    for record in records:
        golden_fields = {f["field"]: f for f in record["fields"]}
        if list(golden_fields) != emitted:
            problems.append(f"{table} fields: golden {list(golden_fields)} != ours {emitted}")
            continue
        for name in emitted:
            ours = json.loads(jackson_dumps(phase_schemas[record["phase"]][name].to_json(name)))  # type: ignore[union-attr]
            if ours != golden_fields[name]:
                schema_problems.add(f"{record['phase']} {table}.{name} schema: golden "
                                    f"{json.dumps(golden_fields[name])} != ours {json.dumps(ours)}")
        text_row = (updated if record["op"] == "u" else texts)[table][record["id"]]
        for name in emitted:
            if (table, name) in MASKED:
                continue
            text = text_row[name]
            if record["op"] == "u" and name.startswith(UNCHANGED_PREFIX):
                text = UNCHANGED_TOAST
            value = converters[record["phase"]][name](text)
            ours = _wire(schemas[name], value)
            expected = record["after"][name]
            if isinstance(expected, list):
                expected = [None if isinstance(v, str) and v.startswith(JAVA_IDENTITY) else v for v in expected]
            if ours != expected:
                problems.append(f"{record['phase']} {table}.{name} id={record['id']} text={str(text)[:60]!r}: "
                                f"golden {str(record['after'][name])[:120]} != ours {str(ours)[:120]}")
    return sorted(schema_problems) + problems




@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("modes_name", list(MODE_SETS))
def test_schema_and_values_match_debezium(modes_name: str, table: str, typed_db: Any) -> None:
    if table not in typed_db[0]:
        pytest.skip(f"{table}: this PostgreSQL lacks libxml/PostGIS (the embedded 18); covered on 15")
    problems = _check_table(modes_name, table, typed_db)
    assert not problems, f"{len(problems)} differences from Debezium ({modes_name}):\n" + "\n".join(problems[:60])


def test_golden_files_cover_every_mode_set_and_phase() -> None:
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for modes_name in MODE_SETS:
        for record in _golden(modes_name):
            seen[modes_name].add((record["table"], record["phase"]))
    for modes_name in MODE_SETS:
        for table in TABLES:
            assert (table, "snapshot") in seen[modes_name], (modes_name, table)
            assert (table, "streaming") in seen[modes_name], (modes_name, table)
    assert Path(DATA_DIR / "schema.sql").exists()


# ---- the same rows through a real pgoutput slot ----------------------------------------------

@pytest.fixture(scope="module", params=["pg15", "pg"], ids=["pg15", "pg18"])
def pgoutput_stream(request: pytest.FixtureRequest) -> Any:
    """Snapshot rows first, then a pgoutput slot, then the streaming rows (ids + 100) and the
    TOAST-preserving update, read back with pg_logical_slot_get_binary_changes and decoded with
    the connector's decoder. Yields (catalog columns, relation messages by table, decoded changes,
    SELECT texts of the same rows)."""
    from lakecdc.capture.postgres.decoder import InsertMessage, RelationMessage, UpdateMessage, decode_message

    server = request.getfixturevalue(request.param)
    dsn = server.create_database("pg_types_pgoutput")
    with psycopg.connect(dsn, autocommit=True) as conn:
        missing = _missing_tables(conn)
        conn.execute("SET lc_monetary = 'C'")

        def run(path: str, offset: int = 0) -> None:
            for stmt in sql_statements(DATA_DIR / path, offset):
                if _runs_here(stmt, missing):
                    conn.execute(stmt)

        run("schema.sql")
        run("rows.sql")
        tables_here = [t for t in TABLES if t not in missing]
        conn.execute(f"CREATE PUBLICATION types_pub FOR TABLE {', '.join(tables_here)}")
        conn.execute("SELECT pg_create_logical_replication_slot('types_slot', 'pgoutput')")
        run("rows.sql", STREAM_ID_OFFSET)
        conn.execute(SESSION)
        catalog = load_type_catalog(conn)
        columns = {t: load_table_columns(conn, catalog, "public", t) for t in tables_here}
        for oid in range(1, 100_000):
            if catalog.get(oid) is not None:
                conn.adapters.register_loader(oid, _OutputText)
        selected = {table: _read_texts(conn, table, cols) for table, cols in columns.items()}
        run("stream_after.sql")
        selected_after_update = {table: _read_texts(conn, table, cols) for table, cols in columns.items()}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SESSION)  # output functions run in this session, as in a walsender with these GUCs
        changes = [bytes(row[0]) for row in conn.execute(
            "SELECT data FROM pg_logical_slot_get_binary_changes('types_slot', NULL, NULL, "
            "'proto_version', '1', 'publication_names', 'types_pub')").fetchall()]
        conn.execute("SELECT pg_drop_replication_slot('types_slot')")
    relations: dict[int, RelationMessage] = {}
    decoded: list[tuple[str, str, list[Any]]] = []  # (table, op, values)
    for data in changes:
        message = decode_message(data)
        if isinstance(message, RelationMessage):
            relations[message.relation_id] = message
        elif isinstance(message, InsertMessage):
            decoded.append((relations[message.relation_id].name, "c", message.new))
        elif isinstance(message, UpdateMessage):
            decoded.append((relations[message.relation_id].name, "u", message.new))
    by_table = {r.name: r for r in relations.values()}
    yield catalog, columns, by_table, decoded, (selected, selected_after_update)
    with psycopg.connect(server.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE pg_types_pgoutput")


def test_pgoutput_text_is_what_the_tests_read_with_select(pgoutput_stream: Any) -> None:
    """The premise of the golden test: a streamed value's text equals the output function's text
    (what SELECT in text format and COPY give)."""
    _, columns, _, decoded, (selected, updated) = pgoutput_stream
    assert decoded, "pgoutput sent no changes"
    checked = 0
    for table, op, values in decoded:
        names = [c.name for c in columns[table]]
        row = dict(zip(names, values))
        expected = (updated if op == "u" else selected)[table][int(row["id"])]
        for name in names:
            if row[name] is UNCHANGED_TOAST:
                assert op == "u" and name.startswith(UNCHANGED_PREFIX), (table, name)
                continue
            assert row[name] == expected[name], (table, row["id"], name)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("modes_name", list(MODE_SETS))
def test_relation_messages_and_streamed_tuples_match_debezium(modes_name: str, pgoutput_stream: Any) -> None:
    """Build columns the way the connector does while streaming -- from the Relation message's type
    oid and typmod, plus NOT NULL/default from the catalog -- and convert the decoded tuples."""
    catalog, columns, relations, decoded, _ = pgoutput_stream
    modes = TypeModes.from_properties(MODE_SETS[modes_name])
    propagate = "column.propagate.source.type" in MODE_SETS[modes_name]
    golden = {(r["table"], r["op"], r["id"]): r for r in _golden(modes_name) if r["phase"] == "streaming"}
    problems: list[str] = []
    converters: dict[str, list[tuple[str, Any, Any]]] = {}
    for table, relation in relations.items():
        known = {c.name: c for c in columns[table]}
        built = [PgColumn.from_relation(catalog, rc.name, rc.type_oid, rc.typmod, not_null=known[rc.name].not_null,
                                        default_expr=known[rc.name].default_expr) for rc in relation.columns]
        emitted = []
        for col in built:
            schema = column_schema(col, modes, propagate_source_type=propagate)
            if schema is not None:
                emitted.append((col.name, schema, value_converter(col, modes)))
        converters[table] = emitted
        sample = next(r for r in golden.values() if r["table"] == table)
        ours = [json.loads(jackson_dumps(s.to_json(n))) for n, s, _ in emitted]
        if ours != sample["fields"]:
            problems.append(f"{table}: schema from the Relation message differs from Debezium's")
    for table, op, values in decoded:
        names = [rc.name for rc in relations[table].columns]
        row = dict(zip(names, values))
        record = golden[(table, op, int(row["id"]))]
        for name, schema, convert in converters[table]:
            if (table, name) in MASKED:
                continue
            ours = _wire(schema, convert(row[name]))
            expected = record["after"][name]
            if isinstance(expected, list):
                expected = [None if isinstance(v, str) and v.startswith(JAVA_IDENTITY) else v for v in expected]
            if ours != expected:
                problems.append(f"{table}.{name} id={row['id']}: golden {str(expected)[:100]} "
                                f"!= ours {str(ours)[:100]}")
    assert not problems, "\n".join(problems[:60])


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/St_Johns", "Pacific/Chatham", "Etc/GMT+12"])
def test_timestamptz_values_do_not_depend_on_the_session_time_zone(zone: str, pg: Any) -> None:
    """A walsender or COPY session may run in any TimeZone: the zoned values must come out the same
    as in UTC (the fast path only handles "+00"; every other offset takes the general parser)."""
    dsn = pg.create_database(f"tz_{zone.replace('/', '_').replace('+', 'p').lower()}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tz (id int, ts timestamptz, ts2 timestamptz(2), tt timetz, a timestamptz[])")
        conn.execute("""INSERT INTO tz VALUES
            (1, '2024-02-29 13:14:15.123456+05:30', '2024-02-29 13:14:15.12-08', '13:14:15.5+05:30',
             '{"2024-01-01 01:02:03.5+02",NULL}'),
            (2, '0044-03-15 12:00:00+00 BC', '1900-06-01 00:00:00+01:30', '23:59:59.99-15:59', '{infinity}'),
            (3, '10000-06-15 00:00:00+00', '1677-09-21 00:12:43.15+00', '00:00:00+00', '{}'),
            (4, 'infinity', '-infinity', '12:00:00-03', NULL)""")
        catalog = load_type_catalog(conn)
        columns = load_table_columns(conn, catalog, "public", "tz")
        for oid in range(1, 100_000):
            if catalog.get(oid) is not None:
                conn.adapters.register_loader(oid, _OutputText)
        converters = [value_converter(c, TypeModes()) for c in columns]

        def converted(time_zone: str) -> list[list[Any]]:
            conn.execute(f"SET TimeZone = '{time_zone}'")
            conn.execute("SET DateStyle = ISO")
            rows = conn.execute("SELECT * FROM tz ORDER BY id").fetchall()
            return [[convert(v) for convert, v in zip(converters, row)] for row in rows]

        utc = converted("UTC")
        elsewhere = converted(zone)
    assert elsewhere == utc
    assert utc[0][1] == "2024-02-29T07:44:15.123456Z"
    assert utc[1][1] == "-0043-03-15T12:00:00.000000Z"


def test_catalog_errors_name_what_is_missing(pg: Any) -> None:
    dsn = pg.create_database("pg_types_errors")
    with psycopg.connect(dsn, autocommit=True) as conn:
        catalog = load_type_catalog(conn)
        assert catalog.get(23) is not None and catalog[23].name == "int4"
        with pytest.raises(KeyError, match="type oid 4242424"):
            catalog[4242424]
        with pytest.raises(LookupError, match="public.no_such_table"):
            load_table_columns(conn, catalog, "public", "no_such_table")
        # a type created after the catalog was read is picked up by load_table_columns
        conn.execute("CREATE TYPE late AS ENUM ('x', 'y')")
        conn.execute("CREATE TABLE late_t (v late NOT NULL DEFAULT 'y')")
        (column,) = load_table_columns(conn, catalog, "public", "late_t")
        schema = column_schema(column, TypeModes())
        assert schema is not None
        assert schema.to_json() == {"type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
                                    "parameters": {"allowed": "x,y"}, "default": "y"}
