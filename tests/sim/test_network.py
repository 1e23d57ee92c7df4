"""Links: store-and-forward serialisation at packet granularity, and priorities interleaving
messages at packet boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tailbound.sim import Requests, Simulator


def one_message(bandwidths: list[float], props: list[float], size: float, mtu: float) -> float:
    config = {
        "topology": {
            "mtu": mtu,
            "links": [
                {"bandwidth": c, "propagation": d} for c, d in zip(bandwidths, props, strict=True)
            ],
        },
        "workloads": [{"route": [{"net": list(range(len(bandwidths)))}], "issue": "open"}],
    }
    req = Requests(np.zeros(1), np.zeros(1, np.uint8), np.zeros(1), [np.array([size])])
    sim = Simulator(config, [req], names=["m"], stage_names=[("net_in",)])
    sim.run()
    return float(sim.results()["m"].latency[0])


def store_and_forward(
    bandwidths: list[float], props: list[float], size: float, mtu: float
) -> float:
    """Reference: packet k leaves hop h at f[h][k] = max(arrival at h, f[h][k−1]) + L_k / C_h."""
    n = max(1, math.ceil(size / mtu))
    lengths = [mtu] * (n - 1) + [size - mtu * (n - 1)]
    ready = [0.0] * n
    for c, d in zip(bandwidths, props, strict=True):
        free = 0.0
        for k in range(n):
            free = max(ready[k], free) + lengths[k] / c
            ready[k] = free + d
    return ready[-1]


@pytest.mark.parametrize(
    ("bandwidths", "props", "size", "mtu", "closed_form"),
    [
        # one packet over two equal links: 2·B/C + 2d
        ([1e6, 1e6], [1e-5, 1e-5], 1000.0, 1500.0, 2 * 1000 / 1e6 + 2e-5),
        # many packets over two equal links: B/C + MTU/C + 2d (the pipeline)
        ([1e6, 1e6], [1e-5, 1e-5], 10_000.0, 1500.0, 10_000 / 1e6 + 1500 / 1e6 + 2e-5),
        # a slow second hop dominates: MTU/C0 + B/C1 when C1 < C0 and packets are equal
        ([2e6, 1e6], [0.0, 0.0], 6000.0, 1500.0, 1500 / 2e6 + 6000 / 1e6),
        ([125e6], [0.0], 143_617.0, 1500.0, 143_617 / 125e6),
        ([125e6, 125e6, 125e6], [1e-6, 2e-6, 3e-6], 3001.0, 9000.0, None),
    ],
)
def test_network_store_and_forward_serialisation(
    bandwidths: list[float],
    props: list[float],
    size: float,
    mtu: float,
    closed_form: float | None,
) -> None:
    got = one_message(bandwidths, props, size, mtu)
    assert got == pytest.approx(store_and_forward(bandwidths, props, size, mtu), rel=1e-12)
    if closed_form is not None:
        assert got == pytest.approx(closed_form, rel=1e-12)


def test_network_priority_interleaves_at_packet_boundaries() -> None:
    """A small high-priority message arriving during a 100-packet low-priority message waits for
    one packet at most, not for the whole message."""
    c = 1500.0  # one packet per second
    config = {
        "topology": {
            "links": [{"bandwidth": c, "scheduler": {"kind": "priority", "priority": [0, 1]}}]
        },
        "workloads": [{"route": [{"net": [0]}], "issue": "open"}] * 2,
    }

    def req(t: float, size: float) -> Requests:
        return Requests(np.array([t]), np.zeros(1, np.uint8), np.zeros(1), [np.array([size])])

    sim = Simulator(
        config,
        [req(0.0, 150_000.0), req(10.5, 1500.0)],
        names=["bulk", "urgent"],
        stage_names=[("net_in",)] * 2,
    )
    sim.run()
    res = sim.results()
    assert res["urgent"].latency[0] == pytest.approx(1.5)  # waits for the packet on the wire
    assert res["bulk"].latency[0] == pytest.approx(101.0)
