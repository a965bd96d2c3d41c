"""The .properties parser against the real thing: java.util.Properties.load (Java 17 on this machine).

Hypothesis generates texts made of the characters that matter to the format (separators, escapes,
comment marks, line breaks, continuations, unicode escapes); Java parses each once in one JVM run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecdc.config.sources import parse_java_properties
from lakecdc.errors import ConfigError

pytestmark = pytest.mark.integration

JAVA = shutil.which("java")
ORACLE = Path(__file__).resolve().parents[2] / "data" / "java" / "PropertiesToJson.java"

PIECES = st.sampled_from([
    "a", "b.c", "key", "x y", "=", ":", " ", "\t", "\f", "\\", "\\\\", "\\=", "\\:", "\\ ", "#", "!",
    "\n", "\r\n", "\r", "\\\n", "\\\r\n", "\\n", "\\t", "\\u0041", "\\u00e9", "\\uZZ", "é", "ü", "\\\\\n",
    "  ", "value", "1", "#comment\n", "!bang\n", "\n   ", "\\\n  ", "k=v\n", "k:v\n", "k v\n",
])
TEXTS = st.lists(PIECES, max_size=30).map("".join)


def java_parse(texts: list[str], work: Path) -> list[dict[str, object]]:
    files = []
    for index, text in enumerate(texts):
        path = work / f"case{index}.properties"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    result = subprocess.run([JAVA, str(ORACLE), *files], capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in result.stdout.splitlines()]


def ours(text: str) -> dict[str, object]:
    try:
        return {"ok": dict(sorted(parse_java_properties(text).items()))}
    except ConfigError as exc:
        return {"error": str(exc)}


@pytest.mark.skipif(JAVA is None, reason="no java executable on PATH (Java 17 is part of the bootstrap)")
def test_parser_agrees_with_java_util_properties(tmp_path: Path) -> None:
    cases: list[str] = []

    @settings(max_examples=400, database=None, suppress_health_check=list(HealthCheck), deadline=None)
    @given(TEXTS)
    def collect(text: str) -> None:
        cases.append(text)

    collect()
    cases += ["a=1\\\n\n b=2", "# c \\\nk=v", "k=\\\n", "\\u00", "k\\\r\n  v", " \\ key = v "]
    expected = java_parse(cases, tmp_path)
    assert len(expected) == len(cases)
    mismatches = []
    for text, java in zip(cases, expected):
        mine = ours(text)
        if "error" in java:
            if "error" not in mine:
                mismatches.append((text, java, mine))
        elif mine != java:
            mismatches.append((text, java, mine))
    assert not mismatches, "\n".join(f"{t!r}: java={j} ours={m}" for t, j, m in mismatches[:10])
