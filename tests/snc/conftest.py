"""Fixtures of the SNC tests: tenants files over the wc62 traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


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
