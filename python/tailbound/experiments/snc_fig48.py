"""Thesis Fig. 4.8: latency bound against the fraction of mutually dependent tenants.

Seven identical tenants (the same wc62 trace) send requests from one client host to one server
host (client egress → server ingress), one priority level. The first ``k`` of them form one
dependency group (possibly adversarially correlated); ``k = 0`` (and 1) is all independent,
``k = 7`` all dependent. We report SNC-Meister's request-direction bound at the 99.9th percentile
for tenant 0 (in the group whenever ``k >= 1``) and the largest bound over the seven, and the
simple DNC token-bucket bound (:mod:`._dnc_simple`), which does not depend on ``k``.

Run: ``python -m tailbound.experiments.snc_fig48 --out out/experiments``
"""

from __future__ import annotations

import time
from pathlib import Path

from tailbound.experiments._dnc_simple import shared_path_delay
from tailbound.experiments._snc_common import (
    Line,
    find_data,
    parser,
    plot_latency_ms,
    tenant,
    tenant_set,
    trace_path,
    write_outputs,
)
from tailbound.model import TenantSet
from tailbound.snc.network import snc_meister
from tailbound.snc.tenants import FitCache, build_network, read_requests, work
from tailbound.tables import fmt_ms

LINK = 125e6  # bytes/s (1 Gb/s)
TRACE = 12
TENANTS = 7


def run(data: Path) -> list[dict[str, float]]:
    cache = FitCache()
    req = read_requests(trace_path(data, TRACE))
    flow = (req.arrival_ns / 1e9, work(req, "in", TenantSet(())))
    dnc = shared_path_delay([flow] * TENANTS, LINK)
    results = []
    for k in range(TENANTS + 1):
        specs = [
            tenant(data, f"W{i}", TRACE, "client", "server", group="g" if i < k else None)
            for i in range(TENANTS)
        ]
        net, flows, _ = build_network(tenant_set(specs, LINK), specs, cache)
        start = time.perf_counter()
        values = [snc_meister(net, net.flows[f.flows["in"]]) for f in flows]
        row = {"dependent": k, "tenant0": values[0], "max": max(values), "dnc": dnc}
        row["seconds"] = time.perf_counter() - start
        results.append(row)
        print(row, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    results = run(find_data(args.data))
    rows = [
        [
            int(r["dependent"]),
            f"{r['dependent'] / TENANTS:.2f}",
            fmt_ms(r["tenant0"]),
            fmt_ms(r["max"]),
            fmt_ms(r["dnc"]),
            f"{r['seconds']:.2f}",
        ]
        for r in results
    ]
    header = ["dependent tenants", "fraction", "tenant 0 ms", "max ms", "DNC ms", "compute s"]
    png = write_outputs(Path(args.out), "snc_fig48", "Fig. 4.8 reproduction", header, rows)
    fraction = [r["dependent"] / TENANTS for r in results]
    lines: list[Line] = [
        (
            fraction,
            [r["max"] for r in results],
            {"marker": "o", "label": "SNC-Meister (max over tenants)"},
        ),
        (
            fraction,
            [r["dnc"] for r in results],
            {"linestyle": "--", "label": "DNC token bucket (100th percentile)"},
        ),
    ]
    ylabel = "99.9th percentile latency bound (ms)"
    plot_latency_ms(png, lines, "fraction of dependent tenants", ylabel)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
