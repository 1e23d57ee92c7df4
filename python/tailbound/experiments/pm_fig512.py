"""Thesis Fig. 5.12: WorkloadCompactor against PriorityMeister's multiple simultaneous rate
limits on the placement problem — servers used and computation time.

The wc62 workloads that meet the SLO alone (WorkloadCompactor's check), with the same SLO for
all (each of :data:`SLOS`), in a random order (seed), are placed first-fit on as many servers as
needed by WorkloadCompactor (one ``(r, b)`` per stage from its LP) and by PriorityMeister
(:class:`~tailbound.policies.pm_placement.PriorityMeisterPolicy`: ``k`` buckets per stage from the
r-b curve, the prioritizer, the LP bound).

Run: ``python -m tailbound.experiments.pm_fig512 --out DIR [--count N]`` (writes
``pm_fig512.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import (
    fits_alone,
    parser,
    save_plot,
    server_cluster,
    setup,
    write_table,
)
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.workload import TenantCurves

SLOS = (0.1, 0.25, 1.0)


def run(
    workloads: list[TenantCurves], seed: int, count: int | None, k: int, *, quiet: bool = True
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for slo in progress(quiet, iterable=SLOS, desc="pm_fig512", unit="SLO"):
        pool = [w.with_slo(slo) for w in workloads]
        pool = [w for w in pool if fits_alone(w)]
        order = rng.permutation(len(pool))
        chosen = [pool[i] for i in order][: count or len(pool)]
        for policy in (
            registry.build("workloadcompactor", "placement"),
            registry.build("prioritymeister-placement", "placement", k=k),
        ):
            start = time.perf_counter()
            result = place(chosen, server_cluster(), policy, grow=True)
            rows.append(
                {
                    "slo_ms": 1e3 * slo,
                    "policy": policy.name,
                    "workloads": len(chosen),
                    "servers": result.servers_used,
                    "rejected": len(result.rejected),
                    "seconds": time.perf_counter() - start,
                }
            )
            print(rows[-1], file=sys.stderr)
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slos = sorted({r["slo_ms"] for r in rows})
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3))
    x = np.arange(len(slos))
    for j, pol in enumerate(("workloadcompactor", "prioritymeister")):
        sub = [next(r for r in rows if r["slo_ms"] == s and r["policy"] == pol) for s in slos]
        a.bar(x + 0.4 * (j - 0.5), [r["servers"] for r in sub], 0.4, label=pol)
        b.bar(x + 0.4 * (j - 0.5), [r["seconds"] for r in sub], 0.4, label=pol)
    for ax, label in ((a, "servers used"), (b, "computation time (s)")):
        ax.set_xticks(x, [f"{s:g} ms" for s in slos])
        ax.set_ylabel(label)
    b.set_yscale("log")
    a.legend(fontsize=7)
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--count", type=int, help="place only the first N eligible workloads")
    p.add_argument("--k", type=int, default=3, help="PriorityMeister's buckets per stage")
    args = p.parse_args(argv)
    workloads, _ = setup(args)
    rows = run(workloads, args.seed, args.count, args.k, quiet=args.quiet)
    print(write_table(args.out, "pm_fig512", rows, "Fig. 5.12: WorkloadCompactor vs PM"))
    plot(rows, args.out / "pm_fig512.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
