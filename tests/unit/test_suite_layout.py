"""The test tree collects as a whole: pytest imports test modules by basename (no packages), so two
modules of one name in different directories stop the collection of every run that selects both."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for module in TESTS.rglob("test_*.py"):
        where[module.name].append(str(module.relative_to(TESTS)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}
