"""Generated row builders: a table's payload dict from a driver row, shared by the connectors
whose drivers hand rows over as sequences (MySQL/MariaDB, SQL Server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def compile_row_builder(fields: list[tuple[str, int, Callable[[Any], Any] | None]]) -> Callable[[Any], dict[str, Any]]:
    """``values (full row, by position) -> {field: payload value}`` as one generated function:
    a dict display with one entry per field, converters called only where the type needs one."""
    namespace: dict[str, Any] = {}
    entries = []
    for n, (name, position, convert) in enumerate(fields):
        if convert is None:
            entries.append(f"{name!r}: v[{position}]")
        else:
            namespace[f"c{n}"] = convert
            entries.append(f"{name!r}: c{n}(v[{position}])")
    source = "def build(v):\n    return {" + ", ".join(entries) + "}\n"
    exec(source, namespace)  # noqa: S102 - generated from column names (repr-quoted) and positions only
    return namespace["build"]
