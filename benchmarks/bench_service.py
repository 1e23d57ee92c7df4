"""The control plane under load: admissions per second and decision latency (p50, p99) through
``tailbound serve``, against the CLI doing the same decisions in one process.

For each policy (WorkloadCompactor placement; SNC-Meister admission with the thesis' rule, whose
decisions replay nothing in the simulator) and database (SQLite; PostgreSQL with ``--pg URL``),
a demo fleet of ``--tenants`` workloads (10 s traces) is registered on a fresh server, then
admitted one request at a time (the latency of an uncontended decision) and measured again with
``--clients`` clients at once on a second cluster (the throughput under contention). The CLI
column is ``tailbound place`` (WorkloadCompactor) or ``tailbound admit`` (SNC-Meister) over the
same tenants file: its wall time divided by the tenants decided.

The server's own decision time (the ``seconds`` each decision records, request to commit) is
reported over the first and the last 100 admissions of the serial run, which shows how the cost
of one decision grows with the tenants admitted.

Run: ``.venv/bin/python -m benchmarks.bench_service [--tenants 100] [--servers N] [--clients 16]
[--pg URL | --pg auto]`` (``auto``: a PostgreSQL server initialised in a temporary directory, as
the tests do); ``--quick``: 6 tenants of 5 s, 2 clients (what the test suite runs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tailbound.demo import write_fleet
from tailbound.policies import registry
from tailbound.service import tokens
from tailbound.service.client import Client
from tailbound.service.db import make_engine, sessions
from tailbound.service.migrate import upgrade
from tailbound.traces.fleet import demo_fleet

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
#: The thesis' SNC-Meister rule: the bound only (no simulator replays per decision).
THESIS_RULE = {
    "alone_floor": False,
    "split_levels": False,
    "add_model_error": False,
    "police": False,
}


def start(db: str, data: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """A server on ``db``; its process, URL and an operator token."""
    upgrade(db)
    engine = make_engine(db)
    with sessions(engine).begin() as s:
        token = tokens.create(s, f"bench{time.time_ns()}", "operator")
    engine.dispose()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [
        *TAILBOUND,
        "serve",
        "--db",
        db,
        "--data",
        str(data),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    log = open(data.parent / f"server-{port}.log", "wb")
    process = subprocess.Popen(argv, stdout=log, stderr=log)
    log.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url, token
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"the server did not start: see {data.parent / f'server-{port}.log'}")


def register(c: Client, name: str, policy: str, folder: Path, options: dict[str, Any]) -> list[str]:
    tenants = json.loads((folder / "tenants.json").read_text())["tenants"]
    cluster = json.loads((folder / "cluster.json").read_text())
    profile = json.loads((folder / "profile_ssd.json").read_text())
    c.create_cluster(name, policy, cluster, profile, options)
    for t in tenants:
        if registry.find(policy).kind == "admission":
            t = {k: v for k, v in t.items() if k != "device"}  # network only, as bench_snc
        c.register_tenant(name, {**t, "trace": c.upload_trace(folder / t["trace"])["sha256"]})
    return [t["name"] for t in tenants]


def measure(url: str, token: str, policy: str, folder: Path, clients: int) -> dict[str, float]:
    placement = registry.find(policy).kind == "placement"
    options = {"mtu_bytes": 9000.0} if placement else {"rule": THESIS_RULE}
    out: dict[str, float] = {}
    with Client(url, token) as c:
        names = register(c, f"serial-{policy}", policy, folder, options)
        latencies = []
        start = time.perf_counter()
        admitted = 0
        for n in names:
            t = time.perf_counter()
            admitted += c.admit(f"serial-{policy}", n)["admitted"]
            latencies.append(time.perf_counter() - t)
        out["serial_per_s"] = len(names) / (time.perf_counter() - start)
        out["p50_ms"] = float(np.percentile(latencies, 50)) * 1e3
        out["p99_ms"] = float(np.percentile(latencies, 99)) * 1e3
        out["admitted"] = admitted
        decided = [
            d["seconds"]
            for d in c.json("GET", f"/clusters/serial-{policy}/decisions")
            if d["event"] == "admit"
        ]
        out["first_ms"] = float(np.median(decided[:100])) * 1e3
        out["last_ms"] = float(np.median(decided[-100:])) * 1e3
        if clients == 0:
            out["crowd_per_s"] = out["crowd_p99_ms"] = float("nan")
            return out
        register(c, f"crowd-{policy}", policy, folder, options)
    barrier = threading.Barrier(clients)

    def run(part: list[str]) -> list[float]:
        with Client(url, token) as cc:
            barrier.wait()
            own = []
            for n in part:
                t = time.perf_counter()
                cc.admit(f"crowd-{policy}", n)
                own.append(time.perf_counter() - t)
            return own

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        waits = [
            x for part in pool.map(run, [names[i::clients] for i in range(clients)]) for x in part
        ]
    out["crowd_per_s"] = len(names) / (time.perf_counter() - start)
    out["crowd_p99_ms"] = float(np.percentile(waits, 99)) * 1e3
    return out


def cli_rate(policy: str, folder: Path) -> float:
    """Decisions per second of the CLI over the same tenants file (one process, no service)."""
    n = len(json.loads((folder / "tenants.json").read_text())["tenants"])
    if registry.find(policy).kind == "placement":
        argv = [
            "place", "--tenants", str(folder / "tenants.json"),
            "--cluster", str(folder / "cluster.json"),
            "--profile", str(folder / "profile_ssd.json"),
            "--mtu", "9000", "--quiet", "--out", str(folder / "cli-plan.json"),
        ]  # fmt: skip
    else:
        network = folder / "tenants-network.json"
        doc = json.loads((folder / "tenants.json").read_text())
        doc["tenants"] = [{k: v for k, v in t.items() if k != "device"} for t in doc["tenants"]]
        network.write_text(json.dumps(doc))
        argv = [
            "admit",
            "--tenants",
            str(network),
            "--policy",
            "snc-meister",
            "--no-alone-floor",
            "--quiet",
        ]
    start = time.perf_counter()
    subprocess.run([*TAILBOUND, *argv], check=False, capture_output=True)
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=100)
    p.add_argument("--servers", type=int, help="servers of the demo cluster (default tenants/4)")
    p.add_argument(
        "--clients", type=int, default=16, help="clients at once for the crowd (0: no crowd)"
    )
    p.add_argument("--client-hosts", type=int, default=2, help="client hosts of the demo cluster")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of each trace")
    p.add_argument(
        "--pg", help="a PostgreSQL database URL (fresh) to measure too; 'auto': a temporary one"
    )
    p.add_argument("--policies", default="workloadcompactor,snc-meister")
    p.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="skip the restart measurement (bench_restart on the serial cluster)",
    )
    p.add_argument("--quick", action="store_true", help="6 tenants of 5 s, 2 clients")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.tenants, args.clients, args.duration = 6, 2, 5.0
    with contextlib.ExitStack() as stack:
        if args.pg == "auto":
            from benchmarks.tempdb import pg_database, temporary_postgres

            args.pg = pg_database(stack.enter_context(temporary_postgres()))
        run(args)


def run(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="tb-bench-service-"))
    folder = root / "fleet"
    servers = args.servers or max(2, args.tenants // 4)
    write_fleet(
        demo_fleet(args.tenants, seed=11, duration_s=args.duration),
        folder,
        servers=servers,
        clients=args.client_hosts,
    )
    cores = os.cpu_count()
    print(
        f"{args.tenants} tenants of {args.duration:g} s, {servers} servers, "
        f"{args.client_hosts} client hosts, {args.clients} clients at once for the crowd; "
        f"{cores} cores\n"
    )
    print(
        "| policy | database | serial admissions/s | decision p50 ms | p99 ms "
        "| server decision ms, first / last 100 "
        "| crowd admissions/s | crowd p99 ms | admitted | CLI decisions/s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    databases = [("SQLite", f"sqlite:///{root / 'tb.db'}")] + (
        [("PostgreSQL", args.pg)] if args.pg else []
    )
    restarts = []
    for policy in args.policies.split(","):
        cli = cli_rate(policy, folder)
        for label, db in databases:
            process, url, token = start(db, root / f"data-{label}")
            try:
                m = measure(url, token, policy, folder, args.clients)
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(60)
            if args.restart:  # the serial cluster's history, read by a restarted server
                from benchmarks import bench_restart

                found = bench_restart.measure(db, root / f"data-{label}", f"serial-{policy}")
                restarts.append((policy, label, found, m["admitted"]))
            print(
                f"| {policy} | {label} | {m['serial_per_s']:.1f} | {m['p50_ms']:.0f} "
                f"| {m['p99_ms']:.0f} | {m['first_ms']:.0f} / {m['last_ms']:.0f} "
                f"| {m['crowd_per_s']:.1f} | {m['crowd_p99_ms']:.0f} "
                f"| {m['admitted']:.0f} | {cli:.1f} |",
                flush=True,
            )
    for policy, label, found, admitted in restarts:
        print(f"\nRestart to first decision ({policy}, {label}; benchmarks/bench_restart.py):\n")
        print(bench_restart.table(found, int(admitted)))


if __name__ == "__main__":
    main(sys.argv[1:])
