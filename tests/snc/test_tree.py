"""The deterministic Hölder search (tailbound.snc.tree, tailbound_core::snc_tree): the compiled
expression evaluates as the Python operator tree does, and per flow its bound is never looser than
the reference's seeded random search on several networks with dependencies."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.snc.bounds import STEP_S
from tailbound.snc.flows import Flow, Network
from tailbound.snc.latency import LatencyBound
from tailbound.snc.mmpp import MmppArrival, MmppModel, fit_mmpp
from tailbound.snc.network import flow_latencies, snc_meister
from tailbound.snc.tree import compile_tree, search_latency

LINK = 125e6


def synthetic_model(seed: int, seconds: int = 120) -> MmppModel:
    """An MMPP fitted to a bursty synthetic trace (per-second rates drawn from a few levels)."""
    rng = np.random.default_rng(seed)
    levels = rng.choice([200.0, 800.0, 3000.0], size=seconds, p=[0.6, 0.3, 0.1])
    times = []
    for s, rate in enumerate(levels):
        n = rng.poisson(rate)
        times.append(np.sort(rng.uniform(s, s + 1, n)))
    ns = (np.concatenate(times) * 1e9).astype(np.int64)
    work = rng.exponential(rng.choice([4e3, 16e3]), ns.size) + 200.0
    return fit_mmpp(ns, work)


def network(tenants: int, hosts: int, groups: list[set[int]], seed: int) -> Network:
    """``tenants`` tenants (request and response flow each) on ``hosts`` hosts; tenants in one
    of ``groups`` are mutually dependent (as tailbound.snc.tenants builds them)."""
    net = Network()
    for h in range(hosts):
        for side in ("egress", "ingress"):
            net.add_queue(f"h{h}/{side}", LINK)
    group_of = {t: g for g in groups for t in g}
    for t in range(tenants):
        client, server = t % hosts, (t + 1 + t // hosts) % hosts
        if server == client:
            server = (server + 1) % hosts
        for d, path in enumerate(
            [
                (f"h{client}/egress", f"h{server}/ingress"),
                (f"h{server}/egress", f"h{client}/ingress"),
            ]
        ):
            fid = 2 * t + d
            group = group_of.get(t, {t})
            deps = {fid} | {2 * o + e for o in group if o != t for e in (0, 1)}
            model = synthetic_model(seed + fid)
            net.add_flow(Flow(fid, t, path, MmppArrival(model, deps), t % 3, 5e-4))
    return net


def test_compiled_tree_evaluates_as_the_operator_tree() -> None:
    net = network(4, 2, [{0, 1, 2}], seed=1)
    captured: list[LatencyBound] = []
    original = LatencyBound.latency

    def capture(self: LatencyBound, search: str = "reference") -> float:
        captured.append(self)
        return 0.0

    LatencyBound.latency = capture  # type: ignore[method-assign]
    try:
        for flow in net.flows:
            snc_meister(net, flow)
    finally:
        LatencyBound.latency = original  # type: ignore[method-assign]
    lb = max(captured, key=lambda b: len(set(map(id, b.dependent_nodes))))
    nodes = list(dict.fromkeys(lb.dependent_nodes))
    assert len(nodes) >= 2, "the scenario must have dependencies"
    tree = compile_tree(lb.arrival, lb.service, lb.node, lb.eps)
    rng = np.random.default_rng(0)
    for _ in range(5):
        xs = rng.uniform(1.05, 4.0, len(nodes))
        for node, x in zip(nodes, xs, strict=True):
            node.set_x(float(x))
        pole = float(np.min(lb.node.pole_of(lb.arrival, lb.service)))
        thetas = pole * np.array([1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9])
        want = lb.latency_steps(thetas)
        got = tree.latencies(thetas, np.tile(xs, (thetas.size, 1)))  # type: ignore[attr-defined]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # The search's result is what the tree gives at its point.
    found = search_latency(lb.arrival, lb.service, lb.node, lb.eps)
    for node, x in zip(nodes, found.x, strict=True):
        node.set_x(x)
    at = lb.latency_steps(np.array([found.theta]))[0] * STEP_S
    assert at == pytest.approx(found.latency_s, rel=1e-12)


SCENARIOS = [
    # (tenants, hosts, groups, seed)
    (4, 2, [{0, 1, 2, 3}], 10),
    (6, 2, [{0, 2, 4}], 20),
    (6, 3, [{0, 1}, {3, 4, 5}], 30),
    (8, 4, [{0, 5}, {2, 3, 6}], 40),
]


@pytest.mark.parametrize(("tenants", "hosts", "groups", "seed"), SCENARIOS)
def test_deterministic_search_is_never_looser_than_the_reference(
    tenants: int, hosts: int, groups: list[set[int]], seed: int
) -> None:
    ref = flow_latencies(network(tenants, hosts, groups, seed), "snc-meister", "reference")
    det = flow_latencies(network(tenants, hosts, groups, seed), "snc-meister", "deterministic")
    assert ref.keys() == det.keys()
    assert all(np.isfinite(v) for v in ref.values()), "choose a stable scenario"
    looser = {f: (det[f], ref[f]) for f in ref if det[f] > ref[f] * (1 + 1e-12)}
    assert not looser, f"(deterministic, reference) per flow: {looser}"


def test_deterministic_hop_by_hop_is_never_looser_than_the_reference() -> None:
    """Hop-by-hop's artificial dependencies (a flow's output against the next hop's leftover)."""
    ref = flow_latencies(network(3, 2, [], 50), "snc-hop-by-hop", "reference")
    det = flow_latencies(network(3, 2, [], 50), "snc-hop-by-hop", "deterministic")
    looser = {f: (det[f], ref[f]) for f in ref if det[f] > ref[f] * (1 + 1e-12)}
    assert not looser, looser


def test_unknown_search_is_refused() -> None:
    net = network(2, 2, [], 1)
    with pytest.raises(ValueError, match="unknown search"):
        snc_meister(net, net.flows[0], "random")
