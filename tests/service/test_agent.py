"""``tailbound agent --once`` against a real server: it fetches its host's part, applies it with
``enforce net`` (``--dry-run`` here: the live namespaces test is still to come), records it, gets
304 while it is unchanged, follows a departure to the next version, refuses a part whose bytes do
not match their ETag (applying nothing) and is refused another host's part."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, Server, make_token, register

from tailbound.plan import Plan
from tailbound.service.agent import Agent
from tailbound.service.client import ServiceError
from tailbound.stages import Stage


def hosts_file(d: Demo, path: Path) -> Path:
    """Addresses for every host of the demo cluster and a port per tenant."""
    names = [s["name"] for s in d.cluster["server_hosts"]] + [
        c["name"] for c in d.cluster["client_hosts"]
    ]
    doc = {
        "hosts": {n: f"198.18.0.{i + 1}" for i, n in enumerate(names)},
        "ports": {t["name"]: 5000 + i for i, t in enumerate(d.tenants)},
    }
    path.write_text(json.dumps(doc))
    return path


def agent(
    server: Server, token: str, state: Path, hosts: Path, host: str = "server00"
) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tailbound.cli.main",
            "agent",
            "--once",
            "--server",
            server.url,
            "--token",
            token,
            "--cluster",
            "c1",
            "--host",
            host,
            "--state",
            str(state),
            "--net-device",
            "eth0",
            "--hosts",
            str(hosts),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def test_agent_once(server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    token = make_token(sqlite_url, "a0", "agent", host="server00")
    names = [t["name"] for t in small_demo.tenants[:3]]
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=names)
        admitted = [n for n in names if c.admit("c1", n)["admitted"]]
    assert len(admitted) >= 2
    hosts, state = hosts_file(small_demo, tmp_path / "hosts.json"), tmp_path / "state"
    code, report, err = agent(server, token, state, hosts)
    assert code == 0, err
    assert report["changed"] and report["ok"] and report["version"] == len(admitted)
    assert report["steps"][0]["command"].startswith("enforce net --device eth0")
    # the dry run printed the objects (its last 2,000 characters: the nftables rules, meter too)
    assert "nft tailbound_eth0:" in report["steps"][0]["output"]
    assert "tailbound meter" in report["steps"][0]["output"]
    applied = Plan.load(state / "plan.json")
    assert {t.name for t in applied.tenants} == set(report["tenants"]) and report["tenants"]
    # unchanged: 304, nothing applied
    code, again, _ = agent(server, token, state, hosts)
    assert (code, again) == (0, {"version": len(admitted), "changed": False, "ok": True})
    # a departure: the next version is fetched and applied
    with server.client(operator) as c:
        c.depart("c1", report["tenants"][0])
    code, after, err = agent(server, token, state, hosts)
    assert code == 0, err
    assert after["changed"] and after["version"] == len(admitted) + 1
    assert report["tenants"][0] not in after["tenants"]
    # another host's part is refused
    code, _, err = agent(server, token, tmp_path / "other", hosts, host="server01")
    assert code == 2 and "HTTP 403" in err


class Truncating:
    """A client whose part arrives cut short (the ETag of the whole, half the text)."""

    def host_part(
        self, cluster: str, host: str, etag: str | None, wait_s: float
    ) -> tuple[int, str, str]:
        text = json.dumps({"tenants": [{"name": "A"}]})
        import hashlib

        return 7, f'"{hashlib.sha256(text.encode()).hexdigest()}"', text[: len(text) // 2]


def test_agent_never_applies_a_half_fetched_part(tmp_path: Path) -> None:
    ran: list[Any] = []
    a = Agent(
        Truncating(), "c1", "server00", tmp_path, run=lambda argv: ran.append(argv) or (0, "")
    )  # type: ignore[arg-type]
    with pytest.raises(ServiceError, match="does not match its ETag"):
        a.step()
    assert ran == [] and not (tmp_path / "plan.json").exists() and a.applied() == {}


def gate_metrics(export: str, buckets: dict[float, int]) -> str:
    """The gateway's latency histogram text for one export (cumulative counts by bound)."""
    lines = ["# TYPE tailbound_gate_latency_seconds histogram"]
    total = 0
    for le in sorted(buckets):
        total += buckets[le]
        bound = "+Inf" if le == float("inf") else repr(le)
        lines.append(
            f'tailbound_gate_latency_seconds_bucket{{export="{export}",le="{bound}"}} {total}'
        )
    lines.append(f'tailbound_gate_latency_seconds_count{{export="{export}"}} {total}')
    return "\n".join(lines) + "\n"


def test_agent_posts_the_gateways_latencies(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    """The agent reads the gateway's histograms, posts each window's count and percentiles (the
    bucket bounds) for its part's tenants, and the report compares them with the bounds."""
    operator = make_token(sqlite_url, "op", "operator")
    token = make_token(sqlite_url, "a0", "agent", host="server00")
    name = small_demo.tenants[0]["name"]
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=[name])
        assert c.admit("c1", name)["admitted"]
    with server.client(token) as client:
        a = Agent(client, "c1", "server00", tmp_path, run=lambda argv: (0, ""))
        assert a.step()["tenants"] == [name]
        first = gate_metrics(name, {0.001: 900, 0.005: 99, 0.05: 1, float("inf"): 0})
        assert a.measure(first, 60.0) == {"stored": 1}
        # the next window: 1,000 more requests, slower; only the difference is posted
        second = gate_metrics(name, {0.001: 900, 0.005: 1000, 0.05: 100, float("inf"): 0})
        assert a.measure(second, 60.0) == {"stored": 1}
        assert a.measure(second, 60.0) is None  # nothing new
    with server.client(operator) as c:
        row = c.json("GET", "/clusters/c1/report")["tenants"][0]
    assert row["count"] == 1000 and row["window_s"] == 60.0
    assert (row["measured_percentile"], row["measured_s"]) == (0.999, 0.05)
    assert row["predicted_s"] is not None


def test_agent_posts_the_replayers_latencies_and_requests_beyond_the_buckets(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    """From the replayer's client CSV the agent posts each tenant's exact latency percentiles
    and counts the requests sent beyond the Plan's ``net_in`` token bucket; the report flags a
    tenant that left its characterisation; the same file is posted once."""
    operator = make_token(sqlite_url, "op", "operator")
    token = make_token(sqlite_url, "a0", "agent", host="server00")
    name = small_demo.tenants[0]["name"]
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=[name])
        assert c.admit("c1", name)["admitted"]
    with server.client(token) as client:
        a = Agent(client, "c1", "server00", tmp_path / "state", run=lambda argv: (0, ""))
        assert a.step()["tenants"] == [name]
        planned = Plan.from_json(json.loads(a.plan_path.read_text())).tenant(name)
        limit = planned.limits[Stage.NET_IN]
        assert limit.capacity_per_s is not None
        burst, rate = limit.bucket_s * limit.capacity_per_s, limit.rate * limit.capacity_per_s
        # 100 requests of a tenth of the bucket 1 s apart (within it), then 40 at one instant
        # at 100 s: the bucket holds 10 of them, the other 30 are beyond it
        size = int(burst // 10)
        assert size < rate  # a second refills what one request takes
        times = [float(i) for i in range(100)] + [100.0] * 40
        lines = ["tenant,time_s,issue_lag_s,latency_s,request_bytes,response_bytes,size"]
        lines += [
            f"{name},{t},0,{0.001 * (1 + i % 10)},{size},100,4096" for i, t in enumerate(times)
        ]
        csv = tmp_path / "latency.csv"
        csv.write_text("\n".join(lines) + "\n")
        assert a.measure_replay(csv) == {"stored": 1}
        assert a.measure_replay(csv) is None  # the same file: nothing new
    with server.client(operator) as c:
        row = c.json("GET", "/clusters/c1/report")["tenants"][0]
    assert row["count"] == 140 and row["beyond_buckets"] == 30
    assert "beyond_characterisation" in row["flags"]
    assert row["measured_s"] == pytest.approx(0.01)


def test_agent_follows_a_running_replayer_window_by_window(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    """A real ``tailbound-replay`` client replays a tenant's trace three times as fast with
    ``--progress``; the agent reads the file while the client runs and posts a window each
    time: several windows are posted before the client ends, and together they hold every
    answered request of the client's final CSV, with the requests beyond the ``net_in`` bucket
    the whole CSV gives (one connection: responses in issue order)."""
    from tailbound.enforce import replay
    from tailbound.service.agent import replay_summaries
    from tailbound.traces import read_trace

    operator = make_token(sqlite_url, "op", "operator")
    token = make_token(sqlite_url, "a0", "agent", host="server00")
    name = small_demo.tenants[0]["name"]
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=[name])
        assert c.admit("c1", name)["admitted"]
    trace = read_trace(small_demo.trace(name))
    requests, out, progress = tmp_path / "req.csv", tmp_path / "out.csv", tmp_path / "p.csv"
    replay.write_requests({name: trace}, requests)
    # its 10 s sent in 10/3 s: three times the load it was admitted with, beyond its bucket
    head, *rows = requests.read_text().splitlines()
    fast = [f"{r[0]},{float(r[1]) / 3!r},{r[2]},{r[3]}" for r in (x.split(",") for x in rows)]
    requests.write_text("\n".join([head, *fast]) + "\n")
    srv, bound = replay.serve([0], 30.0, address="127.0.0.1")
    client = subprocess.Popen(
        [
            *(str(replay.binary()), "client", "--requests", str(requests), "--out", str(out)),
            *("--progress", str(progress), "--tenant", f"{name}={bound[0]}"),
            *("--drain", "1", "--start-delay", "0.2"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    windows: list[tuple[bool, dict[str, Any]]] = []  # (client still running, body posted)
    try:
        with server.client(token) as api:
            recording = Recording(api)
            a = Agent(recording, "c1", "server00", tmp_path / "state", run=lambda argv: (0, ""))  # type: ignore[arg-type]
            assert a.step()["tenants"] == [name]
            while True:
                running = client.poll() is None
                if a.follow_replay(progress) is not None:
                    windows.append((running, recording.posted[-1]))
                if not running:
                    break
                time.sleep(0.5)
            assert a.follow_replay(progress) is None  # everything was read
        with server.client(operator) as c:
            latest = c.json("GET", "/clusters/c1/report")["tenants"][0]
    finally:
        client.kill()
        _, err = client.communicate()
        srv.kill()
        srv.communicate()
    assert client.returncode == 0, err
    whole = replay_summaries(out, json.loads(a.plan_path.read_text()))[0]
    rows = [body["tenants"][0] for _, body in windows]
    print(json.dumps({"windows": len(windows), "counts": [r["count"] for r in rows], **whole}))
    assert sum(1 for running, _ in windows if running) >= 3  # read while the replay ran
    assert sum(r["count"] for r in rows) == whole["count"] == len(trace)
    assert sum(r["beyond_buckets"] for r in rows) == whole["beyond_buckets"] > 0
    assert max(r["max_s"] for r in rows) == pytest.approx(whole["max_s"], abs=1e-9)
    assert all(body["window_s"] > 0 for _, body in windows)
    assert latest["count"] == rows[-1]["count"]


class Recording:
    """A client that keeps every body it posts."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.posted = inner, []

    def host_part(self, *args: Any) -> Any:
        return self.inner.host_part(*args)

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "POST":
            self.posted.append(kwargs["json"])
        return self.inner.json(method, path, **kwargs)


class _Posts:
    """A stand-in for the server's client: records the bodies posted."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def json(self, method: str, path: str, json: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(json)
        return {"stored": len(json["tenants"])}


def _meter(**tenants: tuple[int, int]) -> str:
    """``enforce net --meter``'s JSON: per tenant (packets, beyond packets) on ``net_in``."""
    return json.dumps(
        {
            f"{t} net_in": {"tenant": t, "stage": "net_in", "packets": p, "bytes": 1000 * p,
                            "beyond_packets": b, "beyond_bytes": 1000 * b}
            for t, (p, b) in tenants.items()
        }
    )  # fmt: skip


def test_agent_net_meter_windows_merge_and_reset(tmp_path: Path) -> None:
    posts = _Posts()
    agent = Agent(posts, "c1", "h", tmp_path / "state", run=lambda argv: (0, ""))  # type: ignore[arg-type]
    agent.plan_path.write_text(json.dumps({"tenants": [{"name": "A"}, {"name": "B"}]}))
    # the first reading counts whole; a tenant not of the part (X) is left out
    assert agent.measure_net(_meter(A=(100, 7), B=(50, 0), X=(9, 9))) == {"A": 7, "B": 0}
    gate_rows = [{"tenant": "A", "count": 3, "percentiles": {"0.5": 0.001}, "beyond_buckets": 2}]
    agent._with_net(gate_rows, same_bucket=False)  # another stage: added
    assert gate_rows[0]["beyond_buckets"] == 9
    agent.post_net(1.0)  # B alone: its packets, no percentiles
    assert posts.bodies[-1]["tenants"] == [
        {"tenant": "B", "count": 50, "percentiles": {}, "beyond_buckets": 0}
    ]
    # the next window is the difference; a replayer row of the same bucket takes the larger
    assert agent.measure_net(_meter(A=(160, 10), B=(50, 0))) == {"A": 3}
    replay_rows = [{"tenant": "A", "count": 4, "percentiles": {}, "beyond_buckets": 5}]
    agent._with_net(replay_rows, same_bucket=True)
    assert replay_rows[0]["beyond_buckets"] == 5
    assert agent.post_net(1.0) is None  # nothing left to post
    # a re-installed table (counts went down) counts whole
    assert agent.measure_net(_meter(A=(20, 4), B=(60, 1))) == {"A": 4, "B": 1}
    agent.post_net(1.0)
    rows = {r["tenant"]: r for r in posts.bodies[-1]["tenants"]}
    assert (rows["A"]["count"], rows["B"]["count"]) == (20, 10)
    # a failed post keeps the reading: the window is posted again
    agent.measure_net(_meter(A=(30, 6), B=(60, 1)))
    agent.client = None  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        agent.post_net(1.0)
    agent.client = posts  # type: ignore[assignment]
    assert agent.measure_net(_meter(A=(30, 6), B=(60, 1))) == {"A": 2}
