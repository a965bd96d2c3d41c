"""The job's own small state file: consistency point, control-topic offsets, batch counter.

Table data and their Kafka offsets are committed by the writers inside the table commits (the
source of truth for restart). This file, ``<progress dir>/state.json``, holds what belongs to no
table, rewritten atomically after every batch::

    {"batch_id": 12,
     "applied_through_seq": [99099792, 99099792, 1, 0],
     "applied_through_source_ts_ms": 1795336045083,
     "held_from_seq": null,
     "held_events": 0, "open_transactions": 0, "source_heartbeat_ts_ms": 1795336046000,
     "control_offsets": {"shop.transaction": {"0": 45}},
     "table_keys": {"shop.public.customers": ["id"], "shop.public.nopk_events": []},
     "keyed_topics": {"shop.public.customers": ["id"]},
     "updated_at": "2026-11-22T09:41:12.345678+00:00"}

``applied_through_seq`` is the consistency point (``lakecdc.ingest.processor`` step 7, also published
in the lake by ``lakecdc.ingest.consistency``): every source transaction ranked at or below it is in
every table, and none after it. ``held_from_seq`` is the lowest position still held back.
``control_offsets`` are where the transaction/heartbeat/schema-change topics resume: before the
first marker of a transaction still open, so a restart sees its BEGIN/END again. Losing the file
is safe: those topics are then read from the beginning.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
SCHEMA_CHANGES_FILE = "schema_changes.jsonl"


@dataclass
class JobState:
    batch_id: int = 0
    applied_through_seq: list[int] | None = None
    connector: str | None = None  # whose notation applied_through_seq is printed in
    applied_through_source_ts_ms: int | None = None
    held_from_seq: list[int] | None = None
    #: lowest snapshot row applied since every partition was last read to its end: the point stays below it
    snapshot_pending_seq: list[int] | None = None
    #: highest snapshot-row LSN seen (PostgreSQL): the first transaction ranks above it (ingest.ordering)
    snapshot_lsn: int | None = None
    held_events: int = 0
    open_transactions: int = 0
    source_heartbeat_ts_ms: int | None = None  # newest heartbeat: the source was alive then
    control_offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    table_keys: dict[str, list[str]] = field(default_factory=dict)
    #: topics whose events carried Kafka keys (``Decoder.keyed_topics``: not configured keys), so that
    #: after a restart a null key on such a topic is a dead letter from the first batch on
    keyed_topics: dict[str, list[str]] = field(default_factory=dict)
    updated_at: str | None = None

    def control_offset(self, topic: str, partition: int) -> int | None:
        value = self.control_offsets.get(topic, {}).get(str(partition))
        return None if value is None else int(value)

    def set_control_offset(self, topic: str, partition: int, offset: int) -> None:
        self.control_offsets.setdefault(topic, {})[str(partition)] = offset


def load_state(directory: Path) -> JobState:
    """The saved state, or a fresh one when there is none (first run, or the file was removed)."""
    path = directory / STATE_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return JobState()
    except (OSError, ValueError) as exc:
        raise OSError(f"ingest state file '{path}' cannot be read ({exc}); remove it to re-read the "
                      "transaction topic from the beginning") from exc
    known = JobState.__dataclass_fields__
    return JobState(**{k: v for k, v in data.items() if k in known})


def save_state(directory: Path, state: JobState) -> None:
    """Write ``state`` atomically (temp file + rename): a crash leaves the old or the new file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def append_schema_changes(directory: Path, entries: list[dict[str, Any]]) -> None:
    """Record schema-change topic records (DDL) as JSON lines beside the state file."""
    if not entries:
        return
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / SCHEMA_CHANGES_FILE, "a", encoding="utf-8") as out:
        for entry in entries:
            out.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
