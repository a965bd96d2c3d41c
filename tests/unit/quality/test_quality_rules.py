"""Each rule passes on a consistent bronze/silver pair and catches the defect it exists for.

Frames have the stored layout (``docs/CONTRACTS.md``: bronze = row columns + metadata with
``_kafka_partition``; silver = row columns + ``_seq``, ``_op``, ``_source_ts_ms``, ``_tx_id``).
"""

from __future__ import annotations

import pickle
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.audit.versions import TableVersion
from lakecdc.quality import report  # noqa: F401 - registers every rule
from lakecdc.quality.engine import DataFusionEngine
from lakecdc.quality.range_checksums import DIALECTS, bucket_sql
from lakecdc.quality.reconcile import DIFFERS, MISSING_AT_SOURCE, MISSING_IN_SILVER, Side, bisect
from lakecdc.quality.rules import RULES, CheckContext


def bronze_row(op: str, seq: int, offset: int, id_: int | None, name: str | None,
               unavailable: tuple[str, ...] = ()) -> dict:
    return {"id": id_, "name": name, "_op": op, "_seq": [seq, seq, 0, 0], "_source_ts_ms": 1_700_000_000_000 + seq,
            "_tx_id": f"{seq}:{seq}", "_kafka_partition": 0, "_offset": offset, "_unavailable": list(unavailable)}


BRONZE = [bronze_row("c", 10, 0, 1, "a"), bronze_row("c", 11, 1, 2, "b"), bronze_row("c", 12, 2, 3, "c"),
          bronze_row("u", 20, 3, 1, None, unavailable=("name",)),  # unchanged TOAST: keeps "a"
          bronze_row("d", 21, 4, 2, "b"), bronze_row("c", 30, 5, 4, "d")]
SILVER = [{"id": 1, "name": "a", "_seq": [20, 20, 0, 0], "_op": "u"},
          {"id": 3, "name": "c", "_seq": [12, 12, 0, 0], "_op": "c"},
          {"id": 4, "name": "d", "_seq": [30, 30, 0, 0], "_op": "c"}]


SEQ = pa.list_(pa.int64())
SILVER_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("_seq", SEQ), ("_op", pa.string())])
BRONZE_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("_op", pa.string()), ("_seq", SEQ),
                           ("_source_ts_ms", pa.int64()), ("_tx_id", pa.string()), ("_kafka_partition", pa.int32()),
                           ("_offset", pa.int64()), ("_unavailable", pa.list_(pa.string()))])


def context(silver: list[dict] = SILVER, bronze: list[dict] | None = BRONZE, **options) -> CheckContext:
    """The rules on in-memory tables in the DataFusion engine (the one Delta tables use)."""
    engine = DataFusionEngine(memory_mb=64)
    engine.register_arrow("silver", pa.Table.from_pylist(silver, schema=SILVER_SCHEMA))
    if bronze is not None:
        engine.register_arrow("bronze", pa.Table.from_pylist(bronze, schema=BRONZE_SCHEMA))
    return CheckContext(engine, ("id",), "silver.t", bronze is not None, options=options)


@pytest.mark.parametrize("name", ["not_null_keys", "unique_keys", "no_resurrected_deletes",
                                  "bronze_positions_increasing", "silver_matches_bronze_replay"])
def test_rules_pass_on_consistent_tables(name: str) -> None:
    result = RULES[name](context())
    assert result.passed, result.reason
    assert result.failing is None


def test_not_null_keys_catches_a_null_key() -> None:
    result = RULES["not_null_keys"](context(SILVER + [{"id": None, "name": "x", "_seq": [40, 40, 0, 0]}]))
    assert not result.passed and result.failed_rows == 1
    assert result.failing.iloc[0]["name"] == "x"


def test_unique_keys_catches_a_duplicate() -> None:
    result = RULES["unique_keys"](context(SILVER + [{"id": 3, "name": "c2", "_seq": [12, 12, 0, 0]}]))
    assert not result.passed and sorted(result.failing["name"]) == ["c", "c2"]


def test_no_resurrected_deletes_catches_a_deleted_key_in_silver() -> None:
    result = RULES["no_resurrected_deletes"](context(SILVER + [{"id": 2, "name": "b", "_seq": [11, 11, 0, 0]}]))
    assert not result.passed and list(result.failing["id"]) == [2]


def test_no_resurrected_deletes_counts_a_truncate() -> None:
    bronze = BRONZE + [bronze_row("t", 40, 6, None, None)]
    result = RULES["no_resurrected_deletes"](context(SILVER, bronze))
    assert not result.passed and sorted(result.failing["id"]) == [1, 3, 4]


def test_bronze_positions_catch_a_duplicate_and_a_step_back() -> None:
    duplicate = bronze_row("u", 20, 6, 1, "a")  # the same event again at a later offset
    later = bronze_row("u", 15, 7, 3, "c0")  # newer than key 3's position 12: in order
    back = bronze_row("u", 5, 8, 4, "d0")  # key 4 was created at 30: going back to 5
    result = RULES["bronze_positions_increasing"](context(bronze=BRONZE + [duplicate, later, back]))
    assert not result.passed
    assert sorted(result.failing["_offset"]) == [6, 8]


def test_replay_catches_a_changed_value_a_missing_row_and_an_extra_row() -> None:
    silver = [{"id": 1, "name": "WRONG", "_seq": [20, 20, 0, 0]},  # differs from the replay
              {"id": 4, "name": "d", "_seq": [30, 30, 0, 0]},  # id 3 missing
              {"id": 9, "name": "z", "_seq": [50, 50, 0, 0]}]  # never in bronze
    result = RULES["silver_matches_bronze_replay"](context(silver))
    problems = dict(zip(result.failing["id"], result.failing["_problem"]))
    assert not result.passed
    assert problems == {1: "differs from the replay in name", 9: "in silver but not in the bronze replay",
                        3: "in the bronze replay but not in silver"}


def test_replay_keeps_placeholder_columns_from_the_older_event() -> None:
    wrong = [dict(SILVER[0], name=None), *SILVER[1:]]  # silver lost the TOAST value
    result = RULES["silver_matches_bronze_replay"](context(wrong))
    assert not result.passed and list(result.failing["id"]) == [1]


def test_bronze_rules_say_they_need_bronze() -> None:
    result = RULES["silver_matches_bronze_replay"](context(bronze=None))
    assert not result.passed and "no bronze table" in result.reason


def test_freshness_compares_the_newest_source_time_with_now() -> None:
    from datetime import datetime, timezone

    versions = [TableVersion(1, datetime.now(timezone.utc), "append", (30,), 1_700_000_000_000, 1)]
    ctx = context()
    ctx.versions = versions
    ctx.options = {"now_ms": 1_700_000_060_000, "max_lag_seconds": 120}
    assert RULES["freshness"](ctx).passed
    ctx.options = {"now_ms": 1_700_000_600_000, "max_lag_seconds": 120}
    stale = RULES["freshness"](ctx)
    assert not stale.passed and stale.reason == "lag 600.0s exceeds 120s"
    assert stale.failing.iloc[0]["lag_seconds"] == 600.0


def datafusion_side(rows: pa.Table, name: str) -> Side:
    engine = DataFusionEngine(memory_mb=64)
    engine.register_arrow(name, rows)
    return Side(DIALECTS["datafusion"], engine.view(name),
                lambda sql: [tuple(r.values()) for r in engine.sql(sql).to_pylist()])


def test_bisection_finds_exactly_the_differing_keys_with_few_answers() -> None:
    n = 20_000
    rows = pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{i}" for i in range(n)],
                     "price": pa.array([Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2))})
    changed = rows.to_pylist()
    changed[777]["name"] = "other"  # differs
    changed[15_000]["price"] = None  # a null is a value too
    del changed[9_999]  # missing at the source
    changed.append({"id": n + 5, "name": "new", "price": Decimal("1.00")})  # missing in silver
    source = datafusion_side(pa.Table.from_pylist(changed, schema=rows.schema), "source")
    lake = datafusion_side(rows, "lake")
    columns = [("id", pa.int64()), ("name", pa.string()), ("price", pa.decimal128(12, 2))]
    out = bisect(source, lake, [("id", pa.int64())], columns, buckets=16, leaf_rows=64)
    assert out.differences == {777: DIFFERS, 15_000: DIFFERS, 9_999: MISSING_AT_SOURCE, n + 5: MISSING_IN_SILVER}
    assert (out.source_rows, out.silver_rows) == (n, n)
    full_pull = len(pickle.dumps([tuple(r.values()) for r in rows.to_pylist()]))
    assert out.bytes_moved * 20 < full_pull  # buckets and a few leaves, not the rows
    same = bisect(datafusion_side(rows, "s2"), datafusion_side(rows, "l2"), [("id", pa.int64())], columns)
    assert same.differences == {} and same.queries == 4  # bounds and one bucket query per side


@pytest.mark.parametrize("dialect, fragments", [
    ("sqlserver", ["HASHBYTES('MD5', CAST(CONCAT_WS(CHAR(31), COALESCE(CAST([name] AS NVARCHAR(MAX)), N'\u2205')",
                   "COLLATE Latin1_General_100_CI_AS_SC_UTF8 AS VARCHAR(MAX))",
                   "CONVERT(VARBINARY(8), '0' + SUBSTRING(", "WHEN [id] < 16 THEN 0", "FROM [dbo].[items]"]),
    ("oracle", ["STANDARD_HASH(COALESCE(TO_CHAR(\"name\"), UNISTR('\\2205'))", "TO_NUMBER(SUBSTR(",
                "WHEN \"id\" < 16 THEN 0", "FROM \"SHOP\".\"ITEMS\""]),
    ("postgres", ["md5(COALESCE(\"name\"::text, '\u2205'))", "::bit(60)::bigint", "FROM \"public\".\"items\""]),
    ("mysql", ["MD5(", "CONV(SUBSTRING(", "WHEN `id` < 16 THEN 0"]),
])
def test_range_checksum_sql_per_dialect(dialect: str, fragments: list[str]) -> None:
    d = DIALECTS[dialect]
    table = {"oracle": "SHOP.ITEMS", "sqlserver": "dbo.items"}.get(dialect, "public.items")
    sql = bucket_sql(d, d.quote(table), [("id", pa.int64())], [("name", pa.string())], ("10",), ("100",),
                     [("16",), ("22",)])
    for fragment in fragments:
        assert fragment.lower() in sql.lower() if dialect == "mysql" else fragment in sql, (fragment, sql)


def test_source_connection_errors_never_show_the_password(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Every driver's refusal (real drivers against a closed port) and an unresolvable reference: the
    error names the source, masked, and the cause; the password is nowhere, not even in the chain."""
    import traceback

    from lakecdc.quality.source_connect import SourceConnectError, connect_source

    secret_file = tmp_path / "pw"
    secret_file.write_text("SeCrEt-file\n")
    monkeypatch.setenv("RECON_PW", "SeCrEt-env")
    for spec, password in [("host=127.0.0.1 port=1 user=u password=SeCrEt-pw dbname=x connect_timeout=2", None),
                           ("mysql://u:SeCrEt-pw@127.0.0.1:1/x", None),
                           ("postgresql://u@127.0.0.1:1/x", "env:RECON_PW"),
                           ("mssql://sa:SeCrEt-pw@127.0.0.1:1/shop", None),
                           ("sqlserver://sa@127.0.0.1:1/shop", f"file:{secret_file}"),
                           ("oracle://u:env:RECON_PW@127.0.0.1:1/XE", None)]:
        with pytest.raises(SourceConnectError) as caught:
            connect_source(spec, password)
        text = "".join(traceback.format_exception(caught.value))  # what a crash would print
        assert "cannot connect to the source database" in text and "127.0.0.1" in text, text
        assert "SeCrEt" not in text and "SeCrEt" not in repr(caught.value)
    with pytest.raises(SourceConnectError, match="env:NOT_SET_ANYWHERE.*not set"):
        connect_source("oracle://u@127.0.0.1:1/XE", "env:NOT_SET_ANYWHERE")
    with pytest.raises(SourceConnectError, match="scheme 'db2'"):
        connect_source("db2://u:SeCrEt-pw@h/x")


def test_source_urls_per_driver() -> None:
    from lakecdc.quality.source_connect import odbc_connection_string, parse_source

    url = parse_source("mssql+pyodbc://re%40con@db:14330/shop?driver=ODBC+Driver+17+for+SQL+Server"
                       "&TrustServerCertificate=yes", "p}w;x")
    assert (url.kind, url.dialect, url.host, url.port, url.user, url.database) == \
        ("pyodbc", "sqlserver", "db", 14330, "re@con", "shop")
    assert odbc_connection_string(url) == ("DRIVER={ODBC Driver 17 for SQL Server};SERVER=db,14330;DATABASE={shop};"
                                           "UID={re@con};PWD={p}}w;x};trustservercertificate={yes}")
    assert "p}w" not in repr(url) and "p}w" not in url.masked()
    dsn = parse_source("host=db password=SeCrEt-dsn dbname=x")
    assert "SeCrEt" not in repr(dsn) and "SeCrEt" not in dsn.masked() and dsn.dialect == "postgres"
    oracle = parse_source("oracle://u:pw@h/ORCLPDB1")
    assert (oracle.kind, oracle.dialect, oracle.port, oracle.database, oracle.password_text()) == \
        ("oracledb", "oracle", 1521, "ORCLPDB1", "pw")
    assert parse_source("sqlserver://u@h/db").port == 1433 and parse_source("mariadb://u@h/db").dialect == "mysql"


events_strategy = st.lists(st.tuples(st.sampled_from("cud"), st.integers(0, 6), st.sampled_from(["x", "y", None])),
                           min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(events=events_strategy, corrupt=st.integers(0, 100))
def test_replay_rules_agree_with_the_reference_replay(events: list[tuple[str, int, str | None]], corrupt: int) -> None:
    """Any history: silver built by the reference replay (``lakecdc.audit.replay``) passes both replay
    rules; changing one silver row's value is caught, with exactly that key."""
    from lakecdc.audit.replay import replay

    bronze = [bronze_row(op, 10 + i, i, key, name) for i, (op, key, name) in enumerate(events)]
    frame = pd.DataFrame(bronze)
    empty = pd.DataFrame({"id": pd.Series([], dtype="int64"), "name": pd.Series([], dtype="object"),
                          "_seq": pd.Series([], dtype="object"), "_op": pd.Series([], dtype="object"),
                          "_source_ts_ms": pd.Series([], dtype="int64"), "_tx_id": pd.Series([], dtype="object")})
    silver = [{c: r[c] for c in ("id", "name", "_seq", "_op")}
              for r in replay(empty, frame, ("id",)).to_dict("records")]
    for name in ("silver_matches_bronze_replay", "no_resurrected_deletes"):
        result = RULES[name](context(silver, bronze))
        assert result.passed, (name, result.reason, silver)
    if silver:
        broken = [dict(r) for r in silver]
        victim = broken[corrupt % len(broken)]
        victim["name"] = "corrupted"
        result = RULES["silver_matches_bronze_replay"](context(broken, bronze))
        assert not result.passed and result.failed_rows == 1
        assert list(result.failing["id"]) == [victim["id"]]
        assert result.failing["_problem"][0] == "differs from the replay in name"


def test_pipeline_expectations_are_read_again_when_the_suite_file_changes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import os

    from lakecdc.quality.pipeline import _suite

    path = tmp_path / "orders.json"
    rule = {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"}}
    path.write_text(json.dumps({"name": "orders", "expectations": [rule]}))
    assert [e.expectation_type for e in _suite(str(path)).expectations] == ["expect_column_values_to_not_be_null"]
    path.write_text(json.dumps({"name": "orders", "expectations": []}))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert _suite(str(path)).expectations == []
