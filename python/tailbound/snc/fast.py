"""SNC-Meister for every flow at once: the independent two-hop case as arrays over flows.

Without dependency groups, SNC-Meister's expression has one fixed shape for every two-hop flow
(thesis Appendix A.4, Eq. A.5)::

    S = ((S1 ⊖ A_Y) ⊗ (V1 ⊖ ⊕_i (A_Zi ⊘ (Si ⊖ A_Ri)))) ⊖ A_X,     L = Latency(A_W, S, eps)

and every operand is independent, so every aggregate is a sum of its sources' ``rho`` (all
``sigma = 0``). This module evaluates that shape for all flows together: at each level of the
``theta`` search one call per *source* (over the rows of every flow that uses it) and a few array
operations over flows, instead of one operator tree per flow. It computes the same numbers as
:func:`tailbound.snc.network.snc_meister` (the general path; tests compare both) up to the order of
floating-point sums, and falls back to it for anything else (dependency groups, one-hop flows).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tailbound.snc.bounds import STEP_S, Bound, _log1m_exp
from tailbound.snc.flows import Flow, Network, feeder_groups
from tailbound.snc.latency import search_theta, theorem1_steps
from tailbound.snc.mmpp import MmppArrival, MmppModel

if TYPE_CHECKING:
    import numpy as np

    from tailbound.snc.bounds import Array
else:
    from tailbound.lazy import numpy as np

ROLES = ("w", "x", "y")


@dataclass
class _Plan:
    """Which source feeds which term of which flow's expression."""

    flows: list[Flow]
    # per flow, as lists (the Rust search takes them as they are; the numpy engine converts)
    c1: list[float]
    c2: list[float]
    eps: list[float]
    pair_flow: list[int] = field(default_factory=list)
    pair_c: list[float] = field(default_factory=list)
    # model id -> role -> rows (flow index for w/x/y, pair index for z/r)
    uses: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    models: dict[int, MmppModel] = field(default_factory=dict)
    pole: list[float] = field(default_factory=list)

    def use(self, arrival: Bound, role: str, row: int) -> None:
        assert isinstance(arrival, MmppArrival)  # checked by _independent
        key = id(arrival.model)
        uses = self.uses.get(key)
        if uses is None:  # not setdefault: that would build a defaultdict per call
            self.models[key] = arrival.model
            uses = self.uses[key] = defaultdict(list)
        uses[role].append(row)


def _independent(net: Network) -> bool:
    return all(isinstance(f.arrival, MmppArrival) and len(f.arrival.deps) == 1 for f in net.flows)


def _plan(net: Network, flows: list[Flow]) -> _Plan:
    plan = _Plan(
        flows=flows,
        c1=[net.queues[f.path[0]] * STEP_S for f in flows],
        c2=[net.queues[f.path[1]] * STEP_S for f in flows],
        eps=[f.eps for f in flows],
    )
    poles = []
    # A flow's pole is the smallest of its sources' poles; each model's is computed once.
    model_pole: dict[int, float] = {}

    def pole_of(f: Flow) -> float:
        assert isinstance(f.arrival, MmppArrival)  # checked by _independent
        key = id(f.arrival.model)
        if key not in model_pole:
            model_pole[key] = f.arrival.pole()
        return model_pole[key]

    for row, flow in enumerate(flows):
        first = flow.path[0]
        pole = [pole_of(flow)]
        plan.use(flow.arrival, "w", row)
        for queue, shared, non_shared in feeder_groups(net, flow):
            pole += [pole_of(f) for f in (*shared, *non_shared)]
            if queue == first:
                for f in shared:
                    plan.use(f.arrival, "x", row)
                for f in non_shared:
                    plan.use(f.arrival, "y", row)
            elif shared:
                pair = len(plan.pair_flow)
                plan.pair_flow.append(row)
                plan.pair_c.append(net.queues[queue] * STEP_S)
                for f in shared:
                    plan.use(f.arrival, "z", pair)
                for f in non_shared:
                    plan.use(f.arrival, "r", pair)
        poles.append(min(pole))
    plan.pole = poles
    return plan


def _latency_steps(plan: _Plan, theta: Array) -> Array:
    """Latency (steps) of every flow (rows of ``theta``, shape ``(flows, k)``)."""
    pairs = len(plan.pair_flow)
    sums = {role: np.zeros(theta.shape) for role in ROLES}
    pair_flow = np.asarray(plan.pair_flow, dtype=np.intp)
    pair_theta = theta[pair_flow] if pairs else np.zeros((0, theta.shape[1]))
    z = np.zeros(pair_theta.shape)
    r = np.zeros(pair_theta.shape)
    # At and beyond a flow's pole its latency is infinite whatever this source gives: skip them.
    row_pole = np.broadcast_to(np.asarray(plan.pole)[:, None], theta.shape)
    pair_pole = row_pole[pair_flow] if pairs else np.zeros(pair_theta.shape)
    for key, uses in plan.uses.items():
        model = plan.models[key]
        parts = [(theta, row_pole, uses[role]) for role in ROLES if uses.get(role)]
        parts += [(pair_theta, pair_pole, uses[role]) for role in ("z", "r") if uses.get(role)]
        wanted = np.concatenate([t[i] for t, _, i in parts])
        needed = wanted < np.concatenate([p[i] for _, p, i in parts])
        values = np.full(wanted.shape, np.inf)
        values[needed] = model.rho(wanted[needed])
        at = 0
        for role in ROLES:
            if uses.get(role):
                n = len(uses[role])
                # np.add.at, not +=: a model shared by several flows (same trace) appears
                # several times in one row.
                np.add.at(sums[role], uses[role], values[at : at + n])
                at += n
        for role, target in (("z", z), ("r", r)):
            if uses.get(role):
                n = len(uses[role])
                np.add.at(target, uses[role], values[at : at + n])
                at += n
    # departures of the other first queues into V1: D_Zi = A_Zi ⊘ (Si ⊖ A_Ri)
    rho_d = np.zeros(theta.shape)
    sigma_d = np.zeros(theta.shape)
    if pairs:
        c = np.asarray(plan.pair_c)[:, None]
        with np.errstate(invalid="ignore"):
            sigma_pair = -_log1m_exp(pair_theta * (z + (r - c))) / pair_theta
        np.add.at(rho_d, pair_flow, z)
        np.add.at(sigma_d, pair_flow, sigma_pair)
    with np.errstate(invalid="ignore"):
        r1 = sums["y"] + -np.asarray(plan.c1)[:, None]
        r2 = rho_d + -np.asarray(plan.c2)[:, None]
        r1 = np.where(r1 == r2, 0.99 * r1, r1)
        sigma_conv = sigma_d - _log1m_exp(-theta * np.abs(r1 - r2)) / theta
        rho_s = sums["x"] + np.maximum(r1, r2)
        rho_a = sums["w"]
    # Theorem 1 with sigma_A = 0 (MMPP arrivals) and sigma_S that of the convolution.
    eps = np.asarray(plan.eps)[:, None]
    return theorem1_steps(theta, rho_a, np.zeros(theta.shape), rho_s, sigma_conv, eps)


def _best_theta(plan: _Plan) -> Array:
    """The reference ``theta`` search (see :mod:`tailbound.snc.latency`), all flows at once."""
    return search_theta(lambda grid: _latency_steps(plan, grid), np.asarray(plan.pole)[:, None])


def _rows(plan: _Plan, index: dict[int, int], role: str, count: int) -> list[list[int]]:
    """Source indexes per row for ``role``, summed in the numpy path's order."""
    rows: list[list[int]] = [[] for _ in range(count)]
    for key, uses in plan.uses.items():
        for row in uses.get(role, ()):
            rows[row].append(index[key])
    return rows


def _search_rust(plan: _Plan) -> tuple[list[float], list[float]]:
    """Best ``theta`` and latency (steps) per flow, by the Rust core's search (one call; the
    models go in as the core holds them and the results come back as lists: no numpy)."""
    from tailbound._core import SncNetwork

    net = SncNetwork()
    index = {key: net.add_mmpp(m.core) for key, m in plan.models.items()}
    flows, pairs = len(plan.flows), len(plan.pair_flow)
    w, x, y = (_rows(plan, index, role, flows) for role in ROLES)
    for f in range(flows):
        net.add_flow(plan.c1[f], plan.c2[f], plan.eps[f], plan.pole[f], w[f], x[f], y[f])
    z, r = (_rows(plan, index, role, pairs) for role in ("z", "r"))
    for k, (flow, c) in enumerate(zip(plan.pair_flow, plan.pair_c, strict=True)):
        net.add_feeder(flow, float(c), z[k], r[k])
    return net.search()


def snc_meister_all(
    net: Network, flows: list[Flow], engine: str = "rust"
) -> dict[int, float] | None:
    """SNC-Meister bounds (seconds) of the two-hop ``flows`` of ``net``, all at once; ``None``
    when the network has dependencies (use the general path).

    ``engine="rust"`` runs the whole theta search in the Rust core (``tailbound_core::snc_fast``:
    one ``_core.SncNetwork`` built from the plan, one ``search()``); ``"numpy"`` is the array
    implementation above, level by level (kept as the reference the Rust search is tested
    against).
    """
    if not flows or not _independent(net):
        return None
    plan = _plan(net, flows)
    if engine == "rust":
        _, steps = _search_rust(plan)
        latency = [s * STEP_S for s in steps]
    elif engine == "numpy":
        theta = _best_theta(plan)
        latency = (_latency_steps(plan, theta[:, None])[:, 0] * STEP_S).tolist()
    else:
        raise ValueError(f"unknown engine {engine!r}: expected 'rust' or 'numpy'")
    return {f.id: float(v) for f, v in zip(flows, latency, strict=True)}
