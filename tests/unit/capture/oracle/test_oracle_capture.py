"""Oracle capture on the replay connection: seed S2 golden events, snapshot, rollback, restart.

No Oracle database runs here: every statement is answered from recorded result sets
(oracle_recorded.py) behind python-oracledb's DB-API shape (oracle_replay.py).
"""

from __future__ import annotations

import datetime
import json
import time
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from oracle_recorded import RecordedOracle, Table, customers, delete_sql, insert_sql, redo, update_sql
from oracle_replay import ReplayMismatchError
from shared_paths import SHARED_ROOT

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.connector import OracleConnector
from lakecdc.capture.oracle.errors import OraclePrerequisiteError
from lakecdc.events.serde import RecordEncoder
from lakecdc.events.source import DEBEZIUM_VERSION
from lakecdc.transport.offsets import FileOffsetStore

SEED_XID_6_28_807 = bytes.fromhex("06001c0027030000")  # XIDUSN 6, XIDSLT 28, XIDSQN 807 (little-endian)
SEED_XID_6_9_809 = bytes.fromhex("0600090029030000")
BASE = {"topic.prefix": "server1", "database.hostname": "db", "database.dbname": "ORCLCDB",
        "database.pdb.name": "ORCLPDB1", "database.user": "c##dbzuser", "database.password": "secret-pw",
        "table.include.list": "DEBEZIUM\\.CUSTOMERS"}


class ListSink:
    """Data, heartbeat and transaction records in ``records``; the schema change topic's
    (``<topic.prefix>``, on by default as in Debezium) in ``schema_changes``."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.schema_changes: list[Any] = []
        self.flushed = 0

    def send(self, records: list[Any]) -> None:
        for r in records:
            (self.schema_changes if r.topic == BASE["topic.prefix"] else self.records).append(r)

    def flush(self) -> None:
        self.flushed = len(self.records)


@pytest.fixture
def install():
    def _install(db: RecordedOracle) -> RecordedOracle:
        oraconn.set_connection_factory(db.connect)
        return db
    yield _install
    oraconn.set_connection_factory(None)


def config(**extra: str) -> OracleConnectorConfig:
    return OracleConnectorConfig.from_properties({**BASE, **extra})


def run(db: RecordedOracle, tmp_path: Any, sink: ListSink | None = None, **extra: str) -> ListSink:
    sink = sink or ListSink()
    cfg = config(**extra)
    store = FileOffsetStore(tmp_path / "offsets.json")
    settings = CoordinatorSettings(snapshot_mode=cfg.snapshot_mode_normalized, commit_interval_s=0.0,
                                   stop_when_idle_s=0.0, poll_timeout_s=0.0)
    connector = OracleConnector(cfg, show_progress=False)
    coordinator = CaptureCoordinator(connector, sink, store, settings)
    coordinator.run()
    store.close()
    return sink


def stream_once(db: RecordedOracle, start_scn: int, pause: float = 0.0, **extra: str) -> list[Any]:
    """Stream from ``start_scn`` until the recorded redo is consumed (no snapshot); ``pause``
    seconds between polls."""
    from lakecdc.capture.oracle.streaming import OracleStreamingSource

    connector = OracleConnector(config(**extra), show_progress=False)
    source = OracleStreamingSource(connector.config, connector.modes, connector.namer, sleep=lambda s: None)
    source.start({"scn": str(start_scn)})
    out: list[Any] = []
    for _ in range(5):
        source.poll(out, 1000, 0)
        time.sleep(pause)
    source.close()
    return out


def seed_value(name: str) -> dict[str, Any]:
    """The payload of a seed S2 example, from the inventory's verbatim JSON (section 2.9)."""
    text = (SHARED_ROOT / "spec" / "seeds-inventory.md").read_text(encoding="utf-8")
    start = text.index(f"**Oracle {name} (S2")
    block = text[text.index("```json", start) + 7:text.index("```", text.index("```json", start) + 7)]
    payload = block[block.index('"payload"'):]
    payload = payload[payload.index("{"):payload.rindex("}")]
    return json.loads(payload[:payload.rindex("}") + 1])


# ---- golden: seed S2 examples, field by field ------------------------------------------------------
SEED_SOURCE_FIELDS = ("name", "ts_ms", "scn", "commit_scn", "ssn", "redo_thread", "user_name")


def check_against_seed(record: Any, seed: dict[str, Any]) -> None:
    value = record.value
    assert value["op"] == seed["op"]
    assert value["before"] == seed["before"]
    assert value["after"] == seed["after"]
    for name in SEED_SOURCE_FIELDS:
        assert value["source"][name] == seed["source"][name], name
    # known, deliberate differences from the 2.1.4 seed (current Debezium's forms):
    assert value["source"]["rs_id"] == "0x" + seed["source"]["rs_id"]  # RS_ID as LogMiner writes it, trimmed
    assert value["source"]["snapshot"] == "false"  # Debezium 3.x: the Enum text, as in the seed's truncate
    assert value["source"]["version"] == DEBEZIUM_VERSION
    # the seed's txId "6.28.807" is Debezium 1.x's USN.SLT.SQN; 3.x writes the raw XID in hex
    usn, slt, sqn = (int(p) for p in seed["source"]["txId"].split("."))
    xid = bytes.fromhex(value["source"]["txId"])
    assert (int.from_bytes(xid[0:2], "little"), int.from_bytes(xid[2:4], "little"),
            int.from_bytes(xid[4:8], "little")) == (usn, slt, sqn)


def test_seed_create_event(install: Any) -> None:
    row = {"ID": "1004", "FIRST_NAME": "Anne", "LAST_NAME": "Kretchmar", "EMAIL": "annek@noanswer.org"}
    db = install(RecordedOracle([customers()], scns=[2122190], redo_rows=[
        redo(2122185, 1, SEED_XID_6_28_807, insert_sql("DEBEZIUM", "CUSTOMERS", row), "DEBEZIUM", "CUSTOMERS",
             1520085154000, user="user"),
        redo(2122185, 7, SEED_XID_6_28_807, ts_ms=1520085154000, user="user", rs_id=" 0x001234.00012345.0124 ", ssn=1),
    ]))
    records = stream_once(db, 2122180)
    assert len(records) == 1
    record = records[0]
    check_against_seed(record, seed_value("create event value, full schema"))
    assert record.topic == "server1.DEBEZIUM.CUSTOMERS"
    assert record.key == {"ID": 1004}
    key_json = json.loads(RecordEncoder(record.key_schema, True).encode(record.key))
    assert key_json["schema"] == {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "ID"}],
                                  "optional": False, "name": "server1.DEBEZIUM.CUSTOMERS.Key"}
    value_schema = json.loads(RecordEncoder(record.value_schema, True).encode(record.value))["schema"]
    after = next(f for f in value_schema["fields"] if f["field"] == "after")
    assert after["name"] == "server1.DEBEZIUM.CUSTOMERS.Value"
    assert [(f["field"], f["type"], f["optional"]) for f in after["fields"]] == [
        ("ID", "int32", False), ("FIRST_NAME", "string", False), ("LAST_NAME", "string", False),
        ("EMAIL", "string", False)]
    src = record.value["source"]
    assert (src["connector"], src["db"], src["schema"], src["table"]) == ("oracle", "ORCLPDB1", "DEBEZIUM", "CUSTOMERS")
    assert src["txId"] == "06001c0027030000" and src["lcr_position"] is None


def test_seed_update_event(install: Any) -> None:
    old = {"ID": "1004", "FIRST_NAME": "Anne", "LAST_NAME": "Kretchmar", "EMAIL": "annek@noanswer.org"}
    db = install(RecordedOracle([customers()], scns=[2125550], redo_rows=[
        redo(2125544, 3, SEED_XID_6_9_809, update_sql("DEBEZIUM", "CUSTOMERS", {"EMAIL": "anne@example.com"}, old),
             "DEBEZIUM", "CUSTOMERS", 1520085811000, user="user"),
        redo(2125544, 7, SEED_XID_6_9_809, ts_ms=1520085811000, user="user", rs_id=" 0x001234.00012345.0124 ", ssn=1),
    ]))
    records = stream_once(db, 2125540)
    assert len(records) == 1
    check_against_seed(records[0], seed_value("update"))


def test_seed_delete_event_and_tombstone(install: Any) -> None:
    old = {"ID": "1004", "FIRST_NAME": "Anne", "LAST_NAME": "Kretchmar", "EMAIL": "anne@example.com"}
    db = install(RecordedOracle([customers()], scns=[2122190], redo_rows=[
        redo(2122184, 2, SEED_XID_6_28_807, delete_sql("DEBEZIUM", "CUSTOMERS", old), "DEBEZIUM", "CUSTOMERS",
             1520085153000, user="user"),
        redo(2122184, 7, SEED_XID_6_28_807, ts_ms=1520085153000, user="user", rs_id=" 0x001234.00012345.0124 ", ssn=1),
    ]))
    records = stream_once(db, 2122180)
    assert [r.is_tombstone for r in records] == [False, True]
    check_against_seed(records[0], seed_value("delete"))
    assert records[1].key == {"ID": 1004} and records[1].topic == records[0].topic
    again = install(RecordedOracle([customers()], scns=[2122190], redo_rows=db.redo_rows))
    assert [r.op for r in stream_once(again, 2122180, **{"tombstones.on.delete": "false"})] == ["d"]


def test_seed_truncate_event(install: Any) -> None:
    xid = bytes.fromhex("02000a0037030000")
    table = Table("DEBEZIUM", "TEST_TABLE", [("ID", "NUMBER", 22, 9, 0, False)], ["ID"])
    db = install(RecordedOracle([table], scns=[13271200], redo_rows=[
        redo(13234397, 5, xid, 'truncate table "DEBEZIUM"."TEST_TABLE";', "DEBEZIUM", "TEST_TABLE", 1638974535000,
             user="user"),
        redo(13271102, 7, xid, ts_ms=1638974535000, user="user", rs_id=" 0x001234.00012345.0124 ", ssn=1),
    ]))
    records = stream_once(db, 13234390, **{"topic.prefix": "oracle_server", "table.include.list": "DEBEZIUM.TEST_TABLE",
                                           "skipped.operations": "none"})
    assert len(records) == 1
    record, seed = records[0], seed_value("truncate")
    assert record.key is None and record.value["before"] is None and record.value["after"] is None
    assert record.value["op"] == "t" and record.value["transaction"] is None
    for name in ("connector", "name", "ts_ms", "snapshot", "db", "sequence", "schema", "table", "txId", "scn",
                 "commit_scn", "lcr_position", "ssn", "redo_thread", "user_name"):
        assert record.value["source"][name] == seed["source"][name], name
    # with Debezium's default skipped.operations=t the truncate is not emitted
    db2 = install(RecordedOracle([table], scns=[13271200], redo_rows=db.redo_rows))
    assert stream_once(db2, 13234390, **{"table.include.list": "DEBEZIUM.TEST_TABLE"}) == []


# ---- transactions ------------------------------------------------------------------------------
def _tx_rows(xid: bytes, first_scn: int, ids: list[int], commit: int | None, rollback: bool = False) -> list[Any]:
    rows = [redo(first_scn + i, 1, xid, insert_sql("DEBEZIUM", "CUSTOMERS", {
        "ID": str(i_d), "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": f"{i_d}@x"}), "DEBEZIUM", "CUSTOMERS",
        rs_id=f" 0x000002.{first_scn + i:08x}.0010 ", ssn=i) for i, i_d in enumerate(ids)]
    if commit is not None:
        rows.append(redo(commit, 36 if rollback else 7, xid))
    return rows


def test_rolled_back_transaction_is_dropped_and_interleaved_commit_order_kept(install: Any) -> None:
    a, b, c = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000"), bytes.fromhex("0c00000001000000")
    rows = _tx_rows(a, 110, [1, 2], 150) + _tx_rows(b, 120, [3], 130, rollback=True) + _tx_rows(c, 125, [4], 140)
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    records = stream_once(db, 100)
    assert [r.key["ID"] for r in records] == [4, 1, 2]  # commit order; 3 rolled back
    assert [r.value["source"]["commit_scn"] for r in records] == ["140", "150", "150"]
    assert [r.value["source"]["txSeq"] for r in records] == [1, 1, 2]


def test_transaction_metadata(install: Any) -> None:
    a = bytes.fromhex("0a00000001000000")
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(a, 110, [1, 2], 150)))
    records = stream_once(db, 100, **{"provide.transaction.metadata": "true"})
    assert [r.topic for r in records] == ["server1.transaction", "server1.DEBEZIUM.CUSTOMERS",
                                          "server1.DEBEZIUM.CUSTOMERS", "server1.transaction"]
    assert records[0].value["status"] == "BEGIN" and records[0].value["id"] == "0a00000001000000"
    assert records[2].value["transaction"] == {"id": "0a00000001000000", "total_order": 2, "data_collection_order": 2}
    assert records[3].value["event_count"] == 2
    assert records[3].value["data_collections"] == [
        {"data_collection": "ORCLPDB1.DEBEZIUM.CUSTOMERS", "event_count": 2}]


def test_primary_key_change_is_delete_tombstone_create(install: Any) -> None:
    a = bytes.fromhex("0a00000001000000")
    old = {"ID": "1", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"}
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=[
        redo(110, 3, a, update_sql("DEBEZIUM", "CUSTOMERS", {"ID": "2"}, old), "DEBEZIUM", "CUSTOMERS"),
        redo(111, 7, a)]))
    records = stream_once(db, 100)
    assert [(r.op, r.key) for r in records] == [("d", {"ID": 1}), (None, {"ID": 1}), ("c", {"ID": 2})]
    assert records[0].headers[0][0] == "__debezium.newkey" and records[2].headers[0][0] == "__debezium.oldkey"


# ---- snapshot + streaming through the coordinator, restart ----------------------------------------
def snapshot_db() -> RecordedOracle:
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    rows = [(1001, "Sally", "Thomas", "sally.thomas@acme.com"), (1002, "George", "Bailey", "gbailey@foobar.com"),
            (1003, "Edward", "Walker", "ed@walker.com")]
    # tx a starts before the window end and commits in the next window (stays open across a restart)
    redo_rows = _tx_rows(a, 1010, [2001], 1040) + _tx_rows(b, 1020, [2002, 2003], 1025)
    return RecordedOracle([customers(rows)], scns=[1000, 1030, 1050], redo_rows=redo_rows)


def test_snapshot_then_streaming_with_restart_no_duplicates_no_loss(install: Any, tmp_path: Any) -> None:
    db = install(snapshot_db())
    db.scns = [1000, 1030]  # the first run stops after mining up to SCN 1030: tx a is still open
    sink = run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0"})
    snap = [r for r in sink.records if r.op == "r"]
    assert [r.key["ID"] for r in snap] == [1001, 1002, 1003]
    assert [r.value["source"]["snapshot"] for r in snap] == ["first", "true", "last"]
    assert all(r.value["source"]["scn"] == "1000" and r.value["source"]["txId"] is None for r in snap)
    # no redo thread in a snapshot: Debezium leaves commit_scn, rs_id, ssn and redo_thread null
    assert all(r.value["source"][k] is None for r in snap for k in ("commit_scn", "rs_id", "ssn", "redo_thread"))
    assert db.snapshot_statements == [
        'SELECT "ID", "FIRST_NAME", "LAST_NAME", "EMAIL" FROM "DEBEZIUM"."CUSTOMERS" AS OF SCN 1000']
    streamed = [r.key["ID"] for r in sink.records if r.op == "c"]
    assert streamed == [2002, 2003]
    offsets = json.loads((tmp_path / "offsets.json").read_text())
    stored = next(iter(offsets.values()))
    assert stored["scn"] == "1009"  # before tx a's first change: a is re-read whole after a restart
    assert stored["commit_scn"].startswith("1025:")
    assert db.sessions[0] == (1000, 1030)

    # restart: the redo up to 1030 is mined again; tx b (commit 1025) is not emitted twice, a is
    db.scns = [1050]
    sink2 = run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0"})
    assert [r.key["ID"] for r in sink2.records] == [2001]
    assert db.sessions[-1] == (1009, 1050)


def test_transaction_open_at_snapshot_scn_is_not_lost(install: Any, tmp_path: Any) -> None:
    """Tx p inserted 3001 before the snapshot SCN (1000) and commits after it: the AS OF SCN read
    cannot see 3001, so streaming must mine from p's start; tx q committed before 1000 (its row is
    in the snapshot) and must not be emitted again."""
    p, qx = bytes.fromhex("0d00000001000000"), bytes.fromhex("0e00000001000000")
    redo_rows = _tx_rows(qx, 990, [1001], 995) + _tx_rows(p, 980, [3001], None) + [redo(1005, 7, p)]
    db = install(RecordedOracle([customers([(1001, "Sally", "Thomas", "s@x")])], scns=[1000, 1010],
                                redo_rows=redo_rows, open_transactions=[(p, 980)]))
    sink = run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0"})
    assert [(r.op, r.key["ID"]) for r in sink.records] == [("r", 1001), ("c", 3001)]
    assert db.sessions[0][0] == 979
    stored = next(iter(json.loads((tmp_path / "offsets.json").read_text()).values()))
    assert "snapshot_pending_tx" not in stored and stored["scn"] == "1010"


def test_prerequisites_named_with_fixes(install: Any, tmp_path: Any) -> None:
    db = snapshot_db()
    db.log_mode = "NOARCHIVELOG"
    db.supplemental_min = "NO"
    db.tables[0].supplemental_all = False
    db.privileges = ("CREATE SESSION",)
    db.roles = ()
    install(db)
    with pytest.raises(OraclePrerequisiteError) as err:
        run(db, tmp_path)
    text = str(err.value)
    for expected in ("ALTER DATABASE ARCHIVELOG", "ALTER DATABASE ADD SUPPLEMENTAL LOG DATA;",
                     'ALTER TABLE "DEBEZIUM"."CUSTOMERS" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;',
                     "GRANT LOGMINING TO C##DBZUSER;", "GRANT SELECT_CATALOG_ROLE TO C##DBZUSER;"):
        assert expected in text
    assert "secret-pw" not in text
    assert len(err.value.missing) == 3 + 4 + 2


def test_unrecorded_statement_fails_loudly() -> None:
    db = RecordedOracle([customers()])
    cur = db.connect().cursor()
    with pytest.raises(ReplayMismatchError, match="unrecorded statement: SELECT 1 FROM DUAL"):
        cur.execute("SELECT 1 FROM DUAL")


# ---- more streaming behaviour ---------------------------------------------------------------------
def test_partial_rollback_removes_the_undone_change(install: Any) -> None:
    a = bytes.fromhex("0a00000001000000")
    one = insert_sql("DEBEZIUM", "CUSTOMERS", {"ID": "1", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"})
    two = insert_sql("DEBEZIUM", "CUSTOMERS", {"ID": "2", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"})
    undo = delete_sql("DEBEZIUM", "CUSTOMERS", {"ID": "2", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"})
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=[
        redo(110, 1, a, one, "DEBEZIUM", "CUSTOMERS", row_id="AAAROW1"),
        redo(111, 1, a, two, "DEBEZIUM", "CUSTOMERS", row_id="AAAROW2"),
        # "rollback to savepoint": LogMiner writes the undo with ROLLBACK = 1
        redo(112, 2, a, undo, "DEBEZIUM", "CUSTOMERS", row_id="AAAROW2", rollback=1),
        redo(113, 7, a)]))
    assert [(r.op, r.key["ID"]) for r in stream_once(db, 100)] == [("c", 1)]


def test_commits_are_tracked_per_redo_thread(install: Any, tmp_path: Any) -> None:
    """RAC: thread 2's commit at SCN 1015 is below thread 1's stored commit (1025) yet not emitted
    before; a restart must emit it (Debezium's per-thread commit_scn)."""
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    rows = _tx_rows(a, 1010, [1], 1025)
    rows_b = [r[:14] + (2,) + r[15:] for r in _tx_rows(b, 1012, [2], 1015)]
    db = install(RecordedOracle([customers()], scns=[1000, 1020], redo_rows=rows))
    run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0", "snapshot.mode": "no_data"})
    db.redo_rows = rows + rows_b  # thread 2's redo arrives late (its log was not yet available)
    db.scns = [1030]
    sink = run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0", "snapshot.mode": "no_data"})
    assert [(r.key["ID"], r.value["source"]["redo_thread"]) for r in sink.records] == [(2, 2), (1, 1)]
    stored = next(iter(json.loads((tmp_path / "offsets.json").read_text()).values()))
    assert [e.split(":")[0] + "@" + e.split(":")[3] for e in stored["commit_scn"].split(",")] == ["1025@1", "1015@2"]


def test_lost_connection_reconnects_without_loss_or_duplicates(install: Any, tmp_path: Any) -> None:
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    db = install(RecordedOracle([customers()], scns=[1000, 1020, 1040],
                                redo_rows=_tx_rows(a, 1010, [1], 1015) + _tx_rows(b, 1025, [2], 1030)))
    db.fail_contents_queries = {1, 3}  # before anything was committed, and after the first commit
    sink = ListSink()
    cfg = config(**{"snapshot.mode": "no_data", "log.mining.sleep.time.default.ms": "0",
                    "log.mining.batch.size.min": "10", "log.mining.batch.size.default": "20",
                    "log.mining.batch.size.increment": "1"})
    store = FileOffsetStore(tmp_path / "offsets.json")
    settings = CoordinatorSettings(snapshot_mode="no_data", commit_interval_s=0.0, stop_when_idle_s=0.5,
                                   poll_timeout_s=0.0, retry_backoff_s=0.01)
    CaptureCoordinator(OracleConnector(cfg, show_progress=False), sink, store, settings).run()
    assert [r.key["ID"] for r in sink.records] == [1, 2]
    assert db.contents_queries >= 4 and len(db.connections) >= 6  # two per streaming start
    assert db.sessions[0][0] == 1000 and db.sessions[1][0] == 1000  # the reconnect kept the first SCN


def test_sys_changes_are_never_captured(install: Any) -> None:
    a = bytes.fromhex("0a00000001000000")
    rows = _tx_rows(a, 110, [1], 120)
    rows = [r[:9] + ("SYS",) + r[10:] for r in rows]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    db.apply_username_filter = False
    assert stream_once(db, 100) == []


@pytest.mark.parametrize("mode", ["fail", "warn", "skip"])
def test_unparseable_redo_follows_failure_handling_mode(install: Any, mode: str) -> None:
    from lakecdc.capture.oracle.errors import DmlParseError

    a = bytes.fromhex("0a00000001000000")
    rows = [redo(110, 1, a, "Unsupported", "DEBEZIUM", "CUSTOMERS")] + _tx_rows(a, 111, [2], 120)
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    extra = {"event.processing.failure.handling.mode": mode}
    if mode == "fail":
        with pytest.raises(DmlParseError, match="DEBEZIUM.CUSTOMERS, SCN 110"):
            stream_once(db, 100, **extra)
    else:
        assert [r.key["ID"] for r in stream_once(db, 100, **extra)] == [2]


def test_heartbeats_and_context_headers(install: Any) -> None:
    a = bytes.fromhex("0a00000001000000")
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(a, 110, [1], 120)))
    records = stream_once(db, 100, pause=0.02, **{"heartbeat.interval.ms": "1"})  # each poll waits 20x the interval
    beats = [r for r in records if r.topic == "__debezium-heartbeat.server1"]
    assert beats and beats[0].key == {"serverName": "server1"}
    data = next(r for r in records if r.topic == "server1.DEBEZIUM.CUSTOMERS")
    names = [h[0] for h in data.headers]
    assert names == ["__debezium.context.connectorLogicalName", "__debezium.context.taskId",
                     "__debezium.context.connectorName", "__debezium.context.runId"]
    assert dict(data.headers)["__debezium.context.connectorName"].endswith(b'"oracle"}')
    assert stream_once(install(RecordedOracle([customers()], scns=[200], redo_rows=db.redo_rows)), 100,
                       **{"extended.headers.enabled": "false"})[0].headers == []


def test_when_needed_snapshots_again_when_the_logs_are_gone(install: Any, tmp_path: Any) -> None:
    db = install(snapshot_db())
    db.scns = [1000, 1030]
    run(db, tmp_path, **{"log.mining.sleep.time.default.ms": "0"})
    db.oldest_log_scn = 5000  # archived logs after the stored SCN were deleted
    db.scns = [6000]
    db.redo_rows = []
    sink = run(db, tmp_path, **{"snapshot.mode": "when_needed", "log.mining.sleep.time.default.ms": "0"})
    assert [r.op for r in sink.records] == ["r", "r", "r"]
    assert db.snapshot_statements[-1].endswith("AS OF SCN 6000")


def test_continued_sql_redo_rows_are_joined(install: Any) -> None:
    """A statement longer than 4000 bytes spans rows with CSF = 1 (Oracle splits anywhere)."""
    a = bytes.fromhex("0a00000001000000")
    email = "x" * 5000 + "@example.com"
    sql = insert_sql("DEBEZIUM", "CUSTOMERS", {"ID": "7", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": email})
    pieces = [sql[i:i + 4000] for i in range(0, len(sql), 4000)]
    rows = []
    for n, piece in enumerate(pieces):
        row = list(redo(110, 1, a, piece, "DEBEZIUM", "CUSTOMERS"))
        row[5] = 1 if n < len(pieces) - 1 else 0  # CSF
        rows.append(tuple(row))
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows + [redo(111, 7, a)]))
    records = stream_once(db, 100)
    assert len(pieces) == 2 and [r.value["after"]["EMAIL"] for r in records] == [email]


def test_username_filters_and_snapshot_include_list(install: Any, tmp_path: Any) -> None:
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    rows = _tx_rows(a, 110, [1], 120) + [r[:9] + ("ETL",) + r[10:] for r in _tx_rows(b, 130, [2], 140)]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    assert [r.key["ID"] for r in stream_once(db, 100, **{"log.mining.username.exclude.list": "etl"})] == [1]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    assert [r.key["ID"] for r in stream_once(db, 100, **{"log.mining.username.include.list": "ETL"})] == [2]
    db = install(snapshot_db())
    db.scns = [1000]
    db.redo_rows = []
    sink = run(db, tmp_path, **{"snapshot.include.collection.list": "ORCLPDB1.DEBEZIUM.NOTHING",
                                "snapshot.mode": "initial_only"})
    assert sink.records == [] and db.snapshot_statements == []


def test_lob_writes_are_merged_into_their_row(install: Any) -> None:
    """lob.enabled: an INSERT with EMPTY_CLOB() followed by the locator and two LOB_WRITE chunks
    gives one create with the whole CLOB; a LOB written alone later becomes an update; an update
    that does not touch the LOB carries the unavailable placeholder."""
    table = Table("APP", "DOCS", [("ID", "NUMBER", 22, 9, 0, False), ("BODY", "CLOB", 4000, None, None, True),
                                  ("PIC", "BLOB", 4000, None, None, True), ("TITLE", "VARCHAR2", 50, None, None, True)],
                  ["ID"])
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    locator = ('DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6156); \n loc_b BLOB; \n buf_b RAW(6156); \nBEGIN\n'
               ' select "{col}" into loc_{k} from "APP"."DOCS" where "ID" = \'1\' and "TITLE" = \'t\' for update;')
    first, rest = "x" * 3000 + "it''s", "y" * 10
    db = install(RecordedOracle([table], scns=[200], redo_rows=[
        redo(110, 1, a, 'insert into "APP"."DOCS"("ID","BODY","PIC","TITLE") values '
             "('1',EMPTY_CLOB(),EMPTY_BLOB(),'t');", "APP", "DOCS", row_id="AAAR1"),
        redo(111, 9, a, locator.format(col="BODY", k="c"), "APP", "DOCS", row_id="AAAR1"),
        redo(112, 10, a, f" buf_c := '{first}';\n  dbms_lob.write(loc_c, 3004, 1, buf_c);", "APP", "DOCS",
             row_id="AAAR1"),
        redo(113, 10, a, f" buf_c := '{rest}';\n  dbms_lob.write(loc_c, 10, 3005, buf_c);\nEND;", "APP", "DOCS",
             row_id="AAAR1"),
        redo(114, 7, a),
        redo(120, 9, b, locator.format(col="PIC", k="b"), "APP", "DOCS", row_id="AAAR1"),
        redo(121, 10, b, " buf_b := HEXTORAW('0a0b');\n  dbms_lob.write(loc_b, 2, 1, buf_b);\nEND;", "APP", "DOCS",
             row_id="AAAR1"),
        redo(122, 3, b, 'update "APP"."DOCS" set "TITLE" = \'u\' where "ID" = \'1\' and "TITLE" = \'t\';',
             "APP", "DOCS", row_id="AAAR1"),
        redo(123, 7, b),
    ]))
    records = stream_once(db, 100, **{"lob.enabled": "true", "table.include.list": "APP.DOCS"})
    assert [r.op for r in records] == ["c", "u", "u"]
    assert records[0].value["after"]["BODY"] == "x" * 3000 + "it's" + "y" * 10
    assert records[0].value["after"]["PIC"] == b"__debezium_unavailable_value"  # EMPTY_BLOB(), never written
    assert records[1].value["after"]["PIC"] == b"\x0a\x0b" and records[1].value["before"]["PIC"] == \
        b"__debezium_unavailable_value"
    assert records[2].value["after"]["TITLE"] == "u"
    assert records[2].value["after"]["BODY"] == "__debezium_unavailable_value"
    # lob.enabled=false (the default): LOB columns are null, the LOB rows are not even queried
    db2 = install(RecordedOracle([table], scns=[200], redo_rows=db.redo_rows))
    plain = stream_once(db2, 100, **{"table.include.list": "APP.DOCS"})
    assert [r.op for r in plain] == ["c", "u"] and plain[0].value["after"]["BODY"] is None


def test_transaction_retention_abandons_old_open_transactions(install: Any) -> None:
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    old = [redo(110, 1, a, insert_sql("DEBEZIUM", "CUSTOMERS", {
        "ID": "1", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"}), "DEBEZIUM", "CUSTOMERS", ts_ms=1_000_000)]
    later = [r[:3] + (r[3] + datetime.timedelta(hours=2),) + r[4:] for r in _tx_rows(b, 120, [2], 130)]
    rows = old + later + [redo(140, 7, a, ts_ms=1_000_000 + 3 * 3_600_000)]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    kept = stream_once(db, 100)
    assert [r.key["ID"] for r in kept] == [2, 1]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    windows = {"log.mining.batch.size.min": "10", "log.mining.batch.size.default": "20"}  # (100,120], (120,140]
    assert [r.key["ID"] for r in stream_once(db, 100, **windows)] == [2, 1]
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=rows))
    # after the first window tx a has been open for 2 h > 1 h: dropped, its later commit emits nothing
    assert [r.key["ID"]
            for r in stream_once(db, 100, **windows, **{"log.mining.transaction.retention.ms": "3600000"})] == [2]


def test_archive_log_only_mode_mines_up_to_the_newest_archived_log(install: Any) -> None:
    a, b = bytes.fromhex("0a00000001000000"), bytes.fromhex("0b00000001000000")
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(a, 110, [1], 120) +
                                _tx_rows(b, 150, [2], 160)))
    db.archived_next_change = 141  # archived logs hold SCNs below 141; 150.. are only in the online log
    records = stream_once(db, 100, **{"log.mining.archive.log.only.mode": "true"})
    assert [r.key["ID"] for r in records] == [1]
    assert db.sessions == [(100, 140)] and all(f.startswith("/arch/") for f in db.files_log)


def test_mining_connection_never_leaves_the_cdb_root(install: Any) -> None:
    """LogMiner runs in CDB$ROOT; dictionary reads (in the PDB) use a second connection, so no
    ALTER SESSION SET CONTAINER reaches the session that mines."""
    a = bytes.fromhex("0a00000001000000")
    db = install(RecordedOracle([customers()], scns=[200], redo_rows=_tx_rows(a, 110, [1], 120)))
    assert len(stream_once(db, 100)) == 1
    mining = [c for c in db.connections if any("V$LOGMNR_CONTENTS" in sql for sql, _ in c.executed)]
    assert len(mining) == 1
    assert not any(sql.endswith("= ORCLPDB1") for sql, _ in mining[0].executed)
    assert any(sql.endswith("= ORCLPDB1") for c in db.connections for sql, _ in c.executed)


def test_snapshot_progress_bar_draws_table_and_row_counts(install: Any) -> None:
    import io

    from rich.console import Console

    from lakecdc.capture.oracle.snapshot import OracleSnapshotSource

    install(snapshot_db())
    buffer = io.StringIO()
    connector = OracleConnector(config(), show_progress=True)
    source = OracleSnapshotSource(connector.config, connector.modes, connector.namer, show_progress=True,
                                  console=Console(file=buffer, force_terminal=True, width=120))
    emitted: list[Any] = []
    result = source.run(emitted.extend)
    assert result.rows == 3 and [r.topic for r in emitted] == ["server1"] + ["server1.DEBEZIUM.CUSTOMERS"] * 3
    text = buffer.getvalue()
    assert "snapshot DEBEZIUM.CUSTOMERS" in text and "3/3" in text  # NUM_ROWS estimate 3, 3 read
    quiet = io.StringIO()
    OracleSnapshotSource(connector.config, connector.modes, connector.namer, show_progress=False,
                         console=Console(file=quiet, force_terminal=True)).run(lambda records: None)
    assert quiet.getvalue() == ""
