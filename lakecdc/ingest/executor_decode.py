"""Decode a Spark-fetched micro-batch on the executors, where its records are.

Decoding is the heaviest per-record step (JSON parsing and every logical conversion), so for a
batch that Spark fetched (``reader=spark`` / ``spark-kafka``) each Spark partition is decoded by the
``Decoder`` in its own task (``mapInArrow``), after dropping the records the tables already hold.
``decode_on_executors`` brings the decoded form back to the driver -- typed Arrow rows,
transaction markers, dead letters, schema changes -- plus each partition's record count and highest
offset, exactly what ``Decoder.decode`` gives in one process (``test_executor_decode``). The job
does not collect it: ``executor_batch`` keeps the rows on the executors and sends the driver only
aggregates; the record filters and the schema registry here are shared by both.

Schema ids say which version of a table's schema is newer (``DecodedSegment.schema_id``: order of
first sight). Each task's decoder numbers the schemas it sees from 0, so the driver renumbers them
through one registry keyed by the schema's bytes, in the order the batch's partitions hold them.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import DecodedBatch, Decoder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)
Offsets = dict[tuple[str, int], int]
_RESULT = pa.schema([pa.field("part", pa.binary())])


@dataclass
class RemoteDecoded:
    """One batch decoded on the executors, merged on the driver."""

    decoded: DecodedBatch
    records: int  # records fetched, replays included
    replayed: int  # records at or below an offset a table already committed
    read_max: Offsets  # highest offset fetched per partition
    #: the Python worker daemons that decoded (one per executor JVM: two or more = the work was spread)
    workers: set[int] = field(default_factory=set)
    #: topics whose events carried Kafka keys (``Decoder.keyed_topics``), what the tasks knew and saw
    keyed: dict[str, tuple[str, ...]] = field(default_factory=dict)


def drop_committed(records: pa.Table, committed: Mapping[tuple[str, int], int]) -> pa.Table:
    """The records above the offset each table committed for their partition."""
    if not committed or records.num_rows == 0:
        return records
    keep = None
    topic, part, off = (records.column(n) for n in ("topic", "partition", "offset"))
    for (t, p), last in committed.items():
        old = pc.and_(pc.and_(pc.equal(topic, t), pc.equal(part, p)), pc.less_equal(off, last))
        keep = pc.invert(old) if keep is None else pc.and_(keep, pc.invert(old))
    return records.filter(keep) if keep is not None else records


def max_offsets(records: pa.Table) -> Offsets:
    if records.num_rows == 0:
        return {}
    grouped = records.group_by(["topic", "partition"]).aggregate([("offset", "max")])
    return dict(zip(zip(grouped.column("topic").to_pylist(), grouped.column("partition").to_pylist()),
                    grouped.column("offset_max").to_pylist()))


def _decode_task(config: IngestConfig, committed: Offsets, ingest_ts: datetime,
                 keyed: dict[str, tuple[str, ...]]) -> Any:
    """The ``mapInArrow`` function: one Spark partition's records in, one pickled result out."""
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks = list(batches)
        if not chunks:
            return
        records = pa.Table.from_batches(chunks)
        if records.num_rows == 0:
            return
        fresh = drop_committed(records, committed)
        decoder = Decoder(config)
        for topic, key_columns in keyed.items():  # a null key on a topic known to be keyed is refused
            decoder.remember_keyed(topic, key_columns)
        decoded = decoder.decode(fresh, ingest_ts)
        # a task runs in a worker forked by its executor's Python daemon: the parent names the executor
        part = (decoded, decoder.schema_bytes(), records.num_rows, records.num_rows - fresh.num_rows,
                max_offsets(records), os.getppid(), decoder.keyed_topics())
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(part, protocol=5)], pa.binary())],
                                         schema=_RESULT)
    return decode


class SchemaRegistry:
    """Driver-wide schema ids: first sight across batches, whichever task saw a schema."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}

    def id_of(self, schema: bytes) -> int:
        return self._ids.setdefault(schema, len(self._ids))


def decode_on_executors(df: DataFrame, config: IngestConfig, committed: Offsets, ingest_ts: datetime,
                        registry: SchemaRegistry, keyed: dict[str, tuple[str, ...]]) -> RemoteDecoded:
    """Decode ``df`` (the Kafka source's columns) task by task and merge the results (module docstring).

    ``keyed`` is what the driver's decoder knows of keyed topics; the result's ``keyed`` adds what
    the tasks saw, for the driver's decoder to remember."""
    from lakecdc.lake.frames import spark_to_arrow

    parts = spark_to_arrow(df.mapInArrow(_decode_task(config, dict(committed), ingest_ts, dict(keyed)),
                                         "part binary"))
    merged = RemoteDecoded(DecodedBatch(), 0, 0, {}, keyed=dict(keyed))
    out = merged.decoded
    blobs = parts.column("part").to_pylist()
    for blob in blobs:
        decoded, schemas, records, replayed, read_max, worker, keyed_seen = pickle.loads(blob)
        merged.workers.add(worker)
        for topic, key_columns in keyed_seen.items():
            merged.keyed.setdefault(topic, key_columns)
        merged.records += records
        merged.replayed += replayed
        merged.read_max.update(read_max)
        out.segments += [replace(s, schema_id=registry.id_of(schemas[s.schema_id])) for s in decoded.segments]
        out.dead_letters += decoded.dead_letters
        out.add_markers(decoded)
    log.info("decoded %d records in %d Spark tasks on %d executor process(es)", merged.records, len(blobs),
             len(merged.workers))
    return merged
