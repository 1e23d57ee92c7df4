"""Which wc62 traces are stationary, by the thesis' tests and by their tail latency alone.

Thesis §4.3.2 vetted its traces with standard stationarity tests before admitting them with SNC.
For each wc62 trace this writes the ADF and KPSS p-values of its per-second request counts and
bytes and whether it passes (:mod:`tailbound.traces.stationarity`, 5%), next to what decides the
Fig. 4.10 violations that no admission decision can prevent: how much the trace's 99.9th
percentile latency *alone* on the network changes from one 300 s stretch to another. The trace is
replayed once alone through its four 125 MB/s links (as
:func:`tailbound.policies.floors.alone_latency` does), and its requests' latencies are grouped by
circular 300 s windows starting every ``--step-s`` seconds — the halves a circularly shifted copy
of the trace is decided on and replayed in Fig. 4.10 (up to the queue carried into a window,
which the copy's own replay starts without).

Run: ``python -m tailbound.experiments.snc_stationarity --out out/experiments`` (about 10 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.experiments._snc_common import find_data, parser, trace_path, write_outputs
from tailbound.experiments.snc_fig410 import TRACE_S, TRACES
from tailbound.model import Slo, Tenant
from tailbound.plotting import save_figure
from tailbound.policies.admission import Configured
from tailbound.policies.floors import replay
from tailbound.sim.results import percentile
from tailbound.traces import read_trace
from tailbound.traces.stationarity import Stationarity, stationarity

WINDOW_S = TRACE_S / 2
PERCENTILE = 0.999


def window_percentiles(
    times_s: NDArray, latencies_s: NDArray, duration_s: float, window_s: float, step_s: float
) -> NDArray:
    """The :data:`PERCENTILE` latency (s) of the requests arriving in each circular window
    ``[start, start + window_s)`` of a ``duration_s`` trace, ``start`` every ``step_s`` seconds
    (NaN for a window without requests)."""
    starts = np.arange(0.0, duration_s, step_s)
    inside = ((times_s[None, :] - starts[:, None]) % duration_s) < window_s
    return np.array([percentile(latencies_s[m], PERCENTILE) for m in inside])


@dataclass(frozen=True)
class TraceReport:
    """One trace's tests and its best and worst window latency alone (s)."""

    index: int
    requests: int
    tests: Stationarity
    best_s: float
    worst_s: float

    @property
    def passes(self) -> bool:
        return self.tests.passes()

    def row(self) -> list[object]:
        t = self.tests
        return [
            self.index,
            self.requests,
            *(f"{p:.3f}" for p in (t.counts.adf_p, t.counts.kpss_p, t.bytes.adf_p, t.bytes.kpss_p)),
            "yes" if self.passes else "no",
            f"{self.best_s * 1e3:.1f}",
            f"{self.worst_s * 1e3:.1f}",
            f"{self.worst_s / self.best_s:.2f}",
        ]


def report(data: Path, index: int, step_s: float) -> TraceReport:
    """wc62 trace ``index``'s tests and window latencies alone (module docstring)."""
    trace = read_trace(trace_path(data, index), duration_s=TRACE_S)
    spec = Tenant(
        "alone", Slo(1.0, PERCENTILE), Path(trace.name), client_host="client", server="server"
    )
    latencies = replay([spec], [trace], [Configured(0)])[spec.name]
    windows = window_percentiles(trace.time, latencies, TRACE_S, WINDOW_S, step_s)
    return TraceReport(
        index,
        len(trace),
        stationarity(trace),
        float(np.nanmin(windows)),
        float(np.nanmax(windows)),
    )


HEADER = [
    "trace",
    "requests",
    "ADF p (counts)",
    "KPSS p (counts)",
    "ADF p (bytes)",
    "KPSS p (bytes)",
    "passes (5%)",
    "p99.9 alone, best 300 s window (ms)",
    "worst window (ms)",
    "worst ÷ best",
]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument(
        "--step-s", type=float, default=10.0, help="seconds between window starts (default 10)"
    )
    p.add_argument(
        "--traces",
        type=lambda text: [int(i) for i in text.split(",")],
        default=list(range(TRACES)),
        help="comma-separated wc62 trace numbers (default all 62)",
    )
    args = p.parse_args(argv)
    if not 0 < args.step_s <= WINDOW_S:
        p.error(f"--step-s must be in (0, {WINDOW_S:g}]")
    if not all(0 <= i < TRACES for i in args.traces):
        p.error(f"--traces must be numbers from 0 to {TRACES - 1}")
    data = find_data(args.data)
    start = time.perf_counter()
    reports = [report(data, i, args.step_s) for i in args.traces]
    unstable = [r for r in reports if r.worst_s > max(1.5 * r.best_s, 0.010)]
    extra = (
        f"\n{sum(r.passes for r in reports)} of {len(reports)} traces pass both tests on both "
        f"series. {len(unstable)} traces have a worst window above 10 ms and 1.5× their best; "
        f"{sum(r.passes for r in unstable)} of them pass the tests: "
        f"{', '.join(str(r.index) for r in unstable if r.passes)}.\n"
    )
    title = (
        f"Stationarity of the wc62 traces: ADF/KPSS at 5% and the 99.9th percentile latency "
        f"alone over 300 s windows every {args.step_s:g} s ({time.perf_counter() - start:.0f} s)"
    )
    png = write_outputs(
        Path(args.out), "snc_stationarity", title, HEADER, [r.row() for r in reports], extra
    )
    plot(reports, png, title)
    return 0


def plot(reports: list[TraceReport], png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.8))
    for passes, colour, label in ((True, "tab:blue", "passes"), (False, "tab:red", "fails")):
        picked = [r for r in reports if r.passes == passes]
        xs = [r.index for r in picked]
        best, worst = [r.best_s * 1e3 for r in picked], [r.worst_s * 1e3 for r in picked]
        ax.vlines(xs, best, worst, colour, lw=3, label=f"{label} ADF+KPSS")
        ax.plot(xs + xs, best + worst, "_", color=colour, ms=8)  # visible when best == worst
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 8)  # room for the legend above the data
    ax.set_xlabel("wc62 trace")
    ax.set_ylabel("p99.9 alone per 300 s window (ms)")
    ax.legend(loc="upper left", ncols=2)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
