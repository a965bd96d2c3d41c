"""Debezium 3.6.3 connector properties lakecdc accepts without effect, and why.

Every property Debezium's connector configurations define (``PostgresConnectorConfig.ALL_FIELDS``
and its MySQL, SQL Server and Oracle siblings, the schema history stores, the signal channels) is
accepted so that a Debezium ``.properties`` file loads unchanged. Each one is either applied with
Debezium's effect, or listed here with the reason it changes nothing in lakecdc; capture start logs
one warning per listed property the file sets (``CommonConnectorConfig.not_applied_properties``).

``tests/unit/config/test_config_every_debezium_property.py`` keeps this list honest against the
definitions dumped from Debezium's classes (``tests/data/debezium/connector_fields.json``): every
name here is one Debezium defines for that connector, and no name here is read by the code that
captures from it. The README's configuration section is rendered from it (``render_markdown``).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CONNECTORS", "no_effect", "reason_for", "render_markdown"]

CONNECTORS = ("postgres", "mysql", "sqlserver", "oracle")

_JVM = "runs inside Debezium's Java runtime (a Java class or JVM tuning); lakecdc is not a JVM process"
_NO_PLUGINS = "names a Java plug-in class; lakecdc cannot load Java classes and uses its built-in behaviour"
_METRICS = "tunes Debezium's JMX metrics; lakecdc reports its own metrics (lakecdc status)"
_INTERNAL = "an internal Debezium switch for its own engine; lakecdc has no such code path"
_ONE_THREAD = "lakecdc snapshots one table at a time, so there is no snapshot thread pool to size"
_CONFIG_BASED = ("only read with snapshot.mode=configuration_based, which lakecdc does not offer (choose "
                 "initial, no_data, always... instead)")
_OPENLINEAGE = "lakecdc has no OpenLineage integration; no lineage events are sent"
_FETCH = "lakecdc reads rows in its own fixed batches through a server-side cursor; memory stays bounded"
_NO_QUERY_TIMEOUT = "lakecdc's queries run without a client-side timeout (the server's own timeouts apply)"
_PROPAGATE = ("lakecdc does not add the __debezium.source.column.* parameters to field schemas; the "
              "column's type is in the schema's name and parameters as without the property")
_COMMENTS = "lakecdc does not copy table and column comments into schemas"
_DELAY = "lakecdc starts at once; to delay, start the capture later"
_CUSTOM_QUERY = "only read with snapshot.query.mode=custom, which needs a Java class; lakecdc refuses it"
_NO_RESTART = ("lakecdc's capture is not restarted after a retriable error: it retries in place, "
               "errors.max.retries times in a row (unset: 10), waiting 1 s and doubling up to 30 s")

# Shared by the four connectors (CommonConnectorConfig and RelationalDatabaseConnectorConfig).
COMMON: dict[str, str] = {
    "column.propagate.source.type": _PROPAGATE,
    "datatype.propagate.source.type": _PROPAGATE,
    "connection.validation.timeout.ms": _JVM,
    "converters": "custom Kafka Connect value converters are Java classes; lakecdc converts values as Debezium's "
                  "built-in converters do",
    "custom.metric.tags": _METRICS,
    "custom.sanitize.pattern": _METRICS,
    "statistics.metrics.enabled": _METRICS,
    "internal.advanced.metrics.enable": _INTERNAL,
    "internal.log.position.check.enable": _INTERNAL,
    "internal.snapshot.scan.all.columns.force": _INTERNAL,
    "executor.shutdown.timeout.ms": _JVM,
    "guardrail.collections.max": "lakecdc does not limit how many tables one connector captures",
    "guardrail.collections.limit.action": "lakecdc does not limit how many tables one connector captures",
    "heartbeat.topics.prefix": "Debezium 3.6 itself names heartbeat topics with topic.heartbeat.prefix; this older "
                               "name is accepted and not used",
    "incremental.snapshot.watermarking.strategy": "lakecdc writes both open and close watermarks to the signal "
                                                  "table (Debezium's default insert_insert)",
    "legacy.snapshot.max.threads": _ONE_THREAD,
    "snapshot.max.threads.multiplier": _ONE_THREAD,
    "snapshot.tables.order.by.row.count": "lakecdc snapshots tables in table.include.list order, then by name",
    "max.queue.size.in.bytes": "lakecdc bounds its queue by record count (max.queue.size) only",
    "memory.management.schemas.class": _NO_PLUGINS,
    "memory.management.tables.class": _NO_PLUGINS,
    "post.processors": _NO_PLUGINS,
    "sourceinfo.struct.maker": _NO_PLUGINS,
    "topic.naming.strategy": "lakecdc names topics as Debezium's default SchemaTopicNamingStrategy does",
    "transaction.metadata.factory": _NO_PLUGINS,
    "snapshot.mode.custom.name": "snapshot.mode=custom needs a Java class; lakecdc refuses snapshot.mode=custom",
    "notification.enabled.channels": "lakecdc does not emit Debezium notifications",
    "notification.sink.topic.name": "lakecdc does not emit Debezium notifications",
    "signal.poll.interval.ms": "lakecdc reads the Kafka signal channel between batches of the capture loop",
    "snapshot.delay.ms": _DELAY,
    "streaming.delay.ms": _DELAY,
    "openlineage.integration.config.file.path": _OPENLINEAGE,
    "openlineage.integration.dataset.kafka.bootstrap.servers": _OPENLINEAGE,
    "openlineage.integration.enabled": _OPENLINEAGE,
    "openlineage.integration.job.description": _OPENLINEAGE,
    "openlineage.integration.job.namespace": _OPENLINEAGE,
    "openlineage.integration.job.owners": _OPENLINEAGE,
    "openlineage.integration.job.tags": _OPENLINEAGE,
    "snapshot.mode.configuration.based.snapshot.data": _CONFIG_BASED,
    "snapshot.mode.configuration.based.snapshot.schema": _CONFIG_BASED,
    "snapshot.mode.configuration.based.start.stream": _CONFIG_BASED,
    "snapshot.mode.configuration.based.snapshot.on.schema.error": _CONFIG_BASED,
    "snapshot.mode.configuration.based.snapshot.on.data.error": _CONFIG_BASED,
    "signal.kafka.poll.timeout.ms": "lakecdc polls the Kafka signal topic between batches with its own short "
                                    "timeout",
    "topic.cache.size": "lakecdc keeps every topic name it has computed; there is no cache to size",
    "topic.heartbeat.name": "lakecdc always names the heartbeat topic <topic.heartbeat.prefix>.<topic.prefix>",
    # the signal file channel (FileSignalChannel)
    "signal.file": "lakecdc's signal channels are source and kafka; the file channel is not built",
}

# schema.history.internal.* of SchemaHistory and its Kafka store (MySQL, SQL Server, Oracle).
_HISTORY_KAFKA = ("tunes Debezium's Kafka schema history client; lakecdc's history store reads and writes "
                  "its topic itself")
SCHEMA_HISTORY: dict[str, str] = {
    "schema.history.internal.connector.class": "set by Debezium for its own history store; not a user setting",
    "schema.history.internal.connector.id": "set by Debezium for its own history store; not a user setting",
    "schema.history.internal.name": "set by Debezium for its own history store; not a user setting",
    "schema.history.internal.prefer.ddl": "lakecdc always rebuilds table structures from the recorded DDL",
    "internal.schema.history.internal.ddl.filter": "lakecdc records every DDL statement its parser reads; "
                                                   "Debezium's internal DDL filter is not applied",
    "schema.history.internal.kafka.buffer.batch.size": _HISTORY_KAFKA,
    "schema.history.internal.kafka.create.timeout.ms": _HISTORY_KAFKA,
    "schema.history.internal.kafka.query.timeout.ms": _HISTORY_KAFKA,
    "schema.history.internal.kafka.recovery.attempts": _HISTORY_KAFKA,
    "schema.history.internal.kafka.recovery.poll.interval.ms": _HISTORY_KAFKA,
}

POSTGRES: dict[str, str] = {
    "include.schema.comments": _COMMENTS,
    "database.query.timeout.ms": _NO_QUERY_TIMEOUT,
    "database.sslfactory": "names a Java SSL socket factory; lakecdc connects through libpq",
    "poll.interval.ms": "lakecdc waits on the replication socket and handles each message as it arrives",
    "query.fetch.size": _FETCH,
    "snapshot.fetch.size": _FETCH,
    "retriable.restart.connector.wait.ms": "lakecdc's PostgreSQL capture is not restarted after a retriable "
                                           "error: it reconnects after slot.retry.delay.ms, errors.max.retries "
                                           "times in a row (unset: slot.max.retries)",
    "replica.identity.autoset.values": "lakecdc does not change tables' REPLICA IDENTITY; set it with ALTER TABLE",
    "schema.refresh.mode": "with pgoutput (lakecdc's only plug-in) a table's columns come from its Relation "
                           "messages and an unchanged TOASTed value comes marked as such (the placeholder), so "
                           "Debezium's two modes give the same events",
    "slot.stream.params": "lakecdc starts pgoutput with its own options (proto_version, publication_names, "
                          "messages)",
    "snapshot.include.collection.list": "lakecdc snapshots every captured table",
    "snapshot.isolation.mode": "lakecdc's snapshot always reads in one REPEATABLE READ transaction on the "
                               "slot's exported snapshot (as serializable does, without the extra locks)",
    "snapshot.locking.mode": "lakecdc's snapshot takes no table locks (Debezium's default, none)",
    "snapshot.locking.mode.custom.name": _NO_PLUGINS,
    "snapshot.query.mode.custom.name": _CUSTOM_QUERY,
    "xmin.fetch.interval.ms": "lakecdc does not put xmin in source (it stays null, as with the default 0)",
}

MYSQL: dict[str, str] = {
    "retriable.restart.connector.wait.ms": _NO_RESTART,
    "binlog.buffer.size": "lakecdc decodes each transaction as its events arrive; no look-ahead buffer",
    "database.jdbc.driver": "names a Java JDBC driver; lakecdc connects with PyMySQL",
    "database.protocol": "names a Java JDBC protocol; lakecdc connects with PyMySQL",
    "database.query.timeout.ms": _NO_QUERY_TIMEOUT,
    "database.server.id.offset": "only used by Debezium's own schema-history recovery connection",
    "database.ssl.keystore": "Java key stores are not read; lakecdc's MySQL connection does not use TLS client "
                             "certificates",
    "database.ssl.keystore.password": "Java key stores are not read",
    "database.ssl.truststore": "Java trust stores are not read",
    "database.ssl.truststore.password": "Java trust stores are not read",
    "database.ssl.mode": "not applied: lakecdc connects to MySQL without requesting TLS",
    "ddl.parser.type": "lakecdc parses DDL with its own parser (Debezium's only parser is antlr)",
    "enable.time.adjuster": "lakecdc takes two-digit years as the server stores them",
    "gtid.ignore.on.recovery": "lakecdc's snapshot recovery does not read GTIDs",
    "incremental.snapshot.allow.schema.changes": "an incremental snapshot reads the table's current structure "
                                                 "for each chunk",
    "min.row.count.to.stream.results": _FETCH,
    "poll.interval.ms": "lakecdc hands each binlog event on as it arrives",
    "query.fetch.size": _FETCH,
    "snapshot.fetch.size": _FETCH,
    "snapshot.include.collection.list": "lakecdc snapshots every captured table",
    "snapshot.lock.timeout.ms": "lakecdc waits for its snapshot locks as long as the server allows "
                                "(lock_wait_timeout)",
    "snapshot.query.mode.custom.name": _CUSTOM_QUERY,
    "use.nongraceful.disconnect": "lakecdc closes the binlog connection normally",
}

SQLSERVER: dict[str, str] = {
    "snapshot.max.threads": _ONE_THREAD,
    "include.schema.comments": _COMMENTS,
    "data.query.mode": "lakecdc reads changes through the cdc.fn_cdc_get_all_changes_* functions",
    "database.query.timeout.ms": _NO_QUERY_TIMEOUT,
    "heartbeat.action.query": "lakecdc's SQL Server capture does not run a heartbeat action query",
    "incremental.snapshot.allow.schema.changes": "an incremental snapshot stops at a capture instance change",
    "incremental.snapshot.option.recompile": "lakecdc's chunk queries carry no OPTION(RECOMPILE)",
    "streaming.fetch.size": _FETCH,
}

_ORACLE_OTHER_ADAPTER = "only used by the XStream and OpenLogReplicator adapters; lakecdc uses LogMiner"
_ORACLE_BUFFER = ("lakecdc's buffer beyond memory is a local SQLite spill file (log.mining.buffer.type=sqlite, "
                  "also chosen by ehcache and infinispan_*); Ehcache's and Infinispan's own cache settings have "
                  "no counterpart")
_ORACLE_LOGMINER = "tunes Debezium's LogMiner session; lakecdc's mining loop has no such setting"
ORACLE: dict[str, str] = {
    "snapshot.max.threads": _ONE_THREAD,
    "retriable.restart.connector.wait.ms": _NO_RESTART,
    "include.schema.comments": _COMMENTS,
    "archive.destination.name": "lakecdc mines the logs V$ARCHIVED_LOG lists for every destination",
    "capture.mode": "lakecdc captures data changes only (Debezium's default)",
    "heartbeat.action.query": "lakecdc's Oracle capture does not run a heartbeat action query",
    "legacy.decimal.handling.strategy": "lakecdc maps NUMBER columns as Debezium 3's current strategy does",
    "log.mining.archive.log.only.scn.poll.interval.ms": _ORACLE_LOGMINER,
    "log.mining.buffer.deferred.transaction.retention.ms": _ORACLE_LOGMINER,
    "log.mining.buffer.deferred.transaction.start": _ORACLE_LOGMINER,
    "log.mining.buffer.ehcache.events.config": _ORACLE_BUFFER,
    "log.mining.buffer.ehcache.global.config": _ORACLE_BUFFER,
    "log.mining.buffer.ehcache.processedtransactions.config": _ORACLE_BUFFER,
    "log.mining.buffer.ehcache.schemachanges.config": _ORACLE_BUFFER,
    "log.mining.buffer.ehcache.transactions.config": _ORACLE_BUFFER,
    "log.mining.buffer.infinispan.cache.events": _ORACLE_BUFFER,
    "log.mining.buffer.infinispan.cache.global": _ORACLE_BUFFER,
    "log.mining.buffer.infinispan.cache.processed_transactions": _ORACLE_BUFFER,
    "log.mining.buffer.infinispan.cache.schema_changes": _ORACLE_BUFFER,
    "log.mining.buffer.infinispan.cache.transactions": _ORACLE_BUFFER,
    "log.mining.buffer.track.client_id": _ORACLE_LOGMINER,
    "log.mining.buffer.track.commit_timestamp": _ORACLE_LOGMINER,
    "log.mining.buffer.track.rs_id": _ORACLE_LOGMINER,
    "log.mining.buffer.track.start_timestamp": _ORACLE_LOGMINER,
    "log.mining.buffer.track.username": _ORACLE_LOGMINER,
    "log.mining.clientid.include.list": "not applied: changes of every client id are captured",
    "log.mining.clientid.exclude.list": "not applied: changes of every client id are captured",
    "log.mining.continuous.mine": "CONTINUOUS_MINE is gone from Oracle 19c; lakecdc adds the logs itself",
    "log.mining.flush.table.name": _ORACLE_LOGMINER,
    "log.mining.log.count.growth.max": _ORACLE_LOGMINER,
    "log.mining.log.count.min": _ORACLE_LOGMINER,
    "log.mining.path.dictionary": "only used with log.mining.strategy=redo_log_catalog, which lakecdc refuses",
    "log.mining.read.only": _ORACLE_LOGMINER,
    "log.mining.window.max.ms": "lakecdc's next mining window always starts where the last one ended; an open "
                                "transaction (its rows buffered) never holds the window start back, so there is "
                                "no growing window for this limit to advance",
    "internal.log.mining.hash.area.size": _ORACLE_LOGMINER,
    "internal.log.mining.log.backoff.initial.delay.ms": _ORACLE_LOGMINER,
    "internal.log.mining.log.backoff.max.delay.ms": _ORACLE_LOGMINER,
    "internal.log.mining.log.query.max.retries": _ORACLE_LOGMINER,
    "internal.log.mining.max.scn.deviation.ms": _ORACLE_LOGMINER,
    "internal.log.mining.redo.thread.scn.adjustment": _ORACLE_LOGMINER,
    "internal.log.mining.resume.position.interval.ms": _ORACLE_LOGMINER,
    "internal.log.mining.schema_changes.username.exclude.list": _ORACLE_LOGMINER,
    "internal.log.mining.sort.area.size": _ORACLE_LOGMINER,
    "internal.log.mining.sql.relaxed.quote.detection": _ORACLE_LOGMINER,
    "internal.log.mining.transaction.snapshot.boundary.mode": _ORACLE_LOGMINER,
    "internal.log.mining.use.cte.query": _ORACLE_LOGMINER,
    "internal.object.id.cache.size": _INTERNAL,
    "internal.snapshot.enhance.predicate.scn": _INTERNAL,
    "openlogreplicator.host": _ORACLE_OTHER_ADAPTER,
    "openlogreplicator.port": _ORACLE_OTHER_ADAPTER,
    "openlogreplicator.source": _ORACLE_OTHER_ADAPTER,
    "xstream.out.server.name": _ORACLE_OTHER_ADAPTER,
    "poll.interval.ms": "lakecdc's mining loop sleeps per log.mining.sleep.time.*",
    "query.fetch.size": _FETCH,
    "snapshot.fetch.size": _FETCH,
    "rac.nodes": "lakecdc mines the redo threads the database lists; RAC node addresses are not used",
    "schema.history.internal.store.only.captured.databases.ddl": "an Oracle connector captures one database; "
                                                                 "there is no other database's DDL to leave out",
    "secondary.dbname": "Debezium's secondary (standby) connection is not used",
    "secondary.hostname": "Debezium's secondary (standby) connection is not used",
    "secondary.port": "Debezium's secondary (standby) connection is not used",
    "secondary.url": "Debezium's secondary (standby) connection is not used",
    "snapshot.database.errors.max.retries": "a snapshot query error stops the snapshot (0, the default)",
    "snapshot.lock.timeout.ms": "the ROW SHARE locks of snapshot.locking.mode=shared wait as long as Oracle "
                                "makes them wait (LOCK TABLE without a WAIT limit)",
}

# Accepted names outside Debezium's connector definitions (Kafka Connect's, or older Debezium names);
# ``passthrough.NOT_APPLIED_*`` decides which are reported, this gives the reason.
KAFKA_CONNECT: dict[str, str] = {
    "transaction.topic": "Debezium 3.6 itself names the transaction topic with topic.transaction; this older name "
                         "is accepted and not used",
    # EmbeddedEngineConfig (Debezium Server, the embedded engine): the first wait of the engine's retry of a
    # task that failed to start or poll. errors.retry.delay.max.ms is also Kafka Connect's (ConnectorConfig),
    # and lakecdc applies it with that meaning: the longest wait between retries of a failing transform.
    "errors.retry.delay.initial.ms": "Debezium's embedded engine waits this long before retrying a task that "
                                     "failed to start or poll; lakecdc's capture reconnects with its own back-off, "
                                     "which this property does not change",
}
# Kafka Connect's dead letter queue is a sink connector's (KIP-298): SinkConnectorConfig defines
# errors.deadletterqueue.*, and Worker.sourceTaskReporters gives a source task a LogReporter only, so
# Connect accepts these properties on a source connector and ignores them without a warning (checked in
# Kafka 4.3.0's connect-runtime, the one Debezium 3.6.3's embedded engine ships).
KAFKA_CONNECT_PREFIXES: dict[str, str] = {
    "errors.deadletterqueue.": "Kafka Connect's dead letter queue exists for sink connectors only (KIP-298: "
                               "SinkConnectorConfig defines these properties, and Worker.sourceTaskReporters gives a "
                               "source task a log reporter only), so on a source connector such as Debezium's Connect "
                               "ignores them without a warning. Records a transform or the converter fails on are "
                               "skipped with errors.tolerance=all and logged with errors.log.enable=true",
}
_PLUGIN = "a Kafka Connect plug-in setting; lakecdc does not run Kafka Connect plug-ins"

# SQL Server keeps no schema history at all: every schema.history.internal* property is without effect.
_SQLSERVER_HISTORY = ("lakecdc reads each capture instance's structure from the database at every start; it "
                      "keeps no schema history")
SQLSERVER_HISTORY_NAMES = (
    "schema.history.internal", "schema.history.internal.file.filename", "schema.history.internal.kafka.topic",
    "schema.history.internal.kafka.bootstrap.servers", "schema.history.internal.skip.unparseable.ddl",
    "schema.history.internal.store.only.captured.tables.ddl",
    "schema.history.internal.store.only.captured.databases.ddl", *SCHEMA_HISTORY,
)
_HISTORIZED = ("mysql", "oracle")
_BY_CONNECTOR: dict[str, dict[str, str]] = {
    "postgres": POSTGRES, "mysql": MYSQL, "sqlserver": SQLSERVER, "oracle": ORACLE,
}


def no_effect(connector: str | None) -> dict[str, str]:
    """Property -> reason for ``connector`` (``None``: the shared properties only)."""
    found = dict(COMMON)
    if connector in _HISTORIZED:
        found.update(SCHEMA_HISTORY)
    if connector == "sqlserver":
        found.update(dict.fromkeys(SQLSERVER_HISTORY_NAMES, _SQLSERVER_HISTORY))
    if connector is not None:
        found.update(_BY_CONNECTOR[connector])
    return found


def reason_for(connector: str | None, name: str) -> str:
    """Why ``name`` changes nothing (a Debezium property listed here, or a Kafka Connect plug-in name)."""
    by_prefix = next((reason for prefix, reason in KAFKA_CONNECT_PREFIXES.items() if name.startswith(prefix)), None)
    return no_effect(connector).get(name) or KAFKA_CONNECT.get(name) or by_prefix or _PLUGIN


def render_markdown(titles: Mapping[str, str] | None = None) -> str:
    """The README table: one row per property (Debezium's, then Kafka Connect's), its connectors, and
    the reason."""
    titles = titles or {"postgres": "PostgreSQL", "mysql": "MySQL/MariaDB", "sqlserver": "SQL Server",
                        "oracle": "Oracle"}
    rows: dict[tuple[str, str], list[str]] = {}
    for connector in CONNECTORS:
        for name, reason in no_effect(connector).items():
            rows.setdefault((name, reason), []).append(titles[connector])
    # Kafka Connect's and older Debezium names: every connector accepts them
    for name, reason in [*KAFKA_CONNECT.items(), *((f"{p}*", r) for p, r in KAFKA_CONNECT_PREFIXES.items())]:
        rows.setdefault((name, reason), []).extend(titles[c] for c in CONNECTORS)
    lines = ["| property | connectors | why it has no effect in lakecdc |", "| --- | --- | --- |"]
    for (name, reason), connectors in sorted(rows.items()):
        where = "all" if len(connectors) == len(CONNECTORS) else ", ".join(connectors)
        lines.append(f"| `{name}` | {where} | {reason} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m lakecdc.config.no_effect: the README table
    print(render_markdown(), end="")
