"""The ``aequitas`` policy: every RPC tenant admitted, the prediction from the closed forms, the
tenants it refuses."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
from tests.policies.aequitas_case import NETWORK, TENANT, write_case

from tailbound.dnc.wfq_delay import guaranteed_admitted_share
from tailbound.errors import ConfigError
from tailbound.model import load_tenants
from tailbound.policies.aequitas import AequitasPolicy, predict
from tailbound.policies.registry import build
from tailbound.sim.aequitas_plan import read_rpc_trace, tenant_rpcs


def test_every_tenant_is_admitted_with_its_classes(tmp_path: Path) -> None:
    tset = load_tenants(write_case(tmp_path))
    plan = build("aequitas", "admission", tset).plan(meta={"verb": "test"})
    assert plan.policy == "aequitas" and not plan.rejected
    (t,) = plan.tenants
    assert t.name == "search" and t.device is None and t.slo is not None
    assert (t.slo.latency_s, t.bound.latency_s, t.bound.analysis) == (25e-6, 25e-6, "aequitas")
    assert plan.aequitas is not None and plan.aequitas.network == tset.rpc_network
    assert plan.meta == {"verb": "test"}


def test_the_prediction_is_the_guaranteed_share_of_eq_1(tmp_path: Path) -> None:
    net = {**copy.deepcopy(NETWORK), "burst_load": 2.0}
    tset = load_tenants(write_case(tmp_path, net))
    plan = AequitasPolicy(tset).plan()
    assert plan.aequitas is not None
    p = plan.aequitas.prediction
    assert p.burst_load == 2.0
    # the trace: 32 KiB RPCs into host 2 at a mean load of 0.8 (of the issued span)
    assert p.load == pytest.approx(0.8, abs=0.03)
    x = p.offered_share["QoS_h"]
    assert x == pytest.approx(0.7, abs=0.02)  # the class mix
    g = guaranteed_admitted_share([4.0, 1.0], 2.0, p.load)[0]  # φ/(φ + 1) · μ/ρ of the link
    assert p.admitted_share["QoS_h"] == pytest.approx(g / (x * p.load), rel=1e-12)
    assert p.admitted_share["QoS_h"] == pytest.approx(0.8 / (2.0 * x), rel=1e-12)


def test_the_burst_is_measured_over_the_slo_when_not_given(tmp_path: Path) -> None:
    tset = load_tenants(write_case(tmp_path))
    assert tset.rpc_network is not None and tset.rpc_network.burst_load is None
    traffic = {t.name: t.rpc for t in tset.tenants if t.rpc is not None}
    traces = {t.name: read_rpc_trace(t.trace, None, traffic[t.name]) for t in tset.tenants}
    rpcs = tenant_rpcs(tset.rpc_network, traffic, traces)
    p = predict(tset.rpc_network, rpcs)
    r = rpcs.rpcs
    window = np.floor(r.time_s / 25e-6).astype(np.int64)  # the class SLO, whole RPC
    peak = np.bincount(window, weights=r.size_bytes).max()
    assert p.burst_load == pytest.approx(max(1.0, 8 * peak / (100e9 * 25e-6)))
    assert 1.0 < p.burst_load < 3.0  # bursts at ρ = 2, seen through 25 µs windows
    assert 0 < p.admitted_share["QoS_h"] <= 1


def test_a_share_is_capped_at_one_and_a_class_nobody_asks_for_is_admitted(
    tmp_path: Path,
) -> None:
    net = copy.deepcopy(NETWORK)
    net["classes"] = [
        {"name": "h", "weight": 8, "slo_s": 25e-6, "slo_unit": "rpc"},
        {"name": "m", "weight": 4, "slo_s": 50e-6, "slo_unit": "rpc"},
        {"name": "l", "weight": 1},
    ]
    net["controller"] = {"increment_window_s": [0.002, 0.002]}
    net["burst_load"] = 1.0
    tenant = {
        **TENANT,
        "rpc": {"class_mix": {"h": 0.1, "l": 0.9}, "pattern": "incast", "destination": 2},
    }
    plan = AequitasPolicy(load_tenants(write_case(tmp_path, net, [tenant]))).plan()
    assert plan.aequitas is not None
    p = plan.aequitas.prediction
    assert p.admitted_share == {"h": 1.0, "m": 1.0}
    assert p.offered_share["m"] == 0.0 and math.isclose(p.offered_share["h"], 0.1, abs_tol=0.02)


def test_tenants_without_rpc_classes_are_refused(tmp_path: Path) -> None:
    other = {"name": "disk", "slo_s": 0.01, "trace": "rpc.parquet"}
    with pytest.raises(ConfigError) as e:
        AequitasPolicy(load_tenants(write_case(tmp_path, tenants=[TENANT, other]))).plan()
    assert e.value.field == "tenants[1].rpc"
    path = tmp_path / "plain.json"
    path.write_text('{"tenants": [{"name": "disk", "slo_s": 0.01, "trace": "rpc.parquet"}]}')
    with pytest.raises(ConfigError) as e:
        AequitasPolicy(load_tenants(path)).plan()
    assert e.value.field == "rpc_network"


def test_the_examples_trace_is_the_documented_generation(tmp_path: Path) -> None:
    """``examples/rpc-onoff.parquet`` is ``write_trace``'s 50 ms of the Fig. 11 arrivals (the
    generation docs/aequitas.md gives), and the example plans as the docs say."""
    from tests.policies.aequitas_case import write_trace

    from tailbound.traces.readers import read_trace

    example = Path(__file__).resolve().parents[2] / "examples"
    shipped = read_trace(example / "rpc-onoff.parquet")
    made = read_trace(write_trace(tmp_path / "rpc-onoff.parquet"))
    assert np.array_equal(shipped.time, made.time) and np.array_equal(shipped.size, made.size)
    plan = AequitasPolicy(load_tenants(example / "aequitas-small.json")).plan()
    assert plan.aequitas is not None
    assert plan.aequitas.prediction.admitted_share["QoS_h"] == pytest.approx(0.604, abs=5e-4)
