"""Checksums of key ranges computed inside each side: the SQL each database and lake engine runs.

A row's hash is md5 over its columns' normal texts (null as U+2205, fields joined by U+001F), the
same text in every dialect (integers and decimals as the database prints them, booleans as
``true``/``false``, timestamps as ``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC). A range's checksum is the
row count and the sum of each hash's first 15 hex digits as an integer (60 bits; summed as a
decimal, so no overflow): an order-free digest both sides compute without sending a row. One query
per side per bisection level returns one (count, sum) per bucket of the range (``bucket_sql``).

Dialects: ``postgres``, ``mysql`` (MySQL and MariaDB), ``sqlserver``, ``oracle`` for the source;
``spark`` and ``datafusion`` for the lake (their quoting and functions come from ``lakecdc.quality.engine``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["int", "decimal", "text", "bool", "timestamp", "date"]
NULL_TEXT = "\u2205"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Dialect:
    name: str
    quote_char: tuple[str, str]
    sep: str  # chr(31) in the dialect
    null: str  # the null marker literal

    def quote(self, name: str) -> str:
        left, right = self.quote_char
        return ".".join(f"{left}{part.replace(right, right * 2)}{right}" for part in name.split("."))

    def text(self, column: str, kind: Kind) -> str:
        c = self.quote(column) if not column.startswith("(") else column
        n = self.name
        if kind == "bool":
            true = f"{c} = 1" if n in ("sqlserver", "oracle") else c
            return f"CASE WHEN {c} IS NULL THEN NULL WHEN {true} THEN 'true' ELSE 'false' END"
        if kind == "timestamp":
            return {"postgres": f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')",
                    "mysql": f"DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')",
                    "sqlserver": f"FORMAT({c}, 'yyyy-MM-dd HH:mm:ss.ffffff')",
                    "oracle": f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS.FF6')",
                    "spark": f"date_format({c}, 'yyyy-MM-dd HH:mm:ss.SSSSSS')",
                    "datafusion": f"to_char({c}, '%Y-%m-%d %H:%M:%S.%6f')"}[n]
        return {"postgres": f"{c}::text", "mysql": f"CAST({c} AS CHAR)",
                "sqlserver": f"CAST({c} AS NVARCHAR(MAX))", "oracle": f"TO_CHAR({c})",
                "spark": f"cast({c} AS string)", "datafusion": f"cast({c} AS varchar)"}[n]

    def row_hash(self, columns: list[tuple[str, Kind]]) -> str:
        texts = [f"COALESCE({self.text(c, k)}, {self.null})" for c, k in columns]
        if self.name == "postgres":
            return f"md5({f' || {self.sep} || '.join(texts)})"
        if self.name == "oracle":
            return f"LOWER(RAWTOHEX(STANDARD_HASH({f' || {self.sep} || '.join(texts)}, 'MD5')))"
        if self.name == "sqlserver":
            joined = f"CONCAT_WS({self.sep}, {', '.join(texts)})"
            return (f"LOWER(CONVERT(VARCHAR(32), HASHBYTES('MD5', CAST({joined} AS VARCHAR(MAX)) "
                    "COLLATE Latin1_General_100_CI_AS_SC_UTF8), 2))")
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

    def int_div(self, a: str, b: str) -> str:
        return {"mysql": f"({a}) DIV ({b})", "oracle": f"FLOOR(({a}) / ({b}))",
                "spark": f"({a}) div ({b})"}.get(self.name, f"(({a}) / ({b}))")


DIALECTS = {
    "postgres": Dialect("postgres", ('"', '"'), "chr(31)", f"'{NULL_TEXT}'"),
    "mysql": Dialect("mysql", ("`", "`"), "CHAR(31 USING utf8mb4)", f"_utf8mb4'{NULL_TEXT}'"),
    "sqlserver": Dialect("sqlserver", ("[", "]"), "CHAR(31)", f"N'{NULL_TEXT}'"),
    "oracle": Dialect("oracle", ('"', '"'), "CHR(31)", f"UNISTR('\\2205')"),
    "spark": Dialect("spark", ("`", "`"), "chr(31)", f"'{NULL_TEXT}'"),
    "datafusion": Dialect("datafusion", ('"', '"'), "chr(31)", f"'{NULL_TEXT}'"),
}


def bucket_sql(dialect: Dialect, source: str, key: str, columns: list[tuple[str, Kind]], lo: int, hi: int,
               buckets: int) -> str:
    """Per bucket of ``[lo, hi)`` (``buckets`` equal parts): ``b``, row count ``n``, hash sum ``s``."""
    k = dialect.quote(key)
    width = -(-(hi - lo) // buckets)  # ceil: every key of the range falls in a bucket below ``buckets``
    h = dialect.row_hash(columns)
    bucket = dialect.int_div(f"{k} - {lo}", str(width))
    inner = f"SELECT {bucket} AS b, {dialect.hash_number(h)} AS v FROM {source} WHERE {k} >= {lo} AND {k} < {hi}"
    return f"SELECT b, COUNT(*) AS n, SUM(v) AS s FROM ({inner}) x GROUP BY b"


def rows_sql(dialect: Dialect, source: str, key: str, columns: list[tuple[str, Kind]], lo: int, hi: int) -> str:
    """The key and row hash of every row in ``[lo, hi)`` (a leaf range: few rows)."""
    k = dialect.quote(key)
    return f"SELECT {k} AS k, {dialect.row_hash(columns)} AS h FROM {source} WHERE {k} >= {lo} AND {k} < {hi}"


def bounds_sql(dialect: Dialect, source: str, key: str) -> str:
    k = dialect.quote(key)
    return f"SELECT MIN({k}) AS lo, MAX({k}) AS hi, COUNT(*) AS n FROM {source}"
