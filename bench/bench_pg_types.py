"""Throughput of the PostgreSQL value converters (text -> Debezium payload value), per type and for
two row shapes. The converters are built once per column, as the connector does per relation.

    .venv/bin/python bench/bench_pg_types.py [--rows 50000]

Prints values/s per type and for a typical OLTP row and an every-type row. Target: > 150k values/s
overall on the typical row (the capture hot path converts every column of every event).
"""

from __future__ import annotations

import argparse
import time

from lakecdc.capture.postgres.types import PgColumn, PgType, TypeCatalog, TypeModes, value_converter

# (type name, typmod, sample text as pgoutput sends it); typmods: numeric(12,2), timestamptz(6)
SAMPLES: list[tuple[str, int, str]] = [
    ("int4", -1, "42"),
    ("int8", -1, "9007199254740993"),
    ("text", -1, "alice@example.com"),
    ("bool", -1, "t"),
    ("numeric", (12 << 16 | 2) + 4, "100.50"),
    ("numeric", -1, "12345.678900"),
    ("float8", -1, "3.14159"),
    ("float4", -1, "2.5"),
    ("timestamptz", -1, "2024-01-02 03:04:05.123456+00"),
    ("timestamp", -1, "2024-01-01 00:00:00.5"),
    ("date", -1, "2024-01-01"),
    ("time", -1, "13:14:15.123456"),
    ("uuid", -1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("jsonb", -1, '{"tier": "gold", "n": 1}'),
    ("bytea", -1, "\\x0102ff"),
    ("interval", -1, "1 day 02:03:04"),
    ("_text", -1, '{a,b,"c d"}'),
    ("_int4", -1, "{1,2,3}"),
]
TYPICAL = ["int4", "text", "text", "numeric", "timestamptz", "bool", "jsonb", "int8"]


def build() -> list[tuple[str, object, str]]:
    names = sorted({name for name, _, _ in SAMPLES} | {"int4", "text"})
    oids = {name: 1000 + i for i, name in enumerate(names)}
    types = {oid: PgType(oid, name, "pg_catalog", "b") for name, oid in oids.items()}
    for name, oid in oids.items():
        if name.startswith("_"):
            types[oid] = PgType(oid, name, "pg_catalog", "b", element_oid=oids[name[1:]], category="A")
    catalog = TypeCatalog(types)
    modes = TypeModes()
    out = []
    for name, typmod, text in SAMPLES:
        column = PgColumn.from_relation(catalog, name, oids[name], typmod)
        out.append((name, value_converter(column, modes), text))
    return out


def rate(pairs: list[tuple[object, str]], rows: int) -> float:
    started = time.perf_counter()
    for _ in range(rows):
        for convert, text in pairs:
            convert(text)  # type: ignore[operator]
    return rows * len(pairs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    args = parser.parse_args()
    converters = build()
    for name, convert, text in converters:
        print(f"{name:12s} {rate([(convert, text)], args.rows):>12,.0f} values/s   {text!r}")
    by_name = {name: (convert, text) for name, convert, text in converters}
    typical = [by_name[name] for name in TYPICAL]
    every = [(convert, text) for _, convert, text in converters]
    print(f"typical row ({len(typical)} columns): {rate(typical, args.rows):,.0f} values/s")
    print(f"every-type row ({len(every)} columns): {rate(every, args.rows):,.0f} values/s")


if __name__ == "__main__":
    main()
