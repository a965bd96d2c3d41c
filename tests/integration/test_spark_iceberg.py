"""Iceberg through the offline Spark session: MERGE INTO, snapshots, time travel, both catalogs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lakecdc.devstack.spark import ICEBERG_CATALOG, JDBC_CATALOG_FILE, delta_in_spark, spark_session

pytestmark = pytest.mark.integration

CHANGES = [  # (id, name, op) as a CDC micro-batch would bring them
    (1, "apple v2", "u"),
    (2, None, "d"),
    (4, "date", "c"),
]


def _rows(spark, query: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [tuple(row) for row in spark.sql(query).collect()]


def _merge_changes(spark, table: str) -> None:  # type: ignore[no-untyped-def]
    spark.createDataFrame(CHANGES, "id INT, name STRING, op STRING").createOrReplaceTempView("changes")
    spark.sql(f"""
        MERGE INTO {table} AS t USING changes AS c ON t.id = c.id
        WHEN MATCHED AND c.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = c.name
        WHEN NOT MATCHED AND c.op <> 'd' THEN INSERT (id, name) VALUES (c.id, c.name)
    """)


@pytest.mark.spark4
def test_iceberg_merge_into_and_time_travel(spark) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS shop")
    spark.sql("CREATE TABLE shop.fruit (id INT, name STRING) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read')")
    spark.sql("INSERT INTO shop.fruit VALUES (1, 'apple'), (2, 'banana'), (3, 'cherry')")
    before = _rows(spark, "SELECT snapshot_id FROM shop.fruit.snapshots")
    assert len(before) == 1

    _merge_changes(spark, "shop.fruit")

    assert _rows(spark, "SELECT id, name FROM shop.fruit ORDER BY id") == [
        (1, "apple v2"), (3, "cherry"), (4, "date")]
    snapshots = _rows(spark, "SELECT snapshot_id, operation FROM shop.fruit.snapshots ORDER BY committed_at")
    assert len(snapshots) == 2 and snapshots[0][0] == before[0][0]
    first_snapshot = snapshots[0][0]
    assert _rows(spark, f"SELECT id, name FROM shop.fruit VERSION AS OF {first_snapshot} ORDER BY id") == [
        (1, "apple"), (2, "banana"), (3, "cherry")]
    first_commit_ms = _rows(spark, "SELECT unix_millis(committed_at) FROM shop.fruit.snapshots "
                                   "ORDER BY committed_at LIMIT 1")[0][0]
    assert _rows(spark, f"SELECT count(*) FROM shop.fruit TIMESTAMP AS OF "
                        f"timestamp_millis({first_commit_ms})") == [(3,)]
    assert _rows(spark, f"SELECT id FROM shop.fruit TIMESTAMP AS OF "
                        f"timestamp_millis({first_commit_ms}) WHERE name = 'banana'") == [(2,)]
    # The default catalog is the Iceberg catalog, so the short and the qualified name agree.
    assert _rows(spark, f"SELECT count(*) FROM {ICEBERG_CATALOG}.shop.fruit") == [(3,)]
    # Merge-on-read wrote position deletes rather than rewriting the data file.
    delete_files = _rows(spark, "SELECT count(*) FROM shop.fruit.delete_files")
    assert delete_files[0][0] >= 1


def test_iceberg_rejects_two_changes_for_one_key_in_a_merge(spark) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS shop")
    spark.sql("CREATE TABLE shop.dupes (id INT, name STRING) USING iceberg")
    spark.sql("INSERT INTO shop.dupes VALUES (1, 'a')")
    spark.createDataFrame([(1, "b"), (1, "c")], "id INT, name STRING").createOrReplaceTempView("two")
    with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION|cardinality"):
        spark.sql("MERGE INTO shop.dupes t USING two s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name")


@pytest.mark.spark4
def test_jdbc_catalog_on_sqlite_is_shared_with_pyiceberg(spark, tmp_warehouse: Path) -> None:  # type: ignore[no-untyped-def]
    from pyiceberg.catalog.sql import SqlCatalog

    jdbc_spark = spark_session(tmp_warehouse, catalog="jdbc")
    assert jdbc_spark is not spark, "a second warehouse must not redefine the first session's catalog"
    jdbc_spark.sql("CREATE NAMESPACE IF NOT EXISTS jdbc_shop")
    jdbc_spark.sql("CREATE TABLE jdbc_shop.fruit (id INT, name STRING) USING iceberg")
    jdbc_spark.sql("INSERT INTO jdbc_shop.fruit VALUES (1, 'apple'), (2, 'banana')")
    _merge_changes(jdbc_spark, "jdbc_shop.fruit")
    assert (tmp_warehouse / JDBC_CATALOG_FILE).exists()

    catalog = SqlCatalog(ICEBERG_CATALOG, uri=f"sqlite:///{tmp_warehouse / JDBC_CATALOG_FILE}",
                         warehouse=f"file://{tmp_warehouse}")
    assert ("jdbc_shop", "fruit") in catalog.list_tables("jdbc_shop")
    rows = catalog.load_table("jdbc_shop.fruit").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "name": "apple v2"}, {"id": 4, "name": "date"}]
    # The fixture's session keeps its own (hadoop) warehouse, which has no such namespace.
    assert _rows(spark, "SHOW NAMESPACES LIKE 'jdbc_shop'") == []


def test_a_second_session_on_a_jdbc_catalog_sees_every_later_commit(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A session that initializes the JDBC catalog over an existing SQLite catalog (a second job, a
    `lakecdc maintain` beside the ingest, a notebook) must see the commits made after it started:
    JdbcCatalog's table check left a read transaction open on a pooled connection, and every read
    through it returned the catalog as it was then (the table stuck at its first row; after an
    expiry, snapshot files that no longer exist: the maintenance test's failure in CI)."""
    from lakecdc.devstack.spark import iceberg_catalog_conf

    first = spark_session(tmp_path, catalog="jdbc")
    first.sql("CREATE NAMESPACE IF NOT EXISTS jdbc_again")
    first.sql("CREATE TABLE jdbc_again.t (id BIGINT) USING iceberg")
    first.sql("INSERT INTO jdbc_again.t VALUES (1)")
    second = first.newSession()  # its own catalog instance, initialized on first use
    for key, value in iceberg_catalog_conf(tmp_path, "jdbc").items():
        second.conf.set(key, value)
    assert _rows(second, "SELECT count(*) FROM lake.jdbc_again.t") == [(1,)]
    seen = []
    for n in range(2, 6):
        first.sql(f"INSERT INTO jdbc_again.t VALUES ({n})")
        seen += [_rows(second, "SELECT count(*) FROM lake.jdbc_again.t")[0][0] for _ in range(2)]
    assert seen == [2, 2, 3, 3, 4, 4, 5, 5]


def test_a_session_cloned_from_one_that_created_the_jdbc_catalog_sees_every_later_commit(  # type: ignore[no-untyped-def]
        spark, tmp_path: Path) -> None:
    """Iceberg's actions (a compaction's ``rewrite_data_files``) run in a clone of the session, whose
    catalog is initialized again with the settings the session was given when the catalog file was new:
    its table check must not run there either (the maintenance-beside-ingest test failed in CI with
    "Unknown failure" commits and stale reads from such a clone)."""
    from pyspark.sql import SparkSession

    first = spark_session(tmp_path / "fresh", catalog="jdbc")  # no catalog file yet
    first.sql("CREATE NAMESPACE IF NOT EXISTS jdbc_clone")
    first.sql("CREATE TABLE jdbc_clone.t (id BIGINT) USING iceberg")
    first.sql("INSERT INTO jdbc_clone.t VALUES (1)")
    clone = SparkSession(first.sparkContext, first._jsparkSession.cloneSession())
    assert _rows(clone, "SELECT count(*) FROM lake.jdbc_clone.t") == [(1,)]
    seen = []
    for n in range(2, 5):
        first.sql(f"INSERT INTO jdbc_clone.t VALUES ({n})")
        seen.append(_rows(clone, "SELECT count(*) FROM lake.jdbc_clone.t")[0][0])
        clone.sql(f"INSERT INTO lake.jdbc_clone.t VALUES ({10 * n})")  # commits through the clone's catalog
    assert seen == [2, 4, 6]
    assert _rows(first, "SELECT count(*) FROM jdbc_clone.t") == [(7,)]


@pytest.mark.spark4
def test_sessions_lakecdc_starts_evaluate_interpreted(spark) -> None:  # type: ignore[no-untyped-def]
    """``INTERPRETED``: no Java is compiled per plan; a query still gives its rows (a window, a join,
    a hash of JSON: what every batch runs)."""
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    df = spark.createDataFrame([(1, "a"), (1, "b"), (2, "c")], "k int, v string")
    plan = df.groupBy("k").count()._jdf.queryExecution().executedPlan().toString()
    assert "WholeStageCodegen" not in plan and "*(" not in plan
    rows = spark.sql("SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v) AS n, "
                     "xxhash64(to_json(named_struct('v', v))) AS h FROM VALUES (1, 'a'), (1, 'b') AS t(k, v)").collect()
    assert [(r.k, r.v, r.n) for r in rows] == [(1, "a", 1), (1, "b", 2)]
    assert rows[0].h != rows[1].h


def _codegen(df) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``df`` ran as compiled stages (``*(n)`` in its final plan; adaptive plans add them as
    they run)."""
    df.collect()
    return "*(" in df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.spark4
def test_compiled_blocks_switch_the_session_and_put_it_back(spark) -> None:  # type: ignore[no-untyped-def]
    """``compiled``: statements over whole tables (quality rules) run Spark's compiled code inside
    the block; overlapping blocks -- nested, in other threads, ended by an error -- leave the
    session interpreted once the last one ends."""
    from lakecdc.spark.session import COMPILED, INTERPRETED, compiled

    def settings() -> dict[str, str]:
        return {name: spark.conf.get(name) for name in INTERPRETED}

    def grouped():  # type: ignore[no-untyped-def]
        return spark.createDataFrame([(1, "a"), (1, "b")], "k int, v string").groupBy("k").count()

    assert settings() == INTERPRETED and not _codegen(grouped())
    with compiled(spark):
        assert settings() == COMPILED and _codegen(grouped())
        assert [tuple(r) for r in grouped().collect()] == [(1, 2)]
        with compiled(spark):
            assert settings() == COMPILED
        assert settings() == COMPILED  # the inner block's end leaves the outer one compiled
    assert settings() == INTERPRETED and not _codegen(grouped())
    with pytest.raises(ValueError), compiled(spark):
        raise ValueError("a failed rule")
    assert settings() == INTERPRETED
    # blocks of two threads that overlap, the first to start ending first
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, dict[str, str]] = {}

    def first() -> None:
        with compiled(spark):
            first_in.set()
            second_in.wait(30)
        first_out.set()

    def second() -> None:
        first_in.wait(30)
        with compiled(spark):
            second_in.set()
            first_out.wait(30)
            seen["after the first ended"] = settings()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seen == {"after the first ended": COMPILED} and settings() == INTERPRETED
    # a session that compiles already (not one lakecdc started) keeps its own settings
    other = spark.newSession()
    other.conf.set("spark.sql.codegen.wholeStage", "true")
    other.conf.set("spark.sql.codegen.factoryMode", "CODEGEN_ONLY")
    with compiled(other):
        assert other.conf.get("spark.sql.codegen.factoryMode") == "CODEGEN_ONLY"
    assert other.conf.get("spark.sql.codegen.factoryMode") == "CODEGEN_ONLY" and settings() == INTERPRETED


@pytest.mark.spark4
def test_delta_is_not_in_this_spark_session(spark) -> None:  # type: ignore[no-untyped-def]
    # No Delta jars can be installed here, so Delta goes through delta-rs (see test_delta.py).
    assert delta_in_spark(spark) is False


@pytest.mark.spark4
def test_arrow_and_pandas_conversions_work_with_the_pinned_numpy(spark) -> None:  # type: ignore[no-untyped-def]
    import datetime
    from decimal import Decimal

    query = ("SELECT timestamp'2024-01-02 03:04:05' AS ts, date'2024-01-02' AS d, "
             "CAST(1.5 AS DECIMAL(10,2)) AS amount, array(1, 2) AS items")
    arrow_batches = spark.sql(query)._collect_as_arrow()
    assert arrow_batches[0].to_pylist()[0]["amount"] == Decimal("1.50")
    for arrow_enabled in ("false", "true"):
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", arrow_enabled)
        frame = spark.sql(query).toPandas()
        assert frame["ts"][0].to_pydatetime() == datetime.datetime(2024, 1, 2, 3, 4, 5)
        assert frame["d"][0] == datetime.date(2024, 1, 2)
        assert list(frame["items"][0]) == [1, 2]
        assert spark.createDataFrame(frame).count() == 1
    spark.conf.unset("spark.sql.execution.arrow.pyspark.enabled")


def test_relocated_jackson_jar_is_built_from_pyspark_jars(tmp_path: Path) -> None:
    import zipfile

    from lakecdc.spark.jars import iceberg_runtime_jar, shaded_jackson_jar

    built = shaded_jackson_jar(cache_dir=tmp_path)
    assert built.parent == tmp_path and built.name.startswith("iceberg-shaded-jackson-2.")
    with zipfile.ZipFile(built) as jar:
        names = set(jar.namelist())
    assert "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class" in names
    assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactory.class" in names
    assert not any(name.startswith("com/fasterxml/") for name in names), "classes must all be relocated"
    # The runtime jar really references the relocated names the built jar provides.
    with zipfile.ZipFile(iceberg_runtime_jar()) as runtime:
        assert not any(name.startswith("org/apache/iceberg/shaded/com/fasterxml/") for name in runtime.namelist())
    assert shaded_jackson_jar(cache_dir=tmp_path) == built  # cached: not rebuilt


def test_maven_coordinates_replace_the_offline_jars(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakecdc.devstack.spark import spark_packages

    monkeypatch.delenv("LAKECDC_SPARK_PACKAGES", raising=False)
    assert spark_packages() is None
    monkeypatch.setenv("LAKECDC_SPARK_PACKAGES", " io.delta:delta-spark_2.12:3.3.2 ")
    assert spark_packages() == "io.delta:delta-spark_2.12:3.3.2"
    assert spark_packages("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0") == \
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"


@pytest.mark.spark4
def test_python_workers_run_this_interpreter_with_arrow(spark) -> None:  # type: ignore[no-untyped-def]
    import sys

    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")
    def worker_python(values):  # type: ignore[no-untyped-def]
        import sys as worker_sys

        return values.map(lambda _: worker_sys.executable)

    def doubled(batches):  # type: ignore[no-untyped-def]
        for frame in batches:
            frame["id"] = frame["id"] * 2
            yield frame

    frame = spark.range(3)
    assert {row[0] for row in frame.select(worker_python("id")).collect()} == {sys.executable}
    assert sorted(row.id for row in frame.mapInPandas(doubled, frame.schema).collect()) == [0, 2, 4]


def test_tables_of_a_jdbc_catalog_on_sqlite_take_commits_side_by_side(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The ingest job commits a batch's tables on several threads (``apply.parallelism``) with nothing
    between them: SQLite takes one writer at a time, and every commit must wait its turn (the busy
    timeout, WAL) rather than fail. Appends and MERGEs into four tables, four threads, at once."""
    from concurrent.futures import ThreadPoolExecutor

    jdbc_spark = spark_session(tmp_path, catalog="jdbc")
    jdbc_spark.sql("CREATE NAMESPACE IF NOT EXISTS jdbc_side")
    tables = [f"jdbc_side.t{n}" for n in range(4)]
    for table in tables:
        jdbc_spark.sql(f"CREATE TABLE {table} (id INT, name STRING) USING iceberg")
    rounds = 4
    start = threading.Barrier(len(tables))

    def commit(table: str) -> int:
        start.wait()
        for n in range(rounds):
            jdbc_spark.sql(f"INSERT INTO {table} VALUES ({n}, 'r{n}')")
            jdbc_spark.sql(f"MERGE INTO {table} t USING (SELECT {n} AS id, 'm{n}' AS name) s ON t.id = s.id "
                           "WHEN MATCHED THEN UPDATE SET t.name = s.name")
        return len(_rows(jdbc_spark, f"SELECT snapshot_id FROM {table}.snapshots"))

    with ThreadPoolExecutor(len(tables)) as pool:
        snapshots = list(pool.map(commit, tables))
    assert snapshots == [2 * rounds] * len(tables)
    for table in tables:
        assert _rows(jdbc_spark, f"SELECT id, name FROM {table} ORDER BY id") == [(n, f"m{n}") for n in range(rounds)]
