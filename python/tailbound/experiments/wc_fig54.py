"""Thesis Fig. 5.4 / paper Fig. 6: servers each rate-limit choice needs, normalised to
WorkloadCompactor, in "same SLO" runs (100, 150, 250, 500, 1000 ms) and a "random SLO" run.

Each run takes the wc62 workloads that meet the SLO on a server of their own under every policy
(a baseline's fixed ``(r, b)`` can miss an SLO that WorkloadCompactor meets alone; such workloads
would be rejected and make the counts incomparable, so they are left out, and the table says how
many), in a random order (seed), and places them first-fit on as many servers as needed with
WorkloadCompactor and with each baseline (effective bandwidth, 1.5× and 2× average rate, knee of
the r-b curve), every policy checking latencies with the same server model (``--server-model``:
sound by default, ``reference`` for the thesis' Eq. 5.1).

Run: ``python -m tailbound.experiments.wc_fig54 --out DIR [--count N] [--server-model reference]
[--seeds 0 1 ...] [--only same|random]`` (writes ``wc_fig54.csv``, ``.md``, ``.png``);
``--count`` draws N workloads with replacement from the eligible pool instead of using each once.
Figs. 5.8 and 5.9 are this experiment scaled up: ``--count 1000 --only same`` and ``--count 1000
--only random --seeds 0 1 ... 9`` (ten random sets of 1000 workloads).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import (
    FIG54_SLOS,
    POLICIES,
    add_server_model,
    fits_alone,
    parser,
    save_plot,
    server_cluster,
    setup,
    setup_model,
    write_table,
)
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.server import REFERENCE, Placed, ServerModel
from tailbound.policies.workload import TenantCurves


def fits_alone_everywhere(workload: TenantCurves, model: ServerModel = REFERENCE) -> bool:
    """Meets its SLO alone under WorkloadCompactor and under every baseline, all checking
    latencies with ``model``."""
    return fits_alone(workload, model) and all(
        registry.build(p, "placement", model).configure([Placed(workload)], 1) is not None
        for p in POLICIES[1:]
    )


def scenarios(
    workloads: Sequence[TenantCurves],
    seed: int,
    count: int | None = None,
    *,
    model: ServerModel = REFERENCE,
) -> Iterator[tuple[str, list[TenantCurves], int]]:
    """The six runs of Fig. 5.4, as ``(label, chosen workloads in placement order, left out)``:
    the five same-SLO runs and the random-SLO run, each taking the workloads that meet their SLO
    alone under every policy (``model``; "left out" counts those WorkloadCompactor alone could
    take), in a random order, or ``count`` of them drawn with replacement (renamed
    ``name#k``). The same ``seed`` gives the same runs (Figs. 5.5–5.6 replay them)."""
    rng = np.random.default_rng(seed)
    runs: list[tuple[str, list[TenantCurves]]] = []
    for slo in FIG54_SLOS:
        runs.append((f"same SLO {slo * 1000:.0f} ms", [w.with_slo(slo) for w in workloads]))
    runs.append(("random SLO", [w.with_slo(float(rng.choice(FIG54_SLOS))) for w in workloads]))
    for label, candidates in runs:
        alone_wc = [w for w in candidates if fits_alone(w, model)]
        pool = [w for w in alone_wc if fits_alone_everywhere(w, model)]
        if count is None or not pool:
            chosen = [pool[i] for i in rng.permutation(len(pool))]
        else:  # draw with replacement, as the paper's 62–85-workload runs from its traces
            chosen = [
                pool[int(i)].with_slo(pool[int(i)].slo_s, f"{pool[int(i)].name}#{k}")
                for k, i in enumerate(rng.integers(len(pool), size=count))
            ]
        yield label, chosen, len(alone_wc) - len(pool)


def run(
    workloads: Sequence[TenantCurves],
    seed: int,
    count: int | None = None,
    *,
    model: ServerModel = REFERENCE,
    only: str | None = None,
    quiet: bool = True,
) -> list[dict[str, object]]:
    """One row per scenario (:func:`scenarios`; ``only="same"`` or ``"random"`` places only the
    same-SLO or the random-SLO runs, the others drawn all the same, so a seed's runs do not
    change): the seed, the workloads placed, those left out, and per policy (checking
    latencies with ``model``) the servers used, normalised to WorkloadCompactor's, and the
    rejected."""
    rows: list[dict[str, object]] = []
    runs = scenarios(workloads, seed, count, model=model)
    total = len(FIG54_SLOS) + 1
    for label, chosen, left_out in progress(
        quiet, iterable=runs, total=total, desc="wc_fig54", unit="scenario"
    ):
        if only is not None and (label == "random SLO") != (only == "random"):
            continue
        row: dict[str, object] = {
            "seed": seed,
            "scenario": label,
            "workloads": len(chosen),
            "left out (a baseline misses the SLO alone)": left_out,
        }
        wc_servers = 0
        for policy in POLICIES:
            start = time.perf_counter()
            policy_obj = registry.build(policy, "placement", model)
            result = place(chosen, server_cluster(), policy_obj, grow=True)
            if policy == POLICIES[0]:  # WorkloadCompactor, the reference
                wc_servers = result.servers_used
            row[f"{policy} servers"] = result.servers_used
            row[f"{policy} normalised"] = round(result.servers_used / max(wc_servers, 1), 3)
            row[f"{policy} rejected"] = len(result.rejected)
            print(
                f"{label}: {policy} {result.servers_used} servers, {len(result.rejected)} "
                f"rejected, {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )
        rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: Path, model_name: str = "sound") -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.16
    x = np.arange(len(rows))
    for k, policy in enumerate(POLICIES):
        values = [float(r[f"{policy} normalised"]) for r in rows]
        ax.bar(x + (k - 2) * width, values, width, label=policy)
    seeds = len({r["seed"] for r in rows}) > 1

    def label(r: dict[str, Any]) -> str:
        seed = f" (seed {r['seed']})" if seeds else ""
        return f"{r['scenario']}{seed}\n({r['workloads']} workloads)"

    ax.set_xticks(x, [label(r) for r in rows], fontsize=8, rotation=90 if seeds else 0)
    ax.set_ylabel("servers / WorkloadCompactor's")
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.legend(fontsize=8)
    ax.set_title(
        f"Servers needed, normalised to WorkloadCompactor ({model_name} server model; "
        "thesis Fig. 5.4)"
    )
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--count", type=int, help="draw this many workloads (with replacement)")
    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="run every seed given (rows carry their seed; default: --seed alone)",
    )
    p.add_argument(
        "--only",
        choices=("same", "random"),
        help="place only the same-SLO runs (Fig. 5.8) or only the random-SLO run (Fig. 5.9)",
    )
    add_server_model(p)
    args = p.parse_args(argv)
    workloads, cluster = setup(args)
    model = setup_model(args, cluster)
    title = f"Fig. 5.4: servers per policy ({args.server_model} server model)"
    rows: list[dict[str, object]] = []
    table = ""
    for seed in args.seeds or [args.seed]:
        rows += run(workloads, seed, args.count, model=model, only=args.only, quiet=args.quiet)
        # written after each seed: a long run stopped early keeps the seeds it finished
        table = write_table(args.out, "wc_fig54", rows, title)
    print(table)
    plot(rows, args.out / "wc_fig54.png", args.server_model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
