"""Every notebook under notebooks/ runs headless (nbclient, the python3 kernel of this
interpreter) in its own temporary working directory, without an error; the key cells of the ones
we know show what they are meant to show."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from lakecdc.devstack.ports import port_is_open

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # each notebook starts Spark; 1-2 min

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Text that must appear in the notebook's outputs (notebooks not listed only have to run cleanly).
EXPECTED_OUTPUT: dict[str, list[str]] = {
    "time_travel_audit.ipynb": [
        "pipeline tables written under",
        # LSN 0/2050 lies inside batch 2's commit: id 1's update (0/2000) is in, id 2's delete (0/2100) not
        "rows at LSN 0/2050: [(1, 'ann@example.com'), (2, 'bob@example.com'), (3, 'cy@example.com')]",
        "ops of id 1: r -> u -> u",
        "1 added, 1 removed, 1 changed between versions",
        "plots saved: True True",
    ],
    "quickstart.ipynb": [
        "capture: 0 snapshot rows",  # the second capture resumes from its offsets
        "silver equals source: True",
        "product 7 renumbered: [Row(id=1007)]",
        "bronze.customers ops: c, d, r, u",
        "silver.customers as of that version equals the source before the changes: True",
        "silver.customers as of that time equals the source before the changes: True",
        "equals the source before the changes: True",
        "customer 1's balance then",
        "changed by 100.00",
        "shipped orders then: 0",
        "is in silver: False",
        "ops of the short-lived customer: c -> u -> d",
        "ops of product 7: r -> d",
        "ops of product 1007: c",
        "stopped the stack and removed",
    ],
    "data_quality.ipynb": [
        "all rules passed: True",
        "GX success: True",
        "after a type drift: ['expect_column_values_to_be_of_type(id)']",
        "failed rules: ['no_resurrected_deletes', 'silver_matches_bronze_replay']",
        "rows quarantined; keys: ['{\"id\": 2}']",
        "team suite success: True",
        "validation pages: 1 - run notebook-1: True",
        "id 4 in silver: False",
        "id 4 in bronze: True",
        "differences: {2: 'missing at the source', 3: 'differs', 5: 'missing in silver'}",
    ],
}


def outputs_text(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        outputs = cell.get("outputs", [])
        # one print() may arrive as several stream chunks: join them as the reader sees them
        parts.append("".join(o["text"] for o in outputs if o.get("output_type") == "stream"))
        for output in outputs:
            for key in ("text/plain", "text/html"):
                if key in output.get("data", {}):
                    parts.append(output["data"][key])
    return "\n".join(parts)


@pytest.fixture
def notebook_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The kernel's temporary directory (it inherits this environment), removed afterwards: the
    notebooks keep their tables in a temporary directory for the reader to look at when done. Not
    under pytest's own, which only root may enter: the embedded PostgreSQL runs as another user."""
    directory = Path(tempfile.mkdtemp(prefix="lakecdc-notebook-test-"))
    directory.chmod(0o711)
    monkeypatch.setenv("TMPDIR", str(directory))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_headless(path: Path, tmp_path: Path, notebook_tmpdir: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    # kernel "python3" is started with this interpreter (jupyter_client swaps the spec's "python"
    # for sys.executable), i.e. the project's .venv when the tests run from it
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    text = outputs_text(notebook)
    for expected in EXPECTED_OUTPUT.get(path.name, []):
        assert expected in text, f"{path.name}: output lacks {expected!r}"
    if path.name == "quickstart.ipynb":
        assert_nothing_left(text)


def assert_nothing_left(text: str) -> None:
    """The quickstart's last cell stops its servers and removes its directory: nothing may still listen or stay."""
    match = re.search(r"broker at ([\d.]+):(\d+), PostgreSQL \d+ on port (\d+), working directory (\S+)", text)
    assert match, "quickstart: output lacks the addresses and directory of the stack it started"
    host, broker_port, pg_port, work = match.groups()
    for name, port in (("its broker", broker_port), ("PostgreSQL", pg_port)):
        assert not port_is_open(int(port), host=host), f"quickstart left {name} listening on {host}:{port}"
    assert not Path(work).exists(), f"quickstart left {work} behind"
