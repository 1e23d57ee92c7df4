"""Results of a simulation: per-request latencies and stage times, percentiles, windows, SLOs.

All statistics are computed over whole numpy arrays. The achieved ``p``-percentile is the smallest
latency ``x`` such that at least a fraction ``p`` of the requests took at most ``x``
(``numpy.quantile(..., method="inverted_cdf")``), so an SLO ``(latency_s, p)`` is met exactly when
at least ``p`` of the requests finished within ``latency_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from tailbound.model import Slo

#: The percentiles every report shows (fractions).
REPORT_PERCENTILES: tuple[float, ...] = (0.5, 0.9, 0.99, 0.999, 0.9999, 1.0)


def percentile(latency: NDArray[np.float64], p: float) -> float:
    """The ``p``-percentile (``0 < p <= 1``) of ``latency``; NaN when empty.

    >>> percentile(np.array([1.0, 2.0, 3.0, 4.0]), 0.75)
    3.0
    >>> percentile(np.array([1.0, 2.0, 3.0, 4.0]), 1.0)
    4.0
    """
    if latency.size == 0:
        return float("nan")
    return float(np.quantile(latency, p, method="inverted_cdf"))


#: SNC-Meister's SLO check (thesis §4.3): the SLO's percentile over 3-minute windows of issue
#: time. *Choice* (the thesis does not say how the windows slide): windows start every
#: :data:`SLO_WINDOW_STEP_S` seconds from the first request, so a 300 s run has 13 of them.
SLO_WINDOW_S = 180.0
SLO_WINDOW_STEP_S = 10.0


def worst_window_percentile(
    issue: NDArray[np.float64],
    latency: NDArray[np.float64],
    p: float,
    window_s: float,
    step_s: float | None = None,
) -> float:
    """The largest ``p``-percentile over windows ``[k·step, k·step + window)`` of issue time.

    SNC-Meister checks the 99.9th percentile over 3-minute windows. ``step_s`` defaults to a
    tenth of the window. Windows with no request are skipped; a run shorter than one window is
    one window.

    >>> t = np.arange(10.0)
    >>> lat = np.array([1, 1, 1, 1, 1, 9, 9, 1, 1, 1], dtype=float)
    >>> worst_window_percentile(t, lat, 0.5, window_s=2.0, step_s=1.0)
    9.0
    """
    if issue.size == 0:
        return float("nan")
    step = window_s / 10 if step_s is None else step_s
    order = np.argsort(issue, kind="stable")
    t, lat = issue[order], latency[order]
    starts = np.arange(t[0], max(t[-1] - window_s, t[0]) + step / 2, step)
    lo = np.searchsorted(t, starts, side="left")
    hi = np.searchsorted(t, starts + window_s, side="left")
    worst = float("-inf")
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):  # one iteration per window
        if b > a:
            worst = max(worst, percentile(lat[a:b], p))
    return worst


@dataclass(frozen=True)
class Judged:
    """A tenant's latency (s) at its SLO's percentile judged two ways: over the whole run
    (``whole_s``) and as the worst over 3-minute windows (``window_s``, SNC-Meister's check)."""

    whole_s: float
    window_s: float

    def misses(self, slo_s: float) -> tuple[bool, bool]:
        """Whether each judgement is above ``slo_s`` (whole, window)."""
        return self.whole_s > slo_s, self.window_s > slo_s


@dataclass(frozen=True, eq=False)
class WorkloadResult:
    """One workload's requests after a run.

    ``issue`` holds issue times (s); ``stage_time[:, s]`` the seconds each request spent in stage
    ``s`` of its route (named in ``stages``); ``latency`` the end-to-end seconds. Requests not
    finished when the run stopped are ``NaN`` and excluded from the statistics.
    """

    name: str
    stages: tuple[str, ...]
    issue: NDArray[np.float64]
    exit: NDArray[np.float64]
    slo: Slo | None = None

    @property
    def finished(self) -> NDArray[np.bool_]:
        """Mask of requests that completed every stage."""
        if not self.stages:
            return np.isfinite(self.issue)
        return np.isfinite(self.exit[:, len(self.stages) - 1])

    @property
    def latency(self) -> NDArray[np.float64]:
        """End-to-end latency in seconds of every finished request, in issue order."""
        done = self.finished
        if not self.stages:
            return np.zeros(int(done.sum()))
        return self.exit[done, len(self.stages) - 1] - self.issue[done]

    @property
    def stage_time(self) -> NDArray[np.float64]:
        """Seconds each finished request spent in each stage, shape ``(n, len(stages))``."""
        done = self.finished
        k = len(self.stages)
        entered = np.column_stack([self.issue[done], self.exit[done, : k - 1]]) if k else None
        return self.exit[done, :k] - entered if entered is not None else np.zeros((0, 0))

    def percentile(self, p: float) -> float:
        """The ``p``-percentile end-to-end latency in seconds."""
        return percentile(self.latency, p)

    def percentiles(self) -> dict[float, float]:
        """Latency at each of :data:`REPORT_PERCENTILES`."""
        lat = self.latency
        return {p: percentile(lat, p) for p in REPORT_PERCENTILES}

    def throughput(self) -> float:
        """Finished requests per second between the first issue and the last completion."""
        done = self.finished
        if not done.any() or not self.stages:
            return 0.0
        span = float(np.max(self.exit[done, len(self.stages) - 1]) - np.min(self.issue[done]))
        return float(done.sum()) / span if span > 0 else float("inf")

    def worst_window(
        self, window_s: float = SLO_WINDOW_S, p: float | None = None, step_s: float | None = None
    ) -> float:
        """Worst ``p``-percentile (default: the SLO's) over windows of ``window_s`` starting every
        ``step_s`` (default a tenth of the window; :func:`worst_window_percentile`)."""
        q = p if p is not None else (self.slo.percentile if self.slo else 0.999)
        done = self.finished
        return worst_window_percentile(self.issue[done], self.latency, q, window_s, step_s)

    def judged(self, p: float) -> Judged:
        """The ``p``-percentile over the whole run and over SNC-Meister's windows
        (:data:`SLO_WINDOW_S` every :data:`SLO_WINDOW_STEP_S`)."""
        return Judged(self.percentile(p), self.worst_window(SLO_WINDOW_S, p, SLO_WINDOW_STEP_S))

    @property
    def achieved(self) -> float:
        """The latency at the SLO's percentile (NaN without an SLO)."""
        return self.percentile(self.slo.percentile) if self.slo else float("nan")

    @property
    def slo_met(self) -> bool | None:
        """Whether the SLO held over the whole run (``None`` without an SLO)."""
        if self.slo is None:
            return None
        return bool(self.achieved <= self.slo.latency_s)


@dataclass(frozen=True, eq=False)
class ControlLog:
    """The limits a device's controller applied, one row per workload and decision, in order
    (the initial ones at time 0): ``time_s`` seconds, ``workload`` names, ``rate_iops`` the
    pacing rate in requests per second and ``depth`` the IO depth in requests (``inf``:
    unlimited). ``tailbound_core::sim::control``."""

    time_s: NDArray[np.float64]
    workload: tuple[str, ...]
    rate_iops: NDArray[np.float64]
    depth: NDArray[np.float64]

    def of(self, workload: str) -> tuple[NDArray[np.float64], ...]:
        """``(time_s, rate_iops, depth)`` of one workload's rows."""
        mask = np.array([w == workload for w in self.workload], dtype=bool)
        return self.time_s[mask], self.rate_iops[mask], self.depth[mask]


@dataclass(frozen=True)
class SimResults:
    """Every workload's result, the run's event count and simulated time, and the log of each
    controlled device's controller by device name (``control``; empty without one)."""

    workloads: tuple[WorkloadResult, ...]
    events: int
    now: float
    control: dict[str, ControlLog] = field(default_factory=dict)

    def __getitem__(self, name: str) -> WorkloadResult:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)

    def table(self, window_s: float = 180.0) -> str:
        """A Markdown table per workload: SLO, achieved percentile, met, the worst window of
        ``window_s`` at the SLO's percentile (SNC-Meister's check), p50, p99.9, max, requests."""
        rows = [
            f"| workload | SLO | achieved | met | worst {window_s:g} s window | p50 | p99.9 | max "
            "| requests |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for w in self.workloads:
            ps = w.percentiles()
            slo = f"{1e3 * w.slo.latency_s:.3g} ms @ {100 * w.slo.percentile:g}%" if w.slo else "-"
            met = {None: "-", True: "yes", False: "NO"}[w.slo_met]
            achieved = f"{1e3 * w.achieved:.3f} ms" if w.slo else "-"
            window = f"{1e3 * w.worst_window(window_s):.3f} ms" if w.slo else "-"
            rows.append(
                f"| {w.name} | {slo} | {achieved} | {met} | {window} | {1e3 * ps[0.5]:.3f} ms "
                f"| {1e3 * ps[0.999]:.3f} ms | {1e3 * ps[1.0]:.3f} ms | {int(w.finished.sum())} |"
            )
        return "\n".join(rows)
