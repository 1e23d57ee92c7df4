"""The live replayer on localhost (no root needed): ``tailbound-replay`` server and client, their
message sizes and latency CSV, bad input, the deadline, and ``tailbound enforce replay``."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tailbound.enforce import replay
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.profiles.tokens import MessageSizes
from tailbound.stages import NETWORK_PATH
from tailbound.traces import Trace

try:
    BINARY = replay.binary()
except replay.ReplayError as e:  # pragma: no cover - make install builds it
    pytest.skip(f"replayer tests skipped: {e}", allow_module_level=True)


def _requests(path: Path, rows: list[tuple[str, float, str, int]]) -> None:
    path.write_text(
        "tenant,time_s,op,size\n" + "".join(f"{n},{t},{o},{s}\n" for n, t, o, s in rows)
    )


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def _client(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BINARY), "client", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_server_and_client_exchange_the_token_models_message_sizes(tmp_path: Path) -> None:
    server, bound = replay.serve([0, 0], 30, address="127.0.0.1", log=tmp_path / "server.csv")
    try:
        rng = np.random.default_rng(1)
        rows = []
        for i in range(300):  # A: reads and writes of assorted sizes every 4 ms
            rows.append(("A", round(0.004 * i, 6), "RW"[i % 3 == 0], int(rng.integers(0, 200_000))))
        for i in range(60):  # B: 1 MB reads every 20 ms over three connections
            rows.append(("B", round(0.02 * i + 0.001, 6), "R", 1_000_000))
        _requests(tmp_path / "req.csv", rows)
        p = _client(
            "--requests",
            str(tmp_path / "req.csv"),
            "--tenant",
            f"A={bound[0]}",
            "--tenant",
            f"B={bound[1]},connections=3",
            "--out",
            str(tmp_path / "lat.csv"),
            "--drain",
            "10",
        )
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert p.returncode == 0, p.stderr
    assert "A: 300 of 300 requests answered" in p.stderr
    out = _rows(tmp_path / "lat.csv")
    assert len(out) == len(rows)
    sizes = MessageSizes()
    for r in out:
        trace = Trace.from_arrays(
            time=[0.0], op=[0 if r["op"] == "R" else 1], size=[float(r["size"])]
        )
        # whole bytes, rounded half up
        assert int(r["request_bytes"]) == math.floor(sizes.request_bytes(trace)[0] + 0.5)
        assert int(r["response_bytes"]) == math.floor(sizes.response_bytes(trace)[0] + 0.5)
        lat, lag = float(r["latency_s"]), float(r["issue_lag_s"])
        assert 0 <= lag < lat < 5.0
    # the server received every request whole and sent the responses the headers asked for
    log = _rows(tmp_path / "server.csv")
    assert sorted(int(x["request_bytes"]) for x in log) == sorted(
        int(r["request_bytes"]) for r in out
    )
    assert sum(int(x["response_bytes"]) for x in log) == sum(int(r["response_bytes"]) for r in out)
    assert len({(x["port"], x["connection"]) for x in log}) == 4  # A's one and B's three
    # open loop: a request's latency runs from its trace timestamp, and requests go out on
    # time (on this loaded 2-core machine: the median issue lag under 5 ms)
    times = [float(r["time_s"]) for r in out if r["tenant"] == "A"]
    assert times == sorted(times) and times[-1] == pytest.approx(0.004 * 299)
    assert np.median([float(r["issue_lag_s"]) for r in out]) < 5e-3


def test_requests_go_out_open_loop_while_a_response_is_held(tmp_path: Path) -> None:
    """A server that reads the requests but answers none: the client still sends every request at
    its time (open loop), reports them unanswered, and stops by itself at the deadline."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    got: list[int] = []

    def swallow() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            try:
                while chunk := conn.recv(65536):
                    got.append(len(chunk))
            except OSError:
                pass

    t = threading.Thread(target=swallow, daemon=True)
    t.start()
    _requests(tmp_path / "req.csv", [("A", 0.05 * i, "W", 10_000) for i in range(20)])
    start = time.monotonic()
    p = _client(
        "--requests",
        str(tmp_path / "req.csv"),
        "--tenant",
        f"A=127.0.0.1:{port}",
        "--out",
        str(tmp_path / "lat.csv"),
        "--drain",
        "1",
    )
    elapsed = time.monotonic() - start
    t.join(timeout=10)
    listener.close()
    assert p.returncode == 1 and "A: 0 of 20 requests answered" in p.stderr
    assert elapsed < 0.95 + 1 + 0.5 + 3  # the trace, the drain, the start delay, slack
    assert (
        sum(got) == 20 * 11_200
    )  # 200 + 1.1 · 10 kB: every request sent although none was answered
    out = _rows(tmp_path / "lat.csv")
    assert all(r["latency_s"] == "" for r in out)
    assert max(float(r["issue_lag_s"]) for r in out) < 0.2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tenant,time,op,size\n", "req.csv:1: expected the header"),
        ("tenant,time_s,op,size\nA,0,R,10\nZ,1,R,10\n", 'req.csv:3: tenant "Z" has no --tenant'),
        ("tenant,time_s,op,size\nA,NaN,R,10\n", "req.csv:2: time_s"),
        ("tenant,time_s,op,size\nA,0,R,-5\n", "req.csv:2: size"),
        ("tenant,time_s,op,size\nA,0,R\n", "req.csv:2: expected 4 fields"),
    ],
)
def test_bad_input_is_refused_with_its_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "req.csv").write_text(text)
    p = _client(
        "--requests",
        str(tmp_path / "req.csv"),
        "--tenant",
        "A=127.0.0.1:9",
        "--out",
        str(tmp_path / "lat.csv"),
    )
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (tmp_path / "lat.csv").exists()


def test_bad_options_and_a_garbage_request(tmp_path: Path) -> None:
    for args in (
        ["client"],
        ["client", "--requests", "x", "--out", "y", "--tenant", "A=nowhere"],
        ["server", "--listen", "127.0.0.1:0"],
        ["server", "--listen", "127.0.0.1:0", "--duration", "inf"],
        ["bogus"],
    ):
        p = subprocess.run([str(BINARY), *args], capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and p.stderr.startswith("tailbound-replay: "), (args, p.stderr)
    server, bound = replay.serve([0], 10, address="127.0.0.1")
    try:
        host, port = bound[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 40)
            assert s.recv(100) == b""  # closed, not answered
        _requests(tmp_path / "req.csv", [("A", 0.0, "R", 100)])
        p = _client(
            "--requests",
            str(tmp_path / "req.csv"),
            "--tenant",
            f"A={bound[0]}",
            "--out",
            str(tmp_path / "lat.csv"),
        )
        assert p.returncode == 0, p.stderr  # the server still answers others
    finally:
        server.terminate()
        server.communicate(timeout=10)


def _plan(slo_s: float) -> Plan:
    def tenant(name: str, level: int) -> TenantPlan:
        return TenantPlan(
            name=name,
            slo=Slo(slo_s, 0.99),
            server="s",
            device=None,
            client_host="c",
            priority=dict.fromkeys(NETWORK_PATH, level),
            limits={s: StageLimit(0.5, 0.01, 12_500_000.0) for s in NETWORK_PATH},
            bound=Bound(slo_s, "test", 0.99),
        )

    return Plan(
        policy="test",
        servers_used=1,
        tenants=[tenant("A", 0), tenant("B", 1)],
        disciplines={s: Discipline("priority", "shaping") for s in NETWORK_PATH},
    )


def test_live_replay_is_checked_like_verify(tmp_path: Path) -> None:
    server, bound = replay.serve([0, 0], 30, address="127.0.0.1")
    try:
        traces = {
            "A": Trace.from_arrays(time=np.arange(200) * 0.005, op=[0] * 200, size=[4096] * 200),
            "B": Trace.from_arrays(time=np.arange(50) * 0.02, op=[1] * 50, size=[65536] * 50),
        }
        args = [f"{n}={b},tos=0" for n, b in zip(traces, bound, strict=True)]
        live = replay.replay(_plan(1.0), traces, args, drain_s=3)
        strict = replay.replay(_plan(1e-7), traces, args, drain_s=3)
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert live.lost == 0 and live.all_held
    v = live.verification
    assert [c.name for c in v.checks] == ["A", "B"]
    assert [c.requests for c in v.checks] == [200, 50]
    m = live.measured["A"]
    assert v.checks[0].max_s == pytest.approx(float(m.latency.max()))
    assert v.checks[0].achieved_s == pytest.approx(
        float(np.quantile(m.latency, 0.99, method="inverted_cdf"))
    )
    assert "| A | s |" in v.table()
    assert not strict.all_held and strict.verification.violations == ["A", "B"]


def test_the_cli_verb_serves_replays_and_prints_the_table(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.json"
    _plan(1.0).save(plan_path)
    with socket.socket() as s1, socket.socket() as s2:  # two free ports
        s1.bind(("127.0.0.1", 0))
        s2.bind(("127.0.0.1", 0))
        ports = {"A": s1.getsockname()[1], "B": s2.getsockname()[1]}
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"c": "127.0.0.1", "s": "127.0.0.1"}, "ports": ports}))
    for name, n in (("A", 100), ("B", 30)):
        (tmp_path / f"{name}.txt").write_text(  # 4 KiB reads every 10 ms (native format, ns)
            "".join(f"{10_000_000 * (i + 1)},0x1000,DiskRead\n" for i in range(n))
        )
    tenants = tmp_path / "tenants.json"
    tenants.write_text(
        json.dumps(
            {
                "link_bandwidth_bytes_per_s": 12_500_000,
                "tenants": [
                    {
                        "name": n,
                        "slo_s": 1.0,
                        "percentile": 0.99,
                        "trace": str(tmp_path / f"{n}.txt"),
                        "client_host": "c",
                        "server_host": "s",
                    }
                    for n in ("A", "B")
                ],
            }
        )
    )
    tb = [sys.executable, "-m", "tailbound.cli.main", "enforce", "replay", "--plan", str(plan_path)]
    serve = subprocess.Popen(
        [*tb, "--hosts", str(hosts), "--serve", "--host", "s", "--duration", "20"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None and serve.stdout.readline().startswith("serving A, B")
        p = subprocess.run(
            [*tb, "--hosts", str(hosts), "--tenants", str(tenants), "--host", "c", "--drain", "2"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        serve.kill()
        serve.communicate(timeout=10)
    assert p.returncode == 0, p.stderr
    assert "| tenant | server | SLO | achieved | worst window | max | bound |" in p.stdout
    assert "2 tenants replayed live: 0 SLOs missed, 0 bounds exceeded, 0 requests unanswered" in (
        p.stdout
    )
    hosts.write_text(json.dumps({"hosts": {"c": "127.0.0.1", "s": "127.0.0.1"}}))
    bad = subprocess.run(
        [*tb, "--hosts", str(hosts), "--tenants", str(tenants)], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "ports.A" in bad.stderr


def test_a_stopped_cli_server_stops_its_replayer_and_frees_its_ports(tmp_path: Path) -> None:
    """``enforce replay --serve`` stopped with SIGTERM (a service manager, ``kill``) stops the
    replayer it started: the ports are free at once, not held until ``--duration``."""
    plan_path = tmp_path / "plan.json"
    _plan(1.0).save(plan_path)
    with socket.socket() as s1, socket.socket() as s2:
        s1.bind(("127.0.0.1", 0))
        s2.bind(("127.0.0.1", 0))
        ports = {"A": s1.getsockname()[1], "B": s2.getsockname()[1]}
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"c": "127.0.0.1", "s": "127.0.0.1"}, "ports": ports}))
    tb = [sys.executable, "-m", "tailbound.cli.main", "enforce", "replay", "--plan", str(plan_path)]
    serve = subprocess.Popen(
        [*tb, "--hosts", str(hosts), "--serve", "--host", "s", "--duration", "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert serve.stdout is not None and serve.stdout.readline().startswith("serving A, B")
    serve.terminate()
    serve.communicate(timeout=15)
    assert serve.returncode == 128 + 15
    for port in ports.values():
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", port))  # EADDRINUSE while a replayer still listens on it


def test_clients_started_apart_share_a_wall_clock_start(tmp_path: Path) -> None:
    """``--start-at`` and ``--origin``: two clients launched a second apart send trace time 0.3
    at the same instant (how several client hosts replay one scenario); a start that has passed
    or an origin after the first request is bad input."""
    server, bound = replay.serve([0], 30, address="127.0.0.1")
    try:
        _requests(tmp_path / "a.csv", [("A", 0.1 * i, "R", 4096) for i in range(6)])
        _requests(tmp_path / "b.csv", [("B", 0.3 + 0.05 * i, "R", 4096) for i in range(5)])
        start = time.time() + 2.5
        procs, ends = [], {}
        for name in ("a", "b"):
            cmd = [str(BINARY), "client", "--requests", str(tmp_path / f"{name}.csv")]
            cmd += ["--tenant", f"{name.upper()}={bound[0]}", "--out", str(tmp_path / name)]
            cmd += ["--start-at", repr(start), "--origin", "0", "--drain", "2"]
            procs.append((name, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
            time.sleep(1.0)
        for name, p in procs:
            _, err = p.communicate(timeout=20)
            ends[name] = time.time()
            assert p.returncode == 0, err
        # both replayed trace time 0.5 at start + 0.5 (A's last request, B's last request):
        # B, launched a second later, was not rebased to its own launch or its first request
        for name in ("a", "b"):
            rows = _rows(tmp_path / name)
            assert all(float(r["issue_lag_s"]) < 0.05 for r in rows)
        assert ends["a"] >= start + 0.5 and ends["b"] >= start + 0.5
        assert abs(ends["a"] - ends["b"]) < 0.3
        late = _client(
            "--requests", str(tmp_path / "a.csv"), "--tenant", f"A={bound[0]}",
            "--out", str(tmp_path / "late"), "--start-at", repr(time.time() - 1),
        )  # fmt: skip
        assert late.returncode == 2 and "--start-at" in late.stderr and "passed" in late.stderr
        after = _client(
            "--requests", str(tmp_path / "b.csv"), "--tenant", f"B={bound[0]}",
            "--out", str(tmp_path / "after"), "--origin", "0.4",
        )  # fmt: skip
        assert after.returncode == 2 and "--origin 0.4: after the first request" in after.stderr
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_live_replay_reports_throughput_against_the_slo() -> None:
    """A tenant's throughput SLO in requests or bytes per second, checked on the live
    measurements as verify checks it (``size`` from the client's CSV)."""
    server, bound = replay.serve([0, 0], 30, address="127.0.0.1")
    try:
        traces = {
            "A": Trace.from_arrays(time=np.arange(200) * 0.005, op=[0] * 200, size=[4096] * 200),
            "B": Trace.from_arrays(time=np.arange(50) * 0.02, op=[1] * 50, size=[65536] * 50),
        }
        args = [f"{n}={b},tos=0" for n, b in zip(traces, bound, strict=True)]
        base = _plan(1.0)
        slos = {
            "A": Slo(1.0, 0.99, throughput_iops=150.0),  # offers 200/s: met
            "B": Slo(1.0, 0.99, throughput_bytes_per_s=4e6),  # offers 50 × 64 KiB/s: missed
        }
        plan = dataclasses.replace(
            base,
            tenants=[dataclasses.replace(t, slo=slos[t.name]) for t in base.tenants],
        )
        live = replay.replay(plan, traces, args, drain_s=3)
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert live.lost == 0
    m = live.measured["B"]
    assert m.size is not None and np.all(m.size == 65536)
    a, b = (c.throughput for c in live.verification.checks)
    assert a is not None and a.unit == "iops" and a.met
    assert a.achieved == pytest.approx(200, rel=0.1)
    assert b is not None and b.unit == "bytes_per_s" and not b.met
    assert b.achieved == pytest.approx(50 * 65536, rel=0.1)
    assert live.verification.throughput_missed == ["B"] and not live.all_held
