"""Thesis Fig. 5.11 / §5.4.6: 1–4 SSDs per server sharing one network link.

Resampled wc62 workloads with random SLOs (as in :mod:`~tailbound.experiments.wc_fff`) are
placed by WorkloadCompactor (fast-first-fit) on servers with 1, 2, 3 and 4 SSDs, under the
server model of ``--server-model`` (sound by default, ``reference`` for the thesis' Eq. 5.1).
With one SSD storage is the bottleneck; with more, the shared link becomes it, so the servers
used plateau and SSDs go unused.

Run: ``python -m tailbound.experiments.wc_ssds --out DIR [--workloads 500]
[--server-model reference]``.
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
from tailbound.policies.placement import place
from tailbound.policies.server import REFERENCE, ServerModel
from tailbound.policies.workload import TenantCurves


def run(
    workloads: Sequence[TenantCurves],
    count: int,
    seed: int,
    *,
    model: ServerModel = REFERENCE,
    quiet: bool = True,
) -> list[dict[str, object]]:
    """One row per layout (1–4 SSDs per server): servers and SSDs used and the mean rate sums,
    WorkloadCompactor checking latencies with ``model`` (the resampled workloads each meet their
    SLO alone under it)."""
    rng = np.random.default_rng(seed)
    chosen = resample(workloads, count, rng, slos=FIG54_SLOS, scale=(0.8, 1.2), model=model)
    rows: list[dict[str, object]] = []
    for devices in progress(quiet, iterable=(1, 2, 3, 4), desc="wc_ssds", unit="layout"):
        result = place(
            chosen,
            server_cluster(devices=devices),
            registry.build("workloadcompactor", "placement", model),
            fast_first_fit=True,
            grow=True,
        )
        used = [s for s in result.servers if s.tenants]
        ssds = sum(len({t.device for t in s.tenants}) for s in used)
        link = np.mean([max(s.rate[:, 0].sum(), s.rate[:, 2].sum()) for s in used])
        storage = np.mean([s.rate[:, 1].sum() / len({t.device for t in s.tenants}) for s in used])
        rows.append(
            {
                "SSDs per server": devices,
                "workloads": count,
                "servers": len(used),
                "SSDs used": ssds,
                "mean link rate sum": round(float(link), 3),
                "mean SSD rate sum": round(float(storage), 3),
                "seconds": round(result.seconds, 1),
            }
        )
        print(rows[-1], file=sys.stderr)
    return rows


def plot(rows: list[dict[str, Any]], path: Path, model_name: str = "sound") -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    x = [r["SSDs per server"] for r in rows]
    ax.plot(x, [r["servers"] for r in rows], "o-", label="servers")
    ax.plot(x, [r["SSDs used"] for r in rows], "s-", label="SSDs used")
    ax.set_xlabel("SSDs per server")
    ax.set_xticks(x)
    ax.set_ylabel("count")
    ax.legend()
    ax.set_title(f"Several SSDs per server ({model_name} server model; thesis Fig. 5.11)")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workloads", type=int, default=500)
    add_server_model(p)
    args = p.parse_args(argv)
    workloads, cluster = setup(args)
    model = setup_model(args, cluster)
    rows = run(workloads, args.workloads, args.seed, model=model, quiet=args.quiet)
    print(write_table(args.out, "wc_ssds", rows, f"SSDs per server ({args.server_model})"))
    plot(rows, args.out / "wc_ssds.png", args.server_model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
