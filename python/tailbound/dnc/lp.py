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
    #: ``(row, rate, position)``: the queue position whose FIFO it is
    fifo: list[tuple[int, float, int]] = field(default_factory=list)

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
        if status == highspy.HighsModelStatus.kUnknown:
            # HiGHS's simplex without presolve sometimes stops short on a badly scaled LP
            # (bound_sweep seed 9020); the same model with presolve is solved
            h.clearSolver()
            h.setOptionValue("presolve", "on")
            try:
                h.run()
            finally:
                h.setOptionValue("presolve", "off")
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
    breaks: frozenset[int] = frozenset(),
) -> tuple[_Lp, list[int], list[int], dict[int, tuple[int, int]]]:
    """The LP's common part; returns it, the ``t_in``/``t_out`` columns and the tagged flow's
    ``(R_w^q, R'_w^q)`` columns by queue position. Queues in ``devices`` are storage devices
    with several requests in service (:mod:`tailbound.dnc.device`): their level is shared, not
    FIFO, and their blocking is the work less important requests can have in service. Without
    ``fifo_first`` the flows of ``w``'s level at ``q_0`` count in full, as more important ones
    do. At the positions in ``breaks`` (a stage's first queue, :func:`path_delay`) the tagged
    flow's amounts are not carried over from the queue before: its tokens change unit there."""
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

    def chain(
        flow: LpFlow, on_path: list[int], cut: frozenset[int] = frozenset()
    ) -> dict[int, tuple[int, int]]:
        cols: dict[int, tuple[int, int]] = {}
        prev = None
        for i in on_path:
            r, rp = lp.var(), lp.var()
            lp.row({r: -1.0, rp: 1.0}, 0.0, _INF)  # flow: R <= R'
            if prev is not None and prev[0] == i - 1 and i not in cut:
                lp.row({r: 1.0, prev[1]: -1.0}, 0.0, 0.0)  # R^q = R'^{q'}
            cols[i] = (r, rp)
            prev = (i, rp)
        return cols

    w_cols = chain(target, list(range(len(path))), breaks)
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
                and (i == 0 or i in breaks)
                and k.level(path[i]) == target.level(path[i])
                and path[i] not in shared
            )
            for rate, size in k.buckets:
                row = {cols[i][1]: 1.0, r_entry: -1.0, t_in[entry]: rate}
                if not fifo:
                    row[t_out[i]] = -rate
                lp.row(row, -_INF, size)
                if fifo:
                    lp.fifo.append((len(lp.rows) - 1, rate, i))
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
    return lp, t_in, t_out, w_cols


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
    lp, t_in, t_out, w_cols = _build(target, others, capacity, blocking, devices, fifo_first)
    r_first, rp_last = w_cols[0][0], w_cols[len(target.queues) - 1][1]
    shared = target.queues[0] in (devices or {})
    # at a device the tagged request shares service with the flow's later requests too
    # (processor sharing): its delay is bounded by its busy period, which starts with it
    y, s = lp.var(0.0), lp.var(0.0, 0.0 if shared else _INF)
    lp.row({rp_last: 1.0, r_first: -1.0, y: -1.0}, 0.0, 0.0)
    for rate, size in target.buckets:
        last = t_out[-1] if shared else s
        lp.row({y: 1.0, last: -rate, t_in[0]: rate}, -_INF, size)
    for row, rate, _ in lp.fifo:
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
    lp, t_in, t_out, w_cols = _build(target, others, capacity, blocking, devices)
    r_first, rp_last = w_cols[0][0], w_cols[len(target.queues) - 1][1]
    lp.row({rp_last: 1.0, r_first: -1.0}, y, y)
    for row, rate, _ in lp.fifo:
        lp.rows[row][0][t_out[0]] = -rate
    lp.cost[t_out[-1]] = 1.0
    lp.cost[t_in[0]] = -1.0
    return lp.maximise()


@dataclass(frozen=True)
class PathFlow:
    """The tagged flow end to end: its stages in path order, each an :class:`LpFlow` with the
    stage's queues, levels and the flow's own buckets in that stage's tokens (seconds of
    service at the stage's queues).

    ``path_buckets`` (optional) bound, over every window of the flow's arrivals at the path's
    start, the sum over its requests of ``max_s u_j^s``: the largest of request ``j``'s works at
    the stages, all in seconds of service (the common unit), from the trace's r-b curve of that
    per-request maximum. ``max_work_s`` gives per stage the largest work of one request (a whole
    message on a network stage, not a packet); it is needed with ``path_buckets``.
    """

    name: str
    stages: tuple[LpFlow, ...]
    path_buckets: tuple[Bucket, ...] = ()
    max_work_s: tuple[float, ...] = ()


def _straddlers(queue: str, devices: Mapping[str, DeviceLimits]) -> int:
    """How many of the tagged flow's requests can be part-served at ``queue`` at one time: one
    on a link (FIFO inside the flow), a device's read and write MPLs together."""
    if queue in devices:
        return int(devices[queue].read_mpl + devices[queue].write_mpl)
    return 1


def path_delay(
    target: PathFlow,
    others: Sequence[LpFlow],
    *,
    capacity: Mapping[str, float] | None = None,
    blocking: bool = True,
    devices: Mapping[str, DeviceLimits] | None = None,
) -> float:
    """Worst-case delay (s) of ``target`` across all its stages in **one** LP (thesis §3.2.3 over
    the whole path: the time constraints chain every queue of every stage, ``t_out^{q'} =
    t_in^q``), fluid as :func:`lp_delay` (the caller adds packet store-and-forward terms).

    *Units*: every token is seconds of service at its queue, but a request's seconds differ
    from stage to stage (a read is a header on ``net_in``, a large reply on ``net_out``), so the
    tagged flow's amounts are not carried over a stage boundary. Per stage ``s`` its served work
    ``y_s = R'_w^{last_s} − R_w^{first_s}`` (stage seconds) is bounded by its stage buckets over
    the **end-to-end** window: ``y_s <= b_i + r_i (E_s − t_in^{q_0})``, valid because the buckets
    bound the trace's stage work at its arrival times (the path's start) and every request
    counted at a stage arrived at the path after ``t_in^{q_0}`` (the backlog chain empties it);
    ``E_s = s`` (the tagged request's arrival: FIFO inside the flow on links), or
    ``t_out^{q_{n−1}}`` from the first shared device on (a device serves the flow's later
    requests alongside, so they may be counted). The **common unit** joins the stages: the
    requests counted at different stages are disjoint (a request counted at stage ``s+1``
    arrived there after ``t_in^{first_{s+1}}``, when everything counted at ``s`` had left it)
    except those part-served at the last queue of ``s`` then (:func:`_straddlers`), so
    ``Σ_s y_s <= Σ_j max_s u_j^s + Σ_boundaries n_b · max(W_s, W_{s+1})
    <= b^P_i + r^P_i (E − t_in^{q_0}) + allowance`` for the ``path_buckets``: the flow's burst
    is paid once over the path instead of once per stage. Interfering flows stay per stage
    (each is shaped where its stage starts, in its own units). Objective ``t_out^{q_{n−1}} − s``.

    With one stage and no ``path_buckets`` this is :func:`lp_delay`.

    Examples
    --------
    Two one-link stages, alone; the flow sends ten requests of 5 ms of work at each stage at
    once (bursts of 50 ms, long-run rate 0.5). Per stage, each link's delay is 50 ms: 100 ms
    summed. End to end: the burst of the per-request maximum (50 ms) and one request part-served
    at the boundary (5 ms): 55 ms, exactly when the tenth request leaves the second link.

    >>> a = LpFlow("w/a", ("l1",), {"l1": 0}, ((0.5, 0.05),))
    >>> b = LpFlow("w/b", ("l2",), {"l2": 0}, ((0.5, 0.05),))
    >>> round(lp_delay(a, []) + lp_delay(b, []), 9)
    0.1
    >>> round(path_delay(PathFlow("w", (a, b), ((0.5, 0.05),), (0.005, 0.005)), []), 9)
    0.055
    """
    shared = devices or {}
    queues = tuple(q for st in target.stages for q in st.queues)
    if not queues:
        raise ValueError(f"path_delay: flow {target.name!r} crosses no queue")
    if len(set(queues)) != len(queues):
        raise ValueError(f"path_delay: flow {target.name!r} crosses a queue twice: {queues}")
    if target.path_buckets and len(target.max_work_s) != len(target.stages):
        raise ValueError(
            f"path_delay: flow {target.name!r}: max_work_s needs one value per stage "
            f"({len(target.stages)}), got {len(target.max_work_s)}"
        )
    levels = {q: st.level(q) for st in target.stages for q in st.queues}
    whole = LpFlow(target.name, queues, levels, ())
    spans: list[tuple[int, int]] = []
    for st in target.stages:
        lo = spans[-1][1] + 1 if spans else 0
        spans.append((lo, lo + len(st.queues) - 1))
    breaks = frozenset(lo for lo, _ in spans[1:])
    lp, t_in, t_out, w_cols = _build(whole, others, capacity, blocking, devices, True, breaks)
    s = lp.var(0.0)
    #: the tagged request's arrival at the first queue of each stage (FIFO there in its level)
    arrival = {0: s}
    after_device = False
    ys: list[int] = []
    end = s
    for st, (lo, hi) in zip(target.stages, spans, strict=True):
        after_device = after_device or any(q in shared for q in st.queues)
        end = t_out[-1] if after_device else s
        y = lp.var(0.0)
        lp.row({w_cols[hi][1]: 1.0, w_cols[lo][0]: -1.0, y: -1.0}, 0.0, 0.0)
        for rate, size in st.buckets:
            lp.row({y: 1.0, end: -rate, t_in[0]: rate}, -_INF, size)
        if lo > 0:
            # locally too: the flow enters the stage shaped by these buckets (as the per-stage
            # analysis assumes), so what is counted here arrived at the stage after
            # t_in^{first_s} and before the tagged request did (``a``, at most its departure
            # from the path), or, at a device, before the end of the device's backlog period
            here = any(q in shared for q in st.queues)
            local = t_out[hi] if here else lp.var()
            if not here:
                lp.row({local: 1.0, t_in[lo]: -1.0}, 0.0, _INF)
                lp.row({local: 1.0, t_out[-1]: -1.0}, -_INF, 0.0)
                arrival[lo] = local
            for rate, size in st.buckets:
                lp.row({y: 1.0, local: -rate, t_in[lo]: rate}, -_INF, size)
        ys.append(y)
    if target.path_buckets:
        allowance = sum(
            _straddlers(queues[spans[j][1]], shared)
            * max(target.max_work_s[j], target.max_work_s[j + 1])
            for j in range(len(spans) - 1)
        )
        for rate, size in target.path_buckets:
            row = dict.fromkeys(ys, 1.0)
            row[end] = row.get(end, 0.0) - rate
            row[t_in[0]] = rate
            lp.row(row, -_INF, size + allowance)
    for row_index, rate, position in lp.fifo:
        lp.rows[row_index][0][arrival[position]] = -rate
    lp.cost[t_out[-1]] = 1.0
    lp.cost[s] = -1.0
    return lp.maximise()
