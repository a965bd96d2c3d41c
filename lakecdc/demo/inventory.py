"""The demo's source database: an inventory schema, its seed rows and a workload that exercises CDC.

Tables (varied types on purpose: numeric, timestamptz, timestamp, date, jsonb, uuid, text[], bool)::

    customers(id serial pk, name, email unique, balance numeric(12,2), created_at timestamptz, active, tags text[])
    products(id int pk, sku, description, price numeric(10,2), weight_kg numeric(8,3), attrs jsonb, launched date)
    orders(id bigint pk, customer_id, placed_at timestamp, status, total numeric(12,2), ref uuid)
    order_lines(order_id bigint, line_no int, product_id, qty, price numeric(10,2), pk (order_id, line_no))

The workload makes, in order: multi-table order transactions, updates, deletes, a primary-key
change (a product renumbered), an added column (``customers.loyalty_points``) then used, and a
TRUNCATE of ``order_lines`` followed by new lines.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

TABLES = ("customers", "products", "orders", "order_lines")
KEYS = {"customers": ("id",), "products": ("id",), "orders": ("id",), "order_lines": ("order_id", "line_no")}

SCHEMA_SQL = """
CREATE TABLE customers (
  id serial PRIMARY KEY, name text NOT NULL, email text UNIQUE, balance numeric(12,2),
  created_at timestamptz, active boolean, tags text[]);
CREATE TABLE products (
  id int PRIMARY KEY, sku text NOT NULL, description text, price numeric(10,2), weight_kg numeric(8,3),
  attrs jsonb, launched date);
CREATE TABLE orders (
  id bigint PRIMARY KEY, customer_id int, placed_at timestamp, status text, total numeric(12,2), ref uuid);
CREATE TABLE order_lines (
  order_id bigint, line_no int, product_id int, qty int, price numeric(10,2), PRIMARY KEY (order_id, line_no));
"""


class InventoryWorkload:
    """Seeds the schema and applies the change workload through a psycopg connection."""

    def __init__(self, conn: Any, seed: int = 7, customers: int = 200, products: int = 50) -> None:
        self.conn = conn
        self.rng = random.Random(seed)
        self.n_customers = customers
        self.n_products = products
        self.next_order = 1
        #: rows the workload changed (``run``; the seed's rows are the snapshot, not changes), each
        #: one change event; a TRUNCATE counts once, as it is one event
        self.changes = 0

    # ------------------------------------------------------------------ set-up

    def create(self) -> None:
        with self.conn.transaction():
            for statement in SCHEMA_SQL.split(";"):
                if statement.strip():
                    self.conn.execute(statement)

    def seed(self, orders: int = 300) -> None:
        rng = self.rng
        base = datetime(2024, 1, 1, tzinfo=timezone.utc)
        with self.conn.transaction():
            for i in range(1, self.n_customers + 1):
                self.conn.execute(
                    "INSERT INTO customers (name, email, balance, created_at, active, tags) VALUES (%s,%s,%s,%s,%s,%s)",
                    (f"Customer {i}", f"c{i}@example.com", Decimal(rng.randint(-5000, 500000)) / 100,
                     base + timedelta(seconds=rng.randint(0, 10**7), microseconds=rng.randint(0, 999999)),
                     rng.random() < 0.8, rng.sample(["gold", "eu", "b2b", "new", "vip"], rng.randint(0, 3))))
            for i in range(1, self.n_products + 1):
                self.conn.execute(
                    "INSERT INTO products VALUES (%s,%s,%s,%s,%s,%s,%s)",
                    (i, f"SKU-{i:04d}", f"Product number {i}", Decimal(rng.randint(100, 99999)) / 100,
                     Decimal(rng.randint(1, 99999)) / 1000, json.dumps({"color": rng.choice(["red", "blue"]),
                                                                        "size": rng.randint(1, 5)}),
                     date(2020, 1, 1) + timedelta(days=rng.randint(0, 1500))))
        for _ in range(orders):
            self.new_order()

    # ------------------------------------------------------------------ changes

    def new_order(self) -> None:
        """One transaction over two tables: an order and its 1-3 lines."""
        rng = self.rng
        order_id = self.next_order
        self.next_order += 1
        lines = [(rng.randint(1, self.n_products), rng.randint(1, 5), Decimal(rng.randint(100, 9999)) / 100)
                 for _ in range(rng.randint(1, 3))]
        total = sum(qty * price for _, qty, price in lines)
        with self.conn.transaction():
            self.conn.execute("INSERT INTO orders VALUES (%s,%s,%s,%s,%s,%s)",
                              (order_id, rng.randint(1, self.n_customers),
                               datetime(2025, 1, 1) + timedelta(seconds=rng.randint(0, 10**7)), "new", total,
                               uuid.UUID(int=rng.getrandbits(128))))
            for n, (product, qty, price) in enumerate(lines, start=1):
                self.conn.execute("INSERT INTO order_lines VALUES (%s,%s,%s,%s,%s)", (order_id, n, product, qty, price))
        self.changes += 1 + len(lines)

    def update_some(self) -> None:
        rng = self.rng
        with self.conn.transaction():
            cursors = [self.conn.execute(
                "UPDATE customers SET balance = balance + %s, active = NOT active WHERE id = %s",
                (Decimal(rng.randint(-1000, 1000)) / 100, rng.randint(1, self.n_customers))) for _ in range(5)]
            # the order or product may be gone (deleted, renumbered): then nothing changes
            cursors.append(self.conn.execute("UPDATE orders SET status = 'shipped' WHERE id = %s",
                                             (rng.randint(1, self.next_order - 1),)))
            cursors.append(self.conn.execute(
                "UPDATE products SET attrs = attrs || %s::jsonb WHERE id = %s",
                (json.dumps({"promo": rng.randint(1, 50)}), rng.randint(1, self.n_products))))
        self.changes += sum(cur.rowcount for cur in cursors)

    def delete_order(self) -> None:
        order_id = self.rng.randint(1, self.next_order - 1)
        with self.conn.transaction():
            cur = self.conn.execute("DELETE FROM order_lines WHERE order_id = %s", (order_id,))
            lines = cur.rowcount
            cur = self.conn.execute("DELETE FROM orders WHERE id = %s", (order_id,))
        self.changes += lines + cur.rowcount

    def change_primary_key(self) -> None:
        """A product is renumbered: Debezium emits delete(old key) + tombstone + create(new key)."""
        self.conn.execute("UPDATE products SET id = id + 1000 WHERE id = 7")
        self.changes += 2

    def add_column(self) -> None:
        # No DEFAULT: PostgreSQL would give existing rows the default without any change event, so
        # silver (which only sees events) could not know it; rows not updated afterwards stay null.
        self.conn.execute("ALTER TABLE customers ADD COLUMN loyalty_points integer")
        with self.conn.transaction():
            for customer in self.rng.sample(range(1, self.n_customers + 1), 20):
                self.conn.execute("UPDATE customers SET loyalty_points = %s WHERE id = %s",
                                  (self.rng.randint(1, 500), customer))
        self.changes += 20

    def truncate_lines(self) -> None:
        self.conn.execute("TRUNCATE order_lines")
        self.changes += 1

    def run(self, seconds: float, on_step: Callable[[str], None] | None = None) -> None:
        """The workload: about ``seconds`` long, every kind of change at least once."""
        self.changes = 0
        steps: list[tuple[str, Callable[[], None]]] = [
            ("orders", self.new_order), ("updates", self.update_some), ("delete", self.delete_order)]
        special = {0.3: ("primary-key change", self.change_primary_key), 0.5: ("added column", self.add_column),
                   0.8: ("truncate order_lines", self.truncate_lines)}
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            for mark in sorted(special):
                if elapsed >= mark * seconds:
                    name, step = special.pop(mark)
                    step()
                    if on_step:
                        on_step(name)
            name, step = self.rng.choice(steps)
            step()
            time.sleep(0.02)
        for _, (name, step) in sorted(special.items()):
            step()
            if on_step:
                on_step(name)
        for _ in range(5):  # rows after the truncate, so order_lines is not left empty
            self.new_order()
