"""SQL Server and Oracle sources for reconciliation, answered by an evaluator over the table's rows
behind the drivers' DB-API shapes (neither database runs here).

How the answers are made -- recorded, not returned by a server: each statement the reconciliation
sends starts with its ``/* lakecdc reconcile {...} */`` parameters. The evaluator renders the
statement again from them with ``lakecdc.quality.range_checksums`` and refuses any statement that is
not exactly that rendering. It then checks that every SQL fragment in it is one it knows the
documented result of (``FRAGMENTS``: T-SQL's ``CAST``/``CONVERT`` style 2/``FORMAT``/``HASHBYTES``,
Oracle's ``TO_CHAR`` with and without a format model, ``RAWTOHEX``, ``STANDARD_HASH``,
``UTL_RAW.CAST_FROM_BINARY_DOUBLE``; literals are decoded back and compared with the parameters)
and computes the answer from the rows with those documented results: Python implementations written
from the vendors' documentation, independent of how the lake computes its side. The rows are the
ones the test also writes to the lake, so a fragment whose documented result differs from the
canonical text (Oracle's bare ``TO_CHAR(0.5)`` is ``.5``) makes the reconciliation report false
differences and the test fail. What this cannot catch: a vendor documentation the evaluator reads
wrongly, or a server setting it assumes (SQL Server 2019+ for the ``_UTF8`` collation; Oracle's
default ``NLS_COMP=BINARY`` and an AL32UTF8 database character set).

Answer shapes: pymssql's (``sqlserver_replay``: tuples, 7-item descriptions, ``Decimal`` sums) and
python-oracledb's (``oracle_replay``: ``DB_TYPE_NUMBER``/``DB_TYPE_VARCHAR`` descriptions, NUMBER as
``int``, as python-oracledb returns an integral NUMBER).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import re
import struct
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

CAPTURE = Path(__file__).resolve().parents[2] / "unit" / "capture"
for sub in ("sqlserver", "oracle"):
    if str(CAPTURE / sub) not in sys.path:
        sys.path.insert(0, str(CAPTURE / sub))

import oracledb  # noqa: E402 (after the sys.path set-up above)
from oracle_replay import ReplayConnection as OracleReplay  # noqa: E402 (after the sys.path set-up above)
from oracle_replay import ReplayCursor as OracleCursor  # noqa: E402 (after the sys.path set-up above)
from oracle_replay import describe  # noqa: E402 (after the sys.path set-up above)
from sqlserver_replay import Recording, ResultSet  # noqa: E402 (after the sys.path set-up above)
from sqlserver_replay import ReplayConnection as SqlServerReplay  # noqa: E402 (after the sys.path set-up above)

from lakecdc.quality import range_checksums as rc  # noqa: E402 (after the sys.path set-up above)
from lakecdc.quality.canonical import NULL_TEXT, is_text  # noqa: E402 (after the sys.path set-up above)

HEADER = re.compile(r"/\* lakecdc reconcile (\{.*?\}) \*/ ", re.DOTALL)


class EvaluatorMismatch(AssertionError):
    """A statement or fragment the evaluator has no documented semantics for."""


def _fixed(value: decimal.Decimal, scale: int) -> str:
    text = f"{value:.{scale}f}"
    return text[1:] if text.startswith("-") and decimal.Decimal(text) == 0 else text


def _bits(value: float) -> str:
    return "7ff8000000000000" if math.isnan(value) else struct.pack(">d", value).hex()


def _oracle_decimal_format(scale: int) -> str:
    return "FM" + "9" * (37 - scale) + "0" + ("." + "0" * scale if scale else "")


# (dialect, fragment with {c} for the column) -> the documented text of a non-null value (None: NULL)
FRAGMENTS: dict[tuple[str, str], Any] = {
    # T-SQL CAST(int AS nvarchar): the digits; CAST(decimal(p,s) AS nvarchar): all s decimals, 0 before the point
    ("sqlserver", "CAST({c} AS NVARCHAR(MAX))"): lambda v, t: (
        _fixed(decimal.Decimal(v), t.scale) if pa.types.is_decimal(t)
        else v.isoformat() if isinstance(v, dt.date) else str(v)),  # CAST(date AS nvarchar): yyyy-MM-dd
    ("sqlserver", "CASE WHEN {c} IS NULL THEN NULL WHEN {c} = 1 THEN 'true' ELSE 'false' END"):
        lambda v, t: "true" if v else "false",
    ("sqlserver", "FORMAT({c}, 'yyyy-MM-dd HH:mm:ss.ffffff')"): lambda v, t: v.strftime("%Y-%m-%d %H:%M:%S.%f"),
    ("sqlserver", "LOWER(CONVERT(VARCHAR(MAX), {c}, 2))"): lambda v, t: bytes(v).hex(),  # style 2: hex, no 0x
    ("sqlserver", "LOWER(CONVERT(VARCHAR(16), CAST(CAST({c} AS FLOAT) AS BINARY(8)), 2))"):
        lambda v, t: _bits(v),  # float -> binary(8): the IEEE 754 bits, big-endian
    # Oracle TO_CHAR(number) without a format: shortest text, no 0 before the point (.5)
    ("oracle", "TO_CHAR({c})"): lambda v, t: (
        _oracle_bare_number(v) if isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool) else str(v)),
    ("oracle", "CASE WHEN {c} IS NULL THEN NULL WHEN {c} = 1 THEN 'true' ELSE 'false' END"):
        lambda v, t: "true" if v else "false",
    ("oracle", "TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS.FF6')"): lambda v, t: v.strftime("%Y-%m-%d %H:%M:%S.%f"),
    ("oracle", "TO_CHAR({c}, 'YYYY-MM-DD')"): lambda v, t: v.isoformat(),
    ("oracle", "LOWER(RAWTOHEX({c}))"): lambda v, t: bytes(v).hex() or None,  # an empty RAW is NULL
    ("oracle", ("CASE WHEN TO_BINARY_DOUBLE({c}) IS NAN THEN '7ff8000000000000' ELSE "
                "LOWER(RAWTOHEX(UTL_RAW.CAST_FROM_BINARY_DOUBLE(TO_BINARY_DOUBLE({c})))) END")): lambda v, t: _bits(v),
}
for _scale in range(11):  # TO_CHAR(n, 'FM99..0.00'): fill mode, a 0 before the point, exactly s decimals
    FRAGMENTS[("oracle", f"TO_CHAR({{c}}, '{_oracle_decimal_format(_scale)}')")] = \
        lambda v, t: _fixed(decimal.Decimal(v), t.scale)


def _oracle_bare_number(v: int | decimal.Decimal) -> str:
    text = format(decimal.Decimal(v).normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


ROW_HASH = {  # the hash wrappers, with {texts} joined as each dialect joins them
    "sqlserver": (("LOWER(CONVERT(VARCHAR(32), HASHBYTES('MD5', CAST(CONCAT_WS(CHAR(31), {texts}) COLLATE "
                   "Latin1_General_100_CI_AS_SC_UTF8 AS VARCHAR(MAX))), 2))"), ", "),
    "oracle": ("LOWER(RAWTOHEX(STANDARD_HASH({texts}, 'MD5')))", " || CHR(31) || "),
}


class Evaluator:
    """One source table (``rows`` as the database stores them) answering reconciliation statements."""

    def __init__(self, dialect: str, table: str, keys: list[tuple[str, pa.DataType]],
                 columns: list[tuple[str, pa.DataType]], rows: list[dict[str, Any]]) -> None:
        self.d, self.table, self.keys, self.columns = rc.DIALECTS[dialect], table, keys, columns
        # Oracle stores an empty VARCHAR2 as NULL
        self.rows = [{c: (None if dialect == "oracle" and v == "" else v) for c, v in r.items()} for r in rows]
        self.statements: list[str] = []
        self._check_fragments()

    # -- what the statement is -------------------------------------------------------------------
    def _check_fragments(self) -> None:
        for c, t in self.columns:
            fragment = self.d.text(self.d.quote(c), t).replace(self.d.quote(c), "{c}")
            if (self.d.name, fragment) not in FRAGMENTS:
                raise EvaluatorMismatch(f"{self.d.name}: no documented semantics for {fragment}")
        texts = [f"COALESCE({self.d.text(self.d.quote(c), t)}, {self.d.null})" for c, t in self.columns]
        template, joiner = ROW_HASH[self.d.name]
        if self.d.row_hash(self.columns) != template.format(texts=joiner.join(texts)):
            raise EvaluatorMismatch(f"{self.d.name}: unknown row hash {self.d.row_hash(self.columns)}")

    def _check_literal(self, text: str, type_: pa.DataType) -> None:
        lit = self.d.literal(text, type_)
        if pa.types.is_integer(type_):
            ok = lit == str(int(text))
        elif pa.types.is_decimal(type_):
            ok = lit == f"CAST('{decimal.Decimal(text)}' AS DECIMAL({type_.precision}, {type_.scale}))"
        elif pa.types.is_date(type_):
            ok = lit == (f"CAST('{text}' AS DATE)" if self.d.name == "sqlserver" else f"DATE '{text}'")
        else:
            m = re.fullmatch(r"N'((?:[^']|'')*)' COLLATE Latin1_General_100_BIN2" if self.d.name == "sqlserver"
                             else r"'((?:[^']|'')*)'", lit, re.DOTALL)
            ok = m is not None and m.group(1).replace("''", "'") == text
        if not ok:
            raise EvaluatorMismatch(f"{self.d.name}: literal {lit} does not read back as {text!r} ({type_})")

    def answer(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        self.statements.append(sql)
        m = HEADER.match(sql)
        if m is None:
            raise EvaluatorMismatch(f"not a reconciliation statement: {sql[:200]}")
        p = json.loads(m.group(1))
        q, lo, hi = p["query"], _bound(p.get("lo")), _bound(p.get("hi"))
        source = self.d.quote(self.table)
        expected = {
            "count": lambda: rc.count_sql(self.d, source, self.keys, lo, hi),
            "bounds": lambda: rc.bounds_sql(self.d, source, self.keys[0][0]),
            "split": lambda: rc.split_sql(self.d, source, self.keys, lo, hi, p.get("step", 0)),
            "buckets": lambda: rc.bucket_sql(self.d, source, self.keys, self.columns, lo, hi,
                                             [tuple(s) for s in p.get("splits", [])]),
            "rows": lambda: rc.rows_sql(self.d, source, self.keys, self.columns, lo, hi),
        }[q]()
        if sql != expected:
            raise EvaluatorMismatch(f"statement differs from the rendering of its parameters:\n{sql}\n{expected}")
        for bound in [lo, hi, *[tuple(s) for s in p.get("splits", [])]]:
            for text, (_, t) in zip(bound or (), self.keys):
                self._check_literal(text, t)
        in_range = sorted((r for r in self.rows if self._inside(r, lo, hi)), key=self._order)
        if q == "count":
            return ["n"], [(len(in_range),)]
        if q == "bounds":
            k = [r[self.keys[0][0]] for r in self.rows]
            return ["lo", "hi", "n"], [(min(k, default=None), max(k, default=None), len(k))]
        if q == "split":
            step = int(p["step"])
            return [f"k{i}" for i in range(len(self.keys))], [
                self._key_texts(r) for rn, r in enumerate(in_range, 1) if rn > 1 and (rn - 1) % step == 0]
        if q == "rows":
            return [*(f"k{i}" for i in range(len(self.keys))), "h"], [
                (*self._key_texts(r), self._hash(r)) for r in in_range]
        splits = [self._sort_key_of(tuple(s)) for s in p["splits"]]
        figures: dict[int, list[int]] = {}
        for r in in_range:
            b = next((i for i, s in enumerate(splits) if self._order(r) < s), len(splits))
            n_s = figures.setdefault(b, [0, 0])
            n_s[0] += 1
            n_s[1] += int(self._hash(r)[:15], 16)
        return ["b", "n", "s"], [(b, n, decimal.Decimal(s)) for b, (n, s) in sorted(figures.items())]

    # -- the documented semantics -----------------------------------------------------------------
    def _text(self, value: Any, column: str, type_: pa.DataType) -> str | None:
        if value is None:
            return None
        fragment = self.d.text(self.d.quote(column), type_).replace(self.d.quote(column), "{c}")
        return FRAGMENTS[(self.d.name, fragment)](value, type_)

    def _hash(self, row: dict[str, Any]) -> str:
        texts = [self._text(row[c], c, t) for c, t in self.columns]
        joined = "\x1f".join(NULL_TEXT if t is None else t for t in texts)
        return hashlib.md5(joined.encode("utf-8")).hexdigest()

    def _key_texts(self, row: dict[str, Any]) -> tuple[str | None, ...]:
        return tuple(self._text(row[k], k, t) for k, t in self.keys)

    def _sort_value(self, value: Any, type_: pa.DataType) -> Any:
        if is_text(type_):  # SQL Server BIN2 orders UTF-16 code units; Oracle binary orders UTF-8 bytes
            return value.encode("utf-16-be" if self.d.name == "sqlserver" else "utf-8")
        return value

    def _order(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(self._sort_value(row[k], t) for k, t in self.keys)

    def _sort_key_of(self, texts: tuple[str, ...]) -> tuple[Any, ...]:
        values = []
        for text, (_, t) in zip(texts, self.keys):
            if pa.types.is_integer(t):
                values.append(self._sort_value(int(text), t))
            elif pa.types.is_decimal(t):
                values.append(decimal.Decimal(text))
            elif pa.types.is_date(t):
                values.append(dt.date.fromisoformat(text))
            else:
                values.append(self._sort_value(text, t))
        return tuple(values)

    def _inside(self, row: dict[str, Any], lo: rc.Bound, hi: rc.Bound) -> bool:
        if any(row[k] is None for k, _ in self.keys):
            return False  # a comparison with a null is unknown: in no range
        key = self._order(row)
        return (lo is None or key >= self._sort_key_of(lo)) and (hi is None or key < self._sort_key_of(hi))


def _bound(value: list[str] | None) -> rc.Bound:
    return None if value is None else tuple(value)



# -- the drivers' DB-API shapes ---------------------------------------------------------------------
class _EvaluatedRecording(Recording):
    def __init__(self, evaluator: Evaluator) -> None:
        super().__init__()
        self.evaluator = evaluator

    def answer(self, sql: str, params: Any) -> ResultSet | None:
        names, rows = self.evaluator.answer(sql)
        return ResultSet.of(names, rows)


def sqlserver_connection(evaluator: Evaluator) -> SqlServerReplay:
    """A pymssql-shaped connection answering from ``evaluator``."""
    return SqlServerReplay(_EvaluatedRecording(evaluator))


class _RawCursor(OracleCursor):
    def execute(self, statement: str, parameters: Any = None) -> None:
        self.conn.last_sql = statement  # the replay normalises whitespace: the evaluator needs the text as sent
        super().execute(statement, parameters)


class _OracleConnection(OracleReplay):
    last_sql = ""

    def cursor(self) -> _RawCursor:
        if self.closed:
            raise oracledb.InterfaceError("DPY-1001: not connected to database")
        return _RawCursor(self)


def oracle_connection(evaluator: Evaluator) -> _OracleConnection:
    """A python-oracledb-shaped connection answering from ``evaluator``."""
    conn = _OracleConnection()

    def handler(binds: dict[str, Any]) -> Any:
        names, rows = evaluator.answer(conn.last_sql)
        types = [oracledb.DB_TYPE_VARCHAR if any(isinstance(r[i], str) for r in rows) else oracledb.DB_TYPE_NUMBER
                 for i in range(len(names))]
        # python-oracledb returns an integral NUMBER as int
        typed = [tuple(int(v) if isinstance(v, decimal.Decimal) else v for v in r) for r in rows]
        return describe(*zip([n.upper() for n in names], types)), typed

    conn.pattern_handlers = [(re.compile(r"/\* lakecdc reconcile .*", re.DOTALL), handler)]
    return conn


# -- pyodbc's DB-API shape (paramstyle qmark), as it reaches SQL Server through Microsoft's ODBC driver --
class OdbcError(Exception):
    """pyodbc.Error: ``args`` is (SQLSTATE, message)."""


class OdbcRow:
    """pyodbc.Row: a sequence (index, slice, iteration, len) with the columns as attributes; not a tuple."""

    def __init__(self, description: list[tuple[Any, ...]], values: tuple[Any, ...]) -> None:
        self.cursor_description = description
        self._values = values

    def __getitem__(self, i: Any) -> Any:
        return self._values[i]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Any:
        return iter(self._values)

    def __getattr__(self, name: str) -> Any:
        for i, column in enumerate(self.cursor_description):
            if column[0] == name:
                return self._values[i]
        raise AttributeError(name)

    def __reduce__(self) -> Any:
        raise TypeError("cannot pickle 'pyodbc.Row' object")  # what crosses must be plain values


def _markers(sql: str) -> int:
    """``?`` outside string literals (in comments too: what a driver that does not parse comments sees)."""
    return len(re.findall(r"\?", re.sub(r"N?'(?:[^']|'')*'", "", sql)))


class OdbcCursor:
    def __init__(self, connection: OdbcConnection) -> None:
        self.connection = connection
        self.description: list[tuple[Any, ...]] | None = None
        self._rows: list[OdbcRow] = []

    def execute(self, sql: str, *params: Any) -> OdbcCursor:
        if self.connection.closed:
            raise OdbcError("08003", "[08003] Attempt to use a closed connection.")
        if _markers(sql) != len(params):
            raise OdbcError("07002", f"[07002] [Microsoft][ODBC Driver 18 for SQL Server]COUNT field incorrect or "
                                     f"syntax error ({_markers(sql)} markers, {len(params)} parameters)")
        names, rows = self.connection.evaluator.answer(sql)
        # the Python type of each column (pyodbc's type_code): SUM of DECIMAL(38, 0) is Decimal, COUNT int
        types = [next((type(r[i]) for r in rows if r[i] is not None), str) for i in range(len(names))]
        self.description = [(n, t, None, None, None, None, True) for n, t in zip(names, types)]
        self._rows = [OdbcRow(self.description, tuple(r)) for r in rows]
        return self

    def fetchall(self) -> list[OdbcRow]:
        out, self._rows = self._rows, []
        return out

    def fetchone(self) -> OdbcRow | None:
        return self._rows.pop(0) if self._rows else None

    def close(self) -> None:
        self._rows = []


class OdbcConnection:
    __module__ = "pyodbc"  # pyodbc.Connection's: the reconciliation tells drivers apart by their module
    autocommit = False

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator, self.closed, self.rollbacks = evaluator, False, 0

    def getinfo(self, code: int) -> str:
        if code != 17:  # SQL_DBMS_NAME
            raise OdbcError("HY096", f"[HY096] Information type out of range ({code})")
        return "Microsoft SQL Server"

    def cursor(self) -> OdbcCursor:
        return OdbcCursor(self)

    def rollback(self) -> None:
        self.rollbacks += 1

    def commit(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def pyodbc_connection(evaluator: Evaluator) -> OdbcConnection:
    """A pyodbc-shaped connection to SQL Server answering from ``evaluator``."""
    return OdbcConnection(evaluator)


# -- the CLI's driver hook (LAKECDC_QUALITY_SOURCE_FACTORY=recorded_sources:cli_factory) ---------------
CLI_SOURCES: dict[str, Evaluator] = {}  # SourceUrl.kind -> the evaluator its connection answers from
CLI_CALLS: list[Any] = []  # the SourceUrl of every connect, with the password the CLI resolved


def cli_factory(url: Any) -> Any:
    CLI_CALLS.append((url, url.password_text()))
    evaluator = CLI_SOURCES[url.kind]
    if url.kind == "oracledb":
        return oracle_connection(evaluator)
    return pyodbc_connection(evaluator) if url.kind == "pyodbc" else sqlserver_connection(evaluator)
