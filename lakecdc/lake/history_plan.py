"""One MERGE plan for SCD2 history tables, rendered for every engine (as ``merge_plan`` is for silver).

A history table (``<silver>__history``, ``history: scd2`` in the table's mapping) holds one row
per version of a key: the row's columns plus ``HISTORY_META_COLUMNS``. A version is identified by
its key and ``_valid_from_seq``; it is open (``_valid_to_seq`` null, ``_is_current``) until the
key's next tracked change, its delete or a truncate closes it at that event's ``_seq``.

Which rows change is decided before the MERGE, for every engine by the same Python code
(``lakecdc.lake.history_chain``): its source rows carry ``__action`` = ``upsert`` (a version
to insert or to overwrite) or ``delete`` (a stored version that no longer exists: a late event
split it, and the re-folded chain starts its pieces elsewhere). The MERGE applies them by
(key, ``_valid_from_seq``), so applying the same rows twice changes nothing.

A truncate in the batch closes, with a NOT MATCHED BY SOURCE clause, every open version of a key
outside the MERGE source whose newest event (``_last_seq``) is older than the batch's oldest
truncate: the in-order case, where closing is all the truncate does. Versions a truncate reaches
out of order are re-folded beforehand and arrive in the source (``history_chain``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lakecdc.lake.layout import (
    HISTORY_META_COLUMNS,
    IS_CURRENT,
    LAST_SEQ,
    VALID_FROM_SEQ,
    VALID_TO_SEQ,
    VALID_TO_TS,
)
from lakecdc.lake.merge_plan import (
    SOURCE,
    SPARK,
    TARGET,
    Dialect,
    MergeClause,
    render_spark_merge,
    seq_components,
    seq_literal,
    seq_newer,
)

ACTION = "__action"
UPSERT = "upsert"
DELETE = "delete"


@dataclass(frozen=True)
class HistoryPlan:
    """What one history MERGE does: ``keys`` and ``columns`` (every history column, row columns
    and ``HISTORY_META_COLUMNS``, in the table's order); ``truncate_seq``/``truncate_ts_ms``: the
    batch's OLDEST truncate, which closes in-order open versions outside the source."""

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    truncate_seq: tuple[int, ...] | None = None
    truncate_ts_ms: int | None = None

    def __post_init__(self) -> None:
        if not self.keys:
            raise ValueError("a history MERGE needs key columns")
        missing = [c for c in (*self.keys, *HISTORY_META_COLUMNS) if c not in self.columns]
        if missing:
            raise ValueError(f"history columns {missing} are not among {list(self.columns)}")


def history_join(plan: HistoryPlan, dialect: Dialect) -> str:
    """Key and ``_valid_from_seq`` equal (component by component, never as strings)."""
    keys = [f"{dialect.ident(TARGET, k)} = {dialect.ident(SOURCE, k)}" for k in plan.keys]
    seqs = [f"{t} = {s}" for t, s in zip(seq_components(dialect, TARGET, VALID_FROM_SEQ),
                                         seq_components(dialect, SOURCE, VALID_FROM_SEQ))]
    return " AND ".join(keys + seqs)


def _seq_array(dialect: Dialect, seq: tuple[int, ...]) -> str:
    head = "array(" if dialect.name == "spark" else "make_array("
    return head + ", ".join(f"CAST({v} AS BIGINT)" for v in seq_literal(seq)) + ")"


def history_clauses(plan: HistoryPlan, dialect: Dialect) -> list[MergeClause]:
    """The ordered clauses (first matching clause wins)."""
    action = dialect.ident(SOURCE, ACTION)
    everything = tuple((c, dialect.ident(SOURCE, c)) for c in plan.columns)
    clauses = [
        MergeClause("matched_delete", f"{action} = '{DELETE}'"),
        MergeClause("matched_update", f"{action} = '{UPSERT}'", everything),
        MergeClause("not_matched_insert", f"{action} = '{UPSERT}'", everything),
    ]
    if plan.truncate_seq is not None:
        newest_event_before = seq_newer(dialect, seq_literal(plan.truncate_seq),
                                        seq_components(dialect, TARGET, LAST_SEQ))
        open_before = f"{dialect.ident(TARGET, VALID_TO_SEQ)} IS NULL AND {newest_event_before}"
        ts = dialect.timestamp_from_ms(f"CAST({int(plan.truncate_ts_ms or 0)} AS BIGINT)")
        clauses.append(MergeClause("not_matched_by_source_update", open_before,
                                   ((VALID_TO_SEQ, _seq_array(dialect, plan.truncate_seq)), (VALID_TO_TS, ts),
                                    (IS_CURRENT, "false"))))
    return clauses


def render_history_spark_sql(plan: HistoryPlan, target_table: str, source_view: str) -> str:
    """The history ``MERGE INTO`` for Spark SQL (Iceberg, or Delta in Spark)."""
    return render_spark_merge(target_table, source_view, history_join(plan, SPARK), history_clauses(plan, SPARK))
