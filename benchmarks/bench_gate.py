"""The storage gateway's own cost: fio's ``nbd`` engine, 4 KiB random reads, against four servers
in one run (issues 17 and 26):

- ``nbdkit file``: nbdkit's file plugin over a directory of page-cached files (the baseline
  device);
- ``nbdkit nbd`` proxy: nbdkit's ``nbd`` plugin in front of that same nbdkit (one more hop, the
  reference a gateway is compared with);
- ``tailbound-gate --upstream``: the gateway in front of that same nbdkit, started by
  ``tailbound gate`` from a Plan of two tenants, each with a storage token bucket (H at the top
  level, L below it), so every request passes ``Dispatcher::enqueue``/``dispatch``/``complete``
  and H's bucket (no shortcut path). The buckets are sized not to throttle (utilisation 0.9
  and 0.5 of a device whose 4 KiB read costs 1 µs): what is measured is their cost, not their
  limit. The gateway's counters at exit must account for every fio read.
- ``tailbound-gate file, PSLO LS+T``: the gateway serving its own file backend (its default; the
  same page-cached files, linked as ``<export>.img``), with the same configuration (plan,
  buckets) plus a PSLO controller (``control``: ``LS+T`` for both tenants) running on every
  completion, so every request also passes its tenant's rate gate and the controller's forecast
  and decision modules. The controller is set not to limit what is measured: throughput SLOs of
  10^7 reads/s (a pacing gap of 0.1 µs), latency SLOs of 1 s, and a forecast threshold of 10^6
  (never reached, so the depths stay unlimited; a depth limit would be the measured limit, not the
  controller's cost). Its counters must account for every fio read too.

Each repetition runs, for each server in turn, queue depth 32 (IOPS) then queue depth 1 (p50
and p99 completion latency), ``--seconds`` each; the table gives medians over ``--runs``
repetitions and the ratios against the nbdkit proxy. Targets: the gateway's IOPS at depth 32 at
least the proxy's; its p99 at depth 1 within 10% of the proxy's (ratio ≤ 1.10). For the direct
row with PSLO (issue 26): at least 90% of nbdkit file's IOPS at depth 32, its depth-1 p99 within
10% of nbdkit file's.

Run: ``.venv/bin/python -m benchmarks.bench_gate [--runs 5] [--seconds 4]``, or ``--quick`` (one
repetition of 1.5 s per fio run, about 20 s) (needs nbdkit and fio, and the gateway binary from
``make install``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tailbound.enforce.storage import find_binary
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, DispatchRule, Plan, StageLimit, TenantPlan
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.tables import markdown_table

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
UPSTREAM = "tailbound-gate --upstream → nbdkit file"
DIRECT = "tailbound-gate file, PSLO LS+T"
FILE_BYTES = 64 << 20
#: 4 KiB reads cost 1 µs of device work: the buckets below never hold a request back.
PROFILE = {
    "type": "storageSSD",
    "bandwidthTable": [
        {"requestSize": 4096, "readBandwidth": 4_096_000_000, "writeBandwidth": 4_096_000_000}
    ],
    "readMPL": 48,
    "writeMPL": 48,
    "maxOutstandingReadBytes": 64 << 20,
    "maxOutstandingWriteBytes": 64 << 20,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def plan_file(folder: Path) -> Path:
    def tenant(name: str, level: int, rate: float) -> TenantPlan:
        return TenantPlan(
            name,
            Slo(0.05),
            "s0",
            "ssd0",
            dict.fromkeys(STORAGE_PATH, level),
            {Stage.STORAGE: StageLimit(rate, 0.01)},
            Bound(0.01, "bench"),
        )

    plan = Plan("bench", 1, [tenant("H", 0, 0.9), tenant("L", 1, 0.5)], dispatch=DispatchRule())
    plan.save(folder / "plan.json")
    return folder / "plan.json"


#: The direct row's controller: LS+T on both tenants, never limiting (see the module docstring).
CONTROL = {
    "kind": "pslo",
    "policy": "LS+T",
    "threshold": 1e6,
    "tenants": [
        {"workload": w, "latency_s": 1.0, "percentile": 0.99, "throughput_iops": 1e7}
        for w in (0, 1)
    ],
}


def direct_config(folder: Path, files: Path) -> Path:
    """The configuration ``tailbound gate`` wrote for the upstream row, serving ``files``
    directly (``<export>.img`` links to them) with :data:`CONTROL` added."""
    cfg = json.loads((folder / "gate" / "tailbound-gate.json").read_text())
    direct = folder / "direct"
    direct.mkdir()
    for name in cfg["exports"]:
        (direct / f"{name}.img").symlink_to(files / name)
    cfg.pop("upstream")
    cfg.update(
        listen="127.0.0.1:0", backend_dir=str(direct), export_size=FILE_BYTES, control=CONTROL
    )
    cfg.pop("metrics_listen", None)
    path = folder / "direct.json"
    path.write_text(json.dumps(cfg))
    return path


def start_listening(cmd: list[str]) -> tuple[subprocess.Popen[str], int]:
    """Start a gateway; it and its port once it prints ``listening on``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"the gateway did not start: {line!r} {proc.communicate()[1]}")
    return proc, int(line.rsplit(":", 1)[1])


def stop_counted(gate: subprocess.Popen[str], ios: float, name: str) -> int:
    """SIGTERM a gateway; the requests it counted, checked against fio's ``ios``."""
    gate.send_signal(signal.SIGTERM)
    out, err = gate.communicate(timeout=60)
    counted = sum(json.loads(x)["requests"] for x in out.splitlines() if x.startswith("{"))
    # every read fio counted passed the dispatcher (fio's ramp-time reads come on top)
    if gate.returncode != 0 or counted < ios:
        raise RuntimeError(f"{name} counted {counted} < fio's {ios}: {err}")
    return counted


def fio(uri: str, depth: int, seconds: float, folder: Path) -> dict[str, float]:
    job = folder / "job.fio"
    job.write_text(
        f"[r]\nioengine=nbd\nuri={uri}\nrw=randread\nbs=4k\nsize={FILE_BYTES}\n"
        f"iodepth={depth}\ntime_based=1\nruntime={seconds}\nramp_time=0.5\n"
    )
    p = subprocess.run(
        ["fio", "--output-format=json", str(job)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=seconds * 4 + 60,
        check=True,
    )
    read = json.loads(p.stdout[p.stdout.index("{") :])["jobs"][0]["read"]
    pct = read["clat_ns"]["percentile"]
    return {
        "iops": read["iops"],
        "ios": read["total_ios"],
        "p50_us": pct["50.000000"] / 1e3,
        "p99_us": pct["99.000000"] / 1e3,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, help="repetitions (median)")
    ap.add_argument("--seconds", type=float, default=4.0, help="each fio run")
    ap.add_argument("--quick", action="store_true", help="--runs 1 --seconds 1.5")
    args = ap.parse_args(argv or [])  # `make bench` calls main() with no arguments
    if args.quick:
        args.runs, args.seconds = 1, 1.5
    missing = [t for t in ("nbdkit", "fio") if shutil.which(t) is None]
    if missing:
        print(f"bench_gate skipped: needs {missing} (Debian packages nbdkit, fio)")
        return
    try:
        find_binary()
    except ConfigError as e:
        print(f"bench_gate skipped: {e}")
        return
    procs: list[subprocess.Popen[Any]] = []
    folder = Path(tempfile.mkdtemp(prefix="bench-gate-"))
    try:
        files = folder / "files"
        files.mkdir()
        for name in ("H", "L"):
            with open(files / name, "wb") as f:
                f.write(os.urandom(FILE_BYTES))  # real data, read into the page cache once
        file_port, proxy_port = free_port(), free_port()
        base = ["nbdkit", "-f", "-i", "127.0.0.1"]
        procs.append(subprocess.Popen([*base, "-p", str(file_port), "file", f"dir={files}"]))
        wait_port(file_port)
        proxy = ["nbd", "hostname=127.0.0.1", f"port={file_port}", "export=H"]
        procs.append(subprocess.Popen([*base, "-p", str(proxy_port), *proxy]))
        wait_port(proxy_port)
        (folder / "profile.json").write_text(json.dumps(PROFILE))
        gate, gate_port = start_listening(
            [
                *TAILBOUND,
                "gate",
                "--plan",
                str(plan_file(folder)),
                "--profile",
                str(folder / "profile.json"),
                "--backend",
                str(folder / "gate"),
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                f"127.0.0.1:{file_port}",
            ]
        )
        procs.append(gate)
        direct, direct_port = start_listening(
            [str(find_binary()), "--config", str(direct_config(folder, files))]
        )
        procs.append(direct)
        servers = {
            "nbdkit file": f"nbd://127.0.0.1:{file_port}/H",
            "nbdkit nbd proxy → nbdkit file": f"nbd://127.0.0.1:{proxy_port}/",
            UPSTREAM: f"nbd://127.0.0.1:{gate_port}/H",
            DIRECT: f"nbd://127.0.0.1:{direct_port}/H",
        }
        results: dict[str, dict[str, list[float]]] = {s: {} for s in servers}
        ios = dict.fromkeys((UPSTREAM, DIRECT), 0.0)
        fio(servers["nbdkit file"], 1, 1, folder)  # warm-up
        for run in range(args.runs):
            for name, uri in servers.items():
                deep = fio(uri, 32, args.seconds, folder)
                shallow = fio(uri, 1, args.seconds, folder)
                r = results[name]
                r.setdefault("iops32", []).append(deep["iops"])
                r.setdefault("p99_32", []).append(deep["p99_us"])
                r.setdefault("iops1", []).append(shallow["iops"])
                r.setdefault("p50_1", []).append(shallow["p50_us"])
                r.setdefault("p99_1", []).append(shallow["p99_us"])
                if name in ios:
                    ios[name] += deep["ios"] + shallow["ios"]
                print(run, name, deep, shallow, file=sys.stderr, flush=True)
        counted = stop_counted(gate, ios[UPSTREAM], UPSTREAM)
        counted_direct = stop_counted(direct, ios[DIRECT], DIRECT)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
            p.communicate(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    med = {s: {k: statistics.median(v) for k, v in r.items()} for s, r in results.items()}
    proxy_m, file_m = med["nbdkit nbd proxy → nbdkit file"], med["nbdkit file"]
    rows = []
    for name, m in med.items():
        rows.append(
            [
                name,
                f"{m['iops32']:,.0f}",
                f"{m['iops32'] / proxy_m['iops32']:.2f}",
                f"{m['iops32'] / file_m['iops32']:.2f}",
                f"{m['p99_32']:,.0f}",
                f"{m['iops1']:,.0f}",
                f"{m['p50_1']:.0f}",
                f"{m['p99_1']:.0f}",
                f"{m['p99_1'] / proxy_m['p99_1']:.2f}",
                f"{m['p99_1'] / file_m['p99_1']:.2f}",
            ]
        )
    print(
        markdown_table(
            [
                "server",
                "depth 32 reads/s",
                "vs proxy",
                "vs file",
                "depth 32 p99 µs",
                "depth 1 reads/s",
                "depth 1 p50 µs",
                "depth 1 p99 µs",
                "p99 vs proxy",
                "p99 vs file",
            ],
            rows,
        )
    )
    g, d = med[UPSTREAM], med[DIRECT]
    verdict = {True: "met", False: "MISSED"}
    print(
        f"\n{args.runs} runs × {args.seconds:g} s, medians; the gateways counted {counted} and "
        f"{counted_direct} requests. Targets: upstream depth-32 IOPS ≥ proxy: "
        f"{verdict[g['iops32'] >= proxy_m['iops32']]}; upstream depth-1 p99 ≤ 1.10 × proxy: "
        f"{verdict[g['p99_1'] <= 1.10 * proxy_m['p99_1']]}; direct (PSLO) depth-32 IOPS ≥ "
        f"0.90 × nbdkit file: {verdict[d['iops32'] >= 0.90 * file_m['iops32']]}; direct depth-1 "
        f"p99 ≤ 1.10 × nbdkit file: {verdict[d['p99_1'] <= 1.10 * file_m['p99_1']]}."
    )


if __name__ == "__main__":
    main(sys.argv[1:])
