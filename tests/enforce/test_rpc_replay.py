"""``tailbound-replay rpc`` driven from Python (``enforce/rpc_replay.py``): the configuration,
the per-RPC results and a short run over loopback (no namespaces, no root); the run on a shaped
link is ``test_aequitas_live.py``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tailbound.enforce import replay
from tailbound.enforce.rpc_replay import (
    RpcClass,
    Rpcs,
    client_config,
    read_results,
    run_rpcs,
)
from tailbound.errors import ConfigError

CLASSES = [RpcClass("h", 46, 0.01), RpcClass("l", 0)]


def test_config_names_the_fields_python_can_check() -> None:
    c = client_config({"s": "127.0.0.1:1"}, CLASSES, {"alpha": 0.02}, seed=3)
    assert c["classes"] == [{"name": "h", "dscp": 46, "slo_s": 0.01}, {"name": "l", "dscp": 0}]
    assert c["admission"] == {"alpha": 0.02} and c["seed"] == 3
    assert c["destinations"] == [{"name": "s", "addr": "127.0.0.1:1"}]
    for classes, admission, field in (
        ([CLASSES[0]], None, "classes"),
        ([CLASSES[0], RpcClass("l", 0, 1.0)], None, "classes[1].slo_s"),
        ([RpcClass("h", 46), CLASSES[1]], None, "classes[0].slo_s"),
        ([RpcClass("h", 46, -1.0), CLASSES[1]], None, "classes[0].slo_s"),
        (CLASSES, {"gamma": 1}, "admission.gamma"),
        (CLASSES, {"latency_target_s": [1]}, "admission.latency_target_s"),
    ):
        with pytest.raises(ConfigError) as e:
            client_config({"s": "127.0.0.1:1"}, classes, admission)
        assert e.value.field == field


def test_results_give_tails_and_admitted_shares(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    rows = [
        "seq,time_s,dst,class,class_run,downgraded,p_admit,size_bytes,size_mtus,issue_lag_s,"
        "latency_s,outcome",
        "0,0.0,s,h,h,0,1.0,8192,6,0.0001,0.004,held",
        "1,0.1,s,h,l,1,0.5,8192,6,0.0001,0.030,uncontrolled",
        "2,0.2,s,h,h,0,0.5,8192,6,0.0001,0.002,held",
        "3,0.3,s,l,l,0,,8192,6,0.0001,,",
        "4,0.4,s,h,h,0,0.5,8192,6,0.0001,0.008,held",
    ]
    out.write_text("\n".join(rows) + "\n")
    r = read_results(out)
    assert r.lost == 1 and list(r.downgraded) == [False, True, False, False, False]
    assert r.admitted_share("h") == 0.75 and r.admitted_share("l") == 1.0
    assert r.admitted_share("h", start_s=0.15) == 1.0
    assert r.tail("h", 0.5) == 0.004 and r.tail("h", 1.0) == 0.008
    assert r.tail("l", 1.0) == math.inf  # the unanswered one
    assert r.tail("h", 1.0, start_s=0.3) == 0.008
    assert math.isnan(r.admitted_share("x"))


def test_a_loopback_run_downgrades_when_the_slo_cannot_be_met() -> None:
    try:
        replay.binary()
    except replay.ReplayError as e:
        pytest.skip(str(e))
    server, bound = replay.serve([0], 30, address="127.0.0.1")
    try:
        port = bound[0].rsplit(":", 1)[1]
        n = 300
        t = np.arange(n) * 0.002
        rpcs = Rpcs(t, ["s"] * n, ["h", "l"] * (n // 2), np.full(n, 3000))
        # an SLO of 1 µs per RPC: every QoS_h RPC misses, p_admit falls by β · 3 MTUs a miss
        cfg = client_config(
            {"s": f"127.0.0.1:{port}"},
            [RpcClass("h", 46, 1e-6), RpcClass("l", 0)],
            {"per_mtu": False, "beta": 0.05, "floor": 0.2},
            seed=5,
        )
        r = run_rpcs(cfg, rpcs, drain_s=2)
        # bad input: the client refuses it naming the field (exit status 2)
        bad = {
            **cfg,
            "classes": [{"name": "h", "dscp": 64, "slo_s": 1.0}, {"name": "l", "dscp": 0}],
        }
        with pytest.raises(replay.ReplayError, match=r"classes\[0\]\.dscp"):
            run_rpcs(bad, rpcs, drain_s=1)
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert r.lost == 0 and len(r.latency_s) == n
    h = r.cls == "h"
    assert set(r.outcome[r.class_run == "h"]) == {"decreased"}
    assert set(r.outcome[r.class_run == "l"]) == {"uncontrolled"}
    assert not r.downgraded[~h].any() and r.downgraded[h].any()
    assert (r.class_run[r.downgraded] == "l").all()
    # p_admit at issue only falls, to the floor; about 1 − floor of the later QoS_h are downgraded
    p = r.p_admit[h]
    assert np.all(np.diff(p) <= 1e-12) and p[0] == 1.0 and math.isclose(p[-1], 0.2)
    assert 0.05 < r.admitted_share("h", start_s=0.2) < 0.45
    assert r.size_mtus[0] == 3.0 and (r.size_bytes == 3000).all()
