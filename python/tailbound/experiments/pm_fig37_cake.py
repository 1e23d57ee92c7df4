"""Cake at Fig. 3.7's network bottleneck: the server-egress and client-ingress setups of
:mod:`~tailbound.experiments.pm_fig37` and :mod:`~tailbound.experiments.pm_fig37_ingress`, run
under ``cake`` (weights at the devices only; links FIFO) and ``cake-net`` (the same weights also
as rate limits at every shared link, the extension thesis §3.3.1 tried and dropped:
:class:`~tailbound.policies.scheduling.Cake` with ``network``). The thesis shows no Cake in
Fig. 3.7 ("Cake would require a mechanism to proportionally share the network"); this is the
before/after of that extension, with the figure's SLOs.

Run: ``python -m tailbound.experiments.pm_fig37_cake --out DIR [--duration S]`` (writes
``pm_fig37_cake.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tailbound.cli.options import progress
from tailbound.experiments import pm_fig37, pm_fig37_ingress
from tailbound.experiments.pm_common import (
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table

POLICIES = ("cake", "cake-net")
#: The bottleneck's placement: the builder of its setup.
VARIANTS = {"egress": pm_fig37.build, "ingress": pm_fig37_ingress.build}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    rows = []
    steps = [(v, p) for v in VARIANTS for p in POLICIES]
    setups = {}
    for variant, policy in progress(args, iterable=steps, desc="pm_fig37_cake", unit="run"):
        if variant not in setups:
            setups[variant] = VARIANTS[variant](args.duration, args.seed, k=args.k)
        setup = setups[variant]
        run = run_policy(setup, policy, profile_path, k=args.k)
        for r in percentile_rows([run], setup, pm_fig37.PERCENTILES):
            rows.append({"bottleneck": variant, **r})
            rows[-1]["policy"] = f"{policy} ({variant})"
    print(write_table(args.out, "pm_fig37_cake", rows, "Cake at Fig. 3.7's bottleneck (ms)"))
    plot_percentiles(
        rows,
        args.out / "pm_fig37_cake.png",
        "Cake: devices only / with network limits",
        pm_fig37.PERCENTILES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
