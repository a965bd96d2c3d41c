"""As of a PostgreSQL LSN without transaction metadata (issue 19), two tables read together.

Debezium's default (``provide.transaction.metadata=false``) gives no END marker and no ``_tx_id``;
each event carries ``source.sequence[0]``, the commit LSN of the transaction received before its
own (null for the first one after a start without an offset, which the ingest ranks at its own LSN,
raised above the snapshot's). The histories here are written as the ingest would -- bronze and
silver Delta tables (delta-rs, no Spark) with lakecdc's commit properties, one commit per table and
micro-batch cut anywhere in commit order, and a consistency log -- and read back with
``read_consistent``: at every commit LSN and around it, the rows must be the state after exactly
the transactions committed at or before it, or the read must say the logs cannot tell.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lakecdc.audit.as_of import read_as_of
from lakecdc.audit.consistency import read_consistent
from lakecdc.audit.tables import AuditError, LakeTable
from lakecdc.audit.versions import table_versions
from lakecdc.events.position_text import lsn_to_text
from lakecdc.lake.progress import CommitProgress

TABLES = ("silver.accounts", "silver.ledger")
BRONZE = {name: name.replace("silver", "bronze") for name in TABLES}
SEQ = pa.list_(pa.int64())


@dataclass
class Tx:
    """One source transaction: its commit LSN and its changes (table, op, key, LSN) in LSN order."""

    commit: int
    changes: list[tuple[str, str, int, int]] = field(default_factory=list)
    sequence0: int | None = None  # Debezium's source.sequence[0]: the last commit received before it


@dataclass
class History:
    snapshot_lsn: int | None  # the slot's consistent point, when an initial snapshot was taken
    snapshot: dict[str, list[int]]  # the keys each table's snapshot read
    transactions: list[Tx]  # in commit order, also those touching neither table (no changes)

    def rows(self) -> list[tuple[str, str, int, str, tuple[int, int, int, int]]]:
        """The events in the order the topics hold them: (table, op, key, name, _seq) as ranked by the
        ingest (``lakecdc.ingest.ordering``): snapshot rows at their LSN, phase 0; the first
        transaction's at their own LSN raised to snapshot LSN + 1, phase 2; the rest at sequence[0]."""
        out = [(table, "r", key, f"r{key}", (self.snapshot_lsn, self.snapshot_lsn, 0, 0))
               for table, keys in self.snapshot.items() for key in keys if self.snapshot_lsn is not None]
        for tx in self.transactions:
            for table, op, key, lsn in tx.changes:
                if tx.sequence0 is None:
                    first = max(lsn, self.snapshot_lsn + 1) if self.snapshot_lsn is not None else lsn
                    seq = (first, lsn, 2, 0)
                else:
                    seq = (tx.sequence0, lsn, 1, 0)
                out.append((table, op, key, f"{op}{lsn}", seq))
        return out

    def state_at(self, at: int) -> dict[str, dict[int, str]]:
        """Every table after exactly the transactions committed at or before LSN ``at``."""
        state: dict[str, dict[int, str]] = {t: {} for t in TABLES}
        if self.snapshot_lsn is not None and self.snapshot_lsn <= at:
            for table, keys in self.snapshot.items():
                state[table].update({key: f"r{key}" for key in keys})
        for tx in self.transactions:
            if tx.commit <= at:
                for table, op, key, lsn in tx.changes:
                    if op == "d":
                        state[table].pop(key, None)
                    else:
                        state[table][key] = f"{op}{lsn}"
        return state

    def changes_at(self, at: int) -> list[str]:
        """The names of the events of the transactions committed at or before ``at`` (and the snapshot's)."""
        out = [f"r{key}" for keys in self.snapshot.values() for key in keys
               if self.snapshot_lsn is not None and self.snapshot_lsn <= at]
        return out + [f"{op}{lsn}" for tx in self.transactions if tx.commit <= at for _, op, _, lsn in tx.changes]

    def unknown_at(self, at: int) -> bool:
        """Whether the change logs cannot tell the state at ``at``: a transaction of these tables
        whose rows are at or below it, every LSN they show is below it, and no later transaction of
        these tables carries a sequence[0] at or below it (its commit may be either side)."""
        ours = [tx for tx in self.transactions if tx.changes]
        ranked = {id(tx): [seq for _, _, _, _, seq in History(self.snapshot_lsn, {}, [tx]).rows()] for tx in ours}
        for i, tx in enumerate(ours):
            lowest = min(seq[0] for seq in ranked[id(tx)])
            highest = max(max(seq[0], seq[1]) for seq in ranked[id(tx)])
            following = ours[i + 1].sequence0 if i + 1 < len(ours) else None
            if lowest <= at and highest < at and (following is None or following > at):
                return True
        return False


@st.composite
def histories(draw: st.DrawFn) -> History:
    """Transactions in commit order (increasing commit LSNs) whose changes may lie below the commit of
    the one before (PostgreSQL interleaves them; the slot sends each whole, at its commit), some
    touching neither table (other tables of the publication: they move sequence[0] on unseen)."""
    lsn = 1000
    snapshot_lsn = None
    snapshot: dict[str, list[int]] = {t: [] for t in TABLES}
    state: dict[str, set[int]] = {t: set() for t in TABLES}
    if draw(st.booleans()):
        snapshot_lsn = lsn = lsn + draw(st.integers(20, 40))
        for table in TABLES:
            snapshot[table] = draw(st.lists(st.integers(1, 4), unique=True, max_size=3))
            state[table] = set(snapshot[table])
    used: set[int] = set()
    transactions: list[Tx] = []
    last_commit: int | None = None  # a start without an offset: the first sequence[0] is null
    for _ in range(draw(st.integers(1, 7))):
        commit = lsn + draw(st.integers(6, 30))
        tx = Tx(commit, sequence0=last_commit)
        if draw(st.integers(0, 3)) > 0:  # one of ours
            low = max(900, lsn - draw(st.integers(0, 15)))
            free = [v for v in range(low, commit) if v not in used]
            for change_lsn in sorted(draw(st.lists(st.sampled_from(free), min_size=1, max_size=4, unique=True))):
                table, key = draw(st.sampled_from(TABLES)), draw(st.integers(1, 4))
                op = draw(st.sampled_from("ud")) if key in state[table] else "c"
                (state[table].discard if op == "d" else state[table].add)(key)
                tx.changes.append((table, op, key, change_lsn))
                used.add(change_lsn)
        used.add(commit)
        transactions.append(tx)
        lsn = last_commit = commit
    return History(snapshot_lsn, snapshot, transactions)


def _properties(batch_id: int, seqs: list[tuple[int, ...]], held: tuple[int, ...], point: tuple[int, ...],
                table: str, offset: int) -> dict[str, str]:
    """What a lakecdc commit records (``lakecdc.lake.progress``): ``complete-through`` is the job's point."""
    return CommitProgress({(table, 0): offset}, batch_id, held, 1_700_000_000_000, None, point, min(seqs),
                          connector="postgres").to_properties()


def write_lake(root: Path, history: History, cuts: set[int]) -> dict[str, LakeTable]:
    """The tables and consistency log the job writes for ``history`` in micro-batches ending at ``cuts``
    (indices into the topics' common order). Without END markers the job holds nothing back: a batch
    may end inside a transaction, and its point is the highest ``_seq`` released."""
    rows = history.rows()
    silver: dict[str, dict[int, dict[str, object]]] = {t: {} for t in TABLES}
    offsets = {t: -1 for t in TABLES}
    held: dict[str, tuple[int, ...]] = {}
    versions: dict[str, int] = {}
    point: tuple[int, ...] | None = None
    for table in TABLES:  # the delete ledger names the key columns (``key_columns``)
        write_deltalake(str(root / "silver" / f"{table.split('.')[1]}__deletes"),
                        pa.table({"id": pa.array([], pa.int64()), "_seq": pa.array([], SEQ),
                                  "_op": pa.array([], pa.string())}))
    start = 0
    for batch_id, end in enumerate(sorted(cuts | {len(rows)}), start=1):
        batch = rows[start:end]
        start = end
        if not batch:
            continue
        point = max([*(seq for *_, seq in batch), *([point] if point else [])])
        for table in TABLES:
            mine = [r for r in batch if r[0] == table]
            if not mine:
                continue
            bronze = {"id": [], "name": [], "_op": [], "_seq": [], "_source_ts_ms": [], "_tx_id": [],
                      "_kafka_partition": [], "_offset": []}
            for _, op, key, name, seq in mine:
                offsets[table] += 1
                for column, value in zip(bronze, (key, name, op, list(seq), 0, None, 0, offsets[table])):
                    bronze[column].append(value)
                if op == "d":
                    silver[table].pop(key, None)
                else:
                    silver[table][key] = {"id": key, "name": name, "_seq": list(seq), "_op": op}
            seqs = [seq for *_, seq in mine]
            held[table] = max([*seqs, *([held[table]] if table in held else [])])
            props = CommitProperties(custom_metadata=_properties(batch_id, seqs, held[table], point, table,
                                                                 offsets[table]))
            write_deltalake(str(root / "bronze" / table.split(".")[1]), pa.table({
                "id": pa.array(bronze["id"], pa.int64()), "name": pa.array(bronze["name"], pa.string()),
                "_op": pa.array(bronze["_op"], pa.string()), "_seq": pa.array(bronze["_seq"], SEQ),
                "_source_ts_ms": pa.array(bronze["_source_ts_ms"], pa.int64()),
                "_tx_id": pa.array(bronze["_tx_id"], pa.string()),
                "_kafka_partition": pa.array(bronze["_kafka_partition"], pa.int32()),
                "_offset": pa.array(bronze["_offset"], pa.int64())}), mode="append", commit_properties=props)
            stored = list(silver[table].values())
            write_deltalake(str(root / "silver" / table.split(".")[1]), pa.table({
                "id": pa.array([r["id"] for r in stored], pa.int64()),
                "name": pa.array([r["name"] for r in stored], pa.string()),
                "_seq": pa.array([r["_seq"] for r in stored], SEQ),
                "_op": pa.array([r["_op"] for r in stored], pa.string()),
                "_tx_id": pa.array([None] * len(stored), pa.string())}), mode="overwrite", commit_properties=props)
            versions[table] = versions.get(table, -1) + 1
        if len(versions) == len(TABLES):  # published once every table exists
            write_deltalake(str(root / "lakecdc" / "consistency"), pa.table({
                "batch_id": pa.array([batch_id], pa.int64()), "job": ["test"], "connector": ["postgres"],
                "complete_through": pa.array([list(point)], SEQ), "position": [lsn_to_text(point[0])],
                "published_at": pa.array([datetime.now(timezone.utc)], pa.timestamp("us", "UTC")),
                "versions": [json.dumps(versions)], "stopped": ["[]"]}), mode="append")
    lake = {name: LakeTable.delta(root, name) for name in (*TABLES, *BRONZE.values())}
    lake["log"] = LakeTable.delta(root, "lakecdc.consistency")
    return lake


def read_at(lake: dict[str, LakeTable], position: object) -> dict[str, dict[int, str]]:
    reads = read_consistent([lake[t] for t in TABLES], position, lake["log"], {t: lake[BRONZE[t]] for t in TABLES})
    return {name: {int(r["id"]): r["name"] for r in read.rows.to_dict("records")} for name, read in reads.items()}


def positions_of(history: History, reached: int) -> list[int]:
    """Each commit LSN, each sequence[0] and change LSN, the snapshot's LSN, and one either side of each,
    up to the first past ``reached`` (past it, every table has not reached the position yet)."""
    marks = {tx.commit for tx in history.transactions}
    marks |= {lsn for tx in history.transactions for *_, lsn in tx.changes}
    marks |= {seq[0] for *_, seq in history.rows()}
    return sorted({m + d for m in marks for d in (-1, 0, 1) if m + d <= reached} | {reached + 1})


def only(history: History, table: str) -> History:
    """``history`` as one table's change log shows it: the other table's changes are unseen."""
    return History(history.snapshot_lsn, {table: history.snapshot[table]},
                   [Tx(tx.commit, [c for c in tx.changes if c[0] == table], tx.sequence0)
                    for tx in history.transactions])


SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


@SETTINGS
@given(histories(), st.sets(st.integers(1, 30), max_size=6))
def test_as_of_every_position_is_the_state_after_the_transactions_committed_at_it(history: History,
                                                                                cuts: set[int]) -> None:
    rows = history.rows()
    assume({r[0] for r in rows} >= set(TABLES))  # a table that never had a row has no version to read
    with tempfile.TemporaryDirectory() as root:
        lake = write_lake(Path(root), history, {c for c in cuts if c < len(rows)})
        reached = max(seq for *_, seq in rows)[0]  # the newest point's LSN: the newest _seq released
        # newest point: the state at the LSN it names -- never the versions' newest transaction, whose
        # commit is above it
        assert read_at(lake, None) == history.state_at(reached), "the newest point"
        for at in positions_of(history, reached):
            try:
                got = read_at(lake, lsn_to_text(at))
            except AuditError as error:
                assert at > reached or history.unknown_at(at), (lsn_to_text(at), str(error))
                continue
            assert at <= reached, f"{lsn_to_text(at)} is past the newest point {lsn_to_text(reached)}"
            assert got == history.state_at(at), lsn_to_text(at)


@settings(SETTINGS, max_examples=25)
@given(histories(), st.sets(st.integers(1, 30), max_size=6))
def test_one_table_read_alone_tells_from_its_own_change_log(history: History, cuts: set[int]) -> None:
    """A silver table read alone, and a bronze table at a position: the same rule over one change log."""
    rows = history.rows()
    assume({r[0] for r in rows} >= set(TABLES))
    with tempfile.TemporaryDirectory() as root:
        lake = write_lake(Path(root), history, {c for c in cuts if c < len(rows)})
        for table in TABLES:
            alone = only(history, table)
            reached = table_versions(lake[table])[-1].reached
            assert reached is not None
            for at in positions_of(history, reached[0]):
                try:
                    got = read_as_of(lake[table], source_position=lsn_to_text(at))
                    log = read_as_of(lake[BRONZE[table]], source_position=lsn_to_text(at))
                except AuditError as error:
                    assert at > reached[0] or alone.unknown_at(at), (table, lsn_to_text(at), str(error))
                    continue
                assert {int(r["id"]): r["name"] for r in got.to_dict("records")} == alone.state_at(at)[table]
                assert sorted(log["name"]) == sorted(alone.changes_at(at)), (table, lsn_to_text(at))


# -- the cases by name -------------------------------------------------------------------------------

def _lake(tmp_path: Path, history: History, cuts: set[int] | None = None) -> dict[str, LakeTable]:
    return write_lake(tmp_path, history, cuts or set())


def test_as_of_a_commit_lsn_shows_not_the_next_transaction(tmp_path: Path) -> None:
    """The bug: the transfer committed next carries the commit LSN P of the one before as its
    sequence[0]; read at P it showed, in one table or both."""
    history = History(None, {}, [
        Tx(1010, [("silver.accounts", "c", 1, 1001), ("silver.ledger", "c", 1, 1002)]),
        Tx(1020, [("silver.accounts", "u", 1, 1012), ("silver.ledger", "u", 1, 1014)], sequence0=1010),
        Tx(1030, [("silver.accounts", "u", 1, 1022)], sequence0=1020)])
    lake = _lake(tmp_path, history, {3})  # the second transaction's first change ends a batch
    assert read_at(lake, lsn_to_text(1010)) == history.state_at(1010) == {
        "silver.accounts": {1: "c1001"}, "silver.ledger": {1: "c1002"}}
    assert read_at(lake, lsn_to_text(1013)) == history.state_at(1013)  # inside the second: none of it
    assert read_at(lake, lsn_to_text(1020)) == history.state_at(1020)
    assert read_at(lake, None) == history.state_at(1020)  # the newest point names 1020, not the third


def test_a_commit_the_logs_do_not_place_is_refused_not_guessed(tmp_path: Path) -> None:
    """Another table's transaction commits between two of ours: the second's sequence[0] (1020) is not
    the first's commit (1010), so at 1015 the first may or may not be committed."""
    history = History(None, {}, [
        Tx(1010, [("silver.accounts", "c", 1, 1001), ("silver.ledger", "c", 2, 1002)], sequence0=1000),
        Tx(1020, [], sequence0=1010),
        Tx(1030, [("silver.accounts", "u", 1, 1022), ("silver.ledger", "u", 2, 1023)], sequence0=1020)])
    lake = _lake(tmp_path, history)
    assert read_at(lake, lsn_to_text(1002)) == history.state_at(1002)  # its last change: not committed
    with pytest.raises(AuditError, match=r"not known without transaction metadata \(it is after 0/3EA and at or "
                                         r"before 0/3FC\)"):
        read_at(lake, lsn_to_text(1010))
    assert read_at(lake, lsn_to_text(1020)) == history.state_at(1020)


def test_the_first_transaction_after_the_snapshot_is_committed_once_the_next_follows_it(tmp_path: Path) -> None:
    history = History(1050, {"silver.accounts": [1], "silver.ledger": [1]}, [
        Tx(1060, [("silver.accounts", "u", 1, 1040), ("silver.ledger", "u", 1, 1055)]),  # began before it
        Tx(1070, [("silver.ledger", "d", 1, 1065)], sequence0=1060)])
    lake = _lake(tmp_path, history, {2, 3})
    assert read_at(lake, lsn_to_text(1050)) == history.state_at(1050)  # the snapshot alone
    assert read_at(lake, lsn_to_text(1055)) == history.state_at(1055)
    assert read_at(lake, lsn_to_text(1060)) == history.state_at(1060)
    assert read_at(lake, None) == history.state_at(1060)


def test_the_versions_of_the_newest_point_are_flagged_as_holding_the_next_transaction(tmp_path: Path) -> None:
    """``lakecdc audit consistent`` names versions (and writes ``VERSION AS OF`` SQL) from the log alone:
    without metadata those versions hold the newest transaction, whose commit is above the point's LSN,
    so the command says so and refuses the SQL (``beyond_point``)."""
    from lakecdc.audit.consistency import beyond_point, consistency_points, not_exact_reason

    history = History(None, {}, [
        Tx(1010, [("silver.accounts", "c", 1, 1001), ("silver.ledger", "c", 1, 1002)]),
        Tx(1020, [("silver.accounts", "u", 1, 1012), ("silver.ledger", "u", 1, 1014)], sequence0=1010)])
    lake = _lake(tmp_path, history, {2})
    first, newest = consistency_points(lake["log"])  # batches 1 and 2
    tables = [lake[t] for t in TABLES]
    bronze: dict[str, LakeTable | None] = {t: lake[BRONZE[t]] for t in TABLES}
    assert newest.position == lsn_to_text(1010)
    assert beyond_point(newest, tables)  # bronze found by name
    assert beyond_point(newest, tables, bronze)  # versions hold the transaction ranked at 1010, committed at 1020
    assert "provide.transaction.metadata=true" in not_exact_reason(newest)
    assert beyond_point(first, tables, bronze)  # the first transaction, ranked at its changes, commits at 1010
    # MySQL/MariaDB, SQL Server and Oracle points hold only what they name (the job holds the rest)
    assert not beyond_point(replace(newest, connector="sqlserver"), tables, bronze)


def test_audit_consistent_says_so_and_writes_no_sql_for_such_a_point(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    history = History(None, {}, [
        Tx(1010, [("silver.accounts", "c", 1, 1001), ("silver.ledger", "c", 1, 1002)]),
        Tx(1020, [("silver.accounts", "u", 1, 1012), ("silver.ledger", "u", 1, 1014)], sequence0=1010)])
    _lake(tmp_path, history, {2})
    common = ["--format", "delta", "-w", str(tmp_path)]
    shown = CliRunner().invoke(app, ["audit", "consistent", *common], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "consistent through 0/3F2" in shown.output and "Not exact" in shown.output
    assert "provide.transaction.metadata=true" in shown.output
    sql = CliRunner().invoke(app, ["audit", "consistent", *common, "--sql"])
    assert sql.exit_code != 0 and "VERSION AS OF" not in sql.output
    assert "no SQL for this point" in sql.output, sql.output
