"""The PostgreSQL scenario workloads: each CDC situation the issue names, at least once.

Tables (``KEYS``)::

    customers    mixed types: int4 pk, text, varchar, numeric(12,2), numeric (no scale), real,
                 double, int2, int8, bool, date, time, timestamp, timestamptz, interval, uuid,
                 json, jsonb, bytea, text[], int4[]
    docs         a large text column kept out of line (TOAST) and a small one that changes
    ledger       REPLICA IDENTITY FULL, numeric(20,5)
    orders       bigint pk; order_lines (order_id, line_no) composite pk
    nopk_events  no primary key (REPLICA IDENTITY FULL so it can be updated): bronze only

Workloads: ``seed`` (snapshot rows), ``dml`` (inserts, updates, deletes, a delete then a
re-insert of the same key, a primary-key change, an unchanged-TOAST update, a multi-table
transaction, the REPLICA IDENTITY FULL and keyless tables), ``schema_and_truncate`` (a column
added then used, a TRUNCATE then inserts).
"""

from __future__ import annotations

import random
import string
import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

from workloads.changelog import ChangeLog

KEYS: dict[str, tuple[str, ...]] = {
    "customers": ("id",), "docs": ("id",), "ledger": ("id",), "orders": ("id",),
    "order_lines": ("order_id", "line_no"), "nopk_events": ("msg",),
}
KEYLESS = ("nopk_events",)

SCHEMA = """
CREATE TABLE customers (
  id int PRIMARY KEY, name text NOT NULL, email varchar(100), balance numeric(12,2), exact numeric,
  score real, ratio double precision, small smallint, big bigint, active boolean, born date,
  wake time, local_ts timestamp, created_at timestamptz, wait interval, ext_id uuid, doc json,
  prefs jsonb, avatar bytea, tags text[], lucky int4[]);
CREATE TABLE docs (id int PRIMARY KEY, title text, body text);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE ledger (id int PRIMARY KEY, note text, amount numeric(20,5));
ALTER TABLE ledger REPLICA IDENTITY FULL;
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int, total numeric(10,2), placed_at timestamp);
CREATE TABLE order_lines (order_id bigint, line_no int, qty int, price numeric(10,2),
  PRIMARY KEY (order_id, line_no));
CREATE TABLE nopk_events (msg text NOT NULL, n int);
ALTER TABLE nopk_events REPLICA IDENTITY FULL;
"""


def create_schema(conn: Any) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def customer_row(rng: random.Random, i: int) -> dict[str, Any]:
    """A customers row with every column typed and mostly non-null (some nulls on purpose)."""
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    return {
        "id": i, "name": f"Customer {i} é✓", "email": maybe(f"c{i}@example.com"),
        "balance": Decimal(rng.randint(-10**9, 10**9)) / 100,
        "exact": maybe(Decimal(rng.randint(-10**12, 10**12)) / Decimal(10) ** rng.randint(0, 9)),
        "score": maybe(rng.choice([0.1, 1.5, -2.25, 3.4e38, 1e-7, 123456.79])),
        "ratio": maybe(rng.uniform(-1e6, 1e6)), "small": maybe(rng.randint(-32768, 32767)),
        "big": maybe(rng.randint(-2**63, 2**63 - 1)), "active": maybe(rng.random() < 0.5),
        "born": maybe(date(1950, 1, 1) + timedelta(days=rng.randint(0, 25000))),
        "wake": maybe(time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999999))),
        "local_ts": maybe(datetime(2000, 1, 1) + timedelta(seconds=rng.randint(0, 10**9),
                                                           microseconds=rng.randint(0, 999999))),
        "created_at": maybe(base + timedelta(seconds=rng.randint(-10**8, 10**8),
                                             microseconds=rng.randint(0, 999999))),
        "wait": maybe(timedelta(days=rng.randint(0, 40), seconds=rng.randint(0, 86399),
                                microseconds=rng.randint(0, 9))),
        "ext_id": maybe(uuid.UUID(int=rng.getrandbits(128))),
        "doc": maybe(f'{{"k": {i}, "nested": {{"list": [1, 2.5, "x"]}}}}'),
        "prefs": maybe(f'{{"theme": "{rng.choice(["dark", "light"])}", "n": {rng.randint(0, 99)}}}'),
        "avatar": maybe(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24)))),
        "tags": maybe(rng.sample(["gold", "eu", "b2b", "new", "a,b", 'quo"te'], rng.randint(0, 3))),
        "lucky": maybe([rng.randint(-99, 99) for _ in range(rng.randint(0, 4))]),
    }


def big_text(rng: random.Random, n: int = 12_000) -> str:
    """Incompressible text, large enough to be stored out of line."""
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def seed(log: ChangeLog, rng: random.Random) -> None:
    """Rows present before capture starts (read by the snapshot as ``r`` events)."""
    conn = log.conn
    with conn.transaction():
        for i in range(1, 41):
            row = customer_row(rng, i)
            conn.execute("INSERT INTO customers ({}) VALUES ({})".format(
                ", ".join(row), ", ".join(["%s"] * len(row))), list(row.values()))
        for i in range(1, 6):
            conn.execute("INSERT INTO docs VALUES (%s, %s, %s)", (i, f"doc {i}", big_text(rng)))
        for i in range(1, 6):
            conn.execute("INSERT INTO ledger VALUES (%s, %s, %s)", (i, f"entry {i}", Decimal(i) / 7))
        for i in range(1, 11):
            conn.execute("INSERT INTO orders VALUES (%s, %s, %s, %s)",
                         (i, i, Decimal(i * 1000 + 1) / 100, datetime(2025, 1, i % 28 + 1, 12, 30)))
            conn.execute("INSERT INTO order_lines VALUES (%s, 1, %s, %s)", (i, i, Decimal("9.99")))
        conn.execute("INSERT INTO nopk_events VALUES ('seeded', 0)")
    log.snapshot_rows()


def dml(log: ChangeLog, rng: random.Random) -> None:
    """Inserts, updates, deletes and the special cases (module docstring)."""
    for i in range(41, 61):
        log.insert("customers", customer_row(rng, i))
    for i in rng.sample(range(1, 61), 25):
        fresh = customer_row(rng, i)
        log.update("customers", (i,), {c: fresh[c] for c in rng.sample(sorted(fresh.keys() - {"id"}), 5)})
    for i in (2, 4, 45):
        log.delete("customers", (i,))
    log.insert("customers", customer_row(rng, 4))  # a deleted key comes back
    log.update("customers", (5,), {"id": 1005, "name": "renumbered"})  # primary-key change
    log.update("orders", (3,), {"id": 3003})
    # Unchanged TOAST: body is not touched, so pgoutput does not send it; silver keeps it.
    log.update("docs", (1,), {"title": "retitled"})
    log.update("docs", (2,), {"title": "retitled too"})
    log.update("docs", (3,), {"body": big_text(rng)})  # the large value itself changes
    with log.transaction():  # one transaction over three tables
        log.insert("orders", {"id": 100, "customer_id": 7, "total": Decimal("30.00"),
                              "placed_at": datetime(2025, 6, 1)})
        log.insert("order_lines", {"order_id": 100, "line_no": 1, "qty": 1, "price": Decimal("10.00")})
        log.insert("order_lines", {"order_id": 100, "line_no": 2, "qty": 2, "price": Decimal("10.00")})
        log.update("customers", (7,), {"balance": Decimal("-30.00")})
    log.update("ledger", (1,), {"note": "changed", "amount": Decimal("99999999999999.12345")})
    log.delete("ledger", (2,))
    log.insert("ledger", {"id": 9, "note": None, "amount": Decimal("-0.00001")})
    log.insert("nopk_events", {"msg": "one", "n": 1})
    log.insert("nopk_events", {"msg": "two", "n": 2})
    log.update("nopk_events", ("one",), {"n": 11})
    log.delete("nopk_events", ("seeded",))


def schema_and_truncate(log: ChangeLog, rng: random.Random) -> None:
    """A column added then used; TRUNCATE then inserts into the emptied table."""
    log.conn.execute("ALTER TABLE customers ADD COLUMN nickname text")
    for i in (1, 3, 6):
        log.update("customers", (i,), {"nickname": f"nick {i}"})
    row = customer_row(rng, 70)
    row["nickname"] = "newcomer"
    log.insert("customers", row)
    log.truncate("order_lines")
    for n in (1, 2):
        log.insert("order_lines", {"order_id": 1, "line_no": n, "qty": n, "price": Decimal("1.50")})
    log.update("orders", (1,), {"total": Decimal("3.00")})
