"""Transaction-consistent release and in-batch ordering, on the real Debezium records."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
from ingest_records import encode, golden_records, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.events.positions import position_from_source
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.ordering import max_seq, min_seq, order_rows, rank_by_commit
from lakecdc.ingest.transactions import TransactionBuffer, commit_lsn, tx_link
from lakecdc.lake.segments import union_segments

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
CONFIG = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"})


def decode(records: list[dict]) -> tuple[Decoder, object]:
    decoder = Decoder(CONFIG)
    return decoder, decoder.decode(kafka_table((r["topic"], encode(r["key"]), encode(r["value"]))
                                               for r in records), NOW)


def tx_ids(segments) -> set[str]:
    return {tx_link(t) for s in segments for t in s.rows.column("_tx_id").to_pylist() if t}


def test_postgres_ids_link_on_the_tx_id_part() -> None:
    assert tx_link("1264:99091160") == tx_link("1264:99092032") == "1264"
    assert tx_link("0e0a7f0c-0000-11ee-9bc8-0242ac120002:23") == "0e0a7f0c-0000-11ee-9bc8-0242ac120002:23"


def test_events_wait_for_their_end_marker_and_all_counts() -> None:
    records = golden_records()
    # Everything up to and including the 5-event transaction's events, but not its END (seq 27).
    first, rest = records[:26], records[26:]
    buffer = TransactionBuffer()
    _, batch = decode(first)
    buffer.add_markers(batch.tx_markers)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    assert "1264" not in tx_ids(ready)  # the multi-table transaction is held back entirely
    assert {"1260", "1261", "1262", "1263"} <= tx_ids(ready)
    assert buffer.held_events == 5 and buffer.open_transactions == 1
    assert sum(s.num_rows for s in ready) == 4 + 5  # 4 snapshot rows + the 5 events of txs 1260-1263
    _, later = decode(rest)
    buffer.add_markers(later.tx_markers)
    released = buffer.split(later.segments, at_end_of_data=False)
    assert "1264" in tx_ids(released)
    assert sum(1 for s in released for t in s.rows.column("_tx_id").to_pylist() if t and tx_link(t) == "1264") == 5
    assert buffer.held_events == 0 and buffer.open_transactions == 0


def test_a_transaction_split_across_batches_is_released_whole() -> None:
    records = golden_records()
    buffer = TransactionBuffer()
    _, one = decode(records[:22])  # BEGIN 1264 + two of its five events
    buffer.add_markers(one.tx_markers)
    buffer.split(one.segments, at_end_of_data=False)
    _, two = decode(records[22:])
    buffer.add_markers(two.tx_markers)
    ready = buffer.split(two.segments, at_end_of_data=False)
    rows_1264 = [o for s in ready for o, t in zip(s.rows.column("_offset").to_pylist(),
                                                   s.rows.column("_tx_id").to_pylist()) if t and tx_link(t) == "1264"]
    assert len(rows_1264) == 5


def _without_customers_of_1264(records: list[dict]) -> list[dict]:
    return [r for r in records if not (r["topic"] == "dbz.public.customers" and r["value"] and _in_1264(r))]


def _in_1264(record: dict) -> bool:
    return (record["value"]["payload"].get("transaction") or {}).get("id", "").startswith("1264:")


#: the transactions committed after 1264 that have data events
LATER = {tx_link(r["value"]["payload"]["transaction"]["id"]) for r in golden_records()
         if r["topic"] != "dbz.transaction" and r["value"] and r["value"]["payload"].get("transaction")} - {
    "1260", "1261", "1262", "1263", "1264"}


def test_at_end_of_data_an_ended_transaction_with_missing_events_is_released() -> None:
    # The END says 3 customers events; only the audit_full and nopk ones are read (customers is a
    # table this job does not read), so counts never complete: released when reading reaches the end.
    buffer = TransactionBuffer()
    _, batch = decode(_without_customers_of_1264(golden_records()))
    buffer.add_markers(batch.tx_markers)
    held_back = buffer.split(batch.segments, at_end_of_data=False)
    assert "1264" not in tx_ids(held_back)
    # Commit order: the complete transactions after 1264 wait for it (a table must never show
    # 1265 without 1264, a state the source never had).
    assert not tx_ids(held_back) & LATER
    ready = buffer.split([], at_end_of_data=True)
    assert tx_ids(ready) == {"1264"} | LATER and buffer.held_events == 0


def test_a_restart_completes_a_transaction_from_what_the_tables_hold() -> None:
    """Crash after customers committed 1264 and before audit_full/nopk did: customers' events are
    not read again (below its committed offsets); its table's commit took in 1264's END, so 1264 is
    complete at once and released before the transactions after it -- not held behind them."""
    records = golden_records()
    end_1264 = next(i for i, r in enumerate(r for r in records if r["topic"] == "dbz.transaction")
                    if r["value"]["payload"]["status"] == "END" and r["value"]["payload"]["id"].startswith("1264:"))
    seen: list[tuple[str, tuple]] = []

    def customers_hold(collection: str, end: tuple) -> bool:
        seen.append((collection, end))
        return collection == "public.customers" and end[2] <= end_1264

    buffer = TransactionBuffer(customers_hold)
    _, batch = decode(_without_customers_of_1264(records))
    buffer.add_markers(batch.tx_markers)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    assert {"1264"} | LATER <= tx_ids(ready) and buffer.held_events == 0
    assert ("public.customers", ("dbz.transaction", 0, end_1264)) in seen
    assert buffer.released_through() == {("dbz.transaction", 0): max(m.offset for m in batch.tx_markers)}


def test_a_complete_transaction_waits_for_an_earlier_incomplete_one() -> None:
    records = golden_records()
    # 1264's nopk_events event is missing (not read yet): 1264 stays held, and so does every later one.
    missing = [r for r in records if not (r["topic"] == "dbz.public.nopk_events" and r["value"] and _in_1264(r))]
    buffer = TransactionBuffer()
    _, batch = decode(missing)
    buffer.add_markers(batch.tx_markers)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    assert {"1260", "1261", "1262", "1263"} <= tx_ids(ready)
    assert not tx_ids(ready) & ({"1264"} | LATER)
    late = next(r for r in records if r["topic"] == "dbz.public.nopk_events" and r["value"] and
                (r["value"]["payload"].get("transaction") or {}).get("id", "").startswith("1264:"))
    _, rest = decode([late])
    assert tx_ids(buffer.split(rest.segments, at_end_of_data=False)) == {"1264"} | LATER


def test_begin_without_end_stays_held_even_at_end_of_data() -> None:
    records = golden_records()[:26]
    buffer = TransactionBuffer()
    _, batch = decode(records)
    buffer.add_markers(batch.tx_markers)
    buffer.split(batch.segments, at_end_of_data=True)
    assert buffer.held_events == 5
    first_of_tx = next(r for r in records if r["value"] and str(
        (r["value"]["payload"].get("transaction") or {}).get("id", "")).startswith("1264:"))
    assert buffer.held_min_seq() == position_from_source("postgresql", first_of_tx["value"]["payload"]["source"]).seq()
    restart = buffer.marker_restart_offsets()
    assert list(restart) == [("dbz.transaction", 0)]


def test_events_without_transaction_metadata_pass_in_position_order() -> None:
    records = [r for r in golden_records() if r["topic"] != "dbz.transaction"]
    for r in records:
        if r["value"]:
            r["value"]["payload"]["transaction"] = None
    buffer = TransactionBuffer()
    _, batch = decode(records)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    assert sum(s.num_rows for s in ready) == 20 and buffer.held_events == 0
    _, rows = union_segments([s for s in ready if s.topic == "dbz.public.customers"])
    ordered = order_rows(rows)
    seqs = [tuple(s) for s in ordered.column("_seq").to_pylist()]
    assert seqs == sorted(seqs)
    assert ordered.column("_op").to_pylist()[0] == "r"
    assert max_seq(ordered) == seqs[-1] and min_seq(rows) == seqs[0]


def test_order_rows_uses_total_order_then_offset_for_equal_positions() -> None:
    seq = pa.array([[5, 1, 1, 0]] * 3 + [[4, 9, 1, 0]], pa.list_(pa.int64()))
    table = pa.table({"_seq": seq, "_tx_total_order": pa.array([2, 1, None, 7], pa.int64()),
                      "_partition": pa.array([0, 0, 0, 0], pa.int32()),
                      "_offset": pa.array([10, 11, 12, 13], pa.int64())})
    assert order_rows(table).column("_offset").to_pylist() == [13, 12, 11, 10]


def test_a_transaction_open_across_the_snapshot_ranks_after_the_snapshot_rows() -> None:
    """PostgreSQL: a transaction that began before the slot's consistent point and commits after it
    has event LSNs below the snapshot position and a null ``source.sequence[0]`` (Debezium's shape,
    kept as is); ranked at its own commit LSN (its END id), it sorts after the snapshot rows."""
    records = golden_records()
    snapshot_lsn = next(r for r in records if r["value"] and r["value"]["payload"].get("op") == "r")[
        "value"]["payload"]["source"]["lsn"]
    for r in records:  # 1260 wrote its row before the snapshot was taken, and committed after it
        payload = r["value"]["payload"] if r["value"] else {}
        tx_id = str((payload.get("transaction") or {}).get("id"))
        if r["topic"] == "dbz.public.customers" and tx_id.startswith("1260:"):
            payload["source"]["lsn"] = snapshot_lsn - 64
            payload["source"]["sequence"] = f'[null,"{snapshot_lsn - 64}"]'
    buffer = TransactionBuffer()
    _, batch = decode(records)
    buffer.add_markers(batch.tx_markers)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    _, rows = union_segments([s for s in ready if s.topic == "dbz.public.customers"])
    raw = order_rows(rows)
    assert raw.column("_op").to_pylist()[0] == "c"  # as the events come: 1260's insert ranks first
    ranked = order_rows(rank_by_commit(rows, buffer.commit_lsn_of))
    ops = ranked.column("_op").to_pylist()
    snapshot_rows = ops.count("r")
    assert snapshot_rows and ops[:snapshot_rows] == ["r"] * snapshot_rows  # every streamed change after them
    end_1260 = next(m for m in batch.tx_markers if m.status == "END" and m.tx_id.startswith("1260:"))
    assert ranked.column("_seq")[snapshot_rows].as_py()[0] == commit_lsn(end_1260.tx_id) > snapshot_lsn
    seqs = [tuple(s) for s in ranked.column("_seq").to_pylist()]
    assert seqs == sorted(seqs)
    # Ranked by commit, every transaction's events lie between the commits of the one before and itself.
    commits = sorted(buffer.commit_lsn_of(t) for t in tx_ids(ready) if buffer.commit_lsn_of(t))
    for seq, tx in zip(ranked.column("_seq").to_pylist(), ranked.column("_tx_id").to_pylist()):
        if tx:
            assert seq[0] == buffer.commit_lsn_of(tx) and seq[1] <= seq[0]
    assert buffer.last_commit_lsn == commits[-1]


def _begin_only(records: list[dict], before_tx: str, ddl_id: str) -> list[dict]:
    """The records with a BEGIN that no END follows (Debezium's MariaDB connector: a DDL statement's
    transaction) inserted just before ``before_tx``'s BEGIN."""
    at = next(i for i, r in enumerate(records) if r["topic"] == "dbz.transaction" and
              r["value"]["payload"]["status"] == "BEGIN" and tx_link(r["value"]["payload"]["id"]) == before_tx)
    begin = records[at]
    ddl = {**begin, "key": {**begin["key"], "payload": {"id": ddl_id}},
           "value": {**begin["value"], "payload": {**begin["value"]["payload"], "id": ddl_id}}}
    return records[:at] + [ddl] + records[at:]


def test_a_begin_without_end_is_ended_by_the_next_begin_and_blocks_nothing() -> None:
    records = _begin_only(golden_records(), "1261", "0-1-7")
    buffer = TransactionBuffer()
    _, batch = decode(records)
    buffer.add_markers(batch.tx_markers)
    ready = buffer.split(batch.segments, at_end_of_data=False)
    # every transaction after the one that never ends is released in order, none waits for it
    assert {"1260", "1261", "1262", "1263", "1264"} | LATER <= tx_ids(ready)
    assert buffer.held_events == 0 and buffer.open_transactions == 0
    assert buffer.marker_restart_offsets() == {}


def test_a_begin_without_end_still_blocks_until_the_next_begin() -> None:
    # the BEGIN-only transaction is the last thing read: a later END may still come for it
    records = _begin_only(golden_records(), "1261", "0-1-7")
    records = records[:next(i for i, r in enumerate(records) if r["topic"] == "dbz.transaction"
                            and r["value"]["payload"]["id"] == "0-1-7") + 1]
    buffer = TransactionBuffer()
    _, batch = decode(records)
    buffer.add_markers(batch.tx_markers)
    buffer.split(batch.segments, at_end_of_data=True)
    assert buffer.open_transactions == 1
