"""The array model fitted to a depth sweep (``profiles.array_fit``): exact on the model's own
curves, and recovering known parameters from sweeps the simulator's array device produces
(``sim/array.rs``), the data ``tailbound profile --depth-sweep`` measures on a real device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.profiles.array_fit import fit_array, fit_tail_shape, relative_throughput
from tailbound.profiles.depth_sweep import QUANTILES
from tailbound.sim import Scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("k", "beta", "alpha", "a"), [(4, 0.1, 0.25, 3.0), (6, 0.05, 0.1, 2.5), (1, 0.0, 0.5, 4.0)]
)
def test_fit_is_exact_on_the_models_own_curves(k: int, beta: float, alpha: float, a: float) -> None:
    depths = np.array([1, 2, 3, 4, 5, 6, 8, 12, 16], dtype=float)
    iops = 250.0 * relative_throughput(depths, k, beta, alpha)
    speed = iops / depths / 250.0  # s(D): X(D) = D·s(D)/w
    latency = [[(1 - q) ** (-1 / a) / s for q in QUANTILES] for s in speed]
    fit = fit_array(depths, iops, QUANTILES, latency)
    assert fit.channels == k
    assert fit.interference == pytest.approx(beta, abs=1e-9)
    assert fit.thrash == pytest.approx(alpha, abs=1e-9)
    assert fit.tail_shape == pytest.approx(a, rel=1e-9)
    assert fit.residual < 1e-9


def test_fit_refuses_what_it_cannot_fit() -> None:
    with pytest.raises(ValueError, match="include 1"):
        fit_array([2, 4], [1.0, 2.0], QUANTILES, [[1.0] * 5] * 2)
    with pytest.raises(ValueError, match="positive"):
        fit_array([1, 2], [1.0, 0.0], QUANTILES, [[1.0] * 5] * 2)
    assert fit_tail_shape(QUANTILES, [[1.0] * 5]) is None  # no tail at all


#: The simulated array: knee K, interference β, thrash α, Pareto shape a.
TRUE = {"channels": 4, "interference": 0.1, "thrash": 0.25, "tail_shape": 3.0, "seed": 11}


def simulated_sweep(
    depths: tuple[int, ...], requests: int
) -> tuple[list[float], list[list[float]]]:
    """Throughput (requests per second) and latency quantiles (s) of a closed stream of depth
    ``D`` at the simulator's array device, as a depth sweep measures them."""
    iops, latency = [], []
    for depth in depths:
        device: dict[str, Any] = {
            "name": "raid",
            "host": "s0",
            "profile": "ssd_profile.json",
            "read_mpl": 64,
            "array": TRUE,
        }
        trace = {"kind": "sequential", "requests": requests, "size_bytes": 4096, "op": "read"}
        doc = {
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
        sim = Scenario.from_dict(doc, base=EXAMPLES).simulator()
        sim.run()
        result = sim.results()["vm"]
        iops.append(result.throughput())
        latency.append([float(np.quantile(result.latency, q)) for q in QUANTILES])
    return iops, latency


def test_fit_recovers_the_simulated_arrays_parameters() -> None:
    depths = (1, 2, 3, 4, 6, 8, 12, 16)
    iops, latency = simulated_sweep(depths, 20_000)
    fit = fit_array(depths, iops, QUANTILES, latency)
    assert fit.channels == TRUE["channels"]
    assert fit.interference == pytest.approx(TRUE["interference"], abs=0.02)
    assert fit.thrash == pytest.approx(TRUE["thrash"], abs=0.03)
    assert fit.tail_shape == pytest.approx(TRUE["tail_shape"], rel=0.1)
    assert fit.residual < 0.02
    # the sweep profile's powers of two (1, 2, 4, 8, 16) find the same knee
    sub = [depths.index(d) for d in (1, 2, 4, 8, 16)]
    coarse = fit_array(
        [depths[i] for i in sub], [iops[i] for i in sub], QUANTILES, [latency[i] for i in sub]
    )
    assert coarse.channels == 4 and coarse.thrash == pytest.approx(0.25, abs=0.03)
