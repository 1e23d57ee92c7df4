"""The Aequitas prediction kept per destination link (``policies.aequitas.LinkPredictor``,
docs/service.md "Aequitas through the service"): after every arrival and departure of a random
sequence it equals the full computation (``predict`` of every admitted tenant's RPCs, as
``tailbound admit --policy aequitas`` computes it) exactly, with SLOs per RPC (an arrival
re-reads only the links it reaches) and per MTU (the window moves with the mean size: every
link is re-read), with and without a given ``burst_load``; and an arrival to one link leaves
the other links' loads as they were (the same objects)."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.policies.aequitas import LinkPredictor, predict
from tailbound.rpc_network import RpcTraffic, network_from_json
from tailbound.sim.aequitas_plan import tenant_rpcs
from tailbound.traces.trace import Trace


def _network(unit: str, burst_load: float | None) -> object:
    doc = {
        "hosts": 4,
        "link_rate_bps": 1e9,
        "classes": [
            {"name": "h", "weight": 8, "slo_s": 2e-4 if unit == "rpc" else 2e-5, "slo_unit": unit},
            {"name": "m", "weight": 4, "slo_s": 5e-4 if unit == "rpc" else 5e-5, "slo_unit": unit},
            {"name": "l", "weight": 1},
        ],
        "seed": 7,
    }
    if burst_load is not None:
        doc["burst_load"] = burst_load
    return network_from_json(doc, None, "rpc_network")


def _tenant(rng: np.random.Generator, k: int) -> tuple[RpcTraffic, Trace]:
    n = int(rng.integers(50, 400))
    time = np.sort(rng.uniform(0, 0.05, n)) + rng.uniform(0, 0.01)
    size = rng.choice([4096, 32768, 100_000], n)
    mixes = [{"h": 0.7, "l": 0.3}, {"m": 0.5, "l": 0.5}, {"h": 0.2, "m": 0.3, "l": 0.5}]
    if k % 3 == 2:
        traffic = RpcTraffic(mixes[k % 3], load=float(rng.uniform(0.2, 0.9)))
    else:
        traffic = RpcTraffic(mixes[k % 3], pattern="incast", destination=int(rng.integers(0, 4)))
    return traffic, Trace(time=time, op=np.zeros(n, np.uint8), size=size)


@pytest.mark.parametrize(("unit", "burst_load"), [("rpc", None), ("mtu", None), ("rpc", 2.5)])
def test_the_link_predictor_is_the_full_prediction(unit: str, burst_load: float | None) -> None:
    network = _network(unit, burst_load)
    rng = np.random.default_rng(11)
    admitted: dict[str, tuple[RpcTraffic, Trace]] = {}
    predictor = LinkPredictor(network)  # type: ignore[arg-type]
    events = ["a0", "a1", "a2", "a3", "d1", "a4", "a5", "d0", "a6", "d5"]
    for event in events:
        name = f"t{event[1:]}"
        if event[0] == "a":
            admitted[name] = _tenant(rng, int(event[1:]))
            before = dict(predictor.links)
            predictor = predictor.add(name, *admitted[name])
            traffic = admitted[name][0]
            if traffic.pattern == "incast" and unit == "rpc":
                for d, link in before.items():  # links it does not reach are kept as they were
                    if d != traffic.destination:
                        assert predictor.links[d] is link
        else:
            predictor = predictor.without(name, lambda n: admitted[n])
            del admitted[name]
        rpcs = tenant_rpcs(
            network,  # type: ignore[arg-type]
            {n: t for n, (t, _) in admitted.items()},
            {n: trace for n, (_, trace) in admitted.items()},
        )
        assert predictor.prediction() == predict(network, rpcs), event  # type: ignore[arg-type]
        assert [n for n, _ in predictor.tenants] == list(admitted)
