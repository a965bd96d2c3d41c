"""``errors.retry.timeout`` / ``errors.retry.delay.max.ms``: a stage failing with a retriable error is run
again with ``RetryWithToleranceOperator``'s backoff, within the timeout; any other error is not retried.
The clock and the waits are simulated (a wait advances the clock), so the schedule is exact."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.errors import ConfigError, TransientError
from lakecdc.transforms import TransformDataError, build_chain
from lakecdc.transforms.chain import Stage, TransformChain
from lakecdc.transforms.errors import RETRY_DELAY_MIN_MS, TRANSFORMATION, ErrorHandling, StageFailure

from .records import change, row


class Clock:
    """A monotonic clock whose waits return at once, having moved the time on (and counted)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []
        self.stop_after: int | None = None

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds * 1000)
        self.now += seconds
        return self.stop_after is not None and len(self.waits) >= self.stop_after


class Flaky:
    """An operation failing ``failures`` times with ``error`` before it succeeds."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self, record: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return record


def handling(clock: Clock, **values: Any) -> ErrorHandling:
    errors = ErrorHandling(**values)
    errors.clock, errors.stopping = clock, clock  # type: ignore[assignment]
    return errors


RECORD = change("c", None, row(1))


@pytest.mark.parametrize("failures", [1, 3, 7])
def test_a_retriable_failure_is_retried_with_doubling_waits_until_it_succeeds(failures: int) -> None:
    clock = Clock()
    operation = Flaky(failures, TransientError("schema registry unreachable"))
    errors = handling(clock, retry_timeout_ms=-1)
    assert errors.execute(TRANSFORMATION, "X", operation, RECORD, RECORD) is RECORD
    assert operation.calls == failures + 1
    assert clock.waits == [RETRY_DELAY_MIN_MS << n for n in range(failures)]
    assert errors.skipped == 0


@pytest.mark.parametrize("tolerance", [False, True])
def test_a_non_retriable_failure_is_not_retried(tolerance: bool) -> None:
    clock = Clock()
    operation = Flaky(1, ValueError("bad value"))
    errors = handling(clock, retry_timeout_ms=-1, tolerate_all=tolerance)
    if tolerance:
        assert errors.execute(TRANSFORMATION, "X", operation, RECORD, RECORD) is None
        assert errors.skipped == 1
    else:
        with pytest.raises(StageFailure, match="bad value"):
            errors.execute(TRANSFORMATION, "X", operation, RECORD, RECORD)
    assert operation.calls == 1 and clock.waits == []


def test_the_default_timeout_0_does_not_retry() -> None:
    clock = Clock()
    operation = Flaky(1, TransientError("busy"))
    with pytest.raises(StageFailure, match="busy"):
        handling(clock).execute(TRANSFORMATION, "X", operation, RECORD, RECORD)
    assert operation.calls == 1 and clock.waits == []


@settings(max_examples=80, deadline=None)
@given(timeout=st.integers(0, 200_000), max_delay=st.integers(100, 70_000), tolerate=st.booleans())
def test_retries_stay_within_the_timeout_then_fail_by_tolerance(timeout: int, max_delay: int, tolerate: bool) -> None:
    """Whatever the timeout and the maximum delay: waits double from 300 ms until they pass the maximum
    (then a random wait below it), none reaches past the timeout, the last attempt is at the timeout,
    and a failure that outlasts it is skipped (all) or stops (none)."""
    clock = Clock()
    start = clock.now
    operation = Flaky(10**9, TransientError("down"))
    errors = handling(clock, retry_timeout_ms=timeout, retry_max_delay_ms=max_delay, tolerate_all=tolerate)
    if tolerate:
        assert errors.execute(TRANSFORMATION, "X", operation, RECORD, RECORD) is None
    else:
        with pytest.raises(StageFailure, match="down"):
            errors.execute(TRANSFORMATION, "X", operation, RECORD, RECORD)
    assert operation.calls == len(clock.waits) + 1
    assert sum(clock.waits) == pytest.approx(timeout, abs=1e-6)
    assert clock.now - start == pytest.approx(timeout / 1000, abs=1e-9)
    elapsed = 0.0
    for n, wait in enumerate(clock.waits):
        elapsed += wait
        doubled = RETRY_DELAY_MIN_MS << n
        bound = doubled if doubled <= max_delay else max_delay
        if elapsed == pytest.approx(timeout, abs=1e-6):  # cut at the timeout
            assert 0 <= wait <= bound + 1e-6
        else:
            assert wait == doubled if doubled <= max_delay else 0 <= wait <= max_delay


def test_stopping_while_waiting_stops_without_skipping_even_with_all() -> None:
    clock = Clock()
    clock.stop_after = 2
    operation = Flaky(10, TransientError("down"))
    with pytest.raises(StageFailure, match="stopped while retrying stage TRANSFORMATION"):
        handling(clock, retry_timeout_ms=-1, tolerate_all=True).execute(TRANSFORMATION, "X", operation, RECORD,
                                                                         RECORD)
    assert operation.calls == 2


def test_the_chain_runs_each_transform_through_the_handler() -> None:
    """A transform that fails retriably twice gives its record on the third attempt; with the default
    timeout it stops the capture (none) or its record is skipped (all)."""
    base = build_chain({"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
                        "transforms.r.regex": "dbz\\.(.*)", "transforms.r.replacement": "x.$1"})
    router = base.stages[0]

    def chain(failures: int, **errors: Any) -> tuple[TransformChain, Flaky]:
        flaky = Flaky(failures, TransientError("later"))

        class Transform:
            def apply(self, record: Any) -> Any:
                return router.transform.apply(flaky(record))
        clock = Clock()
        stage = Stage("r", router.class_name, Transform(), None, False)  # type: ignore[arg-type]
        return TransformChain([stage], {}, handling(clock, **errors)), flaky

    retried, flaky = chain(2, retry_timeout_ms=5000)
    assert [r.topic for r in retried.apply([RECORD])] == ["x.public.items"] and flaky.calls == 3
    stopping, _ = chain(2)
    with pytest.raises(TransformDataError, match="transform 'r'.*later"):
        stopping.apply([RECORD])
    skipping, _ = chain(1, tolerate_all=True)  # the first record fails, the second passes
    assert skipping.apply([RECORD, change("c", None, row(2))]) == base.apply([change("c", None, row(2))])


def test_retry_properties_are_read_as_connect_longs() -> None:
    errors = build_chain({"errors.retry.timeout": " -1 ", "errors.retry.delay.max.ms": "250"}).errors
    assert (errors.retry_timeout_ms, errors.retry_max_delay_ms) == (-1, 250)
    assert (build_chain({}).errors.retry_timeout_ms, build_chain({}).errors.retry_max_delay_ms) == (0, 60_000)
    with pytest.raises(ConfigError, match=r"Invalid value 1s for configuration errors\.retry\.timeout: Not a number "
                                          "of type LONG"):
        build_chain({"errors.retry.timeout": "1s"})
    with pytest.raises(ConfigError, match=r"errors\.retry\.delay\.max\.ms: must be at least 0"):
        build_chain({"errors.retry.delay.max.ms": "-5"})
