"""Fixtures of the CLI tests: the shared data folder, found from any worktree."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir() -> Path:
    # The project's conftest looks beside the repository; a worktree may sit deeper.
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data"
        if (candidate / "wc62").is_dir():
            return candidate
    pytest.skip("shared data not found")
