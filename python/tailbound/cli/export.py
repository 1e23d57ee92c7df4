"""``tailbound export TARGET PLAN``: a Plan's storage limits as the configuration of an
enforcement point users already run — QEMU throttle groups, libvirt ``<iotune>``, cgroup v2
``io.max``, Ceph librbd QoS, nbdkit's rate filter (:mod:`tailbound.enforce.exporters`;
``docs/enforcement.md``, "Exporters") — and, as target ``fio``, the plan's storage tenants'
traces as fio iologs with one job file that replays them open loop through an NBD server such
as ``tailbound gate`` (:mod:`tailbound.enforce.fio_iolog`).

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
    _add_fio(targets)


def _add_fio(targets: Any) -> None:
    from tailbound.cli.options import add_span, integer
    from tailbound.cli.profile import parse_bytes

    text = (
        "fio: each storage tenant's trace as a version 3 iolog (DIR/<tenant>.iolog) and one job "
        "file (DIR/replay.fio) replaying them together, open loop at the trace's times, on the "
        "same-named exports of an NBD server with fio's nbd engine"
    )
    fio = targets.add_parser("fio", help=text, description=text, epilog=epilog(None))
    fio.add_argument("plan", type=Path, help="the plan (tailbound-plan JSON)")
    fio.add_argument(
        "--tenants",
        type=Path,
        help="tenants file giving each tenant's trace, joined by name (default: the traces the "
        "plan records)",
    )
    fio.add_argument("--out", required=True, type=Path, help="folder for the iologs and job")
    fio.add_argument("--device", help="only the tenants of this <server>.<device>")
    add_span(fio, verb="export")
    fio.add_argument(
        "--export-size", type=parse_bytes, default=1 << 30, help="size of every export (1G)"
    )
    fio.add_argument("--host", default="127.0.0.1", help="NBD server (%(default)s)")
    fio.add_argument(
        "--port", type=integer(low=1, high=65535), default=10809, help="its port (%(default)s)"
    )
    fio.add_argument(
        "--iodepth",
        type=integer(low=1, high=65536),
        default=64,
        help="requests in flight per tenant at most (%(default)s; more than its largest backlog)",
    )
    fio.set_defaults(run=run_fio)


def run_fio(args: argparse.Namespace) -> int:
    """Write the iologs and the job file; nothing is written when a tenant's trace is bad."""
    import os
    import shutil
    import tempfile

    from tailbound.cli.exitcodes import Exit
    from tailbound.cli.options import check_window, span_of
    from tailbound.enforce.fio_iolog import write_fio_iolog, write_fio_job
    from tailbound.errors import ConfigError
    from tailbound.plan import Plan, device_name
    from tailbound.plan_inputs import resolve_inputs
    from tailbound.traces import read_trace

    check_window(args)
    plan = Plan.load(args.plan)
    planned = [
        t for t in plan.tenants if t.device is not None and args.device in (None, device_name(t))
    ]
    if not planned:
        where = f" on {args.device}" if args.device else ""
        raise ConfigError(args.plan, f"no storage tenant{where} to export")
    inputs = resolve_inputs(plan, args.plan, [t.name for t in planned], tenants=args.tenants)
    traces = {
        name: span_of(read_trace(ref.path, ref.format), args) for name, ref in inputs.traces.items()
    }
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(args.out, "--out must be a folder, and this is a file")
    # every file is written into a staging folder beside --out first, and moved in only when all
    # are written: a bad trace leaves nothing behind
    args.out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{args.out.name}.", dir=args.out.parent))
    try:
        logs = {name: (args.out / f"{name}.iolog").resolve() for name in traces}
        for name, trace in traces.items():
            write_fio_iolog(
                trace, staging / f"{name}.iolog", export_size=args.export_size, file_name=name
            )
        write_fio_job(
            logs, staging / "replay.fio", host=args.host, port=args.port, iodepth=args.iodepth
        )
        args.out.mkdir(exist_ok=True)
        for written in staging.iterdir():
            os.replace(written, args.out / written.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    requests = sum(len(t) for t in traces.values())
    print(f"wrote {len(logs)} iologs ({requests} requests) and {args.out / 'replay.fio'}")
    return Exit.OK


def add_target(targets: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A target's sub-parser with the options every target shares; ``run`` is the runner."""
    from tailbound.enforce.byte_limits import CONVERSIONS

    sub: argparse.ArgumentParser = targets.add_parser(
        name, help=help, description=help, epilog=epilog(_CHECK)
    )
    sub.add_argument("plan", type=Path, help="the plan (tailbound-plan JSON)")
    sub.add_argument(
        "--profile", type=Path, help="SSD profile JSON (default: the profile the plan records)"
    )
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
    from tailbound.plan_inputs import resolve_profile
    from tailbound.profiles.tokens import SsdProfile

    plan = Plan.load(args.plan)
    given = resolve_profile(plan, args.plan, args.profile)
    profile = given.device_profile()
    if not isinstance(profile, SsdProfile):
        raise ConfigError(
            given.profile_source, "exporters convert with an SSD profile", field="type"
        )
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
