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

from psycopg import sql

Key = tuple[Any, ...]


class ChangeLog:
    def __init__(self, conn: Any, keys: dict[str, tuple[str, ...]], keyless: Sequence[str] = (),
                 placeholder: str = "%s") -> None:
        self.conn = conn
        self.keys = keys  # table -> identifying columns (the primary key, or chosen ones if keyless)
        self.keyless = frozenset(keyless)  # tables without a primary key: bronze only
        self.placeholder = placeholder
        self.events: dict[str, Counter[tuple[str, Key | None]]] = {t: Counter() for t in keys}
        self.live: dict[str, set[Key]] = {t: set() for t in keys}  # keys present now, for random picks
        self.changes = 0

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
            columns = sql.SQL(", ").join(sql.Identifier(c) for c in key)
            for row in self.conn.execute(sql.SQL("SELECT {} FROM {}").format(columns, sql.Identifier(table))):
                self._note(table, "r", tuple(row))

    # ------------------------------------------------------------------ changes

    def key_of(self, table: str, row: dict[str, Any]) -> Key:
        return tuple(row[c] for c in self.keys[table])

    def insert(self, table: str, row: dict[str, Any]) -> None:
        query = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in row),
            sql.SQL(", ").join(sql.Placeholder() for _ in row))
        self.conn.execute(query, list(row.values()))
        self._note(table, "c", self.key_of(table, row))

    def _where(self, table: str) -> sql.Composed:
        return sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in self.keys[table])

    def update(self, table: str, key: Key, values: dict[str, Any]) -> None:
        query = sql.SQL("UPDATE {} SET {} WHERE {}").format(
            sql.Identifier(table), sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in values),
            self._where(table))
        cur = self.conn.execute(query, [*values.values(), *key])
        assert cur.rowcount == 1, f"update of {table} {key} touched {cur.rowcount} rows"
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
        cur = self.conn.execute(sql.SQL("DELETE FROM {} WHERE {}").format(sql.Identifier(table), self._where(table)),
                                list(key))
        assert cur.rowcount == 1, f"delete of {table} {key} touched {cur.rowcount} rows"
        self._note(table, "d", key)

    def truncate(self, table: str) -> None:
        self.conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))
        self._note(table, "t", None)

    def execute(self, statement: str, params: Sequence[Any] = (), events: Sequence[tuple[str, str, Key]] = ()) -> None:
        """Any other statement, with the events it makes stated by the caller."""
        self.conn.execute(statement, params)
        for table, op, key in events:
            self._note(table, op, key)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One source transaction (the events are noted as the statements run; a failure aborts the test)."""
        with self.conn.transaction():
            yield
