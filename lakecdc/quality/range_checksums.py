"""Checksums of key ranges computed inside each side: the SQL each database and lake engine runs.

A row's hash is md5 over its columns' canonical texts (``lakecdc.quality.canonical``: null as U+2205,
fields joined by U+001F), the same text in every dialect. A range's checksum is the row count and
the sum of each hash's first 15 hex digits as an integer (60 bits; summed as a decimal, so no
overflow): an order-free digest both sides compute without sending a row.

Key ranges are ranges of key *tuples*: ``[lo, hi)`` with ``None`` for an open end, compared column
by column (``k1 > a OR (k1 = a AND k2 >= b)``), so composite keys and integer, decimal, text (uuid)
and date keys all split the same way. Bounds travel as the keys' canonical texts and become each
dialect's literals (``literal``). Text keys compare in code point order on every side (PostgreSQL
``COLLATE "C"``, MySQL as binary, SQL Server ``Latin1_General_100_BIN2``, Oracle's default binary
``NLS_COMP``; Spark and DataFusion compare UTF-8 bytes), or a row could fall in a range on one side
and not the other. SQL Server's BIN2 orders UTF-16 code units: supplementary characters sort before
U+E000..U+FFFF there, after them elsewhere -- keys mixing both can be reported as missing.

Queries (each starts with a ``/* lakecdc reconcile {...} */`` comment holding its parameters, so a
DBA sees whose query it is, and a recorded source can answer it):

- ``count_sql`` / ``bounds_sql``: rows of a range; min and max of a single integer key;
- ``split_sql``: every ``step``-th key of a range in key order, the split points of a non-integer key;
- ``bucket_sql``: per bucket between split points, ``b``, row count ``n`` and hash sum ``s``;
- ``rows_sql``: the key texts and row hash of every row of a (small) range.

Dialects: ``postgres``, ``mysql`` (MySQL and MariaDB), ``sqlserver``, ``oracle`` for the source;
``spark`` and ``datafusion`` for the lake. What a dialect cannot render raises ``Unsupported``
(nested values in SQL Server and Oracle: neither has array, struct or map values, and lakecdc's
capture of them emits none; in MySQL every nested value but Debezium's geometry structs).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakecdc.quality.canonical import (
    NAN_BITS,
    NULL_TEXT,
    datafusion_text,
    is_binary,
    is_nested,
    is_text,
    udf_name,
)
from lakecdc.quality.mysql_text import double_bits, geometry_fields

if TYPE_CHECKING:
    import pyarrow as pa

HEX = "0123456789abcdef"
Column = tuple[str, "pa.DataType"]
Bound = tuple[str, ...] | None  # canonical key texts; None: open


class Unsupported(ValueError):
    """A dialect has no rendering for a column type."""


@dataclass(frozen=True)
class Dialect:
    name: str
    quote_char: tuple[str, str]
    sep: str  # chr(31) in the dialect
    null: str  # the null marker literal

    def quote(self, name: str) -> str:
        left, right = self.quote_char
        return ".".join(f"{left}{part.replace(right, right * 2)}{right}" for part in name.split("."))

    # -- canonical texts ----------------------------------------------------------------------
    def text(self, c: str, type_: pa.DataType, depth: int = 0) -> str:
        """SQL for the canonical text of expression ``c`` of arrow type ``type_`` (null stays null)."""
        import pyarrow as pa

        n = self.name
        if is_nested(type_):
            return self._nested(c, type_, depth)
        if pa.types.is_floating(type_):
            return self._float(c)
        if is_binary(type_):
            return {"postgres": f"encode({c}, 'hex')", "mysql": f"LOWER(HEX({c}))",
                    "sqlserver": f"LOWER(CONVERT(VARCHAR(MAX), {c}, 2))", "oracle": f"LOWER(RAWTOHEX({c}))",
                    "spark": f"lower(hex({c}))", "datafusion": f"encode({c}, 'hex')"}[n]
        if pa.types.is_boolean(type_):
            true = f"{c} = 1" if n in ("sqlserver", "oracle") else c
            return f"CASE WHEN {c} IS NULL THEN NULL WHEN {true} THEN 'true' ELSE 'false' END"
        if pa.types.is_timestamp(type_):
            return {"postgres": f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')",
                    "mysql": f"DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')",
                    "sqlserver": f"FORMAT({c}, 'yyyy-MM-dd HH:mm:ss.ffffff')",
                    "oracle": f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS.FF6')",
                    "spark": f"date_format({c}, 'yyyy-MM-dd HH:mm:ss.SSSSSS')",
                    "datafusion": f"to_char({c}, '%Y-%m-%d %H:%M:%S.%6f')"}[n]
        if n == "oracle" and pa.types.is_date(type_):
            return f"TO_CHAR({c}, 'YYYY-MM-DD')"  # a bare TO_CHAR follows NLS_DATE_FORMAT
        if n == "oracle" and pa.types.is_decimal(type_):
            # a bare TO_CHAR drops trailing zeros and the 0 before the point (.5): a fixed format
            fmt = "FM" + "9" * (37 - type_.scale) + "0" + ("." + "0" * type_.scale if type_.scale else "")
            return f"TO_CHAR({c}, '{fmt}')"
        return {"postgres": f"{c}::text", "mysql": f"CAST({c} AS CHAR)",
                "sqlserver": f"CAST({c} AS NVARCHAR(MAX))", "oracle": f"TO_CHAR({c})",
                "spark": f"cast({c} AS string)", "datafusion": f"cast({c} AS varchar)"}[n]

    def _float(self, c: str) -> str:
        n = self.name
        if n == "postgres":  # float8send sends a NaN's sign and payload as stored: one NaN text for all
            return (f"CASE WHEN ({c})::float8 = 'NaN'::float8 THEN '{NAN_BITS}' "
                    f"ELSE encode(float8send(({c})::float8), 'hex') END")
        if n == "sqlserver":
            return f"LOWER(CONVERT(VARCHAR(16), CAST(CAST({c} AS FLOAT) AS BINARY(8)), 2))"
        if n == "oracle":
            return (f"CASE WHEN TO_BINARY_DOUBLE({c}) IS NAN THEN '{NAN_BITS}' ELSE "
                    f"LOWER(RAWTOHEX(UTL_RAW.CAST_FROM_BINARY_DOUBLE(TO_BINARY_DOUBLE({c})))) END")
        if n == "spark":  # Double.doubleToLongBits: the bits, NaN made canonical (reflect refuses a null)
            bits = f"reflect('java.lang.Double', 'doubleToLongBits', cast({c} AS double))"
            return f"CASE WHEN {c} IS NULL THEN NULL ELSE lpad(lower(hex(cast({bits} AS bigint))), 16, '0') END"
        if n == "datafusion":
            import pyarrow as pa

            return f"{udf_name(pa.float64())}(cast({c} AS double))"
        return double_bits(c)  # MySQL: computed (lakecdc.quality.mysql_text)

    def _element(self, c: str, type_: pa.DataType, depth: int) -> str:
        """A nested element: ``<length>:<text>``, or ``∅`` for a null (PostgreSQL and Spark)."""
        t = self.text(c, type_, depth + 1)
        if self.name == "postgres":
            return f"CASE WHEN {self._is_null(c, type_)} THEN '{NULL_TEXT}' ELSE length({t}) || ':' || {t} END"
        if self.name == "mysql":  # LENGTH counts bytes there
            return f"CASE WHEN {c} IS NULL THEN {self.null} ELSE CONCAT(CHAR_LENGTH({t}), ':', {t}) END"
        return f"CASE WHEN {c} IS NULL THEN '{NULL_TEXT}' ELSE concat(cast(length({t}) AS string), ':', {t}) END"

    def _is_null(self, c: str, type_: pa.DataType) -> str:
        import pyarrow as pa

        # PostgreSQL: a composite whose fields are all null IS NULL; num_nulls sees the value itself
        return f"num_nulls({c}) = 1" if self.name == "postgres" and pa.types.is_struct(type_) else f"{c} IS NULL"

    def _nested(self, c: str, type_: pa.DataType, depth: int) -> str:
        import pyarrow as pa

        n = self.name
        if n == "datafusion":
            return datafusion_text(c, type_)
        if n == "mysql":
            fields = geometry_fields(c, tuple(f.name for f in type_)) if pa.types.is_struct(type_) else None
            if fields is None:
                raise Unsupported("mysql's nested values are Debezium's geometry structs {x, y, wkb, srid} and "
                                  f"{{wkb, srid}}, not {type_}")
            texts = ", ".join(self._element(f, t.type, depth) for f, t in zip(fields, type_))
            return f"CASE WHEN {c} IS NULL THEN NULL ELSE CONCAT('{{', CONCAT_WS(',', {texts}), '}}') END"
        if n not in ("postgres", "spark"):  # sqlserver, oracle
            raise Unsupported(f"{n} has no array, struct or map values, and Debezium's mapping of it emits none: "
                              "a nested silver column was made by a transform, with no source value to compare")
        v = f"v{depth}"
        if pa.types.is_struct(type_):
            fields = [self._element(f"({c}).{self.quote(f.name)}" if n == "postgres" else f"{c}.{self.quote(f.name)}",
                                    f.type, depth) for f in type_]
            inner = f"'{{' || concat_ws(',', {', '.join(fields)}) || '}}'" if n == "postgres" else \
                f"concat('{{', concat_ws(',', {', '.join(fields)}), '}}')"
        elif n == "spark" and pa.types.is_map(type_):
            entry = f"concat({self._element(f'{v}.key', type_.key_type, depth)}, '=', " \
                    f"{self._element(f'{v}.value', type_.item_type, depth)})"
            inner = f"concat('{{', array_join(transform(array_sort(map_entries({c})), {v} -> {entry}), ','), '}}')"
        elif n == "spark":
            element = self._element(v, type_.value_type, depth)
            inner = f"concat('[', array_join(transform({c}, {v} -> {element}), ','), ']')"
        elif pa.types.is_map(type_):  # PostgreSQL: hstore
            if not (is_text(type_.key_type) and is_text(type_.item_type)):
                raise Unsupported("postgres maps are hstore: text keys and values")
            entry = f"{self._element(f'{v}.key', type_.key_type, depth)} || '=' || " \
                    f"{self._element(f'{v}.value', type_.item_type, depth)}"
            inner = (f"(SELECT '{{' || COALESCE(string_agg({entry}, ',' ORDER BY {v}.key COLLATE \"C\"), '') || '}}' "
                     f"FROM each({c}) AS {v})")
        else:  # PostgreSQL arrays, in element order
            element = self._element(f"{v}.e", type_.value_type, depth)
            inner = (f"(SELECT '[' || COALESCE(string_agg({element}, ',' ORDER BY {v}.o), '') || ']' "
                     f"FROM unnest({c}) WITH ORDINALITY AS {v}(e, o))")
        return f"CASE WHEN {self._is_null(c, type_)} THEN NULL ELSE {inner} END"

    def row_hash(self, columns: list[Column]) -> str:
        texts = [f"COALESCE({self.text(self.quote(c), t)}, {self.null})" for c, t in columns]
        if self.name == "postgres":
            return f"md5({f' || {self.sep} || '.join(texts)})"
        if self.name == "oracle":
            return f"LOWER(RAWTOHEX(STANDARD_HASH({f' || {self.sep} || '.join(texts)}, 'MD5')))"
        if self.name == "sqlserver":
            joined = f"CONCAT_WS({self.sep}, {', '.join(texts)})"
            # the collation of the NVARCHAR being cast picks VARCHAR's code page: UTF-8 bytes here (a
            # COLLATE after the CAST would convert through the database's code page first)
            return (f"LOWER(CONVERT(VARCHAR(32), HASHBYTES('MD5', CAST({joined} COLLATE "
                    "Latin1_General_100_CI_AS_SC_UTF8 AS VARCHAR(MAX))), 2))")
        return f"md5(concat_ws({self.sep}, {', '.join(texts)}))"

    def hash_number(self, h: str) -> str:
        """The first 15 hex digits of ``h`` as an exact number."""
        digits = f"substr({h}, 1, 15)"
        if self.name == "postgres":
            return f"(('x' || {digits})::bit(60)::bigint)::numeric"
        if self.name == "mysql":
            return f"CAST(CONV(SUBSTRING({h}, 1, 15), 16, 10) AS DECIMAL(20, 0))"
        if self.name == "sqlserver":
            return f"CAST(CONVERT(BIGINT, CONVERT(VARBINARY(8), '0' + SUBSTRING({h}, 1, 15), 2)) AS DECIMAL(38, 0))"
        if self.name == "oracle":
            return f"TO_NUMBER(SUBSTR({h}, 1, 15), 'XXXXXXXXXXXXXXX')"
        if self.name == "spark":
            return f"cast(conv({digits}, 16, 10) AS decimal(38, 0))"
        # DataFusion has no base conversion: the digits' values, place by place
        places = [f"(strpos('{HEX}', substr({h}, {i + 1}, 1)) - 1) * {16 ** (14 - i)}" for i in range(15)]
        return f"cast(({' + '.join(places)}) AS decimal(38, 0))"

    # -- keys -----------------------------------------------------------------------------------
    def key(self, column: str, type_: pa.DataType) -> str:
        """The key column as ranges compare it: text in code point order (see the module doc)."""

        c = self.quote(column)
        if not is_text(type_):
            return c
        return {"postgres": f"({c})::text COLLATE \"C\"", "mysql": f"CAST({c} AS BINARY)",
                "sqlserver": f"CAST({c} AS NVARCHAR(4000)) COLLATE Latin1_General_100_BIN2"}.get(self.name, c)

    def literal(self, text: str, type_: pa.DataType) -> str:
        """A key value given by its canonical text, as this dialect's literal of ``type_``."""
        import pyarrow as pa

        if pa.types.is_integer(type_):
            return str(int(text))
        if pa.types.is_decimal(type_):
            return f"CAST('{decimal.Decimal(text)}' AS DECIMAL({type_.precision}, {type_.scale}))"
        if pa.types.is_date(type_):
            day = dt.date.fromisoformat(text).isoformat()
            return f"CAST('{day}' AS DATE)" if self.name == "sqlserver" else f"DATE '{day}'"
        if not is_text(type_):
            raise Unsupported(f"reconciliation keys are integers, decimals, text (uuid) and dates, not {type_}")
        if self.name in ("spark", "mysql"):  # both read backslash escapes in literals
            quoted = "'" + text.replace("\\", "\\\\").replace("'", "\\'" if self.name == "spark" else "''") + "'"
        else:
            quoted = "'" + text.replace("'", "''") + "'"
        return {"mysql": f"CAST({quoted} AS BINARY)", "sqlserver": f"N{quoted} COLLATE Latin1_General_100_BIN2"
                }.get(self.name, quoted)

    def mod(self, a: str, b: str) -> str:
        return f"MOD({a}, {b})" if self.name == "oracle" else f"({a}) % ({b})"


DIALECTS = {
    "postgres": Dialect("postgres", ('"', '"'), "chr(31)", f"'{NULL_TEXT}'"),
    "mysql": Dialect("mysql", ("`", "`"), "CHAR(31 USING utf8mb4)", f"_utf8mb4'{NULL_TEXT}'"),
    "sqlserver": Dialect("sqlserver", ("[", "]"), "CHAR(31)", f"N'{NULL_TEXT}'"),
    "oracle": Dialect("oracle", ('"', '"'), "CHR(31)", "UNISTR('\\2205')"),
    "spark": Dialect("spark", ("`", "`"), "chr(31)", f"'{NULL_TEXT}'"),
    "datafusion": Dialect("datafusion", ('"', '"'), "chr(31)", f"'{NULL_TEXT}'"),
}


def header(query: str, **params: Any) -> str:
    """``/* lakecdc reconcile {...} */``: the query's parameters (``*/`` cannot occur inside: JSON escapes ``/``;
    ``?`` and ``'`` are escaped too: a driver that does not parse comments, as ODBC's may not, would read
    a ``?`` as a parameter marker (pyodbc's paramstyle is qmark) and a quote as the start of a literal)."""
    text = json.dumps({"query": query, **params}, ensure_ascii=True, sort_keys=True).replace("/", "\\/") \
        .replace("?", "\\u003f").replace("'", "\\u0027")
    return f"/* lakecdc reconcile {text} */ "


def _compare(d: Dialect, keys: list[Column], bound: tuple[str, ...], last: str) -> str:
    """Tuple comparison ``keys <last-op> bound`` spelled column by column (every dialect has it)."""
    strict = ">" if last == ">=" else "<"
    out = ""
    for i in reversed(range(len(keys))):
        k, lit = d.key(*keys[i]), d.literal(bound[i], keys[i][1])
        out = f"{k} {last} {lit}" if not out else f"({k} {strict} {lit} OR ({k} = {lit} AND {out}))"
    return out


def where(d: Dialect, keys: list[Column], lo: Bound, hi: Bound) -> str:
    parts = ([_compare(d, keys, lo, ">=")] if lo is not None else []) + \
        ([_compare(d, keys, hi, "<")] if hi is not None else [])
    return " AND ".join(parts) or "1 = 1"


def count_sql(d: Dialect, source: str, keys: list[Column], lo: Bound, hi: Bound) -> str:
    return header("count", lo=lo, hi=hi) + f"SELECT COUNT(*) AS n FROM {source} WHERE {where(d, keys, lo, hi)}"


def bounds_sql(d: Dialect, source: str, key: str) -> str:
    k = d.quote(key)
    return header("bounds") + f"SELECT MIN({k}) AS lo, MAX({k}) AS hi, COUNT(*) AS n FROM {source}"


def split_sql(d: Dialect, source: str, keys: list[Column], lo: Bound, hi: Bound, step: int) -> str:
    """The key texts of rows step+1, 2*step+1, ... of ``[lo, hi)`` in key order: where buckets start."""
    texts = ", ".join(f"{d.text(d.quote(k), t)} AS k{i}" for i, (k, t) in enumerate(keys))
    order = ", ".join(d.key(k, t) for k, t in keys)
    inner = (f"SELECT {texts}, ROW_NUMBER() OVER (ORDER BY {order}) AS rn FROM {source} "
             f"WHERE {where(d, keys, lo, hi)}")
    names = ", ".join(f"k{i}" for i in range(len(keys)))
    return header("split", lo=lo, hi=hi, step=step) + \
        f"SELECT {names} FROM ({inner}) x WHERE rn > 1 AND {d.mod('rn - 1', str(step))} = 0 ORDER BY rn"


def bucket_sql(d: Dialect, source: str, keys: list[Column], columns: list[Column], lo: Bound, hi: Bound,
               splits: list[tuple[str, ...]]) -> str:
    """Per bucket of ``[lo, hi)`` cut at ``splits``: ``b`` (0 below the first split), count ``n``, hash sum ``s``."""
    cases = " ".join(f"WHEN {_compare(d, keys, s, '<')} THEN {i}" for i, s in enumerate(splits))
    bucket = f"CASE {cases} ELSE {len(splits)} END" if splits else "0"
    inner = (f"SELECT {bucket} AS b, {d.hash_number(d.row_hash(columns))} AS v FROM {source} "
             f"WHERE {where(d, keys, lo, hi)}")
    return header("buckets", lo=lo, hi=hi, splits=splits) + \
        f"SELECT b, COUNT(*) AS n, SUM(v) AS s FROM ({inner}) x GROUP BY b"


def rows_sql(d: Dialect, source: str, keys: list[Column], columns: list[Column], lo: Bound, hi: Bound) -> str:
    """The key texts and row hash of every row in ``[lo, hi)`` (a leaf range: few rows)."""
    texts = ", ".join(f"{d.text(d.quote(k), t)} AS k{i}" for i, (k, t) in enumerate(keys))
    return header("rows", lo=lo, hi=hi) + \
        f"SELECT {texts}, {d.row_hash(columns)} AS h FROM {source} WHERE {where(d, keys, lo, hi)}"
