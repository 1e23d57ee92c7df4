"""The PriorityMeister experiments' harness: a short Fig. 3.3 run in which PriorityMeister's
simulated latencies, over the whole storage path (client link, server link, device, and back),
stay within its LP bounds, and the baselines configure the simulator as documented."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.experiments.pm_common import percentile_rows, run_policy
from tailbound.experiments.pm_fig33 import build
from tailbound.experiments.wc_common import find_wc62


@pytest.fixture(scope="module")
def profile():
    try:
        return find_wc62() / "profile_ssd.json"
    except Exception:
        pytest.skip("shared data not found")


def test_pm_run_stays_within_its_bounds_end_to_end(profile) -> None:
    setup = build(20.0, 3, profile)
    run = run_policy(setup, "pm", profile, k=5)
    assert run.analysis is not None
    for t in setup.tenants:
        if t.slo is None:
            continue
        worst = float(np.max(run.latency[t.name]))
        assert worst <= run.analysis.bounds[t.name], (t.name, worst, run.analysis.bounds)
    # the file copy is last at every stage
    levels = run.analysis.priorities
    assert all(levels["L"][s] == max(v[s] for v in levels.values()) for s in levels["L"])


@pytest.mark.parametrize("policy", ["ps", "cake", "edf", "byslo"])
def test_baselines_run_and_report_every_latency_tenant(profile, policy: str) -> None:
    setup = build(10.0, 3, profile)
    rows = percentile_rows([run_policy(setup, policy, profile)], setup)
    assert [r["tenant"] for r in rows] == ["A", "B", "C"]
    assert all(r["requests"] > 0 for r in rows)
