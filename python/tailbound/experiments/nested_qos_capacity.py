"""Nested QoS §4.4 (Fig. 4.9(a)): capacity two Exchange workloads need for 90% within deadline.

Nested QoS thesis §4.4 (Fig. 4.9(a)): two Exchange workloads (deadlines 50 and 100 ms) on
servers of 2000–6000 IOPS; fraction of all requests within their workload's deadline under
Nested QoS, pClock and WF2Q+ (thesis: 90% needs ~2500, ~3500 and ~4000 IOPS).

Setup: the thesis' Exchange workload runs at 910 IOPS (§4.4, W5). Stand-ins: the two halves
of ``msnfs/MSN-FS-30s-ms.txt`` (MSN-FS, a Microsoft production file server at 1048 IOPS; 71.5 s
each), each time-scaled to 910 IOPS (~82 s). Deadlines ``δ_1`` 50 ms (E1) and 100 ms (E2); the
SLA of §4.4 (90% within ``δ_1``, 95% within ``δ_2``, all within ``δ_3``) with ``δ_2 = 10 δ_1``
and ``δ_3 = 100 δ_1`` (the ratios of §4.2; §4.4 gives no outer deadlines). The classes are
profiled from each trace (the thesis: "by profiling") by the ``nested-qos`` policy's parameter
selection (``policies.nested_qos.select_classes``: the thesis' §3.2.3 rule with the
decomposition it cites, through ``nested_qos_common.profile_classes``). pClock: each
workload's outermost envelope with its ``δ_1``; WF2Q+: equal weights (910 IOPS each). Every
request is judged by its workload's ``δ_1``. A server serves uniform requests, one at a time.

Run: ``tailbound experiment nested_qos_capacity --out DIR [--capacities 2000:6000:250]``
(writes ``nested_qos_capacity.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.nested_qos_common import (
    POLICIES,
    Workload,
    at_rate,
    classes_text,
    find_data,
    fractions,
    parser,
    profile_classes,
    standin,
)
from tailbound.experiments.wc_common import save_plot, write_table

#: Exchange's long-term rate (IOPS), §4.4.
EXCHANGE_IOPS = 910.0
#: The two workloads' innermost deadlines (s), §4.4.
DEADLINES_S = (0.05, 0.1)
#: The SLA's fractions (§4.4) and the outer deadlines as multiples of ``δ_1`` (§4.2's ratios).
FRACTIONS = (0.9, 0.95, 1.0)
OUTER = (1.0, 10.0, 100.0)
#: The grade the capacity is needed for.
TARGET = 0.9


def workloads(data: Path) -> list[Workload]:
    """E1 and E2: the halves of the Exchange stand-in at 910 IOPS, classes profiled."""
    t = standin(data, "exchange").time
    half = len(t) // 2
    out = []
    for i, (part, d1) in enumerate(zip((t[:half], t[half:]), DEADLINES_S, strict=True)):
        arrival = at_rate(part, EXCHANGE_IOPS)
        grades = [(m * d1, f) for m, f in zip(OUTER, FRACTIONS, strict=True)]
        classes = profile_classes(arrival, grades)
        out.append(Workload(f"E{i + 1}", arrival, classes, EXCHANGE_IOPS))
    return out


def capacities(text: str) -> list[float]:
    """``START:STOP:STEP`` (IOPS, STOP included) or a comma-separated list.

    >>> capacities("2000:3000:500"), capacities("2000,2600")
    ([2000.0, 2500.0, 3000.0], [2000.0, 2600.0])
    """
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            return [float(c) for c in np.arange(start, stop + step / 2, step)]
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected START:STOP:STEP or a list of IOPS, got {text!r}"
        ) from None


def run(
    ws: Sequence[Workload], caps: Sequence[float], quiet: bool = True
) -> list[dict[str, object]]:
    """One row per (policy, capacity): the fraction of all requests within their deadline."""
    rows: list[dict[str, object]] = []
    for policy in progress(quiet, iterable=POLICIES, desc="nested_qos_capacity", unit="policy"):
        for c in caps:
            f = fractions(policy, ws, c)["all"]
            rows.append(
                {"policy": policy, "capacity_iops": c, "fraction_within_deadline": round(f, 6)}
            )
    return rows


def needed(rows: Sequence[dict[str, object]], target: float = TARGET) -> dict[str, float]:
    """Each policy's smallest capacity of the sweep at which the fraction reaches ``target``
    (``inf`` when none does).

    >>> needed([{"policy": "a", "capacity_iops": 1.0, "fraction_within_deadline": 0.95}])
    {'a': 1.0}
    """
    out: dict[str, float] = {}
    for r in rows:
        p = str(r["policy"])
        ok = float(r["fraction_within_deadline"]) >= target  # type: ignore[arg-type]
        c = float(r["capacity_iops"]) if ok else float("inf")  # type: ignore[arg-type]
        out[p] = min(out.get(p, float("inf")), c)
    return out


def plot(
    rows: Sequence[dict[str, object]],
    path: Path,
    title: str = "Nested QoS thesis Fig. 4.9(a): two Exchange workloads (50 and 100 ms)",
) -> None:
    """Fraction within deadline against capacity, one line per policy, the target marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for policy in dict.fromkeys(str(r["policy"]) for r in rows):
        mine = [r for r in rows if r["policy"] == policy]
        ax.plot(
            [float(r["capacity_iops"]) for r in mine],  # type: ignore[arg-type]
            [float(r["fraction_within_deadline"]) for r in mine],  # type: ignore[arg-type]
            marker="o",
            markersize=3,
            label=policy,
        )
    ax.axhline(TARGET, color="black", linewidth=0.5)
    ax.set_xlabel("capacity (IOPS)")
    ax.set_ylabel("fraction within deadline")
    ax.legend(fontsize=8)
    ax.set_title(title)
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument(
        "--capacities",
        type=capacities,
        default=capacities("2000:6000:250"),
        help="START:STOP:STEP or a list of IOPS (default 2000:6000:250)",
    )
    args = p.parse_args(argv)
    ws = workloads(find_data(args.data))
    for w in ws:
        print(
            f"{w.name}: {len(w.arrival)} requests, classes {classes_text(w.classes)}",
            file=sys.stderr,
        )
    rows = run(ws, args.capacities, args.quiet)
    need = needed(rows)
    title = (
        "Nested QoS §4.4: fraction within deadline against capacity; 90% needs "
        + ", ".join(f"{p} {c:.0f} IOPS" for p, c in need.items())
        + " (thesis ~2500, ~3500, ~4000)"
    )
    print(write_table(args.out, "nested_qos_capacity", rows, title))
    plot(rows, args.out / "nested_qos_capacity.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
