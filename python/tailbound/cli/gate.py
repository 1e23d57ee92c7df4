"""``tailbound gate``: start ``tailbound-gate``, the NBD storage gateway, on a Plan's storage stage
(``docs/enforcement.md``, "Storage path").

The verb checks the plan and the SSD profile, writes the gateway's configuration
(:mod:`tailbound.enforce.storage`) to ``<backend>/tailbound-gate.json`` (or ``--write-config``
only), its pid to ``<backend>/tailbound-gate.pid`` and replaces itself by the gateway, which
prints ``listening on HOST:PORT``, serves until SIGINT or SIGTERM, drains the requests in it and
then prints each export's counters.

``--reload`` pushes a new plan to the gateway running on ``--backend``: the verb rewrites
``<backend>/tailbound-gate.json`` (atomically; the listening addresses, the backend and the
largest request are kept from the running configuration) and sends the gateway SIGHUP; the
gateway applies it whole or refuses it with a line on its stderr (``docs/enforcement.md``,
"Hot reload").
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog
from tailbound.cli.profile import parse_bytes


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gate",
        help="serve a plan's storage tenants over NBD through the core's dispatcher",
        description=(
            "Start tailbound-gate, an NBD server with one export per tenant placed on the device "
            "(export name = tenant name, a file <backend>/<tenant>.img), whose reads and writes "
            "enter the device through the simulator's dispatcher: the plan's storage priorities "
            "and token buckets in device-seconds (costs from the SSD profile), the profile's "
            "dispatch limits and the plan's dispatch rule."
        ),
        epilog=epilog(None),
    )
    parser.add_argument("--plan", required=True, type=Path, help="plan JSON (any verb's --out)")
    parser.add_argument(
        "--profile", type=Path, help="SSD profile JSON (default: the profile the plan records)"
    )
    parser.add_argument(
        "--backend", required=True, type=Path, help="directory of the export files (created)"
    )
    parser.add_argument(
        "--listen", default="127.0.0.1:10809", help="HOST:PORT (port 0: any free port)"
    )
    parser.add_argument("--device", help="the plan's <server>.<device> to serve (if several)")
    parser.add_argument(
        "--export-size", type=parse_bytes, default=1 << 30, help="size of every export (1G)"
    )
    parser.add_argument(
        "--max-request", type=parse_bytes, default=32 << 20, help="largest read or write (32M)"
    )
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="baseline: one FIFO queue, no priorities or buckets (same dispatch limits)",
    )
    parser.add_argument(
        "--emulate-device",
        action="store_true",
        help="hold each request until a unit-rate device would have served it for its cost",
    )
    parser.add_argument(
        "--upstream",
        metavar="HOST:PORT",
        help="serve each export from the same-named export of this NBD server, not a file",
    )
    parser.add_argument(
        "--metrics", metavar="HOST:PORT", help="serve Prometheus text metrics at /metrics"
    )
    parser.add_argument(
        "--direct",
        action="store_true",
        help="open the backend files or block devices with O_DIRECT (writes in whole blocks)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, how long requests in the gateway may take to finish (10)",
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="push this plan to the gateway running on --backend (rewrite its config, SIGHUP)",
    )
    parser.add_argument("--write-config", type=Path, help="write the configuration here and exit")
    parser.add_argument("--binary", type=Path, help="the tailbound-gate binary (default: found)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import os
    import signal
    import sys

    from tailbound.atomic import write_text_atomic
    from tailbound.enforce import storage
    from tailbound.errors import ConfigError
    from tailbound.jsonio import read_json, write_json_atomic
    from tailbound.plan import Plan
    from tailbound.plan_inputs import resolve_profile
    from tailbound.profiles.tokens import SsdProfile

    plan = Plan.load(args.plan)
    given = resolve_profile(plan, args.plan, args.profile)
    profile = given.device_profile()
    if not isinstance(profile, SsdProfile):
        raise ConfigError(
            given.profile_source, "the gateway prices requests with an SSD profile", field="type"
        )
    config = storage.gate_config(
        plan,
        profile,
        backend_dir=args.backend.resolve(),
        listen=args.listen,
        device=args.device,
        export_size=args.export_size,
        max_request_bytes=args.max_request,
        fifo=args.fifo,
        emulate_device=args.emulate_device,
        metrics_listen=args.metrics,
        upstream=args.upstream,
        direct=args.direct,
        drain_timeout_s=args.drain_timeout,
        plan_path=str(args.plan),
    )
    path = args.backend / "tailbound-gate.json"
    pid_file = args.backend / "tailbound-gate.pid"
    if args.reload:
        if args.write_config is not None:
            raise ConfigError(
                None, "--reload and --write-config exclude each other", field="--reload"
            )
        pid = storage.gateway_pid(pid_file)
        running = read_json(path, what="the running gateway's configuration")
        if not isinstance(running, dict):
            raise ConfigError(path, "not a tailbound-gate configuration (a JSON object)")
        config = storage.reload_config(config, running)
        write_json_atomic(path, config)
        os.kill(pid, signal.SIGHUP)
        print(f"sent SIGHUP to tailbound-gate {pid}: {len(config['exports'])} exports in {path}")
        return 0
    if args.write_config is not None:
        write_json_atomic(args.write_config, config)
        print(f"wrote {args.write_config}: {len(config['exports'])} exports")
        return 0
    binary = storage.find_binary(args.binary)
    write_json_atomic(path, config)
    write_text_atomic(pid_file, f"{os.getpid()}\n")  # execv keeps the pid
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [str(binary), "--config", str(path)])
