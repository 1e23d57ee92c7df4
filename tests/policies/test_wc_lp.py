from __future__ import annotations

import numpy as np
import pytest
from tests.policies import wc_oracle as oracle

from tailbound.characterize import RbCurve
from tailbound.dnc import StageLoad, multi_stage_delay
from tailbound.model import Slo
from tailbound.policies import wc_lp
from tailbound.policies.server import RATE_CAP, SLO_SCALE, Placed, queue_ids, slos
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


def groups(workloads: list[TenantCurves]) -> list[list[Placed]]:
    """Small co-located groups from the subset, with several SLOs and devices."""
    out = []
    for size in (1, 2, 3, 4):
        for start in range(0, len(workloads) - size + 1, 3):
            out.append(
                [Placed(w, device=k % 2) for k, w in enumerate(workloads[start : start + size])]
            )
    return out


def test_lp_solutions_satisfy_every_constraint(wc62_subset: list[TenantCurves]) -> None:
    solved = 0
    for tenants in groups(wc62_subset):
        lp, _ = wc_lp.build_lp(tenants, devices=2)
        sol = wc_lp.solve(tenants, devices=2)
        if sol is None:
            continue
        solved += 1
        x = np.concatenate(
            [
                np.column_stack([sol.rate, sol.bucket])
                .reshape(len(tenants), 2, 3)
                .transpose(0, 2, 1)
                .reshape(-1),
                list(sol.rate_bounds.values()),
            ]
        )
        ax = lp.dense() @ x
        assert np.all(ax >= lp.row_lower - 1e-7) and np.all(ax <= lp.row_upper + 1e-7)
        assert np.all(x >= lp.col_lower - 1e-9) and np.all(x <= lp.col_upper + 1e-9)
        # every (r, b) on or above its r-b curve, every queue within capacity
        for j, t in enumerate(tenants):
            for s, stage in enumerate(STORAGE_PATH):
                assert sol.bucket[j, s] >= t.workload.curves[stage].bucket_at(sol.rate[j, s]) - 1e-7
        q = queue_ids(tenants)
        for queue in np.unique(q):
            assert sol.rate[q == queue].sum() <= RATE_CAP + 1e-7
    assert solved >= 5


def test_lp_relaxation_is_conservative_for_the_exact_bound(wc62_subset: list[TenantCurves]) -> None:
    # the relaxed LP's (r, b) meet the exact Eq. 5.5 bound of every tenant
    for tenants in groups(wc62_subset):
        sol = wc_lp.solve(tenants, devices=2)
        if sol is None:
            continue
        q = queue_ids(tenants)
        slo = slos(tenants)
        for j in range(len(tenants)):
            loads = []
            for s in range(3):
                same = q[:, s] == q[j, s]
                loads.append(
                    StageLoad(
                        float(sol.bucket[same & (slo <= slo[j]), s].sum()),
                        float(sol.rate[same & (slo < slo[j]), s].sum()),
                    )
                )
            assert multi_stage_delay(loads) <= slo[j] * SLO_SCALE + 1e-7


def test_lp_infeasible_when_bursts_cannot_fit() -> None:
    c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([0.05, 0.01, 0.0]), 0.1)
    w = TenantCurves("w", Slo(0.1), dict.fromkeys(STORAGE_PATH, c))
    assert wc_lp.solve([Placed(w.with_slo(0.1, n)) for n in "ab"]) is not None
    assert wc_lp.solve([Placed(w.with_slo(0.1, n)) for n in "abc"]) is None


def test_lp_rejects_a_tenant_whose_mean_rate_exceeds_the_cap() -> None:
    c = RbCurve(np.array([0.9995, 1.0]), np.array([0.01, 0.0]), 0.9995)
    w = TenantCurves("w", Slo(1.0), dict.fromkeys(STORAGE_PATH, c))
    assert wc_lp.solve([Placed(w)]) is None


def test_lp_priorities_let_a_loose_tenant_take_the_burst() -> None:
    # a tight tenant (10 ms) with a loose one (1 s): the loose one may keep a large bucket
    tight = RbCurve(np.array([0.05, 0.5, 1.0]), np.array([0.01, 0.002, 0.0]), 0.05)
    loose = RbCurve(np.array([0.2, 0.6, 1.0]), np.array([0.2, 0.05, 0.0]), 0.2)
    a = TenantCurves("a", Slo(0.02), dict.fromkeys(STORAGE_PATH, tight))
    b = TenantCurves("b", Slo(1.0), dict.fromkeys(STORAGE_PATH, loose))
    sol = wc_lp.solve([Placed(a), Placed(b)])
    assert sol is not None
    assert sol.bucket[1].sum() > 0.1  # b's bursts only delay b
    # the tight tenant's relaxed bound: its own buckets only (nothing above it)
    assert sol.bucket[0].sum() <= 0.02 * SLO_SCALE + 1e-9
    assert pytest.approx(sol.objective) == float(sol.rate.sum())


def test_screen_never_rejects_a_feasible_lp(wc62_subset: list[TenantCurves]) -> None:
    # certainly_infeasible is a proof of infeasibility: whenever it says so, the LP must agree
    rng = np.random.default_rng(11)
    slo_choices = [0.05, 0.1, 0.25, 1.0]
    said, agreed = 0, 0
    for _ in range(150):
        k = int(rng.integers(1, 7))
        chosen = rng.choice(len(wc62_subset), k, replace=False)
        tenants = [
            Placed(wc62_subset[i].with_slo(float(rng.choice(slo_choices)), f"t{n}"), int(n % 2))
            for n, i in enumerate(chosen)
        ]
        if wc_lp.certainly_infeasible(tenants, k - 1):
            said += 1
            agreed += wc_lp.solve(tenants, devices=2) is None
    assert said == agreed and said > 0


def test_eq57_rows_match_a_row_by_row_build(wc62_subset: list[TenantCurves]) -> None:
    # the vectorised Eq. 5.7 build against the definition, row by row and in the same order
    rng = np.random.default_rng(4)
    for m in range(30):
        k, devices = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        tenants = [
            Placed(
                wc62_subset[int(i)].with_slo(float(rng.choice([0.1, 0.25, 1.0])), f"m{m}t{n}"),
                int(rng.integers(0, devices)),
            )
            for n, i in enumerate(rng.choice(len(wc62_subset), k, replace=False))
        ]
        lp, r_vars = wc_lp.build_lp(tenants, devices)
        a, q, slo, n = lp.dense(), queue_ids(tenants), slos(tenants), len(tenants)
        expected = []
        for v, (level, device) in enumerate(r_vars):
            on = q == np.array([0, 2 + device, 1])[None, :]
            for s in range(3):
                row = np.zeros(a.shape[1])
                for j in np.nonzero(on[:, s] & (slo < level))[0]:
                    row[6 * j + 2 * s] = 1.0
                if row.any():
                    row[6 * n + v] = -1.0
                    expected.append((row, 0.0))
            row = np.zeros(a.shape[1])
            for j, s in zip(*np.nonzero(on & (slo <= level)[:, None]), strict=True):
                row[6 * j + 2 * s + 1] = 1.0
            row[6 * n + v] = level * SLO_SCALE
            expected.append((row, level * SLO_SCALE))
        tail = a[len(a) - len(expected) :]
        assert np.array_equal(tail, np.array([e[0] for e in expected]))
        assert np.array_equal(lp.row_upper[len(a) - len(expected) :], [e[1] for e in expected])


def test_curve_and_capacity_rows_match_a_row_by_row_build(wc62_subset: list[TenantCurves]) -> None:
    # the r-b curve rows (tenant by tenant, stage by stage) then one capacity row per queue
    rng = np.random.default_rng(9)
    for _ in range(20):
        k, devices = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        tenants = [
            Placed(wc62_subset[int(i)], int(rng.integers(0, devices)))
            for i in rng.choice(len(wc62_subset), k, replace=False)
        ]
        lp, r_vars = wc_lp.build_lp(tenants, devices)
        a, q = lp.dense(), queue_ids(tenants)
        expected = []
        for j, t in enumerate(tenants):
            for s, stage in enumerate(STORAGE_PATH):
                coef, rhs = oracle.segment_rows(t.workload.curves[stage])
                for c, r in zip(coef, rhs, strict=True):
                    row = np.zeros(a.shape[1])
                    row[6 * j + 2 * s], row[6 * j + 2 * s + 1] = c, 1.0
                    expected.append((row, r, np.inf))
        for queue in np.unique(q):
            row = np.zeros(a.shape[1])
            for j, s in zip(*np.nonzero(q == queue), strict=True):
                row[6 * j + 2 * s] = 1.0
            expected.append((row, -np.inf, RATE_CAP))
        head = len(expected)
        assert np.array_equal(a[:head], np.array([e[0] for e in expected]))
        assert np.array_equal(lp.row_lower[:head], [e[1] for e in expected])
        assert np.array_equal(lp.row_upper[:head], [e[2] for e in expected])
        assert lp.start.dtype == np.int32 and lp.index.dtype == np.int32
        assert len(lp.col_lower) == 6 * k + len(r_vars)
