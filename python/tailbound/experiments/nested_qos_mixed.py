"""Nested QoS §4.4 (Fig. 4.9(b)): capacity five dissimilar workloads need for 90% within deadline.

Nested QoS thesis §4.4, second experiment (Fig. 4.9(b)): two Exchange workloads (deadline
50 ms), two WebSearch (100 ms) and one Financial (200 ms) share one server of 2000–6000 IOPS;
fraction of all requests within their workload's deadline under Nested QoS, pClock and WF2Q+
(the thesis: "similar performance as Figure 4.9(a) for each scheduler", no numbers).

Setup: the rates of §4.4 — Exchange 910 IOPS, WebSearch 330, Financial 100 (the first
experiment's W1–W5) — 2580 IOPS in all. Stand-ins (``nested_qos_common.STANDINS``): E1, E2 the
two halves of MSN-FS at 910 IOPS each (as in ``nested_qos_capacity``; ~82 s); S1, S2 the two
halves of the WebSearch trace (``mqsim/wsrch-small.trace``, 30 s each) at 330 IOPS, repeated
back to back to the Exchange halves' length; F the last 8240 requests of MSN-FS (the Financial
stand-in of ``nested_qos_fig43``), time-scaled on their own to 100 IOPS, the same length (they
are also the last 8240 requests of E2's half, nine times slower). Each workload's SLA is §4.4's,
90% within ``δ_1``, 95% within ``10 δ_1``, all within ``100 δ_1`` (the ratios of §4.2), its
classes chosen by the ``nested-qos`` policy's parameter selection (the thesis' decomposition,
``nested_qos_common.profile_classes``). pClock: each workload's outermost envelope with its
``δ_1``; WF2Q+: weights the workloads' rates. Every request is judged by its workload's
``δ_1``. A server serves uniform requests, one at a time.

Run: ``tailbound experiment nested_qos_mixed --out DIR [--capacities 2000:6000:250]``
(writes ``nested_qos_mixed.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.experiments.nested_qos_capacity import capacities, needed, plot, run
from tailbound.experiments.nested_qos_common import (
    Workload,
    at_rate,
    classes_text,
    find_data,
    parser,
    profile_classes,
    repeat,
    standin,
)
from tailbound.experiments.wc_common import write_table

#: Long-term rates (IOPS), §4.4: Exchange, WebSearch, Financial.
EXCHANGE_IOPS, WEBSEARCH_IOPS, FINANCIAL_IOPS = 910.0, 330.0, 100.0
#: Innermost deadlines (s), §4.4's second experiment.
DEADLINES_S = {"exchange": 0.05, "websearch": 0.1, "financial": 0.2}
#: The SLA's fractions (§4.4) and the outer deadlines as multiples of ``δ_1`` (§4.2's ratios).
FRACTIONS = (0.9, 0.95, 1.0)
OUTER = (1.0, 10.0, 100.0)


def _halves(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    half = len(t) // 2
    return t[:half], t[half:]


def _workload(name: str, kind: str, arrival: np.ndarray, rate_iops: float) -> Workload:
    d1 = DEADLINES_S[kind]
    grades = [(m * d1, f) for m, f in zip(OUTER, FRACTIONS, strict=True)]
    return Workload(name, arrival, profile_classes(arrival, grades), rate_iops)


def workloads(data: Path) -> list[Workload]:
    """E1, E2, S1, S2 and F over the Exchange halves' length, classes profiled."""
    exchange = [at_rate(h, EXCHANGE_IOPS) for h in _halves(standin(data, "exchange").time)]
    duration = min(float(e[-1]) for e in exchange)
    websearch = [
        repeat(at_rate(h, WEBSEARCH_IOPS), duration)
        for h in _halves(standin(data, "websearch").time)
    ]
    # the last stretch of MSN-FS that makes ``duration`` at 100 IOPS, scaled on its own
    raw = standin(data, "financial").time
    financial = at_rate(raw[-round(duration * FINANCIAL_IOPS) :], FINANCIAL_IOPS)
    return [
        _workload("E1", "exchange", exchange[0], EXCHANGE_IOPS),
        _workload("E2", "exchange", exchange[1], EXCHANGE_IOPS),
        _workload("S1", "websearch", websearch[0], WEBSEARCH_IOPS),
        _workload("S2", "websearch", websearch[1], WEBSEARCH_IOPS),
        _workload("F", "financial", financial, FINANCIAL_IOPS),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument(
        "--capacities",
        type=capacities,
        default=capacities("2000:6000:250"),
        help="START:STOP:STEP or a list of IOPS (default 2000:6000:250)",
    )
    args = p.parse_args(argv)
    ws = workloads(find_data(args.data))
    for w in ws:
        print(
            f"{w.name}: {len(w.arrival)} requests over {w.arrival[-1]:.1f} s, "
            f"classes {classes_text(w.classes)}",
            file=sys.stderr,
        )
    rows = run(ws, args.capacities, args.quiet)
    need = needed(rows)
    title = (
        "Nested QoS §4.4 (Fig. 4.9(b)), dissimilar workloads: 90% within deadline needs "
        + ", ".join(f"{p} {c:.0f} IOPS" for p, c in need.items())
    )
    print(write_table(args.out, "nested_qos_mixed", rows, title))
    plot(
        rows,
        args.out / "nested_qos_mixed.png",
        "Nested QoS thesis Fig. 4.9(b): 2 Exchange (50 ms), 2 WebSearch (100 ms), "
        "Financial (200 ms)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
