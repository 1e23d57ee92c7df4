from __future__ import annotations

import copy
import pickle

import highspy
import numpy as np
import pytest

from tailbound.dnc.highs import solver
from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.policies import wc_lp
from tailbound.policies.placement import Placer, WorkloadCompactorPolicy
from tailbound.policies.server import Placed, check
from tailbound.policies.wc_warm import WarmStarts, carry
from tailbound.policies.workload import TenantCurves


def test_layout_names_every_row_and_column(wc62_subset: list[TenantCurves]) -> None:
    """The layout accounts for each row and column of the LP it was built with, in order: the
    curve rows per tenant, the capacity rows (their rows have no ``R`` column), the Eq. 5.7 rows
    (each ends with its ``R`` column)."""
    for size in (1, 3, 5):
        tenants = [Placed(w, k % 2) for k, w in enumerate(wc62_subset[:size])]
        lp, r_vars, layout = wc_lp.build_lp_laid_out(tenants, 2)
        m = sum(layout.curve_rows)
        assert layout.tenants == size and list(layout.r_vars) == r_vars
        assert len(lp.cost) == 6 * size + len(r_vars)
        assert len(lp.row_lower) == m + len(layout.queues) + len(layout.eq57)
        last = lp.index[lp.start[1:] - 1]
        assert np.all(last[m : m + len(layout.queues)] < 6 * size)
        for k, (level, device, _) in enumerate(layout.eq57):
            assert last[m + len(layout.queues) + k] == 6 * size + r_vars.index((level, device))


def _grow_server(workloads: list[TenantCurves]) -> list[list[Placed]]:
    """Nested tenant lists, each the previous one plus a newcomer, over two devices and SLOs."""
    slos = [0.2, 0.5, 1.0]
    placed = [Placed(w.with_slo(slos[k % 3], f"t{k}"), k % 2) for k, w in enumerate(workloads)]
    return [placed[: k + 1] for k in range(len(placed))]


def test_a_carried_basis_solves_to_the_cold_optimum(wc62_subset: list[TenantCurves]) -> None:
    """HiGHS accepts the incumbents' basis carried onto the LP with a newcomer (new levels,
    devices and queues included), needs fewer iterations than from scratch in total, and ends
    at the same optimal objective; an infeasible LP still yields its dual ray (certificates)."""
    warm = WarmStarts()
    h = solver()
    iterations = {True: 0, False: 0}
    optimal = 0
    for tenants in _grow_server(wc62_subset[:8]):
        cold = wc_lp.solve(tenants, 2)
        lp, _, layout = wc_lp.build_lp_laid_out(tenants, 2)
        kept = warm.find(tenants)
        lp.pass_to(h)
        h.run()
        iterations[False] += h.getInfo().simplex_iteration_count
        lp.pass_to(h)
        if kept is not None:
            assert h.setBasis(carry(kept, layout)) == highspy.HighsStatus.kOk
        h.run()
        iterations[True] += h.getInfo().simplex_iteration_count
        if cold is None:
            assert h.getModelStatus() == highspy.HighsModelStatus.kInfeasible
            assert h.getDualRay()[1]  # type: ignore[attr-defined]
            break
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        value = h.getInfo().objective_function_value
        assert value == pytest.approx(cold.objective, rel=1e-7, abs=1e-9)
        warm.keep(tenants, layout, h.getBasis())
        optimal += 1
    assert optimal >= 3 and warm.hits >= optimal - 1
    assert iterations[True] < iterations[False]


def test_warm_started_placement_is_as_valid_and_as_tight(wc62_subset: list[TenantCurves]) -> None:
    """Placing a synthetic fleet with warm starts and from scratch: every LP's feasibility is
    the same, so every tenant lands on the same server (a warm start changes the optimal vertex
    at most where the LP is degenerate, and on this fleet that changes no decision), every
    server's limits pass the exact check, and the warm starts were used."""
    fleet = resample(wc62_subset, 150, np.random.default_rng(5), slos=FIG54_SLOS, scale=(0.8, 1.2))
    runs = {}
    for warm in (WarmStarts(), None):
        policy = WorkloadCompactorPolicy(warm=warm)
        placer = Placer(server_cluster(), policy, fast_first_fit=True, grow=True, window=16)
        for w in fleet:
            placer.add(w)
        result = placer.result(0.0)
        for s in result.servers:
            if s.tenants:
                assert check(s.tenants, s.rate, s.bucket, s.devices), s.config.name
        runs[warm is not None] = [[p.workload.name for p in s.tenants] for s in result.servers]
        if warm is not None:
            assert warm.hits > len(fleet) // 2
    assert runs[True] == runs[False]


def test_kept_bases_are_bounded(wc62_subset: list[TenantCurves]) -> None:
    """Beyond its capacity the least recently used basis goes first."""
    warm = WarmStarts(capacity=2)
    groups = [[Placed(w)] for w in wc62_subset[:3]]
    for tenants in groups:
        _, _, layout = wc_lp.build_lp_laid_out(tenants, 1)
        warm.keep(tenants, layout, highspy.HighsBasis())
    assert len(warm) == 2
    assert warm.find([*groups[0], Placed(wc62_subset[5])]) is None
    assert warm.find([*groups[2], Placed(wc62_subset[5])]) is not None


def test_a_policy_with_kept_bases_pickles_and_copies_empty(
    wc62_subset: list[TenantCurves],
) -> None:
    """A policy that has placed tenants (HiGHS bases kept) can still be pickled (a partition's
    task) and deep-copied; the copy starts without bases and places the same way."""
    policy = WorkloadCompactorPolicy()
    fleet = resample(wc62_subset, 20, np.random.default_rng(1), slos=FIG54_SLOS)
    placer = Placer(server_cluster(), policy, fast_first_fit=True, grow=True)
    for w in fleet:
        placer.add(w)
    assert policy.warm is not None and policy.warm.hits > 0 and len(policy.warm) > 0
    for copied in (pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy)):
        assert copied.warm is not None and len(copied.warm) == 0
        assert copied.warm.capacity == policy.warm.capacity
