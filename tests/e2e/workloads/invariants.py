"""Invariant workloads: money transfers across two tables, sweeps over every row of both, and
parent/child rows changed together.

``checking`` and ``savings`` live in different schemas (PostgreSQL) or databases (MariaDB); every
transfer moves an amount from one to the other in ONE source transaction, so the sum over both
tables is the same at every source commit; a sweep moves one unit for every account between the two
tables in one transaction (every row of both changes). ``orders`` rows and their ``order_lines`` are inserted and
deleted together (``orders.n_lines`` = the number of its lines). The workload records, after each
commit, the source's position (PostgreSQL ``pg_current_wal_lsn()``, MariaDB ``SHOW MASTER STATUS``)
and the exact rows every table has then (``Model``), so each commit can be read back "as of" it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ACCOUNTS = 12
OPENING = 1000
TOTAL = 2 * ACCOUNTS * OPENING


@dataclass
class Model:
    """What every table holds after a commit (key -> the columns the check compares)."""

    checking: dict[int, int] = field(default_factory=dict)
    savings: dict[int, int] = field(default_factory=dict)
    orders: dict[int, int] = field(default_factory=dict)  # id -> n_lines
    order_lines: dict[int, int] = field(default_factory=dict)  # id -> order_id

    def tables(self) -> dict[str, dict[int, int]]:
        return {"checking": self.checking, "savings": self.savings, "orders": self.orders,
                "order_lines": self.order_lines}


@dataclass(frozen=True)
class Commit:
    position: str  # in the source's notation
    model: Model
    what: str


def invariant_errors(tables: dict[str, dict[int, int]], where: str) -> list[str]:
    """The invariants the source keeps at every commit, checked on rows read from the lake."""
    errors = []
    total = sum(tables["checking"].values()) + sum(tables["savings"].values())
    if total != TOTAL:
        errors.append(f"{where}: checking + savings = {total}, not {TOTAL} (half a transfer)")
    lines_per_order: dict[int, int] = {}
    for order_id in tables["order_lines"].values():
        lines_per_order[order_id] = lines_per_order.get(order_id, 0) + 1
    for order_id, n in tables["orders"].items():
        if lines_per_order.get(order_id, 0) != n:
            errors.append(f"{where}: order {order_id} has {lines_per_order.get(order_id, 0)} lines, not {n}")
    orphans = set(lines_per_order) - set(tables["orders"])
    if orphans:
        errors.append(f"{where}: lines of orders that do not exist: {sorted(orphans)}")
    return errors


class Workload:
    """Runs transactions through ``execute`` (one source transaction per call) and records commits.

    ``execute(statements)`` runs the statements in one transaction and returns the position after its
    commit; statements use ``{checking}`` ``{savings}`` ``{orders}`` ``{order_lines}`` placeholders.
    """

    def __init__(self, execute: Callable[[list[str]], str], rng: random.Random) -> None:
        self.execute = execute
        self.rng = rng
        self.model = Model()
        self.commits: list[Commit] = []
        self._next_order = 1
        self._next_line = 1

    def _commit(self, statements: list[str], what: str) -> None:
        position = self.execute(statements)
        self.commits.append(Commit(position, copy.deepcopy(self.model), what))

    def seed_statements(self) -> list[str]:
        for i in range(1, ACCOUNTS + 1):
            self.model.checking[i] = OPENING
            self.model.savings[i] = OPENING
        values = ", ".join(f"({i}, {OPENING})" for i in range(1, ACCOUNTS + 1))
        return [f"INSERT INTO {{checking}} (id, balance) VALUES {values}",
                f"INSERT INTO {{savings}} (id, balance) VALUES {values}"]

    def transfer(self) -> None:
        a, b = self.rng.randint(1, ACCOUNTS), self.rng.randint(1, ACCOUNTS)
        amount = self.rng.randint(1, 50)
        if self.rng.random() < 0.5:
            source, target, src_model, dst_model = "checking", "savings", self.model.checking, self.model.savings
        else:
            source, target, src_model, dst_model = "savings", "checking", self.model.savings, self.model.checking
        src_model[a] -= amount
        dst_model[b] += amount
        self._commit([f"UPDATE {{{source}}} SET balance = balance - {amount} WHERE id = {a}",
                      f"UPDATE {{{target}}} SET balance = balance + {amount} WHERE id = {b}"],
                     f"transfer {amount} {source}[{a}] -> {target}[{b}]")

    def order(self) -> None:
        live = list(self.model.orders)
        if live and self.rng.random() < 0.4:
            order_id = self.rng.choice(live)
            del self.model.orders[order_id]
            for line in [k for k, v in self.model.order_lines.items() if v == order_id]:
                del self.model.order_lines[line]
            self._commit([f"DELETE FROM {{order_lines}} WHERE order_id = {order_id}",
                          f"DELETE FROM {{orders}} WHERE id = {order_id}"], f"delete order {order_id}")
            return
        order_id, n = self._next_order, self.rng.randint(1, 4)
        self._next_order += 1
        lines = list(range(self._next_line, self._next_line + n))
        self._next_line += n
        self.model.orders[order_id] = n
        for line in lines:
            self.model.order_lines[line] = order_id
        self._commit([f"INSERT INTO {{orders}} (id, n_lines) VALUES ({order_id}, {n})",
                      "INSERT INTO {order_lines} (id, order_id) VALUES "
                      + ", ".join(f"({line}, {order_id})" for line in lines)], f"insert order {order_id}")

    def sweep(self) -> None:
        """One transaction touching every account of both tables (interest moved between them)."""
        if self.rng.random() < 0.5:
            source, target, src_model, dst_model = "checking", "savings", self.model.checking, self.model.savings
        else:
            source, target, src_model, dst_model = "savings", "checking", self.model.savings, self.model.checking
        for i in src_model:
            src_model[i] -= 1
            dst_model[i] += 1
        self._commit([f"UPDATE {{{source}}} SET balance = balance - 1",
                      f"UPDATE {{{target}}} SET balance = balance + 1"], f"sweep {source} -> {target}")

    def run(self, transactions: int) -> None:
        for _ in range(transactions):
            roll = self.rng.random()
            (self.transfer if roll < 0.6 else self.sweep if roll < 0.7 else self.order)()


def rows_of(frame: Any, key: str, value: str) -> dict[int, int]:
    """A pandas frame read from silver -> {key: value} (soft-deleted rows left out)."""
    if "_is_deleted" in frame.columns:
        frame = frame[~frame["_is_deleted"].fillna(False).astype(bool)]
    return {int(k): int(v) for k, v in zip(frame[key], frame[value])}
