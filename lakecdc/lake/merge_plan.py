"""One MERGE plan for silver, rendered for every engine so the semantics cannot drift apart.

``MergePlan`` describes what a silver MERGE must do (keys, the ``_seq`` guard, deletes hard or
soft, a truncate in the batch, placeholder columns to keep); ``merge_clauses(plan, dialect)``
turns it into an ordered list of ``MergeClause`` whose conditions and assignments are SQL
expression strings in the dialect's syntax. ``render_spark_sql`` joins them into a ``MERGE INTO``
statement (Iceberg, Delta in Spark); the delta-rs writer feeds the same clauses to
``TableMerger`` (``when_matched_delete(predicate)``, ``when_matched_update(updates, predicate)``...).

The source rows of the MERGE are prepared by ``lakecdc.lake.silver``: one row per key (the
latest event in the batch), with ``_removed_seq`` = the ``_seq`` at which the key was last deleted
or the table truncated (from the delete ledger), or null. Semantics rendered here:

1. A source row applies to a stored row only if its ``_seq`` is newer (lexicographic over the 4
   numbers, spelled out explicitly: never compared as strings).
2. A delete removes the row (hard) or marks it ``_is_deleted`` (soft; Iceberg reserves ``_deleted``),
   keeping its ``_seq``.
3. An insert of an unknown key happens only if the key was not removed at a newer ``_seq``, so a
   late event cannot resurrect a deleted or truncated row.
4. Columns named in ``_unavailable`` keep the stored value (null on insert). The create of a
   primary-key change has them filled beforehand from the old key's row (``key_moves``).
5. A truncate in the batch removes (or soft-deletes) every stored row older than it.

The ON condition also bounds the target's first key column to the batch's key ranges
(``lakecdc.lake.key_ranges``), which the engines push into the target scan to skip files and
row groups; it changes no match, as every source key lies inside them. A batch with a truncate
gets no bound: its NOT MATCHED BY SOURCE clause must see every stored row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lakecdc.lake.batch import DeleteMode
from lakecdc.lake.key_ranges import KeyRanges, ranges_predicate
from lakecdc.lake.layout import SEQ_LENGTH, SILVER_META_COLUMNS

ClauseKind = Literal["matched_delete", "matched_update", "not_matched_insert",
                     "not_matched_by_source_delete", "not_matched_by_source_update"]

SOURCE = "s"
TARGET = "t"


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the few expressions the plan needs."""

    name: str
    seq_base: int  # index of the first array element: Spark 0, DataFusion 1
    quote: str
    array_contains_fn: str
    null_safe_eq: str

    def quoted(self, identifier: str) -> str:
        """``identifier`` quoted, each quote character in it doubled (Spark: a`b becomes `a``b`;
        DataFusion doubles its double quote the same way). Never raw: a source column's name could
        otherwise end the identifier and rewrite the statement."""
        return self.quote + identifier.replace(self.quote, self.quote * 2) + self.quote

    def ident(self, alias: str, column: str) -> str:
        return f"{alias}.{self.quoted(column)}"

    def seq_item(self, alias: str, index: int) -> str:
        return f"{self.ident(alias, '_seq') if alias else '_seq'}[{index + self.seq_base}]"

    def string_literal(self, value: str) -> str:
        """A SQL string literal of ``value``. Spark reads backslash escapes and joins adjacent
        literals (``'o''b'`` is "ob" there), so it escapes both with backslashes; DataFusion
        doubles quotes (standard SQL)."""
        if self.name == "spark":
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + value.replace("'", "''") + "'"

    def contains(self, array_expr: str, literal: str) -> str:
        return f"{self.array_contains_fn}({array_expr}, {self.string_literal(literal)})"

    def timestamp_from_ms(self, expr: str) -> str:
        if self.name == "spark":
            return f"timestamp_millis({expr})"
        return f"to_timestamp_millis({expr})"


SPARK = Dialect(name="spark", seq_base=0, quote="`", array_contains_fn="array_contains", null_safe_eq="<=>")
DATAFUSION = Dialect(name="datafusion", seq_base=1, quote='"', array_contains_fn="array_has",
                     null_safe_eq="IS NOT DISTINCT FROM")


def seq_newer(dialect: Dialect, newer: list[str], older: list[str]) -> str:
    """``newer > older`` lexicographically over the 4 components, as an explicit expression.

    ``newer``/``older`` are the component expressions (4 each). Built innermost-first:
    ``a0 > b0 OR (a0 = b0 AND (a1 > b1 OR (a1 = b1 AND ...)))``.
    """
    if len(newer) != SEQ_LENGTH or len(older) != SEQ_LENGTH:
        raise ValueError(f"_seq has {SEQ_LENGTH} components, got {len(newer)} and {len(older)}")
    expr = f"{newer[-1]} > {older[-1]}"
    for a, b in zip(reversed(newer[:-1]), reversed(older[:-1])):
        expr = f"({a} > {b} OR ({a} = {b} AND ({expr})))"
    return expr


def seq_components(dialect: Dialect, alias: str, column: str = "_seq") -> list[str]:
    base = dialect.ident(alias, column)
    return [f"{base}[{i + dialect.seq_base}]" for i in range(SEQ_LENGTH)]


def seq_literal(seq: tuple[int, ...]) -> list[str]:
    return [str(int(v)) for v in seq]


@dataclass(frozen=True)
class MergePlan:
    """What one silver MERGE does. Built per batch from the table and the batch's statistics.

    ``columns``: the batch's row columns (keys included), in order; ``table_columns``: columns
    that exist in silver but not in the batch are left untouched on update and null on insert.
    ``truncate_seq``/``truncate_ts_ms``: the newest truncate in the batch, if any.
    ``truncated_through``: the newest truncate ever applied (delete ledger and this batch): no
    event older than it may insert a row.
    ``placeholders``: whether any row carries ``_unavailable`` columns (renders the CASEs only then).
    ``key_ranges``: where the batch's first key column lies (None: read the whole target).
    """

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    delete_mode: DeleteMode = "hard"
    truncate_seq: tuple[int, ...] | None = None
    truncate_ts_ms: int | None = None
    truncated_through: tuple[int, ...] | None = None
    placeholders: bool = True
    key_ranges: KeyRanges | None = None

    def __post_init__(self) -> None:
        if not self.keys:
            raise ValueError("a silver MERGE needs key columns")
        missing = [k for k in self.keys if k not in self.columns]
        if missing:
            raise ValueError(f"key columns {missing} are not among the batch columns {list(self.columns)}")

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if c not in self.keys)


@dataclass(frozen=True)
class MergeClause:
    kind: ClauseKind
    condition: str | None
    assignments: tuple[tuple[str, str], ...] = ()


def join_condition(plan: MergePlan, dialect: Dialect) -> str:
    on = " AND ".join(f"{dialect.ident(TARGET, k)} = {dialect.ident(SOURCE, k)}" for k in plan.keys)
    if plan.key_ranges and plan.truncate_seq is None:
        on += " AND " + ranges_predicate(dialect.ident(TARGET, plan.keys[0]), plan.key_ranges,
                                         dialect.string_literal)
    return on


def _value_assignment(plan: MergePlan, dialect: Dialect, column: str, *, insert: bool) -> str:
    source = dialect.ident(SOURCE, column)
    if not plan.placeholders:
        return source
    kept = "NULL" if insert else dialect.ident(TARGET, column)
    return f"CASE WHEN {dialect.contains(dialect.ident(SOURCE, '_unavailable'), column)} THEN {kept} ELSE {source} END"


def _meta_assignments(dialect: Dialect) -> list[tuple[str, str]]:
    return [(c, dialect.ident(SOURCE, c)) for c in SILVER_META_COLUMNS]


def merge_clauses(plan: MergePlan, dialect: Dialect) -> list[MergeClause]:
    """The ordered MERGE clauses (first matching clause wins, as in SQL MERGE)."""
    newer = seq_newer(dialect, seq_components(dialect, SOURCE), seq_components(dialect, TARGET))
    is_delete = f"{dialect.ident(SOURCE, '_op')} = 'd'"
    not_delete = f"{dialect.ident(SOURCE, '_op')} <> 'd'"
    removed = dialect.ident(SOURCE, "_removed_seq")
    newer_than_removal = seq_newer(dialect, seq_components(dialect, SOURCE),
                                   seq_components(dialect, SOURCE, "_removed_seq"))
    not_removed_later = f"({removed} IS NULL OR {newer_than_removal})"
    soft = plan.delete_mode == "soft"

    clauses: list[MergeClause] = []
    if soft:
        deleted_at = dialect.timestamp_from_ms(dialect.ident(SOURCE, "_source_ts_ms"))
        assignments = [*_meta_assignments(dialect), ("_is_deleted", "true"), ("_deleted_at", deleted_at)]
        clauses.append(MergeClause("matched_update", f"{is_delete} AND {newer}", tuple(assignments)))
    else:
        clauses.append(MergeClause("matched_delete", f"{is_delete} AND {newer}"))

    updates = [(c, _value_assignment(plan, dialect, c, insert=False)) for c in plan.value_columns]
    updates += _meta_assignments(dialect)
    if soft:
        updates += [("_is_deleted", "false"), ("_deleted_at", "NULL")]
    clauses.append(MergeClause("matched_update", f"{not_delete} AND {newer}", tuple(updates)))

    inserts = [(c, dialect.ident(SOURCE, c)) for c in plan.keys]
    inserts += [(c, _value_assignment(plan, dialect, c, insert=True)) for c in plan.value_columns]
    inserts += _meta_assignments(dialect)
    if soft:
        inserts += [("_is_deleted", "false"), ("_deleted_at", "NULL")]
    insert_condition = f"{not_delete} AND {not_removed_later}"
    if plan.truncated_through is not None:
        after_truncate = seq_newer(dialect, seq_components(dialect, SOURCE), seq_literal(plan.truncated_through))
        insert_condition += f" AND ({after_truncate})"
    clauses.append(MergeClause("not_matched_insert", insert_condition, tuple(inserts)))

    if plan.truncate_seq is not None:
        older_than_truncate = seq_newer(dialect, seq_literal(plan.truncate_seq), seq_components(dialect, TARGET))
        if soft:
            seq_array = ("array(" if dialect.name == "spark" else "make_array(") + ", ".join(
                f"CAST({v} AS BIGINT)" for v in seq_literal(plan.truncate_seq)) + ")"
            ts = dialect.timestamp_from_ms(f"CAST({int(plan.truncate_ts_ms or 0)} AS BIGINT)")
            clauses.append(MergeClause(
                "not_matched_by_source_update",
                f"{older_than_truncate} AND NOT {dialect.ident(TARGET, '_is_deleted')}",
                (("_seq", seq_array), ("_op", "'t'"), ("_is_deleted", "true"), ("_deleted_at", ts))))
        else:
            clauses.append(MergeClause("not_matched_by_source_delete", older_than_truncate))
    return clauses


_SPARK_CLAUSE_HEAD = {
    "matched_delete": "WHEN MATCHED",
    "matched_update": "WHEN MATCHED",
    "not_matched_insert": "WHEN NOT MATCHED",
    "not_matched_by_source_delete": "WHEN NOT MATCHED BY SOURCE",
    "not_matched_by_source_update": "WHEN NOT MATCHED BY SOURCE",
}


def render_spark_merge(target_table: str, source_view: str, on: str, clauses: list[MergeClause]) -> str:
    """A ``MERGE INTO`` statement for Spark SQL from rendered clauses."""
    lines = [f"MERGE INTO {target_table} AS {TARGET}", f"USING {source_view} AS {SOURCE}", f"ON {on}"]
    for clause in clauses:
        head = _SPARK_CLAUSE_HEAD[clause.kind] + (f" AND {clause.condition}" if clause.condition else "")
        if clause.kind.endswith("delete"):
            lines.append(f"{head} THEN DELETE")
        elif clause.kind.endswith("update"):
            sets = ", ".join(f"{SPARK.quoted(c)} = {e}" for c, e in clause.assignments)
            lines.append(f"{head} THEN UPDATE SET {sets}")
        else:
            names = ", ".join(SPARK.quoted(c) for c, _ in clause.assignments)
            values = ", ".join(e for _, e in clause.assignments)
            lines.append(f"{head} THEN INSERT ({names}) VALUES ({values})")
    return "\n".join(lines)


def render_spark_sql(plan: MergePlan, target_table: str, source_view: str) -> str:
    """The silver ``MERGE INTO`` for Spark SQL (Iceberg, or Delta when Delta is in the session)."""
    return render_spark_merge(target_table, source_view, join_condition(plan, SPARK), merge_clauses(plan, SPARK))
