"""Envelope, op codes, records, topic naming and serde edge cases on hand-written cases."""

from __future__ import annotations

import json

import pytest

from lakecdc.events.envelope import ChangeRecord, Op, envelope_payload, envelope_schema
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.schema import INT32, OPTIONAL_STRING, STRING, ConnectSchema, array, map_, primitive, struct
from lakecdc.events.serde import RecordEncoder, decode
from lakecdc.events.source import POSTGRES_SOURCE, PostgresSourceBuilder, snapshot_marker, source_schema
from lakecdc.events.topics import TableId, TopicNamer, avro_sanitize, sanitize_topic_name
from lakecdc.events.transaction import TransactionTracker, transaction_group, transaction_record


def test_op_codes() -> None:
    assert [op.value for op in Op] == ["r", "c", "u", "d", "t", "m"]
    assert Op("d") is Op.DELETE and str(Op.TRUNCATE) == "t"


def test_envelope_payload_times_derive_from_nanoseconds() -> None:
    payload = envelope_payload(Op.CREATE, None, {"id": 1}, {"x": 1}, ts_ns=1795336044834420458)
    assert list(payload) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert (payload["op"], payload["ts_ms"], payload["ts_us"]) == ("c", 1795336044834, 1795336044834420)


def test_tombstone_and_keyless_records_are_kafka_nulls() -> None:
    key_schema = struct([("id", INT32)], name="dbz.public.t.Key")
    row = struct([("id", INT32), ("v", OPTIONAL_STRING)], optional=True, name="dbz.public.t.Value")
    value_schema = envelope_schema(row, POSTGRES_SOURCE, "dbz.public.t.Envelope")
    position = PostgresPosition(lsn=10)
    delete = ChangeRecord("dbz.public.t", key_schema, {"id": 1}, value_schema, {"op": "d"}, [], position)
    tomb = delete.tombstone()
    assert tomb.is_tombstone and tomb.key == {"id": 1} and tomb.position == position and tomb.op is None
    assert delete.op == "d" and not delete.is_tombstone
    assert RecordEncoder(value_schema).encode(tomb.value) is None
    assert decode(None) == (None, None)


def test_null_field_with_default_is_written_as_default() -> None:
    # Connect's Struct.get substitutes the default and JsonConverter writes it (replace.null.with.default).
    schema = struct([("id", primitive("int32", default=0)), ("n", primitive("int32", True, default=7))])
    assert RecordEncoder(schema, schemas_enable=False).encode({"id": None, "n": None}) == b'{"id":0,"n":7}'
    # replace.null.with.default=false keeps the null of an optional field.
    keep_nulls = RecordEncoder(schema, schemas_enable=False, replace_null_with_default=False)
    assert keep_nulls.encode({"id": 1, "n": None}) == b'{"id":1,"n":null}'


def test_schema_key_order_and_parameters_order() -> None:
    schema = primitive("string", True, name="io.debezium.data.Enum", version=1, doc="d",
                       parameters={"z": "1", "a": "2"}, default="x")
    text = RecordEncoder(schema).schema_json.decode()
    assert text == ('{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"doc":"d",'
                    '"parameters":{"z":"1","a":"2"},"default":"x"}')


def test_maps_and_arrays() -> None:
    schema = struct([
        ("tags", array(OPTIONAL_STRING, optional=True)),
        ("by_name", map_(STRING, INT32)),
        ("by_id", map_(INT32, STRING)),
    ])
    data = RecordEncoder(schema, schemas_enable=False).encode(
        {"tags": ["a", None], "by_name": {"k\u00e9": 1}, "by_id": {2: "two"}}
    )
    assert data == '{"tags":["a",null],"by_name":{"ké":1},"by_id":[[2,"two"]]}'.encode()


def test_missing_field_is_named() -> None:
    encoder = RecordEncoder(struct([("id", INT32), ("name", STRING)], name="dbz.public.t.Value"))
    with pytest.raises(ValueError, match="dbz.public.t.Value.*'name'"):
        encoder.encode({"id": 1})


def test_decode_detects_schema_envelope() -> None:
    assert decode(b'{"schema":{"type":"int32","optional":false},"payload":5}') == (
        {"type": "int32", "optional": False}, 5)
    assert decode(b'{"id":5}') == (None, {"id": 5})
    with pytest.raises(ValueError, match="schema"):
        decode(b'{"id":5}', schemas_enable=True)


def test_from_json_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown Kafka Connect schema type 'uuid'"):
        ConnectSchema.from_json({"type": "uuid"})
    with pytest.raises(ValueError, match="array schema 'a' has no 'items'"):
        ConnectSchema.from_json({"type": "array", "name": "a"})
    with pytest.raises(ValueError, match="declares field 'x' twice"):
        struct([("x", INT32), ("x", INT32)], name="s")


def test_snapshot_markers_follow_debezium_precedence() -> None:
    assert snapshot_marker(False) == "false"
    assert snapshot_marker(True, first=True, first_in_table=True) == "first"
    assert snapshot_marker(True, first_in_table=True, last_in_table=True) == "last_in_data_collection"
    assert snapshot_marker(True, last=True, last_in_table=True) == "last"
    assert snapshot_marker(True, first_in_table=True) == "first_in_data_collection"
    assert snapshot_marker(True) == "true"


def test_source_payloads_fit_their_schemas() -> None:
    source = PostgresSourceBuilder("dbz", "db").build(
        schema="public", table="t", ts_us=1_000_001, lsn=5, last_commit_lsn=None, tx_id=9)
    text = RecordEncoder(POSTGRES_SOURCE, schemas_enable=False).encode(source)
    assert text is not None and json.loads(text)["sequence"] == '[null,"5"]'
    for connector in ("mysql", "mariadb", "sqlserver", "oracle"):
        schema = source_schema(connector)
        assert schema.name == f"io.debezium.connector.{connector}.Source"
        assert schema.field_names[:9] == POSTGRES_SOURCE.field_names[:9]
    with pytest.raises(ValueError, match="db2"):
        source_schema("db2")


@pytest.mark.parametrize(
    ("connector", "table", "topic", "collection"),
    [
        ("postgresql", TableId("inventory_db", "inventory", "orders"), "fulfillment.inventory.orders",
         "inventory.orders"),
        ("mysql", TableId("inventory", None, "orders"), "fulfillment.inventory.orders", "inventory.orders"),
        ("sqlserver", TableId("testDB", "dbo", "tablea"), "fulfillment.testDB.dbo.tablea", "testDB.dbo.tablea"),
        ("oracle", TableId("ORCLPDB1", "DEBEZIUM", "CUSTOMERS"), "fulfillment.DEBEZIUM.CUSTOMERS",
         "ORCLPDB1.DEBEZIUM.CUSTOMERS"),
    ],
)
def test_topic_names_per_connector(connector: str, table: TableId, topic: str, collection: str) -> None:
    namer = TopicNamer("fulfillment", connector)
    assert namer.data_topic(table) == topic
    assert namer.data_collection(table) == collection
    assert namer.key_schema_name(table) == topic + ".Key"
    assert namer.envelope_schema_name(table) == topic + ".Envelope"
    assert namer.transaction_topic == "fulfillment.transaction"
    assert namer.heartbeat_topic == "__debezium-heartbeat.fulfillment"
    assert namer.schema_change_topic == "fulfillment"


def test_topic_overrides_and_seed_sqlserver_form() -> None:
    assert TopicNamer("p", "mysql", transaction_topic="tx.all").transaction_topic == "tx.all"
    assert TopicNamer("p", "postgresql", transaction_suffix="txn").transaction_topic == "p.txn"
    assert TopicNamer("p", "postgresql", heartbeat_prefix="hb").heartbeat_topic == "hb.p"
    seed_form = TopicNamer("server1", "sqlserver", sqlserver_topic_includes_db=False)
    assert seed_form.data_topic(TableId("testDB", "dbo", "customers")) == "server1.dbo.customers"


def test_avro_and_topic_sanitizing() -> None:
    assert avro_sanitize("my-server.inventory.order items.Value") == "my_server.inventory.order_items.Value"
    assert avro_sanitize("1db.t$") == "_db.t_"
    assert avro_sanitize("s.tä", unicode_escape=True) == "s.t_u00e4"
    assert sanitize_topic_name("p.my schema.t/1") == "p.my_schema.t_1"
    namer = TopicNamer("my-server", "postgresql", schema_name_adjustment="avro")
    assert namer.value_schema_name(TableId(None, "public", "order-items")) == "my_server.public.order_items.Value"
    assert namer.data_topic(TableId(None, "public", "order-items")) == "my-server.public.order-items"
    with pytest.raises(ValueError, match="schema.name.adjustment.mode"):
        TopicNamer("p", "postgresql", schema_name_adjustment="avro2")


def test_tracker_counts_and_guards() -> None:
    tracker = TransactionTracker()
    tracker.begin("571:53195829", 1)
    assert tracker.event("s1.a") == {"id": "571:53195829", "total_order": 1, "data_collection_order": 1}
    assert tracker.event("s1.b")["data_collection_order"] == 1
    assert tracker.event("s1.a", "571:53195900") == {"id": "571:53195900", "total_order": 3,
                                                      "data_collection_order": 2}
    assert tracker.counts() == {"s1.a": 2, "s1.b": 1}
    end = tracker.end("571:53196000", 2)
    assert end["event_count"] == 3 and [c["data_collection"] for c in end["data_collections"]] == ["s1.a", "s1.b"]
    record = transaction_record("p.transaction", end)
    assert record.key == {"id": "571:53196000"} and record.value is end
    with pytest.raises(RuntimeError, match="outside a transaction"):
        tracker.event("s1.a")
    tracker.begin("1", 0)
    with pytest.raises(RuntimeError, match="still open"):
        tracker.begin("2", 0)
    assert transaction_group("postgresql", "1264:99091416") == "1264"
    assert transaction_group("mysql", "0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10").endswith(":10")


def test_heartbeat_record_bytes() -> None:
    from lakecdc.events.heartbeat import heartbeat_record

    namer = TopicNamer("dbz", "postgresql")
    record = heartbeat_record(namer.heartbeat_topic, "dbz", 1795336045068, PostgresPosition(lsn=7))
    assert record.topic == "__debezium-heartbeat.dbz"
    key = RecordEncoder(record.key_schema).encode(record.key)
    value = RecordEncoder(record.value_schema).encode(record.value)
    assert key == (b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],'
                   b'"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},'
                   b'"payload":{"serverName":"dbz"}}')
    assert value is not None and value.endswith(b'"version":1},"payload":{"ts_ms":1795336045068}}')


def test_non_float_numbers_in_double_fields_print_as_java_doubles() -> None:
    import decimal

    schema = struct([("a", primitive("double")), ("b", primitive("double")), ("c", primitive("double"))])
    encoded = RecordEncoder(schema, schemas_enable=False).encode({"a": 5, "b": decimal.Decimal("1.5"), "c": 10**8})
    assert encoded == b'{"a":5.0,"b":1.5,"c":1.0E8}'
