"""``tailbound profile --depth-sweep`` on a temporary file (a short run): the sweep's shape,
the profile it writes, and that profile's ``array`` section in a plan's replay."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from tailbound.cli.main import main
from tailbound.model import Slo
from tailbound.plan import Bound, Plan, TenantPlan
from tailbound.profiles.depth_sweep import QUANTILES, measure_depth_sweep, sweep_depths
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.scenario import Scenario
from tailbound.stages import STORAGE_PATH
from tailbound.traces.trace import Trace


def test_sweep_depths_are_powers_of_two_and_the_largest() -> None:
    assert sweep_depths(1) == (1,)
    assert sweep_depths(16) == (1, 2, 4, 8, 16)
    assert sweep_depths(6) == (1, 2, 4, 6)
    with pytest.raises(ValueError):
        sweep_depths(0)


def test_sweep_measures_every_depth_on_a_file(tmp_path: Path) -> None:
    s = measure_depth_sweep(
        tmp_path / "scratch", 4, seconds_per_depth=0.05, file_size=8 << 20, direct=False
    )
    assert s.depths == (1, 2, 4) and s.op == "read" and s.size == 4096
    assert all(x > 0 for x in s.iops)
    assert s.quantiles == QUANTILES
    for row in s.latency_s:
        assert all(b >= a > 0 for a, b in pairwise(row))
    assert not s.direct_io and s.notes  # buffered I/O, as asked, and said


def test_profile_depth_sweep_writes_an_array_section_the_simulator_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "profile.json"
    argv = ["profile", "--target", str(tmp_path / "scratch"), "--depth-sweep", "4"]
    argv += ["--sizes", "4K,16K", "--seconds-per-point", "0.05", "--file-size", "8M"]
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "array model: channels (knee)" in text and "| 4 |" in text
    doc = json.loads(out.read_text())
    assert set(doc["array"]) >= {"channels", "interference", "thrash"}
    assert 1 <= doc["array"]["channels"] <= 4 and 0 <= doc["array"]["interference"] < 1
    assert doc["depthSweep"]["depths"] == [1, 2, 4] and len(doc["depthSweep"]["iops"]) == 3
    profile = SsdProfile.load(out)  # still an SSD profile, measured at depth 1, MPL 4
    assert profile.read_mpl == 4 and len(profile.sizes) == 2

    # a plan replayed with this profile runs the array model at its device
    t = TenantPlan(
        "A", Slo(0.05, 0.99), "s0", "d0", dict.fromkeys(STORAGE_PATH, 0), {}, Bound(0.05, "x")
    )
    trace = Trace.from_arrays(
        time=np.arange(100) * 1e-3, op=np.zeros(100, dtype=np.uint8), size=np.full(100, 4096)
    )
    scenario = scenario_from_plan(
        Plan("x", 1, [t]), {"A": trace}, profile=out, link_bandwidth_bytes_per_s=1e9
    )
    assert scenario["devices"][0]["array"] == doc["array"]
    assert Scenario.from_dict(scenario).devices[0].array is not None

    assert main(["profile", "--nbd", "nbd://127.0.0.1:1/x", "--depth-sweep", "4"]) == 2
