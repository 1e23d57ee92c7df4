"""Nested QoS' three scheduler kinds (``nested``, ``pclock``, ``wf2q``) reached from a scenario's
queue table with no Python change: the scenario reader hands the table to the core, which
defines the kinds (``tailbound_core::sched``; ``docs/nested-qos.md``)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.sim import Scenario

#: The examples' folder, whose SSD profile the scenario's device uses.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: A steady workload A at 20% of the device and a workload B offering 120% of it for 2 s.
A_LOAD, B_LOAD, SECONDS = 0.2, 1.2, 2.0


def request_work() -> float:
    """Seconds of device work of one 4 KiB read on the scenario's SSD (its token model)."""
    probe = Scenario.from_dict(doc(rate_a=1.0, rate_b=1.0), base=EXAMPLES)
    model = probe.devices[0].model
    assert model is not None
    work = model.tokens(probe.workloads[0].trace)
    assert np.ptp(work) == 0.0  # every request is a 4 KiB read
    return float(work[0])


def doc(rate_a: float, rate_b: float, queue: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two workloads on one SSD (one request in service at a time), A and B Poisson."""

    def workload(name: str, client: str, rate: float, seed: int) -> dict[str, Any]:
        trace = {"kind": "poisson", "rate": rate, "duration_s": SECONDS, "seed": seed}
        return {"name": name, "client": client, "device": "ssd", "trace": {"synthetic": trace}}

    d: dict[str, Any] = {
        "duration_s": 30.0,
        "hosts": [{"name": "c0"}, {"name": "c1"}, {"name": "s0"}],
        "devices": [
            {
                "name": "ssd",
                "host": "s0",
                "kind": "ssd",
                "profile": "ssd_profile.json",
                "read_mpl": 1,
            }
        ],
        "workloads": [workload("A", "c0", rate_a, 1), workload("B", "c1", rate_b, 2)],
    }
    if queue is not None:
        d["queues"] = [{"queue": "ssd", **queue}]
    return d


def run(queue: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every workload's end-to-end latencies (s) with ``queue`` as the SSD's table."""
    x = request_work()
    sim = Scenario.from_dict(doc(A_LOAD / x, B_LOAD / x, queue), base=EXAMPLES).simulator()
    sim.run()
    out = {}
    for w in sim.results().workloads:
        assert w.finished.all(), f"{w.name}: every request is served (work conserving)"
        out[w.name] = w.latency
    return out


def tables(x: float) -> dict[str, dict[str, Any]]:
    """Each kind's table giving A its share and B (over its share) less: seconds of work,
    utilisations, seconds."""
    return {
        # A's classes cover its steady rate; B buys a small envelope, the rest is best effort
        "nested": {
            "kind": "nested",
            "nested": {
                "A": [[20 * x, 0.3, 0.01], [40 * x, 0.4, 0.1]],
                "B": [[5 * x, 0.3, 0.05], [10 * x, 0.5, 1.0]],
            },
        },
        # A's curve is generous; B's requests beyond (0.5, 10 requests) are pushed in time
        "pclock": {
            "kind": "pclock",
            "buckets": {"A": [[0.3, 20 * x]], "B": [[0.5, 10 * x]]},
            "deadline_s": {"A": 0.01, "B": 0.05},
        },
        "wf2q": {"kind": "wf2q", "weight": {"A": 1, "B": 1}},
    }


@pytest.mark.parametrize("kind", ["nested", "pclock", "wf2q"])
def test_kind_isolates_a_steady_workload_from_an_overload_fifo_does_not(kind: str) -> None:
    x = request_work()
    fifo = run({"kind": "fifo"})
    ours = run(tables(x)[kind])
    # under FIFO B's overload queues ~0.2 × 2 s of excess work in front of A's requests
    assert np.quantile(fifo["A"], 0.99) > 0.1
    # each of the three serves A (well within its share) ahead of B's excess: A's tail stays
    # a few requests' work long, two orders of magnitude below FIFO's
    assert np.quantile(ours["A"], 0.99) < np.quantile(fifo["A"], 0.99) / 20
    # and B, served after, is not starved: all its requests finish (checked in run) and its
    # median is no better than under FIFO
    assert np.median(ours["B"]) >= np.median(fifo["B"]) * 0.5


def test_nested_best_effort_waits_for_enveloped_requests_only() -> None:
    # B with no classes is entirely best effort: behind A, which keeps its FIFO-free latency
    x = request_work()
    t = copy.deepcopy(tables(x)["nested"])
    del t["nested"]["B"]
    lat = run(t)
    assert np.quantile(lat["A"], 0.99) < 0.01
    assert lat["B"].max() > 0.1  # B absorbed its own overload


@pytest.mark.parametrize(
    ("queue", "field", "message"),
    [
        (
            {"kind": "nested", "nested": {"B": [[0.02, 0.1, 0.05], [0.01, 0.2, 0.5]]}},
            "queues[0].nested.B",
            "class 2 has sigma_s 0.01 < 0.02 of class 1",
        ),
        (
            {"kind": "nested", "nested": {"A": [[0.01, 0.1, 0.5], [0.02, 0.2, 0.05]]}},
            "queues[0].nested.A",
            "delta_s 0.05 < 0.5",
        ),
        (
            {"kind": "nested", "nested": {"A": [[0.01, 0.1]]}},
            "queues[0].nested.A",
            "[sigma_s, rho, delta_s]",
        ),
        ({"kind": "nested", "nested": {"Z": []}}, "queues[0].nested.Z", "no workload 'Z'"),
        ({"kind": "pclock", "buckets": {"A": [[0.0, 1.0]]}}, "queues[0].buckets.A", "rate"),
        ({"kind": "wf2q", "weight": {"B": -1}}, "queues[0].weight", "positive"),
    ],
)
def test_bad_tables_name_the_queue_and_field(
    queue: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as e:
        Scenario.from_dict(doc(10.0, 10.0, queue), base=EXAMPLES).simulator()
    assert e.value.field == field
    assert message in str(e.value)
