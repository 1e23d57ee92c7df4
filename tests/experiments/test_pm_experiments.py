"""The PriorityMeister experiments' harness: a short Fig. 3.3 run in which PriorityMeister's
simulated latencies, over the whole storage path (client link, server link, device, and back),
stay within its LP bounds, and the baselines configure the simulator as documented."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from tailbound.experiments.pm_common import percentile_rows, pm_tenants, run_policy
from tailbound.experiments.pm_fig33 import build
from tailbound.experiments.wc_common import find_wc62
from tailbound.stages import Stage


@pytest.fixture(scope="module")
def profile():
    try:
        return find_wc62() / "profile_ssd.json"
    except Exception:
        pytest.skip("shared data not found")


@pytest.mark.parametrize(("device", "model"), [("ssd", "reference"), ("disk", "sound")])
def test_pm_run_stays_within_its_bounds_end_to_end(profile, device: str, model: str) -> None:
    """On the SSD variant the LP without the device model holds; on the disk (a read and a write
    in service: two blocking requests) only the sound device model does."""
    setup = build(20.0, 3, profile, device=device)
    run = run_policy(setup, "pm", profile, k=5, server_model=model)
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


def test_fig37_tenants_have_table31_loads() -> None:
    """I, J, F on disks with Table 3.1's storage and network loads; K's network load 35%."""
    from tailbound.experiments.pm_common import BANDWIDTH, THESIS_DISK
    from tailbound.experiments.pm_fig37 import DISKS, K_NETWORK_LOAD
    from tailbound.experiments.pm_fig37 import build as build37
    from tailbound.profiles.disk import DiskModel, DiskProfile
    from tailbound.profiles.tokens import MessageSizes

    duration = 400.0
    setup = build37(duration, 2, dict.fromkeys("IJFK", 1.0))
    disk = DiskModel(DiskProfile.from_json(THESIS_DISK))
    m = MessageSizes()
    for t in setup.tenants:
        network = float(m.response_bytes(t.trace).sum()) / duration / BANDWIDTH
        if t.name == "K":
            assert network == pytest.approx(K_NETWORK_LOAD, rel=0.1)
            continue
        storage = float(disk.tokens(t.trace).sum()) / duration
        assert (storage, network) == pytest.approx(DISKS[t.name][:2], rel=0.1)


def test_fig37_slos_follow_the_thesis_and_pm_guarantees_them(profile) -> None:
    """K has the tightest SLO and I the loosest (§3.4.4); the prioritizer finds an order whose
    bounds meet every SLO, and its simulated latencies stay within those bounds."""
    from tailbound.experiments.pm_fig37 import build as build37

    setup = build37(20.0, 1)
    slo = {t.name: t.slo.latency_s for t in setup.tenants if t.slo}
    assert min(slo, key=slo.__getitem__) == "K" and max(slo, key=slo.__getitem__) == "I"
    run = run_policy(setup, "pm", profile, k=3)
    assert run.analysis is not None
    assert all(run.analysis.bounds[n] <= s for n, s in slo.items()), run.analysis.bounds
    for name in slo:
        finished = run.latency[name][np.isfinite(run.latency[name])]
        assert finished.size == run.latency[name].size
        assert float(np.max(finished)) <= run.analysis.bounds[name], name


def test_fig37_ingress_shares_one_client_ingress_and_pm_keeps_its_bounds(profile) -> None:
    """The client-ingress variant: one server per device, every response crossing the one
    client's ingress link; K tightest, I loosest; PriorityMeister guarantees every SLO and its
    simulated latencies stay within its bounds."""
    from tailbound.experiments.pm_common import placed_plan
    from tailbound.experiments.pm_fig37_ingress import CLIENT, build
    from tailbound.plan import stage_queues
    from tailbound.stages import Stage

    setup = build(20.0, 1)
    queues = [stage_queues(t) for t in placed_plan(setup).tenants]
    assert {q[Stage.NET_OUT][1] for q in queues} == {f"{CLIENT}.ingress"}
    assert len({q[Stage.NET_OUT][0] for q in queues}) == len(queues)  # no shared server egress
    slo = {t.name: t.slo.latency_s for t in setup.tenants if t.slo}
    assert min(slo, key=slo.__getitem__) == "K" and max(slo, key=slo.__getitem__) == "I"
    run = run_policy(setup, "pm", profile, k=3)
    assert run.analysis is not None
    assert all(run.analysis.bounds[n] <= s for n, s in slo.items()), run.analysis.bounds
    for name in slo:
        assert float(np.max(run.latency[name])) <= run.analysis.bounds[name], name


def test_fig32_all_three_buckets_bound_no_worse_and_hold_the_burst(profile) -> None:
    """Fig. 3.2: W_H held by all three of its buckets gives W_M and W_L bounds no larger than any
    single bucket does, and meets their SLOs in simulation while W_H bursts; the high-rate bucket
    alone lets the burst starve them."""
    from tailbound.experiments.pm_fig32 import CHOICES, analysed, build, held, run_choice
    from tailbound.profiles import SsdProfile

    behaved, run = build(30.0, 1, profile)
    tenants = pm_tenants(behaved, SsdProfile.load(profile), 3)
    assert len(tenants[0].buckets[Stage.STORAGE]) == 3
    every = analysed(held(tenants, CHOICES["all three (PM)"])).bounds
    for label, choice in CHOICES.items():
        one = analysed(held(tenants, choice)).bounds
        assert all(every[n] <= one[n] * (1 + 1e-9) for n in ("M", "L")), label
    pm = run_choice(behaved, run, tenants, "all three (PM)")
    assert all(r["met"] for r in pm), pm
    high = run_choice(behaved, run, tenants, "high rate, small bucket")
    assert not any(r["met"] for r in high), high


def test_fig31_windows_count_every_second_half_request(profile) -> None:
    """Fig. 3.1's series: the windows cover the second half's requests, and PriorityMeister,
    whose bound is below the SLO, has no violation in any window."""
    from tailbound.experiments.pm_fig31 import WINDOW_S, build, windows

    setup = build(40.0, 40.0, 2, profile)
    rows = windows(setup, profile, 3)
    time = setup.tenants[0].trace.time
    assert [r["start_s"] for r in rows] == [20.0, 20.0 + WINDOW_S]
    assert sum(r["requests"] for r in rows) == int(((time >= 20.0) & (time < 40.0)).sum())
    assert all(r["pm_violations"] == 0 for r in rows)
    assert all(0 <= r["cake_violations"] <= r["requests"] for r in rows)


def test_cake_net_runs_fig37_with_its_links_shaped(profile) -> None:
    """Cake's network extension on Fig. 3.7's server-egress setup: the shared egress is shaped
    (priority links with one bucket per tenant) and every tenant is reported."""
    from tailbound.experiments.pm_fig37 import build as build37

    setup = build37(10.0, 1)
    run = run_policy(setup, "cake-net", profile)
    assert run.plan is not None and run.plan.policy == "cake-net"
    assert all(Stage.NET_OUT in t.limits for t in run.plan.tenants)
    rows = percentile_rows([run], setup)
    assert sorted(r["tenant"] for r in rows) == ["F", "I", "J", "K"]
    assert all(r["requests"] > 0 for r in rows)


def test_lp_without_the_device_model_misses_a_disk_with_two_requests_in_service(profile) -> None:
    """docs/results-pm.md: on the disk, a read and a write of less important tenants can both be
    in service when A's request arrives; the reference LP counts one and A exceeds its bound."""
    setup = build(20.0, 3, profile)
    run = run_policy(setup, "pm", profile, k=5, server_model="reference")
    assert run.analysis is not None
    assert float(np.max(run.latency["A"])) > run.analysis.bounds["A"]


def test_fig33_runs_on_the_thesis_disk_with_slos_fixed_before_any_policy(profile) -> None:
    """The default device is the 7200 rpm disk; C's SLO is the tightest (§3.4.1) and is C's LP
    bound in the reference order rounded up, A's and B's above it by the fixed factors."""
    from tailbound.experiments.pm_common import pm_tenants
    from tailbound.experiments.pm_fig33 import REFERENCE_ORDER, SLO_FACTORS, SLO_STEP
    from tailbound.policies.prioritymeister import latencies

    setup = build(30.0, 2, profile)
    assert [d["kind"] for d in setup.devices] == ["disk"]
    slo = {t.name: t.slo.latency_s for t in setup.tenants if t.slo}
    assert min(slo, key=slo.__getitem__) == "C"
    tenants = pm_tenants(setup, None, 5)
    order = (*REFERENCE_ORDER, "L")
    prio = {t.name: dict.fromkeys(t.stages, order.index(t.name)) for t in tenants}
    bound_c = latencies(tenants, prio)["C"]
    assert bound_c <= slo["C"] < bound_c + SLO_STEP
    for name, factor in SLO_FACTORS.items():
        assert slo[name] >= factor * slo["C"] - 1e-9
    # the SSD variant stays reachable with its own SLOs
    ssd = build(5.0, 2, profile, device="ssd")
    assert [d["kind"] for d in ssd.devices] == ["ssd"]
    assert {t.name: t.slo.latency_s for t in ssd.tenants if t.slo} == {
        "A": 0.040,
        "B": 0.045,
        "C": 0.035,
    }


def test_disk_traces_have_table31_storage_loads() -> None:
    """A, B, C's disk stand-ins load the disk 5%, 5%, 55% (every request a random access)."""
    from tailbound.experiments.pm_common import THESIS_DISK, random_disk_trace
    from tailbound.experiments.pm_fig33 import WORKLOADS
    from tailbound.profiles.disk import DiskModel, DiskProfile

    disk = DiskProfile.from_json(THESIS_DISK)
    duration = 2000.0
    for i, (name, (load, c2, size, reads)) in enumerate(WORKLOADS.items()):
        trace = random_disk_trace(
            load, c2, duration, seed=4 + i, size=size, read_fraction=reads, disk=disk, name=name
        )
        work = float(DiskModel(disk).tokens(trace).sum()) / duration
        assert work == pytest.approx(load, rel=0.15), name


def test_fig35_and_fig39_write_table_csv_and_plot_on_the_disk(profile, tmp_path) -> None:
    from tailbound.experiments import pm_fig35, pm_fig39

    args = ["--out", str(tmp_path), "--duration", "8", "--quiet", "--profile", str(profile)]
    assert pm_fig35.main(args) == 0
    with open(tmp_path / "pm_fig35.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 2  # (cake, pm) × three C²
    assert len({r["slo_ms"] for r in rows}) == 1  # one SLO for the three traces
    values = pm_fig39.slo_values(8.0, 1, profile, 5, "disk")
    assert len(values) == 3 and values[0] < values[1] < values[2]
    for suffix in ("csv", "md", "png"):
        assert (tmp_path / f"pm_fig35.{suffix}").exists()
