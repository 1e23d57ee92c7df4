"""PSLO Fig. 6: mixed per-VM percentile and throughput SLOs under T, L, TS+L, LS+T, LS+U.

MSN 99.6% <= 100 ms and Exchange 99.3% <= 100 ms, both at 150 IOPS; TPC-E and WebSearch
99.9% <= 200 ms at 100 IOPS.

The paper (EuroSys 2016, §5.4): T violates every VM's latency SLO; L keeps the lowest latency
but MSN, Exchange and TPC-E miss their throughput SLOs; TS+L meets every throughput SLO with a
25.4% higher latency than L; LS+T meets both SLOs of every VM, TPC-E at 200.4 ms against 200,
every VM's throughput 18-19% above its SLO. The setup is
:mod:`~tailbound.experiments.pslo_common`'s; the file copy (150 IOPS, its throughput SLO
alone) is reported against 99.9% <= 300 ms, as in Fig. 5.

Run: ``tailbound experiment pslo_fig6 --out DIR [--duration S]`` (writes ``pslo_fig6.csv``,
``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tailbound.cli.options import progress
from tailbound.experiments.pslo_common import (
    COPY,
    COPY_IOPS,
    POLICIES,
    VmSlo,
    find_data,
    parser,
    plot_policies,
    rows_for,
)
from tailbound.experiments.wc_common import write_table

#: The paper's second scenario: MSN on 25 VMs and Exchange on 15 (100 ms at 90% compliance:
#: the 99.6th and 99.3th percentiles, `fanout_percentile`), TPC-E and WebSearch on 100.
SLOS: dict[str, VmSlo] = {
    "MSN": VmSlo(0.100, 0.996, 150.0),
    "Exchange": VmSlo(0.100, 0.993, 150.0),
    "TPC-E": VmSlo(0.200, 0.999, 100.0),
    "WebSearch": VmSlo(0.200, 0.999, 100.0),
    COPY: VmSlo(0.300, 0.999, COPY_IOPS, controlled=False),
}


def verdicts(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    """Per policy, the VMs missing their latency SLO and those missing their IOPS SLO (the
    issue's tolerances: 1.02× the latency, 0.98× the IOPS)."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for r in rows:
        late, slow = out.setdefault(r["policy"], ([], []))
        if not r["p_latency_ms"] <= 1.02 * r["latency_slo_ms"]:
            late.append(r["vm"])
        if not r["iops"] >= 0.98 * r["iops_slo"]:
            slow.append(r["vm"])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], 600.0).parse_args(argv)
    data = find_data(args.data)
    rows: list[dict[str, Any]] = []
    for policy in progress(args, iterable=POLICIES, desc="pslo_fig6", unit="policy"):
        rows += rows_for(policy, SLOS, data, args.duration, args.outstanding)
    print(write_table(args.out, "pslo_fig6", rows, "PSLO Fig. 6: mixed per-VM SLOs"))
    for policy, (late, slow) in verdicts(rows).items():
        print(
            f"{policy}: latency SLO missed by {', '.join(late) or 'none'}; "
            f"throughput SLO missed by {', '.join(slow) or 'none'}"
        )
    plot_policies(rows, args.out / "pslo_fig6.png", "PSLO Fig. 6", "its SLO's percentile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
