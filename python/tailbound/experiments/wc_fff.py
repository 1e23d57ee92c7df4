"""Thesis Fig. 5.7 / §5.4.3: fast-first-fit against first-fit — placement time and servers used
as the number of workloads grows.

Workloads are resampled from the wc62 workloads (each a random trace's curves scaled by a factor
in [0.8, 1.2], with a random SLO from Fig. 5.4's set, kept if it meets the SLO alone) and placed
with WorkloadCompactor on as many single-SSD servers as needed, under the server model of
``--server-model`` (sound by default, ``reference`` for the thesis' Eq. 5.1). The paper:
fast-first-fit is over 10× faster at 1000 workloads and uses within 3–4% of first-fit's servers.

Both placements skip, by default, the servers whose LP is provably infeasible without solving it:
the per-server and cluster screens (:mod:`tailbound.policies.cluster_screen`) and, under the
reference model, the infeasibility certificates kept from earlier LPs
(:mod:`tailbound.policies.certificates`). They never change where a workload lands, only how
many LPs are solved (nor do the refusals the placer remembers, which resampled workloads never
meet twice); ``--no-screens`` turns all of them off in both placements, as the
WorkloadCompactor system (whose first-fit solves an LP at every server it tries, and whose
fast-first-fit skips only the servers whose configured rates leave no room).

Run: ``python -m tailbound.experiments.wc_fff --out DIR [--sizes 100 250 500 1000 2000]
[--first-fit-max 1000] [--server-model reference] [--no-screens]`` (first-fit is quadratic:
sizes above ``--first-fit-max`` run fast-first-fit only).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import (
    FIG54_SLOS,
    add_server_model,
    parser,
    resample,
    save_plot,
    server_cluster,
    setup,
    setup_model,
    write_table,
)
from tailbound.policies import registry
from tailbound.policies.placement import WorkloadCompactorPolicy, place
from tailbound.policies.server import REFERENCE, ServerModel
from tailbound.policies.workload import TenantCurves


def policy(model: ServerModel, screens: bool) -> WorkloadCompactorPolicy:
    """WorkloadCompactor checking latencies with ``model``, with its per-server screen and
    certificates (when ``model`` has them) or, ``screens`` false, with neither."""
    built: WorkloadCompactorPolicy = registry.build("workloadcompactor", "placement", model)
    if not screens:
        built.screen = built.certify = False
    return built


def run(
    workloads: Sequence[TenantCurves],
    sizes: Sequence[int],
    first_fit_max: int,
    seed: int,
    *,
    model: ServerModel = REFERENCE,
    screens: bool = True,
    quiet: bool = True,
) -> list[dict[str, object]]:
    """One row per size: servers, seconds, configurations tried (``configure`` calls: LPs solved
    or refused by a certificate) and candidate servers skipped by the cluster screen
    (:mod:`tailbound.policies.cluster_screen`, no call) by fast-first-fit and (up to
    ``first_fit_max`` workloads) first-fit, WorkloadCompactor checking latencies with ``model``
    (the resampled workloads each meet their SLO alone under it); ``screens`` false turns the
    screens and certificates off in both placements (:func:`policy`, ``cluster_screen``)."""
    rng = np.random.default_rng(seed)
    everything = resample(
        workloads, max(sizes), rng, slos=FIG54_SLOS, scale=(0.8, 1.2), model=model
    )
    rows: list[dict[str, object]] = []
    for n in progress(quiet, iterable=sizes, desc="wc_fff", unit="size"):
        chosen = everything[:n]
        fff = place(
            chosen,
            server_cluster(),
            policy(model, screens),
            fast_first_fit=True,
            grow=True,
            cluster_screen=screens,
            remember_refusals=screens,
        )
        row: dict[str, object] = {
            "workloads": n,
            "screens": "on" if screens else "off",
            "fff servers": fff.servers_used,
            "fff seconds": round(fff.seconds, 2),
            "fff tries": fff.configure_calls,
            "fff screened": fff.cluster_screened,
            "fff certified": fff.certified,
        }
        if n <= first_fit_max:
            ff = place(
                chosen,
                server_cluster(),
                policy(model, screens),
                grow=True,
                cluster_screen=screens,
                remember_refusals=screens,
            )
            row |= {
                "first-fit servers": ff.servers_used,
                "first-fit seconds": round(ff.seconds, 2),
                "first-fit tries": ff.configure_calls,
                "first-fit screened": ff.cluster_screened,
                "first-fit certified": ff.certified,
                "speed-up": round(ff.seconds / max(fff.seconds, 1e-9), 1),
                "extra servers (%)": round(100 * (fff.servers_used / ff.servers_used - 1), 1),
            }
        else:
            row |= dict.fromkeys(
                [
                    "first-fit servers",
                    "first-fit seconds",
                    "first-fit tries",
                    "first-fit screened",
                    "first-fit certified",
                    "speed-up",
                    "extra servers (%)",
                ],
                "",
            )
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: Path, model_name: str = "sound") -> None:
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    n = [r["workloads"] for r in rows]
    ff = [(r["workloads"], r["first-fit seconds"]) for r in rows if r["first-fit seconds"] != ""]
    a.plot(n, [r["fff seconds"] for r in rows], "o-", label="fast-first-fit")
    if ff:
        a.plot(*zip(*ff, strict=True), "s-", label="first-fit")
    a.set_xlabel("workloads")
    a.set_ylabel("placement time (s)")
    a.legend()
    ffs = [(r["workloads"], r["first-fit servers"]) for r in rows if r["first-fit servers"] != ""]
    b.plot(n, [r["fff servers"] for r in rows], "o-", label="fast-first-fit")
    if ffs:
        b.plot(*zip(*ffs, strict=True), "s-", label="first-fit")
    b.set_xlabel("workloads")
    b.set_ylabel("servers")
    b.legend()
    fig.suptitle(f"Fast-first-fit against first-fit ({model_name} server model; thesis Fig. 5.7)")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500, 1000, 2000])
    p.add_argument("--first-fit-max", type=int, default=1000)
    add_server_model(p)
    p.add_argument(
        "--no-screens",
        action="store_true",
        help="solve an LP at every server tried: no per-server or cluster screen and no "
        "infeasibility certificates, in both placements (the WorkloadCompactor system's cost)",
    )
    args = p.parse_args(argv)
    workloads, cluster = setup(args)
    model = setup_model(args, cluster)
    rows = run(
        workloads,
        args.sizes,
        args.first_fit_max,
        args.seed,
        model=model,
        screens=not args.no_screens,
        quiet=args.quiet,
    )
    title = (
        f"Fast-first-fit against first-fit ({args.server_model} server model, screens "
        f"{'off' if args.no_screens else 'on'})"
    )
    print(write_table(args.out, "wc_fff", rows, title))
    plot(rows, args.out / "wc_fff.png", args.server_model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
