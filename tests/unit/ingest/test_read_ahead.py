"""``ReadAhead``: the next micro-batch is read (and decoded) while the current one is used, never more
than one ahead, in order, with the reader's errors raised in the job's thread; ``wanted`` says when the
consumer waits; and the job's loop uses it for drains and continuous jobs, not interval triggers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lakecdc.ingest import job
from lakecdc.ingest.read_ahead import ReadAhead, locked
from lakecdc.ingest.reader import PythonKafkaReader

WAIT = 10.0


class Source:
    """A generator of ``n`` items that records how many it produced and whether it was closed."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.produced = 0
        self.closed = False
        self.made = [threading.Event() for _ in range(n + 1)]

    def items(self) -> Iterator[int]:
        try:
            for i in range(self.n):
                if i == self.fail_at:
                    raise RuntimeError(f"Kafka failed at item {i}")
                self.produced += 1
                self.made[i].set()
                yield i
        finally:
            self.closed = True


def test_items_come_in_order_and_the_next_is_read_while_one_is_used() -> None:
    source = Source(5)
    ahead = ReadAhead(source.items())
    seen = []
    for item in ahead:
        if item + 1 < source.n:  # the next item is read while this one is in use ...
            assert source.made[item + 1].wait(WAIT), f"item {item + 1} was not read while {item} was used"
        time.sleep(0.05)
        assert source.produced <= item + 2, "more than one item was read ahead"  # ... and no more than it
        seen.append(item)
    ahead.close()
    assert seen == [0, 1, 2, 3, 4]
    assert source.closed


def test_a_reader_error_is_raised_in_the_consumer_after_the_items_before_it() -> None:
    source = Source(5, fail_at=2)
    ahead = ReadAhead(source.items())
    seen = []
    with pytest.raises(RuntimeError, match="Kafka failed at item 2"):
        for item in ahead:
            seen.append(item)
    ahead.close()
    assert seen == [0, 1]
    assert source.closed


def test_close_when_the_consumer_stops_early_ends_the_thread_and_closes_the_reader() -> None:
    source = Source(100)
    ahead = ReadAhead(source.items())
    for item in ahead:
        if item == 3:
            break
    ahead.close()
    assert source.closed
    assert source.produced <= 5
    assert not any(t.name == "lakecdc-read-ahead" and t.is_alive() for t in threading.enumerate())


class _Batch:
    def __init__(self, n: int) -> None:
        self.num_records, self.at_end_of_data = n, False


class _Reader(PythonKafkaReader):
    """A Python reader that meets a new partition (asks ``start_offset``) while reading batch 2."""

    def __init__(self, start_offset: Any) -> None:  # no Kafka: the loop only iterates and closes
        self._ask = start_offset
        self.closed = False
        self.wanted: threading.Event | None = None

    def batches(self, wanted: threading.Event | None = None) -> Iterator[Any]:  # type: ignore[override]
        self.wanted = wanted
        yield _Batch(1)
        self._ask("topic", 0)
        yield _Batch(1)

    def close(self) -> None:
        self.closed = True


class _Processor:
    def __init__(self) -> None:
        self.busy = False
        self.asked_while_busy = False
        self.processed = 0
        self.threads: set[str] = set()
        self.decoded_on: set[str] = set()
        self.given: list[str | None] = []

    def start_offset(self, topic: str, partition: int) -> int | None:
        self.asked_while_busy |= self.busy
        self.threads.add(threading.current_thread().name)
        return None

    def decode(self, batch: Any) -> str:
        self.decoded_on.add(threading.current_thread().name)
        return "decoded"

    def process(self, batch: Any, decoded: str | None = None) -> str:
        self.given.append(decoded)
        self.busy = True
        time.sleep(0.3)  # the read-ahead thread meets its new partition meanwhile
        self.busy = False
        self.processed += 1
        return "report"

    waits_for_end_of_data = False


@pytest.mark.parametrize("trigger, ahead", [("available-now", True), ("continuous", True), ("every:0.1s", False)])
def test_the_job_reads_ahead_in_drains_and_never_reads_a_tables_offsets_while_a_batch_commits(
        monkeypatch: pytest.MonkeyPatch, trigger: str, ahead: bool) -> None:
    processor = _Processor()
    readers: list[_Reader] = []

    def open_reader(cfg: Any, spark: Any, trig: Any, stop: Any, start_offset: Any) -> _Reader:
        readers.append(_Reader(start_offset))
        return readers[-1]

    monkeypatch.setattr(job, "_open_reader", open_reader)
    reports: list[str] = []
    job._run_batches(None, None, processor, job.Trigger.parse(trigger), threading.Event(),  # type: ignore[arg-type]
                     reports.append)
    assert reports == ["report", "report"]
    assert not processor.asked_while_busy, "a table's offsets were read while a batch was being applied"
    assert processor.threads == ({"lakecdc-read-ahead"} if ahead else {threading.current_thread().name})
    # a drain decodes on the read-ahead thread too; other triggers decode in the batch's own steps
    assert processor.decoded_on == ({"lakecdc-read-ahead"} if ahead else set())
    assert processor.given == (["decoded", "decoded"] if ahead else [None, None])
    assert readers[0].closed
    # a continuous job's next batch ends when the job wants it; a drain's as soon as it can
    assert (readers[0].wanted is not None) == (ahead and trigger == "continuous")


def test_wanted_is_set_only_while_the_consumer_waits_for_an_item() -> None:
    wanted = threading.Event()
    seen_while_reading: list[bool] = []

    def items() -> Iterator[int]:
        for i in range(3):
            seen_while_reading.append(wanted.wait(WAIT))  # item i ends once the consumer asks for it
            yield i
    ahead = ReadAhead(items(), wanted=wanted)
    for _ in ahead:
        assert not wanted.is_set(), "the item in use is not wanted by the consumer"
        time.sleep(0.05)
    ahead.close()
    assert seen_while_reading == [True, True, True]


def test_locked_holds_the_lock_while_the_function_runs() -> None:
    lock = threading.Lock()
    assert locked(lock, lambda: lock.locked())() is True
    assert not lock.locked()


def test_a_stop_during_a_drain_applies_no_batch_read_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM finishes the batch in progress and stops; the batch read ahead meanwhile is left to the
    next run (it starts at the tables' offsets), as the reader would not have read it."""
    stop = threading.Event()
    processor = _Processor()
    real = processor.process

    def process(batch: Any, decoded: str | None = None) -> str:
        stop.set()  # a signal arrives while the first batch is applied
        return real(batch, decoded)

    processor.process = process  # type: ignore[method-assign]
    monkeypatch.setattr(job, "_open_reader", lambda cfg, spark, trig, stop_, start_offset: _Reader(start_offset))
    reports: list[str] = []
    job._run_batches(None, None, processor, job.Trigger.parse("available-now"), stop,  # type: ignore[arg-type]
                     reports.append)
    assert reports == ["report"]
    assert processor.processed == 1
