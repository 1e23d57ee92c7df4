"""PSLO Fig. 4: the depth sweep on an array with a knee (violations, latency, IOPS against D).

Latency SLO violations, latency percentiles and throughput of four consolidated VMs as
functions of their IO depth D.

The paper (EuroSys 2016, §5.2, 16-disk RAID-0): three phases — for 1 <= D <= 4 violations and
latencies grow slowly, for 4 < D <= 6 they jump (a 10-fold increase of the violations), beyond
6 they grow slowly again; throughput rises sharply to its peak just before D = 4 and falls
beyond. Here (:mod:`~tailbound.experiments.pslo_common`): the four applications each keep
exactly D requests at the array (closed loop with D outstanding, no gate: D is the depth at the
device and the latency is the device's), the file copy beside them paced at 150 IOPS by the
controller (Eq. 9, the paper's PSLO(T)). Violations are counted against 100 and 300 ms (the
paper's Figs. 5 and 6 SLOs).

Run: ``tailbound experiment pslo_fig4 --out DIR [--duration S]`` (writes ``pslo_fig4.csv``,
``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.pslo_common import (
    APPS,
    COPY,
    COPY_IOPS,
    COPY_OUTSTANDING,
    VmSlo,
    find_data,
    parser,
    pslo_table,
    run,
    scenario,
)
from tailbound.experiments.wc_common import write_table
from tailbound.sim import percentile

DEPTHS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
#: Latency bounds (s) whose violations are counted.
BOUNDS = (0.100, 0.300)


def sweep_rows(data: Path, depth: int, duration_s: float) -> list[dict[str, Any]]:
    """One depth's rows: per application its IOPS, mean, 99th and 99.9th percentile latency
    (ms) and the share (%) of its requests over each of :data:`BOUNDS`."""
    outstanding = dict.fromkeys(APPS, depth) | {COPY: COPY_OUTSTANDING}
    # the file copy alone is controlled (PSLO(T)); its latency SLO is not used
    control = pslo_table("T", {COPY: VmSlo(0.3, 0.999, COPY_IOPS, controlled=False)}, 1)
    measured, _ = run(scenario(data, duration_s, outstanding, control), duration_s)
    rows = []
    for name in APPS:
        m = measured[name]
        row: dict[str, Any] = {
            "depth": depth,
            "vm": name,
            "iops": m.iops,
            "mean_ms": 1e3 * float(np.mean(m.latency)),
            "p99_ms": 1e3 * percentile(m.latency, 0.99),
            "p999_ms": 1e3 * percentile(m.latency, 0.999),
        }
        for b in BOUNDS:
            row[f"violations_{1e3 * b:g}ms_pct"] = 100.0 * float(np.mean(m.latency > b))
        rows.append(row)
    return rows


def plot(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Fig. 4's panels: violations of 300 ms (log), IOPS and the 99.9th percentile against D."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for i, name in enumerate(APPS):
        rs = [r for r in rows if r["vm"] == name]
        d = [r["depth"] for r in rs]
        viol = [max(r["violations_300ms_pct"], 1e-3) for r in rs]
        axes[0].plot(d, viol, marker="o", color=f"C{i}", label=name)
        axes[1].plot(d, [r["iops"] for r in rs], marker="o", color=f"C{i}", label=name)
        axes[2].plot(d, [r["p999_ms"] for r in rs], marker="o", color=f"C{i}", label=name)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("requests over 300 ms (%, floor 0.001)")
    axes[1].set_ylabel("IOPS")
    axes[2].set_ylabel("99.9th percentile latency (ms)")
    axes[2].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("IO depth D of every VM")
        ax.axvline(4, color="grey", linestyle=":", linewidth=1)
    axes[1].legend(fontsize=7)
    fig.suptitle("PSLO Fig. 4: depth sweep on the 16-channel array (dotted: the knee, D = 4)")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], 300.0).parse_args(argv)
    data = find_data(args.data)
    rows: list[dict[str, Any]] = []
    for depth in progress(args, iterable=DEPTHS, desc="pslo_fig4", unit="depth"):
        rows += sweep_rows(data, depth, args.duration)
    print(write_table(args.out, "pslo_fig4", rows, "PSLO Fig. 4: depth sweep"))
    for depth in DEPTHS:
        at = [r for r in rows if r["depth"] == depth]
        total = sum(r["iops"] for r in at)
        viol = float(np.mean([r["violations_300ms_pct"] for r in at]))
        print(f"D = {depth:2d}: total {total:7.1f} IOPS, mean violations of 300 ms {viol:.3f}%")
    plot(rows, args.out / "pslo_fig4.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
