"""PriorityMeister's latency analysis: the LP of thesis §3.2.3, solved with HiGHS.

A tagged flow ``w`` crosses queues ``q_0 … q_{n−1}`` (one stage's queues: a network stage's
client and server links, or the storage device). Other flows share some of them; a flow more
important than ``w`` at a queue (or equally important: FIFO inside a level) interferes, a less
important one can only block for one non-preemptible request (``blocking_s``). Every flow
is shaped by its token buckets ``(r_i, b_i)`` (several at once: PriorityMeister's multiple rate
limiters, §3.2.1) where it enters ``w``'s path.

Variables (thesis notation): per queue ``t_in^q <= t_out^q`` (the backlog period ending when
``w``'s last bit leaves), per flow ``k`` and queue ``q`` the cumulative arrivals ``R_k^q`` by
``t_in^q`` and services ``R'_k^q`` by ``t_out^q``, the blocking ``λ^q``, the tagged bit's arrival
time ``s`` and the amount ``y`` served. Constraints:

- time: ``t_in^q <= t_out^q``; ``t_out^{q'} = t_in^q`` for ``q'`` feeding ``q``; ``t_in^{q_0} = 0``;
- flow: ``R_k^q <= R'_k^q``; and ``R_k^q = R'_k^{q'}`` when ``k`` goes from ``q'`` to ``q``
  (no propagation delay: what left ``q'`` by ``t_out^{q'}`` has arrived at ``q`` by ``t_in^q``);
- rate limits, one per bucket of each interfering ``k`` with entry queue ``q*`` on the path:
  ``R'_k^q − R_k^{q*} <= r_i (t_out^q − t_in^{q*}) + b_i``; for a flow of ``w``'s own level at
  ``q_0`` (served FIFO with ``w``) only what arrived before ``w``'s bit counts: ``t_out`` is
  replaced by ``s``;
- work conservation: ``Σ_k (R'_k^q − R_k^q) + λ^q = C_q (t_out^q − t_in^q)``, ``0 <= λ^q <= L_q``;
- the tagged flow: ``y = R'_w^{q_{n−1}} − R_w^{q_0}``, and ``y <= b_i + r_i (s − t_in^{q_0})``
  for ``w``'s own buckets (its last bit arrived at ``s`` at the earliest), ``s >= t_in^{q_0}``.

:func:`service_inverse` fixes ``y`` and maximises ``t_out^{q_{n−1}} − t_in^{q_0}``: ``β_w^{-1}(y)``,
the thesis' LP; sampled over ``y`` it traces ``w``'s service curve. :func:`lp_delay` lets ``y``
and ``s`` free and maximises ``t_out^{q_{n−1}} − s``: the horizontal deviation
``max_y β^{-1}(y) − α^{-1}(y)`` between ``w``'s arrival curve ``α = min_i (r_i t + b_i)`` and that
service curve in one LP, exact where sampling ``y`` would miss the maximiser. Unbounded (a queue
at or above capacity) gives ``inf``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import highspy
import numpy as np

from tailbound.dnc.device import DeviceLimits
from tailbound.dnc.highs import solver

_INF = highspy.kHighsInf
Bucket = tuple[float, float]


@dataclass(frozen=True)
class LpFlow:
    """A flow as the analysis sees it on the tagged flow's path.

    ``queues`` are the queue names it crosses in order, ``priority`` its level at each (0 is the
    most important, as in :class:`tailbound.plan.Plan`), ``buckets`` its token buckets
    ``(rate, size_s)`` where it enters the path (rates as utilisations, sizes in seconds of
    work), ``max_request_s`` its largest request in seconds of work (what it can block a more
    important flow for at a non-preemptive queue).
    """

    name: str
    queues: tuple[str, ...]
    priority: Mapping[str, int]
    buckets: tuple[Bucket, ...]
    max_request_s: float = 0.0

    def level(self, queue: str) -> int:
        return int(self.priority[queue])


@dataclass
class _Lp:
    """A maximisation LP under construction, rows ``lo <= a·x <= hi``."""

    col_lo: list[float] = field(default_factory=list)
    col_hi: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    rows: list[tuple[dict[int, float], float, float]] = field(default_factory=list)
    #: rate-limit rows of flows served FIFO with the tagged flow, whose end time (``s`` or
    #: ``t_out``) the caller fills in: ``(row, rate)``
    fifo: list[tuple[int, float]] = field(default_factory=list)

    def var(self, lo: float = -_INF, hi: float = _INF) -> int:
        self.col_lo.append(lo)
        self.col_hi.append(hi)
        self.cost.append(0.0)
        return len(self.cost) - 1

    def row(self, coefs: Mapping[int, float], lo: float, hi: float) -> None:
        merged: dict[int, float] = {}
        for c, v in coefs.items():
            merged[c] = merged.get(c, 0.0) + v
        self.rows.append((merged, lo, hi))

    def maximise(self) -> float:
        h = solver()
        starts: list[int] = []
        index: list[int] = []
        value: list[float] = []
        for coefs, _, _ in self.rows:
            starts.append(len(index))
            index.extend(coefs.keys())
            value.extend(coefs.values())
        h.passModel(
            len(self.cost),
            len(self.rows),
            len(index),
            int(highspy.MatrixFormat.kRowwise),
            int(highspy.ObjSense.kMaximize),
            0.0,
            np.array(self.cost),
            np.array(self.col_lo),
            np.array(self.col_hi),
            np.array([r[1] for r in self.rows]),
            np.array([r[2] for r in self.rows]),
            np.array(starts, dtype=np.int32),
            np.array(index, dtype=np.int32),
            np.array(value, dtype=np.float64),
            np.zeros(len(self.cost), dtype=np.int32),
        )
        h.run()
        status = h.getModelStatus()
        unbounded = (
            highspy.HighsModelStatus.kUnbounded,
            highspy.HighsModelStatus.kUnboundedOrInfeasible,
        )
        if status in unbounded:
            return float("inf")
        if status != highspy.HighsModelStatus.kOptimal:
            name = h.modelStatusToString(status)
            raise RuntimeError(f"PriorityMeister LP: HiGHS ended with {name}")
        return float(h.getInfo().objective_function_value)


def _build(
    target: LpFlow,
    others: Sequence[LpFlow],
    capacity: Mapping[str, float] | None,
    blocking: bool,
    devices: Mapping[str, DeviceLimits] | None = None,
    fifo_first: bool = True,
) -> tuple[_Lp, list[int], list[int], int, int]:
    """The LP's common part; returns it, the ``t_in``/``t_out`` columns and the ``R_w^{q_0}`` and
    ``R'_w^{q_{n−1}}`` columns. Queues in ``devices`` are storage devices with several requests
    in service (:mod:`tailbound.dnc.device`): their level is shared, not FIFO, and their
    blocking is the work less important requests can have in service. Without ``fifo_first``
    the flows of ``w``'s level at ``q_0`` count in full, as more important ones do."""
    shared = devices or {}
    path = target.queues
    lp = _Lp()
    t_in, t_out = [], []
    for i, _ in enumerate(path):
        t_in.append(lp.var(0.0, 0.0) if i == 0 else lp.var())
        t_out.append(lp.var())
        lp.row({t_in[i]: -1.0, t_out[i]: 1.0}, 0.0, _INF)
        if i > 0:
            lp.row({t_out[i - 1]: 1.0, t_in[i]: -1.0}, 0.0, 0.0)
    position = {q: i for i, q in enumerate(path)}
    # per queue: the columns of (R, R') of every flow that counts there
    served: list[list[tuple[int, int]]] = [[] for _ in path]

    def chain(flow: LpFlow, on_path: list[int]) -> dict[int, tuple[int, int]]:
        cols: dict[int, tuple[int, int]] = {}
        prev = None
        for i in on_path:
            r, rp = lp.var(), lp.var()
            lp.row({r: -1.0, rp: 1.0}, 0.0, _INF)  # flow: R <= R'
            if prev is not None and prev[0] == i - 1:
                lp.row({r: 1.0, prev[1]: -1.0}, 0.0, 0.0)  # R^q = R'^{q'}
            cols[i] = (r, rp)
            prev = (i, rp)
        return cols

    w_cols = chain(target, list(range(len(path))))
    for i in range(len(path)):
        served[i].append(w_cols[i])
    lowest_blocker = [0.0] * len(path)
    for k in others:
        on = [position[q] for q in k.queues if q in position]
        for i in on:
            if k.level(path[i]) > target.level(path[i]):
                lowest_blocker[i] = max(lowest_blocker[i], k.max_request_s)
        counted = [i for i in on if k.level(path[i]) <= target.level(path[i])]
        if not counted:
            continue
        cols = chain(k, sorted(counted))
        entry = min(counted)
        r_entry = cols[entry][0]
        for i in counted:
            served[i].append(cols[i])
            # FIFO inside a level, except at a device: it shares its level by processor sharing
            fifo = (
                fifo_first
                and i == 0
                and k.level(path[0]) == target.level(path[0])
                and path[0] not in shared
            )
            for rate, size in k.buckets:
                row = {cols[i][1]: 1.0, r_entry: -1.0, t_in[entry]: rate}
                if not fifo:
                    row[t_out[i]] = -rate
                lp.row(row, -_INF, size)
                if fifo:
                    lp.fifo.append((len(lp.rows) - 1, rate))
    for i, q in enumerate(path):
        c = 1.0 if capacity is None else float(capacity.get(q, 1.0))
        coefs: dict[int, float] = {t_out[i]: -c, t_in[i]: c}
        for r, rp in served[i]:
            coefs[rp] = coefs.get(rp, 0.0) + 1.0
            coefs[r] = coefs.get(r, 0.0) - 1.0
        blocker = lowest_blocker[i]
        if q in shared:  # several requests in service: tailbound.dnc.device
            blocker = shared[q].blocking_by_work(blocker)
        if blocking and blocker > 0:
            coefs[lp.var(0.0, blocker)] = 1.0
        lp.row(coefs, 0.0, 0.0)
    return lp, t_in, t_out, w_cols[0][0], w_cols[len(path) - 1][1]


def lp_delay(
    target: LpFlow,
    others: Sequence[LpFlow],
    *,
    capacity: Mapping[str, float] | None = None,
    blocking: bool = True,
    devices: Mapping[str, DeviceLimits] | None = None,
    fifo_first: bool = True,
) -> float:
    """Worst-case delay (s) of ``target`` through its queues: ``max (t_out^{q_{n−1}} − s)`` over
    the LP of the module docstring (thesis §3.2.3), with ``y`` free. ``fifo_first=False`` drops
    the FIFO refinement at ``q_0`` (the flows of ``target``'s level there count in full), for a
    first queue that does not serve its level in order of arrival at it.

    Examples
    --------
    One queue, a more important flow with buckets (0.4, 10 ms): Eq. 5.1 gives
    ``(0.01 + 0.02) / (1 − 0.4) = 50 ms``.

    >>> hi = LpFlow("hi", ("q",), {"q": 0}, ((0.4, 0.01),))
    >>> w = LpFlow("w", ("q",), {"q": 1}, ((0.1, 0.02),))
    >>> round(lp_delay(w, [hi]), 9)
    0.05
    """
    lp, t_in, t_out, r_first, rp_last = _build(
        target, others, capacity, blocking, devices, fifo_first
    )
    shared = target.queues[0] in (devices or {})
    # at a device the tagged request shares service with the flow's later requests too
    # (processor sharing): its delay is bounded by its busy period, which starts with it
    y, s = lp.var(0.0), lp.var(0.0, 0.0 if shared else _INF)
    lp.row({rp_last: 1.0, r_first: -1.0, y: -1.0}, 0.0, 0.0)
    for rate, size in target.buckets:
        last = t_out[-1] if shared else s
        lp.row({y: 1.0, last: -rate, t_in[0]: rate}, -_INF, size)
    for row, rate in lp.fifo:
        lp.rows[row][0][s] = -rate
    lp.cost[t_out[-1]] = 1.0
    lp.cost[s] = -1.0
    return lp.maximise()


def service_inverse(
    target: LpFlow,
    others: Sequence[LpFlow],
    y: float,
    *,
    capacity: Mapping[str, float] | None = None,
    blocking: bool = True,
    devices: Mapping[str, DeviceLimits] | None = None,
) -> float:
    """``β_w^{-1}(y)``: the longest time (s) ``target`` can take to have ``y`` seconds of work
    served along its queues (thesis §3.2.3's objective). Flows of ``target``'s own level at its
    first queue count fully here (the FIFO refinement needs ``w``'s arrival time).

    Examples
    --------
    >>> hi = LpFlow("hi", ("q",), {"q": 0}, ((0.4, 0.01),))
    >>> w = LpFlow("w", ("q",), {"q": 1}, ((0.1, 0.02),))
    >>> round(service_inverse(w, [hi], 0.03), 9)  # (0.01 + 0.03) / 0.6
    0.066666667
    """
    lp, t_in, t_out, r_first, rp_last = _build(target, others, capacity, blocking, devices)
    lp.row({rp_last: 1.0, r_first: -1.0}, y, y)
    for row, rate in lp.fifo:
        lp.rows[row][0][t_out[0]] = -rate
    lp.cost[t_out[-1]] = 1.0
    lp.cost[t_in[0]] = -1.0
    return lp.maximise()
