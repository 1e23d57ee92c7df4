"""Thesis Fig. 5.10 / §5.4.5: workloads arriving and departing.

Replays the wc62 arrival/departure sequence (``events.csv``: 186 arrivals, 124 departures) with
WorkloadCompactor and with each baseline, on the wc62 cluster's servers (grown if needed), every
policy checking latencies with the same server model (``--server-model``: sound by default,
``reference`` for the thesis' Eq. 5.1), and
reports the peak and final number of servers in use, normalised to WorkloadCompactor. The
WorkloadCompactor system ended this sequence with the 62 tenants on 11 servers. Workloads that a
baseline cannot place even on an empty server are counted as rejected.

Run: ``python -m tailbound.experiments.wc_departures --out DIR [--server-model reference]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import (
    POLICIES,
    add_server_model,
    find_wc62,
    parser,
    save_plot,
    server_cluster,
    setup,
    setup_model,
    write_table,
)
from tailbound.policies import registry
from tailbound.policies.events import Event, load_events
from tailbound.policies.placement import place
from tailbound.policies.server import REFERENCE, ServerModel
from tailbound.policies.workload import TenantCurves


def run(
    workloads: Sequence[TenantCurves],
    events: Sequence[Event],
    *,
    model: ServerModel = REFERENCE,
    quiet: bool = True,
) -> list[dict[str, object]]:
    """One row per policy (checking latencies with ``model``): peak and final servers of the
    sequence, normalised to WorkloadCompactor's, tenants at the end and arrivals rejected."""
    rows: list[dict[str, object]] = []
    wc_peak = wc_final = 1
    for policy in progress(quiet, iterable=POLICIES, desc="wc_departures", unit="policy"):
        result = place(
            workloads,
            server_cluster(servers=12),
            registry.build(policy, "placement", model),
            events=events,
            grow=True,
        )
        if policy == POLICIES[0]:  # WorkloadCompactor, the reference
            wc_peak, wc_final = result.peak_servers, max(result.servers_used, 1)
        rows.append(
            {
                "policy": policy,
                "peak servers": result.peak_servers,
                "final servers": result.servers_used,
                "peak normalised": round(result.peak_servers / wc_peak, 3),
                "final normalised": round(result.servers_used / wc_final, 3),
                "tenants at the end": sum(len(s.tenants) for s in result.servers),
                "rejected arrivals": len(result.rejected),
                "seconds": round(result.seconds, 2),
            }
        )
        print(rows[-1], file=sys.stderr)
    return rows


def plot(rows: list[dict[str, Any]], path: Path, model_name: str = "sound") -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [float(r["peak normalised"]) for r in rows], 0.4, label="peak")
    ax.bar(x + 0.2, [float(r["final normalised"]) for r in rows], 0.4, label="final")
    ax.set_xticks(x, [str(r["policy"]) for r in rows], fontsize=8)
    ax.set_ylabel("servers / WorkloadCompactor's")
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.legend()
    ax.set_title(f"Arrivals and departures of wc62/events.csv ({model_name}; thesis Fig. 5.10)")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    add_server_model(p)
    args = p.parse_args(argv)
    workloads, cluster = setup(args)
    model = setup_model(args, cluster)
    events = load_events(find_wc62(args.data) / "events.csv", len(workloads))
    rows = run(workloads, events, model=model, quiet=args.quiet)
    title = f"Arrivals and departures (events.csv, {args.server_model} server model)"
    print(write_table(args.out, "wc_departures", rows, title))
    plot(rows, args.out / "wc_departures.png", args.server_model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
