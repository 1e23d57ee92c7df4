"""SNC-Meister with dependency groups: the deterministic Hölder search against the reference's.

Tenants as in ``bench_snc`` (wc62 traces reused cyclically, four tenants per host as clients,
servers on the next hosts, 1 Gb/s, priorities by SLO), with 25% of them in dependency groups of
four (tenants 0, 4, 8, 12 form the first group, 16, 20, 24, 28 the second, ...). For every flow
whose expression has Hölder parameters we time its bound with the reference-compatible seeded
search (``search="reference"``, what ``tailbound bound --arrival-model reference`` runs) and with
the deterministic search (``"deterministic"``, the default of ``tailbound bound``), in the same run,
one flow after the other, on one thread each. The reference search costs 0.2–1.2 s per dependent
flow at 16 tenants and grows with the parameters per flow, so beyond 16 tenants it is timed on an
evenly spaced sample of the dependent flows (``--sample``, default 8) and the deterministic search
on the same sample; the deterministic search is also timed on every flow (``all flows``, with the
default thread pool of ``flow_latencies``). Reported per size: flows, dependent flows, parameters
per dependent flow (median and max), both searches' seconds on the sample and their ratio, the
largest ratio deterministic / reference of a sampled flow's bound (≤ 1: never looser), and the
deterministic search's seconds for all flows. Run:
``.venv/bin/python -m benchmarks.bench_snc_groups [max_tenants] [--sample N]``; ``--quick``: 16
tenants, both searches on a sample of 2 dependent flows (what the test suite runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from benchmarks import bench_snc
from tailbound.model import TenantSet
from tailbound.snc.flows import Flow, Network
from tailbound.snc.latency import LatencyBound
from tailbound.snc.network import flow_latencies, snc_meister
from tailbound.snc.tenants import FitCache, build_network
from tailbound.tables import markdown_table


def scenario(n: int, hosts: int):  # type: ignore[no-untyped-def]
    """``bench_snc``'s tenants with 25% of them in dependency groups (module docstring)."""
    return bench_snc.scenario(n, hosts, groups=True)


def parameters(net: Network, flow: Flow) -> int:
    """Hölder parameters of ``flow``'s SNC-Meister expression (its distinct dependent nodes)."""
    seen: list[int] = []
    original = LatencyBound.latency

    def count(self: LatencyBound, search: str = "reference") -> float:
        seen.append(len({id(n) for n in self.dependent_nodes}))
        return 0.0

    LatencyBound.latency = count  # type: ignore[method-assign]
    try:
        snc_meister(net, flow)
    finally:
        LatencyBound.latency = original  # type: ignore[method-assign]
    return seen[0] if seen else 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("max_tenants", nargs="?", type=int, default=256)
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="16 tenants, a sample of 2 flows")
    args = ap.parse_args(argv or [])  # `make bench` calls main() with no arguments
    if args.quick:
        args.max_tenants, args.sample = 16, 2
    rows = []
    for n in (s for s in (16, 64, 256) if s <= args.max_tenants):
        specs = scenario(n, max(4, n // 4))
        tset = TenantSet(tuple(specs), 125e6)
        fits = FitCache()
        net, _, _ = build_network(tset, specs, fits)
        counts = {f.id: parameters(net, f) for f in net.flows}
        dependent = [f for f in net.flows if counts[f.id] > 0]
        sample = dependent
        if (n > 16 or args.quick) and len(dependent) > args.sample:
            step = len(dependent) / args.sample
            # Offset by i so that the sample does not fall on one priority class (they cycle).
            sample = [dependent[(int(i * step) + i) % len(dependent)] for i in range(args.sample)]
        times = {"reference": 0.0, "deterministic": 0.0}
        worst = 0.0
        for f in sample:
            got = {}
            for search in ("reference", "deterministic"):
                start = time.perf_counter()
                got[search] = snc_meister(net, f, search)
                times[search] += time.perf_counter() - start
            worst = max(worst, got["deterministic"] / got["reference"])
        start = time.perf_counter()
        flow_latencies(net, "snc-meister", "deterministic")
        all_flows = time.perf_counter() - start
        k = [counts[f.id] for f in dependent]
        rows.append(
            [
                n,
                len(net.flows),
                len(dependent),
                f"{statistics.median(k):g} / {max(k)}" if k else "-",
                len(sample),
                f"{times['reference']:.2f}",
                f"{times['deterministic']:.3f}",
                f"{times['reference'] / times['deterministic']:.0f}",
                f"{worst:.8f}",
                f"{all_flows:.2f}",
            ]
        )
        print(rows[-1], flush=True)
    print(
        markdown_table(
            [
                "tenants",
                "flows",
                "dependent flows",
                "parameters per dependent flow (median / max)",
                "sampled flows",
                "reference search s (sample)",
                "deterministic s (sample)",
                "reference / deterministic",
                "max bound ratio det / ref",
                "deterministic s, all flows",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
