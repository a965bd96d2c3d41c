"""The chaos suite's PostgreSQL workload: every key shape, keyless rows, TOAST key moves, TRUNCATE, DDL.

On top of the e2e random workload (``RandomWorkload``: mixed types, composite keys, REPLICA IDENTITY
FULL, transactions of 1-6 operations over several tables, key changes, delete and re-insert), it adds:

- ``notes``  text primary key with an out-of-line (TOAST) body: key changes that leave the body
  untouched, so the create event carries Debezium's unavailable-value placeholder;
- ``tokens`` uuid primary key with a TOAST payload: the same with a uuid key;
- ``nopk_events`` (no primary key): identical rows inserted more than once, each a change of its own;
- a column added to ``orders`` mid-stream, and TRUNCATE of ``order_lines`` now and then.

Everything goes through ``ChangeLog``, which records the events bronze must hold.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable
from typing import Any

from workloads import mariadb_scenario, pg_scenario
from workloads.changelog import ChangeLog
from workloads.pg_random import RandomWorkload

KEYS: dict[str, tuple[str, ...]] = {**pg_scenario.KEYS, "notes": ("code",), "tokens": ("id",)}
KEYLESS = pg_scenario.KEYLESS

SCHEMA = """
CREATE TABLE notes (code text PRIMARY KEY, title text, body text);
ALTER TABLE notes ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE tokens (id uuid PRIMARY KEY, n int, payload text);
ALTER TABLE tokens ALTER COLUMN payload SET STORAGE EXTERNAL;
"""


def toast(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(2500, 6000)))


def in_transactions(log: ChangeLog, rng: random.Random, step: Callable[[], None], operations: int,
                    largest: int) -> None:
    """``operations`` calls of ``step``, in source transactions of 1 to ``largest`` of them."""
    done = 0
    while done < operations:
        size = rng.randint(1, largest)
        with log.transaction():
            for _ in range(size):
                step()
        done += size


def create_schema(conn: Any) -> None:
    pg_scenario.create_schema(conn)
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


class ChaosWorkload(RandomWorkload):
    """``RandomWorkload`` plus the chaos tables and events (module docstring), from one seed."""

    def __init__(self, log: ChangeLog, seed: int) -> None:
        super().__init__(log, seed)
        self.serial = 0
        self.altered = False

    def seed_rows(self) -> None:
        """Rows the initial snapshot reads (identical keyless rows among them)."""
        pg_scenario.seed(self.log, self.rng)  # records its own snapshot rows
        with self.log.conn.transaction():
            for i in range(8):
                self.log.conn.execute("INSERT INTO notes VALUES (%s, %s, %s)",
                                      (f"note-{i}", f"t{i}", toast(self.rng)))
                self.log.conn.execute("INSERT INTO tokens VALUES (%s, %s, %s)",
                                      (uuid.UUID(int=self.rng.getrandbits(128)), i, toast(self.rng)))
            for _ in range(3):  # three identical snapshot rows of a table without a key
                self.log.conn.execute("INSERT INTO nopk_events VALUES ('snap-dup', 7)")
        for table, key in (("notes", ("code",)), ("tokens", ("id",))):
            _, rows = self.log.run(f"SELECT {key[0]} FROM {table}")
            for (value,) in rows:
                self.log._note(table, "r", (value,))
        for _ in range(3):
            self.log._note("nopk_events", "r", ("snap-dup",))

    def chaos_step(self) -> None:
        rng, log = self.rng, self.log
        roll = rng.random()
        self.serial += 1
        if roll < 0.10:
            table = rng.choice(["notes", "tokens"])
            live = sorted(log.live[table], key=repr)
            if live and rng.random() < 0.6:  # key change, TOAST column untouched
                new = f"note-x{self.serial}" if table == "notes" else uuid.UUID(int=rng.getrandbits(128))
                log.update(table, rng.choice(live), {KEYS[table][0]: new})
            elif live and rng.random() < 0.5:
                log.update(table, rng.choice(live), {"title" if table == "notes" else "n":
                                                     f"v{self.serial}" if table == "notes" else self.serial})
            elif table == "notes":
                log.insert("notes", {"code": f"note-n{self.serial}", "title": "new", "body": toast(rng)})
            else:
                log.insert("tokens", {"id": uuid.UUID(int=rng.getrandbits(128)), "n": 0, "payload": toast(rng)})
        elif roll < 0.16:
            for _ in range(rng.randint(2, 3)):  # identical rows of a keyless table
                log.insert("nopk_events", {"msg": f"dup-{self.serial}", "n": self.serial})
        elif roll < 0.165 and log.live["order_lines"]:
            log.truncate("order_lines")
        elif roll < 0.17 and not self.altered:
            log.conn.execute("ALTER TABLE orders ADD COLUMN note text")
            self.altered = True
        else:
            self.step()

    def run_for(self, operations: int) -> None:
        in_transactions(self.log, self.rng, self.chaos_step, operations, 6)


class MariaDbChaosWorkload:
    """The MariaDB scenario tables plus a keyless one, with a seeded random mix (``run_for``)."""

    KEYS: dict[str, tuple[str, ...]] = {**mariadb_scenario.KEYS, "nopk_events": ("msg",)}
    KEYLESS = ("nopk_events",)

    def __init__(self, log: ChangeLog, seed: int) -> None:
        self.log = log
        self.rng = random.Random(seed)
        self.next_id = 10_000

    def seed_rows(self) -> None:
        self.log.run("CREATE TABLE nopk_events (msg VARCHAR(40) NOT NULL, n INT)")
        with self.log.transaction():
            for _ in range(3):  # identical snapshot rows of a table without a key
                self.log.run("INSERT INTO nopk_events VALUES ('snap-dup', 7)")
        mariadb_scenario.create_and_seed(self.log, self.rng)  # notes every table's snapshot rows

    def step(self) -> None:
        rng, log = self.rng, self.log
        if rng.random() < 0.08:
            self.next_id += 1
            for _ in range(rng.randint(2, 3)):
                log.insert("nopk_events", {"msg": f"dup-{self.next_id}", "n": self.next_id})
            return
        table = rng.choice(list(mariadb_scenario.KEYS))
        live = sorted(log.live[table])
        roll = rng.random()
        if not live or roll < 0.4:
            self.next_id += 1
            key = (rng.randint(1, 50), self.next_id) if table == "order_lines" else (self.next_id,)
            log.insert(table, mariadb_scenario.random_row(table, rng, key))
        elif roll < 0.85:
            key = rng.choice(live)
            fresh = mariadb_scenario.random_row(table, rng, key)
            names = [c for c in fresh if c not in self.KEYS[table]]
            log.update(table, key, {c: fresh[c] for c in rng.sample(names, rng.randint(1, len(names)))})
        else:
            log.delete(table, rng.choice(live))

    def run_for(self, operations: int) -> None:
        in_transactions(self.log, self.rng, self.step, operations, 5)
