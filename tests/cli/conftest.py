from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def wc62_dir() -> Path:
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data" / "wc62"
        if candidate.is_dir():
            return candidate
    pytest.skip("shared data not found beside the project")
