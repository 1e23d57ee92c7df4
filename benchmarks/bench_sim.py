"""Simulator benchmark: events per second, the 62 WorkloadCompactor traces through one server,
and the same single-queue FIFO model in SimPy for the speed ratio.

Run: ``.venv/bin/python -m benchmarks.bench_sim`` (needs ``../shared/data/wc62``; the first
traces only with ``--traces N``). ``--quick`` leaves out the SimPy run (about 10 of its 14 s):
the Rust runs only, for before/after comparisons of the simulator.

1. *Three stages*: the 62 traces (~1M requests, 600 s) each from its own client host to one
   server host with the measured SSD (``profile_ssd.json``: processor sharing, readMPL/writeMPL
   and outstanding-byte limits), 125,000,000 B/s links, MTU 1500, FIFO everywhere.
2. *Single queue*: the same requests merged into one FIFO device queue (MPL 1, work from the SSD
   token model) — in the Rust kernel and in SimPy (one process per request holding a
   ``simpy.Resource(capacity=1)``), so the ratio compares the same model.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

#: The shared data beside the project (``../shared/data``), never copied into the repository.
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wc62"


def wc62_doc(count: int) -> dict[str, Any]:
    """The scenario: ``count`` traces, each from its own client host, to one SSD server.

    Traces are read by the project's ``read_trace`` (through the scenario loader).
    """
    return {
        "network": {"bandwidth_bytes_per_s": 125_000_000, "mtu_bytes": 1500},
        "hosts": [{"name": f"client{i}"} for i in range(count)] + [{"name": "server"}],
        "devices": [{"name": "ssd", "host": "server", "profile": "profile_ssd.json"}],
        "workloads": [
            {
                "name": f"trace{i:04d}",
                "client": f"client{i}",
                "device": "ssd",
                "trace": {"path": f"traces/trace{i:04d}.txt", "format": "wc"},
            }
            for i in range(count)
        ],
    }


def with_priorities(count: int) -> dict[str, Any]:
    """The same scenario through a plan: four priority levels and a demotion bucket per stage
    at every queue (the scheduler with the most work per dequeue)."""
    from tailbound.model import Slo
    from tailbound.plan import Bound, Plan, StageLimit, TenantPlan
    from tailbound.sim import scenario_from_plan
    from tailbound.stages import STORAGE_PATH

    limit = StageLimit(0.05, 0.01)
    tenants = [
        TenantPlan(
            f"trace{i:04d}",
            Slo(1.0),
            "server",
            "ssd",
            {s: i % 4 for s in STORAGE_PATH},
            {s: limit for s in STORAGE_PATH},
            Bound(1.0, "benchmark"),
            client_host=f"client{i}",
        )
        for i in range(count)
    ]
    traces = {
        t.name: {"path": str(DATA / "traces" / f"{t.name}.txt"), "format": "wc"} for t in tenants
    }
    return scenario_from_plan(
        Plan("benchmark", 1, tenants),
        traces,
        profile=DATA / "profile_ssd.json",
        link_bandwidth_bytes_per_s=125_000_000,
        mode="demotion",
    )


def three_stage(scenario: Any) -> dict[str, Any]:
    start = time.perf_counter()
    sim = scenario.simulator()
    built = time.perf_counter()
    cpu = time.process_time()
    sim.run()
    cpu = time.process_time() - cpu
    ran = time.perf_counter()
    res = sim.results()
    lat = np.concatenate([w.latency for w in res.workloads])
    return {
        "requests": int(lat.size),
        "events": sim.events,
        "build_s": built - start,
        "run_s": ran - built,
        "cpu_s": cpu,
        "p999_ms": 1e3 * float(np.quantile(lat, 0.999)),
    }


def merged_single_queue(traces: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    from tailbound.profiles import SsdModel, SsdProfile

    model = SsdModel(SsdProfile.load(DATA / "profile_ssd.json"))
    time_ = np.concatenate([t.time for t in traces])
    work = np.concatenate([model.tokens(t) for t in traces])
    order = np.argsort(time_, kind="stable")
    return time_[order], work[order]


def timed(run: Any) -> tuple[float, float]:
    """(wall, CPU) seconds of ``run()``. The machine is shared, so CPU time is the figure that
    does not depend on what else runs; both are reported."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def rust_single_queue(
    arrival: np.ndarray, work: np.ndarray
) -> tuple[float, float, int, np.ndarray]:
    from tailbound.sim import single_queue

    sim = single_queue([arrival], [work])
    wall, cpu = timed(sim.run)
    return wall, cpu, sim.events, sim.results().workloads[0].latency


def simpy_single_queue(arrival: np.ndarray, work: np.ndarray) -> tuple[float, float, np.ndarray]:
    import simpy

    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    latency = np.empty(arrival.size)
    arrival_l, work_l = arrival.tolist(), work.tolist()

    def request(i: int):  # type: ignore[no-untyped-def]
        with server.request() as req:
            yield req
            yield env.timeout(work_l[i])
        latency[i] = env.now - arrival_l[i]

    def source():  # type: ignore[no-untyped-def]
        for i, t in enumerate(arrival_l):
            yield env.timeout(t - env.now)
            env.process(request(i))

    env.process(source())
    wall, cpu = timed(env.run)
    return wall, cpu, latency


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=int, default=62)
    parser.add_argument("--quick", action="store_true", help="the Rust runs only (no SimPy)")
    args = parser.parse_args([] if argv is None else argv)
    count = args.traces
    t0 = time.perf_counter()
    from tailbound.sim import Scenario

    doc = wc62_doc(count)
    scenario = Scenario.from_dict(doc, base=DATA)
    load_s = time.perf_counter() - t0
    traces = [w.trace for w in scenario.workloads]
    n = sum(len(t) for t in traces)
    full = three_stage(scenario)
    prio = three_stage(Scenario.from_dict(with_priorities(count), base=DATA))
    arrival, work = merged_single_queue(traces)
    rust_wall, rust_cpu, rust_events, rust_lat = rust_single_queue(arrival, work)
    util = float(work.sum() / (arrival[-1] - arrival[0]))
    print(
        f"{count} traces, {n:,} requests (loaded in {load_s:.1f} s); "
        f"storage utilisation {util:.2f}\n"
    )
    print("| run | requests | events | wall (s) | CPU (s) | events/s (CPU) | vs SimPy (CPU) |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| three stages, {len(traces)} clients → 1 SSD server, FIFO | {full['requests']:,} "
        f"| {full['events']:,} | {full['run_s']:.2f} | {full['cpu_s']:.2f} "
        f"| {full['events'] / full['cpu_s']:,.0f} | |"
    )
    print(
        f"| three stages, priority + demotion buckets at every queue | {prio['requests']:,} "
        f"| {prio['events']:,} | {prio['run_s']:.2f} | {prio['cpu_s']:.2f} "
        f"| {prio['events'] / prio['cpu_s']:,.0f} | |"
    )
    if args.quick:
        print(
            f"| single FIFO queue, Rust kernel | {n:,} | {rust_events:,} | {rust_wall:.3f} "
            f"| {rust_cpu:.3f} | {rust_events / rust_cpu:,.0f} | |"
        )
        print(
            f"\nthree-stage p99.9 latency {full['p999_ms']:.2f} ms (FIFO), "
            f"{prio['p999_ms']:.2f} ms (priorities)"
        )
        return
    simpy_wall, simpy_cpu, simpy_lat = simpy_single_queue(arrival, work)
    same = bool(np.allclose(rust_lat, simpy_lat, rtol=1e-9, atol=1e-9))
    print(
        f"| single FIFO queue, Rust kernel | {n:,} | {rust_events:,} | {rust_wall:.3f} "
        f"| {rust_cpu:.3f} | {rust_events / rust_cpu:,.0f} | {simpy_cpu / rust_cpu:.0f}× |"
    )
    print(f"| single FIFO queue, SimPy | {n:,} | | {simpy_wall:.2f} | {simpy_cpu:.2f} | | 1× |")
    print(
        f"\nsame latencies in both single-queue runs: {same}; "
        f"three-stage p99.9 latency {full['p999_ms']:.2f} ms; "
        f"wall-clock speed-up {simpy_wall / rust_wall:.0f}×"
    )


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
