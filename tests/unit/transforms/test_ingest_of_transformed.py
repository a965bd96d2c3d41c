"""The ingest decoder on transformed topics: a ByLogicalTableRouter topic keeps the source table in a
column of the row (so keys of merged tables stay distinct), an unwrapped topic is refused with a
dead-letter reason naming the transform."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa

from lakecdc.config.ingest import IngestConfig
from lakecdc.events.envelope import ChangeRecord
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA
from lakecdc.transforms import build_chain
from lakecdc.transport.sink import RecordSerializer

from .records import change, delete_pair, row

NOW = datetime(2026, 11, 26, tzinfo=timezone.utc)


def kafka_table(records: list[ChangeRecord]) -> pa.Table:
    serializer = RecordSerializer()
    n = len(records)
    return pa.Table.from_arrays([
        pa.array([serializer.key_bytes(r) for r in records], pa.binary()),
        pa.array([serializer.value_bytes(r) for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()), pa.array([0] * n, pa.int32()),
        pa.array(range(n), pa.int64()), pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([0] * n, pa.int32()), pa.array([None] * n, KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)


def decoder() -> Decoder:
    return Decoder(IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"}))


def test_logical_table_key_field_becomes_a_column_of_the_merged_table() -> None:
    chain = build_chain({"transforms": "l", "transforms.l.type": "io.debezium.transforms.ByLogicalTableRouter",
                         "transforms.l.topic.regex": r"dbz\.public\.(items|things)",
                         "transforms.l.topic.replacement": "dbz.all"})
    source = [change("c", None, row(1, "item")), change("c", None, row(1, "thing"), table="things"),
              *delete_pair(1)]
    batch = decoder().decode(kafka_table(chain.apply(source)), NOW)
    assert batch.dead_letters == []
    [segment] = batch.segments
    assert segment.topic == "dbz.all"
    assert segment.key_columns == ("id", "__dbz__physicalTableIdentifier")
    assert [c.name for c in segment.columns][-1] == "__dbz__physicalTableIdentifier"
    rows = segment.rows.to_pylist()
    assert [(r["id"], r["name"], r["__dbz__physicalTableIdentifier"], r["_op"]) for r in rows] == [
        (1, "item", "dbz.public.items", "c"), (1, "thing", "dbz.public.things", "c"),
        (1, "a", "dbz.public.items", "d")]


def test_unwrapped_records_are_dead_letters_naming_extract_new_record_state() -> None:
    chain = build_chain({"transforms": "u", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                         "transforms.u.add.fields": "op"})
    batch = decoder().decode(kafka_table(chain.apply([change("c", None, row(1)), *delete_pair(1)])), NOW)
    assert batch.segments == [] and len(batch.dead_letters) == 2  # the create and the null-payload delete
    assert all("ExtractNewRecordState" in d.reason and "dbz.public.items" in d.reason for d in batch.dead_letters)


def test_outbox_events_are_dead_letters_naming_the_event_router() -> None:
    from .test_outbox import event

    chain = build_chain({"transforms": "o", "transforms.o.type": "io.debezium.transforms.outbox.EventRouter"})
    batch = decoder().decode(kafka_table(chain.apply([event()])), NOW)
    [dead] = batch.dead_letters
    assert "EventRouter" in dead.reason and "outbox.event.order" in dead.reason


def test_a_key_field_of_another_type_outside_the_row_is_still_refused() -> None:
    from dataclasses import replace

    from lakecdc.events.schema import INT32, struct

    record = change("c", None, row(1))
    odd = replace(record, key_schema=struct([("id", INT32), ("shard", INT32)], name="dbz.public.items.Key"),
                  key={"id": 1, "shard": 3})
    [dead] = decoder().decode(kafka_table([odd]), NOW).dead_letters
    assert "key field 'shard' is not a column of the row" in dead.reason
