"""Decoding real Debezium output (the shared golden records) into typed rows.

Expected values are the source values of pg_setup.sql / pg_workload.sql, converted by hand.
"""

from __future__ import annotations

import base64
import copy
from datetime import date, datetime, timezone
from decimal import Decimal

import orjson
import pyarrow as pa
import pytest
from ingest_records import encode, golden_records, golden_table, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.events.positions import position_from_source
from lakecdc.ingest.decode import Decoder, split_envelope
from lakecdc.lake.segments import union_segments

pytestmark = pytest.mark.spark4  # also runs on the Spark 4 line (run.sh test)

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)


def config(**props: str) -> IngestConfig:
    return IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz", **props})


def decoded_rows(table: pa.Table, topic: str, **props: str) -> list[dict]:
    batch = Decoder(config(**props)).decode(table, NOW)
    _, rows = union_segments([s for s in batch.segments if s.topic == topic])
    return sorted(rows.to_pylist(), key=lambda r: r["_offset"])


def test_golden_batch_is_sorted_into_data_markers_and_tombstones() -> None:
    batch = Decoder(config()).decode(golden_table(), NOW)
    assert batch.dead_letters == []
    assert batch.tombstones == 4  # customers id 2, 100, 3 and audit_full id 2 deletes
    assert [m.status for m in batch.tx_markers].count("BEGIN") == 11
    assert [m.status for m in batch.tx_markers].count("END") == 11
    end = next(m for m in batch.tx_markers if m.status == "END" and m.event_count == 5)
    assert end.collections == {"public.customers": 3, "public.audit_full": 1, "public.nopk_events": 1}
    per_topic = {}
    for s in batch.segments:
        per_topic[s.topic] = per_topic.get(s.topic, 0) + s.num_rows
    assert per_topic == {"dbz.public.customers": 14, "dbz.public.audit_full": 4, "dbz.public.nopk_events": 2}


def test_customers_values_equal_the_source_values() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.customers")
    alice = rows[0]
    assert alice["name"] == "Alice" and alice["email"] == "alice@example.com"
    assert alice["balance"] == Decimal("100.50")
    assert alice["created_at"] == datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    assert alice["active"] is True
    assert orjson.loads(alice["payload"]) == {"tier": "gold", "n": 1}
    assert alice["tags"] == ["a", "b"]
    assert alice["_op"] == "r" and alice["_tx_id"] is None
    carol = next(r for r in rows if r["name"] == "Carol")
    # '2024-03-04 05:06:07+02' is 03:06:07 UTC
    assert carol["created_at"] == datetime(2024, 3, 4, 3, 6, 7, tzinfo=timezone.utc)
    assert carol["tags"] == ["x y", "z"] and carol["balance"] == Decimal("0.00")
    bob = next(r for r in rows if r["name"] == "Bob")
    assert bob["balance"] == Decimal("-20.00") and bob["tags"] == []
    dave = next(r for r in rows if r["name"] == "Dave")
    assert dave["balance"] == Decimal("12345678.99") and dave["active"] is None and dave["tags"] is None
    updated = [r for r in rows if r["_op"] == "u" and r["id"] == 1]
    assert updated[0]["balance"] == Decimal("150.75") and updated[0]["tags"] == ["a", "b", "c"]
    eve = next(r for r in rows if r["name"] == "Eve")
    assert eve["loyalty_points"] == 42  # the column added mid-stream
    dave_update = next(r for r in rows if r["_op"] == "u" and r["id"] == 4)
    assert dave_update["loyalty_points"] == 5


def test_deletes_carry_the_before_image_and_truncate_has_no_row() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.customers")
    deletes = [r for r in rows if r["_op"] == "d"]
    assert [d["id"] for d in deletes] == [2, 3, 100]
    assert all(d["name"] is None for d in deletes)
    assert [d["_key_json"] for d in deletes] == ['{"id":2}', '{"id":3}', '{"id":100}']
    truncate = next(r for r in rows if r["_op"] == "t")
    assert truncate["id"] is None and truncate["_key_json"] is None
    assert truncate["_seq"][1] > deletes[-1]["_seq"][1]


def test_audit_full_types_are_exact() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.audit_full")
    snap, tx_insert, update, delete = rows
    assert snap["amount"] == Decimal("1.5")
    assert snap["d"] == date(2024, 1, 1)
    assert snap["t"] == ((12 * 60 + 34) * 60 + 56) * 1_000_000 + 789_000  # time 12:34:56.789 in µs
    assert snap["ts"] == datetime(2024, 1, 1, 0, 0, 0, 500000)  # timestamp without zone stays naive
    assert snap["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert snap["b"] == b"\x01\x02\xff"
    assert snap["f"] == 3.14159 and snap["r"] == 2.5 and snap["i2"] == 7
    assert snap["i8"] == 9007199254740993
    assert snap["ch"] == "ab " and snap["vc"] == "xyz"
    assert snap["iv"] == ((24 + 2) * 3600 + 3 * 60 + 4) * 1_000_000  # interval '1 day 02:03:04'
    assert tx_insert["amount"] == Decimal("-0.000001")
    assert tx_insert["d"] == date(1970, 1, 1) and tx_insert["t"] == 0
    assert tx_insert["ts"] == datetime(1999, 12, 31, 23, 59, 59, 999999)
    assert tx_insert["b"] == b"" and tx_insert["f"] == -1e300 and tx_insert["r"] == -0.5
    assert tx_insert["i2"] == -32768 and tx_insert["i8"] == -9223372036854775808
    assert tx_insert["ch"] == "a  " and tx_insert["vc"] == ""
    assert update["note"] == "changed"
    assert update["amount"] == Decimal("99999999999999999999.123456789")
    assert delete["_op"] == "d" and delete["id"] == 2


def test_variable_scale_decimal_as_exact_text() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.audit_full", **{"variable.scale.decimal.mode": "string"})
    assert [r["amount"] for r in rows] == ["1.5", "-0.000001", "99999999999999999999.123456789", "-0.000001"]


def test_time_as_text_option() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.audit_full", **{"time.handling.mode": "string"})
    assert rows[0]["t"] == "12:34:56.789000" and rows[1]["t"] == "00:00:00.000000"


def test_metadata_columns() -> None:
    rows = decoded_rows(golden_table(), "dbz.public.customers")
    in_tx = [r for r in rows if r["_tx_id"] and r["_tx_id"].startswith("1264:")]
    assert [r["_tx_total_order"] for r in in_tx] == [1, 2, 3]
    assert all(r["_source_ts_ms"] == 1795336045068 for r in in_tx)
    assert all(len(r["_seq"]) == 4 for r in rows)
    first_source = golden_records()[0]["value"]["payload"]["source"]
    assert rows[0]["_seq"] == list(position_from_source("postgresql", first_source).seq())
    assert all(tuple(r["_seq"]) > tuple(rows[0]["_seq"]) for r in rows if r["_op"] != "r")
    assert all(r["_ingest_ts"] == NOW and r["_unavailable"] == [] for r in rows)
    assert {r["_topic"] for r in rows} == {"dbz.public.customers"}


def test_schema_change_mid_batch_becomes_the_union_newest_first() -> None:
    batch = Decoder(config()).decode(golden_table(), NOW)
    columns, rows = union_segments([s for s in batch.segments if s.topic == "dbz.public.customers"])
    assert [c.name for c in columns] == ["id", "name", "email", "balance", "created_at", "active", "payload",
                                        "tags", "loyalty_points"]
    eve_offset = next(r["_offset"] for r in rows.to_pylist() if r["name"] == "Eve")
    old = [r for r in rows.to_pylist() if r["_offset"] < eve_offset]
    assert len(old) == 10 and all(r["loyalty_points"] is None for r in old)


def test_type_change_mid_batch_newest_type_wins() -> None:
    records = golden_records()
    audit = [r for r in records if r["topic"] == "dbz.public.audit_full" and r["value"]]
    widened = copy.deepcopy(audit[-1])
    for part in widened["value"]["schema"]["fields"][:2]:
        next(f for f in part["fields"] if f["field"] == "i2")["type"] = "int64"
    table = kafka_table([(r["topic"], encode(r["key"]), encode(r["value"])) for r in audit[:1] + [widened]])
    batch = Decoder(config()).decode(table, NOW)
    columns, rows = union_segments(batch.segments)
    assert rows.schema.field("i2").type == pa.int64()
    by_offset = dict(zip(rows.column("_offset").to_pylist(), rows.column("i2").to_pylist()))
    assert by_offset == {0: 7, 1: -32768}
    assert columns[[c.name for c in columns].index("i2")].connect_schema["type"] == "int64"


def test_unparseable_and_schemaless_records_go_to_dead_letters() -> None:
    records = golden_records()
    good = records[0]
    bad_decimal = copy.deepcopy(good)
    bad_decimal["value"]["payload"]["after"]["balance"] = base64.b64encode(
        (10**14).to_bytes(7, "big", signed=True)).decode()  # 14 integer digits in numeric(12,2)
    table = kafka_table([
        (good["topic"], encode(good["key"]), b'{"schema":{"type":"struct"'),
        (good["topic"], encode(good["key"]), orjson.dumps(good["value"]["payload"])),
        (good["topic"], encode(good["key"]), encode(bad_decimal["value"])),
        (good["topic"], encode(good["key"]), encode(good["value"])),
    ])
    batch = Decoder(config()).decode(table, NOW)
    reasons = {d.offset: d.reason for d in batch.dead_letters}
    assert set(reasons) == {0, 1, 2}
    assert "not valid JSON" in reasons[0]
    assert "schemas.enable" in reasons[1]
    assert "balance" in reasons[2]
    assert batch.dead_letters[0].value == b'{"schema":{"type":"struct"'
    assert batch.events == 1 and batch.segments[0].rows.column("_offset").to_pylist() == [3]


def test_non_compact_json_is_parsed_the_slow_way() -> None:
    record = golden_records()[0]
    spaced = orjson.dumps(record["value"], option=orjson.OPT_INDENT_2)
    assert split_envelope(spaced) is None
    batch = Decoder(config()).decode(kafka_table([(record["topic"], encode(record["key"]), spaced)]), NOW)
    assert batch.dead_letters == [] and batch.events == 1
    assert batch.segments[0].rows.column("name").to_pylist() == ["Alice"]


def test_unavailable_placeholder_is_nulled_and_listed() -> None:
    record = copy.deepcopy(golden_records()[0])
    after = record["value"]["payload"]["after"]
    after["payload"] = "__debezium_unavailable_value"
    after["tags"] = ["__debezium_unavailable_value"]
    batch = Decoder(config()).decode(kafka_table([(record["topic"], encode(record["key"]),
                                                   encode(record["value"]))]), NOW)
    row = batch.segments[0].rows.to_pylist()[0]
    assert row["payload"] is None and row["tags"] is None
    assert row["_unavailable"] == ["payload", "tags"]
    assert row["name"] == "Alice"


def test_bytes_placeholder_in_every_binary_mode() -> None:
    audit = copy.deepcopy(next(r for r in golden_records() if r["topic"] == "dbz.public.audit_full"))
    audit["value"]["payload"]["after"]["b"] = base64.b64encode(b"__debezium_unavailable_value").decode()
    batch = Decoder(config()).decode(kafka_table([(audit["topic"], encode(audit["key"]),
                                                   encode(audit["value"]))]), NOW)
    row = batch.segments[0].rows.to_pylist()[0]
    assert row["b"] is None and row["_unavailable"] == ["b"]


@pytest.mark.parametrize("mode,text", [("hex", "0102ff"), ("base64", "AQL/"), ("base64-url-safe", "AQL_")])
def test_binary_handling_modes_decode_to_bytes(mode: str, text: str) -> None:
    audit = copy.deepcopy(next(r for r in golden_records() if r["topic"] == "dbz.public.audit_full"))
    for part in audit["value"]["schema"]["fields"][:2]:
        field = next(f for f in part["fields"] if f["field"] == "b")
        field["type"] = "string"
        field["parameters"] = {"__debezium.source.column.type": "BYTEA"}
    audit["value"]["payload"]["after"]["b"] = text
    batch = Decoder(config(**{"binary.handling.mode": mode})).decode(
        kafka_table([(audit["topic"], encode(audit["key"]), encode(audit["value"]))]), NOW)
    assert batch.dead_letters == []
    assert batch.segments[0].rows.column("b").to_pylist() == [b"\x01\x02\xff"]


def test_logical_decoding_messages_are_skipped_not_dead() -> None:
    record = copy.deepcopy(golden_records()[0])
    record["value"]["payload"]["op"] = "m"
    batch = Decoder(config()).decode(kafka_table([(record["topic"], None, encode(record["value"]))]), NOW)
    assert batch.skipped == 1 and batch.events == 0 and batch.dead_letters == []


def test_heartbeat_and_schema_change_topics_are_not_tables() -> None:
    table = kafka_table([
        ("__debezium-heartbeat.dbz", b'{"schema":null,"payload":{"serverName":"dbz"}}',
         b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],'
         b'"optional":false,"name":"io.debezium.connector.common.Heartbeat"},"payload":{"ts_ms":1795336045999}}'),
        ("dbz", None, orjson.dumps({"schema": {"type": "struct", "fields": [], "optional": False},
                                    "payload": {"ddl": "ALTER TABLE t ADD c int", "databaseName": "inv"}})),
    ])
    batch = Decoder(config()).decode(table, NOW)
    assert batch.segments == [] and batch.dead_letters == []
    assert batch.heartbeats == 1 and batch.last_heartbeat_ts_ms == 1795336045999
    assert [c.ddl for c in batch.schema_changes] == ["ALTER TABLE t ADD c int"]


def test_old_key_header_of_a_key_change_becomes_old_key_json() -> None:
    """Debezium's key change 2 -> 100 (delete + create at one LSN): the create's header
    __debezium.oldkey, with or without a schema, becomes ``_old_key_json`` in ``_key_json``'s form."""
    records = golden_records()
    context = {"key": "__debezium.context.connectorName", "value": b'{"schema":{"type":"string"},"payload":"dbz"}'}
    for header in (b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
                   b'"optional":false,"name":"dbz.public.customers.Key"},"payload":{"id":2}}', b'{"id":2}'):
        table = golden_table()
        headers = [[context] for _ in records]
        headers[13] = [{"key": "__debezium.oldkey", "value": header}, context]
        headers[11] = [context, {"key": "__debezium.newkey", "value": b'{"id":100}'}]
        table = table.set_column(table.schema.get_field_index("headers"), "headers",
                                 pa.array(headers, table.schema.field("headers").type))
        rows = decoded_rows(table, "dbz.public.customers")
        moved = [r for r in rows if r["_old_key_json"] is not None]
        assert [(r["id"], r["_op"], r["_old_key_json"], r["_key_json"]) for r in moved] == [
            (100, "c", '{"id":2}', '{"id":100}')]
        deleted = next(r for r in rows if r["_op"] == "d" and r["id"] == 2)
        assert deleted["_key_json"] == moved[0]["_old_key_json"]
    assert all(r["_old_key_json"] is None for r in decoded_rows(golden_table(), "dbz.public.customers"))
