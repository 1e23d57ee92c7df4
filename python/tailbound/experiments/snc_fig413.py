"""Thesis Fig. 4.13: latency bound against the number of nines of the SLO percentile.

Sixteen wc62 tenants on eight hosts (four client hosts, four server hosts, 1 Gb/s links, priorities
by SLO). For percentiles ``1 - 10^-k``, ``k = 1 … 9, 12, 15``, we report SNC-Meister's total
(request + response) bound of tenant 0 and the largest bound over the sixteen tenants, and beside
them DNC's prediction for the same tenants (the ``dnc`` baseline, PriorityMeister-style: priorities
by SLO, rate limits on each trace's r-b curve; :mod:`tailbound.policies.dnc_baselines`): a
worst-case (100th-percentile) bound, the same at every percentile.

Run: ``python -m tailbound.experiments.snc_fig413 --out out/experiments``
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from tailbound.experiments._snc_common import (
    Line,
    find_data,
    parser,
    plot_latency_ms,
    tenant,
    tenant_set,
    write_outputs,
)
from tailbound.model import Slo
from tailbound.policies import registry
from tailbound.snc.tenants import FitCache
from tailbound.tables import fmt_ms

NINES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15)
SLOS = (0.01, 0.02, 0.05, 0.1)


def run(data: Path) -> list[dict[str, float]]:
    base = [
        tenant(data, f"T{i}", i, f"c{i % 4}", f"s{(i // 4) % 4}", slo_s=SLOS[i % 4])
        for i in range(16)
    ]
    cache = FitCache()
    # DNC bounds the 100th percentile: one computation serves every row
    # built (their modules imported) before the clocks start, which time the bounds alone
    dnc_policy = registry.build("dnc", "admission", tenant_set(base, 125e6))
    start = time.perf_counter()
    dnc = dnc_policy(base)
    dnc_seconds = time.perf_counter() - start
    results = []
    for k in NINES:
        specs = [dataclasses.replace(t, slo=Slo(t.slo_s, 1 - 10.0**-k)) for t in base]
        tset = tenant_set(specs, 125e6)
        snc = registry.build("snc-meister", "admission", tset, fits=cache, incremental=False)
        start = time.perf_counter()
        bounds = snc(specs)
        seconds = time.perf_counter() - start
        row = {
            "nines": k,
            "tenant0": bounds[0].latency_s,
            "max": max(b.latency_s for b in bounds),
            "seconds": seconds,
            "dnc_tenant0": dnc[0].latency_s,
            "dnc_max": max(b.latency_s for b in dnc),
            "dnc_seconds": dnc_seconds,
        }
        results.append(row)
        print(row, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    results = run(find_data(args.data))
    rows = [
        [
            int(r["nines"]),
            fmt_ms(r["tenant0"]),
            fmt_ms(r["max"]),
            fmt_ms(r["dnc_tenant0"]),
            fmt_ms(r["dnc_max"]),
            f"{r['seconds']:.2f}",
        ]
        for r in results
    ]
    header = [
        "nines",
        "tenant 0 ms",
        "max over tenants ms",
        "DNC tenant 0 ms",
        "DNC max over tenants ms",
        "compute s",
    ]
    extra = (
        f"\nDNC (the `dnc` baseline) bounds the 100th percentile: one value for every row, "
        f"computed in {results[0]['dnc_seconds']:.2f} s.\n"
    )
    png = write_outputs(
        Path(args.out), "snc_fig413", "Fig. 4.13 reproduction", header, rows, extra=extra
    )
    nines = [r["nines"] for r in results]
    lines: list[Line] = [
        (
            nines,
            [r["max"] for r in results],
            {"marker": "o", "label": "SNC-Meister (max over tenants)"},
        ),
        (
            nines,
            [r["tenant0"] for r in results],
            {"marker": "s", "label": "SNC-Meister (tenant 0)"},
        ),
        (
            nines,
            [r["dnc_max"] for r in results],
            {"linestyle": "--", "color": "k", "label": "DNC (max over tenants)"},
        ),
        (
            nines,
            [r["dnc_tenant0"] for r in results],
            {"linestyle": ":", "color": "k", "label": "DNC (tenant 0)"},
        ),
    ]
    plot_latency_ms(
        png, lines, "number of nines of the percentile", "latency bound (ms)", log_y=True
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
