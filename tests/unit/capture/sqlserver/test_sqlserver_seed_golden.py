"""Snapshot then stream the seed's customer row (seed 1.4.8 / section 2.9) from recorded
answers; every event is compared field by field with the seed's JSON examples."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sqlserver_recordings import CUSTOMERS, RecordedServer, base_properties, lsn

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.connector import SqlServerConnector
from lakecdc.events.position_text import sqlserver_lsn_to_text
from lakecdc.transport.offsets import FileOffsetStore, offset_key

SNAPSHOT_LSN = "00000025:00000d98:00a2"  # the seed's schema change example commit_lsn
COLS = [c[0] for c in CUSTOMERS]
JOHN = (1005, "John", "Doe", "john.doe@example.org")
JOHN2 = (1005, "John", "Doe", "noreply@example.org")

# the seed's three value payloads (S4, normalized in the inventory section 2.9)
SEED_CREATE = {"before": None,
               "after": {"id": 1005, "first_name": "John", "last_name": "Doe", "email": "john.doe@example.org"},
               "source": {"version": "1.4.2.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1559729468470,
                          "snapshot": False, "db": "testDB", "schema": "dbo", "table": "customers",
                          "change_lsn": "00000027:00000758:0003", "commit_lsn": "00000027:00000758:0005",
                          "event_serial_no": "1"}, "op": "c", "ts_ms": 1559729471739}
SEED_UPDATE = {"before": {"id": 1005, "first_name": "John", "last_name": "Doe", "email": "john.doe@example.org"},
               "after": {"id": 1005, "first_name": "John", "last_name": "Doe", "email": "noreply@example.org"},
               "source": {"version": "1.4.2.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1559729995937,
                          "snapshot": False, "db": "testDB", "schema": "dbo", "table": "customers",
                          "change_lsn": "00000027:00000ac0:0002", "commit_lsn": "00000027:00000ac0:0007",
                          "event_serial_no": "2"}, "op": "u", "ts_ms": 1559729998706}
SEED_DELETE = {"before": {"id": 1005, "first_name": "John", "last_name": "Doe", "email": "noreply@example.org"},
               "after": None,
               "source": {"version": "1.4.2.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1559730445243,
                          "snapshot": False, "db": "testDB", "schema": "dbo", "table": "customers",
                          "change_lsn": "00000027:00000db0:0005", "commit_lsn": "00000027:00000db0:0007",
                          "event_serial_no": "1"}, "op": "d", "ts_ms": 1559730450205}
SEED_KEY_FIELDS = [{"type": "int32", "optional": False, "field": "id"}]
SEED_ROW_FIELDS = [{"type": "int32", "optional": False, "field": "id"},
                   {"type": "string", "optional": False, "field": "first_name"},
                   {"type": "string", "optional": False, "field": "last_name"},
                   {"type": "string", "optional": False, "field": "email"}]
SEED_SOURCE_FIELDS = [("version", "string", False), ("connector", "string", False), ("name", "string", False),
                      ("ts_ms", "int64", False), ("db", "string", False), ("schema", "string", False),
                      ("table", "string", False), ("change_lsn", "string", True), ("commit_lsn", "string", True),
                      ("event_serial_no", "int64", True)]


def after(text: str) -> str:
    return sqlserver_lsn_to_text(lsn(text) + 1)


def seed_server() -> RecordedServer:
    server = RecordedServer().customers()
    server.snapshot_locks([("dbo", "customers")])
    server.snapshot_rows("dbo", "customers", COLS, [(1001, "Sally", "Thomas", "sally.thomas@acme.com"),
                                                    (1002, "George", "Bailey", "gbailey@foobar.com")])
    server.max_lsn(SNAPSHOT_LSN)
    server.passes(SNAPSHOT_LSN, "00000027:00000758:0005", "00000027:00000ac0:0007", "00000027:00000db0:0007")
    server.changes("dbo_customers", after(SNAPSHOT_LSN), "00000027:00000758:0005", COLS,
                   [("00000027:00000758:0005", "00000027:00000758:0003", 2, *JOHN)])
    server.changes("dbo_customers", after("00000027:00000758:0005"), "00000027:00000ac0:0007", COLS,
                   [("00000027:00000ac0:0007", "00000027:00000ac0:0002", 3, *JOHN),
                    ("00000027:00000ac0:0007", "00000027:00000ac0:0002", 4, *JOHN2)])
    server.changes("dbo_customers", after("00000027:00000ac0:0007"), "00000027:00000db0:0007", COLS,
                   [("00000027:00000db0:0007", "00000027:00000db0:0005", 1, *JOHN2)])
    server.lsn_time("00000027:00000758:0005", 1559729468470)
    server.lsn_time("00000027:00000ac0:0007", 1559729995937)
    server.lsn_time("00000027:00000db0:0007", 1559730445243)
    return server


class ListSink:
    def __init__(self) -> None:
        self.records: list[Any] = []
        self.flushes = 0

    def send(self, records: list[Any]) -> None:
        self.records.extend(records)

    def flush(self) -> None:
        self.flushes += 1

    def close(self) -> None:
        pass


def run(server: RecordedServer, tmp_path: Path, idle_s: float = 1.0, replay_stop: bool = True,
        **props: str) -> tuple[ListSink, FileOffsetStore, SqlServerConnector]:
    """Capture from the recording until it has nothing new (``_stop_once_replayed``) or, for runs
    whose point is what happens while idle or that get input from elsewhere (``replay_stop=False``),
    until streaming has seen no change for ``idle_s``."""
    config = SqlServerConnectorConfig.from_properties(base_properties(**props))
    connector = SqlServerConnector(config, show_progress=False, connection_factory=server.connect)
    sink = ListSink()
    store = FileOffsetStore(tmp_path / "offsets.json")
    # stop once the recorded answers say "nothing new" for a second: generous on a loaded machine,
    # where a pass follows the previous one within milliseconds
    settings = CoordinatorSettings(snapshot_mode=config.snapshot_mode_normalized, commit_interval_s=0.0,
                                   poll_timeout_s=0.01, stop_when_idle_s=idle_s)
    coordinator = CaptureCoordinator(connector, sink, store, settings)
    finished = threading.Event()
    watcher = threading.Thread(target=_stop_once_replayed, args=(coordinator, server, finished), daemon=True)
    if replay_stop:
        watcher.start()
    try:
        coordinator.run()
    finally:
        finished.set()
        if replay_stop:
            watcher.join()
    return sink, store, connector


#: answers in a row that only repeat a last answer: the streaming loop has made whole passes that
#: found nothing new since the recording's last fresh answer
REPLAYED_REPEATS = 6


def _stop_once_replayed(coordinator: CaptureCoordinator, server: RecordedServer, finished: threading.Event) -> None:
    """Stop a streaming run as soon as the recording has nothing new to say: once the connector
    only hears last answers again (whole polls that found nothing new, so every fresh answer's rows
    were sent), the idle stop's second would only repeat that. The coordinator checks a stop after
    sending its batch. A stop during the snapshot is never asked (it would skip streaming and its
    final offset)."""
    while not finished.wait(0.02):
        if getattr(coordinator, "_streaming_started", False) and server.rec.repeats_since_fresh() >= REPLAYED_REPEATS:
            coordinator.request_stop()
            return


def _json(schema: Any) -> dict[str, Any]:
    return schema.to_json()  # type: ignore[no-any-return]


def compare_with_seed(value: dict[str, Any], seed: dict[str, Any]) -> None:
    assert value["before"] == seed["before"]
    assert value["after"] == seed["after"]
    assert value["op"] == seed["op"]
    src, want = value["source"], seed["source"]
    for name in ("connector", "name", "ts_ms", "db", "schema", "table", "change_lsn", "commit_lsn"):
        assert src[name] == want[name], name
    # the seed prints event_serial_no as a string; Debezium's schema (and lakecdc) say int64
    assert src["event_serial_no"] == int(want["event_serial_no"])
    # Debezium 3 writes the snapshot flag as a string enum ("false"); 1.4 printed a boolean
    assert src["snapshot"] == "false"
    assert isinstance(value["ts_ms"], int) and value["ts_ms"] >= src["ts_ms"]


def test_snapshot_then_seed_create_update_delete(tmp_path: Path) -> None:
    server = seed_server()
    sink, store, connector = run(server, tmp_path)
    data = [r for r in sink.records if r.topic == "server1.testDB.dbo.customers"]
    assert [r.op for r in data] == ["r", "r", "c", "u", "d", None]
    reads = data[:2]
    assert [r.value["source"]["snapshot"] for r in reads] == ["first", "last"]
    assert {r.value["source"]["commit_lsn"] for r in reads} == {SNAPSHOT_LSN}
    assert all(r.value["source"]["change_lsn"] is None and r.value["source"]["event_serial_no"] is None for r in reads)
    assert reads[0].value["after"] == {"id": 1001, "first_name": "Sally", "last_name": "Thomas",
                                       "email": "sally.thomas@acme.com"}
    for record, seed in zip(data[2:5], (SEED_CREATE, SEED_UPDATE, SEED_DELETE)):
        compare_with_seed(record.value, seed)
        assert record.key == {"id": 1005}
    tombstone = data[5]
    assert tombstone.value is None and tombstone.key == {"id": 1005}
    # schemas: key and row fields exactly the seed's; the source struct has the seed's fields in order
    create = data[2]
    assert _json(create.key_schema)["fields"] == SEED_KEY_FIELDS
    assert _json(create.key_schema)["name"] == "server1.testDB.dbo.customers.Key"  # Debezium 2+: <db> in names
    envelope = _json(create.value_schema)
    fields = {f["field"]: f for f in envelope["fields"]}
    for part in ("before", "after"):
        assert fields[part]["fields"] == SEED_ROW_FIELDS
        assert fields[part]["optional"] is True and fields[part]["name"] == "server1.testDB.dbo.customers.Value"
    source = [(f["field"], f["type"], f["optional"]) for f in fields["source"]["fields"]]
    assert [s for s in source if s[0] in {n for n, _, _ in SEED_SOURCE_FIELDS}] == SEED_SOURCE_FIELDS
    assert fields["source"]["name"] == "io.debezium.connector.sqlserver.Source"
    # the offset after the last pass covers everything up to the max LSN
    key = offset_key("server1", {"server": "server1", "database": "testDB"})
    assert store.load(key) == {"commit_lsn": "00000027:00000db0:0007", "event_serial_no": 0}


def test_restart_reads_nothing_twice(tmp_path: Path) -> None:
    server = seed_server()
    first, store, _ = run(server, tmp_path)
    assert len(first.records) == 7  # schema change, 2 reads, c, u, d, tombstone
    again, _, _ = run(server, tmp_path)  # same answers, stored offset: streaming resumes after it
    assert again.records == []
    assert sum("cdc.lsn_time_mapping" in s for s in server.rec.log) >= 5  # 4 passes, then "nothing new"


def test_tombstones_off_and_skipped_operations(tmp_path: Path) -> None:
    sink, _, _ = run(seed_server(), tmp_path, tombstones__on__delete="false", skipped__operations="u")
    ops = [r.op for r in sink.records if r.topic == "server1.testDB.dbo.customers"]
    assert ops == ["r", "r", "c", "d"]


# the seed's schema change message for dbo.customers (S4, section 2.9), Debezium 3 adds the
# comment / defaultValueExpression / enumValues entries
SEED_SCHEMA_CHANGE = {"source": {"version": "1.4.2.Final", "connector": "sqlserver", "name": "server1",
                                 "ts_ms": 1588252618953, "snapshot": "true", "db": "testDB", "schema": "dbo",
                                 "table": "customers", "change_lsn": None,
                                 "commit_lsn": "00000025:00000d98:00a2", "event_serial_no": None},
                      "databaseName": "testDB", "schemaName": "dbo", "ddl": None,
                      "tableChanges": [{"type": "CREATE", "id": "\"testDB\".\"dbo\".\"customers\"", "table": {
                          "defaultCharsetName": None, "primaryKeyColumnNames": ["id"], "columns": [
                              {"name": "id", "jdbcType": 4, "nativeType": None, "typeName": "int identity",
                               "typeExpression": "int identity", "charsetName": None, "length": 10, "scale": 0,
                               "position": 1, "optional": False, "autoIncremented": False, "generated": False},
                              {"name": "first_name", "jdbcType": 12, "nativeType": None, "typeName": "varchar",
                               "typeExpression": "varchar", "charsetName": None, "length": 255, "scale": None,
                               "position": 2, "optional": False, "autoIncremented": False, "generated": False},
                              {"name": "last_name", "jdbcType": 12, "nativeType": None, "typeName": "varchar",
                               "typeExpression": "varchar", "charsetName": None, "length": 255, "scale": None,
                               "position": 3, "optional": False, "autoIncremented": False, "generated": False},
                              {"name": "email", "jdbcType": 12, "nativeType": None, "typeName": "varchar",
                               "typeExpression": "varchar", "charsetName": None, "length": 255, "scale": None,
                               "position": 4, "optional": False, "autoIncremented": False, "generated": False}]}}]}


def test_snapshot_schema_change_event_matches_the_seed(tmp_path: Path) -> None:
    sink, _, _ = run(seed_server(), tmp_path)
    (record,) = [r for r in sink.records if r.topic == "server1"]
    assert record.key == {"databaseName": "testDB"}
    assert record.key_schema.to_json() == {"type": "struct", "fields": [{"type": "string", "optional": False,
                                                                        "field": "databaseName"}],
                                           "optional": False, "name": "io.debezium.connector.sqlserver.SchemaChangeKey",
                                           "version": 1}
    value, seed = record.value, SEED_SCHEMA_CHANGE
    for name in ("databaseName", "schemaName", "ddl"):
        assert value[name] == seed[name]
    for name in ("connector", "name", "snapshot", "db", "schema", "table", "change_lsn", "commit_lsn",
                 "event_serial_no"):
        assert value["source"][name] == seed["source"][name], name
    (change,) = value["tableChanges"]
    (want,) = seed["tableChanges"]
    assert (change["type"], change["id"]) == (want["type"], want["id"])
    assert {k: change["table"][k] for k in ("defaultCharsetName", "primaryKeyColumnNames")} == \
        {k: want["table"][k] for k in ("defaultCharsetName", "primaryKeyColumnNames")}
    for got, expected in zip(change["table"]["columns"], want["table"]["columns"], strict=True):
        assert {k: got[k] for k in expected} == expected
        assert (got["comment"], got["defaultValueExpression"], got["enumValues"]) == (None, None, None)
