"""``tailbound export TARGET PLAN``: a Plan's storage limits as the configuration of an
enforcement point users already run — QEMU throttle groups, libvirt ``<iotune>``, cgroup v2
``io.max``, Ceph librbd QoS, nbdkit's rate filter (:mod:`tailbound.enforce.exporters`;
``docs/enforcement.md``, "Exporters").

Each target is a sub-parser of its own (``add_target``), so a new target is one more call.
The configuration goes to stdout (or ``--out``, written atomically); every warning is one line
on stderr, and the exit status is 1 when one says the target cannot express the plan exactly.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog

_CHECK = "the target cannot express the plan exactly: a warning on stderr says what differs"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a plan's storage limits for QEMU, libvirt, cgroup io.max, Ceph or nbdkit",
        description=(
            "Convert every storage tenant's token bucket (device-seconds) into the byte (and "
            "I/O) limits of an enforcement point, conservatively: no mix of the tenant's requests "
            "passing them costs more device-seconds than the plan allows (docs/enforcement.md, "
            "'Exporters')."
        ),
        epilog=epilog(_CHECK),
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    add_target(
        targets,
        "qemu",
        "QEMU throttle groups: -drive throttling options and QMP object-add, one group a tenant",
    )
    add_target(targets, "libvirt", "libvirt: a disk's <iotune> element per tenant")
    cgroup = add_target(
        targets, "cgroup", "cgroup v2: an io.max line per tenant (rbps, wbps, riops, wiops)"
    )
    cgroup.add_argument("--device", required=True, metavar="MAJ:MIN", help="the block device")
    cgroup.add_argument(
        "--cgroup-root",
        default="/sys/fs/cgroup/tailbound",
        help="directory of the tenants' cgroups, <root>/<tenant>/io.max (%(default)s)",
    )
    ceph = add_target(targets, "ceph", "Ceph: rbd config image set commands of librbd QoS")
    ceph.add_argument("--pool", default="rbd", help="the images' pool (%(default)s)")
    ceph.add_argument(
        "--image", default="{tenant}", help="image name, {tenant} replaced (%(default)s)"
    )
    nbdkit = add_target(targets, "nbdkit", "nbdkit: a --filter=rate command line per tenant")
    nbdkit.add_argument(
        "--plugin",
        default="file {tenant}.img",
        help="plugin and its arguments, {tenant} replaced (%(default)s)",
    )
    # `fio` (each tenant's trace as a fio iolog) is another sub-parser of `targets`.


def add_target(targets: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A target's sub-parser with the options every target shares; ``run`` is the runner."""
    from tailbound.enforce.byte_limits import CONVERSIONS

    sub: argparse.ArgumentParser = targets.add_parser(
        name, help=help, description=help, epilog=epilog(_CHECK)
    )
    sub.add_argument("plan", type=Path, help="the plan (tailbound-plan JSON)")
    sub.add_argument("--profile", required=True, type=Path, help="SSD profile JSON")
    sub.add_argument(
        "--tenants",
        type=Path,
        help="tenants file giving each tenant's trace: convert over its own request sizes and "
        "operations (default: over the whole profile)",
    )
    sub.add_argument(
        "--conversion",
        choices=CONVERSIONS,
        default=CONVERSIONS[0],
        help="bytes: a byte limit at the lowest bandwidth; bytes+iops: byte and I/O limits "
        "together (default %(default)s)",
    )
    sub.add_argument("--out", type=Path, help="write the configuration here (default: stdout)")
    sub.set_defaults(run=run)
    return sub


def run(args: argparse.Namespace) -> int:
    import sys

    from tailbound.atomic import write_text_atomic
    from tailbound.cli.exitcodes import outcome
    from tailbound.enforce import exporters
    from tailbound.errors import ConfigError
    from tailbound.plan import Plan
    from tailbound.profiles.tokens import SsdProfile, load_profile

    plan = Plan.load(args.plan)
    profile = load_profile(args.profile)
    if not isinstance(profile, SsdProfile):
        raise ConfigError(args.profile, "exporters convert with an SSD profile", field="type")
    traces = None
    if args.tenants is not None:
        from tailbound.model import load_tenants
        from tailbound.traces import read_trace

        by_name = {t.name: t for t in load_tenants(args.tenants).tenants}
        wanted = [t.name for t in plan.tenants if t.device is not None and t.limits]
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise ConfigError(args.tenants, f"no tenant for planned tenants {missing}")
        traces = {n: read_trace(by_name[n].trace) for n in wanted}
    options: dict[str, Any] = {"conversion": args.conversion, "plan_path": str(args.plan)}
    if args.target == "cgroup":
        options.update(device=args.device, root=args.cgroup_root)
    elif args.target == "ceph":
        options.update(pool=args.pool, image=args.image)
    elif args.target == "nbdkit":
        options.update(plugin=args.plugin)
    export = exporters.EXPORTERS[args.target](plan, profile, traces, **options)
    if args.out is not None:
        write_text_atomic(args.out, export.text)
    else:
        sys.stdout.write(export.text)
        sys.stdout.flush()
    for w in export.warnings:
        print(f"tailbound export {args.target}: {w}", file=sys.stderr)
    return int(outcome(export.exact))
