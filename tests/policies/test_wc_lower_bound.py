"""The lower bound on servers when a level's requests share the device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.experiments.wc_lower_bound import shared_level_bound, shared_level_size
from tailbound.model import Slo
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


def test_size_is_the_best_vertex_of_bucket_plus_slo_times_rate() -> None:
    # T = 100 ms: min(50 ms + 0.1 × 100 ms, 30 ms + 0.5 × 100 ms, 29 ms + 0.999 × 100 ms) = 60 ms
    c = RbCurve(np.array([0.1, 0.5, 2.0]), np.array([0.05, 0.03, 0.0]), 0.1)
    w = TenantCurves("w", Slo(0.1), dict.fromkeys(STORAGE_PATH, c))
    assert shared_level_size(w, 0.1) == pytest.approx(0.6)
    # three of them: 1.8 devices' worth at T = 100 ms, so at least 2
    assert shared_level_bound([w, w.with_slo(0.1, "v"), w.with_slo(0.1, "u")]) == (
        pytest.approx(1.8),
        2,
    )


def test_no_levels_sharing_placement_beats_the_bound(
    wc62_subset: list[TenantCurves], wc62_dir: Path
) -> None:
    from tailbound.experiments.wc_common import server_cluster
    from tailbound.policies.placement import WorkloadCompactorPolicy, place
    from tailbound.policies.workloadcompactor import server_model
    from tailbound.profiles import SsdProfile

    profile = SsdProfile.load(wc62_dir / "profile_ssd.json")
    shared = server_model(profile, 125e6, 1500, None, None)
    for scale in (0.5, 1.0):
        tenants = [w.with_slo(w.slo_s * scale) for w in wc62_subset]
        result = place(tenants, server_cluster(), WorkloadCompactorPolicy(model=shared), grow=True)
        if not result.rejected:
            assert result.servers_used >= shared_level_bound(tenants)[1]
