"""One trace's r-b curve at one stage as ``tailbound characterize`` draws it, its table row, the
table, and the plot: shared by a plain run (:mod:`tailbound.cli.characterize`) and a fleet run
(:mod:`tailbound.cli.characterize_fleet`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.errors import TraceFormatError
from tailbound.plotting import save_figure
from tailbound.stages import Stage

if TYPE_CHECKING:
    from tailbound.characterize import BurstinessSummary, RbCurve
    from tailbound.traces import Trace

#: Rates at which the table shows the bucket size.
TABLE_RATES = (0.2, 0.5, 1.0)


def curve_of(trace: Trace, model: object, args: Any) -> RbCurve:
    """``trace``'s r-b curve under the stage's token ``model`` as ``args`` ask (``exact``,
    ``max_rate``, ``rates``, ``threads``, ``safety_margin``, ``prune``: the verb's options);
    a stage the trace alone saturates is refused (:class:`TraceFormatError`)."""
    import numpy as np

    from tailbound.characterize import mean_rate, prune, rb_curve

    mean = mean_rate(model.tokens(trace), trace.duration)  # type: ignore[attr-defined]
    top = args.max_rate if args.exact else 1.0  # the grids end at the whole stage
    if mean >= top:
        # The curve asked for spans the rates from the mean to --max-rate: none is left when the
        # trace alone needs the whole stage (a slow --link-bandwidth or profile, or a trace that
        # is one burst), so refuse rather than write a one-point curve no rate limit can meet.
        stage = getattr(model, "stage", None)
        name = stage.value if isinstance(stage, Stage) else "the stage"
        raise TraceFormatError(
            None,
            f"its mean rate is {mean:.4g} of {name}'s capacity, not below {top:g}: the stage "
            "cannot carry this trace (check --link-bandwidth or --profile; --exact --max-rate inf "
            "draws the curve anyway)",
        )
    if args.exact:
        curve = rb_curve(trace, model, exact=True, threads=args.threads)
        if args.max_rate > curve.rates[0]:
            curve = curve.clipped(args.max_rate)
    elif args.rates is not None:
        grid = np.unique(np.linspace(mean, 1.0, args.rates)) if mean < 1.0 else np.array([mean])
        curve = rb_curve(trace, model, grid, threads=args.threads)
    else:
        curve = rb_curve(trace, model, threads=args.threads)
    if args.safety_margin != 1.0:
        curve = curve.scaled(args.safety_margin)
    if args.prune is not None:
        curve = prune(curve, args.prune)
    return curve


def row_of(trace: Trace, stage: Stage, curve: RbCurve, stats: BurstinessSummary) -> list[str]:
    """The table row of one trace at one stage (columns as :func:`print_table` heads them)."""
    buckets = curve.bucket_at(list(TABLE_RATES)).tolist()
    return [
        trace.name,
        stage.value,
        str(len(trace)),
        f"{trace.duration:.1f}",
        f"{curve.mean_rate:.4g}",
        f"{stats.peak_to_mean_at(1.0):.1f}",
        f"{stats.interarrival_c2:.2f}",
        str(len(curve)),
        *("-" if b == float("inf") else f"{1e3 * b:.3g}" for b in buckets),
    ]


def print_table(rows: list[list[str]]) -> None:
    """The rows under their header, right-aligned, on stdout."""
    header = [
        "trace",
        "stage",
        "requests",
        "duration_s",
        "mean_rate",
        "peak/mean@1s",
        "C2",
        "points",
        *(f"b@{r}_ms" for r in TABLE_RATES),
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for line in [header, *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    sys.stdout.flush()


def plot_curves(curves: dict[Stage, RbCurve], name: str, path: Path) -> None:
    """The curves of one trace, bucket (ms of work, log scale) against rate; written atomically."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    for stage, curve in curves.items():
        positive = curve.buckets > 0
        axes.plot(
            curve.rates[positive],
            1e3 * curve.buckets[positive],
            marker="." if len(curve) < 50 else None,
            label=f"{stage.value} ({len(curve)} points)",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("rate r (utilisation of the stage)")
    axes.set_ylabel("bucket b (ms of work)")
    axes.set_title(f"r-b curves of {name}")
    axes.legend()
    save_figure(figure, path, format="png", dpi=100)
