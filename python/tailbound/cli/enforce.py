"""``tailbound enforce``: apply a Plan to real systems (``net``: Linux tc and nftables DSCP
marks on one host's device; ``replay``: the Plan's tenants' traces as real TCP traffic, checked
like ``tailbound verify``; ``docs/enforcement.md``)."""

from __future__ import annotations

import argparse
import signal
from types import FrameType
from typing import Any

from tailbound.cli.options import add_window, check_window


def _rate(text: str) -> int:
    """A link rate: bytes/s, or with a unit ``100mbit``, ``1gbit``, ``12500000B``."""
    units = {"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "b": 1.0, "": 1.0}
    t = text.strip().lower()
    for u in sorted(units, key=len, reverse=True):
        if t.endswith(u):
            try:
                value = float(t[: len(t) - len(u)] if u else t) * units[u]
            except ValueError:
                break
            if value > 0:
                return int(value)
    raise argparse.ArgumentTypeError(f"expected a rate such as 100mbit or 12500000, got {text!r}")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from tailbound.cli.exitcodes import epilog

    parser = subparsers.add_parser(
        "enforce",
        help="apply a plan to a host's network device (Linux tc through netlink, DSCP marks)",
        description="Apply a Plan to real systems.",
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    net = sub.add_parser(
        "net",
        help="a plan's network stages as HTB classes, u32 filters and nftables DSCP marks",
        description=(
            "For one host and device, install the plan's network stages: an HTB tree whose root "
            "runs at the link rate, per tenant a class with its token bucket and level (strict "
            "priority between levels), u32 filters on addresses, ports and DSCP, and nftables "
            "DSCP marks (docs/enforcement.md). Idempotent; needs root. With --switch, a switch "
            "port that orders packets by DSCP instead (no plan needed). Every tenant's bound "
            "with its network stages under the discipline tc realises is compared with the "
            "plan's bound (a warning when above) and its SLO (refused when above)."
        ),
        epilog=epilog(
            "a tenant's bound under the realised discipline is above its SLO, so nothing is "
            "installed; with --check, also: the device does not hold the plan"
        ),
    )
    net.add_argument(
        "--plan",
        help="the plan (tailbound-plan JSON); an Aequitas plan is enforced as its weighted "
        "classes by DSCP (no --host, --hosts)",
    )
    net.add_argument("--host", help="the plan's client host or server this machine is")
    net.add_argument(
        "--hosts", help="JSON: {'hosts': {name: IPv4 or IPv6}, 'ports': {tenant: port}}"
    )
    net.add_argument("--device", required=True, help="the egress device (e.g. eth0)")
    net.add_argument("--netns", help="act inside this network namespace (default: the current)")
    net.add_argument("--link-rate", type=_rate, help="link rate (default: the plan's capacity)")
    net.add_argument("--switch", action="store_true", help="a DSCP strict-priority switch port")
    net.add_argument(
        "--classes",
        help="weighted classes instead of a plan (Aequitas' WFQ classes): JSON {'classes': "
        "[{'name', 'weight', 'dscp'}, ...]}, HTB rates in the weights' proportion, ceil the "
        "link (--link-rate), matched by DSCP; unclassified packets go to the last class",
    )
    net.add_argument(
        "--ingress",
        action="store_true",
        help="the receive side instead: redirect what --device receives to an IFB device "
        "(tbi<device>) holding the plan's tree for the packets this host receives",
    )
    mode = net.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the objects, change nothing")
    mode.add_argument("--diff", action="store_true", help="print what differs from the device")
    mode.add_argument("--check", action="store_true", help="exit 1 unless the device holds it")
    mode.add_argument("--remove", action="store_true", help="remove what tailbound installed")
    mode.add_argument(
        "--meter",
        action="store_true",
        help="print the meter's counters as JSON (no --plan needed): per tenant and stage sent "
        "from this device, its packets and bytes and those beyond its Plan's bucket",
    )
    net.set_defaults(run=run)
    _add_replay(sub)


def _add_replay(sub: argparse._SubParsersAction) -> None:
    from tailbound.cli.exitcodes import epilog
    from tailbound.cli.verify import COLUMNS

    rp = sub.add_parser(
        "replay",
        help="replay a plan's tenants' traces as real TCP traffic and check SLOs and bounds",
        description=(
            "The live counterpart of `tailbound verify`: run tailbound-replay's client on this "
            "host, sending every planned tenant's requests (those whose client is --host; all "
            "without it) open loop at their trace timestamps to its server's address and port "
            "from --hosts, with the network token model's message sizes, and print verify's "
            "per-tenant table from the measured latencies (trace timestamp to the response's "
            "last byte). The servers run `tailbound enforce replay --serve` (or "
            "`tailbound-replay server`) on the server hosts first (docs/enforcement.md). An "
            "Aequitas plan: its RPCs through `tailbound-replay rpc` with the plan's classes and "
            "controller, checked as `tailbound verify` checks it; --host and the hosts file "
            "name the network's hosts by number (docs/aequitas.md)."
        ),
        epilog=epilog(
            "a tenant missed its SLO, a bound was exceeded or a request went unanswered", COLUMNS
        ),
    )
    rp.add_argument("--plan", required=True, help="the plan (tailbound-plan JSON)")
    rp.add_argument("--hosts", required=True, help="hosts file: addresses and tenants' ports")
    rp.add_argument(
        "--tenants",
        help="tenants file giving each tenant's trace, joined by name (client side; default: the "
        "traces the plan records, checked against their SHA-256)",
    )
    rp.add_argument("--host", help="the plan's client host (or, with --serve, server) this is")
    rp.add_argument(
        "--serve",
        action="store_true",
        help="run the server for the tenants of --host (a server) for --duration seconds",
    )
    rp.add_argument("--duration", type=float, default=60.0, help="--serve: seconds to serve")
    add_window(rp)
    rp.add_argument("--drain", type=float, default=5.0, help="seconds after the last request")
    rp.add_argument(
        "--start-at",
        type=float,
        metavar="UNIX_S",
        help="start at this wall-clock time (seconds since the epoch), trace time 0 (or the "
        "window's start) then: several client hosts with synchronised clocks replay one scenario",
    )
    rp.add_argument(
        "--out",
        help="write every request's measurements (the replayer's CSV) here; for an Aequitas "
        "plan a folder: verify.csv (verify's Aequitas checks) and rpcs.csv (per RPC)",
    )
    rp.add_argument(
        "--progress",
        metavar="FILE",
        help="append every answered request's row (--out's columns) here as it completes, for "
        "`tailbound agent --replay-progress` to follow the running replay",
    )
    rp.add_argument("--dscp", action="store_true", help="mark the requests' DSCP by level")
    rp.add_argument(
        "--window-s", type=float, default=180.0, help="sliding window of the worst-window column, s"
    )
    rp.set_defaults(run=run_replay)


def _exit_on_term(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as an exit (status 128 + 15), so that ``finally`` blocks stop child processes."""
    raise SystemExit(128 + signum)


def run_replay(args: argparse.Namespace) -> int:
    import math

    from tailbound.cli.exitcodes import outcome
    from tailbound.enforce import net, replay
    from tailbound.errors import ConfigError
    from tailbound.plan import Plan
    from tailbound.plan_inputs import resolve_inputs
    from tailbound.traces import read_trace

    for option, value in (
        ("--duration", args.duration),
        ("--drain", args.drain),
        ("--window-s", args.window_s),
    ):
        if not (math.isfinite(value) and 0 < value <= 1e6):
            raise ConfigError(None, f"{option} must be in (0, 1e6] seconds, got {value}")
    check_window(args)
    plan = Plan.load(args.plan)
    addresses = net.Addresses.load(args.hosts)
    if plan.aequitas is not None:
        return _replay_aequitas(args, plan, addresses)
    if args.serve:
        if args.host is None:
            raise ConfigError(None, "--serve needs --host (the server)", field="--host")
        names = [t.name for t in plan.tenants if t.server == args.host]
        missing = [n for n in names if n not in addresses.ports]
        if not names or missing:
            raise ConfigError(
                args.hosts, f"no port for tenants {missing or names} of {args.host}", field="ports"
            )
        proc, bound = replay.serve([addresses.ports[n] for n in names], args.duration)
        _serve_until_done(
            proc, f"serving {', '.join(names)} on {' '.join(bound)} for {args.duration:g} s"
        )
        return 0
    names = replay.client_tenants(plan, args.host)
    if not names:
        raise ConfigError(args.plan, f"no tenant has client host {args.host!r}", field="tenants")
    inputs = resolve_inputs(plan, args.plan, names, tenants=args.tenants)
    destinations = replay.destinations(plan, names, addresses, dscp=args.dscp)
    traces = {}
    for n in names:
        ref = inputs.traces[n]
        trace = read_trace(ref.path, ref.format)
        traces[n] = trace.slice_time(*args.window) if args.window is not None else trace
    if args.start_at is not None and not (math.isfinite(args.start_at) and args.start_at > 0):
        raise ConfigError(None, f"--start-at must be a time since the epoch, got {args.start_at}")
    run = replay.replay(
        plan,
        traces,
        destinations,
        drain_s=args.drain,
        window_s=args.window_s,
        start_at=args.start_at,
        origin=0.0 if args.start_at is not None else None,
        out_csv=args.out,
        progress_csv=args.progress,
    )
    print(run.verification.table())
    v = run.verification
    print(
        f"\n{len(v.checks)} tenants replayed live: {len(v.violations)} SLOs missed, "
        f"{len(v.exceeded)} bounds exceeded, {run.lost} requests unanswered"
        + (
            f", {len(v.throughput_missed)} throughput SLOs missed"
            if any(c.throughput is not None for c in v.checks)
            else ""
        )
    )
    return outcome(run.all_held)


def _serve_until_done(proc: Any, what: str) -> None:
    """Wait for the server ``proc``, stopping it on SIGTERM (it would hold its ports until its
    --duration); ``what`` is printed first (after the handler is set, so a SIGTERM sent on
    reading it is never missed)."""
    previous = signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        print(what, flush=True)
        proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


def _replay_aequitas(args: argparse.Namespace, plan: Any, addresses: Any) -> int:
    """An Aequitas plan live (:mod:`tailbound.enforce.aequitas_replay`): ``--serve`` runs the
    RPC server of host ``--host`` (a number of the plan's network); otherwise this host sends
    the plan's RPCs (those of source ``--host`` when given) through ``tailbound-replay rpc`` and
    prints verify's Aequitas table; ``--out`` is a folder for ``verify.csv`` and ``rpcs.csv``."""
    from pathlib import Path

    from tailbound.cli.exitcodes import outcome
    from tailbound.enforce import aequitas_replay as live
    from tailbound.enforce import replay
    from tailbound.errors import ConfigError
    from tailbound.plan_inputs import resolve_inputs
    from tailbound.sim.aequitas_plan import read_rpc_trace

    for option, given in (("--start-at", args.start_at), ("--dscp", args.dscp or None)):
        if given is not None:
            raise ConfigError(
                None, "not for an Aequitas plan (its classes carry their DSCP)", field=option
            )
    if args.serve:
        if args.host is None:
            raise ConfigError(None, "--serve needs --host (a host number)", field="--host")
        ports = live.serve_ports(plan, args.host, addresses)
        proc, bound = replay.serve(ports, args.duration)
        _serve_until_done(
            proc, f"serving host {args.host}'s RPCs on {' '.join(bound)} for {args.duration:g} s"
        )
        return 0
    source = None
    if args.host is not None:
        if not args.host.isdigit():
            raise ConfigError(None, f"expected a host number, got {args.host!r}", field="--host")
        source = int(args.host)
    section = plan.aequitas
    names = list(section.tenants)
    inputs = resolve_inputs(plan, args.plan, names, tenants=args.tenants)
    traces = {}
    for n in names:
        ref = inputs.traces[n]
        trace = read_rpc_trace(ref.path, ref.format, section.tenants[n])
        traces[n] = trace.slice_time(*args.window) if args.window is not None else trace
    run = live.replay_live(plan, traces, addresses, source=source, drain_s=args.drain)
    print(run.table())
    print("\n" + live.summary(run))
    if args.out is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        run.to_csv(out / "verify.csv")
        run.write_rpcs(out / "rpcs.csv")
        print(f"wrote {out / 'verify.csv'} and {out / 'rpcs.csv'}")
    return outcome(run.all_held)


def _refuse(checks: list, what: str) -> int:
    """Warn (stderr) of every tenant whose realised bound is above the Plan's; exit status 1
    (``what``) if one is above its SLO: the discipline tc would realise cannot guarantee it."""
    import sys

    for c in checks:
        if c.over_plan and not c.over_slo:
            print(f"warning: {c.line()}", file=sys.stderr)
    over = [c for c in checks if c.over_slo]
    for c in over:
        print(f"error: {c.line()}", file=sys.stderr)
    if over:
        print(
            f"{what}: the discipline tc realises (strict priority between levels, round robin "
            f"within one) cannot guarantee the SLO of {', '.join(c.tenant for c in over)}; "
            "re-plan (fewer tenants per level, smaller buckets) or give a faster --link-rate",
            file=sys.stderr,
        )
    return 1 if over else 0


def run(args: argparse.Namespace) -> int:
    from tailbound.enforce import net
    from tailbound.enforce.bounds_check import BoundCheck, check_bounds
    from tailbound.errors import ConfigError
    from tailbound.plan import Plan

    config = None
    checks: list[BoundCheck] = []
    if args.meter:
        import json

        from tailbound.enforce import net_meter

        with net.Host(args.netns) as host:
            counts = net_meter.read(host, net.nft_table(args.device))
        print(json.dumps({k: c.to_json() for k, c in sorted(counts.items())}))
        return 0
    if args.ingress and args.switch:
        raise ConfigError(None, "--ingress and --switch exclude each other", field="--ingress")
    if args.classes and (args.switch or args.ingress or args.plan):
        raise ConfigError(
            None, "--classes excludes --switch, --ingress and --plan", field="--classes"
        )
    if not args.remove:
        if args.classes:
            from tailbound.enforce.weighted import load_classes, weighted_config

            if args.link_rate is None:
                raise ConfigError(None, "weighted classes need --link-rate", field="--link-rate")
            config = weighted_config(args.device, load_classes(args.classes), args.link_rate)
        elif args.switch:
            if args.link_rate is None:
                raise ConfigError(None, "a switch port needs --link-rate", field="--link-rate")
            config = net.switch_config(args.device, args.link_rate)
        elif args.plan is not None and (plan := Plan.load(args.plan)).aequitas is not None:
            # An Aequitas plan: its WFQ classes on this link, by DSCP (docs/aequitas.md)
            from tailbound.enforce.weighted import weighted_config

            view = plan.aequitas.enforcer_view()
            rate = args.link_rate if args.link_rate is not None else int(view.link_rate_bps / 8)
            config = weighted_config(args.device, list(view.classes), rate)
        else:
            for opt in ("plan", "host", "hosts"):
                if getattr(args, opt) is None:
                    raise ConfigError(None, f"--{opt} is required", field=f"--{opt}")
            plan = Plan.load(args.plan)
            addresses = net.Addresses.load(args.hosts)
            known = {h for t in plan.tenants for h in (t.server, t.client_host) if h}
            if args.host not in known:
                raise ConfigError(
                    args.plan, f"no tenant runs on host {args.host!r}", field="tenants"
                )
            config = net.host_config(
                plan,
                args.host,
                args.device,
                addresses,
                link_rate=args.link_rate,
                plan_path=args.plan,
                receive=args.ingress,
            )
            flows = net.host_flows(plan, args.host, addresses, receive=args.ingress)
            checks = check_bounds(plan, config.link_rate, {f.tenant.name for f in flows})
        if args.dry_run:
            if args.ingress:
                print(net.ingress_line(args.device, config.device))
            print("\n".join(config.lines(labels=True)))
            print("\n".join(f"# bound: {c.line()}" for c in checks))
            return _refuse(checks, "would refuse")
        if not args.diff and _refuse(checks, "refused, nothing changed"):
            return 1
    with net.Host(args.netns) as host:
        if args.remove:
            done = (net.remove_ingress if args.ingress else net.remove)(host, args.device)
            print(
                "removed " + "; ".join(done) if done else f"nothing of tailbound's on {args.device}"
            )
            return 0
        assert config is not None
        if args.diff or args.check:
            lines = (
                net.ingress_diff(host, args.device, config)
                if args.ingress
                else net.diff(host, config)
            )
            if args.diff:
                print("\n".join(lines) if lines else "no difference")
            return 1 if lines and args.check else 0
        if args.ingress:
            changed = net.apply_ingress(host, args.device, config)
        else:
            changed = net.apply(host, config)
        print(
            f"{args.device}{' → ' + config.device if args.ingress else ''}: "
            f"{'installed' if changed else 'unchanged'}: "
            f"{len(config.classes)} classes, {len(config.filters)} filters, "
            f"{len(config.nft_rules)} nftables rules; readback equals the plan"
        )
    return 0
