"""A long randomized PostgreSQL workload over the scenario tables, reproducible from its seed.

Operations are drawn with fixed weights (insert, update of a few random columns, delete,
primary-key change, delete and re-insert of the same key) over ``customers`` (mixed types),
``orders``, ``order_lines`` (composite key) and ``ledger`` (REPLICA IDENTITY FULL), in
transactions of 1-6 operations, so one micro-batch holds many changes of the same key.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from workloads.changelog import ChangeLog, Key
from workloads.pg_scenario import customer_row

TABLES = ("customers", "orders", "order_lines", "ledger")


class RandomWorkload:
    def __init__(self, log: ChangeLog, seed: int) -> None:
        self.log = log
        self.rng = random.Random(seed)
        self.next_id = {t: 10_000 for t in TABLES}

    def _new_key(self, table: str) -> Key:
        self.next_id[table] += 1
        if table == "order_lines":
            return (self.rng.randint(1, 50), self.next_id[table])
        return (self.next_id[table],)

    def _row(self, table: str, key: Key) -> dict[str, Any]:
        rng = self.rng
        if table == "customers":
            row = customer_row(rng, key[0])
            if "nickname" in self._columns("customers"):
                row["nickname"] = rng.choice([None, "x", "a longer nickname ✓"])
            return row
        if table == "orders":
            return {"id": key[0], "customer_id": rng.randint(1, 100), "total": Decimal(rng.randint(0, 10**8)) / 100,
                    "placed_at": datetime(2025, 1, 1) + timedelta(seconds=rng.randint(0, 10**7),
                                                                  microseconds=rng.randint(0, 999999))}
        if table == "order_lines":
            return {"order_id": key[0], "line_no": key[1], "qty": rng.randint(-5, 500),
                    "price": Decimal(rng.randint(0, 10**8)) / 100}
        return {"id": key[0], "note": rng.choice([None, "n", "note " * rng.randint(1, 20)]),
                "amount": Decimal(rng.randint(-10**19, 10**19)) / 10**5}

    def _columns(self, table: str) -> list[str]:
        if not hasattr(self, "_column_cache"):
            self._column_cache: dict[str, list[str]] = {}
        if table not in self._column_cache:
            cur = self.log.conn.execute(f"SELECT * FROM {table} LIMIT 0")
            self._column_cache[table] = [d.name for d in cur.description]
        return self._column_cache[table]

    def step(self) -> None:
        rng, log = self.rng, self.log
        table = rng.choice(TABLES)
        live = sorted(log.live[table])
        roll = rng.random()
        if not live or roll < 0.35:
            key = self._new_key(table)
            log.insert(table, self._row(table, key))
        elif roll < 0.80:
            key = rng.choice(live)
            fresh = self._row(table, key)
            names = [c for c in fresh if c not in log.keys[table]]
            log.update(table, key, {c: fresh[c] for c in rng.sample(names, rng.randint(1, len(names)))})
        elif roll < 0.93:
            log.delete(table, rng.choice(live))
        elif roll < 0.97 and table != "order_lines":
            old = rng.choice(live)
            log.update(table, old, {log.keys[table][0]: self._new_key(table)[0]})
        else:  # the same key deleted and inserted again, with other values
            key = rng.choice(live)
            log.delete(table, key)
            log.insert(table, self._row(table, key))

    def run(self, operations: int) -> None:
        done = 0
        while done < operations:
            size = self.rng.randint(1, 6)
            with self.log.transaction():
                for _ in range(size):
                    self.step()
            done += size
