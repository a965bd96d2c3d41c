"""Audits from an SCD2 history table (``history: scd2``, ``<silver>__history``).

- ``key_versions(history, key)``: every version of one key, oldest first, with the source positions
  and commit times it was valid between;
- ``history_as_of(history, source_position=|timestamp=)``: the table as of a source position (the
  versions with ``_valid_from_seq <= P < _valid_to_seq``, P the highest ``_seq`` committed at or
  before the position, as ``lakecdc.audit.as_of`` reads silver) or a source commit time
  (``_valid_from_ts <= t < _valid_to_ts``). One scan of the history answers any position: no table
  version nor bronze replay is needed, and the answer equals theirs (tested).

Example::

    history = history_of(LakeTable.delta("/lake", "silver.customers"))
    key_versions(history, {"id": 1001})
    history_as_of(history, source_position="0/16B3748", connector="postgres")
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from lakecdc.audit.history import _key_dict
from lakecdc.audit.tables import AuditError, LakeTable, to_pandas
from lakecdc.audit.versions import parse_position
from lakecdc.lake.layout import HISTORY_META_COLUMNS, HISTORY_SUFFIX, VALID_FROM_SEQ, VALID_TO_SEQ

if TYPE_CHECKING:
    import pandas as pd


def history_of(table: LakeTable) -> LakeTable:
    """The history table of a silver table (a history table is returned as is)."""
    history = table if table.name.endswith(HISTORY_SUFFIX) else table.sibling(table.name + HISTORY_SUFFIX)
    if not history.exists():
        raise AuditError(f"{history} does not exist: give the table history: scd2 in the ingest configuration "
                         f"(table.mapping.<topic>.history)")
    return history


def _rows(history: LakeTable) -> pd.DataFrame:
    df = to_pandas(history.arrow())
    for name in (VALID_FROM_SEQ, VALID_TO_SEQ, "_last_seq"):
        df[name] = df[name].map(lambda s: tuple(int(v) for v in s) if s is not None else None)
    return df


def key_versions(history: LakeTable, key: Any, key_columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every version of one key (``{"id": 1001}``, or a scalar with ``key_columns``), oldest first."""
    wanted = _key_dict(key, key_columns)
    df = _rows(history)
    missing = [k for k in wanted if k not in df.columns]
    if missing:
        raise AuditError(f"{history} has no column(s) {missing} to look the key up by")
    for column, value in wanted.items():
        df = df[df[column].isna()] if value is None else df[df[column] == value]
    return df.sort_values(VALID_FROM_SEQ, kind="stable").reset_index(drop=True)


def history_as_of(history: LakeTable, source_position: Any = None, timestamp: datetime | str | None = None,
                  connector: str | None = None) -> pd.DataFrame:
    """The rows valid at a source position or a source commit time (exactly one), row columns only
    (as silver holds them, without its bookkeeping), sorted by the first column."""
    if (source_position is None) == (timestamp is None):
        raise AuditError(f"{history}: give exactly one of source_position=, timestamp=")
    df = _rows(history)
    if source_position is not None:
        at = parse_position(source_position, connector)
        valid = [start <= at and (end is None or at < end) for start, end in zip(df[VALID_FROM_SEQ], df[VALID_TO_SEQ])]
    else:
        # exactly one of the two was given (checked above): timestamp is set here
        when = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
        assert when is not None
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        valid = [_utc(start) <= when and (end is None or _is_null(end) or when < _utc(end))
                 for start, end in zip(df["_valid_from_ts"], df["_valid_to_ts"])]
    rows = df[valid]
    columns = [c for c in rows.columns if c not in HISTORY_META_COLUMNS]
    return rows[columns].sort_values(columns[:1], kind="stable").reset_index(drop=True)


def _is_null(value: Any) -> bool:
    return value != value  # pandas' NaT


def _utc(value: Any) -> datetime:
    when = value.to_pydatetime() if hasattr(value, "to_pydatetime") else value
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
