"""Where the project's shared specification folder is: `shared/` beside the checkout (as CI lays it
out), else the developers' `/work/shared`."""

from __future__ import annotations

from pathlib import Path


def _shared_root() -> Path:
    beside = Path(__file__).resolve().parents[2] / "shared"
    return beside if (beside / "conformance").is_dir() else Path("/work/shared")


SHARED_ROOT = _shared_root()
