"""Thesis Fig. 3.7's other variant (§3.4.4, "our experimental results with a client ingress
bottleneck are similar"): the same four tenants as :mod:`~tailbound.experiments.pm_fig37` (I,
J, F on 7200 rpm disks, K on a RAM disk; Table 3.1's loads), but each device on a server of its
own and every tenant issued from one client host, so the responses (85% of a link) meet at that
client's ingress instead of a server's egress. SLOs by the same rule
(:func:`~tailbound.experiments.pm_fig37.reference_slos`: the LP bounds of the order F > K > J > I,
rounded up to 10 ms), computed on this placement; policies pm, bySLO and ps as in Fig. 3.7.

Run: ``python -m tailbound.experiments.pm_fig37_ingress --out DIR [--duration S]`` (writes
``pm_fig37_ingress.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence

from tailbound.cli.options import progress
from tailbound.experiments import pm_fig37
from tailbound.experiments.pm_common import (
    Setup,
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table
from tailbound.sim import Slo

#: The one client host every tenant runs on (its ingress link is the bottleneck).
CLIENT = "client0"


def build(
    duration_s: float, seed: int, slos: Mapping[str, float] | None = None, *, k: int = 3
) -> Setup:
    """Fig. 3.7's tenants and traces (same ``seed``) with tenant ``i``'s device on server
    ``server{i}`` and every tenant on :data:`CLIENT`; SLOs (s, at p99.9) from
    :func:`~tailbound.experiments.pm_fig37.reference_slos` on this placement unless given."""
    if slos is None:
        draft = build(duration_s, seed, dict.fromkeys(pm_fig37.REFERENCE_ORDER, 1.0))
        slos = pm_fig37.reference_slos(draft, k)
    base = pm_fig37.build(duration_s, seed, dict.fromkeys(pm_fig37.REFERENCE_ORDER, 1.0))
    server = {t.device: f"server{i}" for i, t in enumerate(base.tenants)}
    tenants = tuple(
        dataclasses.replace(
            t,
            server=server[t.device],
            client_host=CLIENT,
            slo=Slo(slos[t.name], 0.999) if t.slo is not None else None,
        )
        for t in base.tenants
    )
    devices = tuple({**d, "host": server[d["name"]]} for d in base.devices)
    return Setup(tenants, devices, duration_s)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    setup = build(args.duration, args.seed, k=args.k)
    slos = ", ".join(f"{t.name} {1e3 * t.slo.latency_s:.0f} ms" for t in setup.tenants if t.slo)
    print(f"SLOs at p99.9: {slos}", file=sys.stderr)
    policies = progress(
        args, iterable=("pm", "byslo", "ps"), desc="pm_fig37_ingress", unit="policy"
    )
    runs = [run_policy(setup, p, profile_path, k=args.k) for p in policies]
    rows = percentile_rows(runs, setup, pm_fig37.PERCENTILES)
    title = "Fig. 3.7 (client ingress bottleneck, ms)"
    print(write_table(args.out, "pm_fig37_ingress", rows, title))
    plot_percentiles(
        rows,
        args.out / "pm_fig37_ingress.png",
        "Fig. 3.7: client ingress bottleneck",
        pm_fig37.PERCENTILES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
