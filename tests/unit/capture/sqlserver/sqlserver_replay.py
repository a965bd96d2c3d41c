"""A DB-API 2.0 connection that answers the connector's statements from recorded result sets.

No SQL Server can run where lakecdc is developed, so the SQL Server connector is tested against
recordings: each statement the connector issues (SQL text plus parameters) maps to the result
sets a real server returned, with the values as pymssql returns them (``datetime``, ``Decimal``,
``bytes``, ``uuid.UUID`` ...) and pymssql's cursor conventions (tuples, 7-item ``description``
entries whose type codes are pymssql's ``STRING``/``BINARY``/``NUMBER``/``DATETIME``/``DECIMAL``).

A statement that is not in the recording raises :class:`UnrecordedStatementError` naming it: the
connector never silently gets an empty answer. A statement recorded with several result sets
answers them in turn, then keeps answering the last one (a poll loop asking for the max LSN).

Recordings are JSON so the CLI can use them too::

    {"statements": [{"sql": "SELECT sys.fn_cdc_get_max_lsn()", "params": null,
                     "results": [{"columns": [["", 2]], "rows": [[{"$bytes": "0000002700000758000a"}]]}]}]}

Typed values: ``{"$bytes": hex}``, ``{"$decimal": "1.50"}``, ``{"$datetime": iso}``,
``{"$date": iso}``, ``{"$time": iso}``, ``{"$uuid": text}``. Use it from the CLI with
``LAKECDC_SQLSERVER_CONNECTION_FACTORY=sqlserver_replay:from_env`` (with this directory on
``PYTHONPATH``) and ``LAKECDC_SQLSERVER_REPLAY=/path/recording.json``. It is a test double and lives
with the tests, as Oracle's ``tests/unit/capture/oracle/oracle_replay.py`` does.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPLAY_ENV = "LAKECDC_SQLSERVER_REPLAY"

# pymssql's DB-API type codes (pymssql.STRING == 1, BINARY == 2, NUMBER == 3, DATETIME == 4, DECIMAL == 5)
STRING, BINARY, NUMBER, DATETIME, DECIMAL = 1, 2, 3, 4, 5


class UnrecordedStatementError(AssertionError):
    """The connector issued a statement the recording does not contain."""


def _normal_sql(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _param_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex().upper()
    return repr(value)


def statement_key(sql: str, params: Any) -> str:
    if params is None:
        return _normal_sql(sql)
    values = params if isinstance(params, (tuple, list)) else (params,)
    return _normal_sql(sql) + " -- (" + ", ".join(_param_text(v) for v in values) + ")"


def type_code(value: Any) -> int:
    """The pymssql type code a column holding ``value`` reports."""
    if isinstance(value, (bytes, bytearray)):
        return BINARY
    if isinstance(value, decimal.Decimal):
        return DECIMAL
    if isinstance(value, (dt.date, dt.time)):
        return DATETIME
    if isinstance(value, (bool, int, float)):
        return NUMBER
    return STRING


@dataclass
class ResultSet:
    columns: list[tuple[str, int]]  # (name, pymssql type code)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: str | None = None  # raise pymssql.<error_class>(error) instead of answering
    #: the pymssql exception a server error becomes: ProgrammingError for errors 102 (syntax), 207
    #: (invalid column), 208 (invalid object), 2812, 4104; IntegrityError for 515, 547, 2601, 2627
    error_class: str = "OperationalError"

    @classmethod
    def of(cls, names: list[str], rows: list[tuple[Any, ...]]) -> ResultSet:
        """Columns typed from the first non-null value of each column (as pymssql would report)."""
        codes = []
        for i, _ in enumerate(names):
            sample = next((r[i] for r in rows if r[i] is not None), "")
            codes.append(type_code(sample))
        return cls(list(zip(names, codes)), [tuple(r) for r in rows])


class Recording:
    """Statement key -> result sets, answered in order (the last one repeats)."""

    def __init__(self) -> None:
        self._answers: dict[str, list[ResultSet | None]] = {}
        self._served: dict[str, int] = {}
        self.log: list[str] = []  # every statement key executed, in order
        self._repeats = 0
        self._lock = threading.Lock()

    def add(self, sql: str, params: Any, *results: ResultSet | None) -> Recording:
        """Record the answers of a statement (``None``: a statement without a result set)."""
        self._answers.setdefault(statement_key(sql, params), []).extend(results or [None])
        return self

    def answer(self, sql: str, params: Any) -> ResultSet | None:
        key = statement_key(sql, params)
        with self._lock:
            self.log.append(key)
            answers = self._answers.get(key)
            if answers is None:
                close = sorted(k for k in self._answers if k.split(" -- ")[0] == key.split(" -- ")[0])
                hint = ("; recorded with other parameters: " + "; ".join(close[:5])) if close else ""
                raise UnrecordedStatementError(f"statement not in the recording: {key}{hint}")
            n = self._served.get(key, 0)
            self._served[key] = n + 1
            self._repeats = self._repeats + 1 if n >= len(answers) else 0
            return answers[min(n, len(answers) - 1)]

    def served(self, sql: str, params: Any = None) -> int:
        return self._served.get(statement_key(sql, params), 0)

    def repeats_since_fresh(self) -> int:
        """How many answers in a row were repeats of a statement's last answer (a poll loop that
        finds nothing new); 0 right after an answer given for the first time."""
        with self._lock:
            return self._repeats

    # ---- JSON -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        statements = []
        for key, answers in self._answers.items():
            sql, _, params = key.partition(" -- ")
            statements.append({"key": key, "results": [None if a is None else {
                "columns": [list(c) for c in a.columns], "rows": [[_encode(v) for v in r] for r in a.rows],
                "error": a.error, "error_class": a.error_class} for a in answers]})
        return {"statements": statements}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recording:
        rec = cls()
        for s in data["statements"]:
            rec._answers[s["key"]] = [None if a is None else ResultSet(
                [(str(c[0]), int(c[1])) for c in a["columns"]],
                [tuple(_decode(v) for v in r) for r in a["rows"]], a.get("error"),
                a.get("error_class", "OperationalError")) for a in s["results"]]
        return rec

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1))


def _encode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    return value


_DECODERS = {
    "$bytes": bytes.fromhex, "$decimal": decimal.Decimal, "$datetime": dt.datetime.fromisoformat,
    "$date": dt.date.fromisoformat, "$time": dt.time.fromisoformat, "$uuid": uuid.UUID,
}


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        (tag, text), = value.items()
        return _DECODERS[tag](text)
    return value


class ReplayCursor:
    """pymssql's cursor surface: execute, fetchone/fetchmany/fetchall, description, rowcount."""

    arraysize = 1

    def __init__(self, connection: ReplayConnection) -> None:
        self.connection = connection
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self._rows: list[tuple[Any, ...]] = []
        self._at = 0

    def execute(self, operation: str, params: Any = None) -> None:
        if self.connection.closed:
            raise RuntimeError("the replay connection is closed")
        result = self.connection.recording.answer(operation, params)
        if result is not None and result.error:
            import pymssql

            raise getattr(pymssql, result.error_class)(result.error)
        if result is None or not result.columns:
            self.description, self._rows, self.rowcount = None, [], -1
        else:
            self.description = [(name, code, None, None, None, None, None) for name, code in result.columns]
            self._rows, self.rowcount = list(result.rows), len(result.rows)
        self._at = 0

    def _need_results(self) -> None:
        if self.description is None:
            import pymssql

            raise pymssql.OperationalError("Statement not executed or executed statement has no resultset")

    def fetchone(self) -> tuple[Any, ...] | None:
        self._need_results()
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        self._need_results()
        n = size or self.arraysize
        out = self._rows[self._at:self._at + n]
        self._at += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        self._need_results()
        out = self._rows[self._at:]
        self._at = len(self._rows)
        return out

    def __iter__(self) -> Any:
        return iter(self.fetchone, None)

    def close(self) -> None:
        self._rows = []

    def __enter__(self) -> ReplayCursor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ReplayConnection:
    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.closed = False
        self.commits = 0
        self.rollbacks = 0

    def cursor(self) -> ReplayCursor:
        return ReplayCursor(self)

    def commit(self) -> None:
        self.commits += 1

    def rollback(self) -> None:
        self.rollbacks += 1

    def close(self) -> None:
        self.closed = True


_loaded: dict[str, Recording] = {}


def from_env(config: Any) -> ReplayConnection:
    """Connection factory for ``LAKECDC_SQLSERVER_CONNECTION_FACTORY``: replays the recording in
    ``LAKECDC_SQLSERVER_REPLAY`` (one shared answer state per process, as one server would be)."""
    path = os.environ.get(REPLAY_ENV)
    if not path:
        raise UnrecordedStatementError(f"{REPLAY_ENV} names no recording file")
    if path not in _loaded:
        _loaded[path] = Recording.from_json(json.loads(Path(path).read_text()))
    return ReplayConnection(_loaded[path])
