"""The SNC latency bound and its optimisation over ``theta`` and the Hölder parameters.

Thesis Theorem 1 (Appendix A.2), with ``A`` evaluated at ``x theta`` and ``S`` at ``y theta``
(``x = y = 1`` when they are independent)::

    L(theta) = [ log(eps (1 - exp(theta (rho_A + rho_S)))) / theta - (sigma_A + sigma_S) ] / rho_S

in steps, times :data:`~tailbound.snc.bounds.STEP_S` for seconds, where ``eps = 1 - p`` is the
violation probability. ``Pr[latency > L(theta)] <= eps`` for every ``theta > 0``: the optimiser
only has to find a good ``theta``. A ``theta`` where the queue is unstable
(``rho_A + rho_S >= 0``) or an MGF is infinite yields ``inf``; if every ``theta`` does, the bound is
``inf`` (never an exception).

``theta`` search (thesis §4.2.5): a coarse-to-fine sweep. It starts at ``theta = 1000`` and, for
step sizes ``100, 10, 1, ..., 1e-9``, evaluates ``theta' = max(theta - 10 step, 1e-9), +step, ...
<= theta + 10 step`` (one vectorised evaluation per level) and keeps the first minimum. This is the
reference implementation's schedule, so our bounds agree with it to rounding.

Hölder search (dependent case): the reference implementation's randomised shrinking search,
replayed exactly (same C-library random sequence, seed 1): 25 rounds of ``10 k`` candidates for
``k`` dependent nodes, each candidate drawing for every node either ``x`` or ``y`` uniformly in its
current range; after a round every node is set to the best candidate so far and its ranges
shrink by 1.2 around it. We evaluate a whole round's candidates in one vectorised pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tailbound.snc.bounds import STEP_S, Bound
from tailbound.snc.crand import CRand

if TYPE_CHECKING:
    import numpy as np

    from tailbound.snc.bounds import Array, Param
else:
    from tailbound.lazy import numpy as np

MIN_THETA = 1e-9
INITIAL_THETA = 1000.0
DECREASE = 10.0
HOLDER_ROUNDS = 25
HOLDER_SHRINK = 1.2


def theorem1_steps(
    theta: Array, rho_a: Array, sigma_a: Array, rho_s: Array, sigma_s: Array, eps: Param
) -> Array:
    """Thesis Theorem 1, elementwise: the latency bound ``L(theta)`` in steps of
    :data:`~tailbound.snc.bounds.STEP_S` seconds from the arrival's and the service's MGF bounds
    (``rho`` in work per step, ``sigma`` in work, already evaluated at ``x theta`` and
    ``y theta``) and the violation probability ``eps``; ``inf`` where the queue is unstable
    (``rho_a + rho_s >= 0``), the service guarantees nothing or a term is not finite.

    >>> one = np.array([1.0])
    >>> round(float(theorem1_steps(one, 0.5 * one, 0 * one, -one, 0 * one, 1e-3)[0]), 4)
    7.8405
    """
    with np.errstate(all="ignore"):
        z = theta * (rho_a + rho_s)
        log_term = np.log(eps * -np.expm1(z))
        latency = (log_term / theta - (sigma_a + sigma_s)) / rho_s
    ok = (z < 0) & (rho_s < 0) & np.isfinite(latency)
    return np.where(ok, latency, np.inf)


def search_theta(latency_steps: Callable[[Array], Array], pole: Array) -> Array:
    """The reference coarse-to-fine ``theta`` search (module docstring), one search per row.

    ``latency_steps`` maps a grid of ``theta`` (shape ``(rows, k)``, per unit of work) to the
    latency in steps of every point; ``pole`` (shape ``(rows, 1)``) is a ``theta`` at and beyond
    which a row's latency is infinite. Returns the chosen ``theta`` of every row (shape
    ``(rows,)``).
    """
    rows = pole.shape[0]
    theta = np.full(rows, INITIAL_THETA)
    step = INITIAL_THETA / DECREASE
    while step >= MIN_THETA:
        lo = np.maximum(theta - DECREASE * step, MIN_THETA)
        hi = theta + DECREASE * step
        count = int(np.max(np.floor((hi - lo) / step))) + 3
        increments = np.full((rows, count), step)
        increments[:, 0] = lo
        grid = np.cumsum(increments, axis=1)  # sequential sums, like `x += step`
        # Beyond the pole every value is infinite: a level whose grid lies there (after its
        # first point) ends at its first point without evaluating anything.
        if np.all((grid[:, 1:] >= pole) | (grid[:, 1:] > hi[:, None])):
            theta = lo
            step /= DECREASE
            continue
        values = latency_steps(grid)
        values = np.where(grid <= hi[:, None], values, np.inf)
        pick = np.argmin(values, axis=1)
        found = np.isfinite(values[np.arange(rows), pick])
        theta = np.where(found, grid[np.arange(rows), pick], lo)
        step /= DECREASE
    return theta


class LatencyBound:
    """Latency of arrivals ``arrival`` through service ``service`` at violation prob. ``eps``.

    >>> from tailbound.snc.bounds import ConstantService, FixedBound
    >>> a = FixedBound(lambda t: 0.5 + 0 * t, deps={1})  # deterministic 0.5 work/step
    >>> s = ConstantService(1e5)                         # 1 work/step
    >>> L = LatencyBound(a, s, 1e-3)
    >>> round(float(L.latency_steps(np.array([1.0]))[0]), 4)  # -log(1e-3 (1 - e^-0.5))
    7.8405
    """

    def __init__(self, arrival: Bound, service: Bound, eps: float) -> None:
        if not 0 < eps < 1:
            raise ValueError(f"violation probability must be in (0, 1), got {eps}")
        self.arrival, self.service, self.eps = arrival, service, eps
        # The bound itself is a Hölder node when arrival and service share a flow.
        self.node = Bound()
        self.node._combine(arrival, service)
        self.dependent_nodes = self.node.dependent_nodes

    def latency_steps(self, theta: Array) -> Array:
        """``L(theta)`` in steps, elementwise; ``inf`` where the bound does not exist."""
        theta = np.asarray(theta, dtype=np.float64)
        ra, sa, rs, ss = self.node.operand_bounds(theta)
        return theorem1_steps(theta, ra, sa, rs, ss, self.eps)

    def latency_s(self, theta: Array) -> Array:
        """``L(theta)`` in seconds."""
        return self.latency_steps(theta) * STEP_S

    # --------------------------------------------------------------------- theta search
    def best_theta(self, batch: int | None = None) -> Array:
        """The reference coarse-to-fine ``theta`` search; vectorised over a batch of Hölder
        candidates when the nodes' parameters hold arrays of shape ``(batch, 1)``."""
        rows = 1 if batch is None else batch
        pole = np.broadcast_to(self.node.pole_of(self.arrival, self.service), (rows, 1))
        return search_theta(self.latency_steps, pole)

    def latency_at_best_theta(self, batch: int | None = None) -> Array:
        """Latency in seconds at the searched ``theta`` (one value per batch row)."""
        theta = self.best_theta(batch)
        if batch is None:
            return self.latency_s(theta)
        return self.latency_s(theta[:, None])[:, 0]

    def latency(self, search: str = "reference") -> float:
        """The latency bound in seconds: ``theta`` searched, Hölder parameters (if any)
        searched as in the reference implementation (they are left at their best values), or,
        with ``search="deterministic"``, by the core's joint search of ``theta`` and the
        parameters (:mod:`tailbound.snc.tree`; the parameters are left untouched)."""
        if search not in ("reference", "deterministic"):
            raise ValueError(f"unknown search {search!r}: 'reference' or 'deterministic'")
        nodes = self.dependent_nodes
        if nodes and search == "deterministic":
            from tailbound.snc.tree import Unsupported, search_latency

            try:
                return search_latency(self.arrival, self.service, self.node, self.eps).latency_s
            except Unsupported:
                pass  # a node the core does not know: the reference search below
        best = float(self.latency_at_best_theta()[0])
        if not nodes:
            return best
        rand = CRand(1)
        count = len(nodes) * 10
        unique = list(dict.fromkeys(nodes))
        best_x = [n.x for n in nodes]
        for _ in range(HOLDER_ROUNDS):
            draws = rand.uniform((count, len(nodes)))  # rand() / RAND_MAX, row per candidate
            xs: dict[int, Array] = {}
            ys: dict[int, Array] = {}
            for j, node in enumerate(nodes):
                range_x = node.x_range[1] - node.x_range[0]
                range_y = node.y_range[1] - node.y_range[0]
                r = draws[:, j] * (range_x + range_y)
                x_direct = node.x_range[0] + r
                y_direct = node.y_range[0] + (r - range_x)
                with np.errstate(divide="ignore"):
                    x = np.where(r <= range_x, x_direct, 1.0 / (1.0 - 1.0 / y_direct))
                    y = np.where(r <= range_x, 1.0 / (1.0 - 1.0 / x_direct), y_direct)
                xs[id(node)], ys[id(node)] = x, y  # the last occurrence of a node wins
            saved = [(n.x, n.y) for n in unique]
            for n in unique:
                n.x, n.y = xs[id(n)][:, None], ys[id(n)][:, None]
            values = self.latency_at_best_theta(count)
            chosen = [(xs[id(n)], ys[id(n)]) for n in nodes]
            for n, (old_x, old_y) in zip(unique, saved, strict=True):
                n.x, n.y = old_x, old_y
            i = int(np.argmin(values))
            if values[i] < best:
                best = float(values[i])
                best_x = [float(c[0][i]) for c in chosen]
            for node, x_value in zip(nodes, best_x, strict=True):
                node.set_x(x_value)
                range_x = (node.x_range[1] - node.x_range[0]) / HOLDER_SHRINK
                range_y = (node.y_range[1] - node.y_range[0]) / HOLDER_SHRINK
                low_x = max(float(node.x) - range_x / 2.0, 1.001)
                low_y = max(float(node.y) - range_y / 2.0, 1.001)
                node.x_range = (low_x, low_x + range_x)
                node.y_range = (low_y, low_y + range_y)
        return best


def latency_bound(arrival: Bound, service: Bound, eps: float) -> float:
    """The latency bound (seconds) of ``arrival`` through ``service`` at violation ``eps``."""
    return LatencyBound(arrival, service, eps).latency()
