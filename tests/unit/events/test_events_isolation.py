"""lakecdc.events stays free of Spark and Kafka: capture and ingest share it without either."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import lakecdc.events


def test_events_modules_import_neither_spark_nor_kafka() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(lakecdc.events.__path__))
    assert {"schema", "serde", "logical", "envelope", "source", "positions", "topics", "transaction"} <= set(modules)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module('lakecdc.events.' + name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'confluent_kafka', 'kafka', 'pyarrow', 'py4j'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""
