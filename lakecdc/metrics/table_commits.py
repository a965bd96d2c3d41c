"""The newest lakecdc commit of a bronze or silver table, read from table metadata without Spark.

Iceberg tables of a Hadoop (path) catalog live under ``<warehouse>/<namespace>/<table>``; their
``metadata/version-hint.text`` names the current ``v<N>.metadata.json``, whose snapshots carry the
commit properties in their summary. Delta tables (delta-rs layout ``<warehouse>/<schema>/<table>``)
carry them in the ``commitInfo`` of each commit. What this returns for one table::

    {"exists": true, "version": 7, "committed_at_ms": 1795336046120, "rows": 1200,
     "properties": {"lakecdc.batch-id": "12", "lakecdc.max-source-ts-ms": "1795336045083", ...}}

Row counts come from the metadata too: Iceberg ``total-records`` minus ``total-position-deletes``
and ``total-equality-deletes`` (merge-on-read deletes one stored row per position delete); Delta the
``num_records`` statistics of the live files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakecdc.lake.progress import PROGRESS_KEY

#: How many commits back to look for a lakecdc commit (compactions may sit on top of it).
LOOKBACK = 50


@dataclass(frozen=True)
class TableCommit:
    """What a table's metadata says about its newest lakecdc commit."""

    exists: bool
    version: int | None = None  # Iceberg snapshot id / Delta version of the lakecdc commit
    committed_at_ms: int | None = None
    rows: int | None = None  # live rows in the current table version
    properties: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"exists": self.exists, "version": self.version, "committed_at_ms": self.committed_at_ms,
                "rows": self.rows, "properties": dict(self.properties)}


def table_path(warehouse: str | Path, name: str, catalog: str | None = None) -> Path:
    """``silver.customers`` -> ``<warehouse>/silver/customers``; a leading catalog part is dropped."""
    parts = name.split(".")
    if len(parts) == 3 and catalog is not None and parts[0] == catalog:
        parts = parts[1:]
    return Path(warehouse, *parts)


def iceberg_commit(path: Path) -> TableCommit:
    """The newest lakecdc snapshot of the Iceberg table at ``path`` (Hadoop catalog layout)."""
    metadata = _iceberg_metadata(path)
    if metadata is None:
        return TableCommit(False)
    snapshots = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
    current = snapshots.get(metadata.get("current-snapshot-id"))
    rows = _iceberg_live_rows(current["summary"]) if current else 0
    snapshot = current
    for _ in range(LOOKBACK):
        if snapshot is None:
            break
        summary = snapshot.get("summary", {})
        if PROGRESS_KEY in summary:
            return TableCommit(True, snapshot["snapshot-id"], snapshot.get("timestamp-ms"), rows,
                               {k: str(v) for k, v in summary.items() if k.startswith("lakecdc.")})
        snapshot = snapshots.get(snapshot.get("parent-snapshot-id"))
    return TableCommit(True, rows=rows)


def _iceberg_metadata(path: Path) -> dict[str, Any] | None:
    meta_dir = path / "metadata"
    hint = meta_dir / "version-hint.text"
    if not hint.exists():
        return None
    version = int(hint.read_text().strip())
    candidates = [meta_dir / f"v{version}.metadata.json", meta_dir / f"v{version}.gz.metadata.json"]
    for candidate in candidates:
        if candidate.exists():
            if candidate.name.endswith(".gz.metadata.json"):
                import gzip

                return json.loads(gzip.decompress(candidate.read_bytes()))
            return json.loads(candidate.read_text(encoding="utf-8"))
    return None


def _iceberg_live_rows(summary: dict[str, Any]) -> int:
    total = int(summary.get("total-records", 0))
    return total - int(summary.get("total-position-deletes", 0)) - int(summary.get("total-equality-deletes", 0))


def delta_commit(path: Path) -> TableCommit:
    """The newest lakecdc commit of the Delta table at ``path``."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return TableCommit(False)
    import pyarrow as pa
    import pyarrow.compute as pc

    table = DeltaTable(str(path))
    actions = pa.table(table.get_add_actions(flatten=True))  # delta-rs 1.x returns arro3 tables
    rows = int(pc.sum(actions.column("num_records")).as_py() or 0) if "num_records" in actions.column_names \
        else None
    for commit in table.history(LOOKBACK):  # newest first
        if PROGRESS_KEY in commit:
            return TableCommit(True, commit.get("version"), commit.get("timestamp"), rows,
                               {k: v for k, v in commit.items() if k.startswith("lakecdc.") and isinstance(v, str)})
    return TableCommit(True, rows=rows)


def read_commit(table_format: str, warehouse: str | Path, name: str, catalog: str | None = None) -> TableCommit:
    """``iceberg`` or ``delta`` table ``name`` under ``warehouse`` (see the module docstring)."""
    path = table_path(warehouse, name, catalog)
    if table_format == "iceberg":
        return iceberg_commit(path)
    if table_format == "delta":
        return delta_commit(path)
    raise ValueError(f"unknown table format {table_format!r} for table {name}: expected iceberg or delta")
