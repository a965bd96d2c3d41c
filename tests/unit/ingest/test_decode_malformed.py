"""Malformed records are dead letters naming what is wrong; the decoder never raises and never
turns one into a row (issue 12, "Bad input").

Each case mutates one real Debezium 3.6.3 record (the shared PostgreSQL golden workload) and
decodes it between two good records of the same topic: the bad one must be a dead letter whose
reason names the field, the good ones must decode as before.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import orjson
import pytest
from ingest_records import encode, golden_records, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import DecodedBatch, Decoder

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
Record = dict[str, Any]


def config() -> IngestConfig:
    return IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"})


def records() -> list[Record]:
    return golden_records()


def first(topic_end: str, op: str | None = None, status: str | None = None) -> Record:
    for r in records():
        value = r["value"]
        if not r["topic"].endswith(topic_end) or value is None:
            continue
        payload = value["payload"]
        if (op is None or payload.get("op") == op) and (status is None or payload.get("status") == status):
            return copy.deepcopy(r)
    raise AssertionError(f"no golden record {topic_end} {op} {status}")


def decode_between_good(bad: Record, raw_key: bytes | None = None, raw_value: bytes | None = None,
                        key_given: bool = False) -> tuple[DecodedBatch, int]:
    """Decode good, bad, good (one topic, offsets 0, 1, 2); returns the batch and the bad offset."""
    good = [r for r in records() if r["topic"] == bad["topic"] and r["value"] is not None]
    good = [r for r in good if r["value"]["schema"] == bad["value"]["schema"]] or good
    key = raw_key if key_given else encode(bad["key"])
    value = raw_value if raw_value is not None else encode(bad["value"])
    table = kafka_table([(good[0]["topic"], encode(good[0]["key"]), encode(good[0]["value"])),
                         (bad["topic"], key, value),
                         (good[-1]["topic"], encode(good[-1]["key"]), encode(good[-1]["value"]))])
    return Decoder(config()).decode(table, NOW), 1


def assert_dead(batch: DecodedBatch, offset: int, *words: str) -> str:
    dead = [d for d in batch.dead_letters if d.offset == offset]
    assert len(dead) == 1, f"offset {offset} not dead-lettered: {batch.dead_letters}"
    reason = dead[0].reason
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"
    for segment in batch.segments:
        assert offset not in segment.rows.column("_offset").to_pylist(), "a dead letter became a row"
    for marker in batch.tx_markers:
        assert marker.offset != offset, "a dead letter became a transaction marker"
    return reason


def after(r: Record) -> dict[str, Any]:
    return r["value"]["payload"]["after"]


def source(r: Record) -> dict[str, Any]:
    return r["value"]["payload"]["source"]


def row_field_schema(r: Record, name: str) -> list[dict[str, Any]]:
    """The schema of column ``name`` in both the before and after struct of ``r``."""
    parts = [f for f in r["value"]["schema"]["fields"] if f["field"] in ("before", "after")]
    return [next(f for f in p["fields"] if f["field"] == name) for p in parts]


# ------------------------------------------------------------------ bullet 1: payload vs its schema

def _drop_name(r: Record) -> None:
    del after(r)["name"]


def _extra_field(r: Record) -> None:
    after(r)["not_in_schema"] = 1


def _id_as_text(r: Record) -> None:
    after(r)["id"] = "1"


def _id_as_float(r: Record) -> None:
    after(r)["id"] = 1.5  # pyarrow would truncate it to 1


def _id_null(r: Record) -> None:
    after(r)["id"] = None  # the column is optional: false


def _active_as_int(r: Record) -> None:
    after(r)["active"] = 1


def _tags_as_object(r: Record) -> None:
    after(r)["tags"] = {"a": 1}


def _balance_as_bool(r: Record) -> None:
    after(r)["balance"] = True


PAYLOAD_CASES: dict[str, tuple[Callable[[Record], None], tuple[str, ...]]] = {
    "required field missing": (_drop_name, ("'name'", "missing")),
    "field the schema does not have": (_extra_field, ("'not_in_schema'",)),
    "int32 given as text": (_id_as_text, ("'id'", "int32", "string")),
    "int32 given as a float": (_id_as_float, ("'id'", "int32", "number 1.5")),
    "required column null": (_id_null, ("'id'", "null")),
    "boolean given as a number": (_active_as_int, ("'active'", "boolean", "integer")),
    "array given as an object": (_tags_as_object, ("'tags'", "array", "object")),
    "decimal given as a boolean": (_balance_as_bool, ("'balance'", "boolean")),
}


@pytest.mark.parametrize("case", list(PAYLOAD_CASES))
def test_payload_that_does_not_match_its_schema_is_a_dead_letter(case: str) -> None:
    mutate, words = PAYLOAD_CASES[case]
    bad = first("customers", "r")
    mutate(bad)
    batch, offset = decode_between_good(bad)
    reason = assert_dead(batch, offset, *words)
    assert "dbz.public.customers" in reason
    assert batch.events == 2


def test_wrong_types_inside_nested_values_are_dead_letters() -> None:
    bad = first("customers", "r")
    after(bad)["tags"] = ["a", 7]
    batch, offset = decode_between_good(bad)
    assert_dead(batch, offset, "'tags'", "string", "integer")


# ------------------------------------------------------------------ bullet 1: keys

def test_null_key_on_a_keyed_table_is_a_dead_letter() -> None:
    bad = first("customers", "c")
    batch, offset = decode_between_good(bad, raw_key=None, key_given=True)
    assert_dead(batch, offset, "null key", "id")
    assert batch.events == 2


def test_null_key_is_dead_on_a_table_keyed_in_an_earlier_batch() -> None:
    decoder = Decoder(config())
    good = first("customers", "r")
    decoder.decode(kafka_table([(good["topic"], encode(good["key"]), encode(good["value"]))]), NOW)
    bad = first("customers", "c")
    batch = decoder.decode(kafka_table([(bad["topic"], None, encode(bad["value"]))], first_offset=5), NOW)
    assert_dead(batch, 5, "null key")


def test_keys_are_remembered_from_the_job_state() -> None:
    earlier = Decoder(config())
    earlier.decode(kafka_table([(r["topic"], encode(r["key"]), encode(r["value"])) for r in records()]), NOW)
    assert earlier.keyed_topics() == {"dbz.public.customers": ("id",), "dbz.public.audit_full": ("id",)}
    decoder = Decoder(config())  # the restarted job's, told what the earlier one saw
    for topic, names in earlier.keyed_topics().items():
        decoder.remember_keyed(topic, names)
    bad = first("customers", "c")
    batch = decoder.decode(kafka_table([(bad["topic"], None, encode(bad["value"]))]), NOW)
    assert_dead(batch, 0, "null key")


def test_keyless_table_and_truncate_keep_null_keys() -> None:
    nopk = [r for r in records() if r["topic"].endswith("nopk_events")]
    truncate = first("customers", "t")
    keyed = first("customers", "c")
    table = kafka_table([(keyed["topic"], encode(keyed["key"]), encode(keyed["value"])),
                         (truncate["topic"], None, encode(truncate["value"]))]
                        + [(r["topic"], None, encode(r["value"])) for r in nopk])
    batch = Decoder(config()).decode(table, NOW)
    assert batch.dead_letters == [] and batch.events == 2 + len(nopk)


def _key_payload(r: Record, payload: Any) -> bytes:
    return orjson.dumps({"schema": r["key"]["schema"], "payload": payload})


KEY_CASES: dict[str, tuple[Callable[[Record], bytes | None], tuple[str, ...]]] = {
    "not JSON": (lambda r: b"\x00garbage", ("key", "JSON")),
    "no schema": (lambda r: orjson.dumps(r["key"]["payload"]), ("key", "schema")),
    "payload not an object": (lambda r: _key_payload(r, [1]), ("key", "struct", "array")),
    "field of the wrong type": (lambda r: _key_payload(r, {"id": "1"}), ("key", "'id'", "int32", "string")),
    "field missing": (lambda r: _key_payload(r, {}), ("key", "'id'", "missing")),
    "field the schema does not have": (lambda r: _key_payload(r, {"id": 1, "x": 2}), ("key", "'x'")),
    "other row than the value": (lambda r: _key_payload(r, {"id": 999}), ("key", "'id'", "999")),
    "schema parameters not an object": (
        lambda r: orjson.dumps({"schema": {**r["key"]["schema"], "parameters": 5}, "payload": r["key"]["payload"]}),
        ("key", "parameters")),
}


@pytest.mark.parametrize("case", list(KEY_CASES))
def test_malformed_key_is_a_dead_letter(case: str) -> None:
    make_key, words = KEY_CASES[case]
    bad = first("customers", "c")
    batch, offset = decode_between_good(bad, raw_key=make_key(bad), key_given=True)
    assert_dead(batch, offset, *words)
    assert batch.events == 2


# ------------------------------------------------------------------ bullet 2: what crashed the job

def _set(path: tuple[str, ...], value: Any) -> Callable[[Record], None]:
    def mutate(r: Record) -> None:
        node = r["value"]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return mutate


def _schema_parameters_not_object(r: Record) -> None:
    for field in row_field_schema(r, "balance"):
        field["parameters"] = "scale=2"


CRASH_CASES: dict[str, tuple[str, str | None, Callable[[Record], None], tuple[str, ...]]] = {
    "sequence with one element": ("customers", "c", _set(("payload", "source", "sequence"), '["99090472"]'),
                                  ("sequence",)),
    "sequence not a list": ("customers", "c", _set(("payload", "source", "sequence"), '{"a":1}'), ("sequence",)),
    "sequence element not a number": ("customers", "c", _set(("payload", "source", "sequence"), '["x","1"]'),
                                      ("sequence",)),
    "transaction block is text": ("customers", "c", _set(("payload", "transaction"), "1264"), ("transaction",)),
    "transaction block is a list": ("customers", "c", _set(("payload", "transaction"), []), ("transaction",)),
    "transaction id is a number": ("customers", "c", _set(("payload", "transaction", "id"), 5), ("transaction.id",)),
    "total_order is text": ("customers", "c", _set(("payload", "transaction", "total_order"), "1"),
                            ("total_order",)),
    "source ts_ms is text": ("customers", "c", _set(("payload", "source", "ts_ms"), "noon"), ("ts_ms",)),
    "envelope ts_ms is text": ("customers", "c", _set(("payload", "ts_ms"), "noon"), ("ts_ms",)),
    "lsn at 2^63": ("customers", "c", _set(("payload", "source", "lsn"), 1 << 63), ("lsn",)),
    "lsn negative": ("customers", "r", _set(("payload", "source", "lsn"), -5), ("lsn",)),
    "lsn a float": ("customers", "r", _set(("payload", "source", "lsn"), 99090472.5), ("lsn",)),
    "lsn a boolean": ("customers", "r", _set(("payload", "source", "lsn"), True), ("lsn",)),
    "txId text": ("customers", "c", _set(("payload", "source", "txId"), "x"), ("txId",)),
    "snapshot a number": ("customers", "r", _set(("payload", "source", "snapshot"), 7), ("snapshot",)),
    "connector a number": ("customers", "c", _set(("payload", "source", "connector"), 5), ("connector",)),
    "table a list": ("customers", "c", _set(("payload", "source", "table"), ["customers"]), ("table",)),
    "source block missing": ("customers", "c", _set(("payload", "source"), None), ("source",)),
    "schema parameters not an object": ("customers", "c", _schema_parameters_not_object, ("parameters",)),
}


@pytest.mark.parametrize("case", list(CRASH_CASES))
def test_what_crashed_the_job_is_a_dead_letter(case: str) -> None:
    topic, op, mutate, words = CRASH_CASES[case]
    bad = first(topic, op)
    mutate(bad)
    batch, offset = decode_between_good(bad)
    assert_dead(batch, offset, *words)
    assert batch.events == 2


def _marker(kind: str, **changes: Any) -> Record:
    r = first("transaction", status=kind)
    r["value"]["payload"].update(changes)
    return r


MARKER_CASES: dict[str, tuple[Record, tuple[str, ...]]] = {
    "END event_count text": (_marker("END", event_count="five"), ("event_count",)),
    "END event_count a list": (_marker("END", event_count=[1]), ("event_count",)),
    "END event_count negative": (_marker("END", event_count=-1), ("event_count",)),
    "END event_count missing": (_marker("END", event_count=None), ("event_count",)),
    "END event_count a boolean": (_marker("END", event_count=True), ("event_count",)),
    "END data_collections a number": (_marker("END", data_collections=5), ("data_collections",)),
    "END collection count text": (_marker("END", data_collections=[{"data_collection": "public.customers",
                                                                   "event_count": "x"}]), ("event_count",)),
    "END collection without a name": (_marker("END", data_collections=[{"event_count": 1}]),
                                      ("data_collection",)),
    "END collection twice": (_marker("END", event_count=2, data_collections=[
        {"data_collection": "public.customers", "event_count": 1},
        {"data_collection": "public.customers", "event_count": 1}]), ("twice",)),
    "BEGIN with counts": (_marker("BEGIN", event_count=3), ("BEGIN", "event_count")),
    "status unknown": (_marker("BEGIN", status="START"), ("status",)),
    "id a number": (_marker("BEGIN", id=1264), ("'id'",)),
    "id empty": (_marker("BEGIN", id=""), ("'id'",)),
    "ts_ms text": (_marker("END", ts_ms="noon"), ("ts_ms",)),
}


@pytest.mark.parametrize("case", list(MARKER_CASES))
def test_malformed_transaction_marker_is_a_dead_letter_not_a_marker(case: str) -> None:
    bad, words = MARKER_CASES[case]
    good = [r for r in records() if r["topic"] == "dbz.transaction"][:2]
    table = kafka_table([(r["topic"], encode(r["key"]), encode(r["value"])) for r in good]
                        + [(bad["topic"], encode(bad["key"]), encode(bad["value"]))])
    batch = Decoder(config()).decode(table, NOW)
    assert_dead(batch, 2, "dbz.transaction", *words)
    assert [m.offset for m in batch.tx_markers] == [0, 1]


def test_transaction_marker_not_an_object_is_a_dead_letter() -> None:
    bad = first("transaction", status="BEGIN")
    table = kafka_table([(bad["topic"], encode(bad["key"]), b'{"schema":{"type":"string"},"payload":"BEGIN"}')])
    batch = Decoder(config()).decode(table, NOW)
    assert_dead(batch, 0, "object")


def test_every_reason_names_topic_partition_and_offset_context() -> None:
    bad = first("customers", "c")
    _set(("payload", "source", "lsn"), 1 << 63)(bad)
    batch, offset = decode_between_good(bad)
    letter = next(d for d in batch.dead_letters if d.offset == offset)
    assert letter.topic == "dbz.public.customers" and letter.partition == 0
    assert letter.value == encode(bad["value"]) and letter.key == encode(bad["key"])
    assert "dbz.public.customers" in letter.reason


def test_an_unexpected_error_in_one_record_is_that_records_dead_letter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catch-all: a bug for one record (here a converter raising something unforeseen) dead-letters
    that record with the error named, never the batch."""
    import lakecdc.ingest.decode as decode_module

    real = decode_module.position_from_source

    def flaky(connector: str, src: Any) -> Any:
        if src.get("lsn") == source(first("customers", "c"))["lsn"]:
            raise RuntimeError("boom")
        return real(connector, src)

    monkeypatch.setattr(decode_module, "position_from_source", flaky)
    batch, offset = decode_between_good(first("customers", "c"))
    assert_dead(batch, offset, "RuntimeError", "boom")
    assert batch.events == 2


def test_a_schema_parameter_called_payload_is_not_mistaken_for_the_payload() -> None:
    """The compact split finds ``,"payload":`` once per envelope; a second one means a full parse."""
    record = first("customers", "r")
    for field in row_field_schema(record, "balance"):
        field["parameters"]["payload"] = "x"
    batch, offset = decode_between_good(record)
    assert batch.dead_letters == [] and batch.events == 3


def test_a_delete_of_a_key_only_old_row_has_nulls_in_required_columns() -> None:
    """PostgreSQL REPLICA IDENTITY DEFAULT: the delete's before image has only the key; Debezium
    writes null for every other column, NOT NULL ones included. That is a delete, not a bad record;
    the same null in an insert's row is."""
    delete = first("customers", "d")
    insert = first("customers", "c")
    for r in (delete, insert):
        for field in row_field_schema(r, "name"):
            field["optional"] = False
    delete["value"]["payload"]["before"]["name"] = None
    insert["value"]["payload"]["after"]["name"] = None
    batch, offset = decode_between_good(delete)
    assert batch.dead_letters == [] and batch.events == 3
    batch, offset = decode_between_good(insert)
    assert_dead(batch, offset, "'name'", "null")


def test_an_unexpected_error_in_a_column_converter_is_that_rows_dead_letter(monkeypatch: pytest.MonkeyPatch) -> None:
    import lakecdc.ingest.connect_types as connect_types

    real = connect_types._dates

    def flaky(values: list[Any]) -> Any:
        if 19723 in values:  # 2024-01-01, audit_full's first row
            raise LookupError("surprise")
        return real(values)

    monkeypatch.setattr(connect_types, "_dates", flaky)
    audit = [r for r in records() if r["topic"].endswith("audit_full") and r["value"] is not None]
    table = kafka_table([(r["topic"], encode(r["key"]), encode(r["value"])) for r in audit])
    batch = Decoder(config()).decode(table, NOW)
    dated = [j for j, r in enumerate(audit) if (r["value"]["payload"]["after"] or
                                                r["value"]["payload"]["before"])["d"] == 19723]
    assert dated and sorted(d.offset for d in batch.dead_letters) == dated
    for offset in dated:
        assert_dead(batch, offset, "'d'", "LookupError", "surprise")
    assert batch.events == len(audit) - len(dated)
