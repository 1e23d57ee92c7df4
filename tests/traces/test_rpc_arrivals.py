"""RPC arrivals for the Aequitas experiments: loads, bursts, patterns, Azure LLM, errors."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.traces.rpc_arrivals import (
    OnOffRpcs,
    PairOnOffRpcs,
    Pattern,
    RpcArrivals,
    all_to_all,
    azure_llm_rpcs,
    incast,
)
from tailbound.traces.sizes import FixedSize, LognormalSizes

RATE = 100e9  # bits/s


def _in_on_gaps(a: RpcArrivals, d: int, burst_load: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows of destination ``d`` and a mask over its gaps: True where the next RPC follows in the
    same ON period (the gap is exactly the RPC's bytes at the burst rate)."""
    rows = np.flatnonzero(a.dst == d)
    gaps = np.diff(a.time_s[rows])
    expected = a.size_bytes[rows[:-1]] * 8.0 / (burst_load * RATE)
    return rows, np.isclose(gaps, expected, rtol=1e-9, atol=1e-15)


def test_on_off_loads_hit_mu_overall_and_rho_during_bursts() -> None:
    rho, mu = 1.4, 0.8
    gen = OnOffRpcs(rho, mu, LognormalSizes(32768.0, 1.0), (0.6, 0.3, 0.1), 4, 2)
    a = gen.generate(all_to_all(8), duration_s=0.2, seed=7)
    load = a.offered_load(RATE)
    assert np.all(np.abs(load - mu) < 0.03 * mu), load
    for d in range(8):
        rows, in_on = _in_on_gaps(a, d, rho)
        gaps = np.diff(a.time_s[rows])
        achieved_rho = 8.0 * a.size_bytes[rows[:-1]][in_on].sum() / (RATE * gaps[in_on].sum())
        assert achieved_rho == pytest.approx(rho, rel=1e-6)
        # 8 RPCs an ON period: 7 of its 8 gaps are inside it
        assert in_on.mean() == pytest.approx(7 / 8, abs=0.01)
        # the fraction of time ON is μ/ρ
        on_time = 8.0 * a.size_bytes[rows].sum() / (rho * RATE)
        assert on_time / a.duration_s == pytest.approx(mu / rho, rel=0.03)
    shares = np.bincount(a.cls, minlength=3) / len(a)
    assert np.allclose(shares, [0.6, 0.3, 0.1], atol=0.01)
    assert np.all(np.diff(a.time_s) >= 0) and a.time_s[0] >= 0 and a.time_s[-1] < a.duration_s
    assert set(np.unique(a.dst)) == set(range(8)) and np.all(a.src != a.dst)


def test_on_off_bursts_are_several_rpcs_of_one_pair() -> None:
    gen = OnOffRpcs(2.0, 0.5, FixedSize(32768), rpcs_per_burst=5, bursts_per_on=1)
    a = gen.generate(all_to_all(5), duration_s=0.05, seed=3)
    for d in range(5):
        rows, in_on = _in_on_gaps(a, d, 2.0)
        src = a.src[rows]
        assert np.all(src[:-1][in_on] == src[1:][in_on])  # a burst stays on one pair
        # ON periods of exactly 5 RPCs (the last may be cut by the end of the run)
        lengths = np.diff(np.flatnonzero(np.r_[True, ~in_on, True]))
        assert np.all(lengths[:-1] == 5) and 1 <= lengths[-1] <= 5


def test_on_off_rho_equal_mu_is_continuous() -> None:
    a = OnOffRpcs(0.5, 0.5, FixedSize(4096)).generate(incast(3), duration_s=1e-3, seed=1)
    gaps = np.diff(a.time_s)
    assert np.allclose(gaps, 4096 * 8 / (0.5 * RATE), rtol=1e-9)


def test_on_off_is_deterministic_with_a_seed() -> None:
    gen = OnOffRpcs(1.4, 0.8, LognormalSizes(32768.0, 1.0), (0.5, 0.5), 3, 2)
    a, b = (gen.generate(all_to_all(4), 0.01, seed=11) for _ in range(2))
    c = gen.generate(all_to_all(4), 0.01, seed=12)
    for name in ("time_s", "src", "dst", "size_bytes", "cls"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert len(a) != len(c) or not np.array_equal(a.time_s, c.time_s)


def test_incast_shape_every_on_period_is_all_senders_at_once() -> None:
    pattern = incast(9, dst=3)
    assert pattern.senders == ((0, 1, 2, 4, 5, 6, 7, 8),)
    a = OnOffRpcs(2.0, 0.4, FixedSize(32768), rpcs_per_burst=2, bursts_per_on=8).generate(
        pattern, duration_s=0.02, seed=5
    )
    assert np.all(a.dst == 3) and set(a.src.tolist()) == {0, 1, 2, 4, 5, 6, 7, 8}
    rows, in_on = _in_on_gaps(a, 3, 2.0)
    bounds = np.flatnonzero(np.r_[True, ~in_on, True])
    full = 0
    for lo, hi in itertools.pairwise(bounds):
        if hi - lo == 16:
            counts = np.bincount(a.src[rows[lo:hi]], minlength=9)
            assert counts.tolist() == [2, 2, 2, 0, 2, 2, 2, 2, 2]
            # round-robin: the first 8 RPCs are the 8 senders' first RPCs
            assert sorted(a.src[rows[lo : lo + 8]].tolist()) == [0, 1, 2, 4, 5, 6, 7, 8]
            full += 1
    assert full >= len(bounds) - 2 and full > 50


def test_pair_traces_split_by_pair() -> None:
    a = OnOffRpcs(1.0, 0.5, FixedSize(1024), (0.5, 0.5)).generate(all_to_all(3), 1e-3, seed=2)
    traces = a.pair_traces()
    assert set(traces) == {(s, d) for s in range(3) for d in range(3) if s != d}
    assert sum(len(t) for t in traces.values()) == len(a)
    t = traces[(1, 0)]
    mask = (a.src == 1) & (a.dst == 0)
    assert np.array_equal(t.time, a.time_s[mask]) and np.array_equal(t.size, a.size_bytes[mask])


def test_azure_llm_rpcs_from_the_real_file(data_dir: Path) -> None:
    path = data_dir / "azure_llm" / "AzureLLMInferenceTrace_code.csv"
    with path.open() as f:
        rows = list(csv.DictReader(f))
    context = np.array([int(r["ContextTokens"]) for r in rows])
    a = azure_llm_rpcs(path, all_to_all(4), seed=1, class_mix=(0.25, 0.75))
    assert len(a) == len(rows) == 8819
    assert a.time_s[0] == 0.0 and np.all(np.diff(a.time_s) >= 0)
    stamps = [np.datetime64(r["TIMESTAMP"].replace(" ", "T")[:26]) for r in rows]
    span_s = (max(stamps) - min(stamps)) / np.timedelta64(1, "us") / 1e6
    assert a.time_s[-1] < a.duration_s and a.duration_s == pytest.approx(span_s, abs=1e-5)
    # sizes: prompt tokens × 4 bytes, the same multiset as the file's (the file is time-sorted)
    assert np.array_equal(np.sort(a.size_bytes), np.sort(np.maximum(context * 4, 1)))
    assert a.size_bytes[0] == int(rows[0]["ContextTokens"]) * 4
    assert np.all(a.src != a.dst) and set(np.unique(a.dst).tolist()) == {0, 1, 2, 3}
    assert np.bincount(a.cls)[0] / len(a) == pytest.approx(0.25, abs=0.02)
    scaled = azure_llm_rpcs(path, all_to_all(4), seed=1, load=0.6, bytes_per_token=2)
    assert scaled.offered_load(RATE).mean() == pytest.approx(0.6, rel=1e-6)
    b = azure_llm_rpcs(path, all_to_all(4), seed=1, class_mix=(0.25, 0.75))
    assert np.array_equal(a.src, b.src) and np.array_equal(a.cls, b.cls)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"burst_load": 0.5, "load": 0.8}, "load"),
        ({"load": 0.0}, "load"),
        ({"load": 1.5, "burst_load": 2.0}, "load"),
        ({"burst_load": float("inf")}, "burst_load"),
        ({"burst_load": -1.0}, "burst_load"),
        ({"class_mix": (0.5, 0.4)}, "class_mix"),
        ({"class_mix": (1.2, -0.2)}, "class_mix"),
        ({"rpcs_per_burst": 0}, "rpcs_per_burst"),
        ({"bursts_per_on": 1.5}, "bursts_per_on"),
        ({"link_rate_bps": 0.0}, "link_rate_bps"),
    ],
)
def test_on_off_bad_parameters_name_the_field(kwargs: dict, field: str) -> None:
    params = {"burst_load": 1.4, "load": 0.8, "sizes": FixedSize(32768)} | kwargs
    with pytest.raises(ConfigError) as e:
        OnOffRpcs(**params)
    assert e.value.field == field and field in str(e.value)


def test_bad_generate_pattern_and_azure_arguments(tmp_path: Path) -> None:
    gen = OnOffRpcs(1.4, 0.8, FixedSize(32768), bursts_per_on=3)
    with pytest.raises(ConfigError, match="bursts_per_on"):
        gen.generate(all_to_all(3), 1.0, seed=0)  # 2 senders per destination
    with pytest.raises(ConfigError, match="duration_s"):
        OnOffRpcs(1.4, 0.8, FixedSize(1)).generate(all_to_all(3), 0.0, seed=0)
    with pytest.raises(ConfigError, match="fan_in"):
        incast(4, fan_in=4)
    with pytest.raises(ConfigError, match="n_hosts"):
        all_to_all(1)
    with pytest.raises(ConfigError, match="senders"):
        Pattern(3, (0,), ((0, 1),))
    with pytest.raises(ConfigError, match="dests"):
        Pattern(3, (5,), ((0, 1),))
    path = tmp_path / "llm.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4,1\n")
    with pytest.raises(ConfigError, match="bytes_per_token"):
        azure_llm_rpcs(path, all_to_all(2), seed=0, bytes_per_token=0)
    with pytest.raises(ConfigError, match="load"):
        azure_llm_rpcs(path, all_to_all(2), seed=0, load=2.0)
    with pytest.raises(ConfigError, match="load"):
        azure_llm_rpcs(path, all_to_all(2), seed=0, load=0.5)  # one request spans no time


def test_pair_on_off_loads_as_the_authors_simulator() -> None:
    """Per pair: bursts of 4 RPCs at ρ / (senders) each, the next burst ρ/μ busy times later."""
    rho, mu, n = 1.4, 0.8, 6
    gen = PairOnOffRpcs(rho, mu, FixedSize(32768), (0.6, 0.3, 0.1), rpcs_per_burst=4)
    a = gen.generate(all_to_all(n), duration_s=0.5, seed=4)
    assert np.all(np.abs(a.offered_load(RATE) - mu) < 0.02 * mu)
    mean_gap = 8.0 * 32768 * (n - 1) / (rho * RATE)
    for s, d in [(0, 1), (3, 2), (5, 4)]:
        t = a.time_s[(a.src == s) & (a.dst == d)]
        m = t.size // 4 * 4
        bursts = t[:m].reshape(-1, 4)
        assert t[0] == 0.0  # synchronised first bursts
        # the 3 gaps inside each burst are the busy-time gaps: mean 1 / (per-pair rate at ρ)
        assert np.diff(bursts, axis=1).mean() == pytest.approx(mean_gap, rel=0.03)
        # burst starts are ρ/μ busy times apart: 4 gaps · ρ/μ on average
        assert np.diff(bursts[:, 0]).mean() == pytest.approx(4 * mean_gap * rho / mu, rel=0.03)
    assert np.allclose(np.bincount(a.cls) / len(a), [0.6, 0.3, 0.1], atol=0.01)
    b = gen.generate(all_to_all(n), duration_s=0.5, seed=4)
    assert np.array_equal(a.time_s, b.time_s) and np.array_equal(a.src, b.src)


def test_pair_on_off_constant_gaps_and_incast() -> None:
    gen = PairOnOffRpcs(2.0, 0.5, FixedSize(32768), rpcs_per_burst=3, poisson=False)
    a = gen.generate(incast(5, dst=4), duration_s=0.01, seed=0)
    assert np.all(a.dst == 4) and set(a.src.tolist()) == {0, 1, 2, 3}
    gap = 8.0 * 32768 * 4 / (2.0 * RATE)
    t = a.time_s[a.src == 2]
    expected = (np.arange(t.size) // 3) * 3 * gap * 4 + (np.arange(t.size) % 3) * gap
    assert np.allclose(t, expected, rtol=1e-9)
    # every sender's bursts coincide: a synchronised incast
    assert np.array_equal(t, a.time_s[a.src == 0])
    with pytest.raises(ConfigError, match="load"):
        PairOnOffRpcs(0.5, 0.9, FixedSize(1))
    with pytest.raises(ConfigError, match="rpcs_per_burst"):
        PairOnOffRpcs(1.0, 0.5, FixedSize(1), rpcs_per_burst=0)
