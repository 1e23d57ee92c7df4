from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.policies.baselines import (
    average_rate,
    effective_bandwidth,
    effective_bandwidth_rate,
    knee,
)
from tailbound.policies.registry import build
from tailbound.policies.server import Placed, latency_bounds
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


def test_effective_bandwidth_meets_the_slo_alone_with_zero_buckets(
    wc62_subset: list[TenantCurves],
) -> None:
    for w in wc62_subset:
        limits = effective_bandwidth(w)
        if limits is None:
            continue
        rate, bucket = limits
        assert np.all(bucket == 0)
        bound = latency_bounds([Placed(w)], rate[None, :], bucket[None, :])[0]
        assert bound <= w.slo_s * (1 + 1e-9)


def test_effective_bandwidth_rate_is_the_smallest(wc62_subset: list[TenantCurves]) -> None:
    from tailbound.dnc import shaper_delay, token_bucket_min

    c = wc62_subset[0].curves[STORAGE_PATH[1]]
    alpha = token_bucket_min(c.rates, c.buckets)
    r = effective_bandwidth_rate(c, 0.05)
    assert shaper_delay(alpha, r, 0.0) == pytest.approx(0.05, abs=1e-9) or r == c.mean_rate
    assert shaper_delay(alpha, r * 0.99, 0.0) > 0.05


def test_average_rate_reads_the_bucket_off_the_curve(wc62_subset: list[TenantCurves]) -> None:
    w = wc62_subset[0]
    limits = average_rate(w, 2.0)
    assert limits is not None
    rate, bucket = limits
    for s, stage in enumerate(STORAGE_PATH):
        assert rate[s] == pytest.approx(min(2.0 * w.mean(stage), 0.999))
        assert bucket[s] == pytest.approx(float(w.curves[stage].bucket_at(rate[s])))


def test_knee_minimises_rate_plus_bucket(wc62_subset: list[TenantCurves]) -> None:
    w = wc62_subset[1]
    limits = knee(w)
    assert limits is not None
    rate, bucket = limits
    for s, stage in enumerate(STORAGE_PATH):
        c = w.curves[stage]
        assert rate[s] + bucket[s] <= np.min(np.minimum(c.rates, 0.999) + c.buckets) + 1e-12


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("average-rate:x", "average-rate:K needs a number K > 0"),
        ("average-rate:-1", "average-rate:K needs a number K > 0"),
        ("average-rate:nan", "average-rate:K needs a number K > 0"),
        ("wfq", "unknown placement policy 'wfq'"),
    ],
)
def test_baseline_rejects_unknown_names(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(name, "placement")


def test_effective_bandwidth_places_tenants_under_the_sound_model(
    wc62_subset: list[TenantCurves], wc62_dir: Path
) -> None:
    """Spending the whole SLO in the shapers left no room for the sound model's packet and
    blocking terms: no tenant fitted even alone. With the reserve they fit, and share servers."""
    from tailbound.model import load_cluster
    from tailbound.policies.baselines import EFFECTIVE_BANDWIDTH_RESERVE, Baseline
    from tailbound.policies.placement import FixedPolicy, place
    from tailbound.policies.workloadcompactor import server_model
    from tailbound.profiles import SsdProfile

    cluster = load_cluster(wc62_dir / "cluster.json")
    model = server_model(SsdProfile.load(wc62_dir / "profile_ssd.json"), 125e6, 1500)
    old = place(wc62_subset, cluster, FixedPolicy(Baseline("eb", effective_bandwidth), model))
    assert old.servers_used == 0 and len(old.rejected) == len(wc62_subset)
    new = place(wc62_subset, cluster, build("effective-bandwidth", "placement", model))
    assert not new.rejected
    assert new.servers_used < len(wc62_subset)
    for w in wc62_subset:
        limits = effective_bandwidth(w, reserve=EFFECTIVE_BANDWIDTH_RESERVE)
        assert limits is not None
        rate, bucket = limits
        bound = latency_bounds([Placed(w)], rate[None, :], bucket[None, :], model)[0]
        assert bound <= w.slo_s * (1 - EFFECTIVE_BANDWIDTH_RESERVE) + 1e-3
