"""``errors.tolerance`` / ``errors.log.*`` on the converter stage: a record the sink's JSON converter
cannot encode stops the capture (none) or is skipped (all), as Connect's ``convertTransformedRecord``
runs ``KEY_CONVERTER`` / ``VALUE_CONVERTER`` in its error handler. The failure is a real one: Connect's
``MaskField`` puts a zero of scale 0 into a scale-2 decimal field, which the converter refuses. Last,
a record the broker refuses after the send (KIP-779), on a real Apache Kafka."""

from __future__ import annotations

import json
import logging
import secrets
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_source import ScriptedConnector, ScriptedStream

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.errors import RecordConversionError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.logical import decimal_schema
from lakecdc.events.schema import INT32, primitive, struct
from lakecdc.transforms import build_chain
from lakecdc.transforms.errors import StageFailure
from lakecdc.transport.jsonl import JsonlSink
from lakecdc.transport.offsets import FileOffsetStore, offset_key
from lakecdc.transport.sink import RecordSerializer

VALUE = struct([("id", INT32), ("price", decimal_schema(2, 10, optional=True))], optional=True, name="dbz.prices.Value")
KEY = struct([("id", INT32)], name="dbz.prices.Key")
MASK = {"transforms": "m", "transforms.m.type": "org.apache.kafka.connect.transforms.MaskField$Value",
        "transforms.m.fields": "price", "name": "shop"}


def record(id_: int, priced: bool) -> ChangeRecord:
    """A record the mask leaves convertible (no price: a null stays null) or not (a price)."""
    return ChangeRecord("dbz.prices", KEY, {"id": id_}, VALUE, {"id": id_, "price": b"\x01" if priced else None})






class ConvertingListSink:
    """Converts and accepts record by record, as ``KafkaSink.send`` produces them."""

    def __init__(self) -> None:
        self.serializer, self.lines = RecordSerializer(), []  # type: ignore[var-annotated]

    def send(self, records: list[ChangeRecord]) -> None:
        for r in records:
            self.lines.append((self.serializer.key_bytes(r), self.serializer.value_bytes(r)))

    def flush(self) -> None:
        pass


def capture(sink: Any, directory: Path, properties: dict[str, str], batches: list[list[ChangeRecord]]) -> Any:
    store = FileOffsetStore(directory / "offsets.json")
    coordinator = CaptureCoordinator(ScriptedConnector("conv", ScriptedStream(batches),
                                                       config=SimpleNamespace(transform_chain=build_chain(properties))),
                                     sink, store,
                                     CoordinatorSettings(snapshot_mode="no_data", commit_interval_s=0.0,
                                                         stop_when_idle_s=5.0))
    coordinator.run()
    return coordinator, store.load(offset_key("conv", {"server": "dbz"}))


def ids(path: Path) -> list[int]:
    return [json.loads(line)["key"]["payload"]["id"] for line in path.read_text().splitlines()]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.booleans(), max_size=6), min_size=1, max_size=5))
def test_all_skips_exactly_the_records_the_converter_refuses(plan: list[list[bool]]) -> None:
    """Whatever the batches and wherever the failing records are in them, both sink shapes (writing the
    batch at once, JSON lines; accepting record by record, Kafka) get every convertible record once, in
    order, and the offset still moves past the skipped ones."""
    counter = iter(range(1, 10**6))
    batches = [[record(next(counter), priced) for priced in batch] for batch in plan]
    convertible = [r.key["id"] for batch in batches for r in batch if r.value["price"] is None]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        with JsonlSink(directory / "out.jsonl") as sink:
            coordinator, offset = capture(sink, directory, {**MASK, "errors.tolerance": "all"}, batches)
        assert ids(directory / "out.jsonl") == convertible
        assert coordinator._errors.skipped == sum(map(sum, plan))
        assert offset["lsn"] == 100 + 10 * len(plan)
        listed = ConvertingListSink()
        capture(listed, directory, {**MASK, "errors.tolerance": "all", "name": "other"}, batches)
        assert [json.loads(key)["payload"]["id"] for key, _ in listed.lines] == convertible


def test_none_stops_at_the_record_having_sent_the_ones_before_it(tmp_path: Path) -> None:
    batches = [[record(1, False), record(2, False), record(3, True), record(4, False)]]
    with JsonlSink(tmp_path / "out.jsonl") as sink, \
            pytest.raises(StageFailure, match=r"value converter \(org\.apache\.kafka\.connect\.json\.JsonConverter\) "
                                              r"failed on a record of topic 'dbz\.prices'") \
            as failure:
        capture(sink, tmp_path, MASK, batches)
    assert isinstance(failure.value.__context__, RecordConversionError)
    # in Connect's words (Decimal.fromLogical), not the encoder's
    assert str(failure.value).endswith("Decimal value has mismatching scale for given Decimal schema. Schema has "
                                       "scale 2, value has scale 0 (field 'price')")
    assert ids(tmp_path / "out.jsonl") == [1, 2]  # never committed: sent again after a restart
    assert not (tmp_path / "offsets.json").exists()


def test_errors_log_enable_names_the_converter_stage(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    properties = {**MASK, "errors.tolerance": "all", "errors.log.enable": "true",
                  "errors.log.include.messages": "true"}
    with JsonlSink(tmp_path / "out.jsonl") as sink, caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        capture(sink, tmp_path, properties, [[record(1, True), record(2, False)]])
    [entry] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert entry.startswith("Error encountered in task shop-0. Executing stage 'VALUE_CONVERTER' with class "
                            "'org.apache.kafka.connect.json.JsonConverter', where source record is = "
                            "ChangeRecord{topic='dbz.prices'")
    assert "the record is skipped (errors.tolerance=all)" in entry
    assert ids(tmp_path / "out.jsonl") == [2]


def test_a_key_the_converter_refuses_is_the_key_converter_stage(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """ValueToKey copies the masked decimal into the key: the KEY_CONVERTER stage fails, as in Connect."""
    properties = {**MASK, "transforms": "m,k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey",
                  "transforms.k.fields": "id,price", "errors.tolerance": "all", "errors.log.enable": "true"}
    with JsonlSink(tmp_path / "out.jsonl") as sink, caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        capture(sink, tmp_path, properties, [[record(1, True), record(2, False)]])
    [entry] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "Executing stage 'KEY_CONVERTER'" in entry and "key converter" in entry
    assert [json.loads(line)["key"]["payload"] for line in (tmp_path / "out.jsonl").read_text().splitlines()] == [
        {"id": 2, "price": None}]


def test_a_later_transform_that_drops_the_field_makes_the_record_convertible(tmp_path: Path) -> None:
    """In Connect the failure belongs to the converter, not to MaskField: dropping the masked field
    afterwards (ReplaceField) sends the record."""
    properties = {**MASK, "transforms": "m,r", "transforms.r.exclude": "price",
                  "transforms.r.type": "org.apache.kafka.connect.transforms.ReplaceField$Value"}
    with JsonlSink(tmp_path / "out.jsonl") as sink:
        capture(sink, tmp_path, properties, [[record(1, True), record(2, False)]])
    assert ids(tmp_path / "out.jsonl") == [1, 2]


# ---- KIP-779: a record the broker refuses after the send, on a real Apache Kafka ----------------

NOTE = struct([("id", INT32), ("note", primitive("string", True))], optional=True, name="dbz.notes.Value")


@pytest.mark.integration
@pytest.mark.parametrize("tolerance", ["none", "all"])
def test_a_record_the_broker_refuses_is_skipped_only_with_all(kafka_broker: Any, tmp_path: Path, tolerance: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """The topic takes batches up to 2000 bytes (max.message.bytes); the producer hands the 8 kB one
    over and the broker refuses it (RecordTooLargeException). Connect's source task fails on it, or
    with errors.tolerance=all logs it and commits past it (WorkerSourceTask.producerSendFailed)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from lakecdc.devstack.broker import kafka_client_defaults
    from lakecdc.errors import SinkDeliveryError
    from lakecdc.transport.kafka import KafkaSink

    servers = kafka_broker.bootstrap_servers
    topic = f"kip779{tolerance}{tmp_path.name[-6:]}.notes"
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "2000"})])[topic].result(timeout=60)

    def note(id_: int, size: int) -> ChangeRecord:
        # random text: a compressed batch of a repeated letter would fit under the limit
        return ChangeRecord(topic, KEY, {"id": id_}, NOTE, {"id": id_, "note": secrets.token_urlsafe(size)})
    batches = [[note(1, 10), note(2, 10)], [note(3, 6000)], [note(4, 10)]]
    # one record per produce request: the broker refuses a whole batch over max.message.bytes, and
    # capture no longer waits for each commit's records before sending the next (librdkafka does not
    # split a refused batch as Java's producer does)
    sink = KafkaSink(servers, producer_config={"linger.ms": "0", "batch.num.messages": "1"})
    try:
        with caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
            if tolerance == "none":
                with pytest.raises(SinkDeliveryError, match="MSG_SIZE_TOO_LARGE|too large"):
                    capture(sink, tmp_path, {"errors.tolerance": "none"}, batches)
                offset = FileOffsetStore(tmp_path / "offsets.json").load(offset_key("conv", {"server": "dbz"}))
            else:
                _, offset = capture(sink, tmp_path, {"errors.tolerance": "all", "errors.log.enable": "true",
                                                     "name": "shop"}, batches)
    finally:
        sink.close()
    reader = Consumer({"bootstrap.servers": servers, "group.id": topic, "auto.offset.reset": "earliest",
                       **kafka_client_defaults("consumer")})
    reader.assign([TopicPartition(topic, 0, 0)])
    ids_read = []
    for _ in range(40):
        message = reader.poll(0.5)
        if message is not None and message.error() is None:
            ids_read.append(json.loads(message.key())["payload"]["id"])
        elif message is None and ids_read:
            break
    reader.close()
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    if tolerance == "none":
        # nothing committed past the refused record (capture may stop before storing the offset of
        # the records before it: they are sent again); a record sent after it before the failure was
        # reported may be on the topic (as with Connect: sends do not wait for the one before)
        assert ids_read[:2] == [1, 2] and 3 not in ids_read and (offset is None or offset["lsn"] == 110)
        assert not logged
    else:
        assert ids_read == [1, 2, 4] and offset["lsn"] == 130
        assert any(m.startswith(f"failed to send a record to topic '{topic}'") for m in logged)
        assert any("Executing stage 'KAFKA_PRODUCE' with class 'org.apache.kafka.connect.runtime.WorkerSourceTask'"
                   in m for m in logged)
