"""Shared helpers of the SNC reproductions: locating the wc62 traces, building tenants, output
(table and plot), and the admission figures' replay and judgement of admitted sets."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.atomic import write_text_atomic
from tailbound.cli.options import add_quiet
from tailbound.errors import ConfigError
from tailbound.experiments.wc_common import find_wc62
from tailbound.model import DEFAULT_LINK_BYTES_PER_S, Slo, Tenant, TenantSet
from tailbound.plotting import save_figure
from tailbound.policies.admission import Configured
from tailbound.tables import markdown_table
from tailbound.traces.trace import Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: wc62 traces with a similar, moderate request-direction load (0.1–0.3% of 1 Gb/s each).
SIMILAR_TRACES = (1, 5, 7, 8, 9, 10, 11, 29, 35, 38, 40, 43, 57, 59, 61, 14)


def find_data(explicit: str | None = None) -> Path:
    """The shared data folder: ``--data``, or the parent of the wc62 folder
    :func:`~tailbound.experiments.wc_common.find_wc62` finds (``$TAILBOUND_DATA``, or
    ``shared/data`` beside an ancestor of the working directory or of this package)."""
    if explicit:
        return Path(explicit)
    try:
        return find_wc62().parent
    except ConfigError as e:
        raise SystemExit(e.message) from None


def trace_path(data: Path, index: int) -> Path:
    return data / "wc62" / "traces" / f"trace{index:04d}.txt"


def tenant(
    data: Path,
    name: str,
    index: int,
    client: str,
    server: str,
    *,
    slo_s: float = 0.05,
    percentile: float = 0.999,
    group: str | None = None,
) -> Tenant:
    return Tenant(
        name=name,
        slo=Slo(slo_s, percentile),
        trace=trace_path(data, index),
        client_host=client,
        server=server,
        group=group,
    )


def tenant_set(tenants: Sequence[Tenant], link_bytes_per_s: float) -> TenantSet:
    return TenantSet(tuple(tenants), link_bytes_per_s)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default="out/experiments", help="output folder (table and plot)")
    p.add_argument("--data", help="shared data folder (default: found automatically)")
    add_quiet(p)
    return p


def write_outputs(
    out: Path, name: str, title: str, header: list[str], rows: list[list], extra: str = ""
) -> Path:
    """Write ``<name>.md`` (title, Markdown table, then ``extra``) atomically and return the
    path of the plot to make."""
    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(header, rows)
    write_text_atomic(out / f"{name}.md", f"# {title}\n\n{table}\n{extra}")
    print(table)
    return out / f"{name}.png"


#: One line of a plot: x values, latencies in seconds (drawn in ms), matplotlib line keywords.
Line = tuple[Sequence[float], Sequence[float], Mapping[str, Any]]


def plot_latency_ms(
    png: Path, lines: Sequence[Line], xlabel: str, ylabel: str, *, log_y: bool = False
) -> None:
    """Save a 5 × 3.5 inch plot of latency lines (seconds in, milliseconds on the y axis) with a
    legend to ``png`` (120 dpi); ``log_y`` draws the y axis on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for xs, latencies_s, style in lines:
        ax.plot(xs, [v * 1e3 for v in latencies_s], **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, png, dpi=120)


# ------------------------------------------------------------------------ admission and replay
# Shared by the admission figures (4.11, 4.12, 4.15, 4.17–4.19): hosts for a scaled cluster, the
# enforcement of "no admission control" and of OPT, and the judgement of a replayed set.


def rehost(tenants: Sequence[Tenant], clients: int, servers: int, seed: int) -> list[Tenant]:
    """``tenants`` moved onto ``clients`` client and ``servers`` server hosts: tenant ``i`` on
    client ``i mod clients`` and a server drawn uniformly (seeded), as Fig. 4.10's population."""
    import dataclasses
    import random

    if clients < 1 or servers < 1:
        raise ValueError(f"need at least one client and one server host ({clients}, {servers})")
    rng = random.Random(seed)
    return [
        dataclasses.replace(
            t, client_host=f"client{i % clients:02d}", server=f"server{rng.randrange(servers)}"
        )
        for i, t in enumerate(tenants)
    ]


def by_slo(tenants: Sequence[Tenant]) -> list[Configured]:
    """Priorities by SLO and nothing else (no rate limit): what SNC-Meister enforces, and what
    no admission control and OPT run with."""
    from tailbound.snc.tenants import priorities_by_slo

    return [Configured(level) for level in priorities_by_slo([t.slo_s for t in tenants])]


def bytes_per_s(traces: Sequence[Trace]) -> float:
    """Mean request + response bytes per second of ``traces`` together (the thesis' second
    metric: the volume the admitted tenants transfer)."""
    import numpy as np

    from tailbound.profiles.tokens import MessageSizes

    m = MessageSizes()
    total = sum(float(np.sum(m.request_bytes(t)) + np.sum(m.response_bytes(t))) for t in traces)
    return total / max((t.duration for t in traces), default=1.0)


@dataclass(frozen=True)
class Judged:
    """One replayed tenant against its SLO: its latency at its percentile over the whole
    replayed half and at the worst window (:meth:`~tailbound.sim.results.WorkloadResult.judged`:
    :data:`~tailbound.sim.results.SLO_WINDOW_S` every ``SLO_WINDOW_STEP_S``), together with the
    others and alone.

    It *misses* when either exceeds the SLO; it *misses alone* when its own trace, replayed with
    nothing else on the network (and its device), already does — no admission decision can help
    it except rejecting it; a *violation* is a miss caused by sharing (issue 14's convention)."""

    name: str
    slo_s: float
    whole_s: float
    window_s: float
    alone_whole_s: float
    alone_window_s: float

    @property
    def misses(self) -> bool:
        return max(self.whole_s, self.window_s) > self.slo_s

    @property
    def misses_alone(self) -> bool:
        return max(self.alone_whole_s, self.alone_window_s) > self.slo_s

    @property
    def violates(self) -> bool:
        return self.misses and not self.misses_alone

    @property
    def ratio(self) -> float:
        """Worst replayed latency (whole half or window) ÷ SLO."""
        return max(self.whole_s, self.window_s) / self.slo_s


@dataclass
class Replayer:
    """Replays sets of tenants (their traces ``traces[str(t.trace)]``) in the simulator and
    judges them (:class:`Judged`), on the network alone or, with ``profile``, through each
    tenant's device too (its server's, served by the SSD profile). Latencies alone are measured
    once per (trace, percentile) and kept."""

    traces: Mapping[str, Trace]
    link_bytes_per_s: float = DEFAULT_LINK_BYTES_PER_S
    profile: Path | None = None
    alone: dict[tuple[str, float], tuple[float, float]] = field(default_factory=dict)

    def latencies(
        self, tenants: Sequence[Tenant], configured: Sequence[Configured], mode: str = "shaping"
    ) -> dict[str, NDArray[np.float64]]:
        from tailbound.policies.admission import WIRE, network_plan
        from tailbound.sim.plan import replay

        plan = network_plan(
            "replay",
            tenants,
            configured,
            link_bytes_per_s=self.link_bytes_per_s,
            mode=mode,
            network_only=self.profile is None,
        )
        extra = {"profile": self.profile} if self.profile is not None else {}
        return replay(
            plan,
            {t.name: self.traces[str(t.trace)] for t in tenants},
            link_bandwidth_bytes_per_s=self.link_bytes_per_s,
            mtu_bytes=WIRE.mtu_bytes,
            propagation_s=WIRE.propagation_s,
            **extra,
        )

    def _tail(self, t: Tenant, latency: NDArray[np.float64]) -> tuple[float, float]:
        from tailbound.sim.results import (
            SLO_WINDOW_S,
            SLO_WINDOW_STEP_S,
            percentile,
            worst_window_percentile,
        )

        issue = self.traces[str(t.trace)].time
        whole = percentile(latency, t.percentile)
        if issue.size != latency.size:  # a replay that did not finish every request
            return float("inf"), float("inf")
        window = worst_window_percentile(
            issue, latency, t.percentile, SLO_WINDOW_S, SLO_WINDOW_STEP_S
        )
        return whole, window

    def tail_alone(self, t: Tenant) -> tuple[float, float]:
        key = (str(t.trace), t.percentile)
        if key not in self.alone:
            self.alone[key] = self._tail(t, self.latencies([t], [Configured(0)])[t.name])
        return self.alone[key]

    def judge(
        self, tenants: Sequence[Tenant], configured: Sequence[Configured], mode: str = "shaping"
    ) -> list[Judged]:
        """Each of ``tenants`` replayed together, enforced as ``configured`` (rate limiters in
        ``mode``), against its SLO."""
        if not tenants:
            return []
        latencies = self.latencies(tenants, configured, mode)
        out = []
        for t in tenants:
            whole, window = self._tail(t, latencies[t.name])
            out.append(Judged(t.name, t.slo_s, whole, window, *self.tail_alone(t)))
        return out


def plot_boxes(
    png: Path, title: str, labels: Sequence[str], panels: Mapping[str, Sequence[Sequence[float]]]
) -> None:
    """One box plot per panel (its y label → one sample per label) side by side, saved to
    ``png`` (the admission figures: admitted tenants and their MB/s per policy)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.8), squeeze=False)
    for ax, (ylabel, samples) in zip(axes[0], panels.items(), strict=True):
        ax.boxplot([list(s) for s in samples])
        ax.set_xticks(range(1, len(labels) + 1), list(labels), fontsize=7)
        ax.set_ylabel(ylabel)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, dpi=120)
