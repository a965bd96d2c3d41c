"""One micro-batch, from Kafka records to committed bronze and silver tables.

``BatchProcessor.process`` is the foreachBatch body for both readers. Its steps, in order (each
step's invariant is what makes a crash at any point safe):

1. Drop records at or below the offset a table already committed (replays after a restart).
2. Decode (``decode``); undecodable records become dead letters. A batch Spark fetched is dropped
   and decoded on the executors and its rows stay there (``executor_batch``): the driver gets
   aggregates (offsets, markers, events per transaction and partition), steps 3-6 work on them,
   and each table's writer gets a DataFrame of its released rows built on the executors.
3. Write dead letters first: the table commits below move progress past them.
4. Feed BEGIN/END markers to the transaction buffer; record schema changes and heartbeats.
5. Release the events whose transactions are complete; hold back the rest (``transactions``).
6. Per table: union schema versions, sort into source order, and ``TableWriter.apply`` with the
   Kafka offsets it covers -- never past a held-back event -- in the same table commit, and the
   offsets of its events (released events may lie past that progress; they are not replays).
   Tables are applied side by side (``apply.parallelism`` threads, ``lakecdc.ingest.parallel``);
   what they did is merged into the processor's state in topic order once all have finished.
7. Publish the consistency point in the lake (``lakecdc.ingest.consistency``), save the job state
   (the same point, control-topic offsets) and report the batch. If a table failed with anything
   but a schema-evolution error, the others' commits are kept (and their offsets recorded) and the
   error is raised; neither point nor state is saved, as a crash would leave them.

Positions: released PostgreSQL events rank at their own transaction's commit LSN
(``ordering.rank_by_commit``), or without transaction metadata the first transaction after the
snapshot ranks right after it (``ordering.rank_after_snapshot``). Transactions are released whole and in commit order
(``transactions``), so every table is complete through the consistency point
(``consistency_point``); each table commit records it (``lake.progress.CommitPositions``).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import SchemaEvolutionError
from lakecdc.ingest.consistency import ConsistencyLog
from lakecdc.ingest.consistency_point import ConsistencyPoint
from lakecdc.ingest.dead_letter import DeadLetterSink, dead_letter_frame
from lakecdc.ingest.decode import DecodedBatch, Decoder
from lakecdc.ingest.executor_batch import ExecutorBatch, Frame, RemoteSegment, TableFrame, decode_frame, table_frame
from lakecdc.ingest.executor_decode import SchemaRegistry, drop_committed, max_offsets
from lakecdc.ingest.job_state import JobState, append_schema_changes, save_state
from lakecdc.ingest.ordering import (
    Seq,
    max_seq,
    min_seq,
    order_rows,
    rank_after_snapshot,
    rank_by_commit,
    snapshot_lsn,
    snapshot_lsn_below,
)
from lakecdc.ingest.parallel import TableApplyPool
from lakecdc.ingest.reader import KafkaMicroBatch
from lakecdc.ingest.transactions import TransactionBuffer, Where
from lakecdc.lake.batch import ChangeBatch, ColumnSpec, TableTarget
from lakecdc.lake.frames import batch_frame, metadata_fields
from lakecdc.lake.layout import METADATA_NAMES
from lakecdc.lake.naming import TableNamer
from lakecdc.lake.progress import CommitPositions
from lakecdc.lake.segments import DecodedSegment, union_columns, union_segments
from lakecdc.quality.pipeline import check_batch, retry_held, retry_pending

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakecdc.writers.base import LakeWriter

log = logging.getLogger(__name__)
Offsets = dict[tuple[str, int], int]


@dataclass
class BatchReport:
    """What one micro-batch did, for metrics and tests."""

    batch_id: int
    records: int = 0
    events: int = 0
    replayed: int = 0
    tombstones: int = 0
    dead_letters: int = 0
    held_events: int = 0
    tables: dict[str, int] = field(default_factory=dict)  # source table -> events applied
    targets: list[TableTarget] = field(default_factory=list)  # the tables applied (periodic maintenance)
    failed_tables: dict[str, str] = field(default_factory=dict)
    max_source_ts_ms: int | None = None
    #: per source table applied: its newest change's source commit time and ``_seq`` (per-table lag, position)
    table_source_ts_ms: dict[str, int] = field(default_factory=dict)
    table_max_seq: dict[str, tuple[int, ...]] = field(default_factory=dict)
    seconds: float = 0.0
    #: per applied change (snapshot reads excluded): source commit -> table commit, in milliseconds
    latency_ms: list[pa.Array] = field(default_factory=list)


@dataclass(frozen=True)
class DriverDecoded:
    """Steps 1-2 of a batch the driver read (``BatchProcessor.decode``)."""

    records: int
    replayed: int
    read_max: Offsets
    decoded: DecodedBatch
    #: the decoder's keyed topics right after this batch: what the job state saved with it records
    keyed: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class _TableOutcome:
    """What applying one table's events did; merged into the processor's state by the batch's thread."""

    target: TableTarget
    failure: str | None = None  # a schema-evolution error: this table stops
    progress: Offsets = field(default_factory=dict)
    events: int = 0
    latency_ms: pa.Array | None = None
    max_source_ts_ms: int | None = None
    max_seq: tuple[int, ...] | None = None
    bronze_version: int | None = None
    silver_version: int | None = None


class BatchProcessor:
    """Applies micro-batches to the tables; one per running job (keeps decoder and buffers)."""

    def __init__(self, config: IngestConfig, spark: SparkSession, state: JobState,
                 writer_factory: Any) -> None:
        self.config = config
        self.spark = spark
        self.state = state
        self._writer_factory = writer_factory
        self._writers: dict[str, LakeWriter] = {}
        self._decoder = Decoder(config)
        for topic, key_columns in state.keyed_topics.items():
            self._decoder.remember_keyed(topic, tuple(key_columns))
        self._schemas = SchemaRegistry()  # schema ids of batches decoded on the executors
        self._frames: set[Frame] = set()  # their decoded rows, while in use (``executor_batch``)
        self._namer = TableNamer(config)
        self._tx = TransactionBuffer(self._already_applied)
        self._targets: dict[str, TableTarget] = {}
        self._committed: Offsets = {}
        #: per data topic: the transaction-topic offsets its table's last commit took in (restart)
        self._tx_through: dict[str, Offsets] = {}
        #: every source transaction at or below it is in every table (step 7)
        self._point = ConsistencyPoint(state)
        self._connector: str | None = None
        self._consistency: ConsistencyLog | None = None
        #: the highest offset read so far per partition (this run): every record up to it is applied,
        #: held, a tombstone or a dead letter, so a table commit may cover it once nothing is held
        #: below it -- also in a later batch that reads nothing more of the table (``_covered_offsets``)
        self._read_through: Offsets = {}
        self._failed: dict[str, str] = {}
        self._pool = TableApplyPool(config.apply_parallelism)
        self._control_topics = {config.transaction_topic_name, config.heartbeat_topic_name,
                                config.schema_change_topic_name}
        self._dead_letters = DeadLetterSink(
            lambda rows: self.writer(config.table_format).append_dead_letters(dead_letter_frame(spark, rows)))

    # ------------------------------------------------------------------ positions

    def writer(self, table_format: str) -> LakeWriter:
        if table_format not in self._writers:
            self._writers[table_format] = self._writer_factory(table_format)
        return self._writers[table_format]

    def start_offset(self, topic: str, partition: int) -> int | None:
        """The last offset already in the tables for a partition (None: read from the beginning)."""
        if topic in self._control_topics:
            return self.state.control_offset(topic, partition)
        if topic not in self._targets:
            self._load_committed(topic, tuple(self.state.table_keys.get(topic, ())),
                                 known=topic in self.state.table_keys)
        return self._committed.get((topic, partition))

    def _load_committed(self, topic: str, keys: tuple[str, ...], known: bool) -> None:
        target = self._namer.target(topic, key_columns=keys)
        writer = self.writer(target.format)
        if known:
            commits = [writer.committed_commit(target)]
        else:
            # Whether the table has a key (silver is then what a restart reads) is not known
            # before its first record: take the lower of both, and drop replays once it is known.
            commits = [writer.committed_commit(self._namer.with_keys(target, keys or ("_",))),
                       writer.committed_commit(self._namer.with_keys(target, ()))]
        committed = _lowest([c.offsets if c else {} for c in commits])
        for tp, offset in committed.items():
            if tp[0] == topic:
                self._committed[tp] = offset
        self._tx_through[topic] = _lowest([c.tx_through if c else {} for c in commits])
        for commit in commits:
            if commit is not None:
                self._point.table_holds(commit.complete_through, commit.max_seq)
                if commit.connector == "postgres":
                    self._raise_snapshot_lsn(snapshot_lsn_below(commit.max_seq))

    def _already_applied(self, collection: str, end: Where) -> bool:
        """Whether the table of a data collection already holds the transaction whose END is at
        ``end`` (its last commit took in that END): after a restart its events are not read again."""
        for topic, through in self._tx_through.items():
            rest = topic[len(self.config.topic_prefix) + 1:] if topic.startswith(self.config.topic_prefix + ".") \
                else topic
            if rest == collection or collection.endswith("." + rest):
                return through.get((end[0], end[1]), -1) >= end[2]
        return False

    def _consistency_log(self) -> ConsistencyLog:
        if self._consistency is None:
            self._consistency = ConsistencyLog(self.config, self.writer(self.config.table_format))
        return self._consistency

    def _target(self, segment: DecodedSegment) -> TableTarget:
        topic = segment.topic
        target = self._targets.get(topic)
        if target is None or target.key_columns != (segment.key_columns or target.key_columns):
            target = self._namer.target(topic, segment.source, segment.key_columns)
            if topic not in self._targets:
                self._load_committed(topic, target.key_columns, known=True)
            self._targets[topic] = target
            self.state.table_keys[topic] = list(target.key_columns)
        return target

    # ------------------------------------------------------------------ the batch

    def decode(self, batch: KafkaMicroBatch) -> DriverDecoded:
        """Steps 1-2 of a batch the driver read (``batch.records``). A drain runs them on its read-ahead
        thread (``lakecdc.ingest.read_ahead``) while the batch before is applied: they read a copy of the
        committed offsets (a later batch's records lie past what an earlier one commits; step 1 runs
        again after decoding, ``_drop_replayed_rows``) and change nothing but the decoder."""
        records = batch.arrow()
        read_max = max_offsets(records)
        fresh = drop_committed(records, dict(self._committed))  # step 1
        decoded = self._decoder.decode(fresh, batch.read_at)  # step 2
        return DriverDecoded(records.num_rows, records.num_rows - fresh.num_rows, read_max, decoded,
                             self._decoder.keyed_topics())

    def process(self, batch: KafkaMicroBatch, driver: DriverDecoded | None = None) -> BatchReport:
        """The batch's steps; ``driver``: its steps 1-2 when ``decode`` ran them already."""
        started = time.monotonic()
        self.state.batch_id += 1
        report = BatchReport(self.state.batch_id)
        remote: ExecutorBatch | None = None
        if batch.records is None:  # fetched by Spark: steps 1-2 run on the executors, the rows stay there
            remote = self._decode_on_executors(batch)
            report.records, report.replayed, read_max, decoded = (remote.records, remote.replayed,
                                                                  remote.read_max, remote.decoded)
            keyed = self._decoder.keyed_topics()
        else:
            driver = driver or self.decode(batch)
            report.records, report.replayed, read_max, decoded, keyed = (
                driver.records, driver.replayed, driver.read_max, driver.decoded, driver.keyed)
        for tp, offset in read_max.items():
            self._read_through[tp] = max(offset, self._read_through.get(tp, -1))
        report.tombstones = decoded.tombstones
        self._dead_letters.write(decoded.dead_letters)  # step 3
        report.dead_letters = len(decoded.dead_letters)
        if remote is not None and remote.first_dead is not None:  # their rows are on the executors
            self.writer(self.config.table_format).append_dead_letters(remote.dead_letter_frame())
            self._dead_letters.wrote(remote.dead_topics, remote.first_dead)
            report.dead_letters = remote.dead_letters
        self._tx.add_markers(decoded.tx_markers)  # step 4
        self._record_schema_changes(decoded.schema_changes)
        if decoded.last_heartbeat_ts_ms is not None:
            self.state.source_heartbeat_ts_ms = max(decoded.last_heartbeat_ts_ms,
                                                    self.state.source_heartbeat_ts_ms or 0)
        fresh = self._drop_replayed_rows(decoded.segments)
        report.replayed += sum(s.num_rows for s in decoded.segments) - sum(s.num_rows for s in fresh)
        ready = self._ranked(self._tx.split(fresh, batch.at_end_of_data, batch.lagging))  # step 5
        held_min = self._tx.held_min_offsets()
        by_topic: dict[str, list[DecodedSegment]] = defaultdict(list)
        for segment in ready:
            if segment.num_rows:
                by_topic[segment.topic].append(segment)
        frames = self._table_frames(by_topic) if remote is not None else {}
        try:
            released = [f.probe() for f in frames.values() if isinstance(f, TableFrame)] if remote is not None \
                else [seg.rows for seg in ready]
            self._advance_point(released, batch.at_end_of_data)
            self._apply_tables(by_topic, frames, dict(self._read_through), held_min, report)  # step 6
            self._retry_quiet_tables(set(by_topic))
        finally:
            self._release_frames(frames)
        report.held_events = self._tx.held_events
        self._publish()  # step 7
        self._save_state(read_max, keyed, report)
        report.seconds = time.monotonic() - started
        return report

    def _ranked(self, segments: list[DecodedSegment]) -> list[DecodedSegment]:
        """PostgreSQL events ranked after the snapshot and at their own transaction's commit
        (``ordering.rank_after_snapshot``, ``ordering.rank_by_commit``)."""
        postgres = [s for s in segments if s.source.connector == "postgresql" and s.num_rows]
        for segment in postgres:  # first: this batch's snapshot rows precede its first transaction
            self._raise_snapshot_lsn(segment.snapshot_lsn() if isinstance(segment, RemoteSegment)
                                     else snapshot_lsn(segment.rows))
        out = []
        for segment in segments:
            # a batch decoded on the executors is ranked there (``executor_batch.table_frame``)
            if segment.source.connector == "postgresql" and segment.num_rows and not isinstance(segment, RemoteSegment):
                rows = rank_after_snapshot(segment.rows, self.state.snapshot_lsn)
                segment = DecodedSegment(segment.topic, segment.schema_id, segment.columns, segment.key_columns,
                                         segment.source, rank_by_commit(rows, self._tx.commit_lsn_of))
            self._connector = self._connector or segment.source.connector
            out.append(segment)
        return out

    def _raise_snapshot_lsn(self, lsn: int | None) -> None:
        if lsn is not None and lsn > (self.state.snapshot_lsn if self.state.snapshot_lsn is not None else -1):
            self.state.snapshot_lsn = lsn

    def _advance_point(self, released: list[pa.Table], at_end_of_data: bool) -> None:
        """The consistency point after releasing ``released`` (rows with ``_seq`` and ``_op``;
        ``lakecdc.ingest.consistency_point``)."""
        self._point.advance(released, at_end_of_data, self._tx.held_min_seq(), self._tx.last_commit_lsn)

    def _positions(self, lowest: Seq | None) -> CommitPositions:
        return CommitPositions(self._point.point, lowest, self._tx.released_through(), self._connector)

    # ------------------------------------------------------------------ batches decoded on the executors

    def _decode_on_executors(self, batch: KafkaMicroBatch) -> ExecutorBatch:
        """Steps 1-2 on the executors (``executor_batch.decode_frame``), dropping what every table of the
        batch committed: decoded again when a topic's committed offsets only became known by decoding it
        (its key columns say which table's offsets count; ``_drop_replayed_rows`` does that to rows)."""
        while True:
            used = dict(self._committed)
            remote = decode_frame(batch.df, self.config, used, batch.read_at, self._schemas,
                                  self._decoder.keyed_topics())
            for segment in remote.decoded.segments:
                self._target(segment)
            if self._committed == used:
                break
            remote.frame.unpersist()
        for topic, key_columns in remote.keyed.items():
            self._decoder.remember_keyed(topic, key_columns)
        self._frames.add(remote.frame)
        return remote

    def _table_frames(self, by_topic: dict[str, list[DecodedSegment]]) -> dict[str, TableFrame | str]:
        """Each table's released rows as a DataFrame on the executors, or why it cannot be applied."""
        out: dict[str, TableFrame | str] = {}
        for topic, segments in by_topic.items():
            remote = [s for s in segments if isinstance(s, RemoteSegment)]
            try:
                columns, arrow_types = union_columns(remote)
                out[topic] = table_frame(self.spark, topic, remote, columns, arrow_types, self.state.snapshot_lsn,
                                         self._tx.commit_lsn_of)
            except SchemaEvolutionError as exc:
                out[topic] = str(exc)
        return out

    def _release_frames(self, tables: dict[str, TableFrame | str]) -> None:
        """Frees the tables' frames, and the batches' frames no held event is in any more."""
        for table in tables.values():
            if isinstance(table, TableFrame):
                table.df.unpersist()
        held = {s.frame for s in self._tx.held_segments if isinstance(s, RemoteSegment)}
        for frame in self._frames - held:
            frame.unpersist()
        self._frames &= held

    def _publish(self) -> None:
        """Step 7: the consistency point, with each table's version, in the lake."""
        if not self._point.publishable:
            return
        # Every table the job writes, also those this run has not seen events of yet (their newest
        # version holds exactly the point: no released transaction touched them).
        self._consistency_log().publish(self.state.batch_id, self._point.point, _short_connector(self._connector),
                                        self._known_targets(), sorted(self._failed))

    def _apply_tables(self, by_topic: dict[str, list[DecodedSegment]], frames: dict[str, TableFrame | str],
                      read_through: Offsets, held_min: Offsets, report: BatchReport) -> None:
        """Step 6: every table's events, side by side."""
        work = []
        for topic, segments in by_topic.items():
            if topic in self._failed:
                continue
            # Targets and writers are resolved here, in the batch's thread: the tasks only read them.
            target = self._target(segments[-1])
            writer = self.writer(target.format)
            work.append((target, writer, segments))
        batch_id = self.state.batch_id
        outcomes = self._pool.run([
            partial(self._apply_topic, target, writer, frames.get(target.topic) or segments, read_through, held_min,
                    batch_id)
            for target, writer, segments in work])
        error: BaseException | None = None
        for (target, _, _), outcome in zip(work, outcomes):  # topic order, whatever finished first
            if outcome.error is not None:
                error = error or outcome.error
                continue
            applied = outcome.value
            assert applied is not None
            if applied.failure is not None:
                self._fail(target, applied.failure, report)
                continue
            for tp, offset in applied.progress.items():
                self._committed[tp] = max(offset, self._committed.get(tp, -1))
            self._consistency_log().record(target, applied.bronze_version, applied.silver_version)
            if applied.latency_ms is not None:
                report.latency_ms.append(applied.latency_ms)
            report.events += applied.events
            table = target.source_name or target.topic
            report.tables[table] = applied.events
            report.targets.append(target)
            if applied.max_seq is not None:
                report.table_max_seq[table] = applied.max_seq
            if applied.max_source_ts_ms is not None:
                report.table_source_ts_ms[table] = applied.max_source_ts_ms
                report.max_source_ts_ms = max(applied.max_source_ts_ms,
                                              report.max_source_ts_ms or applied.max_source_ts_ms)
        if error is not None:
            raise error

    def _apply_topic(self, target: TableTarget, writer: LakeWriter, events: list[DecodedSegment] | TableFrame | str,
                     read_through: Offsets, held_min: Offsets, batch_id: int) -> _TableOutcome:
        """One table's events of the batch, written; runs on an apply thread (shared state: read only).
        ``events``: decoded segments, the table's frame on the executors, or why it cannot be applied."""
        if isinstance(events, str):
            return _TableOutcome(target, failure=events)
        try:
            table = events if isinstance(events, TableFrame) else self._arrow_table(target, events)
        except SchemaEvolutionError as exc:
            return _TableOutcome(target, failure=str(exc))
        progress = _covered_offsets(target.topic, table.events_through, read_through, held_min)
        verdict = check_batch(self.config, target, table.rows, table.df)  # pipeline expectations
        if verdict.failure is not None:
            return _TableOutcome(target, failure=verdict.failure)
        held = self.spark.createDataFrame(verdict.held, "_topic string, _partition int, _offset long") \
            if verdict.held else None
        # quarantined events that a changed suite passes join the batch (bronze has them: it adds nothing)
        retry = retry_held(self.config, target, self.spark, table.df.schema,
                           lambda keys: writer._bronze_events(target, keys))
        df, stats = (table.df, table.stats) if retry.released is None else \
            (table.df.unionByName(retry.released), None)
        try:
            result = writer.apply(ChangeBatch(target, table.columns, df, progress, table.events_through,
                                              stats, self._positions(table.min_seq), held,
                                              table.rows if retry.released is None else None), batch_id)
        except SchemaEvolutionError as exc:
            return _TableOutcome(target, failure=str(exc))
        retry.settle(result.silver_version is not None)
        for warning in result.warnings:
            log.debug("writer warning for %s: %s", target.source_name, warning)
        return _TableOutcome(target, progress=progress, events=table.events, latency_ms=table.latency_ms,
                             max_source_ts_ms=table.max_source_ts_ms, max_seq=table.max_seq,
                             bronze_version=result.bronze_version, silver_version=result.silver_version)

    def _arrow_table(self, target: TableTarget, segments: list[DecodedSegment]) -> TableFrame:
        """A table's events decoded here, in apply order, as a DataFrame with their figures."""
        from pyspark.sql.types import StructField, StructType

        from lakecdc.lake.silver import arrow_batch_stats

        columns, rows = union_segments(segments)
        rows = order_rows(rows)
        schema = StructType([StructField(c.name, c.data_type, True) for c in columns] + metadata_fields())
        streamed = rows.filter(pc.not_equal(rows.column("_op"), "r")).column("_source_ts_ms")
        latency = pc.subtract(pa.scalar(int(time.time() * 1000), pa.int64()), streamed)
        # The figures of the batch come from its Arrow rows here: a Spark job less per table.
        return TableFrame(columns, batch_frame(self.spark, rows, schema), rows.num_rows,
                          max_offsets(pa.table({"topic": rows.column("_topic"), "partition": rows.column("_partition"),
                                                "offset": rows.column("_offset")})),
                          min_seq(rows), max_seq(rows), None, pc.max(rows.column("_source_ts_ms")).as_py(), latency,
                          rows=rows, stats=arrow_batch_stats(rows, target.key_columns))

    def _known_targets(self) -> list[TableTarget]:
        """Every table the job writes, also those this run has not seen events of yet."""
        return [self._targets.get(topic) or self._namer.target(topic, key_columns=tuple(keys))
                for topic, keys in self.state.table_keys.items() if topic not in self._failed]

    def _retry_quiet_tables(self, busy: set[str]) -> None:
        """Step 6 for the tables without events in this batch whose changed suite retries quarantined
        events (the others retried them with their events): the events that pass now, alone, into
        silver (offsets unchanged: bronze holds them already)."""
        for target in self._known_targets():
            if target.topic in busy:
                continue
            writer = self.writer(target.format)
            retry = retry_held(self.config, target, self.spark, None, lambda keys: writer._bronze_events(target, keys))
            if retry.released is None:
                retry.settle(True)  # nothing for silver: the verdicts alone
                continue
            columns = [ColumnSpec(f.name, f.dataType) for f in retry.released.schema.fields
                       if f.name not in METADATA_NAMES]
            result = writer.apply(ChangeBatch(target, columns, retry.released, positions=self._positions(None)),
                                  self.state.batch_id)
            retry.settle(result.silver_version is not None)
            self._consistency_log().record(target, result.bronze_version, result.silver_version)

    def _fail(self, target: TableTarget, reason: str, report: BatchReport) -> None:
        self._failed[target.topic] = reason
        report.failed_tables[target.source_name or target.topic] = reason
        log.error("table %s stopped (the other tables go on): %s", target.source_name or target.topic, reason)

    def _drop_replayed_rows(self, segments: list[DecodedSegment]) -> list[DecodedSegment]:
        """Step 1 again, after decoding: a topic seen for the first time only now has its target
        (key columns decide which table's progress counts), hence its committed offsets."""
        fresh = []
        for segment in segments:
            self._target(segment)
            limits = {p: o for (t, p), o in self._committed.items() if t == segment.topic}
            if limits and not isinstance(segment, RemoteSegment):  # decoded with them (``_decode_on_executors``)
                parts = segment.rows.column("_partition")
                offs = segment.rows.column("_offset")
                keep = None
                for partition, committed in limits.items():
                    old = pc.and_(pc.equal(parts, partition), pc.less_equal(offs, committed))
                    keep = pc.invert(old) if keep is None else pc.and_(keep, pc.invert(old))
                segment = DecodedSegment(segment.topic, segment.schema_id, segment.columns, segment.key_columns,
                                         segment.source, segment.rows.filter(keep))
            if segment.num_rows:
                fresh.append(segment)
        return fresh

    def _record_schema_changes(self, changes: list[Any]) -> None:
        if not changes:
            return
        append_schema_changes(self.config.progress_dir, [
            {"topic": c.topic, "partition": c.partition, "offset": c.offset, "payload": c.payload} for c in changes])
        for change in changes:
            log.info("schema change recorded from %s offset %d: %s", change.topic, change.offset,
                     (change.ddl or "(no DDL text)")[:200])

    def _save_state(self, read_max: Offsets, keyed: dict[str, tuple[str, ...]], report: BatchReport) -> None:
        state = self.state
        # what the decoder knew after this batch (not a batch read ahead of it)
        state.keyed_topics = {t: list(k) for t, k in keyed.items()}
        open_markers = self._tx.marker_restart_offsets()
        for (topic, partition), offset in read_max.items():
            if topic in self._control_topics:
                lowest_open = open_markers.get((topic, partition))
                state.set_control_offset(topic, partition, offset if lowest_open is None else lowest_open - 1)
        self._point.save(state)
        state.connector = _short_connector(self._connector) or state.connector
        if report.max_source_ts_ms is not None:
            state.applied_through_source_ts_ms = max(report.max_source_ts_ms,
                                                     state.applied_through_source_ts_ms or 0)
        held_from = self._tx.held_min_seq()
        state.held_from_seq = list(held_from) if held_from is not None else None
        state.held_events = self._tx.held_events
        state.open_transactions = self._tx.open_transactions
        state.updated_at = datetime.now(timezone.utc).isoformat()
        save_state(self.config.progress_dir, state)

    def close(self) -> None:
        """Stop the apply threads and free the executors' frames of held events (the job calls this
        when it ends: a restart reads held events again from the tables' offsets)."""
        self._pool.close()
        for frame in self._frames:
            try:
                frame.unpersist()
            except Exception as exc:  # a stopped session: nothing is cached any more; never hide the job's own error
                log.debug("could not unpersist a held frame: %s", exc)
        self._frames.clear()

    @property
    def held_events(self) -> int:
        return self._tx.held_events

    @property
    def waits_for_end_of_data(self) -> bool:
        """True while an empty batch that reached the end of every partition would move something:
        events held back, a consistency point held below snapshot rows (``_advance_point``), or a
        restarted job's point below what a table already holds, or quarantined events that a table's
        changed suite retries (``_retry_quiet_tables``)."""
        return bool(self._tx.held_events) or self._point.snapshot_pending is not None or self._point.behind_floor \
            or any(retry_pending(self.config, t, self.spark) for t in self._known_targets())

    @property
    def failed_tables(self) -> dict[str, str]:
        return dict(self._failed)


def _lowest(offsets: list[Offsets]) -> Offsets:
    """Per partition present in all of them, the lowest offset."""
    if not offsets:
        return {}
    first, *rest = offsets
    return {tp: min([off, *(o[tp] for o in rest)]) for tp, off in first.items() if all(tp in o for o in rest)}


def _short_connector(connector: str | None) -> str | None:
    return {"postgresql": "postgres", "mariadb": "mysql"}.get(connector or "", connector)


def _covered_offsets(topic: str, released: Offsets, read_through: Offsets, held_min: Offsets) -> Offsets:
    """Per partition of ``topic``: the last offset this table commit covers: what was read so far
    (``read_through``, earlier batches included: events written past an earlier commit's cap are
    covered once the hold that capped it is released), below any held event.

    ``released`` (the highest offset of the events applied now) may lie above the result: those
    events are written all the same (``ChangeBatch.event_offsets``), and a replay after a restart
    finds them again, which bronze's identity anti-join and silver's ``_seq`` guard make harmless.
    """
    covered: Offsets = {tp: off for tp, off in read_through.items() if tp[0] == topic}
    for tp, off in released.items():
        covered[tp] = max(off, covered.get(tp, -1))
    for tp, lowest in held_min.items():
        if tp in covered:
            covered[tp] = min(covered[tp], lowest - 1)
    return {tp: off for tp, off in covered.items() if off >= 0}
