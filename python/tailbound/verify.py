"""Verification: replay a plan's tenants in the simulator and check every promise it made.

WorkloadCompactor's evaluation (thesis §5.3, paper §5.2) plans from the first half of each trace
with a safety margin and replays the second half through the plan's priorities and rate limits:
every tenant's 99.9th percentile must stay under its SLO. :func:`replay_plan` does exactly that
for any :class:`~tailbound.plan.Plan` and any traces (the same halves, other halves, or the
planning traces themselves, where the plan's bounds must hold for every request).

Latency here is end to end from the request's arrival at its own shaper, through the three stages
(the network-calculus bound of a tenant includes its shaper delay), in seconds.

A tenant with a **graduated SLO** (:attr:`tailbound.model.Slo.grades`, Nested QoS: "90% within
5 ms, 95% within 50 ms, all within 500 ms") is checked grade by grade: each grade's fraction of
requests within its latency (:class:`GradeCheck`), and the SLO is met when every grade is.

A tenant with a **throughput SLO** (:attr:`tailbound.model.Slo.throughput`, PSLO: "at least
150 IOPS") is checked for the throughput it achieved (:class:`ThroughputCheck`): its completions
per second between its first and its last completion, ``(C − 1) / (t_C − t_1)`` — PSLO's
``Th`` (completions in an interval over its length, Eq. 8) over the whole run, which a stream
served at a steady rate ``r`` achieves exactly — in requests per second, or the bytes of those
``C − 1`` completions per second for a bytes-per-second SLO. It is reported beside the latency
verdict (``met`` stays the latency SLO's) and a throughput missed fails the verification too
(:attr:`Verification.all_held`).
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.atomic import atomic_path
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Plan
from tailbound.plan_inputs import resolve_inputs
from tailbound.profiles.tokens import MessageSizes
from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.results import SimResults, WorkloadResult
from tailbound.sim.scenario import Scenario
from tailbound.traces.readers import read_trace
from tailbound.traces.trace import Trace


@dataclass(frozen=True)
class GradeCheck:
    """One grade of a graduated SLO against a replay: ``within`` is the fraction of the
    tenant's requests whose latency is at most ``latency_s`` (NaN without requests), which must
    be at least ``fraction``."""

    latency_s: float
    fraction: float
    within: float

    @property
    def met(self) -> bool:
        """At least ``fraction`` of the requests finished within ``latency_s``."""
        return self.within >= self.fraction


#: The CSV columns of a throughput SLO (:meth:`Verification.to_csv`): the SLO, its unit
#: (``iops`` or ``bytes_per_s``), the throughput achieved in that unit, and whether it was met.
THROUGHPUT_COLUMNS = ("throughput_slo", "throughput_unit", "throughput", "throughput_met")


@dataclass(frozen=True)
class ThroughputCheck:
    """A throughput SLO against a replay: ``slo`` in ``unit`` (``"iops"``, requests per second,
    or ``"bytes_per_s"``) and the throughput ``achieved`` in the same unit (module
    documentation; NaN with fewer than two completions)."""

    slo: float
    unit: str
    achieved: float

    @property
    def met(self) -> bool:
        """The achieved throughput is at least the SLO."""
        return self.achieved >= self.slo

    def text(self) -> str:
        """``"152 / 150 IOPS"`` (achieved / SLO), bytes per second in MB/s."""
        if self.unit == "iops":
            return f"{self.achieved:.4g} / {self.slo:.4g} IOPS"
        return f"{self.achieved / 1e6:.4g} / {self.slo / 1e6:.4g} MB/s"


def achieved_throughput(
    exit_s: NDArray[np.float64], size: NDArray[np.float64] | None, unit: str
) -> float:
    """The throughput of completions at ``exit_s`` (s, NaN: not finished) in ``unit``
    (module documentation): ``(C − 1) / (t_C − t_1)`` requests per second, or the bytes
    (``size``, one per request, in the same order) of the completions after the first per
    second; NaN with fewer than two completions or no time between them.

    >>> round(achieved_throughput(np.array([0.5, 0.6, 0.7, np.nan]), None, "iops"), 9)
    10.0
    >>> exits, sizes = np.array([0.5, 0.6, 0.7]), np.array([1e3, 2e3, 4e3])
    >>> round(achieved_throughput(exits, sizes, "bytes_per_s"), 6)  # 6 kB in 0.2 s
    30000.0
    """
    done = np.isfinite(exit_s)
    if done.sum() < 2:
        return math.nan
    t = exit_s[done]
    order = np.argsort(t, kind="stable")
    span = float(t[order[-1]] - t[order[0]])
    if not span > 0:
        return math.nan
    if unit == "iops":
        return (len(t) - 1) / span
    if size is None:
        raise ValueError("a throughput SLO in bytes per second needs the requests' sizes")
    return float(np.sum(np.asarray(size, dtype=np.float64)[done][order[1:]])) / span


@dataclass(frozen=True)
class TenantCheck:
    """One tenant's promise against its replay (seconds).

    ``achieved_s`` is the latency at the SLO's percentile over the whole replay,
    ``worst_window_s`` the worst such percentile over sliding windows (SNC-Meister's check),
    ``max_s`` the largest latency; ``bound_s`` the plan's prediction at ``bound_percentile``
    (1 for a worst-case bound) and ``at_bound_s`` the replayed latency at that percentile (the
    maximum for a worst-case bound), which the bound must not be below. ``grades`` checks each
    grade of a graduated SLO (empty for a single pair; ``achieved_s`` is then at the innermost
    grade's percentile). ``throughput`` checks the throughput SLO (``None`` without one).
    """

    name: str
    slo: Slo
    bound_s: float
    achieved_s: float
    worst_window_s: float
    max_s: float
    requests: int
    bound_percentile: float = 1.0
    at_bound_s: float = 0.0
    grades: tuple[GradeCheck, ...] = ()
    throughput: ThroughputCheck | None = None

    @property
    def met(self) -> bool:
        """The SLO held over the replay: the latency at its percentile within it, or, for a
        graduated SLO, every grade met."""
        if self.grades:
            return all(g.met for g in self.grades)
        return self.slo.met_by(self.achieved_s)

    @property
    def bound_held(self) -> bool:
        """The plan's bound held over the replay (a relative 1e-9 for rounding)."""
        return self.at_bound_s <= self.bound_s * (1 + 1e-9)

    @property
    def ratio(self) -> float:
        """Replayed latency at the bound's percentile over the bound (above 1: exceeded)."""
        return self.at_bound_s / self.bound_s if self.bound_s > 0 else math.inf


@dataclass(frozen=True)
class Verification:
    """A replayed plan: the simulator's results and one check per planned tenant."""

    plan: Plan
    results: SimResults
    checks: tuple[TenantCheck, ...]

    @property
    def all_met(self) -> bool:
        """Every planned tenant met its SLO."""
        return all(c.met for c in self.checks)

    @property
    def violations(self) -> list[str]:
        """The tenants that missed their SLO."""
        return [c.name for c in self.checks if not c.met]

    @property
    def exceeded(self) -> list[str]:
        """The tenants whose replayed latency exceeded the plan's bound."""
        return [c.name for c in self.checks if not c.bound_held]

    @property
    def throughput_missed(self) -> list[str]:
        """The tenants that did not achieve their throughput SLO."""
        return [c.name for c in self.checks if c.throughput is not None and not c.throughput.met]

    @property
    def all_held(self) -> bool:
        """Every SLO met (latency and throughput) and every bound held."""
        return self.all_met and not self.exceeded and not self.throughput_missed

    def table(self) -> str:
        """A Markdown table: server, SLO, predicted bound, achieved percentile, met (and, when a
        tenant has a throughput SLO, the throughput achieved against it)."""
        with_throughput = any(c.throughput is not None for c in self.checks)
        extra = " throughput | throughput met |" if with_throughput else ""
        rows = [
            "| tenant | server | SLO | achieved | worst window | max | bound | SLO met "
            "| bound held |" + extra,
            "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if with_throughput else ""),
        ]
        for c in self.checks:
            server = self.plan.tenant(c.name).server
            held = "yes" if c.bound_held else f"NO ({c.ratio:.2f}×)"
            row = (
                f"| {c.name} | {server} | {_ms(c.slo.latency_s)} @ {100 * c.slo.percentile:g}% "
                f"| {_ms(c.achieved_s)} | {_ms(c.worst_window_s)} | {_ms(c.max_s)} "
                f"| {_ms(c.bound_s)} @ {100 * c.bound_percentile:g}% "
                f"| {'yes' if c.met else 'NO'} | {held} |"
            )
            if with_throughput:
                t = c.throughput
                row += " - | - |" if t is None else f" {t.text()} | {'yes' if t.met else 'NO'} |"
            rows.append(row)
        graded = [c for c in self.checks if c.grades]
        if graded:
            rows += [
                "",
                "| tenant | grade | latency | promised | within | met |",
                "|---|---|---|---|---|---|",
            ]
            for c in graded:
                for i, g in enumerate(c.grades, start=1):
                    rows.append(
                        f"| {c.name} | {i} | {_ms(g.latency_s)} | {100 * g.fraction:g}% "
                        f"| {100 * g.within:.2f}% | {'yes' if g.met else 'NO'} |"
                    )
        return "\n".join(rows)

    def grades_to_csv(self, path: str | Path) -> None:
        """Write one row per grade of every graduated SLO (``tenant, grade, latency_s,
        fraction, within, met``; grades counted from 1), atomically."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["tenant", "grade", "latency_s", "fraction", "within", "met"])
            for c in self.checks:
                for i, g in enumerate(c.grades, start=1):
                    writer.writerow([c.name, i, g.latency_s, g.fraction, g.within, g.met])

    def to_csv(self, path: str | Path) -> None:
        """Write the checks as CSV (seconds), atomically; when a tenant has a throughput SLO,
        :data:`THROUGHPUT_COLUMNS` follow the others (empty for a tenant without one)."""
        with_throughput = any(c.throughput is not None for c in self.checks)
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(
                [
                    "tenant",
                    "server",
                    "slo_s",
                    "percentile",
                    "bound_s",
                    "achieved_s",
                    "worst_window_s",
                    "max_s",
                    "requests",
                    "met",
                    "bound_percentile",
                    "at_bound_s",
                    "bound_held",
                    *(THROUGHPUT_COLUMNS if with_throughput else ()),
                ]
            )
            for c in self.checks:
                writer.writerow(
                    [
                        c.name,
                        self.plan.tenant(c.name).server,
                        c.slo.latency_s,
                        c.slo.percentile,
                        c.bound_s,
                        c.achieved_s,
                        c.worst_window_s,
                        c.max_s,
                        c.requests,
                        c.met,
                        c.bound_percentile,
                        c.at_bound_s,
                        c.bound_held,
                        *(
                            ()
                            if not with_throughput
                            else ("", "", "", "")
                            if c.throughput is None
                            else (
                                c.throughput.slo,
                                c.throughput.unit,
                                c.throughput.achieved,
                                c.throughput.met,
                            )
                        ),
                    ]
                )


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.3g} ms"


def replay_plan(
    plan: Plan,
    traces: Mapping[str, Trace | Mapping[str, Any]],
    *,
    link_bandwidth_bytes_per_s: float,
    profile: str | Path | Mapping[str, Any] | None = None,
    mode: str | None = None,
    mtu_bytes: float = 1500,
    propagation_s: float = 0.0,
    window_s: float = 180.0,
    devices: Mapping[str, Mapping[str, Any]] | None = None,
    messages: MessageSizes | None = None,
) -> Verification:
    """Simulate ``plan`` with each tenant replaying ``traces[name]`` and check every tenant.

    ``profile`` is the SSD profile of the plan's devices (path or JSON document; not needed for a
    network-only plan), ``devices`` a device's own scenario table by device name (a disk);
    ``mode`` overrides the plan's rate-limiter behaviour (``"shaping"`` or ``"demotion"``,
    PriorityMeister's storage enforcer) at every queue; ``messages`` the network messages' sizes
    (default: the token model's; ``tailbound.profiles.wire.wire_messages`` for bytes on a wire).
    """
    doc = scenario_from_plan(
        plan,
        traces,
        profile=profile,
        link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s,
        mode=mode,
        mtu_bytes=mtu_bytes,
        propagation_s=propagation_s,
        devices=devices,
    )
    if messages is not None:
        doc["network"]["messages"] = dataclasses.asdict(messages)
    scenario = Scenario.from_dict(doc)
    simulator = scenario.simulator()
    simulator.run()
    sizes = {w.name: np.asarray(w.trace.size, dtype=np.float64) for w in scenario.workloads}
    return check_results(plan, simulator.results(), window_s=window_s, sizes=sizes)


def replay_saved(
    plan: Plan,
    path: str | Path,
    *,
    tenants: str | Path | None = None,
    profile: str | Path | None = None,
    link_bandwidth_bytes_per_s: float | None = None,
    span: Callable[[Trace], Trace] | None = None,
    **options: Any,
) -> Verification:
    """``plan``, saved at ``path``, replayed with the inputs it records — what ``tailbound
    verify --plan`` replays: its traces (each checked against the hash the plan records), SSD
    profile and link bandwidth (:func:`tailbound.plan_inputs.resolve_inputs`), or the overrides
    ``tenants`` (a tenants file joined by name), ``profile`` and ``link_bandwidth_bytes_per_s``;
    ``span`` cuts each trace (a half, a window); ``options`` go to :func:`replay_plan`
    (``mode``, ``mtu_bytes``, ``propagation_s``, ``window_s``). A plan placing tenants on
    devices with no profile recorded or given is a :class:`~tailbound.errors.ConfigError`
    naming ``path``."""
    inputs = resolve_inputs(
        plan,
        path,
        [t.name for t in plan.tenants],
        tenants=tenants,
        profile=profile,
        link_bytes_per_s=link_bandwidth_bytes_per_s,
    )
    if any(t.device is not None for t in plan.tenants):
        if inputs.profile is None:
            raise ConfigError(
                path, "the plan places tenants on devices and records no profile: give --profile"
            )
        inputs.device_profile()  # a malformed profile is named here, with its field
    link = inputs.link_bytes_per_s
    if link is None:  # a plan recording no inputs: the tenants file's, as before version 3
        assert inputs.tenants_file is not None
        link = inputs.tenants_file.link_bytes_per_s
    cut = span if span is not None else (lambda trace: trace)
    return replay_plan(
        plan,
        {name: cut(read_trace(ref.path, ref.format)) for name, ref in inputs.traces.items()},
        profile=inputs.profile,
        link_bandwidth_bytes_per_s=link,
        **options,
    )


def check_results(
    plan: Plan,
    results: SimResults,
    *,
    window_s: float = 180.0,
    sizes: Mapping[str, NDArray[np.float64]] | None = None,
) -> Verification:
    """Check every planned tenant with an SLO against ``results`` (a simulation, or a live
    replay's measurements in the same form: ``tailbound.enforce.replay``). ``sizes`` gives each
    tenant's request sizes in bytes, in the order of its results' requests (needed for a
    throughput SLO in bytes per second)."""
    checks = []
    for tenant in plan.tenants:
        if tenant.slo is None:  # best effort: nothing was promised
            continue
        w = results[tenant.name]
        biggest = float(w.latency.max()) if w.latency.size else 0.0
        at_bound = (
            biggest if tenant.bound.percentile >= 1.0 else w.percentile(tenant.bound.percentile)
        )
        checks.append(
            TenantCheck(
                name=tenant.name,
                slo=tenant.slo,
                bound_s=tenant.latency_bound_s,
                achieved_s=w.percentile(tenant.slo.percentile),
                worst_window_s=w.worst_window(window_s, tenant.slo.percentile),
                max_s=biggest,
                requests=int(w.latency.size),
                bound_percentile=tenant.bound.percentile,
                at_bound_s=at_bound,
                grades=tuple(
                    GradeCheck(latency, fraction, _within(w.latency, latency))
                    for latency, fraction in tenant.slo.grades
                ),
                throughput=_throughput(tenant.slo, w, (sizes or {}).get(tenant.name)),
            )
        )
    return Verification(plan, results, tuple(checks))


def _throughput(
    slo: Slo, w: WorkloadResult, size: NDArray[np.float64] | None
) -> ThroughputCheck | None:
    """The throughput SLO of ``slo`` checked against ``w``'s completions."""
    if slo.throughput is None:
        return None
    value, unit = slo.throughput
    exit_s = w.exit[:, len(w.stages) - 1] if w.stages else w.issue
    return ThroughputCheck(value, unit, achieved_throughput(exit_s, size, unit))


def _within(latency: NDArray[np.float64], latency_s: float) -> float:
    """The fraction of ``latency`` at most ``latency_s`` (NaN when empty)."""
    return float(np.mean(latency <= latency_s)) if latency.size else math.nan
