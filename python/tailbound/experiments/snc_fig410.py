"""Thesis Fig. 4.10: tenants admitted by SNC-Meister and the DNC baselines, random arrival orders.

Setup (thesis §4.3.3 on our data): ``--tenants`` (180) tenants built from the 62 wc62 traces —
tenant ``i`` replays trace ``i mod 62`` circularly shifted by a random offset (uniform over the
600 s trace), so a trace is reused with different burst alignments; tenant ``i`` runs on client
host ``i mod 12`` and a random one of 6 server hosts (fixed across orders). Every order
(``--orders``, ≥ 20 for the figure) draws a random arrival order and per tenant a 99.9th-percentile
SLO uniformly from {10, 20, 50, 100} ms × ``scale``. Decisions use the first half (300 s) of each
shifted trace; the admitted tenants' second halves are then replayed in the simulator with the
policy's priorities (and, for the DNC baselines, its rate limits) enforced, and a tenant violates
its SLO when the 99.9th percentile of its replayed latencies exceeds it.

Policies (:data:`SNC_VARIANTS`): ``snc-meister`` is tailbound's SNC-Meister admission
(``tailbound admit``'s default rule): the SNC-Meister bound raised by the analysis' error on the
tenant alone and floored by its latency alone, both measured on its first half, enforced with
*split levels*: within each SLO class, the tenants whose measured latency alone exceeds the
model's bound alone (the model's misfits) run one priority level below the others
(:mod:`tailbound.policies.floors`), and each tenant's traffic beyond its first half's load
bucket demoted below every level (conformance policing, :mod:`tailbound.policies.policing`);
``snc-meister-unpoliced`` the same decisions without policing (the default before);
``snc-meister-model`` the thesis' rule (the bound only); ``dnc``, ``silo``, ``qjump`` the DNC
baselines. Optional (``--policies``), unpoliced: ``snc-meister-split`` without the model error
(the default before that), ``snc-meister-flat`` its decisions with levels by SLO only,
``snc-meister-window`` the floor measured at the worst 3-minute window, ``snc-meister-joint``
``snc-meister-split`` whose predictions are also floored by the latencies measured replaying the
admitted tenants and the newcomer together on their first halves at each arrival, so that it
never admits a set its own decision data shows missing an SLO.

A violation is judged two ways: the 99.9th percentile over the whole replayed half, and the worst
99.9th percentile over 180 s windows starting every 10 s (thesis §4.3's 3-minute windows;
:data:`tailbound.sim.results.SLO_WINDOW_S`). Violators whose second half misses the SLO even
alone (in the same sense) are counted apart (issue 14's rule): no decision from the first half
could meet them except by rejecting the tenant; every other violation is caused by sharing.
The admitted set is also replayed on its first halves (the data the decisions were made from)
under the same enforcement.

SLO scaling (*choice*): the thesis' memcached traces meet 10 ms alone; ours (block-storage traces
with 128 KiB writes and bursts up to 132× the mean) do not. ``scale`` is the 90th percentile over
the tenants of their latency bound *alone* on the network (the larger of SNC-Meister's 99.9th
percentile and the DNC baseline's worst case), divided by 10 ms and rounded up to an integer: the
tightest class is then met alone by about 90% of the tenants under every analysis, so what limits
admission is sharing, as in the thesis. ``--scale`` overrides it.

Trace vetting (``--stationary-only``): the thesis ran its experiments on traces that passed
standard stationarity tests (§4.3.2); this option builds the tenants from the wc62 traces that
pass ADF and KPSS on their per-second request counts and bytes at 5%
(:mod:`tailbound.traces.stationarity`) — 39 of the 62 — instead of all of them.

Run: ``python -m tailbound.experiments.snc_fig410 --out out/experiments`` (options below; a small
configuration: ``--tenants 40 --orders 2``).
"""

from __future__ import annotations

import functools
import math
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tailbound.cli.options import add_executor, progress_disabled, runner_of
from tailbound.executor import Runner
from tailbound.experiments._snc_common import (
    by_slo,
    bytes_per_s,
    find_data,
    parser,
    trace_path,
    write_outputs,
)
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.plotting import save_figure
from tailbound.policies.admission import AdmissionPolicy, Configured, Decision, admit_in_order
from tailbound.policies.admission_policies import THESIS_RULE, SncRule
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.floors import alone_result, replay_results, replayed
from tailbound.policies.registry import build, registered
from tailbound.sim.results import Judged
from tailbound.snc.mmpp import INTERVAL_NS
from tailbound.snc.tenants import FitCache
from tailbound.traces import read_trace
from tailbound.traces.stationarity import stationarity
from tailbound.traces.trace import Trace

#: The SNC-Meister variants and the rule each runs (:class:`SncRule`; module docstring).
#: ``snc-meister-joint`` replays the admitted tenants and the newcomer together at each arrival,
#: which makes an order ~10 minutes.
SNC_VARIANTS = {
    "snc-meister": SncRule(),
    "snc-meister-unpoliced": SncRule(police=False),
    "snc-meister-model": THESIS_RULE,
    "snc-meister-split": SncRule(add_model_error=False, police=False),
    "snc-meister-flat": SncRule(add_model_error=False, split_levels=False, police=False),
    "snc-meister-window": SncRule(window_floor=True, police=False),
    "snc-meister-joint": SncRule(add_model_error=False, joint_floor=True, police=False),
}
DNC_POLICIES = registered(("dnc", "silo", "qjump"), "admission")
ALL_POLICIES = (*SNC_VARIANTS, *DNC_POLICIES)
OPTIONAL = ("snc-meister-split", "snc-meister-flat", "snc-meister-window", "snc-meister-joint")
POLICIES = tuple(p for p in ALL_POLICIES if p not in OPTIONAL)
#: Policies whose admission decisions are another's (only what they enforce differs): decided
#: once per order when both run (tested: ``tests/experiments/test_snc_fig410.py``).
SAME_DECISIONS = {
    "snc-meister-unpoliced": "snc-meister",
    "snc-meister-flat": "snc-meister-split",
}
BASE_SLOS_S = (0.010, 0.020, 0.050, 0.100)
CLIENTS = 12
SERVERS = 6
TRACES = 62
TRACE_S = 600.0  # every wc62 trace is a 600 s recording (shared/data/README.md)


@dataclass(frozen=True)
class Population:
    """The tenants (SLO not yet drawn) and their trace halves, keyed by ``str(spec.trace)``."""

    tenants: tuple[Tenant, ...]
    first: dict[str, Trace]
    second: dict[str, Trace]


def population(
    data: Path, count: int, seed: int, traces: Sequence[int] = tuple(range(TRACES))
) -> Population:
    """``count`` tenants over the wc62 traces ``traces`` (all 62 by default) with random circular
    shifts (module docstring): tenant ``i`` replays ``traces[i mod len(traces)]``."""
    rng = random.Random(seed)
    full = {}
    tenants, first, second = [], {}, {}
    for i in range(count):
        index = traces[i % len(traces)]
        if index not in full:
            full[index] = read_trace(trace_path(data, index), duration_s=TRACE_S)
        shift = rng.uniform(0.0, full[index].duration)
        key = f"{trace_path(data, index)}@{shift:.6f}"
        shifted = full[index].shift_circular(shift)
        first[key], second[key] = shifted.first_half(), shifted.second_half()
        tenants.append(
            Tenant(
                name=f"w{i:03d}",
                slo=Slo(1.0),
                trace=Path(key),
                client_host=f"client{i % CLIENTS:02d}",
                server=f"server{rng.randrange(SERVERS)}",
            )
        )
    return Population(tuple(tenants), first, second)


@functools.lru_cache(maxsize=4)
def stationary_traces(data: Path, alpha: float = 0.05) -> tuple[int, ...]:
    """The wc62 traces passing the stationarity tests of thesis §4.3.2 at ``alpha``
    (:mod:`tailbound.traces.stationarity`: ADF and KPSS on the whole 600 s trace's per-second
    request counts and bytes)."""
    return tuple(
        i
        for i in range(TRACES)
        if stationarity(read_trace(trace_path(data, i), duration_s=TRACE_S)).passes(alpha)
    )


def caches(pop: Population, interval_ns: int = INTERVAL_NS) -> tuple[FitCache, CurveCache]:
    """The MMPP-fit (on ``interval_ns`` intervals, the reference's 1 s by default) and r-b-curve
    caches, primed with the first halves (no file reads)."""
    fits = FitCache(interval_ns=interval_ns, traces=dict(pop.first))
    curves = CurveCache(TenantSet(pop.tenants), dict(pop.first))
    return fits, curves


def slo_scale(pop: Population, fits: FitCache, curves: CurveCache) -> float:
    """The SLO scale of the module docstring."""
    tset = TenantSet(pop.tenants)
    snc = build("snc-meister", "admission", tset, fits=fits)
    dnc = build("dnc", "admission", tset, curves=curves)
    alone = [max(snc([t])[0].latency_s, dnc([t])[0].latency_s) for t in pop.tenants]
    return float(math.ceil(float(np.percentile(alone, 90)) / BASE_SLOS_S[0]))


def arrivals(pop: Population, order: int, seed: int, scale: float) -> list[Tenant]:
    """Order ``order``'s arrival sequence with its drawn SLOs."""
    rng = random.Random(seed * 1_000_003 + order)
    specs = list(pop.tenants)
    rng.shuffle(specs)
    return [
        Tenant(
            t.name, Slo(rng.choice(BASE_SLOS_S) * scale), t.trace, t.client_host, server=t.server
        )
        for t in specs
    ]


def bound_function(
    policy: str,
    tset: TenantSet,
    fits: FitCache,
    curves: CurveCache,
    alone: dict[tuple[str, float], float],
) -> AdmissionPolicy:
    """``policy``'s admission policy: an SNC-Meister variant runs its rule
    (:data:`SNC_VARIANTS`; floors measured on the trace ``fits`` holds, once per trace, kept in
    ``alone`` across orders; policing buckets from ``curves``), a DNC baseline its bound. What a
    policy enforces (its ``configure``) is what the replays enforce: SNC-Meister priorities (by
    SLO, split levels) and, policed, demotion beyond each tenant's load bucket; the baselines their
    levels and rate limits — PriorityMeister-style ``dnc`` demotes traffic above its limits
    (§2.2.1), Silo++ and QJump++ pace it (their rate limiters shape)."""
    if policy in DNC_POLICIES:
        return build(policy, "admission", tset, curves=curves)
    rule = SNC_VARIANTS[policy].kwargs()
    return build("snc-meister", "admission", tset, fits=fits, curves=curves, alone=alone, **rule)


@dataclass(frozen=True)
class Admitted:
    """What a policy admitted from an arrival sequence and what it enforces for them."""

    policy: str
    tenants: tuple[Tenant, ...]
    configured: tuple[Configured, ...]
    mode: str


def decide(
    policy: str,
    arriving: Sequence[Tenant],
    tset: TenantSet,
    fits: FitCache,
    curves: CurveCache,
    alone: dict[tuple[str, float], float],
) -> Admitted:
    """``policy``'s admission of ``arriving`` in order (Fig. 4.10's policies, built by
    :func:`bound_function` from the MMPP-fit and curve caches
    ``fits``, ``curves``), or ``none``: no admission control, everyone admitted with priorities
    by SLO."""
    if policy == "none":
        return Admitted(policy, tuple(arriving), tuple(by_slo(arriving)), "shaping")
    bounds = bound_function(policy, tset, fits, curves, alone)
    admitted = [d.tenant for d in admit_in_order(arriving, bounds) if d.admitted]
    return Admitted(policy, tuple(admitted), tuple(bounds.configure(admitted)), bounds.mode)


@dataclass(frozen=True)
class OrderResult:
    order: int
    policy: str
    admitted: int
    bytes_per_s: float  # mean request+response bytes per second of the admitted second halves
    replayed: bool
    # admitted tenants missing their SLO on the replayed second halves (p99.9 over the whole
    # half), as ``name/trace``
    violators: tuple[str, ...]
    # admitted tenants missing their SLO when the *first* halves (the decision's data) are
    # replayed together under the same enforcement (whole half)
    violators_first_half: tuple[str, ...]
    # violators whose second half misses its SLO even alone on the network (whole half): no
    # decision taken from the first half could have met it except by rejecting the tenant
    violators_alone: tuple[str, ...]
    worst_ratio: float  # largest replayed p99.9 / SLO among the admitted (nan if not replayed)
    seconds: float
    # the same judged at the worst 3-minute window (``sim.results.SLO_WINDOW_S``, every
    # ``SLO_WINDOW_STEP_S``): violators, and those whose second half alone misses in that sense
    violators_window: tuple[str, ...] = ()
    violators_window_alone: tuple[str, ...] = ()
    worst_window_ratio: float = math.nan

    @property
    def violations(self) -> int:
        return len(self.violators)

    @property
    def violations_first_half(self) -> int:
        return len(self.violators_first_half)

    @property
    def violations_alone(self) -> int:
        return len(self.violators_alone)

    @property
    def sharing(self) -> tuple[str, ...]:
        """Violators (whole half) that meet their SLO alone: caused by sharing."""
        return tuple(v for v in self.violators if v not in self.violators_alone)

    @property
    def sharing_window(self) -> tuple[str, ...]:
        """Violators at the worst window that meet their SLO alone in the same sense."""
        return tuple(v for v in self.violators_window if v not in self.violators_window_alone)


def classify(
    admitted: Sequence[Tenant],
    shared: Sequence[Judged],
    alone: Sequence[Judged],
) -> tuple[list[Tenant], list[Tenant], list[Tenant], list[Tenant]]:
    """The violators of a replay and those of them that miss alone, judged over the whole half
    and at the worst window: ``(whole, whole alone, window, window alone)``. A tenant misses
    alone in a sense when its replay *alone* misses its SLO in that sense; every other miss is
    caused by sharing (issue 14's rule).

    >>> from tailbound.model import Slo, Tenant
    >>> t = Tenant("a", Slo(0.05), "x", "c", server="s")
    >>> [len(g) for g in classify([t], [Judged(0.06, 0.07)], [Judged(0.04, 0.06)])]
    [1, 0, 1, 1]
    """
    whole, whole_alone, window, window_alone = [], [], [], []
    for t, j, a in zip(admitted, shared, alone, strict=True):
        miss, miss_w = j.misses(t.slo_s)
        alone_miss, alone_miss_w = a.misses(t.slo_s)
        if miss:
            whole.append(t)
            if alone_miss:
                whole_alone.append(t)
        if miss_w:
            window.append(t)
            if alone_miss_w:
                window_alone.append(t)
    return whole, whole_alone, window, window_alone


# one process's state for the parallel runs
_STATE: dict[str, object] = {}


def _init(
    data: str,
    count: int,
    seed: int,
    scale: float | None,
    interval_ns: int = INTERVAL_NS,
    traces: Sequence[int] = tuple(range(TRACES)),
    policies: Sequence[str] = POLICIES,
) -> None:
    pop = population(Path(data), count, seed, traces)
    fits, curves = caches(pop, interval_ns)
    _STATE.update(pop=pop, fits=fits, curves=curves, seed=seed, alone={}, policies=policies)
    _STATE["scale"] = scale if scale is not None else slo_scale(pop, fits, curves)


_STATE_LOCK = threading.Lock()


def _order_task(key: tuple[object, ...], task: tuple[int, bool]) -> list[OrderResult]:
    """:func:`run_order` on a runner's worker: ``key`` (the arguments of :func:`_init`, the
    scale chosen) builds the population once per process (a Dask worker's threads share it)."""
    with _STATE_LOCK:
        if _STATE.get("key") != key:
            _init(*key)  # type: ignore[arg-type]
            _STATE["key"] = key
    return run_order(*task)


def run_order(order: int, replay_it: bool) -> list[OrderResult]:
    """Every policy's decisions (and replay) for one arrival order."""
    pop: Population = _STATE["pop"]  # type: ignore[assignment]
    fits: FitCache = _STATE["fits"]  # type: ignore[assignment]
    curves: CurveCache = _STATE["curves"]  # type: ignore[assignment]
    scale = float(_STATE["scale"])  # type: ignore[arg-type]
    alone: dict[tuple[str, float], float] = _STATE["alone"]  # type: ignore[assignment]
    specs = arrivals(pop, order, int(_STATE["seed"]), scale)  # type: ignore[call-overload]
    tset = TenantSet(tuple(specs))
    out = []
    decided: dict[str, list[Decision]] = {}
    for policy in _STATE["policies"]:  # type: ignore[attr-defined]
        start = time.perf_counter()
        bounds = bound_function(policy, tset, fits, curves, alone)
        same = SAME_DECISIONS.get(policy)
        decisions = decided[same] if same in decided else admit_in_order(specs, bounds)
        decided[policy] = decisions
        admitted = [d.tenant for d in decisions if d.admitted]
        second = [pop.second[str(t.trace)] for t in admitted]
        volume = bytes_per_s(second)
        violators: list[Tenant] = []
        alone_violators: list[Tenant] = []
        window_violators: list[Tenant] = []
        window_alone: list[Tenant] = []
        first_violators: list[Tenant] = []
        worst = worst_window = math.nan
        if replay_it and admitted:
            rules = bounds.configure(admitted)
            judged = _judged(admitted, second, rules, bounds.mode)
            worst = max(j.whole_s / t.slo_s for t, j in zip(admitted, judged, strict=True))
            worst_window = max(j.window_s / t.slo_s for t, j in zip(admitted, judged, strict=True))
            alone_judged = [_alone_second(pop, t, tset.link_bytes_per_s) for t in admitted]
            violators, alone_violators, window_violators, window_alone = classify(
                admitted, judged, alone_judged
            )
            first = [pop.first[str(t.trace)] for t in admitted]
            first_ratios = _slo_ratios(admitted, first, rules, bounds.mode)
            first_violators = [t for t, r in zip(admitted, first_ratios, strict=True) if r > 1.0]
        out.append(
            OrderResult(
                order,
                policy,
                len(admitted),
                volume,
                replay_it,
                labels(violators),
                labels(first_violators),
                labels(alone_violators),
                worst,
                time.perf_counter() - start,
                labels(window_violators),
                labels(window_alone),
                worst_window,
            )
        )
        print(out[-1], flush=True)
    return out


def labels(tenants: Sequence[Tenant]) -> tuple[str, ...]:
    """``name/trace`` of each tenant (the stem of its wc62 trace file)."""
    return tuple(f"{t.name}/{Path(str(t.trace).split('@')[0]).stem}" for t in tenants)


def violator_lines(results: Sequence[OrderResult], policies: Sequence[str], most: int = 12) -> str:
    """Per policy, the ``most`` most frequent violators of the second-half replay with the number
    of orders they violated in (and in how many of those they miss even alone), whole half and
    worst window; every violation through sharing with its order; then the violators of the
    first-half replay."""

    def listed(counts: Counter[str], alone: Counter[str]) -> str:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        text = ", ".join(
            f"{v} ×{n}" + (f" ({alone[v]} alone)" if alone[v] else "") for v, n in ranked[:most]
        )
        more = len(ranked) - most
        return (text + (f", and {more} more" if more > 0 else "")) or "none"

    lines = []
    for p in policies:
        rs = [r for r in results if r.policy == p]
        alone = Counter(v for r in rs for v in r.violators_alone)
        second = Counter(v for r in rs for v in r.violators)
        alone_w = Counter(v for r in rs for v in r.violators_window_alone)
        window = Counter(v for r in rs for v in r.violators_window)
        first = Counter(v for r in rs for v in r.violators_first_half)
        sharing = [f"{v} (order {r.order})" for r in rs for v in r.sharing]
        sharing_w = [f"{v} (order {r.order})" for r in rs for v in r.sharing_window]
        lines.append(f"- {p}, second halves: {listed(second, alone)}")
        lines.append(f"- {p}, second halves, worst window: {listed(window, alone_w)}")
        lines.append(f"- {p}, through sharing: {', '.join(sharing) or 'none'}")
        lines.append(f"- {p}, through sharing, worst window: {', '.join(sharing_w) or 'none'}")
        lines.append(f"- {p}, first halves: {listed(first, Counter())}")
    return "\n".join(lines)


def _slo_ratios(
    admitted: Sequence[Tenant], traces: Sequence[Trace], rules: Sequence[Configured], mode: str
) -> list[float]:
    """Each admitted tenant's latency at its percentile, ``traces`` replayed under ``rules`` with
    rate limiters in ``mode``, divided by its SLO."""
    measured = replayed(admitted, traces, rules, mode=mode)
    return [m / t.slo_s for m, t in zip(measured, admitted, strict=True)]


def _judged(
    admitted: Sequence[Tenant], traces: Sequence[Trace], rules: Sequence[Configured], mode: str
) -> list[Judged]:
    """Each admitted tenant's latency at its percentile, whole run and worst window, when
    ``traces`` are replayed together under ``rules``."""
    results = replay_results(admitted, traces, rules, mode=mode)
    return [results[t.name].judged(t.percentile) for t in admitted]


def _alone_second(pop: Population, spec: Tenant, link_bytes_per_s: float) -> Judged:
    """``spec``'s second half replayed alone on the network, judged both ways; measured once
    per (trace, percentile) per process (the SLO does not change it)."""
    memo: dict[tuple[str, float], Judged] = _STATE.setdefault("alone_second", {})  # type: ignore[assignment]
    key = (str(spec.trace), spec.percentile)
    if key not in memo:
        result = alone_result(spec, pop.second[str(spec.trace)], link_bytes_per_s)
        memo[key] = result.judged(spec.percentile)
    return memo[key]


def run(
    data: Path,
    count: int,
    orders: int,
    seed: int,
    replay_orders: int,
    scale: float | None,
    jobs: int,
    interval_ns: int = INTERVAL_NS,
    traces: Sequence[int] = tuple(range(TRACES)),
    policies: Sequence[str] = POLICIES,
    *,
    quiet: bool = True,
    runner: Runner | None = None,
) -> tuple[float, list[OrderResult]]:
    """The chosen SLO scale and every order's results, in order; the orders run on ``runner``
    (default: ``jobs`` local processes), each worker building the population once."""
    _init(str(data), count, seed, scale, interval_ns, traces, policies)
    chosen = float(_STATE["scale"])  # type: ignore[arg-type]
    key = (str(data), count, seed, chosen, interval_ns, tuple(traces), tuple(policies))
    _STATE["key"] = key
    print(f"SLO scale {chosen:g}: SLOs {[round(s * chosen * 1e3) for s in BASE_SLOS_S]} ms")
    tasks = [(o, o < replay_orders) for o in range(orders)]
    if runner is None:
        runner = Runner(jobs=jobs, progress=not progress_disabled(quiet))
    results: list[OrderResult] = []
    for part in runner.map(_order_task, tasks, shared=key, desc="snc_fig410", unit="order"):
        results += part
    return chosen, results


#: The admission rule each policy runs, as the tables name it (issue 14: every table says
#: whether the measured floor ran).
RULES = {
    **{p: rule.text() for p, rule in SNC_VARIANTS.items()},
    **dict.fromkeys(DNC_POLICIES, "DNC bound only"),
}


def summary_rows(
    results: Sequence[OrderResult], policies: Sequence[str] = POLICIES
) -> list[list[object]]:
    by = {p: [r for r in results if r.policy == p] for p in policies}
    best_dnc = max(
        (statistics.median(r.admitted for r in by[p]) for p in DNC_POLICIES if p in by),
        default=0,
    )
    best_dnc_bytes = max(
        (statistics.median(r.bytes_per_s for r in by[p]) for p in DNC_POLICIES if p in by),
        default=0.0,
    )
    rows = []
    for p in policies:
        rs = by[p]
        counts = [r.admitted for r in rs]
        volume = statistics.median(r.bytes_per_s for r in rs)
        replayed = [r for r in rs if r.replayed]
        rows.append(
            [
                p,
                RULES[p],
                len(rs),
                f"{statistics.median(counts):g}",
                f"{min(counts)}–{max(counts)}",
                f"{statistics.mean(counts):.1f}",
                f"{statistics.median(counts) / best_dnc:.2f}" if best_dnc else "-",
                f"{volume / 1e6:.2f}",
                f"{volume / best_dnc_bytes:.2f}" if best_dnc_bytes else "-",
                len(replayed),
                sum(r.admitted for r in replayed),
                sum(r.violations for r in replayed),
                sum(r.violations_alone for r in replayed),
                sum(len(r.sharing) for r in replayed),
                sum(len(r.violators_window) for r in replayed),
                sum(len(r.violators_window_alone) for r in replayed),
                sum(len(r.sharing_window) for r in replayed),
                sum(r.violations_first_half for r in replayed),
                f"{max((r.worst_ratio for r in replayed), default=math.nan):.2f}",
                f"{max((r.worst_window_ratio for r in replayed), default=math.nan):.2f}",
            ]
        )
    return rows


HEADER = [
    "policy",
    "admission rule",
    "orders",
    "admitted (median)",
    "min–max",
    "mean",
    "median ÷ best DNC baseline",
    "admitted MB/s (median)",
    "MB/s ÷ best DNC baseline",
    "orders replayed",
    "tenants replayed",
    "violations, whole half",
    "of which miss alone (whole half)",
    "through sharing (whole half)",
    "violations, worst 180 s window",
    "of which miss alone (window)",
    "through sharing (window)",
    "violations replaying the first halves",
    "worst p99.9 ÷ SLO",
    "worst window p99.9 ÷ SLO",
]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=180, help="tenants per order (default 180)")
    p.add_argument("--orders", type=int, default=20, help="random arrival orders (default 20)")
    p.add_argument(
        "--replay-orders",
        type=int,
        default=None,
        help="replay the admitted tenants in the simulator for the first N orders (default all)",
    )
    p.add_argument("--scale", type=float, help="SLO scale (default: from the traces, see above)")
    p.add_argument("--seed", type=int, default=410)
    add_executor(p, "orders")
    p.add_argument(
        "--mmpp-interval-s",
        type=float,
        default=1.0,
        help=(
            "diagnostic: SNC-Meister's MMPP fit interval in seconds (default 1, the reference "
            "model); other values write snc_fig410_interval<T>.md (docs/results-snc.md)"
        ),
    )
    p.add_argument(
        "--policies",
        type=lambda text: tuple(text.split(",")),
        default=POLICIES,
        help=(
            f"comma-separated policies (default {','.join(POLICIES)}; also {','.join(OPTIONAL)}); "
            "a choice other than the default writes snc_fig410_<policies>.md"
        ),
    )
    p.add_argument(
        "--stationary-only",
        action="store_true",
        help=(
            "build the tenants only from the traces that pass the stationarity tests of thesis "
            "§4.3.2 (ADF and KPSS at 5%%; writes snc_fig410_stationary.md)"
        ),
    )
    args = p.parse_args(argv)
    if unknown := [q for q in args.policies if q not in ALL_POLICIES]:
        p.error(f"unknown policies {', '.join(unknown)} (known: {', '.join(ALL_POLICIES)})")
    interval_ns = round(args.mmpp_interval_s * 1e9)
    if interval_ns <= 0:
        p.error("--mmpp-interval-s must be positive")
    data = find_data(args.data)
    replay_orders = args.orders if args.replay_orders is None else args.replay_orders
    start = time.perf_counter()
    traces = stationary_traces(data) if args.stationary_only else tuple(range(TRACES))
    if args.stationary_only:
        print(f"{len(traces)} of {TRACES} traces pass the stationarity tests: {list(traces)}")
    with runner_of(args) as runner:
        scale, results = run(
            data,
            args.tenants,
            args.orders,
            args.seed,
            replay_orders,
            args.scale,
            args.jobs,
            interval_ns,
            traces,
            args.policies,
            quiet=args.quiet,
            runner=runner,
        )
    name = "snc_fig410"
    if interval_ns != INTERVAL_NS:
        name += f"_interval{args.mmpp_interval_s:g}"
    if args.stationary_only:
        name += "_stationary"
    if args.policies != POLICIES:
        name += "_" + "+".join(args.policies)
    title = (
        f"Fig. 4.10 reproduction: {args.tenants} tenants "
        f"({'from the ' + str(len(traces)) + ' stationary' if args.stationary_only else 'from all'}"
        f" wc62 traces), {args.orders} orders, SLOs "
        f"{'/'.join(str(round(s * scale * 1e3)) for s in BASE_SLOS_S)} ms at the 99.9th "
        f"percentile (scale {scale:g}), seed {args.seed}, MMPP interval "
        f"{args.mmpp_interval_s:g} s, {time.perf_counter() - start:.0f} s"
    )
    per_order = [
        [
            o,
            *[
                next(r.admitted for r in results if r.order == o and r.policy == pol)
                for pol in args.policies
            ],
        ]
        for o in sorted({r.order for r in results})
    ]
    from tailbound.tables import markdown_table

    extra = (
        "\nAdmitted tenants per order:\n\n"
        + markdown_table(["order", *args.policies], per_order)
        + "\n\nViolators (`name/trace ×orders`, and in how many of them it misses even alone):\n\n"
        + violator_lines(results, args.policies)
    )
    png = write_outputs(
        Path(args.out),
        name,
        title,
        HEADER,
        summary_rows(results, args.policies),
        extra=extra + "\n",
    )
    plot(results, png, title, args.policies)
    return 0


def plot(
    results: Sequence[OrderResult], png: Path, title: str, policies: Sequence[str] = POLICIES
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, key, label in (
        (axes[0], "admitted", "admitted tenants"),
        (axes[1], "bytes_per_s", "admitted tenants' MB/s"),
    ):
        data = [
            [
                getattr(r, key) / (1e6 if key == "bytes_per_s" else 1)
                for r in results
                if r.policy == p
            ]
            for p in policies
        ]
        ax.boxplot(data)
        ax.set_xticks(range(1, len(policies) + 1), policies)
        ax.set_ylabel(label)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
