"""An Aequitas plan turned into the network simulator's input: RPCs per tenant (times, hosts,
classes, scaling to a load), Azure LLM sizes in bytes, and the network configuration."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from tests.policies.aequitas_case import NETWORK, write_case

from tailbound.model import load_tenants
from tailbound.policies.aequitas import AequitasPolicy
from tailbound.rpc_network import RpcTraffic, network_from_json
from tailbound.sim.aequitas_plan import network_config, read_rpc_trace, tenant_rpcs
from tailbound.traces.trace import Trace

NET = network_from_json(copy.deepcopy(NETWORK) | {"hosts": 4}, None, "rpc_network")


def _trace(n: int = 4000, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    time = np.cumsum(rng.exponential(1e-3, n))
    return Trace(time=time, op=np.zeros(n, np.uint8), size=rng.integers(1000, 50000, n))


def test_rpcs_follow_the_pattern_the_mix_and_the_load() -> None:
    a = RpcTraffic({"QoS_h": 0.25, "QoS_l": 0.75}, load=0.5)
    b = RpcTraffic({"QoS_h": 1.0}, pattern="incast", destination=3)
    ta, tb = _trace(seed=1), _trace(seed=2)
    out = tenant_rpcs(NET, {"a": a, "b": b}, {"a": ta, "b": tb})
    r = out.rpcs
    assert out.names == ("a", "b") and len(r) == len(ta) + len(tb)
    assert np.all(np.diff(r.time_s) >= 0) and np.all(r.src != r.dst)
    is_a, is_b = out.tenant == 0, out.tenant == 1
    assert set(r.dst[is_b].tolist()) == {3} and set(r.src[is_b].tolist()) == {0, 1, 2}
    assert set(r.dst[is_a].tolist()) == {0, 1, 2, 3}
    assert np.mean(r.cls[is_a] == 0) == pytest.approx(0.25, abs=0.03)
    assert np.all(r.cls[is_b] == 0)
    # a: scaled so that its mean load per destination over its span is 0.5 of a link
    span = r.time_s[is_a].max() - r.time_s[is_a].min()
    load = 8 * r.size_bytes[is_a].sum() / (100e9 * span * 4)
    assert load == pytest.approx(0.5, rel=1e-9)
    # b: its own times (from 0)
    assert r.time_s[is_b].max() == pytest.approx(tb.time[-1] - tb.time[0])
    # sizes kept per tenant
    assert sorted(r.size_bytes[is_a].tolist()) == sorted(ta.size.tolist())


def test_rpcs_are_seeded_by_the_network() -> None:
    a = RpcTraffic({"QoS_h": 0.5, "QoS_l": 0.5})
    one = tenant_rpcs(NET, {"a": a}, {"a": _trace()}).rpcs
    two = tenant_rpcs(NET, {"a": a}, {"a": _trace()}).rpcs
    other = tenant_rpcs(
        network_from_json(copy.deepcopy(NETWORK) | {"hosts": 4, "seed": 9}, None, "n"),
        {"a": a},
        {"a": _trace()},
    ).rpcs
    for col in ("src", "dst", "cls"):
        assert np.array_equal(getattr(one, col), getattr(two, col))
    assert not np.array_equal(one.cls, other.cls)


def test_an_azure_llm_trace_is_read_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "llm.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,4808,10\n"
        "2023-11-16 18:17:04.0319600,3180,8\n"
    )
    t = read_rpc_trace(path, None, RpcTraffic({"QoS_h": 1.0}))
    assert t.size.tolist() == [4808 * 4, 3180 * 4]
    t = read_rpc_trace(
        path, "azure-llm", RpcTraffic({"QoS_h": 1.0}, bytes_per_token=2, tokens="total")
    )
    assert t.size.tolist() == [4818 * 2, 3188 * 2]


def test_the_network_configuration_is_the_plans(tmp_path: Path) -> None:
    plan = AequitasPolicy(load_tenants(write_case(tmp_path))).plan()
    assert plan.aequitas is not None
    c = network_config(plan.aequitas)
    assert (c.n_hosts, c.weights, c.link_rate_bps, c.buffer_bytes, c.seed) == (
        3,
        (4.0, 1.0),
        100e9,
        1 << 20,
        1,
    )
    assert c.admission is not None
    assert c.admission.latency_target_s == (25e-6,) and c.admission.per_mtu is False
    assert c.admission.rules == "artifact" and c.admission.increment_window_s == (0.002,)
