"""JsonlSink: Debezium's records written back byte-for-byte, tombstones, headers, durability."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_paths import SHARED_ROOT

from lakecdc.errors import SinkDeliveryError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import INT32, OPTIONAL_STRING, struct
from lakecdc.transport import JsonlSink, RecordSerializer, Sink, read_jsonl
from lakecdc.transport.jsonl import change_records_from_jsonl, encode_header_value, jsonl_line

GOLDEN = SHARED_ROOT / "conformance/postgres/workload.jsonl"
KEY = struct([("id", INT32)], name="shop.public.t.Key")
VALUE = struct([("id", INT32), ("name", OPTIONAL_STRING)], name="shop.public.t.Value", optional=True)


def record(i: int, name: str | None = "x", **kw: object) -> ChangeRecord:
    return ChangeRecord("shop.public.t", KEY, {"id": i}, VALUE, {"id": i, "name": name}, **kw)  # type: ignore[arg-type]


def golden_without_seq() -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "seq"} for r in read_jsonl(GOLDEN)]


def test_debezium_capture_round_trips_through_the_sink(tmp_path: Path) -> None:
    records = change_records_from_jsonl(GOLDEN)
    out = tmp_path / "out.jsonl"
    with JsonlSink(out) as sink:
        sink.send(records)
    assert read_jsonl(out) == golden_without_seq()
    assert sum(1 for r in read_jsonl(out) if r["value"] is None) == 4  # the workload's tombstones


def test_line_shape_and_key_order(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send([record(1, "a\u00e9\n")])
    line = out.read_text(encoding="utf-8")
    assert line.endswith("\n") and line.count("\n") == 1
    parsed = json.loads(line)
    assert list(parsed) == ["topic", "key", "value", "headers"]
    assert parsed["key"] == {"schema": KEY.to_json(), "payload": {"id": 1}}
    assert parsed["value"]["payload"] == {"id": 1, "name": "a\u00e9\n"}
    assert "\u00e9" in line  # UTF-8 kept, as Jackson writes it


def test_tombstone_and_keyless_records(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send([record(1).tombstone(),
                   ChangeRecord("shop.public.nokey", None, None, VALUE, {"id": 3, "name": None})])
    tomb, keyless = read_jsonl(out)
    assert tomb["value"] is None and tomb["key"]["payload"] == {"id": 1}
    assert keyless["key"] is None and keyless["value"]["payload"] == {"id": 3, "name": None}


def test_headers_embedded_as_json_or_text(tmp_path: Path) -> None:
    oldkey = b'{"schema":{"type":"struct"},"payload":{"id":1}}'
    out = tmp_path / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send([record(2, headers=[("__debezium.oldkey", oldkey), ("note", b"plain text")])])
    (line,) = read_jsonl(out)
    assert line["headers"] == [
        {"key": "__debezium.oldkey", "value": {"schema": {"type": "struct"}, "payload": {"id": 1}}},
        {"key": "note", "value": "plain text"},
    ]
    (back,) = change_records_from_jsonl(out)
    assert back.headers[0] == ("__debezium.oldkey", oldkey)


def test_schemas_disabled_writes_bare_payloads(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    with JsonlSink(out, key_schemas_enable=False, value_schemas_enable=False) as sink:
        sink.send([record(5, "n")])
    (line,) = read_jsonl(out)
    assert line["key"] == {"id": 5} and line["value"] == {"id": 5, "name": "n"}


def test_appends_across_sinks_and_counts(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send([record(1), record(2)])
        assert sink.records_written == 2
    with JsonlSink(out) as sink:
        sink.send([record(3)])
    assert [r["key"]["payload"]["id"] for r in read_jsonl(out)] == [1, 2, 3]
    with JsonlSink(out, append=False) as sink:
        sink.send([record(4)])
    assert [r["key"]["payload"]["id"] for r in read_jsonl(out)] == [4]


def test_flush_makes_data_visible_to_another_reader(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    sink = JsonlSink(out)
    sink.send([record(1)])
    sink.flush()
    assert len(read_jsonl(out)) == 1  # before close
    sink.close()
    sink.close()  # idempotent


def test_payload_not_fitting_schema_names_topic(tmp_path: Path) -> None:
    bad = ChangeRecord("shop.public.t", KEY, {"wrong": 1}, VALUE, None)  # lacks the key field
    with JsonlSink(tmp_path / "o.jsonl") as sink, pytest.raises(SinkDeliveryError,
                                                                match="key of a record for topic 'shop.public.t'"):
        sink.send([bad])


def test_key_without_schema_is_an_error() -> None:
    bad = ChangeRecord("t", None, {"id": 1}, None, None)
    with pytest.raises(SinkDeliveryError, match="record for topic 't' has a key but no key schema"):
        RecordSerializer().key_bytes(bad)


def test_serializer_compiles_once_per_schema() -> None:
    serializer = RecordSerializer()
    first = serializer.encoder(KEY, True)
    assert serializer.encoder(KEY, True) is first
    equal_copy = struct([("id", INT32)], name="shop.public.t.Key")
    assert equal_copy is not KEY and serializer.encoder(equal_copy, True) is first
    assert serializer.encoder(KEY, False) is not first


def test_header_json_made_once_per_distinct_list_and_exact_for_each(tmp_path: Path) -> None:
    """Context headers are the same list on every record: their JSON is cached by content, so a
    record with other headers (a key change's ``__debezium.oldkey``), an equal list built anew and
    a header given as a list, not a tuple, each get their own headers, as ``jsonl_line`` writes them."""
    context = [("__debezium.context.taskId", b'{"schema":{"type":"string","optional":false},"payload":"0"}')]
    oldkey = [("__debezium.oldkey", b'{"payload":{"id":1}}'), *context]
    records = [record(1, headers=context), record(2, headers=oldkey), record(3, headers=list(context)),
               record(4, headers=[["note", b"plain"]]), record(5), record(6, headers=context)]
    out = tmp_path / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send(records[:3])
        sink.send(records[3:])
    serializer = RecordSerializer()
    expected = b"".join(jsonl_line(r.topic, serializer.key_bytes(r), serializer.value_bytes(r), r.headers)
                        for r in records)
    assert out.read_bytes() == expected
    assert [len(line["headers"]) for line in read_jsonl(out)] == [1, 2, 1, 1, 0, 1]


def test_jsonl_line_and_header_helpers() -> None:
    assert jsonl_line("t", None, None) == b'{"topic":"t","key":null,"value":null,"headers":[]}\n'
    assert jsonl_line("t", b'{"a":1}', b"2", [("h", b"x")]) == (
        b'{"topic":"t","key":{"a":1},"value":2,"headers":[{"key":"h","value":"x"}]}\n'
    )
    assert encode_header_value(b"12") == b"12"
    assert encode_header_value(b"not json") == b'"not json"'
    assert encode_header_value(None) == b"null"


def test_jsonl_sink_satisfies_the_protocol(tmp_path: Path) -> None:
    with JsonlSink(tmp_path / "o.jsonl") as sink:
        assert isinstance(sink, Sink)


def test_reopening_after_an_interrupted_write_drops_the_partial_line(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    with JsonlSink(out) as sink:
        sink.send([record(1), record(2)])
    with open(out, "ab") as file:  # what a kill -9 in the middle of write() leaves behind
        file.write(b'{"topic":"shop.public.t","key":{"schema":{"ty')
    with JsonlSink(out) as sink:
        sink.send([record(3)])
    assert [r["key"]["payload"]["id"] for r in read_jsonl(out)] == [1, 2, 3]


def test_reopening_a_file_that_is_only_a_partial_line(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    out.write_bytes(b'{"topic":"x"' * 10000)  # longer than one read block, no newline at all
    with JsonlSink(out) as sink:
        sink.send([record(4)])
    assert [r["key"]["payload"]["id"] for r in read_jsonl(out)] == [4]


WRITER = """
import sys
from lakecdc.events.schema import INT32, OPTIONAL_STRING, struct
from lakecdc.events.envelope import ChangeRecord
from lakecdc.transport import JsonlSink
key = struct([("id", INT32)], name="k.Key")
value = struct([("id", INT32), ("name", OPTIONAL_STRING)], name="k.Value", optional=True)
sink = JsonlSink(sys.argv[1])
i = 0
print("ready", flush=True)
while True:
    sink.send([ChangeRecord("t", key, {"id": i + n}, value, {"id": i + n, "name": "x" * 300}) for n in range(100)])
    i += 100
    if i % 1000 == 0:
        sink.flush()
"""


def test_kill_9_during_writes_leaves_a_file_the_next_sink_repairs(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "o.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    time.sleep(0.7)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with JsonlSink(out) as sink:
        sink.send([record(-1)])
    lines = read_jsonl(out)  # every line parses
    ids = [r["key"]["payload"]["id"] for r in lines]
    assert ids[-1] == -1 and len(ids) > 100
    assert ids[:-1] == list(range(len(ids) - 1))  # nothing reordered or half-written survives


@pytest.mark.parametrize("schemas", [True, False])
def test_payloads_encoded_ahead_are_written_as_the_record_would_be(tmp_path: Path, schemas: bool) -> None:
    """A snapshot worker sends payloads without schema text (``payload_bytes``); wrapped in
    ``EncodedPayload`` they give the bytes of the record encoded by the sink itself, with or
    without schemas, in the JSON-lines file and as Kafka key/value bytes."""
    from lakecdc.transport.sink import EncodedPayload

    original = [record(1, "a\u00e9"), record(2, None),
                ChangeRecord("shop.public.nokey", None, None, VALUE, {"id": 3, "name": "z"})]
    ahead = RecordSerializer()
    encoded = [ChangeRecord(r.topic, r.key_schema,
                            None if (k := ahead.payload_bytes(r, "key")) is None else EncodedPayload(k),
                            r.value_schema, EncodedPayload(ahead.payload_bytes(r, "value")))  # type: ignore[arg-type]
               for r in original]
    sink_serializer = RecordSerializer(schemas, schemas)
    for plain, early in zip(original, encoded):
        assert sink_serializer.key_bytes(early) == sink_serializer.key_bytes(plain)
        assert sink_serializer.value_bytes(early) == sink_serializer.value_bytes(plain)
    first, second = tmp_path / "plain.jsonl", tmp_path / "early.jsonl"
    for path, records in ((first, original), (second, encoded)):
        with JsonlSink(path, key_schemas_enable=schemas, value_schemas_enable=schemas) as sink:
            sink.send(records)
    assert second.read_bytes() == first.read_bytes()


def test_payload_that_does_not_fit_its_schema_names_the_topic() -> None:
    with pytest.raises(SinkDeliveryError, match="shop.public.t"):
        RecordSerializer().payload_bytes(ChangeRecord("shop.public.t", KEY, {"id": 1}, VALUE, {"name": "x"}), "value")
