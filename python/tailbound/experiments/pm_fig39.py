"""Thesis Fig. 3.9: the six permutations of three SLO values over the tenants of Fig. 3.3
(A, B, C and the file copy); the 99.9th percentile latency per tenant under bySLO, EDF and
PriorityMeister, and in how many permutations each policy meets every SLO.

Run: ``python -m tailbound.experiments.pm_fig39 --out DIR [--duration S]`` (writes
``pm_fig39.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import find_profile, percentile_rows, run_policy
from tailbound.experiments.pm_fig33 import build, parser, reference_slos
from tailbound.experiments.wc_common import save_plot, write_table

#: SSD variant (``--device ssd``): the three SLO values (s) permuted over A, B, C.
SLO_VALUES = (0.030, 0.036, 0.045)
POLICIES = ("edf", "byslo", "pm")


def slo_values(duration: float, seed: int, profile: Path, k: int, device: str) -> tuple[float, ...]:
    """The three SLO values (s), smallest first: on the disk Fig. 3.3's
    (:func:`~tailbound.experiments.pm_fig33.reference_slos` of this run's setup, fixed before any
    policy runs), on the SSD :data:`SLO_VALUES`."""
    if device == "ssd":
        return SLO_VALUES
    draft = build(duration, seed, profile, dict.fromkeys("ABC", 1.0), device=device)
    return tuple(sorted(reference_slos(draft, k).values()))


def run(
    duration: float,
    seed: int,
    profile: Path,
    k: int,
    *,
    device: str = "disk",
    server_model: str = "reference",
    quiet: bool = True,
) -> list[dict[str, Any]]:
    rows = []
    perms = list(itertools.permutations(slo_values(duration, seed, profile, k, device)))
    for i, perm in enumerate(progress(quiet, iterable=perms, desc="pm_fig39", unit="order")):
        slos = dict(zip("ABC", perm, strict=True))
        setup = build(duration, seed, profile, slos, device=device)
        runs = [run_policy(setup, p, profile, k=k, server_model=server_model) for p in POLICIES]
        for r in percentile_rows(runs, setup, (0.999,)):
            rows.append({"permutation": i + 1, **r})
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    perms = sorted({r["permutation"] for r in rows})
    fig, axes = plt.subplots(1, len(perms), figsize=(2.6 * len(perms), 3), sharey=True)
    for ax, p in zip(axes, perms, strict=True):
        sub = [r for r in rows if r["permutation"] == p]
        tenants = list(dict.fromkeys(r["tenant"] for r in sub))
        x = np.arange(len(POLICIES))
        for j, t in enumerate(tenants):
            ys = [
                next(r["p99.9_ms"] for r in sub if r["policy"] == pol and r["tenant"] == t)
                for pol in POLICIES
            ]
            ax.bar(x + 0.25 * (j - 1), ys, 0.25, color=f"C{j}", label=t)
            slo = next(r["slo_ms"] for r in sub if r["tenant"] == t)
            ax.axhline(slo, color=f"C{j}", linestyle="--", linewidth=0.8)
        ax.set_xticks(x, POLICIES)
        ax.set_yscale("log")
        ax.set_title(f"#{p}")
    axes[0].set_ylabel("99.9th percentile latency (ms)")
    axes[-1].legend(fontsize=7)
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile = args.profile or find_profile()
    rows = run(
        args.duration,
        args.seed,
        profile,
        args.k,
        device=args.device,
        server_model=args.server_model,
        quiet=args.quiet,
    )
    print(write_table(args.out, "pm_fig39", rows, "Fig. 3.9: SLO permutations (p99.9, ms)"))
    for pol in POLICIES:
        met = sum(
            all(r["met_all"] for r in rows if r["policy"] == pol and r["permutation"] == p)
            for p in range(1, 7)
        )
        print(f"{pol}: meets every SLO in {met} of 6 permutations")
    plot(rows, args.out / "pm_fig39.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
