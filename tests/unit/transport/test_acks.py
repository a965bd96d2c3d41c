"""``AckTracker``: a checkpoint settles exactly when every record sent before it has a delivery report,
whatever order the reports arrive in (they cross partitions in any order)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.transport.acks import AckTracker

# one step: ("send", n) records, ("checkpoint",), ("report", i) the i-th unreported record (modulo),
# ("forget",) the producer is replaced
STEPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(1, 4)),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("report"), st.integers(0, 1000)),
    st.tuples(st.just("forget")),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(STEPS, st.booleans())
def test_a_checkpoint_settles_exactly_when_every_record_before_it_is_reported(steps: list[Any],
                                                                             failures: bool) -> None:
    failed: list[Any] = []
    tracker = AckTracker(lambda error, message: failed.append((error, message)))
    unreported: list[tuple[int, Any]] = []  # (record number, its epoch's callback)
    reported: set[int] = set()
    unhandled: set[int] = set()  # failed records the sink has not raised yet
    # (checkpoint, records sent before it, forgets before it, first record after the last forget):
    # a forget (new producer) starts over, what the old one sent is sent again from the stored
    # offset, and later checkpoints cover only newer records
    checkpoints: list[tuple[int, int, int, int]] = []
    sent = forgets = since = 0
    for step in steps:
        if step[0] == "send":
            epoch = tracker.current
            epoch.sent += step[1]
            for _ in range(step[1]):
                unreported.append((sent, epoch.delivered))
                sent += 1
        elif step[0] == "checkpoint":
            checkpoints.append((tracker.checkpoint(), sent, forgets, since))
        elif step[0] == "report" and unreported:
            number, callback = unreported.pop(step[1] % len(unreported))
            callback("boom" if failures and number % 3 == 0 else None, number)
            reported.add(number)
            if failures and number % 3 == 0:
                unhandled.add(number)
        elif step[0] == "forget":
            tracker.forget()
            forgets += 1
            since = sent
            unreported.clear()  # the replaced producer's records are never reported
            unhandled.clear()
        for checkpoint, before, forgotten, start in checkpoints:
            # the sink raises a failure of a record before the checkpoint, and only such a one (a later
            # record's failure must not hold back earlier offsets), before the checkpoint can settle
            failed_before = forgotten == forgets and any(start <= n < before for n in unhandled)
            assert tracker.failed_before(checkpoint) is failed_before, (checkpoint, before, unhandled)
            if failed_before:
                tracker.failures_handled()
                unhandled.clear()
            expected = forgotten == forgets and all(n in reported for n in range(start, before))
            assert tracker.settled(checkpoint) is expected, (checkpoint, before, reported)
    # a failed record settles its checkpoint once the sink has raised it; each failure reached the
    # sink's callback once
    assert len(failed) == len({m for _, m in failed})
    assert all(error == "boom" and message % 3 == 0 for error, message in failed)


def test_unsettled_counts_records_without_a_report() -> None:
    tracker = AckTracker(lambda *_: None)
    tracker.current.sent += 3
    first = tracker.current.delivered
    tracker.checkpoint()
    tracker.current.sent += 2
    first(None, None)
    assert tracker.unsettled == 4
