"""The outbox EventRouter with Debezium's defaults and its options."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.errors import ConfigError
from lakecdc.events.envelope import ChangeRecord, envelope_payload, envelope_schema
from lakecdc.events.schema import primitive, struct
from lakecdc.events.source import POSTGRES_SOURCE
from lakecdc.transforms import TransformDataError, build_chain

from .records import source

ROUTER = "io.debezium.transforms.outbox.EventRouter"
UUID = primitive("string", name="io.debezium.data.Uuid", version=1)
JSON = primitive("string", True, name="io.debezium.data.Json", version=1)
ROW = struct([("id", UUID), ("aggregatetype", primitive("string")), ("aggregateid", primitive("string")),
              ("type", primitive("string")), ("payload", JSON)], optional=True, name="dbz.public.outbox.Value")
ENVELOPE = envelope_schema(ROW, POSTGRES_SOURCE, "dbz.public.outbox.Envelope")


def event(op: str = "c", payload: str | None = '{"a":1}', kind: str = "order") -> ChangeRecord:
    image = {"id": "11111111-2222-3333-4444-555555555555", "aggregatetype": kind, "aggregateid": "o-1",
             "type": "created", "payload": payload}
    value = envelope_payload(op, image if op == "d" else None, None if op == "d" else image,
                             source(table="outbox"), 1)
    return ChangeRecord("dbz.public.outbox", None, None, ENVELOPE, value, [("ctx", b"1")])


def router(**props: str):  # noqa: ANN201
    return build_chain({"transforms": "o", "transforms.o.type": ROUTER,
                        **{f"transforms.o.{k}": v for k, v in props.items()}})


def test_defaults_route_by_aggregatetype_key_by_aggregateid_value_is_the_payload() -> None:
    [out] = router().apply([event()])
    assert out.topic == "outbox.event.order" and out.key == "o-1" and out.key_schema == primitive("string")
    assert out.value == '{"a":1}' and out.value_schema == JSON
    assert out.headers[0] == ("ctx", b"1")
    assert out.headers[1][0] == "id" and json.loads(out.headers[1][1]) == {
        "schema": {"type": "string", "optional": False, "name": "io.debezium.data.Uuid", "version": 1},
        "payload": "11111111-2222-3333-4444-555555555555"}


def test_deletes_tombstones_and_updates_are_dropped_or_fatal() -> None:
    chain = router()
    assert chain.apply([event("d"), replace(event(), value=None, value_schema=None), event("u")]) == []
    with pytest.raises(TransformDataError, match="Unexpected update"):
        router(**{"table.op.invalid.behavior": "fatal"}).apply([event("u")])


def test_envelope_placement_builds_a_named_struct_and_headers_get_aliases() -> None:
    [out] = router(**{"table.fields.additional.placement": "type:envelope:eventType,aggregateid:header:agg",
                      "route.topic.replacement": "ev.${routedByValue}"}).apply([event()])
    assert out.topic == "ev.order"
    assert out.value == {"payload": '{"a":1}', "eventType": "created"}
    assert out.value_schema.name == "dbz.public.outbox.order.Value"
    assert out.value_schema.field_names == ("payload", "eventType")
    assert [k for k, _ in out.headers] == ["ctx", "id", "agg"]


def test_empty_payload_tombstone() -> None:
    [out] = router(**{"route.tombstone.on.empty.payload": "true"}).apply([event(payload=None)])
    assert out.value is None and out.value_schema is None and out.key == "o-1"
    with pytest.raises(ConfigError, match="table.fields.additional.placement"):
        router(**{"table.fields.additional.placement": "type:nowhere"})


# ---- partition placement -------------------------------------------------------------------------

PART_ROW = struct([*((f.name, f.schema) for f in ROW.fields), ("shard", primitive("int32", True)),
                   ("region", primitive("int16", True))], optional=True, name="dbz.public.outbox.Value")
PART_ENVELOPE = envelope_schema(PART_ROW, POSTGRES_SOURCE, "dbz.public.outbox.Envelope")


def partitioned(shard: int | None, region: int | None = 1) -> ChangeRecord:
    record = event()
    after = {**record.value["after"], "shard": shard, "region": region}
    return replace(record, value_schema=PART_ENVELOPE, value={**record.value, "after": after})


def test_partition_placement_puts_the_event_in_that_partition() -> None:
    chain = router(**{"table.fields.additional.placement": "shard:partition,type:header"})
    [out] = chain.apply([partitioned(3)])
    assert out.partition == 3 and out.topic == "outbox.event.order"
    assert [k for k, _ in out.headers] == ["ctx", "id", "type"]  # the partition column is no header
    [none] = chain.apply([partitioned(None)])
    assert none.partition is None  # a null column: the producer's partitioner chooses
    # the partition survives the transforms after it, and InsertField's partition.field reads it
    inserted = build_chain({"transforms": "o,i", "transforms.o.type": ROUTER,
                            "transforms.o.table.fields.additional.placement": "shard:partition,type:envelope",
                            "transforms.i.type": "org.apache.kafka.connect.transforms.InsertField$Value",
                            "transforms.i.partition.field": "p"}).apply([partitioned(5)])
    assert inserted[0].partition == 5 and inserted[0].value["p"] == 5


def test_partition_column_must_be_int32_as_debeziums_getInt32() -> None:
    with pytest.raises(TransformDataError, match="Field 'region' is not of type INT32"):
        router(**{"table.fields.additional.placement": "region:partition"}).apply([partitioned(1)])


def test_a_placed_partition_reaches_the_json_lines_sink(tmp_path) -> None:  # noqa: ANN001
    from lakecdc.transport.jsonl import JsonlSink

    [out] = router(**{"table.fields.additional.placement": "shard:partition"}).apply([partitioned(2)])
    sink = JsonlSink(tmp_path / "out.jsonl")
    sink.send([out, replace(out, partition=None)])
    sink.flush()
    sink.close()
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert lines[0]["partition"] == 2 and "partition" not in lines[1]


# ---- table.expand.json.payload -------------------------------------------------------------------

def expanded(payload: str | None, **props: str) -> ChangeRecord:
    [out] = router(**{"table.expand.json.payload": "true", **props}).apply([event(payload=payload)])
    return out


def test_expand_json_payload_infers_a_struct_as_debeziums_json_schema_data() -> None:
    out = expanded('{"total": 12, "big": 3000000000, "f": 1.5, "ok": true, "who": {"name": "x"},'
                   ' "tags": ["a", "b"], "lines": [{"sku": "s", "n": 1}, {"sku": "t", "n": 2}], "none": null,'
                   ' "empty": []}')
    s = out.value_schema
    assert s.type == "struct" and s.name == "payload" and s.optional
    assert s.field_names == ("total", "big", "f", "ok", "who", "tags", "lines")  # null / empty array left out
    assert [s.field(n).schema.type for n in s.field_names] == ["int32", "int64", "double", "boolean", "struct",
                                                               "array", "array"]
    assert s.field("who").schema.name == "payload.who" and s.field("lines").schema.items.name == "payload.lines"
    assert s.field("lines").schema.items.optional  # one distinct element schema: kept as inferred
    assert out.value == {"total": 12, "big": 3000000000, "f": 1.5, "ok": True, "who": {"name": "x"},
                         "tags": ["a", "b"], "lines": [{"sku": "s", "n": 1}, {"sku": "t", "n": 2}]}


def test_expand_json_null_behavior_optional_bytes_and_avro_names() -> None:
    out = expanded('{"a-b": null, "1x": 2}', **{"table.json.payload.null.behavior": "optional_bytes",
                                               "field.name.adjustment.mode": "avro"})
    assert out.value_schema.field_names == ("a_b", "_x")
    assert out.value_schema.field("a_b").schema == primitive("bytes", True)
    # Debezium reads each value by the adjusted name, which the document does not have: null
    assert out.value == {"a_b": None, "_x": None}


def test_array_elements_of_different_shapes_merge_into_a_required_struct() -> None:
    out = expanded('{"l": [{"a": 1}, {"b": "x"}, {"a": 2}]}')
    items = out.value_schema.field("l").schema.items
    assert items.field_names == ("a", "b") and not items.optional
    assert out.value["l"] == [{"a": 1, "b": None}, {"a": None, "b": "x"}, {"a": 2, "b": None}]


@pytest.mark.parametrize("payload", ['"just text"', "not json", '{"a": ', '{"l": [1, "x"]}', '{"l": [1, 3000000000]}',
                                     '{"l": [null]}', ""])
def test_payloads_debezium_cannot_expand_stay_as_they_are(payload: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"):
        out = expanded(payload)
    assert out.value == payload and out.value_schema == JSON
    assert any("JSON expansion failed" in r.getMessage() for r in caplog.records)


def test_expanded_payload_in_an_envelope_and_the_null_payload() -> None:
    out = expanded('{"a": 1}', **{"table.fields.additional.placement": "type:envelope"})
    assert out.value_schema.field("payload").schema.name == "payload" and out.value == {"payload": {"a": 1},
                                                                                         "type": "created"}
    assert expanded(None).value is None


def test_a_json_array_at_the_top_or_a_value_past_a_long_fails_the_record() -> None:
    with pytest.raises(TransformDataError, match="at the top"):
        expanded("[1, 2]")
    with pytest.raises(TransformDataError, match="Invalid value"):
        expanded('{"n": 123456789012345678901234567890}')


@given(st.recursive(st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.text(max_size=4)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.dictionaries(st.from_regex(r"[a-z]{1,3}", fullmatch=True), inner, max_size=3),
                    max_leaves=12).filter(lambda d: isinstance(d, dict)))
def test_expanded_objects_keep_every_member_with_a_known_schema(document: dict) -> None:
    """Any JSON object of scalars and objects comes back as a struct holding exactly its members whose
    schema can be inferred (not the nulls), with their values."""
    out = expanded(json.dumps(document))

    def known(node: dict) -> dict:
        return {k: known(v) if isinstance(v, dict) else v for k, v in node.items() if v is not None}

    def present(value: dict) -> dict:
        return {k: present(v) if isinstance(v, dict) else v for k, v in value.items()}

    assert present(out.value) == known(document)
