"""Delta through Spark SQL, for sessions that have Delta (Databricks, or delta-spark on the classpath).

The statements are the Iceberg writer's (``SparkSqlWriter``: the same rendered ``MERGE INTO``);
what differs is how a commit carries lakecdc's properties: Delta's ``userMetadata`` of the commit is
the properties as JSON (``{"lakecdc.progress": "...", "lakecdc.batch-id": "12", ...}``), read back
from ``DESCRIBE HISTORY``'s ``userMetadata`` column.

- appends pass it as the ``userMetadata`` write option (per write);
- SQL ``MERGE`` takes no options: Delta reads ``spark.databricks.delta.commitInfo.userMetadata``
  from the conf of the session running the statement. Tables of a batch are applied in parallel
  threads, so each apply thread runs its MERGE in a session of its own (``newSession()`` with the
  writer session's SQL settings copied; the MERGE source is shared with it as a global temporary
  view): a commit can only ever carry its own table's progress.

Column names Delta cannot store as physical Parquet names (a space or one of ``,;{}()=``, tab,
newline: Delta's ``SchemaUtils.checkFieldNames``) need Delta's column mapping, mode ``name``
(``delta.columnMapping.mode``, reader 2 / writer 5): a table gets it when it is created with such a
column, or before such a column is added. Not on every table: column mapping raises the protocol
every reader of the table must support (older delta-rs, other engines and Delta sharing clients
cannot read it) and Delta's streaming reads refuse some schema changes on mapped tables.

Idempotence comes from what each table records, never from the job's ``state.json``: before
writing, ``LakeWriter`` skips a table whose committed progress already covers the batch's events,
and bronze's position anti-join and silver's ``_seq`` guards make a partial replay harmless. Delta's
own app transactions (``txnAppId``/``txnVersion``) are deliberately not used: keyed on the job's
batch counter, a counter that restarts or repeats (``state.json`` lost, or a kill between a table
commit and the state save) made Delta silently drop batches holding new events; keyed on the
committed Kafka offsets, they would only restate the progress check with less information.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyspark.errors import AnalysisException
from pyspark.sql.types import ArrayType, MapType, StructField, StructType

from lakecdc.lake.layout import DELTA_PARTITION_COLUMN
from lakecdc.lake.progress import PROGRESS_KEY
from lakecdc.lake.schema_evolution import SchemaChange
from lakecdc.writers.spark_sql import SparkSqlWriter, column_ddl, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
GLOBAL_TEMP_DATABASE_CONF = "spark.sql.globalTempDatabase"
HISTORY_LOOKBACK = 100
#: a commit or checkpoint in ``_delta_log`` (``00000000000000000000.json``, ``...checkpoint.parquet``)
_COMMIT_FILE = re.compile(r"^\d{20}\.(json|checkpoint.*\.parquet|crc)$")
#: characters Delta refuses in a column name unless the table has column mapping (``checkFieldNames``)
_NEEDS_MAPPING = frozenset(" ,;{}()\n\t=")
COLUMN_MAPPING = {"delta.minReaderVersion": "2", "delta.minWriterVersion": "5", "delta.columnMapping.mode": "name"}


def needs_column_mapping(fields: Iterable[StructField]) -> bool:
    """True when a column name (nested ones too) holds a character Delta stores only with column mapping."""
    for f in fields:
        if _NEEDS_MAPPING.intersection(f.name):
            return True
        inner = f.dataType
        while isinstance(inner, (ArrayType, MapType)):
            inner = inner.elementType if isinstance(inner, ArrayType) else inner.valueType
        if isinstance(inner, StructType) and needs_column_mapping(inner.fields):
            return True
    return False


def _tblproperties(props: dict[str, str]) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in props.items())


def create_table_sql(full: str, schema: StructType, kind: str) -> str:
    """``CREATE TABLE`` for a Delta table; bronze gets a generated ingest-date partition column."""
    columns = column_ddl(schema)
    partitioning = ""
    if kind == "bronze":
        columns += f", {quote(DELTA_PARTITION_COLUMN)} date GENERATED ALWAYS AS (CAST(_ingest_ts AS DATE))"
        partitioning = f" PARTITIONED BY ({quote(DELTA_PARTITION_COLUMN)})"
    mapping = f" TBLPROPERTIES ({_tblproperties(COLUMN_MAPPING)})" if needs_column_mapping(schema.fields) else ""
    return f"CREATE TABLE IF NOT EXISTS {full} ({columns}) USING delta{partitioning}{mapping}"


def evolve_sql(full: str, change: SchemaChange) -> list[str]:
    """ALTERs for a schema change; widening needs Delta's type widening table feature (Delta 3.2+)."""
    statements = []
    if needs_column_mapping(StructField(c.name, c.data_type) for c in change.add):  # no-op if the table has it
        statements.append(f"ALTER TABLE {full} SET TBLPROPERTIES ({_tblproperties(COLUMN_MAPPING)})")
    if change.add:
        added = ", ".join(f"{quote(c.name)} {c.data_type.simpleString()}" for c in change.add)
        statements.append(f"ALTER TABLE {full} ADD COLUMNS ({added})")
    if change.widen:
        statements.append(f"ALTER TABLE {full} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    for column, _, new_type in change.widen:
        statements.append(f"ALTER TABLE {full} ALTER COLUMN {quote(column)} TYPE {new_type.simpleString()}")
    for column in change.make_nullable:
        statements.append(f"ALTER TABLE {full} ALTER COLUMN {quote(column)} DROP NOT NULL")
    return statements


def user_metadata(props: dict[str, str]) -> str:
    """The commit's ``userMetadata``: lakecdc's properties as compact, key-sorted JSON."""
    return json.dumps(props, sort_keys=True, separators=(",", ":"))


def properties_from_user_metadata(user_metadata: str | None) -> dict[str, str]:
    if not user_metadata:
        return {}
    try:
        parsed = json.loads(user_metadata)
    except ValueError:
        return {}  # someone else's free-text metadata
    return {k: str(v) for k, v in parsed.items()} if isinstance(parsed, dict) and PROGRESS_KEY in parsed else {}


class DeltaSparkWriter(SparkSqlWriter):
    format = "delta"

    def __init__(self, spark: SparkSession, catalog: str | None = None,
                 dead_letter_table: str = "lakecdc.dead_letters", **_: object) -> None:
        super().__init__(spark, catalog, dead_letter_table)
        #: per apply thread: the commit properties of the statement running, and its own session
        self._local = threading.local()

    def _create_table(self, name: str, schema: StructType, kind: str, sort_by: tuple[str, ...] = ()) -> None:
        full = self.resolve(name)
        self._ensure_namespace(name)
        try:
            self.spark.sql(create_table_sql(full, schema, kind))
        except AnalysisException as error:
            if kind != "bronze" or "generated columns" not in str(error):
                raise
            # Open-source Delta on Spark 3.5 refuses GENERATED ALWAYS AS in SQL DDL (Databricks takes
            # it); Delta's DeltaTableBuilder creates the same table.
            self._create_bronze_with_builder(self._parts(name), schema)
        log.info("created Delta %s table %s", kind, full)

    def _create_bronze_with_builder(self, parts: list[str], schema: StructType) -> None:
        """``create_table_sql``'s bronze table through ``io.delta.tables.DeltaTable.createIfNotExists``,
        whose table name is resolved in the session's current catalog (it takes no catalog part)."""
        catalog, rest = parts[0], ".".join(quote(part) for part in parts[1:])
        session = self._commit_session()
        jvm: Any = session._jvm  # None only on Spark Connect, which has no JVM
        jsession = session._jsparkSession
        previous = session.conf.get("spark.sql.defaultCatalog") or "spark_catalog"  # Spark's default
        session.conf.set("spark.sql.defaultCatalog", catalog)
        try:
            tables = jvm.io.delta.tables.DeltaTable
            generated = (tables.columnBuilder(jsession, DELTA_PARTITION_COLUMN).dataType("date")
                         .generatedAlwaysAs("CAST(_ingest_ts AS DATE)").build())
            builder = (tables.createIfNotExists(jsession).tableName(rest)
                       .addColumns(jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()))
                       .addColumn(generated)
                       .partitionedBy(jvm.PythonUtils.toSeq([DELTA_PARTITION_COLUMN])))
            if needs_column_mapping(schema.fields):
                for key, value in COLUMN_MAPPING.items():
                    builder = builder.property(key, value)
            builder.execute()
        finally:
            session.conf.set("spark.sql.defaultCatalog", previous)

    def _registered(self, name: str) -> bool:
        """Whether the catalog knows the table. A local session catalog lives in memory: after a
        restart it has forgotten the tables an earlier process created, whose Delta logs are still at
        their managed locations (``CREATE TABLE`` there is refused). Such a table is registered at
        its location again, so progress and rows are read from the table itself."""
        full = self.resolve(name)
        if self.spark.catalog.tableExists(full):
            return True
        parts = self._parts(name)
        if len(parts) != 3 or parts[0] != "spark_catalog":
            return False
        self._ensure_namespace(name)
        location = f"{self.spark.catalog.getDatabase(parts[1]).locationUri.rstrip('/')}/{parts[2].lower()}"
        jvm: Any = self.spark._jvm  # None only on Spark Connect, which has no JVM
        jsession = self.spark._jsparkSession
        if not jvm.io.delta.tables.DeltaTable.isDeltaTable(jsession, location):
            self._clear_unfinished_create(location)
            return False
        escaped = location.replace("\\", "\\\\").replace("'", "\\'")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {full} USING delta LOCATION '{escaped}'")
        log.info("registered Delta table %s at its location %s again", full, location)
        return True

    def _clear_unfinished_create(self, location: str) -> None:
        """A creation killed before Delta's first commit leaves ``_delta_log`` without a commit (an
        empty ``_commits`` directory, a temporary file), where Delta refuses to create the table
        ever again. Such a leftover holds no data and no commit, and is removed; anything else at
        the location is left for Delta's own error to name."""
        jvm: Any = self.spark._jvm  # None only on Spark Connect, which has no JVM
        path = jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(self.spark._jsc.hadoopConfiguration())
        if not fs.exists(path):
            return
        files = fs.listFiles(path, True)
        while files.hasNext():
            file = files.next().getPath()
            in_log = file.getParent() is not None and "_delta_log" in file.getParent().toString()
            if not in_log or _COMMIT_FILE.match(file.getName()):
                return
        fs.delete(path, True)
        log.warning("removed %s: a Delta table creation there was killed before its first commit", location)

    def _table_schema(self, name: str) -> StructType | None:
        if not self._registered(name):
            return None
        schema = super()._table_schema(name)
        if schema is None:
            return None
        return StructType([f for f in schema.fields if f.name != DELTA_PARTITION_COLUMN])

    def _evolve(self, name: str, change: SchemaChange) -> None:
        for statement in evolve_sql(self.resolve(name), change):
            self.spark.sql(statement)

    def commit_properties(self, name: str) -> dict[str, str]:
        full = self.resolve(name)
        if not self._registered(name):
            return {}
        for row in self.spark.sql(f"DESCRIBE HISTORY {full} LIMIT {HISTORY_LOOKBACK}").select("userMetadata").collect():
            props = properties_from_user_metadata(row["userMetadata"])
            if props:
                return props
        return {}

    def _last_commit(self, name: str) -> tuple[int | None, dict[str, int]]:
        rows = self.spark.sql(f"DESCRIBE HISTORY {self.resolve(name)} LIMIT 1").collect()
        if not rows:
            return None, {}
        metrics = {k: int(v) for k, v in (rows[0]["operationMetrics"] or {}).items() if str(v).isdigit()}
        return int(rows[0]["version"]), {
            "appended": metrics.get("numOutputRows", 0),
            "written": metrics.get("numTargetRowsInserted", 0) + metrics.get("numTargetRowsUpdated", 0),
            "removed": metrics.get("numTargetRowsDeleted", 0),
        }

    def _append_options(self, props: dict[str, str], table: str, batch_id: int) -> dict[str, str]:
        return {"userMetadata": user_metadata(props)}

    @contextmanager
    def _committing(self, props: dict[str, str], table: str, batch_id: int | None) -> Iterator[None]:
        # Remembered for this thread only; _run_merge hands it to this thread's commit session.
        self._local.props = props
        try:
            yield
        finally:
            self._local.props = None

    def _commit_session(self) -> SparkSession:
        """This thread's own session for MERGE commits (created once per thread and writer)."""
        session: SparkSession | None = getattr(self._local, "session", None)
        if session is None:
            session = self.spark.newSession()
            # newSession starts from the SparkContext's settings: copy what was set at runtime on
            # the writer's session (catalogs, shuffle partitions, Delta options). SET names the
            # keys; values come from conf.get, which SET would show redacted. Static and Spark core
            # settings cannot be set on a session (and are the same in both): they are refused.
            for row in self.spark.sql("SET").collect():
                key = row["key"]
                value = self.spark.conf.get(key, None)
                if value is None or session.conf.get(key, None) == value:
                    continue
                try:
                    session.conf.set(key, value)
                except AnalysisException:
                    pass
            self._local.session = session
        return session

    def _run_merge(self, sql_for_view: str, source: DataFrame, view: str) -> None:
        props: dict[str, str] | None = getattr(self._local, "props", None)
        if props is None:
            super()._run_merge(sql_for_view, source, view)
            return
        session = self._commit_session()
        global_db = self.spark.conf.get(GLOBAL_TEMP_DATABASE_CONF, "global_temp")
        # A global temporary view is what another session of the same Spark can read; the
        # session-local view in front of it keeps the rendered MERGE's source name.
        shared = f"{view}_{threading.get_ident()}"
        source.createOrReplaceGlobalTempView(shared)
        session.conf.set(USER_METADATA_CONF, user_metadata(props))
        try:
            session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} AS SELECT * FROM {global_db}.{shared}")
            session.sql(sql_for_view)
        finally:
            session.conf.unset(USER_METADATA_CONF)
            session.catalog.dropTempView(view)
            self.spark.catalog.dropGlobalTempView(shared)
