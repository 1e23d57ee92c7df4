"""The network SNC analyses run on: queues, flows, and SNC-Meister's feeder groups.

A :class:`Network` holds queues (constant-rate servers, work per second) and flows. A :class:`Flow`
is one direction of a tenant's traffic: its arrival process (an MGF bound), its path (one or two
queues), its priority (smaller number = higher priority) and its violation probability ``eps``.
:func:`feeder_groups` lists a two-hop flow's competitors at every queue feeding its second queue
(thesis Appendix A.4, steps 1–3). The analyses are :mod:`tailbound.snc.network` (per flow) and
:mod:`tailbound.snc.fast` (all independent two-hop flows at once); both build on this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tailbound.snc.bounds import Bound


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
