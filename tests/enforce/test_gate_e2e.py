"""End to end on the storage path (issue 17's evidence): wc62-derived tenants planned by the
project's policies, replayed open loop through ``tailbound-gate`` and compared with their SLOs
and with ``tailbound verify`` on the same Plan (``docs/enforcement.md``, "Storage path", "End
to end").

Everything is started here:

1. **The device.** The gateway in front of a file backend with ``--emulate-device``: a
   page-cached file answers in microseconds, so the device is the profile the gateway is given
   (each dispatched request holds its slot until a unit-rate device would have served it). It
   is the WorkloadCompactor system's SSD (``wc62/profile_ssd.json``) dispatching two requests at
   a time (``readMPL = writeMPL = 2``; with its 48/96 the sound bounds admit one tenant only).
2. **Its profile, measured.** ``tailbound profile --nbd`` measures that gateway's scratch
   export with fio (bandwidth at queue depth 2 = the MPL, 4 KiB to 256 KiB, and the unqueued
   latency at depth 1). The measured profile is then the one used everywhere: by ``place`` and
   ``prioritize``, by the simulator and by the plan's gateway (whose emulated device it thus
   is).
3. **The Plan.** Four wc62 tenants (C44, C36, C60, C34; SLOs 950, 450, 50, 100 ms at the
   99.9th percentile), the 40 s from 100 s of their traces, time compressed 4× (10 s, 4× the
   rate) so the device is the bottleneck in bursts; ``tailbound place`` (WorkloadCompactor, one
   server with one SSD) and ``tailbound prioritize`` (PriorityMeister, three buckets per stage)
   with the measured profile.
4. **Live.** ``tailbound gate`` with the plan; ``tailbound-replay client --nbd`` replays each
   tenant's requests open loop on its export (one connection per tenant, its latency from the
   trace timestamp to the last byte of the reply, its issue lag recorded); ``RUNS`` runs, then
   one with ``--fifo`` (same limits, one FIFO queue).
5. **Simulated.** :func:`tailbound.verify.replay_plan` on the same Plan, traces and profile.

Checks: every tenant meets its SLO in every enforced run and the protected tenant (the plan's top
storage level, C60) misses its SLO with FIFO; the pacer is on time (p99 issue lag under 1 ms); each
tenant's live p50/p90/p99 (median of the runs) lies between the simulator's ``(p - RANK)``-th and
``(p + RANK)``-th percentiles widened by ``2 · spread + floor + TIMER_S + stall + RELATIVE ·
prediction``, where ``spread`` is the range of the runs' percentile (this machine's run-to-run
noise), ``stall`` the replayer's largest lateness beyond 1 ms in the enforced runs (a stall of the
shared host delays every request in flight), ``floor`` the idle path's extra latency (the p99
latency of a lone 4 KiB read the profiler measured at queue depth 1, less its profiled service
time: NBD, the gateway's tasks and threads, which the simulator does not model), ``TIMER_S`` the
gateway's late wake-ups for shaped requests, ``RELATIVE`` the time the emulated device loses at
dispatches over a backlog, and ``RANK`` the percentile points those shifts move a steep
distribution by (each constant below says how it was measured). Slow (about 55 s): the default
suite runs :func:`test_gate_e2e_short`, the same pipeline on 16 s of the traces without repeats.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.enforce.test_gate import Gate, start_gate

from tailbound.enforce import replay
from tailbound.enforce.storage import find_binary
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, TenantPlan
from tailbound.profiles.tokens import SsdModel, SsdProfile
from tailbound.sim.results import percentile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces import Trace, read_trace, write_parquet
from tailbound.verify import replay_plan

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
TENANTS = ("C44", "C36", "C60", "C34")
START_S, WINDOW_S, SPEEDUP = 100.0, 40.0, 4.0
RUNS = 2
EXPORT = 256 << 20
#: Every link of the plan's cluster (bytes/s): fast enough that only the device queues.
LINK = 1.25e10
MPL = 2
SIZES = "4K,16K,64K,256K"
PERCENTILES = (0.5, 0.9, 0.99)
#: How late the gateway's dispatcher may wake for a shaped request (a tokio timer: up to about
#: 1 ms; docs/enforcement.md, "The clock"); the simulator releases it exactly on time.
TIMER_S = 1e-3
#: The emulated device loses a little time at each dispatch that the simulator does not (the
#: dispatcher task's reaction to a completion, about 0.1 ms on this machine, while the
#: device is idle under the rule "no lower level beside a higher one"): it adds up over a
#: backlog, measured at 2-3 % of the latency of C44's requests that wait 30-200 ms.
RELATIVE = 0.05
#: Percentile points: the live p-th percentile is compared with the simulator's between its
#: (p - RANK)-th and (p + RANK)-th (at most half the way to the maximum: p99 against p98.5 to
#: p99.5). Where a tenant's distribution is steep (C44's median falls inside its backlogs:
#: its p45, p50 and p55 are 5, 11 and 16 ms), the small shifts above move a percentile by a few
#: points of rank.
RANK = 0.05


#: The gateway and the replayer run at real-time priority: on the shared 2-core machine (load
#: 5-8 from other jobs) their threads otherwise wait tens of milliseconds for a core, which the
#: test would measure as the device's latency (test_net_live.py does the same for its probe).
RT = ["chrt", "-f", "50"]


def _need() -> None:
    for tool in ("fio", "chrt"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (Debian packages fio and util-linux; see .ci/run)")
    if subprocess.run([*RT, "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("needs real-time scheduling (chrt -f 50: root or CAP_SYS_NICE)")
    find_binary()  # fails, not skips, when the gateway was not built
    replay.binary()


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Path]:
    """Where the gateways keep their exports' files: in RAM (``/dev/shm``) where there is one.
    The emulated device is the profile only while the file answers in microseconds; with the
    files under /tmp (ext4 on this VM's disk) a read now and then waited 5-22 ms for the disk
    (timed in the gateway: 11 of 4000 requests over 2 ms), and with one request per level in
    service that one request held its level and every less important one for as long (C36's
    live p99 15-17 ms against the simulator's 3.9 ms). On tmpfs no read took over 0.45 ms and
    C36's p99 was 4.3 ms."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        root = Path(tempfile.mkdtemp(prefix="tailbound-e2e-", dir=shm))
    else:
        root = tmp_path / "backends"
        root.mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def gates() -> Iterator[list[Gate]]:
    started: list[Gate] = []
    yield started
    for g in started:
        if g.proc.poll() is None:
            g.proc.kill()
        g.proc.communicate()


def _gate(started: list[Gate], plan: Path, profile: Path, backend: Path, *extra: str) -> Gate:
    cmd = [*TAILBOUND, "gate", "--plan", str(plan), "--profile", str(profile)]
    cmd += ["--backend", str(backend), "--listen", "127.0.0.1:0", "--export-size", str(EXPORT)]
    gate = start_gate([*RT, *cmd, "--emulate-device", *extra])
    started.append(gate)
    return gate


def _tb(*args: str, cwd: Path, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [*prefix, *TAILBOUND, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, f"tailbound {args[0]}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def _device(wc62: Path, tmp: Path) -> Path:
    """The emulated device: the wc62 SSD, two requests in service at most."""
    doc = json.loads((wc62 / "profile_ssd.json").read_text())
    doc.update(readMPL=MPL, writeMPL=MPL)
    doc.update(maxOutstandingReadBytes=MPL * 262144, maxOutstandingWriteBytes=MPL * 262144)
    (tmp / "device.json").write_text(json.dumps(doc))
    return tmp / "device.json"


def _measure_profile(
    started: list[Gate], device: Path, tmp: Path, backends: Path, seconds: float
) -> tuple[Path, float]:
    """``tailbound profile --nbd`` of the emulated device through a gateway serving one scratch
    export; returns the profile and the idle path's floor (see the module documentation)."""
    scratch = TenantPlan(
        "scratch", Slo(1.0), "s0", "ssd0", dict.fromkeys(STORAGE_PATH, 0), {}, Bound(1.0, "none")
    )
    Plan("scratch", 1, [scratch]).save(tmp / "scratch-plan.json")
    gate = _gate(started, tmp / "scratch-plan.json", device, backends / "scratch", "--fifo")
    out = tmp / "measured.json"
    _tb(
        "profile",
        "--nbd",
        f"nbd://127.0.0.1:{gate.port}/scratch",
        "--sizes",
        SIZES,
        "--threads",
        str(MPL),
        "--seconds-per-point",
        str(seconds),
        "--latency-seconds",
        str(seconds / 2),
        "--quiet",
        "--out",
        str(out),
        cwd=tmp,
        prefix=tuple(RT),  # fio inherits the real-time priority
    )
    gate.stop()
    measured, emulated = SsdProfile.load(out), SsdProfile.load(device)
    model = SsdModel(measured)
    sizes = measured.sizes.astype(np.int64)
    for op, bw in ((0, measured.read_bandwidth), (1, measured.write_bandwidth)):
        want = emulated.bandwidth(np.full(sizes.shape, op, np.uint8), sizes)
        # the emulated device's bandwidth at most; less where the round trip of a completion
        # and the next request (fio, NBD, the gateway's tasks: about 0.1-0.3 ms on this busy
        # 2-core machine) exceeds a request's service time, so that two in flight leave the
        # device idle between requests
        print(f"measured / emulated bandwidth, {'write' if op else 'read'}: {bw / want}")
        assert np.all(bw <= want * 1.02) and np.all(bw >= want * 0.25), (op, bw / want)
    # the floor: a lone 4 KiB read's p99 on the idle path less its service time
    row = json.loads(out.read_text())["unqueuedLatency"][0]
    assert row["requestSize"] == 4096
    lone = Trace.from_arrays(time=[0.0], op=[0], size=[4096])
    floor = max(0.0, row["readP99"] - float(model.tokens(lone)[0]))
    return out, floor


def _traces(wc62: Path, tmp: Path, start_s: float, window_s: float) -> dict[str, Trace]:
    tenants = {t["name"]: t for t in json.loads((wc62 / "tenants.json").read_text())["tenants"]}
    traces, entries = {}, []
    for name in TENANTS:
        trace = read_trace(wc62 / tenants[name]["trace"])
        t = trace.slice_time(start_s, start_s + window_s).scale_time(1 / SPEEDUP)
        t = Trace.from_arrays(time=t.time, op=t.op, size=t.size, duration_s=t.duration_s, name=name)
        traces[name] = t
        write_parquet(t, tmp / f"{name}.parquet")
        entries.append({"name": name, "slo_s": tenants[name]["slo_s"], "trace": f"{name}.parquet"})
    (tmp / "tenants.json").write_text(json.dumps({"tenants": entries}))
    cluster = {
        "link_bandwidth_bytes_per_s": LINK,
        "client_hosts": [{"name": "client0", "vms": [str(i) for i in range(len(TENANTS))]}],
        "server_hosts": [{"name": "s0", "devices": ["ssd0"]}],
    }
    (tmp / "cluster.json").write_text(json.dumps(cluster))
    return traces


def _live(
    started: list[Gate],
    plan: Plan,
    plan_path: Path,
    profile: Path,
    traces: dict[str, Trace],
    tmp: Path,
    backends: Path,
    *extra: str,
) -> replay.LiveRun:
    gate = _gate(started, plan_path, profile, backends / f"backend{len(started)}", *extra)
    run = replay.replay(
        plan,
        traces,
        [f"{name}=127.0.0.1:{gate.port}" for name in traces],
        drain_s=5.0,
        nbd_export_size=EXPORT,
        prefix=RT,
        workdir=tmp,
    )
    gate.stop()
    return run


def _pcts(latency: np.ndarray) -> list[float]:
    lat = latency[np.isfinite(latency)]
    return [percentile(lat, p) for p in PERCENTILES]


def _pipeline(
    wc62: Path,
    tmp: Path,
    started: list[Gate],
    backends: Path,
    *,
    start_s: float,
    window_s: float,
    runs: int,
    profile_seconds: float,
) -> dict[str, Any]:
    device = _device(wc62, tmp)
    profile, floor = _measure_profile(started, device, tmp, backends, profile_seconds)
    traces = _traces(wc62, tmp, start_s, window_s)
    _tb(
        "place",
        "--tenants",
        "tenants.json",
        "--cluster",
        "cluster.json",
        "--profile",
        str(profile),
        "--out",
        "placed.json",
        "--quiet",
        cwd=tmp,
    )
    _tb(
        "prioritize",
        "--plan",
        "placed.json",
        "--tenants",
        "tenants.json",
        "--profile",
        str(profile),
        "--link-bandwidth",
        str(LINK),
        "--out",
        "plan.json",
        "--quiet",
        cwd=tmp,
    )
    plan = Plan.load(tmp / "plan.json")
    assert sorted(t.name for t in plan.tenants) == sorted(TENANTS)
    protected = min(plan.tenants, key=lambda t: t.priority[Stage.STORAGE]).name
    simulated = replay_plan(plan, traces, link_bandwidth_bytes_per_s=LINK, profile=profile)
    fifo_plan = dataclasses.replace(
        plan, disciplines={**plan.disciplines, Stage.STORAGE: Discipline("fifo")}
    )
    simulated_fifo = replay_plan(
        fifo_plan, traces, link_bandwidth_bytes_per_s=LINK, profile=profile
    )
    enforced = [
        _live(started, plan, tmp / "plan.json", profile, traces, tmp, backends) for _ in range(runs)
    ]
    fifo = _live(started, plan, tmp / "plan.json", profile, traces, tmp, backends, "--fifo")
    return {
        "plan": plan,
        "protected": protected,
        "floor": floor,
        "simulated": simulated,
        "simulated_fifo": simulated_fifo,
        "enforced": enforced,
        "fifo": fifo,
        "profile": SsdProfile.load(profile),
    }


def _report_and_check(r: dict[str, Any], *, spread_floor_s: float = 0.0) -> None:
    plan, sim, enforced, fifo = r["plan"], r["simulated"], r["enforced"], r["fifo"]
    # a host stall (the shared VM): the replayer's largest lateness beyond the pacer's 1 ms in
    # the enforced runs; every request in flight then may carry it (two CI runs measured C60's
    # p99 8.1 ms against 7.6 accepted, with the replayer 7.7 ms late at one instant)
    stall = max(
        0.0,
        max(float(np.nanmax(m.issue_lag)) for run in enforced for m in run.measured.values())
        - 1e-3,
    )
    rows = []
    failures = []
    for t in plan.tenants:
        sim_lat = np.asarray(sim.results[t.name].latency)
        predicted = _pcts(sim_lat)
        live = np.array([_pcts(run.measured[t.name].latency) for run in enforced])
        median = np.median(live, axis=0)
        spread = np.maximum(live.max(axis=0) - live.min(axis=0), spread_floor_s)
        fifo_p = _pcts(fifo.measured[t.name].latency)
        for k, p in enumerate(PERCENTILES):
            tol = 2 * spread[k] + r["floor"] + TIMER_S + stall + RELATIVE * predicted[k]
            rank = min(RANK, (1 - p) / 2)
            low = percentile(sim_lat, p - rank) - tol
            high = percentile(sim_lat, p + rank) + tol
            rows.append(
                f"| {t.name} | p{100 * p:g} | {1e3 * predicted[k]:.2f} ms | "
                + ", ".join(f"{1e3 * x:.2f}" for x in live[:, k])
                + f" | {1e3 * median[k]:.2f} ms | {1e3 * max(low, 0):.2f} – {1e3 * high:.2f} ms "
                + f"| {1e3 * fifo_p[k]:.2f} ms |"
            )
            if not low <= median[k] <= high:
                failures.append(
                    f"{t.name} p{100 * p:g}: live {median[k]} vs simulated "
                    f"{predicted[k]} (accepted {low} to {high})"
                )
    lags = np.concatenate([m.issue_lag for run in [*enforced, fifo] for m in run.measured.values()])
    print(
        f"\nfloor {1e3 * r['floor']:.3f} ms; issue lag p99 {1e3 * np.nanpercentile(lags, 99):.3f}"
        f" ms, max {1e3 * np.nanmax(lags):.3f} ms; protected tenant {r['protected']}"
    )
    for t in plan.tenants:
        lag = np.concatenate([run.measured[t.name].issue_lag for run in [*enforced, fifo]])
        late = np.concatenate(
            [run.measured[t.name].time[run.measured[t.name].issue_lag > 1e-3] for run in enforced]
        )
        print(
            f"{t.name}: issue lag p50 {1e3 * np.nanpercentile(lag, 50):.3f} ms, p99 "
            f"{1e3 * np.nanpercentile(lag, 99):.3f} ms, max {1e3 * np.nanmax(lag):.3f} ms; "
            f"late > 1 ms at {np.round(late[:12], 3).tolist()}"
        )
    print("| tenant | pct | simulated | live (runs) | live median | accepted | FIFO live |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nenforced, last run (tailbound verify's table from the measurements):")
    print(enforced[-1].verification.table())
    print("\n--fifo:")
    print(fifo.verification.table())
    print("\nsimulated:")
    print(sim.table())
    print("\nsimulated, FIFO:")
    print(r["simulated_fifo"].table())
    for run in [*enforced, fifo]:
        assert run.lost == 0
    assert np.nanpercentile(lags, 99) < 1e-3, "the pacer issued requests late"
    for run in enforced:
        assert run.verification.all_met, run.verification.violations()
    assert sim.all_met
    fifo_check = {c.name: c for c in fifo.verification.checks}[r["protected"]]
    assert not fifo_check.slo.met_by(fifo_check.achieved_s), "FIFO did not hurt the protected"
    assert not failures, failures


@pytest.mark.slow
def test_gate_e2e_wc62_live_matches_verify(
    wc62_dir: Path, tmp_path: Path, gates: list[Gate], backends: Path
) -> None:
    _need()
    r = _pipeline(
        wc62_dir,
        tmp_path,
        gates,
        backends,
        start_s=START_S,
        window_s=WINDOW_S,
        runs=RUNS,
        profile_seconds=0.4,
    )
    _report_and_check(r)


def test_gate_e2e_short(wc62_dir: Path, tmp_path: Path, gates: list[Gate], backends: Path) -> None:
    """The same pipeline on 16 s of the traces from 108 s (4 s live; the simulator's FIFO puts
    C60 at 62 ms there, while the 16 s from 100 s hold no C60 request inside C44's and C36's
    bursts: 35 ms), one enforced run and one FIFO run: no spread to measure, so the spread term
    is 1 ms (most of the slow test's measured spreads are below it)."""
    _need()
    r = _pipeline(
        wc62_dir,
        tmp_path,
        gates,
        backends,
        start_s=108.0,
        window_s=16.0,
        runs=1,
        profile_seconds=0.2,
    )
    _report_and_check(r, spread_floor_s=1e-3)
