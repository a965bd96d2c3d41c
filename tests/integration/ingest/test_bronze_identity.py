"""Bronze keeps every source change exactly once: keyless tables' identical rows, replays, re-sends.

A keyless table's snapshot rows share their position, op and (null) key; identical ones are distinct
events (``lakecdc.lake.bronze``: numbered by ``_occurrence``). Replays (same Kafka offsets) and
re-sent streaming events (new offsets, same position and row) add nothing. Both formats: Iceberg
through Spark, Delta through delta-rs.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
from writer_harness import LONG, STR, DriverRows, Ev, Stream, TableReader

from lakecdc.lake.bronze import IDENTITY
from lakecdc.writers.base import BRONZE_META, LakeWriter, create_writer, row_schema

pytestmark = pytest.mark.integration

COLUMNS = [("id", LONG), ("name", STR)]
SNAPSHOT_TS = 1_699_999_999_000  # every row of one snapshot reading carries the reading's source time


#: "+arrow": batches as the driver decodes them, their rows in Arrow too (``harness.DriverRows``)
FORMATS = ["iceberg", "delta-rs", "delta-rs+arrow"]


def make_writer(fmt: str, spark: SparkSession, tmp_path: Path) -> LakeWriter:
    made = create_writer(fmt.removesuffix("+arrow"), spark, warehouse=str(tmp_path / "delta"))
    assert isinstance(made, LakeWriter)
    return DriverRows(made) if fmt.endswith("+arrow") else made  # type: ignore[return-value]


@pytest.fixture(params=FORMATS)
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[LakeWriter]:
    yield make_writer(request.param, spark, tmp_path)


def keyless(writer: LakeWriter, spark: SparkSession) -> Stream:
    return Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS, keys=())


def read(name: str, seq: int = 5) -> Ev:
    """A snapshot row of a keyless table (all share the snapshot's position and time)."""
    return Ev("r", seq, {"id": 1, "name": name}, ts_ms=SNAPSHOT_TS)


def bronze(writer: LakeWriter, s: Stream) -> list[dict[str, Any]]:
    return TableReader(writer).rows(s.target.bronze_table)


def contents(writer: LakeWriter, s: Stream) -> Counter[tuple[Any, ...]]:
    return Counter((r["_op"], tuple(r["_seq"]), r["name"]) for r in bronze(writer, s))


def assert_identity_unique(rows: list[dict[str, Any]]) -> None:
    identities = [tuple(tuple(r[c]) if c == "_seq" else r[c] for c in IDENTITY) for r in rows]
    assert len(identities) == len(set(identities)), "two bronze rows share an identity"


def same_records(events: list[Ev]) -> list[Ev]:
    """The same Kafka records again (a job replay: same offsets)."""
    return [Ev(e.op, e.seq, e.row, ts_ms=e.ts_ms, offset=e.offset, partition=e.partition) for e in events]


def resent(events: list[Ev]) -> list[Ev]:
    """The same events at new Kafka offsets (a restarted capture)."""
    return [Ev(e.op, e.seq, e.row, ts_ms=e.ts_ms, partition=e.partition) for e in events]


def test_identical_snapshot_rows_of_a_keyless_table_are_all_kept(writer: LakeWriter, spark: SparkSession) -> None:
    s = keyless(writer, spark)
    first = [read("x"), read("x"), read("y"), read("x")]
    result = writer.apply(s.batch(first), 1)
    assert result.bronze_rows == 4
    assert contents(writer, s) == Counter({("r", (5, 5, 0, 0), "x"): 3, ("r", (5, 5, 0, 0), "y"): 1})
    rows = bronze(writer, s)
    assert sorted(r["_occurrence"] for r in rows if r["name"] == "x") == [0, 1, 2]
    assert_identity_unique(rows)

    # the group goes on in the next micro-batch, which also replays the first one's records
    second = [read("x"), read("y")]
    result = writer.apply(s.batch(same_records(first) + second), 2)
    assert result.bronze_rows == 2
    assert contents(writer, s) == Counter({("r", (5, 5, 0, 0), "x"): 4, ("r", (5, 5, 0, 0), "y"): 2})
    assert sorted(r["_occurrence"] for r in bronze(writer, s) if r["name"] == "x") == [0, 1, 2, 3]
    assert_identity_unique(bronze(writer, s))

    # a replay of the same records alone (bronze's progress covers it) and mixed with new events
    assert writer.apply(s.batch(same_records(second)), 3).skipped
    result = writer.apply(s.batch(same_records(second) + [Ev("c", 9, {"id": 1, "name": "x"})]), 4)
    assert result.bronze_rows == 1
    assert sum(contents(writer, s).values()) == 7


def test_identical_streaming_rows_are_kept_and_resent_ones_add_nothing(writer: LakeWriter,
                                                                       spark: SparkSession) -> None:
    """Streamed changes of a keyless table each have their own position: identical rows are kept,
    a re-send (new offset, same position and row) is not, also when it shares a batch with new ones."""
    s = keyless(writer, spark)
    events = [Ev("c", 10, {"id": 1, "name": "x"}), Ev("c", 11, {"id": 1, "name": "x"}),
              Ev("d", 12, {"id": 1, "name": "x"}), Ev("t", 13)]
    assert writer.apply(s.batch(events), 1).bronze_rows == 4
    result = writer.apply(s.batch(resent(events) + resent(events[:1]) + [Ev("c", 14, {"id": 1, "name": "x"})]), 2)
    assert result.bronze_rows == 1
    assert contents(writer, s) == Counter({("c", (10, 10, 0, 0), "x"): 1, ("c", (11, 11, 0, 0), "x"): 1,
                                           ("d", (12, 12, 0, 0), "x"): 1, ("t", (13, 13, 0, 0), None): 1,
                                           ("c", (14, 14, 0, 0), "x"): 1})
    assert {r["_occurrence"] for r in bronze(writer, s)} == {0}
    assert_identity_unique(bronze(writer, s))


def test_a_different_row_at_a_shared_position_is_not_a_resend(writer: LakeWriter, spark: SparkSession) -> None:
    """Two events sharing position, op and a null key but not their row are both kept."""
    s = keyless(writer, spark)
    writer.apply(s.batch([Ev("u", 20, {"id": 1, "name": "a"})]), 1)
    assert writer.apply(s.batch([Ev("u", 20, {"id": 1, "name": "b"}), Ev("u", 20, {"id": 1, "name": "a"})]),
                        2).bronze_rows == 1
    assert sorted(r["name"] for r in bronze(writer, s)) == ["a", "b"]


def test_keyed_snapshot_rows_resent_add_nothing(writer: LakeWriter, spark: SparkSession) -> None:
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    rows = [Ev("r", 5, {"id": i, "name": "same"}, ts_ms=SNAPSHOT_TS) for i in range(3)]
    assert writer.apply(s.batch(rows), 1).bronze_rows == 3
    assert writer.apply(s.batch(resent(rows) + [Ev("c", 6, {"id": 9, "name": "n"})]), 2).bronze_rows == 1


def test_bronze_made_before_the_identity_columns_keeps_recognising_its_events(writer: LakeWriter,
                                                                             spark: SparkSession) -> None:
    """Old rows (no ``_row_hash``) still identify re-sends by position, op and key; new rows number on."""
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    older = StructType([*row_schema(s.columns).fields,
                        *(f for f in BRONZE_META.fields if f.name not in ("_row_hash", "_occurrence"))])
    writer._create_table(s.target.bronze_table, older, "bronze")  # type: ignore[attr-defined]
    first = [Ev("c", 10, {"id": 1, "name": "a"})]
    batch = s.batch(first)
    old_rows = batch.df.withColumnRenamed("_partition", "_kafka_partition")
    if writer.format == "iceberg":
        old_rows.writeTo(writer.resolve(s.target.bronze_table)).append()  # type: ignore[attr-defined]
    else:
        import pyarrow as pa
        from deltalake import DeltaTable, write_deltalake

        from lakecdc.writers.delta_rs import _conform, _to_arrow
        table = DeltaTable(writer.table_uri(s.target.bronze_table))  # type: ignore[attr-defined]
        data = _to_arrow(old_rows)
        data = data.append_column("_ingest_date", pa.compute.cast(data["_ingest_ts"], pa.date32()))
        write_deltalake(table, _conform(data, pa.schema(table.schema().to_arrow())), mode="append",
                        partition_by=["_ingest_date"])
    result = writer.apply(s.batch(resent(first) + [Ev("c", 11, {"id": 2, "name": "b"})]), 1)
    assert any("added column _row_hash" in c for c in result.schema_changes)
    assert result.bronze_rows == 1
    rows = sorted(bronze(writer, s), key=lambda r: r["_seq"])
    assert [(r["id"], r["_row_hash"] is None) for r in rows] == [(1, True), (2, False)]


# -- property: random deliveries with duplicates, re-sends and replays ------------------------

@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[list[tuple[str, int, str]]], Counter[tuple[str, int, str]]]:
    """(micro-batches of records (op, seq, name) with Kafka offsets implied by order, the expected
    bronze contents). Snapshot rows (op r, seq 1) repeat freely; streamed changes (op c) have their
    own seq and may be re-sent; any batch may replay earlier records."""
    snapshot = draw(st.lists(st.sampled_from("abc"), max_size=8))
    changes = [(f"v{i}", draw(st.sampled_from("ab"))) for i in range(draw(st.integers(0, 5)))]
    records: list[tuple[str, int, str]] = [("r", 1, name) for name in snapshot]
    records += [("c", 10 + i, name) for i, (_, name) in enumerate(changes)]
    resends = draw(st.lists(st.integers(0, max(len(changes) - 1, 0)), max_size=3)) if changes else []
    records += [("c", 10 + i, changes[i][1]) for i in resends]
    expected = Counter(records[:len(snapshot)]) + Counter(("c", 10 + i, name) for i, (_, name) in enumerate(changes))
    cuts = sorted(draw(st.lists(st.integers(0, len(records)), max_size=3)))
    bounds = [0, *cuts, len(records)]
    return [records[a:b] for a, b in zip(bounds, bounds[1:])], expected


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_deliveries_land_exactly_once(fmt: str, spark: SparkSession, tmp_path: Path) -> None:
    made = make_writer(fmt, spark, tmp_path)

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(deliveries(), st.randoms(use_true_random=False))
    def check(plan: tuple[list[list[tuple[str, int, str]]], Counter[tuple[str, int, str]]], rnd: random.Random) -> None:
        batches, expected = plan
        s = keyless(made, spark)
        delivered: list[Ev] = []
        for batch_id, records in enumerate(batches, 1):
            events = [Ev(op, seq, {"id": 1, "name": name}, ts_ms=SNAPSHOT_TS + seq) for op, seq, name in records]
            replay = same_records(rnd.sample(delivered, k=rnd.randint(0, len(delivered)))) if delivered else []
            if events or replay:
                made.apply(s.batch(replay + events), batch_id)
            delivered += events
        rows = bronze(made, s) if made._table_schema(s.target.bronze_table) is not None else []  # type: ignore[attr-defined]
        assert Counter((r["_op"], r["_seq"][0], r["name"]) for r in rows) == expected
        assert_identity_unique(rows)

    check()


def test_a_resent_postgres_event_ranked_without_its_end_marker_adds_nothing(writer: LakeWriter,
                                                                           spark: SparkSession) -> None:
    """A PostgreSQL event is ranked at its transaction's commit LSN only when the job read the END
    marker (``ordering.rank_by_commit``); a copy re-sent later may be read without it and rank at
    Debezium's ``sequence[0]`` (the previous commit). Its LSN still names it: bronze adds nothing.
    (Found by tests/e2e/test_pg_to_lake.py's redelivery phase.)"""
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    ts = 1_700_000_000_000
    first = [Ev("c", (120, 101), {"id": 1, "name": "a"}, ts_ms=ts),
             Ev("u", (120, 110), {"id": 1, "name": "b"}, ts_ms=ts)]
    assert writer.apply(s.batch(first), 1).bronze_rows == 2
    again = [Ev("c", (90, 101), {"id": 1, "name": "a"}, ts_ms=ts), Ev("u", (90, 110), {"id": 1, "name": "b"}, ts_ms=ts)]
    assert writer.apply(s.batch(again), 2).bronze_rows == 0
    assert sorted(tuple(r["_seq"]) for r in bronze(writer, s)) == [(120, 101, 0, 0), (120, 110, 0, 0)]


def test_a_batch_newer_than_everything_stored_skips_the_anti_join_and_one_at_the_edge_does_not(
        writer: LakeWriter, spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bronze's last commit records the newest source timestamp it holds; a batch whose oldest event is
    newer cannot repeat a stored event (a replay or re-send keeps its first copy's timestamp), so the
    stored rows are not read. A batch starting at that very millisecond is checked against them."""
    import importlib

    import pyarrow.compute as pc

    module = importlib.import_module("lakecdc.writers.spark_sql" if writer.format == "iceberg"
                                     else "lakecdc.writers.delta_rs")
    seen: list[tuple[str, bool, tuple[int, int] | None]] = []
    real = module.spark_new_rows

    def spy(batch: Any, row_columns: list[str], stored: Any, ts_range: tuple[int, int] | None,
            connector: str = "") -> Any:
        seen.append(("spark", stored is not None, ts_range))
        return real(batch, row_columns, stored, ts_range, connector)

    monkeypatch.setattr(module, "spark_new_rows", spy)
    arrow_real = getattr(module, "arrow_new_rows", None)

    def arrow_spy(batch: Any, stored: Any, connector: str = "") -> Any:  # the driver's rows (``+arrow``)
        window = (int(pc.min(stored["_source_ts_ms"]).as_py()), int(pc.max(stored["_source_ts_ms"]).as_py())) \
            if stored is not None and stored.num_rows else None
        seen.append(("arrow", stored is not None, window))
        return arrow_real(batch, stored, connector)  # type: ignore[misc]

    if arrow_real is not None:
        monkeypatch.setattr(module, "arrow_new_rows", arrow_spy)
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    ts = 1_700_000_000_000
    first = [Ev("c", 10, {"id": 1, "name": "a"}, ts_ms=ts), Ev("u", 11, {"id": 1, "name": "b"}, ts_ms=ts + 5)]
    assert writer.apply(s.batch(first), 1).bronze_rows == 2
    later = [Ev("u", 12, {"id": 1, "name": "c"}, ts_ms=ts + 6)]
    assert writer.apply(s.batch(later), 2).bronze_rows == 1
    edge = [*resent(later), Ev("u", 13, {"id": 1, "name": "d"}, ts_ms=ts + 6)]  # the re-send shares the newest ms
    assert writer.apply(s.batch(edge), 3).bronze_rows == 1
    path = "arrow" if isinstance(writer, DriverRows) else "spark"  # the driver's rows: no Spark identity
    assert [p for p, _, _ in seen] == [path] * 3
    assert [s for _, *s in seen[1:]] == [[False, None], [True, (ts + 6, ts + 6)]]
    assert sorted(r["name"] for r in bronze(writer, s)) == ["a", "b", "c", "d"]
