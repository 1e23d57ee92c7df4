"""The Rust Perron-root kernel against numpy's eigen-solver (thesis Table 4.1's spectral radius)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound._core import perron_roots


def metzler(generator: np.ndarray, excess: np.ndarray) -> np.ndarray:
    mats = (1.0 + excess)[:, :, None] * generator[None, :, :]
    idx = np.arange(generator.shape[0])
    mats[:, idx, idx] += excess
    return mats


def random_generator(
    rng: np.random.Generator, n: int, scale: float, isolated: int = -1
) -> np.ndarray:
    g = rng.random((n, n)) * scale
    if isolated >= 0:  # a state never entered nor left: a reducible chain
        g[isolated, :] = 0.0
        g[:, isolated] = 0.0
    np.fill_diagonal(g, 0.0)
    np.fill_diagonal(g, -g.sum(axis=1))
    return g


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(3, 10),
    seed=st.integers(0, 2**31),
    log_scale=st.floats(-7, -1),
    log_excess=st.floats(-10, 0),
    reducible=st.booleans(),
)
def test_perron_root_matches_eigenvalues(
    n: int, seed: int, log_scale: float, log_excess: float, reducible: bool
) -> None:
    rng = np.random.default_rng(seed)
    g = random_generator(rng, n, 10.0**log_scale, isolated=n - 1 if reducible else -1)
    excess = rng.random((20, n)) * 10.0**log_excess
    got = perron_roots(g, excess)
    expect = np.linalg.eigvals(metzler(g, excess)).real.max(axis=-1)
    scale = np.abs(metzler(g, excess)).max(axis=(1, 2))
    np.testing.assert_allclose(got, expect, rtol=1e-8, atol=1e-12 * scale.max())
    # never below the root beyond rounding: bounds built on it stay upper bounds
    assert np.all(got >= expect - 1e-12 * scale)


def test_perron_rejects_bad_input() -> None:
    g = random_generator(np.random.default_rng(1), 3, 1e-3)
    with pytest.raises(ValueError):
        perron_roots(g, np.full((1, 3), np.inf))
    with pytest.raises(ValueError):
        perron_roots(g, np.zeros((1, 4)))
