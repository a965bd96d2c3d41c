"""Dropping a test's replication slot once the capture that used it has stopped.

A walsender ends asynchronously after its replication connection closes, so a slot dropped right
after a capture returns can still be "active for PID n" (a test teardown failed on exactly that).
"""

from __future__ import annotations

import time

import psycopg


def drop_slot(admin_dsn: str, slot: str, grace_s: float = 10.0) -> None:
    """Drop ``slot`` if it exists: wait up to ``grace_s`` for its walsender to end, then end it."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        deadline = time.monotonic() + grace_s
        while True:
            row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                               (slot,)).fetchone()
            if row is None:
                return
            if row[0] is None:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            if time.monotonic() > deadline:  # a killed capture's walsender: end it
                conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
            time.sleep(0.1)


def drop_database_slots(admin_dsn: str, database: str) -> None:
    """Every replication slot of ``database``, ending their walsenders (a test reusing the name)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        slots = [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                                            (database,)).fetchall()]
    for slot in slots:
        drop_slot(admin_dsn, slot, grace_s=0)
