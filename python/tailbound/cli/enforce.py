"""``tailbound enforce``: apply a Plan to real systems (``net``: Linux tc and nftables DSCP
marks on one host's device, ``docs/enforcement.md``)."""

from __future__ import annotations

import argparse


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
            "port that orders packets by DSCP instead (no plan needed)."
        ),
    )
    net.add_argument("--plan", help="the plan (tailbound-plan JSON)")
    net.add_argument("--host", help="the plan's client host or server this machine is")
    net.add_argument("--hosts", help="JSON: {'hosts': {name: IPv4}, 'ports': {tenant: port}}")
    net.add_argument("--device", required=True, help="the egress device (e.g. eth0)")
    net.add_argument("--netns", help="act inside this network namespace (default: the current)")
    net.add_argument("--link-rate", type=_rate, help="link rate (default: the plan's capacity)")
    net.add_argument("--switch", action="store_true", help="a DSCP strict-priority switch port")
    mode = net.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the objects, change nothing")
    mode.add_argument("--diff", action="store_true", help="print what differs from the device")
    mode.add_argument("--check", action="store_true", help="exit 1 unless the device holds it")
    mode.add_argument("--remove", action="store_true", help="remove what tailbound installed")
    net.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.enforce import net
    from tailbound.errors import ConfigError
    from tailbound.plan import Plan

    config = None
    if not args.remove:
        if args.switch:
            if args.link_rate is None:
                raise ConfigError(None, "a switch port needs --link-rate", field="--link-rate")
            config = net.switch_config(args.device, args.link_rate)
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
            )
        if args.dry_run:
            print("\n".join(config.lines(labels=True)))
            return 0
    with net.Host(args.netns) as host:
        if args.remove:
            done = net.remove(host, args.device)
            print(
                "removed " + "; ".join(done) if done else f"nothing of tailbound's on {args.device}"
            )
            return 0
        assert config is not None
        if args.diff or args.check:
            lines = net.diff(host, config)
            if args.diff:
                print("\n".join(lines) if lines else "no difference")
            return 1 if lines and args.check else 0
        changed = net.apply(host, config)
        print(
            f"{args.device}: {'installed' if changed else 'unchanged'}: "
            f"{len(config.classes)} classes, {len(config.filters)} filters, "
            f"{len(config.nft_rules)} nftables rules; readback equals the plan"
        )
    return 0
