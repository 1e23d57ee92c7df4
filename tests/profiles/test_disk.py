from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailbound.errors import ConfigError
from tailbound.profiles import (
    DiskModel,
    DiskProfile,
    SeekCurve,
    SsdModel,
    SsdProfile,
    load_profile,
    stage_model,
)
from tailbound.profiles.disk import sequential_mask
from tailbound.stages import Stage
from tailbound.traces import Trace
from tailbound.traces.synthetic import FixedSize, SequentialRuns, poisson_trace

T1, AVG, FULL = 0.001, 0.0085, 0.018


def profile(history: int = 4) -> DiskProfile:
    # 6000 rpm: half a revolution is 5 ms; 100 MB/s: 100 kB transfer in 1 ms
    return DiskProfile(
        rpm=6000,
        track_to_track_seek_s=T1,
        average_seek_s=AVG,
        full_stroke_seek_s=FULL,
        capacity_bytes=10**12,
        transfer_bandwidth=1e8,
        sequential_history=history,
    )


# -------------------------------------------------------------------------------- seek curve
def test_seek_curve_endpoints_and_knee_by_hand() -> None:
    c = SeekCurve(T1, AVG, FULL)
    x0 = c.knee
    # a from the full-stroke condition: t1 + a√x0 + a/(2√x0)(1 − x0) = tf
    a = (FULL - T1) / (math.sqrt(x0) + (1 - x0) / (2 * math.sqrt(x0)))
    assert c.sqrt_coefficient == pytest.approx(a)
    assert float(c(0.0)) == 0.0
    assert float(c(1.0)) == pytest.approx(FULL)
    assert float(c(x0 / 4)) == pytest.approx(T1 + a * math.sqrt(x0) / 2)
    x = (1 + x0) / 2
    assert float(c(x)) == pytest.approx(T1 + a * math.sqrt(x0) + a / (2 * math.sqrt(x0)) * (x - x0))


def test_seek_curve_mean_is_average_seek() -> None:
    c = SeekCurve(T1, AVG, FULL)
    assert c.mean_random_seek() == pytest.approx(AVG, rel=1e-9)
    # second route: Monte Carlo over uniformly random request pairs
    u = np.random.default_rng(0).random((2, 2_000_000))
    assert float(c(np.abs(u[0] - u[1])).mean()) == pytest.approx(AVG, rel=0.002)


@given(
    t1=st.floats(1e-4, 2e-3),
    span=st.floats(2e-3, 3e-2),
    where=st.floats(0.01, 0.99),
)
def test_seek_curve_is_concave_increasing_and_continuous(
    t1: float, span: float, where: float
) -> None:
    tf = t1 + span
    avg = t1 + span * (1 / 3 + where * (8 / 15 - 1 / 3))
    c = SeekCurve(t1, avg, tf)
    x = np.linspace(1e-6, 1.0, 2001)
    y = c(x)
    assert np.all(np.diff(y) >= -1e-15)
    assert np.all(np.diff(y, 2) <= 1e-12)
    below, above = c(c.knee * (1 - 1e-9)), c(min(c.knee * (1 + 1e-9), 1.0))
    assert float(above - below) == pytest.approx(0.0, abs=1e-9)
    assert c.mean_random_seek() == pytest.approx(avg, rel=1e-6)


@pytest.mark.parametrize(
    ("t1", "avg", "tf"),
    [(0.001, 0.005, 0.018), (0.001, 0.011, 0.018), (0.002, 0.001, 0.018), (0.0, 0.008, 0.018)],
)
def test_seek_curve_rejects_impossible_average(t1: float, avg: float, tf: float) -> None:
    with pytest.raises(ConfigError, match="Seek"):
        SeekCurve(t1, avg, tf)


# -------------------------------------------------------------------------------- disk model
def test_disk_tokens_by_hand() -> None:
    p = profile(history=1)
    cap = 10**12
    size = 100_000  # 1 ms of transfer
    trace = Trace.from_arrays(
        time=[0.0, 1.0, 2.0, 3.0, 4.0],
        op=[0, 0, 1, 0, 1],
        size=[size] * 5,
        offset=[0, size, cap - size, 2 * size, 2 * size],
    )
    tokens = DiskModel(p).tokens(trace)
    c = p.seek
    expected = [
        AVG + 0.005 + 0.001,  # first request: no history, average seek
        0.001,  # sequential: transfer only
        float(c((cap - 3 * size) / cap)) + 0.005 + 0.001,  # far away
        float(c((cap - 2 * size) / cap)) + 0.005 + 0.001,  # back near the start
        float(c(size / cap)) + 0.005 + 0.001,  # re-read of the same block: a short seek
    ]
    assert tokens.tolist() == pytest.approx(expected)
    assert expected[2] == pytest.approx(FULL + 0.006, abs=1e-5)


def test_disk_tokens_without_offsets_are_random() -> None:
    trace = Trace.from_arrays(time=[0.0, 1.0], op=[0, 1], size=[4096, 200_000])
    tokens = DiskModel(profile()).tokens(trace)
    assert tokens.tolist() == pytest.approx([AVG + 0.005 + 4096e-8, AVG + 0.005 + 2e-3])


def test_disk_history_window_keeps_interleaved_streams_sequential() -> None:
    # two sequential streams, interleaved: A0 B0 A1 B1 A2 B2
    a, b, s = 0, 10**9, 4096
    off = np.array([a, b, a + s, b + s, a + 2 * s, b + 2 * s])
    size = np.full(6, s)
    assert sequential_mask(off, size, 1).tolist() == [False] * 6
    assert sequential_mask(off, size, 2).tolist() == [False, False, True, True, True, True]
    trace = Trace.from_arrays(time=np.arange(6.0), op=np.zeros(6), size=size, offset=off)
    with_history = DiskModel(profile(history=2)).tokens(trace)
    assert with_history[2:].tolist() == pytest.approx([s / 1e8] * 4)


@given(history=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_sequential_mask_matches_definition(history: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = rng.choice([512, 1024], 30)
    off = rng.integers(0, 8, 30) * 512
    mask = sequential_mask(off, size, history)
    for i in range(30):
        window = range(max(0, i - history), i)
        assert mask[i] == any(off[i] == off[j] + size[j] for j in window)


def test_disk_tokens_count_runs_of_a_sequential_trace() -> None:
    # every run start pays positioning, every continuation only transfer (cross-check with
    # the synthetic SequentialRuns pattern)
    t = poisson_trace(
        500.0, 20.0, seed=4, sizes=FixedSize(65536), offsets=SequentialRuns(10**12, 8.0)
    )
    assert t.offset is not None
    tokens = DiskModel(profile(history=1)).tokens(t)
    transfer = 65536 / 1e8
    positioned = tokens > transfer * 1.5
    run_starts = np.concatenate([[True], t.offset[1:] != t.offset[:-1] + 65536])
    assert np.array_equal(positioned, run_starts)
    assert run_starts.mean() == pytest.approx(1 / 8, abs=0.02)


# ---------------------------------------------------------------------------- JSON and loading
def test_disk_profile_json_round_trip(tmp_path: Path) -> None:
    p = profile()
    path = tmp_path / "disk.json"
    path.write_text(json.dumps(p.to_json()))
    q = load_profile(path)
    assert isinstance(q, DiskProfile) and q == DiskProfile.load(path)
    assert q.to_json() == p.to_json() and q.rotational_latency_s == pytest.approx(0.005)


def test_load_profile_dispatches_ssd(tmp_path: Path) -> None:
    path = tmp_path / "ssd.json"
    document = {
        "type": "storageSSD",
        "bandwidthTable": [{"requestSize": 512, "readBandwidth": 1e6, "writeBandwidth": 5e5}],
    }
    path.write_text(json.dumps(document))
    p = load_profile(path)
    assert isinstance(p, SsdProfile) and p.read_bandwidth.tolist() == [1e6]


def test_load_profile_of_shared_data(data_dir: Path) -> None:
    assert isinstance(load_profile(data_dir / "wc62" / "profile_ssd.json"), SsdProfile)


def test_stage_model_chooses_by_profile() -> None:
    assert isinstance(stage_model(Stage.STORAGE, profile=profile()), DiskModel)
    ssd = SsdProfile(np.array([512.0]), np.array([1e6]), np.array([1e6]))
    assert isinstance(stage_model(Stage.STORAGE, profile=ssd), SsdModel)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"type": "storageTape"}, "type"),
        ({"type": None}, "type"),
        ({"rpm": -5}, "rpm"),
        ({"rpm": "fast"}, "rpm"),
        ({"averageSeekTime": 0.02}, "averageSeekTime"),
        ({"capacityBytes": 0}, "capacityBytes"),
        ({"sequentialHistory": 1.5}, "sequentialHistory"),
        ({"transferBandwidth": None}, "transferBandwidth"),
    ],
)
def test_load_profile_bad_fields_name_file_and_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    document = {**profile().to_json(), **change}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError, match=rf"bad\.json, field {field}"):
        load_profile(path)


def test_load_profile_missing_field_and_bad_json(tmp_path: Path) -> None:
    document = profile().to_json()
    del document["fullStrokeSeekTime"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError, match="field fullStrokeSeekTime: missing"):
        load_profile(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        load_profile(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_profile(tmp_path / "absent.json")


@given(seed=st.integers(0, 2**32 - 1), history=st.integers(0, 5))
def test_disk_tokens_bounded_by_transfer_and_worst_positioning(seed: int, history: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    size = rng.choice([4096, 65536], n)
    # small offsets so that sequential matches happen often
    offset = rng.integers(0, 64, n) * 4096
    trace = Trace.from_arrays(
        time=np.arange(n, dtype=float), op=np.zeros(n), size=size, offset=offset
    )
    p = profile(history=history)
    tokens = DiskModel(p).tokens(trace)
    transfer = size / 1e8
    sequential = sequential_mask(offset, size, history)
    assert np.array_equal(tokens[sequential], transfer[sequential])
    positioned = tokens[~sequential] - transfer[~sequential]
    # a random access pays at least the rotation, at most a full stroke and the rotation
    assert np.all(positioned >= p.rotational_latency_s - 1e-15)
    assert np.all(positioned <= FULL + p.rotational_latency_s + 1e-12)
