"""``snapshot.locking.mode``: the table locks held while the snapshot reads the table structures.

Debezium's ``OracleSnapshotChangeEventSource`` with ``shared`` (the default) locks every captured
table ``IN ROW SHARE MODE`` before it reads the snapshot SCN and the structures, and releases the
locks (rollback) before the rows are read: no ``ALTER TABLE`` can change a structure in between,
while inserts, updates and deletes go on. ``none`` takes no lock (a DDL in that instant may make the
recorded structure differ from the rows read ``AS OF SCN``).

The locks are held by a connection of their own in the PDB: the snapshot's connection reads the SCN
in ``CDB$ROOT``, and Oracle does not switch a session's container inside an open transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.errors import (
    OracleConnectionLostError,
    OraclePrerequisiteError,
)

log = logging.getLogger(__name__)


def lock_statement(owner: str, table: str) -> str:
    return f'LOCK TABLE "{owner}"."{table}" IN ROW SHARE MODE'


@contextmanager
def schema_locks(config: OracleConnectorConfig, tables: list[tuple[str, str]]) -> Iterator[None]:
    """Hold ROW SHARE locks on ``tables`` for the block (``snapshot.locking.mode=shared``)."""
    if config.snapshot_locking_mode != "shared" or not tables:
        yield
        return
    conn = oraconn.connect(config)
    try:
        conn.use_pdb()
        for owner, table in tables:
            try:
                conn.execute(lock_statement(owner, table))
            except OracleConnectionLostError:
                raise
            except Exception as exc:  # ORA-01031 and the like: say which lock and how to do without it
                user = config.database_user or "<user>"
                problem = f"snapshot.locking.mode=shared: {lock_statement(owner, table)} failed ({exc})"
                fix = (f"GRANT LOCK ANY TABLE TO {user}; (as Debezium's Oracle documentation asks), or set "
                       "snapshot.locking.mode=none")
                raise OraclePrerequisiteError([(problem, fix)]) from exc
        log.info("snapshot.locking.mode=shared: %d tables locked in ROW SHARE mode for the schema read", len(tables))
        yield
    finally:
        try:
            conn.raw.rollback()  # releases the locks
        finally:
            conn.close()
