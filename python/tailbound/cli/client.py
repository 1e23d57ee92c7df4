"""``tailbound client``: the control plane over HTTP (clusters, traces, tenants, admissions,
departures, Plans, reports, tokens; docs/service.md). Answers are printed as JSON on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.serve import env


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "client",
        help="talk to a running control plane (tailbound serve) over HTTP",
        description=(
            "Register clusters and tenants, admit and depart, fetch Plans and reports, manage "
            "tokens, on the server --server with the token --token (or TAILBOUND_SERVER, "
            "TAILBOUND_TOKEN). An error answer is printed as 'HTTP status: message (field F)' "
            "and exits 2."
        ),
        epilog=epilog(None),
    )
    parser.add_argument(
        "--server", default=env("SERVER", "http://127.0.0.1:8750"), help="server URL"
    )
    parser.add_argument("--token", default=env("TOKEN", None), help="API token")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    c = sub.add_parser("cluster", help="register a cluster (or list them with --list)")
    c.add_argument("--name", help="its name")
    c.add_argument("--policy", default="workloadcompactor", help="placement or admission policy")
    c.add_argument("--cluster", type=Path, help="cluster file (as tailbound place reads)")
    c.add_argument("--profile", type=Path, help="device profile JSON")
    c.add_argument("--options", default="{}", help="options as JSON (docs/service.md)")
    c.add_argument("--list", action="store_true", help="list the clusters instead")
    hosts_help = (
        "an enforce net hosts file ({'hosts': {host: address}, 'ports': {tenant: port}}): "
        "the agents' parts carry them"
    )
    c.add_argument("--hosts", type=Path, help=hosts_help + "; its hosts' addresses")

    t = sub.add_parser(
        "tenants", help="upload the traces of a tenants file and register its tenants"
    )
    t.add_argument("--cluster", required=True)
    t.add_argument("--tenants", required=True, type=Path, help="tenants file")
    t.add_argument("--only", nargs="*", help="register only these tenants")
    t.add_argument("--hosts", type=Path, help=hosts_help + "; its tenants' ports")

    for name, what in (("admit", "admit tenants in order"), ("depart", "depart tenants")):
        a = sub.add_parser(name, help=what)
        a.add_argument("--cluster", required=True)
        a.add_argument("tenant", nargs="*")
        a.add_argument(
            "--all",
            action="store_true",
            help="every registered tenant not admitted (admit) or every admitted one (depart), "
            "in registration order",
        )

    w = sub.add_parser("wait", help="wait until the server answers /health")
    w.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")

    p = sub.add_parser("plan", help="a Plan version, a host's part or a diff")
    p.add_argument("--cluster", required=True)
    p.add_argument("--version", type=int, help="version (default the current one)")
    p.add_argument("--host", help="only this host's part of the current Plan")
    p.add_argument("--diff", action="store_true", help="the diff from the previous version")
    p.add_argument("--out", type=Path, help="write the Plan there instead of stdout")

    r = sub.add_parser("report", help="predicted against measured, per tenant")
    r.add_argument("--cluster", required=True)

    k = sub.add_parser("token", help="create, revoke or list tokens")
    k.add_argument("token_action", choices=("create", "revoke", "list"))
    k.add_argument("--name")
    k.add_argument("--scope", choices=("read", "operator", "agent"))
    k.add_argument("--host")
    parser.set_defaults(run=run)


def show(doc: Any) -> None:
    print(json.dumps(doc, indent=1))


def run(args: argparse.Namespace) -> int:
    import httpx

    from tailbound.errors import ConfigError
    from tailbound.service.client import Client, ServiceError

    try:
        with Client(args.server, args.token) as client:
            return act(client, args)
    except ServiceError as e:
        print(f"tailbound client: error: {e}", file=sys.stderr)
        return Exit.BAD_INPUT
    except (OSError, httpx.HTTPError) as e:
        raise ConfigError(None, f"cannot reach {args.server}: {e}") from None


def act(client: Any, args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError
    from tailbound.jsonio import loads_json, read_json

    if args.action == "cluster":
        if args.list:
            show(client.json("GET", "/clusters"))
            return Exit.OK
        if not (args.name and args.cluster):
            raise ConfigError(None, "client cluster needs --name and --cluster (or --list)")
        profile = read_json(args.profile, what="the profile") if args.profile else None
        options = loads_json(args.options, "--options")
        hosts = hosts_file(args.hosts).hosts if args.hosts else {}
        show(
            client.create_cluster(
                args.name,
                args.policy,
                read_json(args.cluster, what="the cluster file"),
                profile,
                options,
                hosts,
            )
        )
    elif args.action == "tenants":
        register(client, args)
    elif args.action == "wait":
        wait(client, args.timeout)
    elif args.action in ("admit", "depart"):
        decide = client.admit if args.action == "admit" else client.depart
        names = list(args.tenant)
        if args.all:
            registered = client.json("GET", f"/clusters/{args.cluster}/tenants")
            admitted = args.action == "depart"
            names += [t["name"] for t in registered if (t["state"] == "admitted") == admitted]
        if not names:
            raise ConfigError(None, f"client {args.action}: name tenants or give --all")
        for name in names:
            show(decide(args.cluster, name))
    elif args.action == "plan":
        if args.host:
            _, _, text = client.host_part(args.cluster, args.host)
            out = text
        elif args.diff:
            version = args.version or client.plan(args.cluster)[0]
            out = json.dumps(
                client.json("GET", f"/clusters/{args.cluster}/plans/{version}/diff"), indent=1
            )
        else:
            _, doc = client.plan(args.cluster, args.version)
            out = json.dumps(doc, indent=1)
        if args.out:
            from tailbound.atomic import write_text_atomic

            write_text_atomic(args.out, out if out.endswith("\n") else out + "\n")
            print(f"written to {args.out}")
        else:
            print(out.rstrip("\n"))
    elif args.action == "report":
        show(client.json("GET", f"/clusters/{args.cluster}/report"))
    elif args.token_action == "create":
        show(
            client.json(
                "POST", "/tokens", json={"name": args.name, "scope": args.scope, "host": args.host}
            )
        )
    elif args.token_action == "revoke":
        show(client.json("DELETE", f"/tokens/{args.name}"))
    else:
        show(client.json("GET", "/tokens"))
    return Exit.OK


def wait(client: Any, timeout_s: float) -> None:
    """Poll /health until the server answers, for up to ``timeout_s`` seconds."""
    import time

    import httpx

    from tailbound.errors import ConfigError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.json("GET", "/health")
            print("ready")
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise ConfigError(
                    None, f"no answer from the server within {timeout_s:g} s"
                ) from None
            time.sleep(0.1)


def register(client: Any, args: argparse.Namespace) -> None:
    """Upload each tenant's trace of a tenants file and register the tenant (its entry, with
    the trace's hash): the same file ``tailbound admit`` and ``place`` read."""
    from tailbound.jsonio import read_json
    from tailbound.model import load_tenants

    tset = load_tenants(args.tenants)  # every field checked before anything is sent
    entries = read_json(args.tenants, what="the tenants file", finite=False)["tenants"]
    ports = hosts_file(args.hosts).ports if args.hosts else {}
    for tenant, entry in zip(tset.tenants, entries, strict=True):
        if args.only and tenant.name not in args.only:
            continue
        stored = client.upload_trace(tenant.trace)
        port = {"port": ports[tenant.name]} if tenant.name in ports else {}
        show(client.register_tenant(args.cluster, {**entry, "trace": stored["sha256"], **port}))


def hosts_file(path: Path) -> Any:
    """An ``enforce net --hosts`` file, checked (``enforce.net.Addresses``)."""
    from tailbound.enforce.net import Addresses

    return Addresses.load(path)
