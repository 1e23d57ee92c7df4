"""Shared fixtures: paths of the real traces in ../shared/data and small synthetic traces."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from tailbound.traces import Trace

# Property tests check values, not speed: no per-example deadline (the 2-core machines run other
# jobs). CI replays a fixed sequence of examples (``CI`` set by ``.ci/run``) so that a red run is
# reproducible; local runs keep exploring new random examples.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: The shared data folder beside the project (never copied into the repository): the first
#: ``shared/data`` among the ancestors, so that git worktrees nested deeper find it too.
_HERE = Path(__file__).resolve()
DATA = next(
    (p / "shared" / "data" for p in _HERE.parents if (p / "shared" / "data").is_dir()),
    _HERE.parents[1].parent / "shared" / "data",
)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def wc62_dir(data_dir: Path) -> Path:
    """The WorkloadCompactor example data (``shared/data/wc62``)."""
    return data_dir / "wc62"


@pytest.fixture
def small_trace() -> Trace:
    """Ten requests, mixed reads and writes, with offsets."""
    rng = np.random.default_rng(7)
    time = np.cumsum(rng.exponential(0.01, 10))
    return Trace.from_arrays(
        time=time,
        op=rng.integers(0, 2, 10),
        size=rng.choice([4096, 8192, 65536], 10),
        offset=rng.integers(0, 1 << 30, 10),
        name="small",
    )


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


@pytest.fixture(autouse=True)
def _fit_cache_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Commands run by the tests keep their MMPP fit cache in a temporary folder, never in the
    user's ~/.cache."""
    monkeypatch.setenv("TAILBOUND_CACHE", str(tmp_path_factory.getbasetemp() / "fit-cache"))
