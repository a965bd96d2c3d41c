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
TABLES = ["t_num", "t_text", "t_time", "t_misc", "t_array", "t_default", "t_toast", "t_xml"]
TOASTED_TABLE = "t_toast"  # every big_* column arrives as unchanged TOAST in the streamed update
XML_TABLE = "t_xml"


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
        has_xml = _server_has_xml(conn)
        conn.execute("SET lc_monetary = 'C'")
        for path, offset in (("schema.sql", 0), ("rows.sql", 0), ("rows.sql", STREAM_ID_OFFSET)):
            for stmt in sql_statements(DATA_DIR / path, offset):
                if has_xml or XML_TABLE not in stmt:
                    conn.execute(stmt)
        conn.execute(SESSION)
        tables_here = [t for t in TABLES if has_xml or t != XML_TABLE]
        catalog = load_type_catalog(conn)
        tables = {t: load_table_columns(conn, catalog, "public", t) for t in tables_here}
        for oid in range(1, 100_000):  # every value as the type's output function prints it
            if catalog.get(oid) is not None:
                conn.adapters.register_loader(oid, _OutputText)
        texts = {table: _read_texts(conn, table, columns) for table, columns in tables.items()}
        for stmt in sql_statements(DATA_DIR / "stream_after.sql"):
            conn.execute(stmt)
        updated = _read_texts(conn, TOASTED_TABLE, tables[TOASTED_TABLE])
    yield tables, texts, updated
    with psycopg.connect(server.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE pg_types_golden")


def _server_has_xml(conn: Any) -> bool:
    try:
        conn.execute("SELECT '<a/>'::xml")
        return True
    except psycopg.errors.FeatureNotSupported:
        return False


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
    schemas = {c.name: column_schema(c, modes) for c in columns}
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
            ours = json.loads(jackson_dumps(schemas[name].to_json(name)))  # type: ignore[union-attr]
            if ours != golden_fields[name]:
                schema_problems.add(f"{table}.{name} schema: golden {json.dumps(golden_fields[name])} "
                                    f"!= ours {json.dumps(ours)}")
        text_row = (updated if record["op"] == "u" else texts[table])[record["id"]]
        for name in emitted:
            if (table, name) in MASKED:
                continue
            text = text_row[name]
            if table == TOASTED_TABLE and record["op"] == "u" and name.startswith("big_"):
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
        pytest.skip(f"{table}: this PostgreSQL build has no libxml (the embedded 18); covered on 15")
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
