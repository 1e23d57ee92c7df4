"""Networks of queues and the three SNC analyses of a flow's latency (thesis Appendix A.3, A.4).

A :class:`Network` holds queues (constant-rate servers, work per second) and flows. A flow is one
direction of a tenant's traffic: its arrival process, its path (one or two queues), its priority
(smaller number = higher priority; equal priorities count as higher, which is conservative) and its
violation probability ``eps``. Three analyses bound a flow's latency:

``snc_meister`` (Appendix A.4, six steps, proved by Theorem 7) on a two-hop path ``S1 → V1``:
  ``X`` = other flows on ``S1 → V1`` of priority ≥ ours; ``Y`` = flows from ``S1`` to other
  second queues, priority ≥ ours; for every other first queue ``Si`` feeding ``V1``: ``Zi`` = its
  flows into ``V1`` of priority ≥ ours and ``Ri`` = its other flows of priority ≥ the lowest in
  ``Zi``, departures ``D_Zi = A_Zi ⊘ (Si ⊖ A_Ri)``; then
  ``S = ((S1 ⊖ A_Y) ⊗ (V1 ⊖ (⊕ D_Zi))) ⊖ A_X`` and ``L = Latency(A_W, S, eps)``. Every aggregate
  uses the dependency-aware :func:`~tailbound.snc.bounds.aggregate_all`. A one-hop path is the
  single-queue case ``S = S1 ⊖ A_X``.

``hop_by_hop`` (Appendix A.3, approach 1): flows of priority ≥ ours in priority order, then ours;
  each is pushed through its queues, updating every queue's leftover service ``S ← S ⊖ A`` and the
  flow's arrival ``A ← A ⊘ S``; our latency is the sum of the per-hop bounds, each at
  ``eps / hops`` (union bound). Artificial dependencies are detected from the flow ids and handled
  with the Hölder forms.

``convolution`` (Appendix A.3, approach 2): as hop-by-hop, but our latency is one bound through
  the convolution of the leftover services of our queues.

Ties between flows of equal priority in the two classic analyses are ordered by their latency
bound computed so far, larger first (the reference implementation's heuristic), then by flow id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tailbound.snc.bounds import (
    Bound,
    ConstantService,
    Convolution,
    Leftover,
    Output,
    aggregate_all,
)
from tailbound.snc.latency import LatencyBound


@dataclass
class Flow:
    """One direction of a tenant's traffic through one or two queues."""

    id: int
    tenant: int
    path: tuple[str, ...]
    arrival: Bound
    priority: int
    eps: float
    latency: float = 0.0


@dataclass
class Network:
    """Queues (name → rate in work per second, in insertion order) and flows (by id)."""

    queues: dict[str, float] = field(default_factory=dict)
    flows: list[Flow] = field(default_factory=list)
    _at: dict[tuple[str, int], list[Flow]] = field(default_factory=dict, repr=False)
    _order: dict[str, int] = field(default_factory=dict, repr=False)

    def add_queue(self, name: str, rate: float) -> None:
        if name in self.queues and self.queues[name] != rate:
            raise ValueError(f"queue {name} added twice with different rates")
        self.queues[name] = rate

    def add_flow(self, flow: Flow) -> None:
        if not 1 <= len(flow.path) <= 2:
            raise ValueError(f"flow {flow.id}: paths of one or two queues are supported")
        for q in flow.path:
            if q not in self.queues:
                raise ValueError(f"flow {flow.id}: unknown queue {q}")
        self.flows.append(flow)
        for hop, q in enumerate(flow.path):
            self._at.setdefault((q, hop), []).append(flow)

    def flows_at(self, queue: str, hop: int) -> list[Flow]:
        """Flows whose ``hop``-th queue is ``queue``, in flow order."""
        return self._at.get((queue, hop), [])

    def queue_order(self, name: str) -> int:
        """Position of a queue in insertion order (the reference iterates queues by id)."""
        if len(self._order) != len(self.queues):
            self._order = {q: i for i, q in enumerate(self.queues)}
        return self._order[name]


# ------------------------------------------------------------------------------- SNC-Meister
def feeder_groups(net: Network, flow: Flow) -> Iterator[tuple[str, list[Flow], list[Flow]]]:
    """The competitors of a two-hop ``flow`` at every first queue feeding its second queue
    (thesis Appendix A.4, steps 1–3), in queue order: ``(queue, shared, non_shared)``.

    A feeding queue's competitors are its flows (first hop there, ours excluded) of priority
    ``>=`` the lowest (largest number) among its flows into our second queue of priority ``>=``
    ours. ``shared`` go on to our second queue (``X`` at our first queue, ``Zi`` elsewhere), the
    others are ``non_shared`` (``Y`` at our first queue, ``Ri`` elsewhere); both in flow order.
    """
    second = flow.path[1]
    feeders: dict[str, int] = {}
    for f in net.flows_at(second, 1):
        if f.priority <= flow.priority:
            feeders[f.path[0]] = max(feeders.get(f.path[0], f.priority), f.priority)
    for queue in sorted(feeders, key=net.queue_order):
        lowest = feeders[queue]
        shared: list[Flow] = []
        non_shared: list[Flow] = []
        for f in net.flows_at(queue, 0):
            if f.priority <= lowest and f.id != flow.id:
                (shared if len(f.path) > 1 and f.path[1] == second else non_shared).append(f)
        yield queue, shared, non_shared


def snc_meister(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC-Meister's latency bound (seconds) of ``flow`` (thesis Appendix A.4)."""
    if len(flow.path) == 1:
        queue = flow.path[0]
        others = [
            f.arrival
            for f in net.flows_at(queue, 0)
            if f.priority <= flow.priority and f.id != flow.id
        ]
        service: Bound = ConstantService(net.queues[queue])
        if others:
            service = Leftover(service, aggregate_all(others))
        return LatencyBound(flow.arrival, service, flow.eps).latency_at_best_theta().item()

    first, second = flow.path
    first_service: Bound | None = None
    shared_first: Bound | None = None
    second_arrivals: list[Bound] = []
    for queue, shared_flows, non_shared_flows in feeder_groups(net, flow):
        shared = [f.arrival for f in shared_flows]
        non_shared = [f.arrival for f in non_shared_flows]
        service: Bound = ConstantService(net.queues[queue])  # type: ignore[no-redef]
        if non_shared:
            service = Leftover(service, aggregate_all(non_shared))
        if queue == first:
            first_service = service  # S1 ⊖ A_Y
            if shared:
                shared_first = aggregate_all(shared)  # A_X
        elif shared:
            second_arrivals.append(Output(aggregate_all(shared), service))  # D_Zi
    assert first_service is not None
    second_service: Bound = ConstantService(net.queues[second])
    if second_arrivals:
        second_service = Leftover(second_service, aggregate_all(second_arrivals))
    total: Bound = Convolution(first_service, second_service)
    if shared_first is not None:
        total = Leftover(total, shared_first)
    return LatencyBound(flow.arrival, total, flow.eps).latency(search)


# ------------------------------------------------------------------- hop-by-hop, convolution
def _competitors_in_order(net: Network, flow: Flow) -> list[Flow]:
    others = [f for f in net.flows if f.priority <= flow.priority and f.id != flow.id]
    others.sort(key=lambda f: (f.priority, -f.latency, f.id))
    return [*others, flow]


def hop_by_hop(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC hop-by-hop latency bound (seconds) of ``flow`` (thesis Appendix A.3, approach 1)."""
    leftover: dict[str, Bound] = {q: ConstantService(r) for q, r in net.queues.items()}
    total = 0.0
    for f in _competitors_in_order(net, flow):
        arrival = f.arrival
        for queue in f.path:
            service = leftover[queue]
            if f is flow:
                total += LatencyBound(arrival, service, f.eps / len(f.path)).latency(search)
            leftover[queue] = Leftover(service, arrival)
            arrival = Output(arrival, service)
    return total


def convolution(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC convolution latency bound (seconds) of ``flow`` (thesis Appendix A.3, approach 2)."""
    leftover: dict[str, Bound] = {q: ConstantService(r) for q, r in net.queues.items()}
    result = float("inf")
    for f in _competitors_in_order(net, flow):
        if f is flow:
            service = leftover[f.path[0]]
            for queue in f.path[1:]:
                service = Convolution(service, leftover[queue])
            result = LatencyBound(f.arrival, service, f.eps).latency(search)
        arrival = f.arrival
        for queue in f.path:
            service = leftover[queue]
            leftover[queue] = Leftover(service, arrival)
            arrival = Output(arrival, service)
    return result


#: The analysis layer's table of its per-flow analyses, by the names the bounds carry. Only
#: :func:`flow_latencies` reads it; users name an analysis through the policy registry
#: (:mod:`tailbound.policies.registry`, whose SNC admission entries are exactly these keys).
ANALYSIS_FUNCTIONS: dict[str, Callable[[Network, Flow, str], float]] = {
    "snc-meister": snc_meister,
    "snc-hop-by-hop": hop_by_hop,
    "snc-convolution": convolution,
}


def flow_latencies(
    net: Network, analysis: str = "snc-meister", search: str = "reference"
) -> dict[int, float]:
    """Every flow's latency bound (seconds) under ``analysis``, in flow order; each result is
    also stored in ``flow.latency`` (the classic analyses use it to order ties).

    ``search`` chooses the Hölder search of dependent expressions: ``"reference"`` replays the
    reference implementation's seeded random search, ``"deterministic"`` runs the core's joint
    search (:mod:`tailbound.snc.tree`); independent expressions use the reference ``theta``
    search either way."""
    try:
        fn = ANALYSIS_FUNCTIONS[analysis]
    except KeyError:
        known = ", ".join(ANALYSIS_FUNCTIONS)
        raise ValueError(f"unknown analysis {analysis!r} (known: {known})") from None
    done: dict[int, float] = {}
    if analysis == "snc-meister":
        # The independent two-hop case for all flows at once (same numbers, much faster).
        from tailbound.snc.fast import snc_meister_all

        done = snc_meister_all(net, [f for f in net.flows if len(f.path) == 2]) or {}
    todo = [f for f in net.flows if f.id not in done]
    if analysis == "snc-meister" and search == "deterministic" and todo:
        # Each flow's expression is its own; the core's search releases the GIL, so the flows
        # run on the machine's cores (SNC-Meister reads no other flow's result). Imported only
        # when flows are left: concurrent.futures (and the logging it imports) cost ~6 ms of
        # `tailbound bound`'s cold start.
        import os
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
            results = list(pool.map(lambda f: fn(net, f, search), todo))
        done.update(zip([f.id for f in todo], results, strict=True))
    out: dict[int, float] = {}
    for f in net.flows:
        f.latency = done[f.id] if f.id in done else fn(net, f, search)
        out[f.id] = f.latency
    return out
