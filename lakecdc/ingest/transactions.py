"""Transaction-consistent apply: events of a source transaction are released only all together.

Debezium's transaction topic frames every source transaction (``provide.transaction.metadata``)::

    {"status":"BEGIN","id":"1264:99091160","event_count":null,"data_collections":null,"ts_ms":...}
    {"status":"END","id":"1264:99092032","event_count":5,
     "data_collections":[{"data_collection":"public.customers","event_count":3},
                         {"data_collection":"public.audit_full","event_count":1}, ...]}

and each data event carries ``transaction.id``. Data and markers live on different topics, so a
micro-batch may hold part of a transaction. ``TransactionBuffer.split`` returns the events that
may be applied now and holds back the rest, so no silver commit ever shows half a transaction:

1. count the new events per transaction and data collection;
2. a transaction is complete when its END is seen and every collection's count is reached;
3. events without a transaction block (snapshot reads, connectors without metadata) pass;
4. transactions are released in commit order (the order of their END markers on the transaction
   topic): a complete transaction waits for every earlier one, so a table never shows a later
   transaction without an earlier one that touched it (a state the source never had); an END
   read after a BEGIN whose END is missing waits for it too;
5. after a restart, a collection whose table already holds the transaction (the table's last
   commit records ``tx_through``, the END offsets it has taken in, at or past this END) counts
   as complete: its events are not read again (they lie below the table's committed offsets),
   and the transaction is completed from the other tables' events instead of held;
6. when every partition has been read to its end, a transaction whose END was seen passes even
   if counts are short (its other events belong to tables this job does not read), and so does
   one whose BEGIN was never seen (its markers precede where reading started); only a
   transaction with a BEGIN and no END yet stays held;
7. a BEGIN ends every transaction begun before it on the same partition whose END has not come:
   sources commit one transaction after another, so that one will never end. Debezium's MariaDB
   connector begins a transaction at every GTID event and ends none after a DDL statement or a
   TRUNCATE (``MariaDbStreamingChangeEventSource``); such a transaction is complete with the events
   seen, in its BEGIN's place in commit order, and no longer blocks the ENDs after it;
8. of what is released, a primary-key change's create holding placeholders waits (with what must
   not overtake it) until its old key's partition has been read to the change
   (``lakecdc.ingest.key_move_holds``); held with the rest, it keeps progress below it the same way.

PostgreSQL's ids are ``"<txId>:<lsn>"`` and the LSN part differs between BEGIN, events and END;
only the txId links them (``tx_link``). The END's LSN is the transaction's commit LSN (Debezium
``PostgresOffsetContext``: the LSN of the COMMIT message; the next transaction's
``source.sequence[0]``), which ``commit_lsn`` hands to ``lakecdc.ingest.ordering`` to rank the
transaction's events by their own commit.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.events.transaction import PG_TX_ID as _PG_TX_ID
from lakecdc.events.transaction import tx_link
from lakecdc.ingest.decode import TxMarker
from lakecdc.ingest.key_move_holds import KeyMoveHolds, TopicPartition
from lakecdc.ingest.ordering import min_seq
from lakecdc.lake.segments import DecodedSegment

_REMEMBERED_COMPLETED = 100_000


def commit_lsn(tx_id: str) -> int | None:
    """The LSN part of a PostgreSQL END id (its commit LSN); None for other connectors' ids.

    >>> commit_lsn("1264:99092032"), commit_lsn("0-1-100"), commit_lsn("mysql-bin.000003:154")
    (99092032, None, None)
    """
    match = _PG_TX_ID.match(tx_id)
    return int(match.group(2)) if match else None


Where = tuple[str, int, int]  # (topic, partition, offset) of a marker
#: ``(data collection, END marker) -> True`` when that collection's table already holds the transaction
AlreadyApplied = Callable[[str, Where], bool]


@dataclass
class _Transaction:
    begin_at: Where | None = None  # (topic, partition, offset) of BEGIN
    end_at: Where | None = None
    end_id: str | None = None
    expected_total: int | None = None
    expected: dict[str, int] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)
    #: ended without an END: a later BEGIN came on the same partition (step 7)
    superseded: bool = False

    def complete(self, applied: AlreadyApplied) -> bool:
        if self.end_at is None:
            return False
        if self.superseded:
            return True
        end_at = self.end_at
        if self.expected:
            return all(self.seen[c] >= n or applied(c, end_at) for c, n in self.expected.items())
        return self.expected_total is not None and sum(self.seen.values()) >= self.expected_total


class TransactionBuffer:
    """Holds back events of transactions not yet complete (see the module docstring)."""

    def __init__(self, already_applied: AlreadyApplied | None = None) -> None:
        self._open: dict[str, _Transaction] = {}
        #: released transactions -> their commit LSN (PostgreSQL) or None
        self._completed: OrderedDict[str, int | None] = OrderedDict()
        self._held: list[DecodedSegment] = []
        self._applied: AlreadyApplied = already_applied or (lambda collection, end: False)
        #: per transaction-topic partition, the END offset through which every transaction is released
        self._released_through: dict[tuple[str, int], int] = {}
        self._last_commit_lsn: int | None = None
        self._key_moves = KeyMoveHolds()

    # ------------------------------------------------------------------ input

    def add_markers(self, markers: Iterable[TxMarker]) -> None:
        for m in markers:
            key = tx_link(m.tx_id)
            if key in self._completed:
                continue  # a replayed marker of a transaction already applied
            tx = self._open.setdefault(key, _Transaction())
            where = (m.topic, m.partition, m.offset)
            if m.status == "BEGIN":
                tx.begin_at = where
                self._supersede_before(key, where)
            else:
                tx.end_at = where
                tx.end_id = m.tx_id
                tx.expected_total = m.event_count
                tx.expected = dict(m.collections)

    def _supersede_before(self, key: str, begin: Where) -> None:
        """Close every transaction BEGun earlier on this partition without an END (step 7)."""
        for other_key, tx in self._open.items():
            at = tx.begin_at
            if (other_key != key and tx.end_at is None and at is not None and at[:2] == begin[:2]
                    and at[2] < begin[2]):
                tx.end_at, tx.superseded = at, True

    def split(self, segments: list[DecodedSegment], at_end_of_data: bool,
              lagging: Collection[TopicPartition] | None = None) -> list[DecodedSegment]:
        """Events that may be applied now (new and previously held); the rest stay held.

        ``lagging``: the data partitions not read to their end (None: not known; step 8)."""
        self._key_moves.observe(segments)
        for segment in segments:
            collection = segment.source.data_collection
            for key, n in _key_counts(segment).items():
                if key is not None and key not in self._completed:
                    self._open.setdefault(key, _Transaction()).seen[collection] += n
        candidates = self._held + segments
        releasable = self._releasable(at_end_of_data)
        ready: list[DecodedSegment] = []
        held: list[DecodedSegment] = []
        for segment in candidates:
            keys = self._keys(segment)
            mask = [k is None or k in releasable or k in self._completed for k in keys]
            if all(mask):
                ready.append(segment)
                continue
            if any(mask):
                flags = pa.array(mask, pa.bool_())
                ready.append(_with_rows(segment, segment.rows.filter(flags)))
                held.append(_with_rows(segment, segment.rows.filter(pc.invert(flags))))
            else:
                held.append(segment)
        ready, waiting = self._key_moves.split(ready, lagging, at_end_of_data)
        self._held = held + waiting
        for key in releasable:
            tx = self._open.pop(key)
            lsn = commit_lsn(tx.end_id) if tx.end_id else None
            self._completed[key] = lsn
            if lsn is not None:
                self._last_commit_lsn = max(lsn, self._last_commit_lsn or lsn)
            if tx.end_at is not None:
                tp = (tx.end_at[0], tx.end_at[1])
                self._released_through[tp] = max(tx.end_at[2], self._released_through.get(tp, -1))
        while len(self._completed) > _REMEMBERED_COMPLETED:
            self._completed.popitem(last=False)
        return ready

    def _releasable(self, at_end_of_data: bool) -> set[str]:
        """Complete transactions in END order, up to the first one still waiting (step 4)."""
        ended = sorted((tx.end_at, key) for key, tx in self._open.items() if tx.end_at is not None)
        # A transaction whose BEGIN came and whose END has not: every END after its BEGIN waits too
        # (markers come in commit order, so such an END can only be one read before a missing one).
        open_from = min((tx.begin_at for tx in self._open.values() if tx.end_at is None and tx.begin_at), default=None)
        out: set[str] = set()
        for end_at, key in ended:
            blocked = open_from is not None and end_at[:2] == open_from[:2] and end_at[2] > open_from[2]
            if not at_end_of_data and (blocked or not self._open[key].complete(self._applied)):
                break
            out.add(key)
        if at_end_of_data:
            out.update(key for key, tx in self._open.items() if tx.end_at is None and tx.begin_at is None)
        return out

    def commit_lsn_of(self, tx_id: str) -> int | None:
        """A released PostgreSQL transaction's commit LSN (from its END id), else None."""
        return self._completed.get(tx_link(tx_id))

    @property
    def last_commit_lsn(self) -> int | None:
        """The newest commit LSN released (PostgreSQL), or None."""
        return self._last_commit_lsn

    def released_through(self) -> dict[tuple[str, int], int]:
        """Per transaction-topic partition: every transaction whose END is at or below it is released."""
        return dict(self._released_through)

    # ------------------------------------------------------------------ state for progress

    @property
    def held_segments(self) -> list[DecodedSegment]:
        return list(self._held)

    @property
    def held_events(self) -> int:
        return sum(s.num_rows for s in self._held)

    @property
    def open_transactions(self) -> int:
        return sum(1 for tx in self._open.values() if tx.begin_at is not None or tx.end_at is not None)

    def held_min_offsets(self) -> dict[tuple[str, int], int]:
        """Lowest held offset per data topic-partition: progress there must stay below it."""
        lowest: dict[tuple[str, int], int] = {}
        for segment in self._held:
            parts = segment.rows.column("_partition").to_pylist()
            offs = segment.rows.column("_offset").to_pylist()
            for p, o in zip(parts, offs):
                key = (segment.topic, p)
                if o < lowest.get(key, o + 1):
                    lowest[key] = o
        return lowest

    def held_min_seq(self) -> tuple[int, ...] | None:
        """The earliest source position held back: every transaction before it is fully applied."""
        seqs = [min_seq(s.rows) for s in self._held if s.num_rows]
        return min((s for s in seqs if s is not None), default=None)

    def marker_restart_offsets(self) -> dict[tuple[str, int], int]:
        """Lowest marker offset of a still-open transaction per transaction-topic partition."""
        lowest: dict[tuple[str, int], int] = {}
        for tx in self._open.values():
            for where in (tx.begin_at, tx.end_at):
                if where is not None:
                    key = (where[0], where[1])
                    lowest[key] = min(lowest.get(key, where[2]), where[2])
        return lowest

    @staticmethod
    def _keys(segment: DecodedSegment) -> list[str | None]:
        return [None if t is None else tx_link(t) for t in segment.rows.column("_tx_id").to_pylist()]


def _key_counts(segment: DecodedSegment) -> Counter[str | None]:
    """Events per transaction link; a segment summarised by groups (``executor_batch.RemoteSegment``:
    one row per transaction and partition) weighs each group by its ``_count``."""
    keys = TransactionBuffer._keys(segment)
    if "_count" not in segment.rows.column_names:
        return Counter(keys)
    counts: Counter[str | None] = Counter()
    for key, n in zip(keys, segment.rows.column("_count").to_pylist()):
        counts[key] += n
    return counts


def _with_rows(segment: DecodedSegment, rows: pa.Table) -> DecodedSegment:
    return replace(segment, rows=rows)  # keeps the segment's kind (a summary keeps where its rows are)
