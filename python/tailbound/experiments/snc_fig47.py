"""Thesis Fig. 4.7: latency bound against the number of tenants sharing two queues.

``n`` tenants (distinct wc62 traces of similar load) send requests from one client host to one
server host: every request crosses the client's egress and the server's ingress. All have the same
SLO (one priority level). We report tenant 0's request-direction bound at the 99.9th percentile
(its flow's share ``eps = 0.001 / 2``) under SNC convolution, SNC hop-by-hop and SNC-Meister,
and a simple DNC (100th percentile) token-bucket bound (:mod:`._dnc_simple`). The
link is scaled to 500 Mb/s so that these light traces load it (≈ 1–2% each on average, with
bursts far above).

Run: ``python -m tailbound.experiments.snc_fig47 --out out/experiments``
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.experiments._dnc_simple import shared_path_delay
from tailbound.experiments._snc_common import (
    SIMILAR_TRACES,
    Line,
    find_data,
    parser,
    plot_latency_ms,
    tenant,
    tenant_set,
    write_outputs,
)
from tailbound.model import Tenant, TenantSet
from tailbound.policies.registry import registered
from tailbound.snc.network import convolution, hop_by_hop, snc_meister
from tailbound.snc.tenants import (
    FitCache,
    build_network,
    read_requests,
    work,
)
from tailbound.tables import fmt_ms

LINK = 62.5e6  # bytes/s (500 Mb/s)
#: The SNC analyses compared, as the registry names them, and the analysis layer's per-flow
#: bound of each (one flow's bound, not an admission policy's: this figure times one flow).
ANALYSES = registered(("snc-convolution", "snc-hop-by-hop", "snc-meister"), "admission")
FLOW_BOUNDS = (convolution, hop_by_hop, snc_meister)
CURVES = (*ANALYSES, "dnc")


def request_work(
    cache: FitCache, spec: Tenant, tset: TenantSet
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(arrival times in s, request-message bytes) of a tenant's trace."""
    if str(spec.trace) not in cache.requests:
        cache.requests[str(spec.trace)] = read_requests(spec.trace)
    req = cache.requests[str(spec.trace)]
    return req.arrival_ns / 1e9, work(req, "in", tset)


def run(data: Path, counts: list[int]) -> list[dict[str, float]]:
    cache = FitCache()
    results = []
    for n in counts:
        specs = [tenant(data, f"W{i}", SIMILAR_TRACES[i], "client", "server") for i in range(n)]
        tset = tenant_set(specs, LINK)
        net, flows, _ = build_network(tset, specs, cache)
        flow = net.flows[flows[0].flows["in"]]
        row: dict[str, float] = {"tenants": n}
        for analysis, flow_bound in zip(ANALYSES, FLOW_BOUNDS, strict=True):
            start = time.perf_counter()
            row[analysis] = flow_bound(net, flow, "reference")
            row[f"{analysis} s"] = time.perf_counter() - start
        row["dnc"] = shared_path_delay([request_work(cache, spec, tset) for spec in specs], LINK)
        results.append(row)
        print(n, {k: round(v, 5) for k, v in row.items()}, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--max-tenants", type=int, default=10)
    args = p.parse_args(argv)
    data = find_data(args.data)
    counts = list(range(1, args.max_tenants + 1))
    results = run(data, counts)
    rows = []
    for r in results:
        ratio = [
            f"{r[a] / r['snc-meister']:.2f}" if math.isfinite(r[a]) else "inf" for a in ANALYSES[:2]
        ]
        rows.append([int(r["tenants"]), *[fmt_ms(r[a]) for a in CURVES], *ratio])
    header = ["tenants", *[f"{a} ms" for a in CURVES], "conv / meister", "hop / meister"]
    png = write_outputs(Path(args.out), "snc_fig47", "Fig. 4.7 reproduction", header, rows)
    lines: list[Line] = [
        (counts, [r[a] for r in results], {"marker": "o", "label": a}) for a in CURVES
    ]
    ylabel = "99.9th percentile latency bound (ms)"
    plot_latency_ms(png, lines, "number of tenants", ylabel, log_y=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
