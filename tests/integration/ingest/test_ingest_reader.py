"""The Python Kafka reader against a real broker, and decoding what it delivers."""

from __future__ import annotations

import queue
import threading
import time
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from ingest_broker import create_topics, golden_records, publish, publish_records, unique_prefix

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.reader import PythonKafkaReader
from lakecdc.lake.frames import kafka_schema
from lakecdc.lake.segments import union_segments

pytestmark = pytest.mark.integration


def config(broker, prefix: str, **props: str) -> IngestConfig:
    return IngestConfig.from_properties({"kafka.bootstrap.servers": broker.bootstrap_servers,
                                         "topic.prefix": prefix, "batch.max.wait.ms": "300", **props})


def read_all(cfg: IngestConfig, start=lambda t, p: None, spark=None):
    reader = PythonKafkaReader(cfg, start, threading.Event(), available_now=True, spark=spark)
    try:
        return list(reader.batches())
    finally:
        reader.close()


@pytest.mark.spark4
def test_batches_have_exactly_the_kafka_source_columns(broker, spark) -> None:
    prefix = unique_prefix("rd")
    create_topics(broker.bootstrap_servers, [f"{prefix}.public.t"])
    publish(broker.bootstrap_servers, [(f"{prefix}.public.t", b"k1", b"v1"), (f"{prefix}.public.t", None, None)],
            headers=[("h", b"\x00\x01")])
    batches = read_all(config(broker, prefix), spark=spark)
    assert batches[-1].at_end_of_data and batches[-1].lagging == frozenset()
    df = next(b for b in batches if b.records.num_rows).df
    assert df.schema == kafka_schema()
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [(r.key, r.value, r.topic, r.partition, r.offset) for r in rows] == [
        (bytearray(b"k1"), bytearray(b"v1"), f"{prefix}.public.t", 0, 0), (None, None, f"{prefix}.public.t", 0, 1)]
    assert rows[0].headers[0].key == "h" and bytes(rows[0].headers[0].value) == b"\x00\x01"
    assert rows[0].timestampType == 0  # CreateTime
    assert abs((datetime.now(timezone.utc) - rows[0].timestamp.replace(tzinfo=timezone.utc)).total_seconds()) < 600


def test_reading_starts_after_the_offset_the_tables_committed(broker) -> None:
    prefix = unique_prefix("rs")
    topic = f"{prefix}.public.t"
    create_topics(broker.bootstrap_servers, [topic, f"{prefix}.public.u"])
    publish(broker.bootstrap_servers, [(topic, None, b"%d" % i) for i in range(10)])
    publish(broker.bootstrap_servers, [(f"{prefix}.public.u", None, b"u")])
    batches = read_all(config(broker, prefix), start=lambda t, p: 6 if t == topic else None)
    got = [(r["topic"], r["offset"]) for b in batches for r in b.records.select(["topic", "offset"]).to_pylist()]
    assert sorted(o for t, o in got if t == topic) == [7, 8, 9]
    assert [o for t, o in got if t != topic] == [0]


def test_a_topic_created_while_running_is_read_without_restart(broker) -> None:
    prefix = unique_prefix("nt")
    create_topics(broker.bootstrap_servers, [f"{prefix}.public.first"])
    publish(broker.bootstrap_servers, [(f"{prefix}.public.first", None, b"1")])
    stop = threading.Event()
    reader = PythonKafkaReader(config(broker, prefix, **{"topic.refresh.interval.ms": "500"}), lambda t, p: None,
                               stop, available_now=False)
    seen: set[str] = set()
    reading = threading.Event()  # the reader has delivered the first topic's record: it is running

    def late_topic() -> None:
        if reading.wait(60):
            create_topics(broker.bootstrap_servers, [f"{prefix}.public.second"])
            publish(broker.bootstrap_servers, [(f"{prefix}.public.second", None, b"2")])

    threading.Thread(target=late_topic, daemon=True).start()
    deadline = time.monotonic() + 60
    try:
        for batch in reader.batches():
            seen.update(batch.records.column("topic").to_pylist())
            if f"{prefix}.public.first" in seen:
                reading.set()
            if f"{prefix}.public.second" in seen or time.monotonic() > deadline:
                stop.set()
    finally:
        reader.close()
    assert seen == {f"{prefix}.public.first", f"{prefix}.public.second"}


def test_golden_records_through_the_broker_decode_to_the_source_values(broker) -> None:
    prefix = unique_prefix("gd")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    cfg = config(broker, prefix)
    batches = read_all(cfg)
    assert sum(b.records.num_rows for b in batches) == len(records)
    decoder = Decoder(cfg)
    segments, markers, tombstones = [], [], 0
    for b in batches:
        decoded = decoder.decode(b.records, b.read_at)
        assert decoded.dead_letters == []
        segments += decoded.segments
        markers += decoded.tx_markers
        tombstones += decoded.tombstones
    assert tombstones == 4 and len(markers) == 22
    _, customers = union_segments([s for s in segments if s.topic == f"{prefix}.public.customers"])
    by_name = {}
    for row in sorted(customers.to_pylist(), key=lambda r: r["_offset"]):
        if row["name"]:
            by_name[row["name"]] = row
    assert by_name["Alice"]["balance"] == Decimal("150.75") and by_name["Alice"]["active"] is False
    assert by_name["Dave"]["balance"] == Decimal("12345678.99") and by_name["Dave"]["loyalty_points"] == 5
    assert by_name["Frank"]["created_at"] == datetime(2024, 9, 10, 11, 12, 13, tzinfo=timezone.utc)
    _, audit = union_segments([s for s in segments if s.topic == f"{prefix}.public.audit_full"])
    amounts = [r["amount"] for r in sorted(audit.to_pylist(), key=lambda r: r["_offset"])]
    assert amounts == [Decimal("1.5"), Decimal("-0.000001"), Decimal("99999999999999999999.123456789"),
                       Decimal("-0.000001")]


def test_read_ahead_of_a_continuous_job_a_batch_ends_only_once_the_job_wants_it(broker) -> None:
    """``batches(wanted)``: while the batch before is applied, records keep joining the next one past
    ``batch.max.wait.ms`` (300 ms here) and the end of data; once wanted it ends as a batch the job
    started reading then would (here: at the end of data); a full batch ends whether wanted or not."""
    prefix = unique_prefix("wa")
    topic = f"{prefix}.public.t"
    create_topics(broker.bootstrap_servers, [topic])
    publish(broker.bootstrap_servers, [(topic, None, b"%d" % i) for i in range(3)])
    stop, wanted = threading.Event(), threading.Event()
    reader = PythonKafkaReader(config(broker, prefix, **{"batch.max.records": "8"}), lambda t, p: None, stop,
                               available_now=False)
    out: queue.Queue[Any] = queue.Queue()

    def read() -> None:
        try:
            for batch in reader.batches(wanted):
                wanted.clear()  # as ``ReadAhead`` does: before the next batch is read
                out.put(batch)
        except BaseException as exc:  # raised in the test below
            out.put(exc)
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        with pytest.raises(queue.Empty):
            out.get(timeout=1.5)  # 5x the window, read to the end: not wanted, so not ended
        publish(broker.bootstrap_servers, [(topic, None, b"%d" % i) for i in range(3, 5)])
        time.sleep(1.0)
        assert out.empty()
        wanted.set()
        first = out.get(timeout=10)
        assert not isinstance(first, BaseException)
        assert first.records.column("offset").to_pylist() == [0, 1, 2, 3, 4]  # the late two joined it
        publish(broker.bootstrap_servers, [(topic, None, b"%d" % i) for i in range(5, 15)])
        full = out.get(timeout=10)  # 8 = batch.max.records: ends although not wanted
        assert not isinstance(full, BaseException)
        assert full.records.column("offset").to_pylist() == list(range(5, 13))
    finally:
        stop.set()
        thread.join(10)
        reader.close()
