"""A small three-batch history written by the real writers, for both formats.

Batch 1 (positions 10-12): create ids 1, 2, 3.  Batch 2 (20-21): update 1, delete 2.
Batch 3 (30-31): create 4, update 1 again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream

from lakecdc.audit import LakeTable
from lakecdc.writers.base import TableWriter, create_writer

FORMATS = ["iceberg", "delta-rs"]
BATCHES = [
    [Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 11, {"id": 2, "name": "b"}), Ev("c", 12, {"id": 3, "name": "c"})],
    [Ev("u", 20, {"id": 1, "name": "a2"}), Ev("d", 21, {"id": 2, "name": "b"})],
    [Ev("c", 30, {"id": 4, "name": "d"}), Ev("u", 31, {"id": 1, "name": "a3"})],
]


@dataclass
class Lake:
    writer: TableWriter
    stream: Stream
    silver: LakeTable
    bronze: LakeTable
    silver_versions: list[int]  # the silver version each batch committed, in batch order


def build_lake(fmt: str, spark: SparkSession, tmp_path: Path, batches: list[list[Ev]] = BATCHES,
               delete_mode: str = "hard") -> Lake:
    if fmt == "iceberg":
        writer = create_writer("iceberg", spark)
        stream = Stream(spark, "iceberg", [("id", LONG), ("name", STR)], delete_mode=delete_mode)
    else:
        writer = create_writer("delta-rs", spark, warehouse=str(tmp_path / "delta"))
        stream = Stream(spark, "delta", [("id", LONG), ("name", STR)], delete_mode=delete_mode)
    versions = []
    for batch_id, events in enumerate(batches, start=1):
        result = writer.apply(stream.batch(events), batch_id)
        versions.append(result.silver_version)
    if fmt == "iceberg":
        silver = LakeTable.iceberg(spark, stream.target.silver_table)
        bronze = LakeTable.iceberg(spark, stream.target.bronze_table)
    else:
        silver = LakeTable.delta(tmp_path / "delta", stream.target.silver_table)
        bronze = LakeTable.delta(tmp_path / "delta", stream.target.bronze_table)
    return Lake(writer, stream, silver, bronze, versions)
