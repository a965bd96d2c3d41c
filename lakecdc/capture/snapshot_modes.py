"""``snapshot.mode``: whether a start snapshots, streams, or both.

| mode         | no stored offset     | offset, snapshot unfinished | offset, snapshot done                   |
|--------------|----------------------|-----------------------------|-----------------------------------------|
| initial      | snapshot, stream     | snapshot again, stream      | stream                                  |
| always       | snapshot, stream     | snapshot, stream            | snapshot, stream                        |
| never        | stream (slot start)  | stream                      | stream                                  |
| initial_only | snapshot, stop       | snapshot again, stop        | stop                                    |
| exported     | as initial (deprecated alias: every mode is lockless)                                        |
| when_needed  | snapshot, stream     | snapshot, stream            | stream, or snapshot if it cannot resume |
| no_data      | stream (schema only) | stream                      | stream                                  |

``schema_only`` and ``schema_only_recovery`` are older Debezium names of ``no_data`` and
``recovery``; ``no_data`` is accepted under both (PostgreSQL has no schema history to recover).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from lakecdc.errors import ConfigError

log = logging.getLogger(__name__)

SnapshotMode = Literal[
    "initial", "always", "never", "initial_only", "exported", "when_needed", "no_data"
]
SNAPSHOT_MODES: tuple[str, ...] = (
    "initial", "always", "never", "initial_only", "exported", "when_needed", "no_data",
)
_ALIASES = {"schema_only": "no_data", "schema_only_recovery": "no_data"}


@dataclass(frozen=True)
class StartPlan:
    snapshot: bool
    stream: bool
    reason: str


def normalize_mode(mode: str) -> str:
    value = mode.strip().lower()
    if value in _ALIASES:
        log.warning("snapshot.mode=%s is deprecated; using %s", value, _ALIASES[value])
        return _ALIASES[value]
    if value == "exported":
        log.warning("snapshot.mode=exported is deprecated (every mode is lockless); using initial")
        return "initial"
    if value not in SNAPSHOT_MODES:
        raise ConfigError(
            f"snapshot.mode '{mode}' is not supported; choose one of {', '.join(SNAPSHOT_MODES)}",
            "snapshot.mode",
        )
    return value


def plan_start(
    mode: str, has_offset: bool, snapshot_completed: bool, position_resumable: bool = True
) -> StartPlan:
    """Decide what this start does, from the mode and what the offset store holds."""
    mode = normalize_mode(mode)
    if mode == "always":
        return StartPlan(True, True, "snapshot.mode=always snapshots at every start")
    if mode == "never":
        return StartPlan(False, True, "snapshot.mode=never: streaming only")
    if mode == "no_data":
        return StartPlan(False, True, "snapshot.mode=no_data: streaming only, no data snapshot")
    if mode == "initial_only":
        if has_offset and snapshot_completed:
            return StartPlan(False, False, "initial_only: snapshot already completed, nothing to do")
        return StartPlan(True, False, "initial_only: snapshot, then stop")
    if mode == "when_needed":
        if not has_offset:
            return StartPlan(True, True, "when_needed: no stored offset")
        if not snapshot_completed:
            return StartPlan(True, True, "when_needed: the previous snapshot did not finish")
        if not position_resumable:
            return StartPlan(True, True, "when_needed: the stored position can no longer be streamed")
        return StartPlan(False, True, "when_needed: resuming from the stored offset")
    # initial
    if not has_offset:
        return StartPlan(True, True, "initial: no stored offset")
    if not snapshot_completed:
        return StartPlan(True, True, "initial: the previous snapshot did not finish; starting over")
    return StartPlan(False, True, "initial: resuming from the stored offset")
