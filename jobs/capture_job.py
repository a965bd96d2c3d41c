"""Databricks task entry point: capture one source database into Kafka as Debezium events.

Capture is a long-running Python process (no Spark work): run it on a small single-node job
cluster with the lakecdc wheel installed. All logic lives in
``lakecdc.capture.runner.run_capture``. Example task parameters::

    ["--config", "/Workspace/Shared/lakecdc/postgres-connector.properties"]
"""

from __future__ import annotations

import argparse
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="capture_job", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="Debezium connector .properties or lakecdc YAML")
    parser.add_argument("--sink", default="kafka", help="kafka (from the config), kafka:HOST:PORT or jsonl:PATH")
    parser.add_argument("--stop-when-idle", type=float, default=None,
                        help="stop after this many seconds without changes (default: run until cancelled)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # Imported here so that --help works without the capture drivers installed.
    from lakecdc.capture.runner import run_capture

    run_capture(args.config, sink=args.sink, stop_when_idle=args.stop_when_idle, install_signals=True)


if __name__ == "__main__":
    main(sys.argv[1:])
