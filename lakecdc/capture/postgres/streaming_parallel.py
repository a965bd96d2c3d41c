"""Streamed row changes decoded, converted and encoded by worker processes, sent in stream order.

One Python process that reads the replication stream also decodes every pgoutput tuple, converts
its values, builds the Debezium envelope and encodes it: all on one core, where Debezium's engine
spreads the same work over JVM threads. With ``lakecdc.streaming.workers`` = N > 1 (lakecdc's own
property; Debezium has no such knob) the capture process keeps everything that carries state --
reading the stream, transactions, source blocks, positions, transaction metadata, signals,
heartbeats, offsets -- and hands the row changes of captured tables that make one record from one
tuple (inserts; updates that carry no old tuple, as with the default replica identity when the key
is unchanged; deletes, with their tombstone) as the raw pgoutput message with the event's source
template to N forked worker processes in chunks of :data:`CHUNK` rows. A worker
decodes, converts and encodes each row's key and value payloads (``RecordSerializer.payload_bytes``:
the sink adds the schema part, as for the parallel snapshot's rows) and the capture process puts
them back in their place in the poll's records. A poll returns only when every row it read is
back, so the offsets the coordinator commits after a poll never pass a record still in a worker.

The workers are forked with the capture's table schemas (compiled converters do not pickle).
Before a Relation message (a table first seen, or changed) changes them, the rows handed over are
taken back and the workers stopped; the next row change forks workers that know the new schema. A
row a worker fails to decode, convert or encode comes back as a failure and is built again by the
capture process, so its error reaches the coordinator exactly as in the serial path. Updates with
an old tuple (a key change makes three records; replica identity full sends the old row),
truncates, messages, the signal table's rows and rows streamed while an incremental snapshot's
window is open stay in the capture process.

As for the parallel snapshot, pre-encoded payloads need a sink that encodes with
``RecordSerializer``: workers are used only where nothing between the source and the sink reads
record values (no ``transforms``, no metrics exporter: ``values_unread``).
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import time
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from lakecdc.capture.postgres.decoder import decode_tuple
from lakecdc.capture.postgres.snapshot_parallel import portable_errors
from lakecdc.capture.worker_process import default_signals
from lakecdc.events.envelope import ChangeRecord, envelope_payload
from lakecdc.events.positions import PostgresPosition
from lakecdc.transport.sink import EncodedPayload, RecordSerializer

log = logging.getLogger(__name__)

#: a queued row: index of its record in the poll's records, schema, position, tombstone after it, the row
_Slot = tuple[int, Any, PostgresPosition, bool, tuple[Any, ...]]

__all__ = ["CHUNK", "StreamWorkers", "row_record"]

#: rows handed to a worker at once: large enough that the hand-over is cheap per row, small
#: enough that the poll's last chunk, which the capture process waits for, is short
CHUNK = 512


def row_record(op: str, schema: Any, data: bytes, template: dict[str, Any], sequence_head: str, lsn: int,
               tx_block: dict[str, Any] | None, headers: list[tuple[str, bytes]],
               position: PostgresPosition | None) -> ChangeRecord:
    """The record of one pgoutput message (``data``) of one tuple, at offset 6 in each: an Insert
    (``c``), an Update without an old tuple (``u``, no ``before``) or a Delete (``d``, its old
    tuple the ``before``), as the serial path builds it; the source block is the transaction's
    ``template`` for the table with this event's LSN."""
    values = decode_tuple(data, 6)[0]
    source = template.copy()
    source["sequence"] = f'{sequence_head}{lsn}"]'
    source["lsn"] = lsn
    row = schema.row(values)
    value = envelope_payload(op, row if op == "d" else None, None if op == "d" else row, source, time.time_ns(),
                             tx_block)
    return ChangeRecord(schema.topic, schema.key_schema, schema.key(values), schema.envelope, value, headers,
                        position)


@portable_errors
def _encode_rows(schemas: Any, serializer: Any, rows: list[tuple[Any, ...]]) -> list[Any]:
    """Each row's (key payload, value payload), or None where building or encoding it failed."""
    by_id, payload_bytes = schemas.by_relation_id, serializer.payload_bytes
    answers: list[Any] = []
    for op, relation_id, data, template, head, lsn, tx_block in rows:
        try:
            record = row_record(op, by_id(relation_id), data, template, head, lsn, tx_block, [], None)
            value = payload_bytes(record, "value")
            assert value is not None
            answers.append((payload_bytes(record, "key"), value))
        except Exception:  # noqa: BLE001 - built again by the capture process, where its error is raised
            answers.append(None)
    return answers


def _serve(conn: Connection, inherited: list[Connection], schemas: Any) -> None:
    """A worker: chunks in, answers out, until the capture process closes its end."""
    default_signals()
    for end in inherited:  # the capture's ends, copied by the fork: its close must reach this worker
        end.close()
    serializer = RecordSerializer()  # payloads only: the sink adds the schema part with its own settings
    while True:
        try:
            rows = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        try:
            answer: Any = _encode_rows(schemas, serializer, rows)
        except Exception as exc:  # noqa: BLE001 - raised by the capture process (portable_errors: it unpickles)
            answer = exc
        try:
            conn.send_bytes(pickle.dumps(answer, pickle.HIGHEST_PROTOCOL))
        except OSError:  # the capture process closed its end (it stopped, or failed): nothing to answer
            return


class StreamWorkers:
    """``lakecdc.streaming.workers`` processes encoding the row changes of one streaming source.

    :meth:`defer` puts a placeholder in the poll's records and queues the row; :meth:`resolve`
    fills every placeholder in. Chunks go to the workers in turn, one chunk per worker at a time
    (a worker's previous answer is taken back before it gets the next), so memory stays bounded
    however long the poll, and neither side can block the other on a full pipe. Plain pipes, not a
    ``ProcessPoolExecutor``: its manager and feeder threads took the GIL from the capture
    process's loop for every chunk."""

    def __init__(self, threads: int, schemas: Any, headers: list[tuple[str, bytes]]) -> None:
        self.threads = threads
        self._schemas = schemas
        self._headers = headers
        self._workers: list[tuple[BaseProcess, Connection]] = []
        self._forks = 0
        self._busy: list[bool] = []
        self._turn = 0
        self._rows: list[tuple[Any, ...]] = []
        # per queued row: its index in the poll's records, schema, position, whether a tombstone
        # follows, and what rebuilds it
        self._slots: list[_Slot] = []
        self._in_flight: deque[tuple[int, list[_Slot]]] = deque()

    def defer(self, out: list[Any], op: str, relation_id: int, schema: Any, data: bytes, template: dict[str, Any],
              sequence_head: str, lsn: int, tx_block: dict[str, Any] | None, position: PostgresPosition,
              tombstone: bool) -> None:
        """Queue one row change (see :func:`row_record`) with a placeholder in ``out``, two for a
        delete followed by its tombstone."""
        row = (op, relation_id, data, template, sequence_head, lsn, tx_block)
        self._slots.append((len(out), schema, position, tombstone, row))
        out.append(None)
        if tombstone:
            out.append(None)
        self._rows.append(row)
        if len(self._rows) >= CHUNK:
            self._submit(out)

    def resolve(self, out: list[Any]) -> None:
        """Fill in every placeholder of ``out``."""
        if self._rows:
            self._submit(out)
        while self._in_flight:
            self._take_back(out)

    def before_relation(self, out: list[Any]) -> None:
        """Call before a Relation message changes the schemas: the rows queued so far (read under
        the schemas held now, which workers forked now still have) are taken back and the workers
        stopped; the next row forks workers that know the new schema."""
        self.resolve(out)
        self.close()

    def close(self) -> None:
        self._rows, self._slots = [], []
        self._in_flight.clear()
        for _, conn in self._workers:
            conn.close()  # the worker reads the end of its input and exits
        for process, _ in self._workers:
            process.join(5)
            if process.is_alive():
                process.terminate()
                process.join()
        self._workers, self._busy = [], []

    def _start(self) -> None:
        started = time.monotonic()
        context = multiprocessing.get_context("fork")  # the workers inherit the schemas' compiled converters
        ends: list[Connection] = []
        for _ in range(self.threads):
            mine, theirs = context.Pipe()
            # the child closes its copies of the capture's ends (its own pipe's too), or no worker
            # would ever read the end of its input
            process = context.Process(target=_serve, args=(theirs, [*ends, mine], self._schemas),
                                      name="lakecdc-streaming-worker", daemon=True)
            process.start()
            theirs.close()
            ends.append(mine)
            self._workers.append((process, mine))
        self._busy = [False] * self.threads
        self._turn = 0
        self._forks += 1
        # said once; again (debug) after each Relation message, which re-forks them
        log.log(logging.INFO if self._forks == 1 else logging.DEBUG,
                "started %d streaming worker processes (lakecdc.streaming.workers) in %.3f s", self.threads,
                time.monotonic() - started)

    def _submit(self, out: list[Any]) -> None:
        if not self._workers:
            self._start()
        worker = self._turn
        self._turn = (worker + 1) % self.threads
        while self._busy[worker]:  # in turn: its chunk is the oldest in flight
            self._take_back(out)
        self._workers[worker][1].send_bytes(pickle.dumps(self._rows, pickle.HIGHEST_PROTOCOL))
        self._busy[worker] = True
        self._in_flight.append((worker, self._slots))
        self._rows, self._slots = [], []

    def _take_back(self, out: list[Any]) -> None:
        worker, slots = self._in_flight.popleft()
        process, conn = self._workers[worker]
        try:
            answers = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            process.join(1)
            raise RuntimeError(f"a streaming worker process (lakecdc.streaming.workers) ended unexpectedly "
                               f"(exit code {process.exitcode}): the capture stops; started again, it resumes "
                               "from its last stored offset") from None
        self._busy[worker] = False
        if isinstance(answers, BaseException):
            raise answers
        headers = self._headers
        for (index, schema, position, tombstone, row), answer in zip(slots, answers, strict=True):
            if answer is None:
                op, _, data, template, head, lsn, tx_block = row
                record = out[index] = row_record(op, schema, data, template, head, lsn, tx_block, headers, position)
                key: Any = record.key
            else:
                key = None if answer[0] is None else EncodedPayload(answer[0])
                out[index] = ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope,
                                          EncodedPayload(answer[1]), headers, position)
            if tombstone:
                out[index + 1] = ChangeRecord(schema.topic, schema.key_schema, key, None, None, headers, position)
