"""wc62 workloads for the policy tests, characterised once per session.

The Rust rbGen builds all 186 r-b curves in a few seconds, so there is no cache between runs;
the full set is still only used by ``slow`` tests, the fast tests use a subset: the 12 smallest
traces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.model import Cluster, Tenant, load_cluster, load_tenants
from tailbound.policies.workload import TenantCurves, characterize_all
from tailbound.profiles import SsdProfile
from tailbound.traces.readers import read_trace


@pytest.fixture(scope="session")
def wc62_cluster(wc62_dir: Path) -> Cluster:
    return load_cluster(wc62_dir / "cluster.json")


@pytest.fixture(scope="session")
def wc62_tenants(wc62_dir: Path) -> list[Tenant]:
    return list(load_tenants(wc62_dir / "tenants.json").tenants)


def _characterize(configs: list[Tenant], wc62_dir: Path) -> list[TenantCurves]:
    cluster = load_cluster(wc62_dir / "cluster.json")
    return characterize_all(
        configs,
        lambda c: read_trace(c.trace),
        profile=SsdProfile.load(wc62_dir / "profile_ssd.json"),
        link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
    )


@pytest.fixture(scope="session")
def wc62_subset(wc62_tenants: list[Tenant], wc62_dir: Path) -> list[TenantCurves]:
    """The 12 tenants with the smallest traces, in tenants.json order."""
    smallest = sorted(wc62_tenants, key=lambda c: c.trace.stat().st_size)[:12]
    chosen = [c for c in wc62_tenants if c in smallest]
    return _characterize(chosen, wc62_dir)


@pytest.fixture(scope="session")
def wc62_all(wc62_tenants: list[Tenant], wc62_dir: Path) -> list[TenantCurves]:
    """All 62 tenants (for ``slow`` tests)."""
    return _characterize(wc62_tenants, wc62_dir)
