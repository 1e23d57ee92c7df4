"""Why SNC-Meister misses on Fig. 4.10: a tenant's directions alone at an idle link, model vs trace.

For named tenants of the Fig. 4.10 population (:func:`tailbound.experiments.snc_fig410.population`,
same ``--tenants`` and ``--seed``), each direction's messages of the *second* half (the replayed
one) go alone through one FIFO link of 125,000,000 B/s, and we compare the 99.95th percentile of
their sojourn times (queueing + own transmission; each direction gets half of the tenant's
ε = 0.001, as in the SNC analysis) computed three ways:

* ``real``: the trace's arrival times and message sizes;
* ``exp sizes``: the same arrival times, i.i.d. exponential sizes of the same mean (what the
  MMPP's work model assumes, without its smoothing of the arrival times);
* ``const sizes``: the same arrival times, every message of the mean size (timing alone);

against the SNC bound of the same link with the MMPP fitted on the *first* half (the admission's
input) on intervals of 1 s (the reference), 0.1 s and 0.01 s.

A violator whose ``real`` value alone already reaches its replayed p99.9 misses its SLO because
of its own burst, not its neighbours'; ``real`` ≫ ``exp sizes`` means the sizes are correlated in
time (runs of large writes) beyond what i.i.d. work per state can express.

Run: ``python -m tailbound.experiments.snc_violators --names w038,w070,w162,w014``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from tailbound.experiments._snc_common import find_data
from tailbound.model import DEFAULT_LINK_BYTES_PER_S as LINK_BYTES_PER_S
from tailbound.profiles.tokens import MessageSizes
from tailbound.snc.bounds import ConstantService
from tailbound.snc.latency import latency_bound
from tailbound.snc.mmpp import MmppArrival, fit_mmpp
from tailbound.snc.tenants import requests_of
from tailbound.tables import markdown_table
from tailbound.traces.trace import Trace

INTERVALS_NS = (1_000_000_000, 100_000_000, 10_000_000)
PERCENTILE = 0.999


def fifo_sojourn(arrival_s: NDArray[np.float64], service_s: NDArray[np.float64]) -> NDArray:
    """Sojourn times (s) of a FIFO single server: departure ``D_n = max(D_{n-1}, t_n) + s_n``.

    Vectorised by ``D_n = C_n + max_{k<=n}(t_k - C_{k-1})`` with ``C`` the cumulative service.

    >>> fifo_sojourn(np.array([0.0, 0.5, 3.0]), np.array([1.0, 1.0, 1.0])).tolist()
    [1.0, 1.5, 1.0]
    """
    cum = np.cumsum(service_s)
    return cum + np.maximum.accumulate(arrival_s - (cum - service_s)) - arrival_s


def direction_work(tr: Trace, direction: str) -> NDArray[np.float64]:
    """Bytes on the wire per request: ``in`` the request messages, ``out`` the responses."""
    m = MessageSizes()
    return np.asarray(m.request_bytes(tr) if direction == "in" else m.response_bytes(tr), float)


def alone_row(
    name: str, direction: str, first: Trace, second: Trace, rng: np.random.Generator
) -> list[object]:
    """One table row (milliseconds): replayed sojourn percentiles and the bounds (see above)."""
    eps = (1.0 - PERCENTILE) / 2.0
    rate = LINK_BYTES_PER_S
    t2 = np.asarray(second.time, dtype=np.float64)
    w2 = direction_work(second, direction)
    mean = float(w2.mean())

    def tail(work: NDArray[np.float64]) -> float:
        return float(np.quantile(fifo_sojourn(t2, work / rate), 1.0 - eps))

    ns1 = requests_of(first).arrival_ns
    w1 = direction_work(first, direction)
    bounds = [
        latency_bound(MmppArrival(fit_mmpp(ns1, w1, iv), {0}), ConstantService(rate), eps)
        for iv in INTERVALS_NS
    ]
    values = [tail(w2), tail(rng.exponential(mean, w2.shape)), tail(np.full_like(w2, mean))]
    return [name, direction, *(f"{v * 1e3:.1f}" for v in [*values, *bounds])]


HEADER = [
    "tenant",
    "direction",
    "real ms",
    "exp sizes ms",
    "const sizes ms",
    "bound 1 s ms",
    "bound 0.1 s ms",
    "bound 0.01 s ms",
]


def main(argv: Sequence[str] | None = None) -> int:
    from tailbound.experiments.snc_fig410 import population

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--names", required=True, help="comma-separated tenant names (e.g. w038)")
    p.add_argument("--tenants", type=int, default=180, help="population size (as snc_fig410)")
    p.add_argument("--seed", type=int, default=410, help="population seed (as snc_fig410)")
    p.add_argument("--data", help="the shared data directory (default: found upwards)")
    args = p.parse_args(argv)
    names = args.names.split(",")
    pop = population(find_data(args.data), args.tenants, args.seed)
    by_name = {t.name: t for t in pop.tenants}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        p.error(f"no tenant {', '.join(unknown)} among {args.tenants}")
    rng = np.random.default_rng(args.seed)
    rows = []
    for n in names:
        key = str(by_name[n].trace)
        for direction in ("in", "out"):
            rows.append(alone_row(n, direction, pop.first[key], pop.second[key], rng))
    print(markdown_table(HEADER, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
