"""A workload's own record of the changes it made, to check bronze against.

Every change goes through ``ChangeLog``, which runs the SQL and notes the Debezium events it
must produce, as ``(op, key)`` per table:

- insert -> ``c``; update -> ``u``; delete -> ``d``;
- an update that changes the primary key -> ``d`` of the old key and ``c`` of the new key
  (Debezium's delete + tombstone + create; the tombstone never reaches bronze);
- truncate -> one ``t`` with no key; snapshot rows -> ``r``.

Keys are tuples of the key columns (for a table without a primary key, the columns the
workload treats as identifying, which the REPLICA IDENTITY FULL before image carries).

>>> log = ChangeLog(conn, {"items": ("id",)})          # doctest: +SKIP
>>> log.insert("items", {"id": 1, "name": "one"})      # doctest: +SKIP
>>> log.expected("items")                              # doctest: +SKIP
Counter({('c', (1,)): 1})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

Key = tuple[Any, ...]


class ChangeLog:
    """Runs changes on a psycopg connection (``MySqlChangeLog`` for pymysql) and records them."""

    quote_char = '"'
    unchanged_rows_silent = False  # PostgreSQL logs an update even when no value changes

    def __init__(self, conn: Any, keys: dict[str, tuple[str, ...]], keyless: Sequence[str] = ()) -> None:
        self.conn = conn
        self.keys = keys  # table -> identifying columns (the primary key, or chosen ones if keyless)
        self.keyless = frozenset(keyless)  # tables without a primary key: bronze only
        self.events: dict[str, Counter[tuple[str, Key | None]]] = {t: Counter() for t in keys}
        self.live: dict[str, set[Key]] = {t: set() for t in keys}  # keys present now, for random picks
        self.changes = 0

    # ------------------------------------------------------------------ connection

    def quote(self, name: str) -> str:
        return self.quote_char + name.replace(self.quote_char, self.quote_char * 2) + self.quote_char

    def run(self, statement: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        """Execute; returns the row count and any rows."""
        cur = self.conn.execute(statement, list(params))
        return cur.rowcount, (cur.fetchall() if cur.description else [])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One source transaction (events are noted as statements run; a failure aborts the test)."""
        with self.conn.transaction():
            yield

    # ------------------------------------------------------------------ recording

    def _note(self, table: str, op: str, key: Key | None) -> None:
        self.events[table][(op, key)] += 1
        self.changes += 1
        if op in ("c", "r") and key is not None:
            self.live[table].add(key)
        elif op == "d" and key is not None:
            self.live[table].discard(key)
        elif op == "t":
            self.live[table].clear()

    def expected(self, table: str) -> Counter[tuple[str, Key | None]]:
        return +self.events[table]

    def snapshot_rows(self) -> None:
        """The rows present now become ``r`` events (run before the first capture)."""
        for table, key in self.keys.items():
            _, rows = self.run(f"SELECT {', '.join(map(self.quote, key))} FROM {self.quote(table)}")
            for row in rows:
                self._note(table, "r", tuple(row))

    # ------------------------------------------------------------------ changes

    def key_of(self, table: str, row: dict[str, Any]) -> Key:
        return tuple(row[c] for c in self.keys[table])

    def insert(self, table: str, row: dict[str, Any]) -> None:
        self.run(f"INSERT INTO {self.quote(table)} ({', '.join(map(self.quote, row))}) "
                 f"VALUES ({', '.join(['%s'] * len(row))})", list(row.values()))
        self._note(table, "c", self.key_of(table, row))

    def _where(self, table: str) -> str:
        return " AND ".join(f"{self.quote(c)} = %s" for c in self.keys[table])

    def update(self, table: str, key: Key, values: dict[str, Any]) -> None:
        assignments = ", ".join(f"{self.quote(c)} = %s" for c in values)
        count, _ = self.run(f"UPDATE {self.quote(table)} SET {assignments} WHERE {self._where(table)}",
                            [*values.values(), *key])
        assert count in (0, 1) if self.unchanged_rows_silent else count == 1, \
            f"update of {table} {key} touched {count} rows"
        if count == 0:
            return  # MySQL: the row already had these values; the binlog gets no row event
        new_key = tuple(values.get(c, k) for c, k in zip(self.keys[table], key))
        if new_key != key and table not in self.keyless:
            self._note(table, "d", key)
            self._note(table, "c", new_key)
        else:
            self._note(table, "u", new_key)
            if new_key != key:
                self.live[table].discard(key)
                self.live[table].add(new_key)

    def delete(self, table: str, key: Key) -> None:
        count, _ = self.run(f"DELETE FROM {self.quote(table)} WHERE {self._where(table)}", list(key))
        assert count == 1, f"delete of {table} {key} touched {count} rows"
        self._note(table, "d", key)

    def truncate(self, table: str) -> None:
        self.run(f"TRUNCATE {self.quote(table)}")
        self._note(table, "t", None)


class MySqlChangeLog(ChangeLog):
    """The same over a pymysql connection (autocommit on; ``transaction`` opens one explicitly)."""

    quote_char = "`"
    unchanged_rows_silent = True  # rowcount is "affected rows": 0 when nothing changed, and no event

    def run(self, statement: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        with self.conn.cursor() as cur:
            count = cur.execute(statement, list(params) or None)
            return count, list(cur.fetchall()) if cur.description else []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.begin()
        try:
            yield
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()
