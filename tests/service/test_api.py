"""The control plane's API against a real server on a fresh SQLite database: authentication and
scopes, bad input (4xx naming the field, nothing stored), Plans (versions, host parts with
ETags, diffs), departures, measurements against predictions, metrics, tokens from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.service.harness import Demo, Server, make_token, register

from tailbound.plan import Plan
from tailbound.service.client import ServiceError

OPEN = ("/health", "/openapi.json", "/docs", "/redoc", "/metrics")


def status(
    server: Server, method: str, path: str, token: str | None = None, **kw: object
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(kw.pop("headers", {}))  # type: ignore[call-overload]
    return httpx.request(  # type: ignore[arg-type]
        method, server.url + path, headers=headers, timeout=60, follow_redirects=False, **kw
    )


# ------------------------------------------------------------------------------ auth
def test_open_routes_need_no_token(server: Server) -> None:
    for path in OPEN:
        assert status(server, "GET", path).status_code == 200, path


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/clusters"),
        ("POST", "/clusters"),
        ("GET", "/clusters/c/plans/current"),
        ("POST", "/clusters/c/admissions"),
        ("POST", "/traces"),
        ("GET", "/tokens"),
        ("GET", "/clusters/c/hosts/h/plan"),
    ],
)
def test_anonymous_and_unknown_tokens_get_401_never_a_redirect(
    server: Server, method: str, path: str
) -> None:
    for token in (None, "tb_not-a-token", "garbage"):
        r = status(server, method, path, token)
        assert r.status_code == 401, (path, token, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["field"] == "Authorization"


def test_scopes(server: Server, sqlite_url: str, small_demo: Demo) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    reader = make_token(sqlite_url, "reader", "read")
    agent = make_token(sqlite_url, "agent0", "agent", host="server00")
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=[t["name"] for t in small_demo.tenants[:2]])
        c.admit("c1", small_demo.tenants[0]["name"])
    name = small_demo.tenants[1]["name"]
    for token in (reader, agent):
        r = status(server, "POST", "/clusters/c1/admissions", token, json={"tenant": name})
        assert r.status_code == 403, r.text
        assert (
            status(
                server, "POST", "/tokens", token, json={"name": "x", "scope": "read"}
            ).status_code
            == 403
        )
    assert status(server, "GET", "/clusters/c1/plans/current", reader).status_code == 200
    assert status(server, "GET", "/clusters/c1/plans/current", agent).status_code == 403
    # an agent reads its own host's part only
    assert status(server, "GET", "/clusters/c1/hosts/server00/plan", agent).status_code == 200
    r = status(server, "GET", "/clusters/c1/hosts/server01/plan", agent)
    assert r.status_code == 403 and r.json()["field"] == "host"
    # a revoked token is unknown
    with server.client(operator) as c:
        c.json("DELETE", "/tokens/reader")
    assert status(server, "GET", "/clusters", reader).status_code == 401


def test_tokens_from_the_cli(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'tb.db'}"
    tb = [sys.executable, "-m", "tailbound.cli.main", "token"]
    made = subprocess.run(
        [*tb, "create", "--db", db, "--name", "ops", "--scope", "operator"],
        capture_output=True,
        text=True,
        check=True,
    )
    token = made.stdout.strip()
    assert token.startswith("tb_") and len(token) > 40
    listed = json.loads(
        subprocess.run([*tb, "list", "--db", db], capture_output=True, text=True, check=True).stdout
    )
    assert listed[0]["name"] == "ops" and token not in json.dumps(listed)
    again = subprocess.run(
        [*tb, "create", "--db", db, "--name", "ops", "--scope", "read"],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "field name" in again.stderr
    server = Server(db, tmp_path / "data").start()
    try:
        assert status(server, "GET", "/clusters", token).status_code == 200
        subprocess.run(
            [*tb, "revoke", "--db", db, "--name", "ops"], check=True, capture_output=True
        )
        assert status(server, "GET", "/clusters", token).status_code == 401
    finally:
        assert server.stop() == 0


# ------------------------------------------------------------------------------ bad input
def counts(server: Server, token: str) -> tuple[int, int]:
    with server.client(token) as c:
        clusters = c.json("GET", "/clusters")
        tenants = sum(len(c.json("GET", f"/clusters/{k['name']}/tenants")) for k in clusters)
    traces = len(list((server.data / "traces").glob("*")))
    return len(clusters) + tenants, traces


def test_bad_input_names_the_field_and_stores_nothing(tmp_path: Path, small_demo: Demo) -> None:
    db = f"sqlite:///{tmp_path / 'tb.db'}"
    token = make_token(db, "op", "operator")
    server = Server(db, tmp_path / "data", max_upload_bytes=200_000).start()
    try:
        with server.client(token) as c:
            register(c, small_demo, "c1", names=[small_demo.tenants[1]["name"]])
        before = counts(server, token)
        good = small_demo.trace(small_demo.tenants[1]["name"]).read_bytes()
        wc = b"".join(b"%d,0x1000,DiskRead\n" % (i * 1_000_000) for i in range(2000))

        def new_cluster(**fields: object) -> dict[str, object]:
            """A ``POST /clusters`` request: cluster c2, policy workloadcompactor, the demo's
            cluster, ``fields`` added or replacing those."""
            body = {"name": "c2", "policy": "workloadcompactor", "cluster": small_demo.cluster}
            return {"json": body | fields}

        cases = [
            # (method, path, kwargs, status, field)
            (
                "POST",
                "/clusters",
                {"content": b"{not json", "headers": {"content-type": "application/json"}},
                422,
                "body",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(cluster={"link_bandwidth_bytes_per_s": "fast", "server_hosts": []}),
                422,
                "cluster.link_bandwidth_bytes_per_s",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(policy="no-such-policy"),
                422,
                "body.policy",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(profile=small_demo.profile, options={"mtu": 1}),
                422,
                "body.options.mtu",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(profile={"type": "storageSSD"}),
                422,
                "profile",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(extra=1),
                422,
                "body.extra",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(
                    profile=small_demo.profile,
                    addresses={"server00": "10.0.0.1", "nohost": "10.0.0.2"},
                ),
                422,
                "body.addresses.nohost",
            ),
            (
                "POST",
                "/clusters",
                new_cluster(
                    profile=small_demo.profile,
                    addresses={"server00": "10.0.0.300"},
                ),
                422,
                "body.addresses.server00",
            ),
            (
                "POST",
                "/clusters/c1/tenants",
                {"json": {"name": "t", "trace": "0" * 64, "slo_s": 0.1}},
                422,
                "body.trace",
            ),
            (
                "POST",
                "/clusters/c1/tenants",
                {"json": {"name": "t", "trace": "0" * 64, "slo_s": 0.1, "port": 70000}},
                422,
                "body.port",
            ),
            (
                "POST",
                "/clusters/c1/tenants",
                {"json": {"name": "t", "trace": "0" * 64, "slo_s": "slow"}},
                422,
                "body.slo_s",
            ),
            (
                "POST",
                "/clusters/c1/tenants",
                {"json": {"name": "t", "trace": "0" * 64, "slo_s": -1}},
                422,
                "body.slo_s",
            ),
            ("POST", "/clusters/c1/admissions", {"json": {"tenant": "nobody"}}, 404, "tenant"),
            ("POST", "/clusters/c1/admissions", {"json": {"tenant": 5}}, 422, "body.tenant"),
            ("POST", "/clusters/nowhere/admissions", {"json": {"tenant": "t"}}, 404, "cluster"),
            (
                "POST",
                "/clusters/c1/departures",
                {"json": {"tenant": small_demo.tenants[1]["name"]}},
                409,
                "tenant",
            ),
            # traces: corrupt, truncated (a line cut in its middle), oversized, empty
            ("POST", "/traces", {"content": b"\x00\x01garbage" * 100}, 422, "body"),
            ("POST", "/traces", {"content": wc[: len(wc) // 2 + 7]}, 422, "body.line"),
            (
                "POST",
                "/traces",
                {"content": b"1,0x1000,DiskRead\n2,0xZZ,DiskRead\n"},
                422,
                "body.line",
            ),
            ("POST", "/traces", {"content": good + b"x" * 200_001}, 413, "body"),
            ("POST", "/traces", {"content": b""}, 422, "body"),
        ]
        for method, path, kw, code, field in cases:
            r = status(server, method, path, token, **kw)
            assert r.status_code == code, (path, kw.get("json"), r.text)
            assert r.json()["field"].startswith(field), (path, r.json())
            assert counts(server, token) == before, (path, "something was stored")
        leftovers = list((server.data / "traces").glob(".upload-*"))
        assert not leftovers
        # a chunked upload (no Content-Length) past the limit is cut off too
        r = httpx.post(
            server.url + "/traces",
            content=iter([b"1,0x1000,DiskRead\n" * 10_000] * 3),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 413 and counts(server, token) == before
    finally:
        assert server.stop() == 0


# ------------------------------------------------------------------------------ plans
def test_plans_parts_etags_diffs_departures_and_reports(
    server: Server, sqlite_url: str, small_demo: Demo
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    agent = make_token(sqlite_url, "agent1", "agent", host="server00")
    names = [t["name"] for t in small_demo.tenants[:4]]
    every = [h["name"] for h in small_demo.cluster["server_hosts"]] + [
        h["name"] for h in small_demo.cluster["client_hosts"]
    ]
    addresses = {h: f"198.18.0.{i + 1}" for i, h in enumerate(every)}
    ports = {n: 6000 + i for i, n in enumerate(names)}
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=names, addresses=addresses, ports=ports)
        assert c.json("GET", "/clusters/c1")["addresses"] == addresses
        # a second tenant on a port taken: 409 naming the field, nothing stored
        spare = small_demo.tenants[4]
        stored = c.upload_trace(small_demo.folder / spare["trace"])
        taken = {**spare, "trace": stored["sha256"], "port": ports[names[0]]}
        with pytest.raises(ServiceError) as clash:
            c.register_tenant("c1", taken)
        assert (clash.value.status, clash.value.field) == (409, "body.port")
        results = [c.admit("c1", n) for n in names]
        admitted = [r for r in results if r["admitted"]]
        assert [r["published"] for r in admitted] == list(range(1, len(admitted) + 1))
        assert len(admitted) >= 2
        with pytest.raises(ServiceError) as twice:
            c.admit("c1", admitted[0]["tenant"])
        assert twice.value.status == 409
        version, plan = c.plan("c1")
        assert version == len(admitted) == plan["meta"]["version"]
        assert {t["name"] for t in plan["tenants"]} == {r["tenant"] for r in admitted}
        Plan.from_json(plan)  # loads as a Plan
        # the host part of server00, with its ETag: 304 while it is unchanged
    with server.client(agent) as a:
        v, etag, text = a.host_part("c1", "server00")
        assert text is not None and v == version
        part = Plan.from_json(json.loads(text))
        assert part.tenants and all("server00" in (t.server, t.client_host) for t in part.tenants)
        # what enforce net needs comes with the part: its tenants' ports, its hosts' addresses
        held = part.meta["addresses"]
        assert held["ports"] == {t.name: ports[t.name] for t in part.tenants}
        crossed = {h for t in part.tenants for h in (t.server, t.client_host) if h}
        assert held["hosts"] == {h: addresses[h] for h in crossed}
        v2, etag2, text2 = a.host_part("c1", "server00", etag)
        assert (v2, etag2, text2) == (version, etag, None)
    # a departure publishes a version without the tenant; the diff says so
    leaving = admitted[0]["tenant"]
    with server.client(operator) as c:
        gone = c.depart("c1", leaving)
        assert gone["published"] == version + 1
        diff = c.json("GET", f"/clusters/c1/plans/{version + 1}/diff")
        assert diff["removed"] == [leaving] and diff["added"] == []
        first = c.json("GET", "/clusters/c1/plans/1/diff")
        assert first["added"] == [admitted[0]["tenant"]]
        old_version, old = c.plan("c1", 1)
        assert old_version == 1 and [t["name"] for t in old["tenants"]] == [admitted[0]["tenant"]]
        listing = c.json("GET", "/clusters/c1/plans")
        assert [p["version"] for p in listing] == list(range(1, version + 2))
        decisions = c.json("GET", "/clusters/c1/decisions")
        assert len(decisions) == len(names) + 1
    # measurements: an agent posts for its host; the report compares with the prediction
    with server.client(operator) as c:
        _, plan = c.plan("c1")
    mine = [t for t in plan["tenants"] if t["server"] == "server00"]
    assert mine, "no tenant on server00"
    t0 = mine[0]
    body = {
        "host": "server00",
        "plan_version": version + 1,
        "window_s": 60,
        "tenants": [
            {
                "tenant": t0["name"],
                "count": 1000,
                "percentiles": {"0.5": 0.001, "0.999": t0["latency_bound_s"] * 0.95},
                "max_s": 0.2,
                "beyond_buckets": 3,
            }
        ],
    }
    assert status(server, "POST", "/clusters/c1/measurements", agent, json=body).status_code == 201
    other = {**body, "host": "server01"}
    assert status(server, "POST", "/clusters/c1/measurements", agent, json=other).status_code == 403
    bad = {**body, "tenants": [{**body["tenants"][0], "percentiles": {"1.5": 0.1}}]}
    r = status(server, "POST", "/clusters/c1/measurements", agent, json=bad)
    assert r.status_code == 422 and r.json()["field"] == "body.tenants[0].percentiles"
    with server.client(operator) as c:
        report = c.json("GET", "/clusters/c1/report")
    row = next(r for r in report["tenants"] if r["tenant"] == t0["name"])
    assert row["predicted_s"] == t0["latency_bound_s"]
    assert row["flags"] == ["approaching_bound", "beyond_characterisation"]
    assert [a["host"] for a in report["agents"]] == ["server00"]
    metrics = status(server, "GET", "/metrics").text
    assert f'tailbound_plan_version{{cluster="c1"}} {float(version + 1)}' in metrics
    assert (
        'tailbound_decisions_total{cluster="c1",event="depart",outcome="departed"} 1.0' in metrics
    )
    assert 'tailbound_agent_last_contact_seconds{host="server00"}' in metrics
    assert "tailbound_decision_seconds_bucket" in metrics


def test_snc_meister_cluster(server: Server, sqlite_url: str, small_demo: Demo) -> None:
    """An admission-policy cluster: SNC-Meister (the thesis' rule, network only: fast) decides
    with admission.decide; its Plans carry SNC bounds at the SLO percentile."""
    token = make_token(sqlite_url, "op", "operator")
    network = [{k: v for k, v in t.items() if k != "device"} for t in small_demo.tenants[:3]]
    d = Demo(small_demo.folder, network, small_demo.cluster, small_demo.profile)
    rule = {"alone_floor": False, "split_levels": False, "add_model_error": False, "police": False}
    with server.client(token) as c:
        register(c, d, "snc", policy="snc-meister", options={"rule": rule})
        results = [c.admit("snc", t["name"]) for t in network]
        assert any(r["admitted"] for r in results)
        for r in results:
            assert r["reasons"]["policy"] == "snc-meister" and r["reasons"]["bound_s"] > 0
        _, plan = c.plan("snc")
        assert plan["policy"] == "snc-meister"
        assert all(t["bound"]["analysis"] == "snc-meister" for t in plan["tenants"])
        # an SNC cluster's tenant needs its hosts
        entry = {
            **network[0],
            "name": "nohost",
            "trace": c.upload_trace(d.trace(network[0]["name"]))["sha256"],
        }
        del entry["client_host"], entry["client_vm"]
        with pytest.raises(ServiceError) as e:
            c.register_tenant("snc", entry)
        assert e.value.status == 422 and e.value.field == "body.client_host"


def test_long_poll_returns_when_the_part_changes(
    server: Server, sqlite_url: str, small_demo: Demo
) -> None:
    """An agent waiting with the current ETag gets 304 only after its wait, and the new part as
    soon as a decision changes it."""
    import threading
    import time

    operator = make_token(sqlite_url, "op", "operator")
    agent = make_token(sqlite_url, "a", "agent", host="server00")
    names = [t["name"] for t in small_demo.tenants[:2]]
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=names)
        assert c.admit("c1", names[0])["admitted"]
    with server.client(agent) as a:
        version, etag, _ = a.host_part("c1", "server00")
        start = time.monotonic()
        assert a.host_part("c1", "server00", etag, wait_s=1.0)[2] is None
        assert time.monotonic() - start >= 1.0

        def admit() -> None:
            with server.client(operator) as c:
                c.admit("c1", names[1])

        timer = threading.Timer(1.0, admit)
        start = time.monotonic()
        timer.start()
        try:
            got = a.host_part("c1", "server00", etag, wait_s=20.0)
        finally:
            timer.join()
        assert time.monotonic() - start < 15.0
        assert got[0] == version + 1 and got[1] != etag and got[2] is not None


def test_every_plan_version_reloads_as_served(
    server: Server, sqlite_url: str, small_demo: Demo
) -> None:
    """Admissions and departures past a full list (plan_store.SNAPSHOT_EVERY): every
    version reloads, through the API and from the database, byte for byte the text the API
    served when it was current, with the same ETag."""
    from tailbound.service import plan_store
    from tailbound.service.db import ClusterRow, make_engine, sessions

    operator = make_token(sqlite_url, "op", "operator")
    served: dict[int, tuple[str, str]] = {}
    with server.client(operator) as c:
        names = register(c, small_demo, "r", names=[t["name"] for t in small_demo.tenants[:3]])
        admitted: list[str] = []
        step = 0
        while len(served) < plan_store.SNAPSHOT_EVERY + 3:
            name = names[step % len(names)]
            step += 1
            answer = c.depart("r", name) if name in admitted else c.admit("r", name)
            if answer["published"] is None:
                continue
            (admitted.remove if name in admitted else admitted.append)(name)
            r = status(server, "GET", "/clusters/r/plans/current", operator)
            served[int(r.headers["X-Plan-Version"])] = (r.text, r.headers["ETag"])
    assert sorted(served) == list(range(1, len(served) + 1))
    for version, (text, etag) in served.items():
        r = status(server, "GET", f"/clusters/r/plans/{version}", operator)
        assert (r.text, r.headers["ETag"]) == (text, etag), version
        assert etag == f'"{plan_store.entry_hash(text)}"'
    engine = make_engine(sqlite_url)
    try:
        with sessions(engine)() as s:
            cluster = s.query(ClusterRow).filter_by(name="r").one()
            stored = plan_store.version_texts(s, cluster.id, 1, len(served))
            assert stored == {v: t for v, (t, _) in served.items()}
            assert plan_store.version_text(s, cluster.id, 66) == served[66][0]
    finally:
        engine.dispose()
