"""Key lookups in Arrow across the types a table reads back and the types a batch brings.

The stored-row and bronze lookups of a key change (``lakecdc.writers.delta_rs``) filter a table's
dataset by the batch's key values. Spark hands over ``string``/``binary`` (``large_*`` in Spark 4),
delta-rs may read back ``string_view``/``binary_view``, Iceberg readers an extension ``uuid``...:
every pairing must select exactly the wanted rows, or (no exact conversion) leave pruning out.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from lakecdc.lake.key_ranges import arrow_in_filter, arrow_ranges_filter, arrow_read, arrow_values_as

UTC = "UTC"
TEXT = [pa.string(), pa.large_string(), pa.string_view()]
BYTES = [pa.binary(), pa.large_binary(), pa.binary_view()]
#: family -> (stored types, batch types, three distinct values)
FAMILIES: dict[str, tuple[list[pa.DataType], list[pa.DataType], list[Any]]] = {
    "text": (TEXT, TEXT, ["alpha", "beta", "gamma"]),
    "bytes": (BYTES, BYTES, [b"\x00\x01", b"\xff", b"abc"]),
    "decimal": ([pa.decimal128(20, 4), pa.decimal256(20, 4)], [pa.decimal128(20, 4)],
                [Decimal("1.5000"), Decimal("-2.2500"), Decimal("7.0000")]),
    "date": ([pa.date32(), pa.date64()], [pa.date32()],
             [dt.date(2024, 2, 29), dt.date(1999, 12, 31), dt.date(1970, 1, 1)]),
    "timestamp": ([pa.timestamp(u, UTC) for u in ("ms", "us", "ns")], [pa.timestamp("us", UTC)],
                  [dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc),
                   dt.datetime(2025, 6, 1, 0, 0, 1, tzinfo=dt.timezone.utc),
                   dt.datetime(1969, 7, 20, 20, 17, tzinfo=dt.timezone.utc)]),
    "timestamp_ntz": ([pa.timestamp(u) for u in ("ms", "us", "ns")], [pa.timestamp("us")],
                      [dt.datetime(2024, 1, 1, 12), dt.datetime(2025, 6, 1, 0, 0, 1), dt.datetime(1969, 7, 20)]),
    "int": ([pa.int8(), pa.int16(), pa.int32(), pa.int64()],
            [pa.int8(), pa.int16(), pa.int32(), pa.int64()], [1, -2, 100]),
}
CASES = [pytest.param(family, stored, given, id=f"{family}:{stored}<-{given}")
         for family, (stored_types, batch_types, _) in FAMILIES.items()
         for stored in stored_types for given in batch_types]


@pytest.fixture(autouse=True)
def _folder(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def dataset(column: pa.Array) -> ds.Dataset:
    """A Parquet-backed dataset holding ``column`` as ``k`` (read back in the type written, as
    delta-rs declares its tables' types) and the row number."""
    table = pa.table({"k": column, "row": pa.array(range(len(column)), pa.int64())})
    name = f"{uuid.uuid4().hex}.parquet"
    pq.write_table(table, name)
    return ds.dataset(name, schema=table.schema)


@pytest.mark.parametrize("family, stored, given", CASES)
def test_in_filter_selects_exactly_the_wanted_keys(family: str, stored: pa.DataType, given: pa.DataType) -> None:
    values = FAMILIES[family][2]
    table = dataset(pa.array(values, stored))
    wanted = pa.chunked_array([pa.array([values[2], None, values[0]], given)])
    where = arrow_in_filter(table.schema, "k", wanted)
    assert where is not None
    assert sorted(arrow_read(table, where)["row"].to_pylist()) == [0, 2]


@pytest.mark.parametrize("stored", TEXT + [pa.int32(), pa.int64()])
@pytest.mark.parametrize("given", ["text", "int"])
def test_range_filter_typed_as_the_stored_column(stored: pa.DataType, given: str) -> None:
    is_text = pa.types.is_string(stored) or pa.types.is_large_string(stored) or pa.types.is_string_view(stored)
    values = ["b", "d", "f"] if is_text else [2, 4, 6]
    table = dataset(pa.array(values, stored))
    ranges = (("a", "c"), ("f", "f")) if given == "text" else ((1, 3), (6, 6))
    where = arrow_ranges_filter("k", ranges, table.schema.field("k").type)
    if (given == "text") != is_text:
        assert where is None  # a text bound for a number column (or back) is no bound: read everything
        return
    assert where is not None
    assert arrow_read(table, where)["row"].to_pylist() == [0, 2]


def test_uuid_text_keys_find_uuid_extension_columns() -> None:
    keys = [uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)]
    stored = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([k.bytes for k in keys], pa.binary(16)))
    table = dataset(stored)
    where = arrow_in_filter(table.schema, "k", pa.array([str(keys[1])], pa.string_view()))
    assert where is not None and arrow_read(table, where)["row"].to_pylist() == [1]
    assert arrow_values_as(pa.array(["not a uuid"]), pa.uuid()) is None


@pytest.mark.parametrize("given, stored", [
    (pa.array(["1"]), pa.int64()), (pa.array([1]), pa.string()), (pa.array([b"a"]), pa.string()),
    (pa.array(["a"]), pa.binary()), (pa.array([300], pa.int64()), pa.int8()),
    (pa.array([Decimal("1.25")], pa.decimal128(5, 2)), pa.decimal128(5, 1)),
])
def test_no_inexact_conversion(given: pa.Array, stored: pa.DataType) -> None:
    """Text never becomes a number or bytes (nor back), nothing is truncated: no filter instead."""
    assert arrow_values_as(given, stored) is None


def test_composite_key_filters_combine_per_column() -> None:
    data = pa.table({"a": pa.array(["x", "y", "x"], pa.string_view()), "b": pa.array([1, 1, 2], pa.int16()),
                     "row": [0, 1, 2]})
    pq.write_table(data, "composite.parquet")
    table = ds.dataset("composite.parquet", schema=data.schema)
    where = arrow_in_filter(table.schema, "a", pa.array(["x"], pa.large_string()))
    where = where & arrow_in_filter(table.schema, "b", pa.array([2], pa.int64()))
    assert arrow_read(table, where)["row"].to_pylist() == [2]
    assert pc.all(pc.equal(arrow_read(table, where, ["b"])["b"], 2)).as_py()


def test_a_file_storing_a_view_type_under_a_plain_dataset_schema_is_read_and_filtered(tmp_path) -> None:
    """delta-rs writes some files with string_view while the table's schema says string: the filtered
    read pruned by those files' statistics failed with 'no kernel (string, string_view)' (the chaos
    suite's Delta job crash-looped on a text-key change)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from lakecdc.lake.key_ranges import arrow_in_filter, arrow_read

    pq.write_table(pa.table({"k": pa.array(["a", "b"], pa.string_view()), "v": [1, 2]}), tmp_path / "f1.parquet")
    pq.write_table(pa.table({"k": pa.array(["c"], pa.string()), "v": [3]}), tmp_path / "f0.parquet")
    dataset = ds.dataset(tmp_path, schema=pa.schema([("k", pa.string()), ("v", pa.int64())]))
    where = arrow_in_filter(dataset.schema, "k", pa.array(["a", "c"], pa.string_view()))
    rows = arrow_read(dataset, where, ["k", "v"])
    assert sorted(rows.to_pylist(), key=lambda r: r["k"]) == [{"k": "a", "v": 1}, {"k": "c", "v": 3}]
    assert rows.schema.field("k").type == pa.string()
