"""``HoldLast``: whatever the batches, only the snapshot's final record becomes ``last``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lakecdc.capture.snapshot_last import HoldLast
from lakecdc.events.envelope import ChangeRecord


def record(i: int, source: dict[str, str]) -> ChangeRecord:
    return ChangeRecord("t", None, {"id": i}, None, {"after": {"id": i}, "source": source, "op": "r"})


@given(st.lists(st.integers(min_value=0, max_value=4), max_size=6))
def test_only_the_final_record_is_marked_last_and_nothing_is_lost(sizes: list[int]) -> None:
    shared = {"snapshot": "true"}  # as the connectors do: one source block for a table's middle rows
    sent: list[list[ChangeRecord]] = []
    hold = HoldLast(sent.append)
    n = 0
    for size in sizes:
        hold([record(n + i, shared) for i in range(size)])
        n += size
    hold.finish()
    flat = [r for batch in sent for r in batch]
    assert [r.key["id"] for r in flat] == list(range(n))  # every record, in order, once
    assert all(batch for batch in sent)
    assert [r.value["source"]["snapshot"] for r in flat] == ["true"] * (n - 1) + ["last"] * (n > 0)
    assert shared == {"snapshot": "true"}  # the shared block itself is left alone
