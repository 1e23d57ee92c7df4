"""A disk array's service model (``sim/array.rs``; ``docs/simulator.md``, ``docs/pslo.md``):
through a scenario, the depth sweep of PSLO's Fig. 4 has its shape — violations of a latency
bound growing slowly up to the knee and jumping beyond it, throughput peaking at the knee —
while a device without an ``array`` table keeps throughput independent of depth (processor
sharing at unit rate). Worked cases of the model itself are in its cargo tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.sim import Scenario

#: The examples' folder, whose SSD profile prices each request (seconds on one channel).
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: The knee K, interference β, thrash α and Pareto shape a of the array under test.
ARRAY = {"channels": 4, "interference": 0.1, "thrash": 0.25, "tail_shape": 3.0, "seed": 3}
REQUESTS = 30_000
DEPTHS = (1, 2, 3, 4, 5, 6, 8, 12, 16)


def doc(depth: int, array: dict[str, Any] | None) -> dict[str, Any]:
    """One VM keeping ``depth`` 4 KiB reads outstanding (closed loop, local to the server) at a
    device that admits all of them (so ``depth`` is the depth at the device)."""
    device: dict[str, Any] = {
        "name": "raid",
        "host": "s0",
        "kind": "ssd",
        "profile": "ssd_profile.json",
        "read_mpl": 64,
    }
    if array is not None:
        device["array"] = array
    trace = {"kind": "sequential", "requests": REQUESTS, "size_bytes": 4096, "op": "read"}
    return {
        "hosts": [{"name": "s0"}],
        "devices": [device],
        "workloads": [
            {
                "name": "vm",
                "client": "s0",
                "device": "raid",
                "issue": {"closed": {"outstanding": depth}},
                "trace": {"synthetic": trace},
            }
        ],
    }


def sweep(array: dict[str, Any] | None) -> tuple[float, dict[int, tuple[np.ndarray, float]]]:
    """One request's work (s), and per depth the latencies (s) and the throughput (IOPS)."""
    out = {}
    work = 0.0
    for depth in DEPTHS:
        scenario = Scenario.from_dict(doc(depth, array), base=EXAMPLES)
        model = scenario.devices[0].model
        assert model is not None
        work = float(model.tokens(scenario.workloads[0].trace)[0])
        sim = scenario.simulator()
        sim.run()
        result = sim.results()["vm"]
        assert result.finished.all()
        out[depth] = (result.latency, result.throughput())
    return work, out


def test_array_depth_sweep_has_fig4_shape() -> None:
    work, runs = sweep(ARRAY)
    # the bound: the 99.9th percentile of the tail factor (Pareto(3), mean 1) stretched by the
    # knee's slowdown 1 + β(K − 1) = 1.3; analytically 0.1% violations at the knee
    bound = work * (2.0 / 3.0) * 1000.0 ** (1.0 / 3.0) * 1.3
    violations = {d: float(np.mean(lat > bound)) for d, (lat, _) in runs.items()}
    iops = {d: x for d, (_, x) in runs.items()}
    # slowly up to the knee: (1.3/1.0)^3 ≈ 2.2× from depth 1 to 4 (analytically)
    assert 0.0003 < violations[1] < violations[4] < 0.002
    assert violations[4] < 4.0 * violations[1]
    # a jump beyond it: (2.25)^3 ≈ 11× from depth 4 to 6
    assert violations[6] > 6.0 * violations[4]
    assert all(violations[a] <= violations[b] for a, b in [(6, 8), (8, 12), (12, 16)])
    # throughput peaks at the knee: X(4) = 4/1.3 ≈ 3.1 X(1), X(16) = X(4)/4
    assert max(iops, key=iops.__getitem__) == 4
    assert iops[4] > 2.5 * iops[1]
    assert all(iops[a] < iops[b] for a, b in [(1, 2), (2, 3), (3, 4)])
    assert all(iops[a] > iops[b] for a, b in [(4, 5), (5, 6), (6, 8), (8, 12), (12, 16)])
    assert iops[16] < 0.35 * iops[4]


def test_without_array_throughput_does_not_depend_on_depth() -> None:
    work, runs = sweep(None)
    iops = [x for _, x in runs.values()]
    assert max(iops) / min(iops) < 1.01
    assert iops[0] == pytest.approx(1.0 / work, rel=0.01)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        ({"channels": 0}, "channels"),
        ({"interference": 1.0}, "interference"),
        ({"thrash": -1.0}, "thrash"),
        ({"tail_shape": 1.0}, "tail_shape"),
        ({"knee": 4}, "knee"),
    ],
)
def test_bad_array_tables_name_the_field(mutate: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"array\.{field}"):
        Scenario.from_dict(doc(1, {**ARRAY, **mutate}), base=EXAMPLES)
