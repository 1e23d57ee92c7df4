"""The packet-level network of Aequitas through Python (``tailbound.sim.network_rpc``).

The hand cases (idle latencies, drops, go-back-N, the window) are the core's
(``crates/tailbound-core/src/netsim/``); here: the binding's columns, admission control
improving the high class's tail, determinism, and bad input refused by field.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.sim.network_rpc import (
    CongestionWindow,
    NetworkAdmission,
    NetworkConfig,
    QjumpLevels,
    simulate_rpcs,
)
from tailbound.traces.rpc_arrivals import OnOffRpcs, RpcArrivals, incast
from tailbound.traces.sizes import FixedSize

SLO_S = 25e-6  # QoS_h, whole 32 KiB RPC (the authors' `normalized_lat: 0`)


def _incast() -> RpcArrivals:
    # Two senders into one receiver in synchronised bursts at twice the line rate, load 0.8,
    # 70% of RPCs asking for QoS_h (the setup of the paper's Fig. 11), 50 ms.
    gen = OnOffRpcs(2.0, 0.8, FixedSize(32768), class_mix=(0.7, 0.3), bursts_per_on=2)
    return gen.generate(incast(3, dst=2), 0.05, seed=3)


def _config(admission: NetworkAdmission | None) -> NetworkConfig:
    return NetworkConfig(n_hosts=3, weights=(4.0, 1.0), buffer_bytes=1 << 20, admission=admission)


def test_network_rpc_admission_improves_the_high_class_tail() -> None:
    rpcs = _incast()
    plain = simulate_rpcs(rpcs, _config(None))
    adm = NetworkAdmission((SLO_S,), per_mtu=False, rules="artifact")
    admitted = simulate_rpcs(rpcs, _config(adm))
    for run in (plain, admitted):
        assert run.counters["unfinished"] == 0
    # Without admission the 70% QoS_h share overloads its 4/5 of the link in bursts and its
    # 99.9th percentile misses the SLO; with it the admitted RPCs meet it and the rest run at
    # QoS_l.
    assert plain.admitted_share(0) == 1.0
    assert plain.rnl_tail(0) > 1.05 * SLO_S
    assert admitted.rnl_tail(0) <= SLO_S
    assert admitted.rnl_tail(0) < 0.75 * plain.rnl_tail(0)
    assert 0.2 < admitted.admitted_share(0) < 0.9
    assert admitted.counters["downgrades"] == admitted.downgraded.sum() > 0
    # Downgraded RPCs ran at the lowest class; p_admit stayed within [floor, 1].
    assert np.all(admitted.class_run[admitted.downgraded] == 1)
    assert np.all((admitted.p_admit >= 0.1 - 1e-12) & (admitted.p_admit <= 1.0))


def test_network_rpc_columns_and_determinism() -> None:
    rpcs = _incast()
    adm = NetworkAdmission((SLO_S,), per_mtu=False)
    a = simulate_rpcs(rpcs, dataclasses.replace(_config(adm), seed=5))
    b = simulate_rpcs(rpcs, dataclasses.replace(_config(adm), seed=5))
    n = len(rpcs)
    for name, dtype in [
        ("class_run", np.uint8),
        ("downgraded", np.bool_),
        ("p_admit", np.float64),
        ("finish_s", np.float64),
        ("rnl_s", np.float64),
        ("size_mtus", np.uint32),
    ]:
        col = getattr(a, name)
        assert col.shape == (n,) and col.dtype == dtype, name
        np.testing.assert_array_equal(col, getattr(b, name))
    assert a.counters == b.counters
    np.testing.assert_allclose(a.rnl_s, a.finish_s - rpcs.time_s, rtol=1e-12)
    assert np.all(a.size_mtus == 7)  # 32 768 B over 5 080 B of payload a packet
    assert a.counters["acks"] >= a.counters["data_packets"] - a.counters["data_drops"]
    # Stopping early leaves RPCs unfinished (NaN), counted.
    early = simulate_rpcs(rpcs, _config(adm), until_s=0.01)
    assert 0 < early.counters["unfinished"] == np.isnan(early.rnl_s).sum()
    assert early.counters["end_s"] <= 0.01


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (NetworkConfig(n_hosts=3, weights=(4.0, -1.0)), "weights[1]"),
        (
            NetworkConfig(n_hosts=3, weights=(4.0, 1.0), cc=CongestionWindow(max_cwnd=0.5)),
            "cc.max_cwnd",
        ),
        (
            NetworkConfig(n_hosts=3, weights=(8.0, 4.0, 1.0), admission=NetworkAdmission((15e-6,))),
            "admission.latency_target_s",
        ),
        (
            NetworkConfig(n_hosts=3, weights=(4.0, 1.0), admission=NetworkAdmission((0.0,))),
            "admission.latency_target_s[0]",
        ),
        (NetworkConfig(n_hosts=2, weights=(4.0, 1.0)), "dst[0]"),
        (NetworkConfig(n_hosts=3, weights=(4.0, 1.0), scheduling="drr"), "scheduling"),
        (NetworkConfig(n_hosts=3, weights=(4.0, 1.0), scheduling="qjump"), "qjump"),
        (NetworkConfig(n_hosts=3, weights=(4.0, 1.0), channels_per_class=0), "channels_per_class"),
        (
            NetworkConfig(n_hosts=3, weights=(4.0, 1.0), pfabric_priority_thresholds=(4096,)),
            "pfabric_priority_thresholds",
        ),
        (
            NetworkConfig(
                n_hosts=3,
                weights=(4.0, 1.0),
                scheduling="pfabric",
                pfabric_priority_thresholds=(8192, 4096),
            ),
            "pfabric_priority_thresholds[1]",
        ),
        (
            NetworkConfig(
                n_hosts=3, weights=(4.0, 1.0), scheduling="qjump", qjump=QjumpLevels((32.0,))
            ),
            "qjump.throughput_factors",
        ),
    ],
)
def test_network_rpc_refuses_bad_input_by_field(config: NetworkConfig, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        simulate_rpcs(_incast(), config)
    assert err.value.field == field


def test_network_rpc_port_kinds_order_the_classes_as_documented() -> None:
    # The Fig. 11 incast under each port kind. Strict priority: QoS_h never waits for QoS_l at
    # a port, its tail no worse than under WFQ 4:1 (here the virtual clock keeps QoS_h within
    # its 80% share and both serve it first); pFabric ignores the classes: every RPC is 32 KiB,
    # so the classes' tails come close; QJump's factors 32:1 pace QoS_l to one packet per
    # 2 · 3 · 0.41 µs + 1 µs = 3.4 µs a host, far below its demand: its tail explodes.
    rpcs = _incast()
    runs = {}
    for kind in ("wfq", "strict_priority", "pfabric", "qjump"):
        cfg = dataclasses.replace(
            _config(None),
            scheduling=kind,
            qjump=QjumpLevels((32.0, 1.0)) if kind == "qjump" else None,
            cc=CongestionWindow(init_cwnd=30.0, loss_based=True)
            if kind == "pfabric"
            else CongestionWindow(),
        )
        runs[kind] = simulate_rpcs(rpcs, cfg)
        assert runs[kind].counters["unfinished"] == 0
    assert runs["strict_priority"].rnl_tail(0) <= runs["wfq"].rnl_tail(0) * 1.001
    assert runs["wfq"].rnl_tail(1) > 5 * runs["wfq"].rnl_tail(0)
    pf = runs["pfabric"]
    assert 0.2 < pf.rnl_tail(0) / pf.rnl_tail(1) < 5
    assert runs["qjump"].rnl_tail(1) > 3 * runs["wfq"].rnl_tail(1)
