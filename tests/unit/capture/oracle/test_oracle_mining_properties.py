"""Oracle properties that change what the capture issues: the LogMiner query filter, the archive
logs mined, the session's lifetime, the mining connection's restarts, and the snapshot's
table locks (Debezium 3.6.3's ``OracleConnectorConfig`` names and defaults).

Each test looks at the statements the capture issues on the replay connection (oracle_replay.py:
an unrecorded statement fails) and at the records it emits.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from oracle_recorded import RecordedOracle, customers
from test_oracle_capture import BASE, _tx_rows, install, run, snapshot_db, stream_once  # noqa: F401 (fixture)

from lakecdc.capture.oracle.config import ORACLE_SYSTEM_SCHEMAS, OracleConnectorConfig
from lakecdc.capture.oracle.logminer import query as q
from lakecdc.errors import ConfigError

A, B = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")


def _contents_sql(db: RecordedOracle) -> list[str]:
    return [sql for c in db.connections for sql, _ in c.executed if "V$LOGMNR_CONTENTS" in sql]


# -- log.mining.query.filter.mode ------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "lists", "predicate"), [
    ("in", {"table.include.list": "DEBEZIUM\\.CUSTOMERS,debezium.orders"},
     "(TABLE_NAME IS NULL OR UPPER(SEG_OWNER || '.' || TABLE_NAME) IN ('DEBEZIUM.CUSTOMERS', 'DEBEZIUM.ORDERS'))"),
    ("in", {"schema.include.list": "DEBEZIUM", "table.include.list": "", "table.exclude.list": "DEBEZIUM.AUDIT",
            "log.mining.username.exclude.list": "batch"},
     "(SEG_OWNER IS NULL OR UPPER(SEG_OWNER) IN ('UNKNOWN', 'DEBEZIUM')) AND "
     "(TABLE_NAME IS NULL OR UPPER(SEG_OWNER || '.' || TABLE_NAME) NOT IN ('DEBEZIUM.AUDIT')) AND "
     "UPPER(USERNAME) NOT IN ('BATCH')"),
    ("in", {"signal.data.collection": "ORCLPDB1.DEBEZIUM.SIGNALS"},
     "(TABLE_NAME IS NULL OR UPPER(SEG_OWNER || '.' || TABLE_NAME) = 'DEBEZIUM.SIGNALS' OR "
     "UPPER(SEG_OWNER || '.' || TABLE_NAME) IN ('DEBEZIUM.CUSTOMERS'))"),
    ("regex", {"table.include.list": "DEBEZIUM\\.CUST.*,^OTHER\\..*$", "log.mining.username.include.list": "app"},
     "(TABLE_NAME IS NULL OR (REGEXP_LIKE(SEG_OWNER || '.' || TABLE_NAME, '^DEBEZIUM\\.CUST.*$', 'i') OR "
     "REGEXP_LIKE(SEG_OWNER || '.' || TABLE_NAME, '^OTHER\\..*$', 'i'))) AND UPPER(USERNAME) IN ('UNKNOWN', 'APP')"),
    ("regex", {"schema.exclude.list": "SCRATCH.*,TMP", "table.include.list": ""},
     "(SEG_OWNER IS NULL OR SEG_OWNER = 'UNKNOWN' OR "
     "(NOT REGEXP_LIKE(SEG_OWNER, '^SCRATCH.*$', 'i') AND NOT REGEXP_LIKE(SEG_OWNER, '^TMP$', 'i')))"),
])
def test_query_filter_mode_pushes_the_lists_into_the_logminer_query(
        install: Any, mode: str, lists: dict[str, str], predicate: str) -> None:
    """As Debezium's AbstractLogMinerQueryBuilder: the DML rows are narrowed in the query; rows
    LogMiner could not name and the signal table's rows always come back."""
    extra = {"log.mining.query.filter.mode": mode, **lists}
    cfg = OracleConnectorConfig.from_properties({**BASE, **extra})
    expected = q.contents_query(ORACLE_SYSTEM_SCHEMAS, False, predicate)
    db = RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(A, 110, [1], 120))
    db.contents_variants = [expected]
    install(db)
    records = stream_once(db, 100, **extra)
    assert [r.key["ID"] for r in records] == ([] if "username.include" in str(lists) else [1])
    issued = _contents_sql(db)
    assert issued == [expected]
    # DDL (every table's, for the schema history) and transaction control are not narrowed
    assert f"(OPERATION_CODE IN (1, 2, 3) AND {predicate}) OR OPERATION_CODE = 5" in issued[0]
    assert "OPERATION_CODE IN (6, 7, 36)" in issued[0]
    assert cfg.log_mining_query_filter_mode == mode


def test_query_filter_mode_none_leaves_filtering_to_the_connector(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(A, 110, [1], 120)))
    stream_once(db, 100, **{"log.mining.query.filter.mode": "none", "log.mining.username.include.list": "DEBEZIUM"})
    (issued,) = set(_contents_sql(db))
    assert "REGEXP_LIKE" not in issued and "UPPER(" not in issued


def test_query_filter_literal_quotes_are_doubled() -> None:
    assert q.filter_predicate("in", ("O'BRIEN", None), (None, None)) == \
        "(SEG_OWNER IS NULL OR UPPER(SEG_OWNER) IN ('UNKNOWN', 'O''BRIEN'))"


# -- snapshot.locking.mode -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["shared", None])
def test_shared_locking_holds_row_share_locks_for_the_schema_read(install: Any, tmp_path: Any,
                                                                  mode: str | None) -> None:
    """``shared`` (Debezium's default): the captured tables are locked IN ROW SHARE MODE before the
    snapshot SCN is read and released (rollback, connection closed) before any row is read."""
    db = install(snapshot_db())
    db.scns = [1000, 1000]
    lock_open_at_read: list[bool] = []
    read = db._snapshot

    def snapshot(match: Any) -> Any:
        lock_open_at_read.extend(not db.connections[n].closed for n, _ in db.lock_statements)
        return read(match)

    db._snapshot = snapshot  # type: ignore[method-assign]
    extra = {"snapshot.mode": "initial_only"} | ({"snapshot.locking.mode": mode} if mode else {})
    sink = run(db, tmp_path, **extra)
    assert [r.key["ID"] for r in sink.records if r.op == "r"] == [1001, 1002, 1003]
    assert db.lock_statements == [(db.lock_statements[0][0], 'LOCK TABLE "DEBEZIUM"."CUSTOMERS" IN ROW SHARE MODE')]
    locker = db.connections[db.lock_statements[0][0]]
    assert locker.executed[-1][0] == 'LOCK TABLE "DEBEZIUM"."CUSTOMERS" IN ROW SHARE MODE'
    assert ("ALTER SESSION SET CONTAINER = ORCLPDB1", {}) in locker.executed  # the tables live in the PDB
    assert not any("CURRENT_SCN" in sql for sql, _ in locker.executed)
    assert lock_open_at_read == [False]  # released before the rows are read


def test_locking_mode_none_takes_no_lock(install: Any, tmp_path: Any) -> None:
    db = install(snapshot_db())
    db.scns = [1000, 1000]
    sink = run(db, tmp_path, **{"snapshot.mode": "initial_only", "snapshot.locking.mode": "none"})
    assert [r.key["ID"] for r in sink.records if r.op == "r"] == [1001, 1002, 1003]
    assert db.lock_statements == []
    assert not any(sql.startswith("LOCK TABLE") for c in db.connections for sql, _ in c.executed)


def test_custom_locking_mode_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="snapshot.locking.mode 'custom'"):
        OracleConnectorConfig.from_properties({**BASE, "snapshot.locking.mode": "custom"})


# -- archive.log.hours -----------------------------------------------------------------------------

def _two_archive_logs(db: RecordedOracle) -> RecordedOracle:
    """1_6 (SCN 1..130) began 10 h ago, 1_7 (130..300) 1 h ago; the online log holds 300 on."""
    db.archived_logs = [("/arch/1_6.arc", 1, 130, 6, db.now - datetime.timedelta(hours=10)),
                        ("/arch/1_7.arc", 130, 300, 7, db.now - datetime.timedelta(hours=1))]
    db.archived_next_change = 300
    return db


def test_archive_log_hours_asks_only_for_recent_archive_logs(install: Any) -> None:
    rows = _tx_rows(A, 140, [1], 150)
    db = install(_two_archive_logs(RecordedOracle([customers()], scns=[200], redo_rows=rows)))
    assert [r.key["ID"] for r in stream_once(db, 120)] == [1]
    assert "/arch/1_6.arc" in db.files_log  # 0 (the default): every archive log

    db = install(_two_archive_logs(RecordedOracle([customers()], scns=[200], redo_rows=rows)))
    assert [r.key["ID"] for r in stream_once(db, 135, **{"archive.log.hours": "5"})] == [1]
    assert db.files_log == ["/arch/1_7.arc", "/redo/redo01.log"]
    recent = [b for c in db.connections for sql, b in c.executed
              if "FIRST_TIME >= SYSDATE - :archive_hours / 24" in sql]
    assert recent and all(b["archive_hours"] == 5 for b in recent)


def test_archive_log_hours_makes_older_positions_unresumable(install: Any) -> None:
    """Resuming inside a log begun before the last N hours: the redo is not available (Debezium
    fails the same way); with snapshot.mode=when_needed a new snapshot is taken."""
    from lakecdc.capture.oracle.connector import OracleConnector
    from lakecdc.capture.oracle.logminer.session import LogsUnavailableError

    rows = _tx_rows(A, 140, [1], 150)
    db = install(_two_archive_logs(RecordedOracle([customers()], scns=[200], redo_rows=rows)))
    with pytest.raises(LogsUnavailableError, match="archive.log.hours=5"):
        stream_once(db, 120, **{"archive.log.hours": "5"})
    hours = OracleConnector(OracleConnectorConfig.from_properties({**BASE, "archive.log.hours": "5"}),
                            show_progress=False)
    assert not hours.can_resume_streaming({"scn": "120"})
    assert OracleConnector(OracleConnectorConfig.from_properties(BASE), show_progress=False).can_resume_streaming(
        {"scn": "120"})


# -- log.mining.session.max.ms, log.mining.restart.connection ---------------

def _stream(db: RecordedOracle, start_scn: int, clock: Any = None, **extra: str) -> list[Any]:
    """Stream from ``start_scn`` until the recorded redo is consumed, ``clock`` as the monotonic clock."""
    from lakecdc.capture.oracle.connector import OracleConnector
    from lakecdc.capture.oracle.streaming import OracleStreamingSource

    connector = OracleConnector(OracleConnectorConfig.from_properties({**BASE, **extra}), show_progress=False)
    kwargs = {"clock": clock} if clock is not None else {}
    source = OracleStreamingSource(connector.config, connector.modes, connector.namer, sleep=lambda s: None, **kwargs)
    source.start({"scn": str(start_scn)})
    out: list[Any] = []
    for _ in range(30):
        source.poll(out, 1000, 0)
    source.close()
    return out


def _ticking() -> Any:
    """A fake monotonic clock one second further at every reading."""
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]
    return clock


def _workload() -> list[Any]:
    return _tx_rows(A, 110, [1, 2, 3], 150) + _tx_rows(B, 120, [4, 5], 130)


def _mining(db: RecordedOracle) -> list[Any]:
    return [c for c in db.connections if any("V$LOGMNR_CONTENTS" in sql for sql, _ in c.executed)]


def test_session_max_ms_restarts_the_logminer_session_without_loss_or_duplicates(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_workload()))
    records = _stream(db, 100, clock=_ticking(), **{"log.mining.session.max.ms": "1500"})
    assert [r.key["ID"] for r in records] == [4, 5, 1, 2, 3]
    # one window (100, 200], mined in several sessions, each after the last SCN the previous one read whole
    assert len(db.sessions) > 2 and all(end == 200 for _, end in db.sessions)
    starts = [start for start, _ in db.sessions]
    assert starts[0] == 100 and starts == sorted(set(starts))
    ends = sum(1 for sql, _ in _mining(db)[0].executed if "END_LOGMNR" in sql)
    assert ends == len(db.sessions)  # each session ended (its PGA released) before the next one started
    assert len(_mining(db)) == 1  # without log.mining.restart.connection the connection stays

    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_workload()))
    assert [r.key["ID"] for r in _stream(db, 100, clock=_ticking())] == [4, 5, 1, 2, 3]
    assert db.sessions == [(100, 200)]  # 0 (the default): no restart


def test_restart_connection_reconnects_at_a_session_restart(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_workload()))
    records = _stream(db, 100, clock=_ticking(), **{"log.mining.session.max.ms": "1500",
                                                    "log.mining.restart.connection": "true"})
    assert [r.key["ID"] for r in records] == [4, 5, 1, 2, 3]
    mining = _mining(db)
    assert len(mining) == len(db.sessions) > 2  # a new connection per session
    assert all(c.closed for c in mining)
    assert all(not any(sql.endswith("= ORCLPDB1") for sql, _ in c.executed) for c in mining)  # CDB$ROOT only


@pytest.mark.parametrize("restart", [True, False])
def test_restart_connection_reconnects_at_a_log_switch(install: Any, restart: bool) -> None:
    db = install(RecordedOracle([customers()], scns=[130, 200], redo_rows=_workload()))
    db.online_seq = [8, 9]  # the second window's online log is a new one: a log switch
    extra = {"log.mining.restart.connection": "true"} if restart else {}
    assert [r.key["ID"] for r in _stream(db, 100, **extra)] == [4, 5, 1, 2, 3]
    assert db.sessions == [(100, 130), (130, 200)]
    assert len(_mining(db)) == (2 if restart else 1)


def test_an_open_transaction_never_holds_the_mining_window_start(install: Any) -> None:
    """Why log.mining.window.max.ms is listed without effect: Debezium advances a window start held
    back by a long-open transaction; lakecdc's windows never are (the open rows stay buffered)."""
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_workload()))
    windows = {"log.mining.batch.size.min": "10", "log.mining.batch.size.default": "20",
               "log.mining.batch.size.increment": "1", "log.mining.batch.size.max": "20"}
    assert [r.key["ID"] for r in _stream(db, 100, **windows)] == [4, 5, 1, 2, 3]
    # tx A is open from SCN 110 to 150; every window starts where the previous one ended
    assert db.sessions == [(100, 120), (120, 140), (140, 160), (160, 180), (180, 200)]


def test_a_refused_lock_names_the_table_and_the_fix(install: Any, tmp_path: Any) -> None:
    import oracledb

    from lakecdc.capture.oracle.errors import OraclePrerequisiteError

    db = install(snapshot_db())
    db.scns = [1000, 1000]
    connect = db.connect

    def without_lock_privilege(config: Any = None) -> Any:
        conn = connect(config)

        def refuse(binds: Any) -> Any:
            raise oracledb.DatabaseError("ORA-01031: insufficient privileges")
        conn.pattern_handlers = [(p, refuse if p.pattern.startswith("LOCK") else h) for p, h in conn.pattern_handlers]
        return conn

    from lakecdc.capture.oracle import connection as oraconn

    oraconn.set_connection_factory(without_lock_privilege)
    with pytest.raises(OraclePrerequisiteError,
                       match=r'(?s)LOCK TABLE "DEBEZIUM"\."CUSTOMERS".*ORA-01031.*'
                             r'GRANT LOCK ANY TABLE TO c##dbzuser.*snapshot.locking.mode=none'):
        run(db, tmp_path, **{"snapshot.mode": "initial_only"})
    assert db.snapshot_statements == []  # no row was read
