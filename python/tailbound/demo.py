"""The demo pipeline (``make demo``): a generated fleet from characterisation to verified plan.

1. generate a fleet of workloads with SLOs (:func:`~tailbound.traces.fleet.demo_fleet`);
2. characterise the **first half** of each trace: r-b curves at ``net_in``, ``storage`` and
   ``net_out`` with a 1.1 safety margin (WorkloadCompactor's evaluation, paper §5.2);
3. place the fleet with WorkloadCompactor and the baselines it was compared against, each on as
   few servers as its analysis allows (first-fit);
4. replay the **second half** of each trace through WorkloadCompactor's plan in the simulator,
   with its priorities and rate limits enforced as the thesis' enforcers do (§2.2: priority is
   honoured within the limits, over-limit requests drop to the lowest priority), and check every
   tenant's SLO.

Everything runs on data tailbound generates itself: a SATA-class SSD profile
(:data:`DEMO_SSD`) and 10 Gb/s links with jumbo frames.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tailbound.model import Cluster, Server, Tenant
from tailbound.plan import Plan
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.workload import TenantCurves, characterize
from tailbound.policies.workloadcompactor import server_model, to_plan
from tailbound.profiles import SsdProfile
from tailbound.traces.fleet import GeneratedTenant, demo_fleet
from tailbound.verify import Verification, replay_plan

#: The demo's device: 80 µs + size / 520 MB/s per read, 120 µs + size / 420 MB/s per write.
DEMO_SSD = SsdProfile.from_spec(
    read_overhead_s=80e-6,
    read_bytes_per_s=520e6,
    write_overhead_s=120e-6,
    write_bytes_per_s=420e6,
)
#: Host links of 10 Gb/s in each direction, in bytes per second.
DEMO_LINK_BYTES_PER_S = 1.25e9
#: Jumbo frames, as storage networks commonly run (and 6× fewer packets to simulate).
DEMO_MTU_BYTES = 9000
#: The policies placed: WorkloadCompactor first, then the paper's baselines.
DEMO_POLICIES = registry.registered(
    ("workloadcompactor", "effective-bandwidth", "knee", "average-rate:2"), "placement"
)
#: WorkloadCompactor's safety margin when planning from half a trace.
DEMO_SAFETY_MARGIN = 1.1
#: The dispatcher's cap on the device work in service below a device's most important level.
DEMO_LOW_PRIORITY_WORK_S = 0.01


@dataclass(frozen=True)
class DemoResult:
    """What the demo decided and measured."""

    fleet: list[GeneratedTenant]
    plans: dict[str, Plan]
    verification: Verification
    seconds: dict[str, float]


def demo_cluster(servers: int) -> Cluster:
    """``servers`` storage servers with one SSD each on :data:`DEMO_LINK_BYTES_PER_S` links."""
    return Cluster(
        DEMO_LINK_BYTES_PER_S,
        tuple(Server(f"server{i:02d}", ("ssd0",)) for i in range(servers)),
    )


def run_demo(
    *,
    workloads: int = 24,
    seed: int = 0,
    duration_s: float = 300.0,
    progress: Callable[[str], None] = lambda _: None,
) -> DemoResult:
    """Run the pipeline; ``progress`` receives a line per step."""
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    fleet = demo_fleet(workloads, seed=seed, duration_s=duration_s)
    seconds["generate"] = time.perf_counter() - start
    requests = sum(len(w.trace) for w in fleet)
    progress(f"generated {len(fleet)} workloads, {requests:,} requests over {duration_s:g} s")

    start = time.perf_counter()
    characterised: list[TenantCurves] = [
        characterize(
            Tenant(w.name, w.slo, Path(w.name)),
            w.trace.first_half(),
            profile=DEMO_SSD,
            link_bandwidth_bytes_per_s=DEMO_LINK_BYTES_PER_S,
            safety_margin=DEMO_SAFETY_MARGIN,
        )
        for w in fleet
    ]
    seconds["characterize"] = time.perf_counter() - start
    progress(f"r-b curves of the first halves, 3 stages each: {seconds['characterize']:.2f} s")

    cluster = demo_cluster(len(fleet))
    # the sound server model (docs/dnc.md, "The storage stage"), with the dispatcher's cap on
    # low-priority work in service
    model = server_model(DEMO_SSD, DEMO_LINK_BYTES_PER_S, DEMO_MTU_BYTES, DEMO_LOW_PRIORITY_WORK_S)
    plans = {}
    for name in DEMO_POLICIES:
        result = place(characterised, cluster, registry.build(name, "placement", model))
        plans[name] = to_plan(result, cluster, policy=name, safety_margin=DEMO_SAFETY_MARGIN)
        seconds[f"place {name}"] = result.seconds
    progress("placed with " + ", ".join(DEMO_POLICIES))

    start = time.perf_counter()
    plan = plans["workloadcompactor"]
    halves = {
        w.name: w.trace.second_half()
        for w in fleet
        if w.name not in {r.name for r in plan.rejected}
    }
    verification = replay_plan(
        plan,
        halves,
        profile=DEMO_SSD.to_json(),
        link_bandwidth_bytes_per_s=DEMO_LINK_BYTES_PER_S,
        mtu_bytes=DEMO_MTU_BYTES,
        mode="demotion",
    )
    seconds["replay"] = time.perf_counter() - start
    progress(f"replayed the second halves through the plan: {seconds['replay']:.2f} s")
    return DemoResult(fleet, plans, verification, seconds)


def servers_table(plans: dict[str, Plan], seconds: dict[str, float]) -> str:
    """A Markdown table of servers used per policy, relative to WorkloadCompactor."""
    reference = plans["workloadcompactor"].servers_used
    rows = [
        "| policy | servers | vs WorkloadCompactor | rejected | placement time |",
        "|---|---|---|---|---|",
    ]
    for name, plan in plans.items():
        rows.append(
            f"| {name} | {plan.servers_used} | {plan.servers_used / reference:.2f}× "
            f"| {len(plan.rejected)} | {seconds[f'place {name}']:.2f} s |"
        )
    return "\n".join(rows)


def write_fleet(
    fleet: list[GeneratedTenant], out: Path, *, servers: int | None = None, clients: int = 2
) -> dict[str, Path]:
    """Write ``fleet`` as the inputs every verb and the control plane read: its traces
    (``traces/<name>.parquet``), a tenants file (``tenants.json``, tenant ``i`` on client host
    ``client<i mod clients>`` and server ``server<i mod servers>``, device ``ssd0``: what the SNC
    analyses need; placement ignores the server), a cluster file (``cluster.json``:
    :func:`demo_cluster` with ``servers`` servers, one per workload by default, and ``clients``
    client hosts with a VM per tenant) and the SSD profile (``profile_ssd.json``,
    :data:`DEMO_SSD`). Returns the paths by kind (``tenants``, ``cluster``, ``profile``)."""
    from tailbound.jsonio import write_json_atomic
    from tailbound.traces.tabular import write_parquet

    servers = len(fleet) if servers is None else servers
    (out / "traces").mkdir(parents=True, exist_ok=True)
    tenants = []
    for i, w in enumerate(fleet):
        write_parquet(w.trace, out / "traces" / f"{w.name}.parquet")
        tenants.append(
            {
                "name": w.name,
                "slo_s": w.slo.latency_s,
                "percentile": w.slo.percentile,
                "trace": f"traces/{w.name}.parquet",
                "client_host": f"client{i % clients:02d}",
                "client_vm": str(i),
                "server_host": f"server{i % servers:02d}",
                "device": "ssd0",
            }
        )
    cluster = demo_cluster(servers)
    paths = {
        k: out / f
        for k, f in (
            ("tenants", "tenants.json"),
            ("cluster", "cluster.json"),
            ("profile", "profile_ssd.json"),
        )
    }
    write_json_atomic(
        paths["tenants"],
        {
            "link_bandwidth_bytes_per_s": DEMO_LINK_BYTES_PER_S,
            "ssd_profile": "profile_ssd.json",
            "tenants": tenants,
        },
    )
    write_json_atomic(
        paths["cluster"],
        {
            "link_bandwidth_bytes_per_s": cluster.link_bytes_per_s,
            "server_hosts": [{"name": s.name, "devices": list(s.devices)} for s in cluster.servers],
            "client_hosts": [
                {"name": f"client{c:02d}", "vms": [str(i) for i in range(c, len(fleet), clients)]}
                for c in range(clients)
            ],
        },
    )
    write_json_atomic(paths["profile"], DEMO_SSD.to_json())
    return paths
