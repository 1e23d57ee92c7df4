"""Fixtures of the SNC tests: the shared data folder found from any worktree, tenants files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _find_data() -> Path | None:
    # The project's conftest looks beside the repository; a worktree may sit deeper, so look
    # for ``shared/data`` beside every ancestor.
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data"
        if (candidate / "wc62").is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    found = _find_data()
    if found is None:
        pytest.skip("shared data not found")
    return found


@pytest.fixture
def write_tenants(tmp_path: Path, data_dir: Path):  # type: ignore[no-untyped-def]
    """Write a tenants file whose traces are wc62 traces given by index."""

    def write(tenants: list[dict], **top: object) -> Path:
        docs = []
        for t in tenants:
            doc = dict(t)
            doc["trace"] = str(
                data_dir / "wc62" / "traces" / f"trace{doc.pop('trace_index'):04d}.txt"
            )
            docs.append(doc)
        path = tmp_path / "tenants.json"
        path.write_text(json.dumps({"tenants": docs, **top}))
        return path

    return write
