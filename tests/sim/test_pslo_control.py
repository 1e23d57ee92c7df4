"""PSLO's controller at a simulated device, from a scenario's ``devices[i].control`` table
(``tailbound_core::sim::control``; ``docs/pslo.md``, ``docs/simulator.md``): the policies act in
the direction the paper predicts, every spelling is accepted and bad tables name the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.sim import Scenario
from tailbound.sim.results import SimResults

#: The examples' folder, whose SSD profile the scenario's device uses.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: A: latency-sensitive, 10% of the device; B: throughput-hungry, offering 80% of it; for 2 s.
A_LOAD, B_LOAD, SECONDS = 0.1, 0.8, 2.0
#: A's SLO: the 99th percentile within this many request works; B's throughput SLO, as a
#: fraction of the device's capacity (A's throughput SLO is twice its offered load: it never
#: holds A back for long).
A_SLO_WORKS, B_SLO_LOAD = 10.0, 0.5


def request_work() -> float:
    """Seconds of device work of one 4 KiB read on the scenario's SSD (its token model)."""
    probe = Scenario.from_dict(doc(1.0, 1.0), base=EXAMPLES)
    model = probe.devices[0].model
    assert model is not None
    work = model.tokens(probe.workloads[0].trace)
    assert np.ptp(work) == 0.0  # every request is a 4 KiB read
    return float(work[0])


def control(policy: str, x: float) -> dict[str, Any]:
    """A PSLO table for A (latency and throughput SLOs) and B (throughput only); ``x`` is one
    request's work in seconds."""
    return {
        "kind": "pslo",
        "policy": policy,
        "slo": {
            "A": {
                "latency_s": A_SLO_WORKS * x,
                "percentile": 0.99,
                "throughput_iops": 2 * A_LOAD / x,
            },
            "B": {"throughput_iops": B_SLO_LOAD / x},
        },
    }


def doc(rate_a: float, rate_b: float, ctl: dict[str, Any] | None = None) -> dict[str, Any]:
    """A and B (Poisson, local to the server) on one SSD sharing it by processor sharing (64
    requests in service at once), its controller ``ctl``."""

    def workload(name: str, rate: float, seed: int) -> dict[str, Any]:
        trace = {"kind": "poisson", "rate": rate, "duration_s": SECONDS, "seed": seed}
        return {"name": name, "client": "s0", "device": "ssd", "trace": {"synthetic": trace}}

    device: dict[str, Any] = {
        "name": "ssd",
        "host": "s0",
        "kind": "ssd",
        "profile": "ssd_profile.json",
        "read_mpl": 64,
    }
    if ctl is not None:
        device["control"] = ctl
    return {
        "hosts": [{"name": "s0"}],
        "devices": [device],
        "workloads": [workload("A", rate_a, 1), workload("B", rate_b, 2)],
    }


def run(policy: str) -> tuple[SimResults, float]:
    """The results under ``policy`` (every request served), and one request's work (s)."""
    x = request_work()
    scenario = Scenario.from_dict(doc(A_LOAD / x, B_LOAD / x, control(policy, x)), base=EXAMPLES)
    sim = scenario.simulator()
    sim.run()
    results = sim.results()
    for w in results.workloads:
        assert w.finished.all(), f"{policy}, {w.name}: every request is served"
    return results, x


def test_pslo_lst_keeps_the_latency_slo_that_no_control_misses_and_the_throughput_slo() -> None:
    none, x = run("none")
    lst, _ = run("LS+T")
    slo_s = A_SLO_WORKS * x
    # no control: B's 80% shares the device with A, whose 99th percentile is > 3x its SLO
    assert none["A"].percentile(0.99) > 3 * slo_s, none["A"].percentile(0.99) / x
    # LS+T paces B at its throughput SLO (Eq. 9): A meets its SLO, B keeps its throughput
    assert lst["A"].percentile(0.99) <= slo_s, lst["A"].percentile(0.99) / x
    assert lst["A"].percentile(0.99) < none["A"].percentile(0.99) / 3
    assert lst["B"].throughput() >= 0.98 * B_SLO_LOAD / x, lst["B"].throughput() * x
    assert lst["A"].throughput() >= 0.98 * A_LOAD / x  # A is never starved
    # the decisions are in the results: B's rate is its SLO from time 0 on (Eq. 9 with B
    # always backlogged keeps it there), A's grows as A never reaches its target (Eq. 13)
    log = lst.control["ssd"]
    t, rate, depth = log.of("B")
    assert t[0] == 0.0 and rate[0] == pytest.approx(B_SLO_LOAD / x)
    assert np.all(rate >= B_SLO_LOAD / x * (1 - 1e-12)) and np.all(np.isinf(depth))
    assert len(t) > 10
    _, rate_a, _ = log.of("A")
    assert rate_a[-1] > rate_a[0]
    # no control decides nothing: its log is the initial (unlimited) limits alone
    assert np.all(np.isinf(none.control["ssd"].rate_iops))
    assert len(none.control["ssd"].time_s) == 2


@pytest.mark.parametrize("policy", _core.PSLO_POLICIES)
def test_pslo_every_policy_is_accepted_and_runs(policy: str) -> None:
    results, x = run(policy)
    if policy != "none":  # every policy paces a throughput-only tenant (Eq. 9)
        assert results["B"].throughput() < 0.6 / x
    assert set(_core.PSLO_POLICIES) == {"LS+T", "TS+L", "L", "LS+U", "T", "none"}


def bad(mutate: Any) -> ConfigError:
    d = doc(1000.0, 1000.0, control("LS+T", 1e-4))
    mutate(d["devices"][0]["control"])
    with pytest.raises(ConfigError) as e:
        Scenario.from_dict(copy.deepcopy(d), base=EXAMPLES).simulator()
    return e.value


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda c: c.update(policy="LS-T"), "devices[0].control.policy"),
        (lambda c: c.update(policy="lst"), "devices[0].control.policy"),
        (lambda c: c.update(kind="cake"), "devices[0].control.kind"),
        (lambda c: c.update(interval_completions=0), "devices[0].control.interval_completions"),
        (lambda c: c.update(threshold=1.0), "devices[0].control.threshold"),
        (lambda c: c.update(eta=1.5), "devices[0].control.eta"),
        (lambda c: c.update(tau=0.1), "devices[0].control.tau"),
        (lambda c: c["slo"]["A"].update(percentile=1.0), "devices[0].control.slo.A.percentile"),
        (lambda c: c["slo"]["A"].update(percentile=0.0), "devices[0].control.slo.A.percentile"),
        (lambda c: c["slo"]["A"].pop("latency_s"), "devices[0].control.slo.A.latency_s"),
        (
            lambda c: c["slo"]["B"].update(throughput_iops=0),
            "devices[0].control.slo.B.throughput_iops",
        ),
        (lambda c: c["slo"].update(C={"throughput_iops": 1}), "devices[0].control.slo.C"),
        (lambda c: c.update(slo={}), "devices[0].control.slo"),
    ],
)
def test_pslo_bad_control_tables_name_the_field(mutate: Any, field: str) -> None:
    assert bad(mutate).field == field


def test_pslo_a_workload_of_another_device_is_refused() -> None:
    d = doc(1000.0, 1000.0, control("LS+T", 1e-4))
    d["devices"].append({**d["devices"][0], "name": "ssd2"})
    del d["devices"][0]["control"]
    d["devices"][1]["control"] = control("LS+T", 1e-4)
    with pytest.raises(ConfigError, match="not a workload of this device") as e:
        Scenario.from_dict(d, base=EXAMPLES)
    assert e.value.field == "devices[1].control.slo.A"
