"""Access to the real-Debezium PostgreSQL workload output kept under tests/data/events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "events"
WORKLOAD_FILES = (
    "debezium-3.6.3-pg-workload.jsonl",
    "debezium-3.6.3-pg-workload.default-skipped-ops.jsonl",
)


def workload_lines() -> list[tuple[str, int, str]]:
    """(file name, line number, raw line) for every record of both workload files."""
    out = []
    for name in WORKLOAD_FILES:
        text = (DATA_DIR / name).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                out.append((name, number, line))
    return out


def workload_records() -> list[dict[str, Any]]:
    return [json.loads(line) for _, _, line in workload_lines()]


def line_ids() -> list[str]:
    return [f"{name}:{number}" for name, number, _ in workload_lines()]
