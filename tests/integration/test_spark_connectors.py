"""Runs the tests that need Delta's Spark jars and Spark's Kafka source, in a Spark JVM that has them.

Spark fixes its classpath once per process, and a session with those connectors changes what the
job picks on its own (``table.format=delta`` -> Delta through Spark, ``reader=auto`` -> Spark's
Kafka source), so the suite's own JVM runs without them. This test starts a child pytest with
``LAKECDC_SPARK_CONNECTORS=auto`` over ``CONNECTOR_TESTS`` and requires every one of them to pass
there (none skipped). Run them directly the same way:

    LAKECDC_SPARK_CONNECTORS=auto LAKECDC_TEST_CONNECTORS_CHILD=1 \\
        pytest tests/integration/ingest/test_writers_delta_spark.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakecdc.devstack.spark import CONNECTORS, spark_connectors

# the child runs several Delta-through-Spark tests: 7 min 15 s measured for 5 of them under a load near 19
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.first, pytest.mark.timeout(3000)]

ROOT = Path(__file__).resolve().parents[2]
CONNECTOR_TESTS = (
    "tests/integration/ingest/test_writers_delta_spark.py",
    "tests/integration/ingest/test_history_delta_spark.py",
    "tests/integration/quality/test_team_suites.py::test_team_suite_on_a_delta_table_through_spark",
    "tests/integration/quality/test_quality_tables.py::test_rules_on_delta_run_in_spark_when_the_session_has_delta",
    "tests/integration/ingest/test_ingest_spark_source.py::test_golden_records_through_sparks_kafka_source",
    "tests/integration/ingest/test_ingest_range_readers.py::"
    "test_events_held_when_a_run_ends_are_read_again_by_the_next_run[spark-kafka]",
    "tests/integration/ingest/test_hostile_identifiers.py::test_hostile_names_end_to_end[delta-spark-hard]",
)


@pytest.fixture
def tell_run_sh_when_done() -> Iterator[None]:
    """``./run.sh test`` starts its Spark 4.0 runs once this test has ended (``LAKECDC_TEST_FIRST_DONE``)."""
    try:
        yield
    finally:
        if done := os.environ.get("LAKECDC_TEST_FIRST_DONE"):
            Path(done).touch()


@pytest.mark.usefixtures("tell_run_sh_when_done")
def test_connector_tests_pass_in_a_spark_with_delta_and_the_kafka_source(tmp_path: Path) -> None:
    missing = [name for name in CONNECTORS if name not in spark_connectors("auto")]
    if missing:
        pytest.skip(f"the jars of {missing} are not in the jar cache: run scripts/bootstrap.sh on a machine that "
                    "reaches Maven Central")
    report = tmp_path / "connectors.xml"
    env = {**os.environ, "LAKECDC_SPARK_CONNECTORS": "auto", "LAKECDC_TEST_CONNECTORS_CHILD": "1"}
    if cpu_report := env.get("LAKECDC_TEST_CPU_REPORT"):  # the child's tests apart: this test counts them all
        env["LAKECDC_TEST_CPU_REPORT"] = f"{cpu_report}-child"
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *CONNECTOR_TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=2700)
    output = child.stdout[-20000:] + child.stderr[-5000:]
    assert report.exists(), output
    cases = ET.parse(report).getroot().iter("testcase")
    outcomes = {f"{case.get('classname')}::{case.get('name')}":
                next((child_tag.tag for child_tag in case
                      if child_tag.tag in ("failure", "error", "skipped")), "passed")
                for case in cases}
    print("\n".join(f"{name}: {outcome}" for name, outcome in outcomes.items()))
    assert outcomes, output
    not_passed = {name: outcome for name, outcome in outcomes.items() if outcome != "passed"}
    assert not not_passed and child.returncode == 0, f"{not_passed}\n{output}"
