"""Trace catalogue for the characterisation tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.traces import Trace


def find_shared_data() -> Path | None:
    """``shared/data`` beside the project or beside any folder above it (git worktrees live
    one level deeper than the main checkout)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Overrides the project-wide fixture to also find the data from a git worktree."""
    data = find_shared_data()
    if data is None:
        pytest.skip("shared data not found beside the project")
    return data


def bursty_trace(n: int, seed: int, name: str = "bursty") -> Trace:
    """On/off arrivals: bursts of closely spaced requests separated by long gaps, mixed sizes."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.05, rng.exponential(0.5, n), rng.exponential(1e-4, n))
    gaps[rng.random(n) < 0.1] = 0.0  # simultaneous arrivals
    return Trace.from_arrays(
        time=np.cumsum(gaps),
        op=rng.integers(0, 2, n),
        size=rng.choice([512, 4096, 16384, 65536, 262144], n),
        name=name,
    )
