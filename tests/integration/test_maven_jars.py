"""The Maven jar sets and the Spark connector choice: what is looked up, never downloaded here.

Fetching itself runs in scripts/bootstrap.sh (and the connector and Kafka tests use its result);
these check the parts that decide which jars a session gets, on a private empty cache.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lakecdc.devstack.maven import MANIFEST, _artifact_stem, _pom, cached_jars, jar_sets
from lakecdc.devstack.spark import spark_connectors
from lakecdc.errors import SparkSetupError


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "jars"
    monkeypatch.setenv("LAKECDC_JAR_CACHE", str(cache))
    return cache


@pytest.mark.parametrize(("jar", "stem"), [
    ("jackson-core-2.15.2.jar", "jackson-core"),
    ("spark-sql-kafka-0-10_2.12-3.5.7.jar", "spark-sql-kafka-0-10_2.12"),
    ("spark-token-provider-kafka-0-10_2.12-3.5.7.jar", "spark-token-provider-kafka-0-10_2.12"),
    ("netty-buffer-4.1.105.Final.jar", "netty-buffer"),
    ("zstd-jni-1.5.5-4.jar", "zstd-jni"),
    ("antlr4-runtime-4.9.3.jar", "antlr4-runtime"),
    ("kafka_2.13-3.9.2.jar", "kafka_2.13"),
])
def test_artifact_names_are_read_from_jar_file_names(jar: str, stem: str) -> None:
    assert _artifact_stem(jar) == stem


def test_the_generated_pom_lists_each_coordinate() -> None:
    for jar_set in jar_sets("3.5.7").values():
        root = ET.fromstring(_pom(jar_set))
        ns = {"m": "http://maven.apache.org/POM/4.0.0"}
        listed = [":".join(d.find(f"m:{f}", ns).text for f in ("groupId", "artifactId", "version"))  # type: ignore[union-attr]
                  for d in root.iterfind("m:dependencies/m:dependency", ns)]
        assert listed == list(jar_set.coordinates)
    assert jar_sets("3.5.7")["spark-kafka"].coordinates == ("org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7",)


def test_a_set_is_cached_only_once_its_manifest_is_there(empty_cache: Path) -> None:
    delta = jar_sets()["delta"]
    assert cached_jars("delta") is None
    directory = delta.directory()
    directory.mkdir(parents=True)
    (directory / "delta-spark_2.12-3.3.2.jar").write_bytes(b"")
    assert cached_jars("delta") is None  # a fetch that did not finish
    (directory / MANIFEST).write_text("delta-spark_2.12-3.3.2.jar\n")
    assert cached_jars("delta") == [directory / "delta-spark_2.12-3.3.2.jar"]


def test_connectors_are_opt_in_and_a_missing_one_names_the_bootstrap(empty_cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKECDC_SPARK_CONNECTORS", raising=False)
    assert spark_connectors() == {} and spark_connectors("none") == {} and spark_connectors("auto") == {}
    with pytest.raises(SparkSetupError, match="delta connector's jars are not cached: run scripts/bootstrap.sh"):
        spark_connectors("delta")
    with pytest.raises(ValueError, match="unknown Spark connector"):
        spark_connectors("delta,hive")
    monkeypatch.setenv("LAKECDC_SPARK_CONNECTORS", "spark-kafka")
    with pytest.raises(SparkSetupError, match="spark-kafka connector"):
        spark_connectors()
