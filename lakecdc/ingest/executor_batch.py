"""A Spark-fetched micro-batch that stays on the executors: the driver works on its aggregates only.

Where each step runs (``reader=spark`` / ``spark-kafka``):

1. executors, ``decode_frame``: each fetched partition drops the records the tables already hold
   (``drop_committed``) and is decoded by the ``Decoder`` in its own task (``mapInArrow``). Decoded
   rows stay there, as Arrow IPC blobs in the batch's *frame* (a DataFrame persisted
   ``MEMORY_AND_DISK``: it spills to the executors' disks, never to the driver). Each task also
   returns a summary: record counts and highest offsets per partition, transaction markers, schema
   changes, heartbeats, how many dead letters (their rows stay in the frame), the workers that
   decoded, and per decoded segment its columns and Arrow schema plus one *group* per transaction
   and partition (events, lowest and highest offset and ``_seq``, highest snapshot position, its first
   key-change create holding placeholders).
2. driver: the transaction buffer, the consistency point and the tables' offsets work on those
   groups exactly as on rows (``RemoteSegment`` is a ``DecodedSegment`` whose ``rows`` are its
   groups, weighted by ``_count``): which transactions are released, what is held, how far each
   table's progress may go.
3. executors, ``table_frame``: per table, the released rows of the frames are joined into the
   table's columns (``lake.segments.conform``, the ``union_segments`` rules) and ranked
   (``ordering.rank_after_snapshot``, ``rank_by_commit``, with the commit LSNs of the released
   transactions shipped small): the DataFrame the writer MERGEs. Its figures (events, offsets,
   ``_seq`` bounds, latency per source second) come back in one aggregate job (``TableFrame``).

Held transactions: their rows stay in the frame of the batch that read them (kept persisted while
any group of it is held), and are released from it by a later batch. Re-fetching held ranges from
Kafka next batch was the alternative; it needs more: the buffer counts a transaction's events as
they are read (a transaction spans batches and tables), so a re-read would count them twice, and a
held range lies below offsets the planner has already moved past, so it would need a second cursor
per partition. A persisted frame needs nothing new, and its lineage *is* the re-fetch by range: the
fetch is a bounded read of exact offset ranges (``spark_reader`` cuts it to the offsets first
counted) and decoding is deterministic, so a part lost with an executor is fetched and decoded
again from the same offsets. A crash of the driver loses nothing either: held events lie above the
tables' committed offsets, which is where every reader resumes.

A topic first seen in a run may only learn its table's committed offsets once its key columns are
known (after decoding: ``BatchProcessor._target``); records at or below them are replays. Groups
cannot be cut at an offset, so the processor decodes such a batch again with the offsets now known
(once per topic and run).
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import SchemaEvolutionError
from lakecdc.events.positions import SNAPSHOT_PHASE
from lakecdc.ingest.decode import DecodedBatch, Decoder
from lakecdc.ingest.executor_decode import SchemaRegistry, drop_committed, max_offsets
from lakecdc.ingest.key_move_holds import moved_creates
from lakecdc.ingest.ordering import rank_after_snapshot, rank_by_commit
from lakecdc.ingest.transactions import tx_link
from lakecdc.lake.batch import ColumnSpec
from lakecdc.lake.segments import DecodedSegment, conform

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakecdc.lake.silver import BatchStats

log = logging.getLogger(__name__)
Offsets = dict[tuple[str, int], int]
Seq = tuple[int, ...]

#: Decoded rows per blob of a frame at most, and its size in bytes about (a Spark row must stay far below 2 GB).
ROWS_PER_BLOB = 10_000
BLOB_BYTES = 16 << 20
_FRAME = "kind string, topic string, blob binary"
#: ``_offset``/``_seq`` are the group's lowest, ``_last_offset``/``_max_seq`` its highest; ``_moved_*`` name its
#: first key-change create holding placeholders (``key_move_holds``), else null.
_GROUPS = pa.schema([("_tx_id", pa.string()), ("_partition", pa.int32()), ("_offset", pa.int64()),
                     ("_seq", pa.list_(pa.int64())), ("_count", pa.int64()), ("_snapshot_lsn", pa.int64()),
                     ("_last_offset", pa.int64()), ("_max_seq", pa.list_(pa.int64())),
                     ("_moved_seq", pa.list_(pa.int64())), ("_moved_offset", pa.int64())])
_DEAD = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("key", pa.binary()),
                   ("value", pa.binary()), ("reason", pa.string()), ("failed_at", pa.timestamp("us", tz="UTC"))])
_EVOLUTION = "lakecdc schema evolution: "


class Frame:
    """A batch's decoded rows on the executors (module docstring); compared by identity."""

    def __init__(self, df: DataFrame) -> None:
        self.df = df

    def unpersist(self) -> None:
        self.df.unpersist()


@dataclass
class RemoteSegment(DecodedSegment):
    """A decoded segment whose rows stay in ``frame``: ``rows`` holds its groups (``_GROUPS``)."""

    frame: Frame | None = None
    schema: pa.Schema | None = None

    @property
    def num_rows(self) -> int:
        return int(pc.sum(self.rows.column("_count")).as_py() or 0)

    @property
    def arrow_schema(self) -> pa.Schema:
        assert self.schema is not None
        return self.schema

    def snapshot_lsn(self) -> int | None:
        """The highest position of its snapshot rows (``ordering.snapshot_lsn``), or None."""
        return pc.max(self.rows.column("_snapshot_lsn")).as_py()


@dataclass
class ExecutorBatch:
    """What the driver knows of a batch decoded on the executors (module docstring, step 1)."""

    frame: Frame
    decoded: DecodedBatch  # segments are ``RemoteSegment``s; ``dead_letters`` stays empty
    records: int = 0  # records fetched, replays included
    replayed: int = 0  # records at or below an offset a table already committed
    read_max: Offsets = field(default_factory=dict)  # highest offset fetched per partition
    workers: set[int] = field(default_factory=set)  # the Python daemons that decoded (one per executor)
    keyed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # ``Decoder.keyed_topics``
    dead_letters: int = 0
    dead_topics: Counter[str] = field(default_factory=Counter)
    first_dead: str | None = None  # the first dead letter's reason (it names topic, partition, offset)

    def dead_letter_frame(self) -> DataFrame:
        """The dead letters, in the writers' dead-letter table schema, read from the frame."""
        from pyspark.sql import functions as F

        from lakecdc.writers.base import DEAD_LETTER_SCHEMA

        return self.frame.df.where(F.col("kind") == "dead").select("blob").mapInArrow(_unblob, DEAD_LETTER_SCHEMA)


def _ipc(table: pa.Table | pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def _blob(kind: str, topic: str, blob: bytes) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"kind": [kind], "topic": [topic], "blob": [blob]},
                                      schema=pa.schema([("kind", pa.string()), ("topic", pa.string()),
                                                        ("blob", pa.binary())]))


def _unblob(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for blob in batch.column("blob").to_pylist():
            yield from _from_ipc(blob).to_batches()


def _groups(rows: pa.Table, moved: Mapping[tuple[int, int], Seq], cuts: Mapping[int, list[int]]) -> pa.Table:
    """One row per (transaction id, partition) of decoded ``rows`` (``_GROUPS``), cut at each key-change
    create holding placeholders: ``moved`` are this segment's (``(partition, offset) -> _seq``), ``cuts``
    the sorted offsets of all of the task's segments of the topic, per partition. A group then lies
    wholly before or after such a create, so ``key_move_holds`` can hold it from that create on."""
    groups: dict[tuple[str | None, int, int], list[Any]] = {}
    columns = (rows.column(n).to_pylist() for n in ("_tx_id", "_partition", "_offset", "_seq"))
    for tx_id, partition, offset, seq in zip(*columns):
        snapshot = seq[0] if seq[2] == SNAPSHOT_PHASE else None
        moved_seq = moved.get((partition, offset))
        key = (tx_id, partition, bisect_right(cuts.get(partition, []), offset))
        group = groups.get(key)
        if group is None:
            groups[key] = [offset, seq, 1, snapshot, offset, seq, None if moved_seq is None else list(moved_seq),
                           None if moved_seq is None else offset]
            continue
        group[0], group[1], group[2] = min(group[0], offset), min(group[1], seq), group[2] + 1
        group[4], group[5] = max(group[4], offset), max(group[5], seq)
        if snapshot is not None:
            group[3] = max(snapshot, group[3] if group[3] is not None else snapshot)
        if moved_seq is not None and (group[7] is None or offset < group[7]):
            group[6], group[7] = list(moved_seq), offset
    keys = list(groups)
    return pa.Table.from_arrays([pa.array([k[0] for k in keys], pa.string()),
                                 pa.array([k[1] for k in keys], pa.int32()),
                                 *(pa.array([groups[k][i] for k in keys], _GROUPS.field(i + 2).type)
                                   for i in range(len(_GROUPS) - 2))], schema=_GROUPS)


def _decode_task(config: IngestConfig, committed: Offsets, ingest_ts: datetime,
                 keyed: dict[str, tuple[str, ...]]) -> Any:
    """The ``mapInArrow`` function of step 1: a partition's records in, blobs and one summary out."""
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks = list(batches)
        if not chunks or sum(c.num_rows for c in chunks) == 0:
            return
        records = pa.Table.from_batches(chunks)
        fresh = drop_committed(records, committed)
        decoder = Decoder(config)
        for topic, key_columns in keyed.items():  # a null key on a topic known to be keyed is refused
            decoder.remember_keyed(topic, key_columns)
        decoded = decoder.decode(fresh, ingest_ts)
        schemas = decoder.schema_bytes()
        moved = [{(p, o): seq for seq, p, o in moved_creates(s.rows)} for s in decoded.segments]
        cuts: dict[str, dict[int, list[int]]] = {}
        for segment, found in zip(decoded.segments, moved):
            for partition, offset in found:
                cuts.setdefault(segment.topic, {}).setdefault(partition, []).append(offset)
        for by_partition in cuts.values():
            for offsets in by_partition.values():
                offsets.sort()
        segments = []
        for segment, found in zip(decoded.segments, moved):
            groups = _groups(segment.rows, found, cuts.get(segment.topic, {}))
            segments.append((segment.topic, schemas[segment.schema_id], segment.columns, segment.key_columns,
                             segment.source, segment.rows.schema, groups))
            rows = max(1, min(ROWS_PER_BLOB, BLOB_BYTES * segment.num_rows // max(1, segment.rows.nbytes)))
            for chunk in segment.rows.to_batches(max_chunksize=rows):
                yield _blob("rows", segment.topic, _ipc(chunk))
        letters = decoded.dead_letters
        if letters:
            yield _blob("dead", "", _ipc(pa.Table.from_pylist([d.as_row() for d in letters], schema=_DEAD)))
        first = letters[0].reason if letters else None
        markers = DecodedBatch(tx_markers=decoded.tx_markers, schema_changes=decoded.schema_changes,
                               tombstones=decoded.tombstones, heartbeats=decoded.heartbeats,
                               last_heartbeat_ts_ms=decoded.last_heartbeat_ts_ms, skipped=decoded.skipped)
        # a task runs in a worker forked by its executor's Python daemon: the parent names the executor
        summary = (segments, markers, records.num_rows, records.num_rows - fresh.num_rows, max_offsets(records),
                   os.getppid(), decoder.keyed_topics(), Counter(d.topic for d in letters), first)
        yield _blob("meta", "", pickle.dumps(summary, protocol=5))
    return decode


def decode_frame(df: DataFrame, config: IngestConfig, committed: Mapping[tuple[str, int], int], ingest_ts: datetime,
                 registry: SchemaRegistry, keyed: Mapping[str, tuple[str, ...]]) -> ExecutorBatch:
    """Step 1 (module docstring): ``df`` (the Kafka source's columns) decoded into a persisted frame."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    frame = Frame(df.mapInArrow(_decode_task(config, dict(committed), ingest_ts, dict(keyed)), _FRAME)
                  .persist(StorageLevel.MEMORY_AND_DISK))
    out = ExecutorBatch(frame, DecodedBatch(), keyed=dict(keyed))
    decoded = out.decoded
    metas = [r[0] for r in frame.df.where(F.col("kind") == "meta").select("blob").collect()]  # partition order
    for blob in metas:
        segments, markers, records, replayed, read_max, worker, keyed_seen, dead, first = pickle.loads(blob)
        out.workers.add(worker)
        for topic, key_columns in keyed_seen.items():
            out.keyed.setdefault(topic, key_columns)
        out.records += records
        out.replayed += replayed
        out.read_max.update(read_max)
        out.dead_letters += sum(dead.values())
        out.dead_topics.update(dead)
        out.first_dead = out.first_dead or first
        for topic, schema_bytes, columns, key_columns, source, schema, groups in segments:
            decoded.segments.append(RemoteSegment(topic, registry.id_of(schema_bytes), columns, key_columns, source,
                                                  groups, frame, schema))
        decoded.add_markers(markers)
    log.info("decoded %d records in %d Spark tasks on %d executor process(es); the rows stay there", out.records,
             len(metas), len(out.workers))
    return out


# ---------------------------------------------------------------------------------------- step 3


@dataclass
class TableFrame:
    """One table's released rows as a DataFrame on the executors (persisted), and their figures."""

    columns: list[ColumnSpec]
    df: DataFrame
    events: int
    events_through: Offsets  # highest offset of an event per partition
    min_seq: Seq | None
    max_seq: Seq | None
    lowest_read: Seq | None  # lowest ``_seq`` of a snapshot read (``_op`` r)
    max_source_ts_ms: int | None
    latency_ms: pa.Array  # per streamed event, now minus its source second's newest commit time
    rows: pa.Table | None = None  # the rows, for a table decoded on the driver (``BatchProcessor._arrow_table``)
    stats: BatchStats | None = None  # ``ChangeBatch.stats`` when known without a Spark job

    def probe(self) -> pa.Table:
        """The rows ``ConsistencyPoint.advance`` needs: its highest rank and its lowest snapshot read."""
        rows = [(s, op) for s, op in ((self.max_seq, "c"), (self.lowest_read, "r")) if s is not None]
        return pa.table({"_seq": pa.array([list(s) for s, _ in rows], pa.list_(pa.int64())),
                         "_op": pa.array([op for _, op in rows], pa.string())})


#: A frame's released groups: per (transaction link, partition), the offset ranges of its groups.
Released = dict[tuple[str | None, int], list[tuple[int, int]]]


def _table_task(topic: str, released: Released, columns: list[ColumnSpec], arrow_types: dict[str, pa.DataType],
                postgres: bool, snapshot_at: int | None, commits: dict[str, int]) -> Any:
    """The ``mapInArrow`` function of step 3: blobs of one topic in, the table's released rows out."""
    def selected(tx_id: str | None, partition: int, offset: int) -> bool:
        ranges = released.get((None if tx_id is None else tx_link(tx_id), partition), ())
        return any(lo <= offset <= hi for lo, hi in ranges)

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for blob in batch.column("blob").to_pylist():
                table = _from_ipc(blob)
                where = (table.column(n).to_pylist() for n in ("_tx_id", "_partition", "_offset"))
                table = table.filter(pa.array([selected(*row) for row in zip(*where)], pa.bool_()))
                if table.num_rows == 0:
                    continue
                try:
                    table = conform(table, topic, columns, arrow_types)
                except SchemaEvolutionError as exc:  # the driver turns it back into one (``table_frame``)
                    raise RuntimeError(_EVOLUTION + str(exc).replace("\n", " ")) from exc
                if postgres:
                    table = rank_by_commit(rank_after_snapshot(table, snapshot_at),
                                           lambda tx_id: commits.get(tx_link(tx_id)))
                yield from table.to_batches()
    return rows


def table_frame(spark: SparkSession, topic: str, segments: list[RemoteSegment], columns: list[ColumnSpec],
                arrow_types: dict[str, pa.DataType], snapshot_at: int | None,
                commit_of: Any) -> TableFrame:
    """Step 3 for one table: ``segments`` are its released groups (this batch's and earlier held ones).

    A group is selected by its transaction, partition and offset range: a transaction's groups, or a
    partition's rows without one, may be released in parts (``key_move_holds``)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    from lakecdc.lake.frames import metadata_fields

    schema = StructType([StructField(c.name, c.data_type, True) for c in columns] + metadata_fields())
    released: dict[Frame, Released] = {}
    for segment in segments:
        assert segment.frame is not None
        groups = released.setdefault(segment.frame, {})
        names = ("_tx_id", "_partition", "_offset", "_last_offset")
        for tx_id, partition, lo, hi in zip(*(segment.rows.column(n).to_pylist() for n in names)):
            groups.setdefault((None if tx_id is None else tx_link(tx_id), partition), []).append((lo, hi))
    postgres = any(s.source.connector == "postgresql" for s in segments)
    links = {link for groups in released.values() for link, _ in groups}
    commits = {k: c for k in links if k is not None and (c := commit_of(k)) is not None} if postgres else {}
    parts = [frame.df.where((F.col("kind") == "rows") & (F.col("topic") == topic)).select("blob").mapInArrow(
        _table_task(topic, groups, columns, arrow_types, postgres, snapshot_at, commits), schema)
        for frame, groups in released.items()]
    df = reduce(lambda a, b: a.union(b), parts).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _figures(topic, columns, df)
    except Exception as exc:
        df.unpersist()
        text = str(exc)
        if _EVOLUTION in text:
            raise SchemaEvolutionError(text[text.index(_EVOLUTION) + len(_EVOLUTION):].splitlines()[0]) from None
        raise


def _figures(topic: str, columns: list[ColumnSpec], df: DataFrame) -> TableFrame:
    """The figures of a table's frame in one aggregate job (grouped: partitions x source seconds)."""
    from pyspark.sql import functions as F

    streamed = (F.col("_op") != "r").alias("streamed")
    groups = df.groupBy("_partition", streamed, F.floor(F.col("_source_ts_ms") / 1000).alias("second")).agg(
        F.count(F.lit(1)).alias("n"), F.max("_offset").alias("last"), F.min("_seq").alias("lo"),
        F.max("_seq").alias("hi"), F.max("_source_ts_ms").alias("ts")).collect()
    through: Offsets = {}
    for g in groups:
        through[(topic, g["_partition"])] = max(g["last"], through.get((topic, g["_partition"]), -1))
    seqs = [tuple(g["lo"]) for g in groups] + [tuple(g["hi"]) for g in groups]
    reads = [tuple(g["lo"]) for g in groups if not g["streamed"]]
    live = [g for g in groups if g["streamed"] and g["ts"] is not None]
    now = int(time.time() * 1000)
    latency = pa.array(np.repeat(np.array([now - g["ts"] for g in live], np.int64),
                                 np.array([g["n"] for g in live], np.int64)), pa.int64())
    stamps = [g["ts"] for g in groups if g["ts"] is not None]
    return TableFrame(columns, df, sum(g["n"] for g in groups), through, min(seqs, default=None),
                      max(seqs, default=None), min(reads, default=None), max(stamps, default=None), latency)
