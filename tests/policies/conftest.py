"""wc62 workloads for the policy tests, characterised once per session and cached on disk.

Building the 186 r-b curves of all 62 traces with the numpy rbGen takes minutes, so the full set
is only used by ``slow`` tests and kept in pytest's cache folder between runs (keyed by the trace
files' sizes and modification times). The fast tests use a subset: the 12 smallest traces.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.policies.inputs import ClusterConfig, TenantConfig, load_cluster, load_tenants
from tailbound.policies.workload import Workload, characterize_all
from tailbound.profiles import SsdProfile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.readers import read_trace


@pytest.fixture(scope="session")
def wc62_cluster(wc62_dir: Path) -> ClusterConfig:
    return load_cluster(wc62_dir / "cluster.json")


@pytest.fixture(scope="session")
def wc62_tenants(wc62_dir: Path) -> list[TenantConfig]:
    return load_tenants(wc62_dir / "tenants.json")


def _characterize(
    request: pytest.FixtureRequest, configs: list[TenantConfig], wc62_dir: Path, key: str
) -> list[Workload]:
    stamp = [[c.name, c.trace.stat().st_size, c.trace.stat().st_mtime] for c in configs]
    cache = request.config.cache
    cached = cache.get(f"tailbound/{key}", None) if cache is not None else None
    if cached is not None and cached.get("stamp") == stamp:
        return [
            Workload(
                c.name,
                c.slo_s,
                {
                    Stage(s): RbCurve(np.array(v[0]), np.array(v[1]), v[2], Stage(s), c.name)
                    for s, v in cached["curves"][c.name].items()
                },
            )
            for c in configs
        ]
    cluster = load_cluster(wc62_dir / "cluster.json")
    workloads = characterize_all(
        configs,
        lambda c: read_trace(c.trace),
        profile=SsdProfile.load(wc62_dir / "profile_ssd.json"),
        link_bandwidth_bytes_per_s=cluster.link_bandwidth_bytes_per_s,
    )
    if cache is not None:
        curves = {
            w.name: {
                str(s): [
                    w.curves[s].rates.tolist(),
                    w.curves[s].buckets.tolist(),
                    w.curves[s].mean_rate,
                ]
                for s in STORAGE_PATH
            }
            for w in workloads
        }
        cache.set(f"tailbound/{key}", {"stamp": stamp, "curves": curves})
    return workloads


@pytest.fixture(scope="session")
def wc62_subset(
    request: pytest.FixtureRequest, wc62_tenants: list[TenantConfig], wc62_dir: Path
) -> list[Workload]:
    """The 12 tenants with the smallest traces, in tenants.json order."""
    smallest = sorted(wc62_tenants, key=lambda c: c.trace.stat().st_size)[:12]
    chosen = [c for c in wc62_tenants if c in smallest]
    return _characterize(request, chosen, wc62_dir, "wc62-subset-v1")


@pytest.fixture(scope="session")
def wc62_all(
    request: pytest.FixtureRequest, wc62_tenants: list[TenantConfig], wc62_dir: Path
) -> list[Workload]:
    """All 62 tenants (slow to build the first time: use only in ``slow`` tests)."""
    return _characterize(request, wc62_tenants, wc62_dir, "wc62-all-v1")
