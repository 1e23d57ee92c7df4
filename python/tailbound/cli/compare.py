"""``tailbound compare``: every placement policy under both server models (and, for tenants
with hosts, every admission policy) on one set of tenants, each plan replayed as ``verify``
replays it; one table on stdout, a CSV and a plot in ``--out`` (:mod:`tailbound.compare`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.options import add_quiet, integer, number, progress
from tailbound.compare import COLUMNS as _COLUMNS

#: The legend of the table ``compare`` prints (in ``--help``): :data:`tailbound.compare.COLUMNS`.
COLUMNS = tuple((header, meaning) for header, _, meaning in _COLUMNS)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="run every placement and admission policy on the tenants and verify each plan",
        description=(
            "What would each policy cost on these traces, and which of its promises hold? "
            "Every placement policy runs under both server models (sound, the default of "
            "place; reference, the paper's Eq. 5.1) and, when every tenant has a client_host "
            "and a server_host, every admission policy runs at admit's defaults; each plan is "
            "saved under OUT/plans and replayed as `tailbound verify --plan` replays it (whole "
            "traces; per-tenant CSVs under OUT/verify). A policy that cannot run on the input "
            "(admission without hosts, a graduated SLO, a policy that fails) is a row with "
            "the reason. Prints one table; writes OUT/compare.csv and OUT/compare.png."
        ),
        epilog=epilog(None, COLUMNS)
        + " Rejections, exceeded bounds and missed SLOs are the answer, not a failed check.",
    )
    parser.add_argument("--tenants", required=True, type=Path, help="tenants.json")
    parser.add_argument("--cluster", required=True, type=Path, help="cluster.json (placement)")
    parser.add_argument("--profile", required=True, type=Path, help="SSD profile JSON (placement)")
    parser.add_argument(
        "--policies",
        help=(
            "comma-separated registered placement and admission policies (default all; "
            "average-rate:K alone means average-rate:2; see tailbound policies)"
        ),
    )
    parser.add_argument(
        "--server-model",
        choices=("both", "sound", "reference"),
        default="both",
        help="the server models placements run under (default both; see place --help)",
    )
    parser.add_argument(
        "--grow",
        action="store_true",
        help="placement adds servers like the cluster's last one when none fits (as place --grow)",
    )
    parser.add_argument(
        "--mtu",
        type=number(low=0.0, low_open=True),
        default=1500.0,
        help="packet size on the links, bytes (the sound model's; default 1500)",
    )
    parser.add_argument(
        "--jobs",
        type=integer(low=1, high=64),
        default=1,
        metavar="N",
        help="run N policies at once, each in its own process (default 1)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the policies on the Dask cluster whose scheduler is at ADDRESS "
        "(tcp://host:8786; default: $DASK_SCHEDULER_ADDRESS if set, else --jobs local "
        "processes; docs/scale-out.md)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("compare"), help="folder for the CSV, plot and plans"
    )
    add_quiet(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from tailbound import compare
    from tailbound.errors import ConfigError
    from tailbound.executor import Runner
    from tailbound.model import load_cluster, load_tenants
    from tailbound.profiles import SsdProfile

    tset = load_tenants(args.tenants)
    cluster = load_cluster(args.cluster)
    SsdProfile.load(args.profile)  # a bad profile is named before anything runs
    for i, t in enumerate(tset.tenants):  # every policy reads them: bad input, not a row
        if not Path(t.trace).is_file():
            raise ConfigError(tset.path, f"no trace file {t.trace}", field=f"tenants[{i}].trace")
    wanted = None if args.policies is None else [p.strip() for p in args.policies.split(",")]
    try:
        models = compare.MODELS if args.server_model == "both" else (args.server_model,)
        runs = compare.cases(wanted, models)
    except ValueError as e:
        raise ConfigError(None, str(e), field="--policies") from None
    inputs = compare.Inputs(tset, cluster, args.profile, grow=args.grow, mtu_bytes=args.mtu)
    quiet = args.quiet

    def say(label: str) -> None:
        if not quiet:
            print(f"tailbound compare: {label}", file=sys.stderr, flush=True)

    total = len(tset.tenants) if any(c.kind == "placement" for c in runs) else 0
    with progress(args, total=total, desc="r-b curves", unit="tenant") as bar:

        def tick(n: int) -> None:  # the bar ends its line before the runs' lines start
            bar.update(n)
            if bar.n >= total:
                bar.close()

        with Runner(jobs=args.jobs, scheduler=args.scheduler) as runner:
            result = compare.compare(
                inputs, runs, args.out, progress=say, characterized=tick, runner=runner
            )
    print(compare.table(result))
    if result.curves_s is not None:
        print(
            f"\nr-b curves of {len(tset.tenants)} tenants: {result.curves_s:.2f} s, shared by "
            "every placement (not in its time)"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    compare.to_csv(result, args.out / "compare.csv")
    compare.plot(result, args.out / "compare.png")
    print(f"wrote {args.out / 'compare.csv'}, {args.out / 'compare.png'} and the plans")
    return Exit.OK
