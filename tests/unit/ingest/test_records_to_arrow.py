"""The Python reader's Arrow batch is exactly what building it row by row gives.

``reader.records_to_arrow`` builds keys, values and headers column-wise from buffers (one copy of
the bytes); ``straightforward`` below builds those columns row by row, as it did before, the oracle.
Run over any mix of null and empty keys, values, headers and header values.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from confluent_kafka import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.ingest.reader import _TIMESTAMP_TYPE, HEADER_ARROW, KAFKA_ARROW_SCHEMA, binary_array, records_to_arrow


def straightforward(messages: list[Any]) -> dict[str, pa.Array]:
    """The columns ``records_to_arrow`` builds from buffers, built row by row (its other columns are
    plain ``pa.array`` calls in both)."""
    return {"key": pa.array([m.key() for m in messages], pa.binary()),
            "value": pa.array([m.value() for m in messages], pa.binary()),
            "headers": pa.array([None if m.headers() is None else [{"key": k, "value": v} for k, v in m.headers()]
                                 for m in messages], pa.list_(HEADER_ARROW))}


data = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=8), data)
message = st.builds(
    lambda key, value, headers, topic, partition, offset, timestamp: Message(
        topic=topic, partition=partition, offset=offset, key=key, value=value, headers=headers, timestamp=timestamp),
    data, data, st.one_of(st.none(), st.lists(header, max_size=3)), st.sampled_from(["a.b.c", "t", "été"]),
    st.integers(0, 5), st.integers(0, 2**40), st.tuples(st.integers(0, 2), st.integers(0, 2**42)))


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(message, max_size=30))
def test_the_batch_equals_the_row_by_row_construction(messages: list[Any]) -> None:
    built = records_to_arrow(messages)
    built.validate(full=True)
    assert built.schema == KAFKA_ARROW_SCHEMA and built.num_rows == len(messages)
    for name, expected in straightforward(messages).items():
        assert built.column(name).combine_chunks().equals(expected), name
    assert built.column("offset").to_pylist() == [m.offset() for m in messages]
    assert built.column("topic").to_pylist() == [m.topic() for m in messages]
    assert built.column("partition").to_pylist() == [m.partition() for m in messages]
    timestamps = [m.timestamp() for m in messages]
    assert built.column("timestamp").cast(pa.int64()).to_pylist() == [ts * 1000 if kind else None
                                                                       for kind, ts in timestamps]
    assert built.column("timestampType").to_pylist() == [_TIMESTAMP_TYPE.get(kind, -1) for kind, _ in timestamps]


@given(items=st.lists(data, max_size=30))
def test_binary_array_keeps_nulls_empties_and_bytes(items: list[bytes | None]) -> None:
    array = binary_array(items)
    array.validate(full=True)
    assert array.to_pylist() == items and array.null_count == items.count(None)
