"""Databricks task entry point: ingest Debezium topics from Kafka into bronze/silver tables.

Runs as a ``spark_python_task`` (see ``databricks.yml``) on a cluster with the lakecdc wheel
installed; all logic lives in ``lakecdc.ingest.job.run_ingest``. Example task parameters::

    ["--config", "/Workspace/Shared/lakecdc/ingest.yaml", "--trigger", "availableNow"]
"""

from __future__ import annotations

import argparse
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingest_job", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="ingest YAML (topics, tables, formats, state)")
    parser.add_argument("--trigger", default="availableNow",
                        help="availableNow: drain what is there and stop (scheduled jobs); continuous: keep running")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # Imported here so that --help works without Spark or the ingest extras installed.
    from lakecdc.ingest.job import run_ingest

    run_ingest(args.config, args.trigger)


if __name__ == "__main__":
    main(sys.argv[1:])
