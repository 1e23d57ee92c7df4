"""Soundness sweep: random scenarios packed to their admission limit, replayed in the simulator;
no request may take longer than its tenant's worst-case bound (docs/results.md, "Bounds that
hold").

Each scenario (one seed) draws:

- the policy: WorkloadCompactor (its LP and check, one or two SSDs on the server sharing its
  link, the storage path) or
  PriorityMeister (its prioritizer and LP; 1–4 token buckets per stage; SSD or disk devices;
  the storage path with three stages, the network path with two, or a local tenant whose only
  stage is the device);
- the rate limiters' mode (shaping or demotion) and the dispatcher's cap on low-priority work
  (none, or 2–20 ms); for WorkloadCompactor also whether the dispatcher serves a level one
  request at a time (``level_mpl`` 1, the default of ``tailbound place``: first come first
  served inside a level) or lets a level's requests share the device;
- 4–12 candidate tenants: synthetic traces (Poisson or on/off, sizes 4–256 KiB, mixed reads and
  writes) and, when the shared data is there, 60 s slices of wc62 traces; SLOs from
  10 ms to 1 s;
- then packs one server: candidates join in turn while the policy's analysis admits them
  (every SLO met), so the bounds are tested where they bind.

The admitted tenants are replayed through their Plan (the traces the plan came from) with the
plan's dispatch rule, and each tenant's largest latency is compared with its bound.

On a disk the analysis prices each write at its worst on a shared disk
(:class:`~tailbound.profiles.disk.DiskModel` with ``shared_gap_bytes``): another tenant's
request may interrupt a sequential stream, and the simulator then charges a reposition.

Run: ``python -m tailbound.experiments.bound_sweep --scenarios 1000 --out DIR [--jobs N]
[--scheduler tcp://host:8786]``. The scenarios are independent and seeded, so they run on a
:class:`~tailbound.executor.Runner` (a local pool, or a Dask cluster whose workers see the same
``--data`` folder) with the same outcomes wherever they run.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.characterize import rb_curve
from tailbound.dnc.device import LOW_PRIORITY_MPL, DeviceLimits
from tailbound.executor import Runner
from tailbound.experiments.pm_common import THESIS_DISK as DISK
from tailbound.model import Cluster, Server, Slo, Tenant
from tailbound.plan import (
    PRIORITY_LEVELS,
    Bound,
    Discipline,
    DispatchRule,
    Plan,
    TenantPlan,
    device_name,
    stage_queues,
)
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.pm_plan import stage_limits
from tailbound.policies.prioritymeister import RATE_CAP, PmTenant, path_limits, rate_limits
from tailbound.policies.workload import characterize
from tailbound.policies.workloadcompactor import server_model, to_plan
from tailbound.profiles import SsdProfile, stage_model
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.sim.scenario import DISK_GAP_BYTES
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces import read_trace
from tailbound.traces.sizes import EmpiricalSizes
from tailbound.traces.synthetic import onoff_trace, poisson_trace
from tailbound.traces.trace import Trace
from tailbound.verify import replay_plan

LINK = 125_000_000.0
MTU = 1500.0
SERVER = "s0"
#: The two pipelines a scenario draws from, as the registry names them: WorkloadCompactor's
#: placement, or PriorityMeister's prioritizer admitting tenants one by one.
WC = registry.registered(("workloadcompactor",), "placement")[0]
PM = registry.registered(("prioritymeister",), "prioritization")[0]
SLO_CHOICES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


@dataclass(frozen=True)
class Case:
    """One random scenario's choices."""

    seed: int
    policy: str  # WC or PM
    device: str  # "ssd" or "disk"
    path: str  # "storage", "network" or "local"
    mode: str  # "shaping" or "demotion"
    buckets: int
    candidates: int
    cap_s: float | None
    devices: int = 1
    #: The dispatcher's limit on one level's requests in service (WorkloadCompactor only).
    level_mpl: int | None = None
    #: PriorityMeister's end-to-end analysis (``prioritymeister.ANALYSES``; the default takes the
    #: tighter of the per-stage sum and the path LP).
    analysis: str = "tighter"


@dataclass(frozen=True)
class Outcome:
    """A replayed scenario: each admitted tenant's largest latency over its bound."""

    case: Case
    ratios: dict[str, float]
    seconds: float

    @property
    def exceeded(self) -> list[str]:
        return [n for n, r in self.ratios.items() if r > 1 + 1e-9]


def draw(seed: int) -> Case:
    """The choices of scenario ``seed``."""
    rng = np.random.default_rng(seed)
    policy = str(rng.choice([WC, PM]))
    pm = policy == PM
    return Case(
        seed=seed,
        policy=policy,
        device=str(rng.choice(["ssd", "disk"])) if pm else "ssd",
        path=str(rng.choice(["storage", "network", "local"])) if pm else "storage",
        mode=str(rng.choice(["shaping", "demotion"])),
        buckets=int(rng.integers(1, 5)) if pm else 1,
        candidates=int(rng.integers(4, 13)),
        cap_s=None if rng.random() < 0.5 else float(rng.uniform(0.002, 0.02)),
        devices=int(rng.integers(1, 3)) if not pm else 1,
        level_mpl=None if pm or rng.random() < 0.5 else 1,
    )


def candidates(case: Case, profile: SsdProfile, data: Path | None) -> list[tuple[Tenant, Trace]]:
    """The case's candidate tenants and their traces (see the module docstring)."""
    rng = np.random.default_rng(case.seed + 1_000_003)
    wc62 = sorted((data / "wc62" / "traces").glob("trace*.txt")) if data is not None else []
    out = []
    for i in range(case.candidates):
        name = f"t{i}"
        if wc62 and rng.random() < 0.4:
            trace = read_trace(wc62[int(rng.integers(len(wc62)))])
            start = float(rng.uniform(0, max(trace.duration - 60.0, 0.0)))
            trace = trace.slice_time(start, start + 60.0)
            if len(trace) == 0:
                continue
        else:
            sizes = EmpiricalSizes(
                np.array([4096, 16384, 65536, 262144]), rng.dirichlet(np.ones(4))
            )
            load = float(rng.uniform(0.02, 0.25))  # of the device, roughly
            probe = Trace.from_arrays(time=[0.0], op=[0], size=[int(sizes.mean_bytes)])
            work = float(stage_model(Stage.STORAGE, profile=profile).tokens(probe)[0])
            rate = load / max(work, 1e-6)
            if case.device == "disk":
                rate = min(rate, 20.0)
            options: dict[str, Any] = {
                "seed": int(rng.integers(2**31)),
                "sizes": sizes,
                "read_fraction": float(rng.uniform(0.0, 1.0)),
                "name": name,
            }
            if rng.random() < 0.5:
                trace = poisson_trace(rate, 30.0, **options)
            else:
                trace = onoff_trace(rate, float(rng.uniform(2.0, 30.0)), 30.0, **options)
        if len(trace) == 0:
            continue
        slo = Slo(float(rng.choice(SLO_CHOICES)), 0.999)
        client = SERVER if case.path == "local" else f"c{i % 3}"
        out.append((Tenant(name, slo, Path(name), client_host=client, server=SERVER), trace))
    return out


def run(case: Case, profile: SsdProfile, data: Path | None) -> Outcome:
    """Pack, plan and replay scenario ``case``."""
    start = time.perf_counter()
    tenants = candidates(case, profile, data)
    if case.policy == WC:
        plan, devices = _workloadcompactor(case, tenants, profile)
    else:
        plan, devices = _prioritymeister(case, tenants, profile)
    traces = {t.name: tr for t, tr in tenants}
    ratios: dict[str, float] = {}
    if plan.tenants:
        v = replay_plan(
            plan,
            {t.name: traces[t.name] for t in plan.tenants},
            profile=profile.to_json(),
            link_bandwidth_bytes_per_s=LINK,
            mtu_bytes=MTU,
            devices=devices,
        )
        ratios = {c.name: c.ratio for c in v.checks}
    return Outcome(case, ratios, time.perf_counter() - start)


def run_seed(shared: tuple[SsdProfile, Path | None, str], seed: int) -> Outcome:
    """Scenario ``seed`` (the task a runner's worker runs; ``shared`` = the profile, data and
    PriorityMeister's analysis)."""
    profile, data, analysis = shared
    return run(dataclasses.replace(draw(seed), analysis=analysis), profile, data)


def sweep(
    seeds: Sequence[int],
    profile: SsdProfile,
    data: Path | None,
    runner: Runner | None = None,
    analysis: str = "tighter",
) -> list[Outcome]:
    """:func:`run` for every seed on ``runner`` (default: this process), in seed order, with
    PriorityMeister's bounds by ``analysis``."""
    runner = runner if runner is not None else Runner()
    return runner.map(
        run_seed, list(seeds), shared=(profile, data, analysis), desc="scenarios", unit="scenario"
    )


def _workloadcompactor(
    case: Case, tenants: Sequence[tuple[Tenant, Trace]], profile: SsdProfile
) -> tuple[Plan, dict[str, Any] | None]:
    model = server_model(profile, LINK, MTU, case.cap_s, case.level_mpl)
    cluster = Cluster(LINK, (Server(SERVER, tuple(f"ssd{d}" for d in range(case.devices))),))
    curves = [
        characterize(t, tr, profile=profile, link_bandwidth_bytes_per_s=LINK) for t, tr in tenants
    ]
    result = place(curves, cluster, registry.build(WC, "placement", model))
    plan = to_plan(result, cluster, policy=WC, safety_margin=1.0)
    disciplines = dict.fromkeys(STORAGE_PATH, Discipline("priority", case.mode))
    return dataclasses.replace(plan, disciplines=disciplines), None


def _prioritymeister(
    case: Case, tenants: Sequence[tuple[Tenant, Trace]], profile: SsdProfile
) -> tuple[Plan, dict[str, Any] | None]:
    prioritizer = functools.partial(registry.build(PM, "prioritization"), analysis=case.analysis)
    disk = DiskProfile.from_json(DISK)
    device_profile: SsdProfile | DiskProfile = disk if case.device == "disk" else profile
    disk_model = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES)
    if case.device == "disk":
        sizes = np.array([512.0])
        limits = DeviceLimits(1, 1, math.inf, math.inf, sizes, sizes, sizes, case.cap_s)
    else:
        limits = DeviceLimits.of(profile, case.cap_s)
    rule = DispatchRule(
        read_mpl=1 if case.device == "disk" else None,
        write_mpl=1 if case.device == "disk" else None,
        low_priority_mpl=LOW_PRIORITY_MPL,
        low_priority_work_s=case.cap_s,
    )
    placed: list[TenantPlan] = []
    pm: list[PmTenant] = []
    result = None
    for t, trace in tenants:
        device = None if case.path == "network" else "dev0"
        tp = TenantPlan(
            t.name, t.slo, SERVER, device, {}, {}, Bound(math.inf, "none"), t.client_host
        )
        queues = stage_queues(tp)
        if case.path == "local":
            queues = {Stage.STORAGE: queues[Stage.STORAGE]}
        buckets, biggest, models = {}, {}, {}
        for stage in queues:
            model = stage_model(stage, link_bandwidth_bytes_per_s=LINK, profile=device_profile)
            if stage == Stage.STORAGE and case.device == "disk":
                model = disk_model  # every write at its worst on a shared disk
            models[stage] = model
            curve = rb_curve(trace, model)
            if curve.rates[0] >= RATE_CAP:
                break  # its mean rate alone fills the stage: never admitted
            buckets[stage] = rate_limits(curve, case.buckets)
            tokens = model.tokens(trace)
            biggest[stage] = float(tokens.max()) if stage == Stage.STORAGE else MTU / LINK
        if len(buckets) < len(queues):
            continue
        path_buckets, work = path_limits(trace, models, case.buckets)
        me = PmTenant(t.name, t.slo.latency_s, queues, buckets, biggest, path_buckets, work)
        devices = {device_name(tp): limits} if device is not None else None
        trial = prioritizer([*pm, me], PRIORITY_LEVELS, devices)
        if all(trial.meets([*pm, me]).values()):
            pm.append(me)
            placed.append(tp)
            result = trial
    out = []
    for tp, admitted in zip(placed, pm, strict=True):
        assert result is not None
        limits_at, extra = stage_limits(admitted.buckets, LINK)
        priority = {s: result.priorities[admitted.name].get(s, 0) for s in tp.stages}
        out.append(
            dataclasses.replace(
                tp,
                priority=priority,
                limits=limits_at,
                extra_limits=extra,
                bound=Bound(result.bounds[admitted.name], "pm-lp"),
            )
        )
    plan = Plan(
        PM,
        1,
        out,
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline("priority", case.mode)),
        dispatch=rule,
    )
    devices_tables = None
    if case.device == "disk":
        table = {"kind": "disk", "profile": DISK, "read_mpl": 1, "write_mpl": 1}
        devices_tables = {device_name(t): table for t in out if t.device is not None}
    return plan, devices_tables


def summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Counts and the ratios' median, worst and share above 0.5."""
    ratios = [r for o in outcomes for r in o.ratios.values() if math.isfinite(r)]
    return {
        "scenarios": len(outcomes),
        "tenants": len(ratios),
        "exceeded": sum(len(o.exceeded) for o in outcomes),
        "median": statistics.median(ratios) if ratios else math.nan,
        "worst": max(ratios, default=math.nan),
        "above_half": sum(r > 0.5 for r in ratios) / len(ratios) if ratios else math.nan,
    }


def main(argv: Sequence[str] | None = None) -> int:
    from tailbound.cli.options import add_executor, add_quiet, runner_of
    from tailbound.experiments._snc_common import find_data
    from tailbound.experiments.wc_common import write_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", type=int, default=1000, help="random scenarios (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="first scenario's seed")
    p.add_argument("--out", default="out/experiments", help="output folder")
    p.add_argument("--data", help="shared data folder (default: found automatically)")
    p.add_argument(
        "--analysis",
        choices=("tighter", "stages", "path"),
        default="tighter",
        help="PriorityMeister's end-to-end bound: the tighter of the two (default), the "
        "per-stage sum or the path LP",
    )
    add_executor(p, "scenarios")
    add_quiet(p)
    args = p.parse_args(argv)
    data = find_data(args.data)
    profile = SsdProfile.load(data / "wc62" / "profile_ssd.json")
    start = time.perf_counter()
    with runner_of(args) as runner:
        outcomes = sweep(
            range(args.seed, args.seed + args.scenarios), profile, data, runner, args.analysis
        )
    rows = []
    groups = {
        f"{WC} (level_mpl 1)": [o for o in outcomes if o.case.policy == WC and o.case.level_mpl],
        f"{WC} (levels share)": [
            o for o in outcomes if o.case.policy == WC and not o.case.level_mpl
        ],
        WC: [o for o in outcomes if o.case.policy == WC],
        PM: [o for o in outcomes if o.case.policy == PM],
        "all": outcomes,
    }
    for key, chosen in groups.items():
        s = summary(chosen)
        rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()}
        rows.append({"policy": key, **rounded})
    title = (
        f"bound sweep: {args.scenarios} scenarios from seed {args.seed}, "
        f"{time.perf_counter() - start:.0f} s"
    )
    print(write_table(Path(args.out), "bound_sweep", rows, title))
    bad = [(o.case, o.exceeded) for o in outcomes if o.exceeded]
    for case, names in bad[:20]:
        print("exceeded:", case, names)
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
