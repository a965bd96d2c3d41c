"""Every identifier a statement renders is quoted and escaped, in every dialect.

Source column names are data: a backtick, a double quote, a space, a dot or a SQL keyword in one
must neither break the MERGE nor rewrite it. ``Dialect.quoted`` doubles the dialect's quote
character; here the rendered statements are scanned: with every quoted identifier taken out, no
piece of a hostile name is left.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.lake.merge_plan import (
    DATAFUSION,
    SPARK,
    Dialect,
    MergePlan,
    join_condition,
    merge_clauses,
    render_spark_sql,
)
from lakecdc.writers.delta_spark import create_table_sql, evolve_sql
from lakecdc.writers.spark_sql import column_ddl, quote

HOSTILE = ["id`k", 'we"ird', "sp ace", "do.t", "select", "ünïcödé", "a`) ; DROP TABLE x; --",
           'b" OR 1=1 --', "``", '""']


def strip_quoted(text: str, dialect: Dialect) -> str:
    """``text`` with every quoted identifier (its doubled quotes included) replaced by ``ID``."""
    q = re.escape(dialect.quote)
    return re.sub(f"{q}(?:[^{q}]|{q}{q})*{q}", "ID", text)


def strip_literals(text: str, dialect: Dialect) -> str:
    if dialect.name == "spark":
        return re.sub(r"'(?:[^'\\]|\\.)*'", "LIT", text)
    return re.sub(r"'(?:[^']|'')*'", "LIT", text)


def test_quoted_doubles_the_quote_character() -> None:
    assert SPARK.quoted("a`b") == "`a``b`" and SPARK.quoted('a"b') == '`a"b`'
    assert DATAFUSION.quoted('a"b') == '"a""b"' and DATAFUSION.quoted("a`b") == '"a`b"'
    assert SPARK.ident("s", "do.t") == "s.`do.t`" and quote("x y") == "`x y`"


@pytest.mark.parametrize("dialect", [SPARK, DATAFUSION], ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_merge_clauses_leave_no_raw_identifier(dialect: Dialect, mode: str) -> None:
    plan = MergePlan(keys=(HOSTILE[0], HOSTILE[3]), columns=tuple(HOSTILE), delete_mode=mode,  # type: ignore[arg-type]
                     truncate_seq=(9, 9, 0, 0), truncate_ts_ms=1, truncated_through=(9, 9, 0, 0), placeholders=True)
    texts = [join_condition(plan, dialect)]
    for clause in merge_clauses(plan, dialect):
        texts += [clause.condition or "", *(expression for _, expression in clause.assignments)]
    for text in texts:
        rest = strip_quoted(strip_literals(text, dialect), dialect)
        for name in HOSTILE:
            for piece in ("`", '"', "sp ace", "do.t", "ünï", "DROP", "OR 1=1"):
                assert piece not in rest, (name, text)
    # the placeholder checks name each column in a string literal, escaped for the dialect
    update = next(c for c in merge_clauses(plan, dialect) if c.kind == "matched_update"
                  and "CASE" in str(c.assignments))
    assert dialect.string_literal("a`) ; DROP TABLE x; --") in str(update.assignments)


def test_spark_merge_statement_quotes_assignment_targets_and_table() -> None:
    plan = MergePlan(keys=("id`k",), columns=("id`k", 'we"ird', "select"), placeholders=False)
    sql = render_spark_sql(plan, "`lake`.`silver`.`t``x`", "view")
    rest = strip_quoted(sql, SPARK)
    assert "`" not in rest and "select" not in rest.lower().replace("when", "")
    assert "`we\"ird` = s.`we\"ird`" in sql and "INSERT (`id``k`, `we\"ird`, `select`," in sql


def test_ddl_quotes_columns() -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    from lakecdc.lake.batch import ColumnSpec
    from lakecdc.lake.schema_evolution import SchemaChange

    schema = StructType([StructField(n, LongType()) for n in HOSTILE])
    assert strip_quoted(column_ddl(schema), SPARK).count("ID") == len(HOSTILE)
    assert "`" not in strip_quoted(create_table_sql("`c`.`s`.`t`", schema, "bronze"), SPARK)
    change = SchemaChange(add=(ColumnSpec("sp`ace", LongType()),), widen=(("do.t", LongType(), LongType()),),
                          make_nullable=("a`b",))
    for statement in evolve_sql("`c`.`s`.`t`", change):
        assert "`" not in strip_quoted(statement, SPARK)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=12), st.sampled_from([SPARK, DATAFUSION]))
def test_any_name_round_trips_through_quoting(name: str, dialect: Dialect) -> None:
    quoted = dialect.quoted(name)
    assert strip_quoted(quoted, dialect) == "ID"
    assert quoted[1:-1].replace(dialect.quote * 2, dialect.quote) == name
