"""The ingest on a Spark cluster: ``local-cluster[2,1,1024]`` runs two executor JVMs, each with its own
Python workers, on this machine. The job (``reader: spark``) must spread the fetching and decoding
over both executors and leave exactly the tables a ``local[2]`` run with the driver's reader leaves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ingest_broker import unique_prefix
from ingest_tables import assert_final_state, delta_exists, delta_rows, publish_golden_with_a_malformed_record

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LAKECDC = Path(sys.executable).with_name("lakecdc")
TABLES = ("silver.customers", "silver.audit_full", "bronze.customers", "bronze.audit_full", "bronze.nopk_events")


def properties(broker, prefix: str, warehouse: Path, state: Path, reader: str) -> dict[str, str]:
    return {"name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
            "warehouse": str(warehouse), "table.format": "delta", "reader": reader,
            "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
            "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(state),
            "batch.max.records": "12", "batch.backlog.max.records": "12", "batch.max.wait.ms": "300"}


def contents(warehouse: Path, prefix: str) -> dict[str, list]:
    out = {}
    for name in TABLES:
        rows = delta_rows(warehouse, f"{prefix}_{name}")
        drop = {"_ingest_ts", "_ingest_date"}
        out[name] = sorted(json.dumps({k: v for k, v in r.items() if k not in drop}, default=str, sort_keys=True)
                           for r in rows)
    return out


def test_executors_of_a_cluster_fetch_and_decode_with_local_results(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("lc")
    publish_golden_with_a_malformed_record(broker, prefix)

    local = tmp_path / "local"
    summary = run_ingest(IngestConfig.from_properties(properties(broker, prefix, local, tmp_path / "s1", "python")),
                         "available-now", spark=spark)
    assert summary.dead_letters == 1

    cluster = tmp_path / "cluster"
    config = tmp_path / "cluster.yaml"
    config.write_text("".join(f"{k}: {json.dumps(v)}\n"
                              for k, v in properties(broker, prefix, cluster, tmp_path / "s2", "spark").items()))
    log = tmp_path / "cluster.log"
    env = {**os.environ, "LAKECDC_SPARK_MASTER": "local-cluster[2,1,1024]", "PYSPARK_PYTHON": sys.executable}
    with log.open("wb") as out:
        done = subprocess.run([str(LAKECDC), "ingest", "--config", str(config), "--trigger", "available-now"],
                              stdout=out, stderr=subprocess.STDOUT, env=env, timeout=900)
    text = log.read_text(errors="replace")
    assert done.returncode == 0, text[-4000:]
    assert "on the Spark executors" in text
    # every batch's records were decoded in tasks; some batch spread them over both executors
    assert "on 2 executor process(es)" in text, text[-4000:]

    assert_final_state(lambda n: delta_rows(cluster, n), lambda n: delta_exists(cluster, n), prefix)
    assert contents(cluster, prefix) == contents(local, prefix)
