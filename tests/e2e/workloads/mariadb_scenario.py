"""The MariaDB workload mirrored into silver: the PostgreSQL scenarios in MySQL's dialect, then random.

Tables::

    customers    INT pk, VARCHAR, DECIMAL(12,2), DOUBLE, BIGINT, SMALLINT, DATE, DATETIME(6),
                 TIMESTAMP(6), TEXT, BLOB
    orders       BIGINT pk; order_lines (order_id, line_no) composite pk

Changes: inserts, updates, deletes, a key deleted and inserted again, a primary-key change, a
multi-table transaction, a column added then used, a TRUNCATE then inserts, then a seeded random
mix over all three tables in transactions of 1-5 statements.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from workloads.changelog import ChangeLog

KEYS: dict[str, tuple[str, ...]] = {"customers": ("id",), "orders": ("id",), "order_lines": ("order_id", "line_no")}

SCHEMA = (
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, balance DECIMAL(12,2), "
    "ratio DOUBLE, big BIGINT, small SMALLINT, born DATE, local_ts DATETIME(6), created_at TIMESTAMP(6) NULL, "
    "note TEXT, avatar BLOB)",
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT, total DECIMAL(10,2))",
    "CREATE TABLE order_lines (order_id BIGINT, line_no INT, qty INT, PRIMARY KEY (order_id, line_no))",
)


def customer_row(rng: random.Random, i: int) -> dict[str, Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    return {
        "id": i, "name": f"Customer {i} é✓", "balance": Decimal(rng.randint(-10**9, 10**9)) / 100,
        "ratio": maybe(rng.uniform(-1e6, 1e6)), "big": maybe(rng.randint(-2**63, 2**63 - 1)),
        "small": maybe(rng.randint(-32768, 32767)),
        "born": maybe(date(1950, 1, 1) + timedelta(days=rng.randint(0, 25000))),
        "local_ts": maybe(datetime(2000, 1, 1) + timedelta(seconds=rng.randint(0, 10**9),
                                                           microseconds=rng.randint(0, 999999))),
        "created_at": maybe(datetime(2001, 1, 1) + timedelta(seconds=rng.randint(0, 10**9),
                                                             microseconds=rng.randint(0, 999999))),
        "note": maybe("note " * rng.randint(0, 30)), "avatar": maybe(bytes(rng.getrandbits(8) for _ in range(12))),
    }


def random_row(table: str, rng: random.Random, key: tuple[Any, ...]) -> dict[str, Any]:
    if table == "customers":
        return customer_row(rng, key[0])
    if table == "orders":
        return {"id": key[0], "customer_id": rng.randint(1, 50), "total": Decimal(rng.randint(0, 10**8)) / 100}
    return {"order_id": key[0], "line_no": key[1], "qty": rng.randint(-5, 500)}


def create_and_seed(log: ChangeLog, rng: random.Random) -> None:
    for statement in SCHEMA:
        log.run(statement)
    with log.transaction():
        for i in range(1, 31):
            row = customer_row(rng, i)
            log.run(f"INSERT INTO customers ({', '.join(row)}) VALUES ({', '.join(['%s'] * len(row))})",
                    list(row.values()))
        for i in range(1, 11):
            log.run("INSERT INTO orders VALUES (%s, %s, %s)", (i, i, Decimal(i * 100 + 1) / 100))
            log.run("INSERT INTO order_lines VALUES (%s, 1, %s)", (i, i))
    log.snapshot_rows()


def scenario(log: ChangeLog, rng: random.Random) -> None:
    for i in range(31, 46):
        log.insert("customers", customer_row(rng, i))
    for i in rng.sample(range(1, 46), 20):
        fresh = customer_row(rng, i)
        log.update("customers", (i,), {c: fresh[c] for c in rng.sample(sorted(fresh.keys() - {"id"}), 4)})
    for i in (2, 33):
        log.delete("customers", (i,))
    log.insert("customers", customer_row(rng, 2))
    log.update("customers", (5,), {"id": 1005})  # primary-key change
    with log.transaction():
        log.insert("orders", {"id": 100, "customer_id": 7, "total": Decimal("30.00")})
        log.insert("order_lines", {"order_id": 100, "line_no": 1, "qty": 3})
        log.update("customers", (7,), {"balance": Decimal("-30.00")})
    log.run("ALTER TABLE customers ADD COLUMN nickname VARCHAR(40)")
    for i in (1, 3):
        log.update("customers", (i,), {"nickname": f"nick {i}"})
    log.truncate("order_lines")
    for n in (1, 2):
        log.insert("order_lines", {"order_id": 1, "line_no": n, "qty": n})


def random_changes(log: ChangeLog, seed: int, operations: int) -> None:
    rng = random.Random(seed)
    next_id = 10_000
    done = 0
    while done < operations:
        size = rng.randint(1, 5)
        with log.transaction():
            for _ in range(size):
                table = rng.choice(list(KEYS))
                live = sorted(log.live[table])
                roll = rng.random()
                if not live or roll < 0.4:
                    next_id += 1
                    key = (rng.randint(1, 50), next_id) if table == "order_lines" else (next_id,)
                    row = random_row(table, rng, key)
                    if table == "customers":
                        row["nickname"] = rng.choice([None, "n"])
                    log.insert(table, row)
                elif roll < 0.85:
                    key = rng.choice(live)
                    fresh = random_row(table, rng, key)
                    names = [c for c in fresh if c not in KEYS[table]]
                    log.update(table, key, {c: fresh[c] for c in rng.sample(names, rng.randint(1, len(names)))})
                else:
                    log.delete(table, rng.choice(live))
        done += size
