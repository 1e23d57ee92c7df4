"""``tailbound agent``: apply this host's part of the control plane's current Plan
(:mod:`tailbound.service.agent`; docs/service.md, "Agents")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.serve import env


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agent",
        help="fetch this host's part of the current Plan from tailbound serve and apply it",
        description=(
            "Poll the server (--server, --token: an agent token of --host) for this host's part "
            "of --cluster's current Plan; apply a new part with `tailbound enforce net` (then "
            "--check) on --net-device and/or `tailbound gate --reload` on --gate-backend; keep "
            "the part applied in --state. A part is applied only whole (its SHA-256 is its "
            "ETag). --once: one step, then exit; without it the agent runs until stopped and "
            "outlives server restarts. Prints one JSON report a step."
        ),
        epilog=epilog("the part could not be applied, or --check found the device drifted"),
    )
    parser.add_argument("--server", default=env("SERVER", "http://127.0.0.1:8750"))
    parser.add_argument("--token", default=env("TOKEN", None), help="an agent token")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--host", required=True, help="the Plan's host this machine is")
    parser.add_argument("--state", type=Path, required=True, help="folder for the applied part")
    parser.add_argument("--net-device", help="apply the network stages on this device")
    parser.add_argument(
        "--hosts",
        type=Path,
        help="with --net-device: an enforce net hosts file (addresses, ports) replacing those "
        "the part carries from the cluster's and tenants' documents",
    )
    parser.add_argument("--netns", help="with --net-device: inside this network namespace")
    parser.add_argument("--link-rate", help="with --net-device: the link rate")
    parser.add_argument("--dry-run", action="store_true", help="print the tc objects only")
    parser.add_argument(
        "--net-meter",
        action="store_true",
        help="with --net-device: post each tenant's packets beyond the Plan's network bucket, "
        "counted by enforce net's meter (enforce net --meter), each step",
    )
    parser.add_argument("--gate-device", help="the gateway's device (server.device)")
    parser.add_argument("--gate-backend", type=Path, help="the running gateway's --backend")
    parser.add_argument(
        "--gate-metrics",
        metavar="URL",
        help="the gateway's metrics (http://HOST:PORT/metrics): post each tenant's latencies",
    )
    parser.add_argument(
        "--replay-csv",
        type=Path,
        metavar="FILE",
        help="the replayer's client CSV (enforce replay --out): post each tenant's latencies "
        "and its requests beyond the Plan's buckets, once per version of the file",
    )
    parser.add_argument(
        "--rpc-replay",
        action="store_true",
        help="an Aequitas part: serve the host's RPCs (looping) and replay those it sends "
        "once per part (enforce replay), posting each tenant's and class's measurements",
    )
    parser.add_argument(
        "--rpc-drain", type=float, default=2.0, help="--rpc-replay: the replay's --drain, s"
    )
    parser.add_argument(
        "--replay-progress",
        type=Path,
        metavar="FILE",
        help="a running replayer's progress file (enforce replay --progress): post each "
        "tenant's requests answered since the previous step as one window, while it runs",
    )
    parser.add_argument("--once", action="store_true", help="one step, then exit")
    parser.add_argument(
        "--wait", type=float, default=20.0, help="long-poll seconds (default 20, at most 25)"
    )
    parser.add_argument("--retry", type=float, default=2.0, help="seconds between retries")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys

    import httpx

    from tailbound.errors import ConfigError
    from tailbound.service.agent import Agent, Gate, Net
    from tailbound.service.client import Client, ServiceError

    net = gate = None
    if args.hosts is not None and not args.net_device:
        raise ConfigError(None, "--hosts goes with --net-device", field="--hosts")
    if args.net_meter and not args.net_device:
        raise ConfigError(None, "--net-meter goes with --net-device", field="--net-meter")
    if args.net_device:
        net = Net(
            args.net_device, args.hosts, args.netns, args.link_rate, args.dry_run, args.net_meter
        )
    if (args.gate_device is None) != (args.gate_backend is None):
        raise ConfigError(
            None, "--gate-device and --gate-backend go together", field="--gate-device"
        )
    if args.gate_device:
        gate = Gate(args.gate_device, args.gate_backend)
    with Client(args.server, args.token) as client:
        agent = Agent(client, args.cluster, args.host, args.state, net, gate)
        agent.metrics_url = args.gate_metrics
        agent.replay_csv = args.replay_csv
        if args.rpc_replay:
            from tailbound.service.rpc_agent import RpcReplay

            agent.rpc = RpcReplay(args.state, args.netns, args.rpc_drain)
        agent.replay_progress = args.replay_progress

        def report(doc: dict[str, Any]) -> None:
            print(json.dumps(doc), flush=True)

        if args.once:
            try:
                done = agent.step(0.0)
                if net is not None and net.meter and not net.dry_run:
                    done["net_meter_window"] = agent.measure_net()
                if agent.metrics_url is not None:
                    done["measurements"] = agent.measure(httpx.get(agent.metrics_url).text)
                if agent.replay_csv is not None:
                    done["replay_measurements"] = agent.measure_replay(agent.replay_csv)
                if agent.rpc is not None:  # --once replays what it sends; serving needs a loop
                    done["rpc"] = agent.rpc.after(agent, serve=False)
                if agent.replay_progress is not None:
                    done["replay_window"] = agent.follow_replay(agent.replay_progress)
                if net is not None and net.meter and not net.dry_run:
                    done["net_meter"] = agent.post_net()
            except (ServiceError, httpx.HTTPError, OSError) as e:
                print(f"tailbound agent: error: {e}", file=sys.stderr)
                return Exit.BAD_INPUT
            report(done)
            return Exit.OK if done["ok"] else Exit.CHECK_FAILED
        try:
            agent.loop(args.wait, args.retry, report)
        finally:
            if agent.rpc is not None:
                agent.rpc.stop()
    return Exit.OK
