"""Every notebook under notebooks/ runs headless (nbclient, the python3 kernel of this
interpreter) in its own temporary working directory, without an error; the key cells of the ones
we know show what they are meant to show."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.integration

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Text that must appear in the notebook's outputs (notebooks not listed only have to run cleanly).
EXPECTED_OUTPUT: dict[str, list[str]] = {
    "time_travel_audit.ipynb": [
        "pipeline tables written under",
        # LSN 0/2050 is covered by batch 2 (complete through 0/2100): id 2 deleted, id 1 updated
        "rows at LSN 0/2050: [(1, 'ann@example.com'), (3, 'cy@example.com')]",
        "ops of id 1: r -> u -> u",
        "1 added, 1 removed, 1 changed between versions",
        "plots saved: True True",
    ],
    "data_quality.ipynb": [
        "all rules passed: True",
        "GX success: True",
        "failed rules: ['no_resurrected_deletes', 'silver_matches_bronze_replay']",
        "rows quarantined; keys: ['{\"id\": 2}']",
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_headless(path: Path, tmp_path: Path) -> None:
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
