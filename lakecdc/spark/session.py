"""The Spark session lakecdc opens where none is active (``lakecdc ingest``/``audit`` outside Databricks or
spark-submit, the local stack, the tests): Iceberg (offline on 3.5, from the jar cache on 4.0), Delta and
Spark's Kafka source from the jar cache.

``spark_session(warehouse)`` returns a ``local[2]`` session with the UI off, few shuffle
partitions, UTC session time zone, the Iceberg SQL extensions, and an Iceberg catalog named
``lake`` (``ICEBERG_CATALOG``) set as the default catalog, so ``CREATE TABLE db.t ... USING
iceberg`` and ``MERGE INTO db.t`` work without a catalog prefix:

- ``catalog="hadoop"`` (default): tables under ``<warehouse>/`` (a path-based catalog);
- ``catalog="jdbc"``: Iceberg's JDBC catalog on ``<warehouse>/iceberg_catalog.db`` (SQLite), the
  same file pyiceberg's ``SqlCatalog("lake", uri="sqlite:///...")`` opens.

Both supported Spark lines (3.5 on Scala 2.12, 4.0 on Scala 2.13) get the same settings: nothing
here differs between them but the jars, which follow the installed PySpark (``lakecdc.spark.jar_cache.spark_line``).
Jars come from ``lakecdc.spark.jars`` unless Maven coordinates are given (parameter
``packages`` or the environment variable ``LAKECDC_SPARK_PACKAGES``, comma separated), which
Spark's own resolver then downloads, e.g.
``LAKECDC_SPARK_PACKAGES=org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0,io.delta:delta-spark_2.12:3.3.2``.

Connectors (parameter ``connectors`` or ``LAKECDC_SPARK_CONNECTORS``): ``delta`` (Delta Lake's
Spark jars, its SQL extension, and ``DeltaCatalog`` as ``spark_catalog`` beside Iceberg's ``lake``)
and ``spark-kafka`` (Spark's Kafka source), from the jars ``scripts/bootstrap.sh`` fetched from Maven
Central (``lakecdc.spark.jar_cache``). ``none`` (the default), ``auto`` (every connector whose jars
are cached) or a comma-separated list (an absent one is an error naming the bootstrap). They are
opt-in because a session that has them changes what the job picks on its own: ``table.format=delta``
becomes Delta through Spark (``delta_in_session``) and ``reader=auto`` Spark's Kafka source.
Spark fixes the classpath when its JVM starts: the first session of a process decides.

The driver starts with the class-data archive the bootstrap built for this environment, when there
is one (``lakecdc.spark.class_archive``: about a third less CPU for a short job's JVM).
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lakecdc.errors import SparkSetupError
from lakecdc.spark.class_archive import archive_options
from lakecdc.spark.jars import iceberg_jars, sqlite_jdbc_jar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakecdc.config.ingest import IngestConfig

ICEBERG_CATALOG = "lake"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
DELTA_EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
JDBC_CATALOG_FILE = "iceberg_catalog.db"
CatalogKind = Literal["hadoop", "jdbc"]
#: how long a SQLite catalog commit waits for another connection's write (sqlite-jdbc: 3 s)
JDBC_BUSY_TIMEOUT_MS = 30_000
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
CONNECTORS = ("delta", "spark-kafka")
CONNECTORS_ENV = "LAKECDC_SPARK_CONNECTORS"
JVM_OPTIONS_ENV = "LAKECDC_JVM_OPTIONS"
_DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
_JAVA_OPTIONS_KEYS = (_DRIVER_OPTIONS, "spark.executor.extraJavaOptions")
#: A driver JVM that ran out of memory exits instead of living on half-broken: an OutOfMemoryError in
#: one of Spark's own threads (e.g. the one serving ``toArrow`` results to Python) kills that thread
#: without completing what Python waits on, and the job hung there forever. Spark's executors already
#: exit on it (``SparkUncaughtExceptionHandler``); a dead driver is what ``lakecdc.spark.jvm_exit`` explains.
DRIVER_EXIT_ON_OOM = "-XX:+ExitOnOutOfMemoryError"
#: Arrow data handed to Spark above this size becomes an RDD of Arrow batches, not a ``LocalRelation``.
#: Spark's default (``spark.sql.execution.arrow.localRelationThreshold``, 48 MB) keeps a frame below it
#: as rows in the driver's heap, and the optimizer (``ConvertToLocalRelation``) copies those rows again
#: for every plan that reads them: a 100,000-event batch and its bronze identity window (a self-join
#: reads it four times) filled a 1 GB driver. Small frames (most batches at real rates) stay local,
#: where they need no Spark job.
LOCAL_RELATION_MAX_BYTES = 4 * 1024 * 1024
LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"
#: Spark evaluates expressions interpreted instead of compiling Java for every plan (whole-stage
#: codegen, Janino). A micro-batch runs a few dozen small statements, and compiling them, not their
#: rows, took the driver JVM's CPU: at 1,000 changes/s the JVM used 1.1 of 2 cores, Janino 14 % and
#: class loading 8 % of it (JFR), the rows' own tasks 22 %. Measured 2026-11-30 on 2 cores: source
#: commit to silver p99 0.74x (Delta) and 0.71x (Iceberg) of compiled (``bench_latency.py``), a
#: 600,000-event Iceberg drain 56.9 s against 58.1 s (``bench_ingest.py``). ``factoryMode`` is an
#: internal Spark setting (Spark's own test suites run every expression interpreted with it);
#: ``extra_conf`` overrides both. Sessions lakecdc did not start (Databricks) are left as they are.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
#: Spark's own defaults for the same settings: ``compiled``.
COMPILED = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
_compiled_lock = threading.Lock()
_compiled_blocks: dict[int, tuple[int, bool]] = {}  # id(session) -> (blocks open, whether switched)


@contextmanager
def compiled(spark: SparkSession) -> Iterator[None]:
    """Spark's compiled evaluation (``COMPILED``) for the statements run in the block, then the
    session's own settings again.

    ``INTERPRETED`` pays off where a statement's rows are few (a micro-batch); a statement over a
    whole table spends its time in its rows, where compiled code is faster: the quality rules on a
    1M-row Iceberg table took 48.1 s compiled against 62.4 s interpreted (2026-11-30, idle 2-core
    machine, ``tests/integration/quality/million_rows.py``). Only a session that runs ``INTERPRETED``
    is switched (one lakecdc started); others keep their own settings. The settings belong to the
    session, so statements other threads run meanwhile are compiled too (same results, other speed);
    blocks that overlap, in one thread or several, share one switch: the first sets it, the last puts
    it back.
    """
    key = id(spark)
    with _compiled_lock:
        depth, switched = _compiled_blocks.get(key, (0, False))
        if depth == 0:
            switched = all(spark.conf.get(name, None) == value for name, value in INTERPRETED.items())
            for name, value in COMPILED.items() if switched else ():
                spark.conf.set(name, value)
        _compiled_blocks[key] = (depth + 1, switched)
    try:
        yield
    finally:
        with _compiled_lock:
            depth, switched = _compiled_blocks.pop(key)
            if depth > 1:
                _compiled_blocks[key] = (depth - 1, switched)
            else:
                for name, value in INTERPRETED.items() if switched else ():
                    spark.conf.set(name, value)


def extra_jvm_options() -> list[str]:
    """Flags from ``LAKECDC_JVM_OPTIONS`` for every JVM lakecdc starts on this machine: Spark's driver
    and local executors, the local stack's Kafka broker.

    The test suite sets ``-XX:TieredStopAtLevel=1`` for the JVMs it starts per test: they live for
    seconds or minutes, where the C2 compiler's threads cost more CPU than their code gives back (a
    local Iceberg MERGE workload: 24 s of JVM CPU instead of 40 s). Leave it unset for long-running
    jobs: a long-lived Spark ran the writer tests 35% slower with it.
    """
    return shlex.split(os.environ.get(JVM_OPTIONS_ENV, ""))


def with_jvm_options(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the JVM flags of ``LAKECDC_JVM_OPTIONS`` for the driver and executors, and for the
    driver ``DRIVER_EXIT_ON_OOM`` and the class-data archive's (``lakecdc.spark.class_archive``), before
    the caller's own."""
    conf, jvm_options = dict(conf), extra_jvm_options()
    for key in _JAVA_OPTIONS_KEYS:
        driver_only = [DRIVER_EXIT_ON_OOM, *archive_options()] if key == _DRIVER_OPTIONS else []
        flags = [*jvm_options, *driver_only, conf.get(key, "")]
        if any(flags):
            conf[key] = " ".join(flags).strip()
    return conf


def spark_packages(packages: str | None = None) -> str | None:
    """Maven coordinates to use instead of the offline jars, if the caller or environment set any."""
    chosen = packages if packages is not None else os.environ.get("LAKECDC_SPARK_PACKAGES")
    return chosen.strip() or None if chosen else None


def spark_connectors(requested: str | Sequence[str] | None = None) -> dict[str, list[Path]]:
    """The connectors to put on the classpath, with their cached jars (see the module docstring)."""
    from lakecdc.spark.jar_cache import cached_jars

    chosen = requested if requested is not None else os.environ.get(CONNECTORS_ENV, "none")
    names = [n.strip() for n in chosen.split(",")] if isinstance(chosen, str) else list(chosen)
    names = [n for n in names if n and n != "none"]
    if names == ["auto"]:
        found = {name: cached_jars(name) for name in CONNECTORS}
        return {name: jars for name, jars in found.items() if jars is not None}
    unknown = sorted(set(names) - set(CONNECTORS))
    if unknown:
        raise ValueError(f"unknown Spark connector(s) {unknown} in {CONNECTORS_ENV}: choose from "
                         f"{list(CONNECTORS)}, 'auto' or 'none'")
    connectors: dict[str, list[Path]] = {}
    for name in names:
        jars = cached_jars(name)
        if jars is None:
            raise SparkSetupError(f"the {name} connector's jars are not cached: run "
                                  "scripts/bootstrap.sh on a machine that reaches Maven Central")
        connectors[name] = jars
    return connectors


def iceberg_catalog_conf(warehouse: Path | str, catalog: CatalogKind = "hadoop",
                         name: str = ICEBERG_CATALOG) -> dict[str, str]:
    """Spark settings that define an Iceberg catalog ``name`` over ``warehouse``.

    These are runtime settings: applying them to a running session adds the catalog. For ``jdbc``
    the SQLite file gets the catalog's tables first (``_create_catalog_tables``).
    """
    warehouse_path = Path(warehouse).resolve()
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.warehouse": str(warehouse_path),
        # Several processes (capture tests, pyiceberg, a second job) may commit to the same
        # tables: always read the latest metadata rather than a cached snapshot.
        f"{prefix}.cache-enabled": "false",
    }
    if catalog == "hadoop":
        conf[f"{prefix}.type"] = "hadoop"
    elif catalog == "jdbc":
        conf[f"{prefix}.catalog-impl"] = "org.apache.iceberg.jdbc.JdbcCatalog"
        # WAL journal: a read the catalog leaves open (seen between an apply's commits) would
        # otherwise block the next CREATE NAMESPACE/commit with SQLITE_BUSY "database is locked".
        # A 30 s busy timeout (the driver's default is 3 s): commits of the ingest job and of
        # maintenance running beside it wait for each other's short write instead of failing.
        conf[f"{prefix}.uri"] = (f"jdbc:sqlite:{warehouse_path / JDBC_CATALOG_FILE}"
                                 f"?journal_mode=WAL&busy_timeout={JDBC_BUSY_TIMEOUT_MS}")
        # JdbcCatalog.initialize checks for its tables with DatabaseMetaData.getTables and never
        # closes the ResultSet: once the tables exist, that leaves a read transaction open on a
        # pooled connection until the JVM collects it, and in WAL mode every later read through
        # that connection sees the catalog as it was (an old metadata pointer, whose snapshot files
        # an expiry may have deleted since) and every commit through it fails (SQLITE_BUSY_SNAPSHOT:
        # "Unknown failure"). Each session initializes its own catalog -- also the sessions Iceberg's
        # actions clone for a compaction -- so the tables are created here, once, and never by it.
        _create_catalog_tables(warehouse_path / JDBC_CATALOG_FILE)
        conf[f"{prefix}.jdbc.init-catalog-tables"] = "false"
    else:
        raise ValueError(f"unknown Iceberg catalog kind {catalog!r}: use 'hadoop' or 'jdbc'")
    return conf


#: Iceberg's JDBC catalog tables (``JdbcUtil``, schema V0), exactly as ``JdbcCatalog.initialize`` creates
#: them on SQLite; pyiceberg's ``SqlCatalog`` reads the same two.
_CATALOG_TABLES = (
    "CREATE TABLE IF NOT EXISTS iceberg_tables(catalog_name VARCHAR(255) NOT NULL,table_namespace VARCHAR(255) "
    "NOT NULL,table_name VARCHAR(255) NOT NULL,metadata_location VARCHAR(1000),previous_metadata_location "
    "VARCHAR(1000),PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,namespace "
    "VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),PRIMARY KEY (catalog_name, "
    "namespace, property_key))",
)


def _create_catalog_tables(path: Path) -> None:
    """Iceberg's JDBC catalog tables in the SQLite file (created with its folder when absent)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, timeout=JDBC_BUSY_TIMEOUT_MS / 1000)) as conn, conn:
        for statement in _CATALOG_TABLES:
            conn.execute(statement)


def spark_session(warehouse: Path | str, catalog: CatalogKind = "hadoop", app_name: str = "lakecdc",
                  packages: str | None = None, extra_conf: dict[str, str] | None = None,
                  catalog_name: str = ICEBERG_CATALOG,
                  connectors: str | Sequence[str] | None = None) -> SparkSession:
    """A local SparkSession with Iceberg (and Delta, Spark's Kafka source when asked) enabled.

    Spark keeps one JVM per process: jars and memory are fixed by the first call. A later call
    for another warehouse or catalog kind returns a new session on the same JVM (own SQL
    settings and catalogs); the same warehouse again returns the running session.
    """
    from pyspark.sql import SparkSession

    warehouse_path = Path(warehouse).resolve()
    warehouse_path.mkdir(parents=True, exist_ok=True)
    maven = spark_packages(packages)
    extensions = [ICEBERG_EXTENSIONS]
    builder = (
        SparkSession.builder.appName(app_name)
        .master(os.environ.get("LAKECDC_SPARK_MASTER", "local[2]"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", os.environ.get("LAKECDC_SPARK_DRIVER_MEMORY", "1g"))
        .config("spark.sql.warehouse.dir", str(warehouse_path / "spark-warehouse"))
        .config("spark.sql.defaultCatalog", catalog_name)
        .config(LOCAL_RELATION_THRESHOLD, str(LOCAL_RELATION_MAX_BYTES))
    )
    local_jars = [] if maven else [str(jar) for jar in iceberg_jars()]
    chosen = spark_connectors(connectors)
    for jars in chosen.values():
        local_jars.extend(str(jar) for jar in jars)
    # The SQLite driver is always added when present: jars are fixed when the JVM starts, and a
    # later session on the same JVM may ask for the JDBC catalog.
    sqlite_jar = _optional_sqlite_jar(required=catalog == "jdbc")
    if sqlite_jar is not None:
        local_jars.append(str(sqlite_jar))
    if local_jars:
        builder = builder.config("spark.jars", ",".join(local_jars))
    if maven:
        builder = builder.config("spark.jars.packages", maven)
    if "delta" in chosen or (maven and ("delta-spark" in maven or "delta-core" in maven)):
        # Delta owns the session catalog (spark_catalog.db.t, and two-part names when the default
        # catalog is spark_catalog); Iceberg keeps its own catalog `lake`. Each extension only
        # rewrites plans over its own tables.
        extensions.append(DELTA_EXTENSIONS)
        builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        # Delta rebuilds a table's snapshot in 50 partitions by default (sized for clusters); on
        # local[2] that made every table read and commit of a small table take seconds.
        builder = builder.config("spark.databricks.delta.snapshotPartitions", "2")
    builder = builder.config("spark.sql.extensions", ",".join(extensions))
    conf = with_jvm_options({**INTERPRETED, **(extra_conf or {})})
    for key, value in conf.items():
        builder = builder.config(key, value)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (UDFs, mapInPandas, foreachBatch helpers) must run this interpreter, not
    # whatever `python3` is first on PATH (without the venv's pyarrow, pandas and lakecdc).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("LAKECDC_SPARK_LOG_LEVEL", "WARN"))
    catalog_conf = iceberg_catalog_conf(warehouse_path, catalog, catalog_name)
    if _defines_other_catalog(session, catalog_conf, catalog_name):
        # Spark builds a catalog once per name and session; a session with its own SQL state
        # (same JVM, same jars) can define the name afresh over this warehouse.
        session = session.newSession()
    for key, value in catalog_conf.items():
        session.conf.set(key, value)
    session.conf.set("spark.sql.defaultCatalog", catalog_name)
    return session


def _optional_sqlite_jar(required: bool) -> Path | None:
    try:
        return sqlite_jdbc_jar()
    except SparkSetupError:
        if required:
            raise
        return None


def _defines_other_catalog(session: SparkSession, wanted: dict[str, str], name: str) -> bool:
    prefix = f"spark.sql.catalog.{name}"
    current = {key: session.conf.get(key, None) for key in wanted}
    if all(value is None for value in current.values()) and session.conf.get(prefix, None) is None:
        return False
    return current != wanted


def delta_in_spark(spark: SparkSession) -> bool:
    """True when this Spark session can read and write Delta tables (Databricks, or delta-spark
    on the classpath); otherwise lakecdc writes Delta through delta-rs (``deltalake``)."""
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if "delta" in extensions.lower():
        return True
    # Every Databricks Runtime ships Delta (and sets this variable and the usage tags).
    if os.environ.get("DATABRICKS_RUNTIME_VERSION") or \
            spark.conf.get("spark.databricks.clusterUsageTags.sparkVersion", None):
        return True
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:
            return False
        jvm.java.lang.Class.forName("org.apache.spark.sql.delta.catalog.DeltaCatalog")
        return True
    except Exception:  # py4j raises Py4JJavaError for ClassNotFoundException; no JVM on Connect
        return False


#: ``ingest_session``'s line is the ingest job's (``lakecdc ingest`` prints it under this name)
_job_log = logging.getLogger("lakecdc.ingest.job")


def ingest_spark_log(cfg: IngestConfig) -> Path:
    """Where the session ``ingest_session`` starts writes Spark's and Java's own lines."""
    return cfg.progress_dir / "spark.log"


def ingest_session(cfg: IngestConfig, spark_log: Path | None = None) -> SparkSession:
    """The active Spark session (Databricks, spark-submit), else a local one over the
    configuration's warehouse and catalog whose JVM writes its own log lines (log4j, the JVM's
    warnings) to ``spark_log``, by default ``spark.log`` in the job's progress directory: they
    are Spark's business, not the job's output."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.conf.set(LOCAL_RELATION_THRESHOLD, str(LOCAL_RELATION_MAX_BYTES))  # the job's batches, too
        return active
    from lakecdc.spark.output import spark_session_logged

    log_file = spark_log or ingest_spark_log(cfg)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    _job_log.info("Spark's own log: %s", log_file)
    # ``spark_catalog`` is Spark's session catalog (Delta's DeltaCatalog when Delta's jars are on the
    # classpath: Delta through Spark): Iceberg's catalog keeps its own name beside it, not that one.
    iceberg = ICEBERG_CATALOG if cfg.catalog == "spark_catalog" else cfg.catalog
    return spark_session_logged(log_file, cfg.warehouse, catalog=cfg.catalog_type,
                                app_name=f"lakecdc-ingest-{cfg.name}", catalog_name=iceberg)
