"""``tailbound enforce replay`` on an Aequitas plan (``enforce/aequitas_replay.py``): the RPCs
are ``verify``'s, the client's configuration is the plan's, the hosts file's fields are named
when missing, and a loopback run (no namespaces, no root) writes ``verify``'s Aequitas checks;
the run on a shaped link is ``test_aequitas_replay_live.py``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tailbound.cli.main import main
from tailbound.enforce import aequitas_replay as live
from tailbound.enforce import replay
from tailbound.enforce.net import Addresses
from tailbound.errors import ConfigError
from tailbound.plan import Plan
from tailbound.sim.aequitas_plan import tenant_rpcs
from tailbound.traces.tabular import read_parquet, write_parquet
from tailbound.traces.trace import Op, Trace
from tailbound.verify_aequitas import COLUMNS

NETWORK = {
    "hosts": 3,
    "link_rate_bps": 50e6,
    "classes": [
        {"name": "h", "weight": 4, "slo_s": 0.02, "slo_unit": "rpc", "dscp": 46},
        {"name": "l", "weight": 1, "dscp": 0},
    ],
    "controller": {"alpha": 0.01, "beta": 0.01, "floor": 0.1, "increment_window_s": [0.5]},
    "seed": 5,
}


def _plan(folder: Path, slo_s: float = 0.02, seconds: float = 1.0) -> Path:
    """A plan of one all-to-all tenant of 4 KiB RPCs at 200/s, 60 % asking ``h``."""
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.exponential(1 / 200, int(300 * seconds)))
    t = t[t < seconds]
    op = np.full(len(t), Op.WRITE, dtype=np.uint8)
    write_parquet(Trace(time=t, op=op, size=np.full(len(t), 4096)), folder / "rpcs.parquet")
    network = json.loads(json.dumps(NETWORK))
    network["classes"][0]["slo_s"] = slo_s
    mix = {"class_mix": {"h": 0.6, "l": 0.4}}
    doc = {"rpc_network": network, "tenants": [{"name": "a", "trace": "rpcs.parquet", "rpc": mix}]}
    (folder / "tenants.json").write_text(json.dumps(doc))
    out = folder / "plan.json"
    cmd = ["admit", "--tenants", str(folder / "tenants.json"), "--policy", "aequitas"]
    assert main([*cmd, "--out", str(out), "--quiet"]) == 0
    return out


def test_the_rpcs_are_verifys_and_a_source_sends_its_own(tmp_path: Path) -> None:
    plan = Plan.load(_plan(tmp_path))
    assert plan.aequitas is not None
    trace = read_parquet(tmp_path / "rpcs.parquet")
    rpcs, mine = live.live_rpcs(plan, {"a": trace})
    same = tenant_rpcs(plan.aequitas.network, dict(plan.aequitas.tenants), {"a": trace})
    assert mine.all()
    for field in ("time_s", "src", "dst", "size_bytes", "cls"):
        assert np.array_equal(getattr(rpcs.rpcs, field), getattr(same.rpcs, field)), field
    _, of1 = live.live_rpcs(plan, {"a": trace}, source=1)
    assert np.array_equal(of1, rpcs.rpcs.src == 1) and 0 < of1.sum() < len(of1)
    with pytest.raises(ConfigError) as e:
        live.live_rpcs(plan, {"a": trace}, source=3)
    assert e.value.field == "--host"


def test_the_client_takes_the_plans_classes_and_controller(tmp_path: Path) -> None:
    plan = Plan.load(_plan(tmp_path))
    c = live.client_of(plan, {"1": "10.0.0.1:7"})
    assert c["classes"] == [{"name": "h", "dscp": 46, "slo_s": 0.02}, {"name": "l", "dscp": 0}]
    assert c["destinations"] == [{"name": "1", "addr": "10.0.0.1:7"}]
    assert plan.aequitas is not None
    expected = dict(plan.aequitas.admission_config())
    assert expected.pop("latency_target_s") == [0.02]
    assert c["admission"] == expected and expected["increment_window_s"] == [0.5]
    assert c["seed"] == 5 and c["mss_bytes"] == live.MSS_BYTES


def test_the_hosts_file_names_a_missing_host_or_port() -> None:
    a = Addresses({"1": "10.0.0.1", "2": "10.0.0.2"}, {"1": 7000}, "hosts.json")
    assert live.destinations([1, 1], a) == {"1": "10.0.0.1:7000"}
    with pytest.raises(ConfigError) as e:
        live.destinations([1, 2], a)
    assert e.value.field == "ports.2"
    with pytest.raises(ConfigError) as e:
        live.destinations([0], a)
    assert e.value.field == "hosts.0"


def _serve_loopback(tmp_path: Path, hosts: int) -> tuple[object, Path]:
    server, bound = replay.serve([0], 30, address="127.0.0.1")
    port = int(bound[0].rsplit(":", 1)[1])
    doc = {"hosts": {str(h): "127.0.0.1" for h in range(hosts)}}
    doc["ports"] = {str(h): port for h in range(hosts)}
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps(doc))
    return server, path


@pytest.mark.parametrize(("slo_s", "status"), [(0.5, 0), (1e-6, 1)])
def test_a_loopback_replay_writes_verifys_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slo_s: float, status: int
) -> None:
    """Over loopback a 0.5 s SLO holds; a 1 µs one is missed by every RPC, so the controller
    downgrades and the class misses (exit status 1)."""
    plan = _plan(tmp_path, slo_s=slo_s)
    server, hosts = _serve_loopback(tmp_path, 3)
    out = tmp_path / "live"
    cmd = ["enforce", "replay", "--plan", str(plan), "--hosts", str(hosts), "--drain", "1"]
    try:
        assert main([*cmd, "--out", str(out)]) == status
    finally:
        server.terminate()  # type: ignore[attr-defined]
        server.communicate(timeout=10)  # type: ignore[attr-defined]
    printed = capsys.readouterr().out
    assert "| all | h |" in printed and "0 unanswered" in printed
    with open(out / "verify.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    assert [(r["tenant"], r["class"]) for r in rows] == [("all", "h"), ("a", "h")]
    with open(out / "rpcs.csv", newline="") as f:
        sent = list(csv.DictReader(f))
    assert tuple(sent[0]) == live.RPC_COLUMNS
    asked = [r for r in sent if r["class"] == "h"]
    ran = [r for r in asked if r["class_run"] == "h"]
    assert int(rows[0]["requests"]) == len(asked) and int(rows[0]["admitted"]) == len(ran)
    assert all(r["latency_s"] for r in sent)
    assert (rows[0]["met"] == "True") == (status == 0)
    if status == 1:  # every admitted RPC misses: p_admit falls, RPCs are downgraded
        assert len(ran) < 0.8 * len(asked)
        assert all(r["class_run"] in ("h", "l") for r in asked)
        assert min(float(r["p_admit"]) for r in asked) < 0.5


def test_replay_options_for_another_plan_are_refused(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"1": "127.0.0.1"}, "ports": {"1": 9}}))
    base = ["enforce", "replay", "--plan", str(plan), "--hosts", str(hosts)]
    assert main([*base, "--dscp"]) == 2
    assert main([*base, "--host", "x"]) == 2
    assert main([*base, "--serve", "--host", "7"]) == 2
    assert main([*base, "--serve", "--host", "0"]) == 2  # no port for host 0
