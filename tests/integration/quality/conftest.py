"""Quality tests build their tables through the real writers with the writers' own batch harness
(``tests/integration/ingest/writer_harness.py``), imported from where it lives."""

from __future__ import annotations

import sys
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parents[1] / "ingest"
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))
