"""SCD2 key changes with placeholders for every key type, on real Iceberg and Delta (delta-rs) tables.

The history step finds the old key of a key change by its ``_key_json`` text (in the batch, else in
bronze), and compares typed keys of batch events, stored versions and bronze events as each format
reads them back (``string_view``, ``binary_view``, ``decimal128``, zoned and zone-less timestamps):
every key type of ``test_key_moves_key_types``, as one composite key of all of them. The old key's
delete is in an earlier batch than the create (its values only in bronze), then the create is
delivered again (a replay changes nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType
from test_key_moves_key_types import KEY_TYPES, _norm
from writer_harness import STR, Ev, Stream, TableReader

from lakecdc.lake.history_chain import normalize_version
from lakecdc.writers.base import LakeWriter, create_writer

pytestmark = pytest.mark.integration


@pytest.fixture(params=["iceberg", "delta-rs"])
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[LakeWriter]:
    made = create_writer(request.param, spark, warehouse=str(tmp_path / "delta"))
    assert isinstance(made, LakeWriter)
    yield made


def _run(writer: LakeWriter, spark: SparkSession, keys: dict[str, tuple[DataType, Any, Any]]) -> None:
    names = list(keys)
    columns = [(k, t) for k, (t, _, _) in keys.items()] + [("title", STR), ("body", STR)]
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", columns, keys=tuple(names))
    s.target = replace(s.target, history="scd2")
    old = {k: v[1] for k, v in keys.items()}
    new = {k: v[2] for k, v in keys.items()}
    writer.apply(s.batch([Ev("c", 10, {**old, "title": "t", "body": "long text"})]), 1)
    writer.apply(s.batch([Ev("u", 15, {**old, "title": "t1"}, unavailable=("body",))]), 2)
    writer.apply(s.batch([Ev("d", 20, dict(old))]), 3)
    create = Ev("c", 20, {**new, "title": "t2"}, unavailable=("body",), old_key=old)
    writer.apply(s.batch([create]), 4)
    reader = TableReader(writer)
    commits = reader.commits(s.target.history_table)
    writer.apply(s.batch([create]), 4)  # the replay: nothing changes
    assert reader.commits(s.target.history_table) == commits

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(_norm(row[k]) for k in names)

    versions = sorted((normalize_version(r) for r in reader.rows(s.target.history_table)),
                      key=lambda v: (v["_valid_from_seq"], key(v) == key(new)))
    assert [(key(v), v["title"], v["body"], v["_valid_from_seq"][0], v["_valid_to_seq"] and v["_valid_to_seq"][0])
            for v in versions] == [
        (key(old), "t", "long text", 10, 15), (key(old), "t1", "long text", 15, 20),
        (key(new), "t2", "long text", 20, None)]
    # the open version is silver's row
    assert [(key(r), r["title"], r["body"]) for r in reader.rows(s.target.silver_table)] == [
        (key(new), "t2", "long text")]


def test_history_key_change_with_placeholder_for_every_key_type(writer: LakeWriter, spark: SparkSession) -> None:
    """One key of every type at once (a composite key of all of them): one table per format."""
    _run(writer, spark, {f"k_{name}": spec for name, spec in KEY_TYPES.items()})


def test_history_key_change_with_placeholder_for_a_uuid_and_int_key(writer: LakeWriter, spark: SparkSession) -> None:
    _run(writer, spark, {"k0": KEY_TYPES["uuid"], "k1": KEY_TYPES["int"]})
