"""Nested QoS §4.4 (Fig. 4.8): one workload's capacity with nested classes against one deadline.

Nested QoS thesis §4.4, first experiment (Fig. 4.8): five workloads, each alone on a server —
W1, W2 WebSearch at 330 IOPS, W3, W4 Financial at 100 IOPS, W5 Exchange at 910 IOPS — and the
capacity each needs for the graduated goal "at least 90% of the requests within ``δ_1``, 95%
within ``δ_2``, all within ``δ_3``" (Nested QoS) against the single-level goal "100% within
``δ_1``" (pClock and WF2Q+, which for one workload both serve in arrival order), for ``δ_1`` of
5, 10, 20 and 50 ms (the thesis: "for all cases, Graduated QoS saves capacity significantly";
its figure's values are not legible in the extraction).

Per (workload, ``δ_1``), with ``δ_2 = 10 δ_1`` and ``δ_3 = 100 δ_1`` (§4.2's ratios; §4.4 gives
none):

- ``nested_qos_iops``: the least capacity (IOPS, uniform requests, one at a time) at which the
  ``nested`` scheduler with the workload's classes meets all three grades in simulation,
  bisected to 0.5% from the workload's mean rate and ``lemma1_iops`` — the thesis'
  "determined empirically" (§4.4); classes by the ``nested-qos`` policy's parameter selection
  (the thesis' decomposition, ``nested_qos_common.profile_classes``);
- ``lemma1_iops``: the capacity Lemma 1 guarantees those classes
  (``dnc.nested.single_workload_capacity``, one request of slack per class boundary);
- ``single_level_iops``: the least rate at which a FIFO server finishes every request within
  ``δ_1`` (``characterize.decompose.decomposed_rate`` with fraction 1, where the decomposition
  keeps everything and is that FIFO server);
- ``saving``: ``1 − nested_qos_iops / single_level_iops``.

Stand-ins (``nested_qos_common.STANDINS``): W1, W2 the halves of the WebSearch trace (30 s each)
at 330 IOPS; W3, W4 the halves of MSN-FS at 100 IOPS (~750 s each); W5 MSN-FS whole at 910 IOPS
(~165 s).

Run: ``tailbound experiment nested_qos_fig48 --out DIR [--deadlines 5,10,20,50]`` (writes
``nested_qos_fig48.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.characterize.decompose import decomposed_rate
from tailbound.cli.options import progress
from tailbound.dnc.nested import single_workload_capacity
from tailbound.experiments.nested_qos_common import (
    Workload,
    at_rate,
    classes_text,
    find_data,
    latencies,
    parser,
    profile_classes,
    standin,
    within,
)
from tailbound.experiments.wc_common import save_plot, write_table

#: The SLA's fractions (§4.4) and the outer deadlines as multiples of ``δ_1`` (§4.2's ratios).
FRACTIONS = (0.9, 0.95, 1.0)
OUTER = (1.0, 10.0, 100.0)
#: ``δ_1`` (ms) of Fig. 4.8.
DEADLINES_MS = (5.0, 10.0, 20.0, 50.0)
#: Relative precision of the simulated capacity.
RTOL = 0.005


def arrivals(data: Path) -> dict[str, tuple[np.ndarray, float]]:
    """W1–W5: each workload's arrivals (s) at its rate, and the rate (IOPS)."""
    web, fin = standin(data, "websearch").time, standin(data, "financial").time
    wh, fh = len(web) // 2, len(fin) // 2
    return {
        "W1": (at_rate(web[:wh], 330.0), 330.0),
        "W2": (at_rate(web[wh:], 330.0), 330.0),
        "W3": (at_rate(fin[:fh], 100.0), 100.0),
        "W4": (at_rate(fin[fh:], 100.0), 100.0),
        "W5": (at_rate(standin(data, "exchange").time, 910.0), 910.0),
    }


def meets(w: Workload, capacity_iops: float) -> bool:
    """Whether ``w`` alone under ``nested`` at ``capacity_iops`` meets every grade."""
    lat = latencies("nested-qos", [w], capacity_iops)[w.name]
    return all(within(lat, k.delta_s) >= f for k, f in zip(w.classes, FRACTIONS, strict=True))


def least_capacity(w: Workload, lo: float, hi: float) -> float:
    """The least capacity (IOPS) at which :func:`meets`, to :data:`RTOL`, bisected between
    ``lo`` (halved while it meets) and ``hi`` (doubled until it meets)."""
    while not meets(w, hi):
        lo, hi = hi, 2 * hi
    while lo > 0 and meets(w, lo):
        hi, lo = lo, lo / 2
    while hi - lo > RTOL * hi:
        mid = (lo + hi) / 2
        if meets(w, mid):
            hi = mid
        else:
            lo = mid
    return hi


def row(name: str, arrival: np.ndarray, rate: float, d1_ms: float) -> dict[str, object]:
    """One (workload, ``δ_1``) row of the CSV (module documentation)."""
    d1 = d1_ms / 1e3
    grades = [(m * d1, f) for m, f in zip(OUTER, FRACTIONS, strict=True)]
    w = Workload(name, arrival, profile_classes(arrival, grades), rate)
    lemma1 = single_workload_capacity([(k.sigma, k.rho, k.delta_s) for k in w.classes])
    nested = least_capacity(w, rate, lemma1)
    single = decomposed_rate(arrival, np.ones(len(arrival)), d1, 1.0)
    return {
        "workload": name,
        "delta1_ms": d1_ms,
        "nested_qos_iops": round(nested, 1),
        "lemma1_iops": round(lemma1, 1),
        "single_level_iops": round(single, 1),
        "saving": round(1 - nested / single, 4),
        "classes": classes_text(w.classes),
    }


def plot(rows: Sequence[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(str(r["workload"]) for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(3 * len(names), 3.5), sharey=False)
    for ax, name in zip(np.atleast_1d(axes), names, strict=True):
        mine = [r for r in rows if r["workload"] == name]
        x = np.arange(len(mine))
        for k, (col, label) in enumerate(
            [("nested_qos_iops", "nested-qos"), ("single_level_iops", "single level")]
        ):
            ax.bar(x + 0.4 * k - 0.2, [float(r[col]) for r in mine], 0.4, label=label)  # type: ignore[arg-type]
        ax.set_xticks(x, [f"{float(r['delta1_ms']):g}" for r in mine])  # type: ignore[arg-type]
        ax.set_xlabel("δ1 (ms)")
        ax.set_title(name)
    np.atleast_1d(axes)[0].set_ylabel("capacity (IOPS)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle("Nested QoS thesis Fig. 4.8: capacity, graduated against single-level QoS")
    save_plot(fig, path)


def deadlines(text: str) -> list[float]:
    """A comma-separated list of ``δ_1`` in ms.

    >>> deadlines("5,20")
    [5.0, 20.0]
    """
    try:
        out = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a list of ms, got {text!r}") from None
    if not out or any(d <= 0 for d in out):
        raise argparse.ArgumentTypeError(f"deadlines must be positive, got {text!r}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument(
        "--deadlines",
        type=deadlines,
        default=list(DEADLINES_MS),
        help="δ1 values in ms, comma-separated (default 5,10,20,50)",
    )
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5", help="which of W1–W5 (default all)")
    args = p.parse_args(argv)
    ws = arrivals(find_data(args.data))
    chosen = args.workloads.split(",")
    unknown = [n for n in chosen if n not in ws]
    if unknown:
        p.error(f"unknown workloads {', '.join(unknown)} (known: {', '.join(ws)})")
    cases = [(n, d) for n in chosen for d in args.deadlines]
    rows = [
        row(n, *ws[n], d)
        for n, d in progress(args.quiet, iterable=cases, desc="nested_qos_fig48", unit="case")
    ]
    title = (
        "Nested QoS §4.4 (Fig. 4.8): capacity for 90%/95%/100% within δ1/10δ1/100δ1 "
        "(nested-qos) against 100% within δ1 (single level)"
    )
    print(write_table(args.out, "nested_qos_fig48", rows, title))
    plot(rows, args.out / "nested_qos_fig48.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
