"""A class per request: a workload's requests carry classes of their own (``class``, one name
per request) and a ``dwrr`` queue serves each request in its class instead of its workload's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.sim import Scenario
from tailbound.traces.columns import make_trace

#: 4096-byte reads of exactly 1 ms of device work.
PROFILE = {
    "bandwidthTable": [{"requestSize": 4096, "readBandwidth": 4096e3, "writeBandwidth": 4096e3}]
}


def doc(classes: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Workloads A and B on the device's own host (no network), four 1 ms reads each at time 0,
    behind a DWRR device queue (MPL 1) with classes ``hi`` (weight 3) and ``lo`` (weight 1);
    both workloads are in ``lo``. A quantum of 1.1 ms lets ``hi`` serve up to three requests a
    round and ``lo`` one (no ties between a deficit and a cost)."""
    workloads = []
    for name in ("A", "B"):
        trace = make_trace(
            Path(f"{name}.csv"), time=np.zeros(4), op=np.zeros(4, np.uint8), size=np.full(4, 4096)
        )
        w: dict[str, Any] = {"name": name, "client": "s", "device": "ssd", "trace": trace}
        if classes is not None and name in classes:
            w["class"] = classes[name]
        workloads.append(w)
    return {
        "hosts": [{"name": "s"}],
        "devices": [{"name": "ssd", "host": "s", "profile": PROFILE, "read_mpl": 1}],
        "workloads": workloads,
        "queues": [
            {
                "queue": "ssd",
                "kind": "dwrr",
                "class": {"A": "lo", "B": "lo"},
                "class_weight": {"hi": 3, "lo": 1},
                "quantum_s": 0.0011,
            }
        ],
    }


def latencies_ms(d: dict[str, Any]) -> dict[str, list[float]]:
    sim = Scenario.from_dict(d).simulator()
    sim.run()
    res = sim.results()
    return {w: (1e3 * res[w].latency).round(6).tolist() for w in ("A", "B")}


def test_request_classes_change_dwrr_service_order_as_predicted() -> None:
    # The requests enter the device queue interleaved a0 b0 a1 b1 a2 b2 a3 b3 (the issues at
    # time 0 alternate), and a0 goes into service at once.
    # By workload both are in class lo, one FIFO: a0 b0 a1 b1 a2 b2 a3 b3, one per ms.
    assert latencies_ms(doc()) == {"A": [1, 3, 5, 7], "B": [2, 4, 6, 8]}
    # Per request, A alternates hi lo hi lo and B lo hi lo hi: lo holds [b0 a1 b2 a3], hi holds
    # [b1 a2 b3], lo's turn comes first (b0 made it active). lo serves b0 (deficit 1.1 → 0.1),
    # cannot serve a1; hi gets 3.3 ms and serves b1 a2 b3; then lo serves a1, b2, a3 one a
    # round: a0 b0 b1 a2 b3 a1 b2 a3.
    per_request = {"A": ["hi", "lo", "hi", "lo"], "B": ["lo", "hi", "lo", "hi"]}
    assert latencies_ms(doc(per_request)) == {"A": [1, 6, 4, 8], "B": [2, 3, 7, 5]}
    # a class per request that names the workload's own class changes nothing
    same = {"A": ["lo"] * 4, "B": ["lo"] * 4}
    assert latencies_ms(doc(same)) == {"A": [1, 3, 5, 7], "B": [2, 4, 6, 8]}


@pytest.mark.parametrize(
    ("classes", "field", "message"),
    [
        ({"B": ["hi", "lo", "hi", "urgent"]}, "workloads[1].class", "no queue has"),
        ({"A": ["hi", "lo"]}, "workloads[0].class", "2 class names for 4 requests"),
        ({"A": "hi"}, "workloads[0].class", "expected a list of class names"),
        ({"B": ["hi", "lo", 3, "lo"]}, "workloads[1].class", "expected a list of class names"),
    ],
)
def test_request_classes_bad_input_names_the_workload_field(
    classes: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        Scenario.from_dict(doc(classes)).simulator()
    assert e.value.field == field


def test_request_classes_need_a_queue_with_classes() -> None:
    d = doc({"A": ["hi"] * 4})
    d["queues"] = []
    with pytest.raises(ConfigError, match="no queue has") as e:
        Scenario.from_dict(d).simulator()
    assert e.value.field == "workloads[0].class"


def test_request_deadlines_and_classes_pass_through_the_binding() -> None:
    from tailbound.sim.simulator import NO_CLASS, Requests, Simulator

    def run(scheduler: dict[str, Any], n: int = 3, **tags: Any) -> list[float]:
        config = {
            "topology": {"devices": [{"scheduler": scheduler}]},
            "workloads": [{"route": [{"device": 0}], "issue": "open"}],
        }
        req = Requests(
            arrival=np.zeros(n),
            op=np.zeros(n, np.uint8),
            size=np.zeros(n),
            cost=[np.ones(n)],
            **tags,
        )
        sim = Simulator(config, [req], names=["A"], stage_names=[("storage",)])
        sim.run()
        return sim.results()["A"].latency.tolist()

    edf = {"kind": "edf", "deadline": [10.0]}
    # request 0 goes in at once; request 2's own deadline (1 s after issue) precedes request 1's
    assert run(edf) == [1.0, 2.0, 3.0]
    assert run(edf, deadline_s=np.array([np.inf, 5.0, 1.0])) == [1.0, 3.0, 2.0]
    # a two-class DWRR queue (weights 1:1, quantum 1 s), the workload in class 0: request 0
    # goes in at once; by workload 1, 2, 3 follow in order; with request 3 in class 1 the
    # classes alternate: 1, 3, 2
    dwrr = {"kind": "dwrr", "class": [0], "weight": [1.0, 1.0], "quantum": 1.0}
    assert run(dwrr, 4) == [1.0, 2.0, 3.0, 4.0]
    assert run(dwrr, 4, classes=np.array([NO_CLASS, 0, 0, 1])) == [1.0, 2.0, 4.0, 3.0]
    with pytest.raises(ValueError, match="class 2"):
        run(dwrr, classes=np.array([0, 2, 0]))
    with pytest.raises(ValueError, match="classes must be integers"):
        run(dwrr, classes=np.array([-1, 0, 0]))
