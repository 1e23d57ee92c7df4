"""The three network analyses (thesis Appendix A.3, A.4): each equals its operator expression,
SNC-Meister is the tightest, and dependencies only loosen bounds."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.snc.bounds import (
    STEP_S,
    Aggregate,
    Bound,
    ConstantService,
    Convolution,
    Leftover,
    Output,
)
from tailbound.snc.flows import Flow, Network
from tailbound.snc.latency import LatencyBound
from tailbound.snc.mmpp import MmppArrival, MmppModel
from tailbound.snc.network import convolution, hop_by_hop, snc_meister

RATE = 1.0 / STEP_S  # 1 work unit per step


def source(load: float, deps: set[int]) -> MmppArrival:
    """A two-state bursty source with mean work ``load`` per step."""
    transition = np.array([[0.999, 0.001], [0.004, 0.996]])
    p = np.array([0.05, 0.4])
    mean_per_arrival = load / ((0.8 * 0.05) + (0.2 * 0.4))
    model = MmppModel(transition, p, np.full(2, 1 / mean_per_arrival), p / STEP_S)
    return MmppArrival(model, deps)


def figure_a1(loads: tuple[float, float, float, float] = (0.1, 0.1, 0.1, 0.1)) -> Network:
    """Thesis Fig. A.1: W1, W2 on S1 → S2; W3, W4 on S3 → S2; W1 has the lowest priority."""
    net = Network()
    for q in ("S1", "S2", "S3"):
        net.add_queue(q, RATE)
    paths = [("S1", "S2"), ("S1", "S2"), ("S3", "S2"), ("S3", "S2")]
    priorities = [1, 0, 0, 0]
    for i, (path, prio, load) in enumerate(zip(paths, priorities, loads, strict=True)):
        net.add_flow(Flow(i, i, path, source(load, {i}), prio, 1e-3))
    return net


def test_snc_meister_equals_equation_a4() -> None:
    net = figure_a1()
    a = [f.arrival for f in net.flows]
    # S = (S1 ⊗ (S2 ⊖ ((A3 ⊕ A4) ⊘ S3))) ⊖ A2  (our aggregation puts the later arrival first)
    s = Leftover(
        Convolution(
            ConstantService(RATE),
            Leftover(ConstantService(RATE), Output(Aggregate(a[3], a[2]), ConstantService(RATE))),
        ),
        a[1],
    )
    expect = LatencyBound(a[0], s, 1e-3).latency()
    assert snc_meister(net, net.flows[0]) == pytest.approx(expect, rel=1e-12)
    assert not s.dependent_nodes  # no artificial dependency


def test_snc_meister_six_steps_with_y_and_r_sets() -> None:
    # W on S1 → V1; X shares the path; Y leaves S1 for V2; Z comes from S2 into V1 and R is
    # S2's other traffic of priority >= Z's.
    net = Network()
    for q in ("S1", "S2", "V1", "V2"):
        net.add_queue(q, RATE)
    spec = [
        ("W", ("S1", "V1"), 2),
        ("X", ("S1", "V1"), 1),
        ("Y", ("S1", "V2"), 0),
        ("Z", ("S2", "V1"), 1),
        ("R", ("S2", "V2"), 0),
        ("low", ("S2", "V2"), 3),
    ]
    for i, (_, path, prio) in enumerate(spec):
        net.add_flow(Flow(i, i, path, source(0.08, {i}), prio, 1e-3))
    a = {name: net.flows[i].arrival for i, (name, _, _) in enumerate(spec)}
    c = ConstantService(RATE)
    d_z = Output(a["Z"], Leftover(c, a["R"]))
    s = Leftover(Convolution(Leftover(c, a["Y"]), Leftover(c, d_z)), a["X"])
    expect = LatencyBound(a["W"], s, 1e-3).latency()
    assert snc_meister(net, net.flows[0]) == pytest.approx(expect, rel=1e-12)


def test_hop_by_hop_equals_its_operator_sequence() -> None:
    net = figure_a1()
    a = [f.arrival for f in net.flows]
    c = ConstantService(RATE)
    # priority order W2, W3, W4 (ties by id), then W1
    s1: Bound = Leftover(c, a[1])
    s3: Bound = Leftover(Leftover(c, a[2]), a[3])
    out2 = Output(a[1], c)
    out3 = Output(a[2], c)
    out4 = Output(a[3], Leftover(c, a[2]))
    s2: Bound = Leftover(Leftover(Leftover(c, out2), out3), out4)
    first = LatencyBound(a[0], s1, 0.5e-3).latency()
    second = LatencyBound(Output(a[0], s1), s2, 0.5e-3).latency()
    assert s3 is not None
    assert hop_by_hop(net, net.flows[0]) == pytest.approx(first + second, rel=1e-9)


def test_convolution_equals_its_operator_sequence() -> None:
    net = figure_a1()
    a = [f.arrival for f in net.flows]
    c = ConstantService(RATE)
    s1 = Leftover(c, a[1])
    out4 = Output(a[3], Leftover(c, a[2]))
    s2 = Leftover(Leftover(Leftover(c, Output(a[1], c)), Output(a[2], c)), out4)
    expect = LatencyBound(a[0], Convolution(s1, s2), 1e-3).latency()
    assert convolution(net, net.flows[0]) == pytest.approx(expect, rel=1e-9)


@pytest.mark.parametrize("load", [0.05, 0.1, 0.15])
def test_snc_meister_is_tightest(load: float) -> None:
    net = figure_a1((load,) * 4)
    w1 = net.flows[0]
    meister = snc_meister(net, w1)
    assert meister <= hop_by_hop(net, w1)
    assert meister <= convolution(net, w1)


def _same_path_network(groups: list[set[int]]) -> Network:
    net = Network()
    net.add_queue("A", RATE)
    net.add_queue("B", RATE)
    for i, deps in enumerate(groups):
        net.add_flow(Flow(i, i, ("A", "B"), source(0.1, deps), 0, 1e-3))
    return net


def test_dependencies_only_loosen_the_bound() -> None:
    n = 5
    independent = _same_path_network([{i} for i in range(n)])
    partly = _same_path_network([{0, 1, 2} if i < 3 else {i} for i in range(n)])
    everyone = set(range(n))
    dependent = _same_path_network([everyone for _ in range(n)])
    values = [snc_meister(net, net.flows[0]) for net in (independent, partly, dependent)]
    assert values[0] < values[1] < values[2]


def test_one_hop_flow() -> None:
    net = Network()
    net.add_queue("D", RATE)
    for i in range(3):
        net.add_flow(Flow(i, i, ("D",), source(0.1, {i}), i, 1e-3))
    a = [f.arrival for f in net.flows]
    s = Leftover(ConstantService(RATE), Aggregate(a[1], a[0]))
    expect = LatencyBound(a[2], s, 1e-3).latency()
    assert snc_meister(net, net.flows[2]) == pytest.approx(expect, rel=1e-12)


def test_overloaded_link_gives_infinite_bound() -> None:
    net = _same_path_network([{i} for i in range(12)])  # 12 × 0.1 > 1
    assert snc_meister(net, net.flows[0]) == np.inf
