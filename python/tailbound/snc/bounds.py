"""MGF bounds of arrival and service processes and the SNC operators that combine them.

Every process is a node of an expression tree (thesis §4.2.5). A node answers ``bound(theta)``
with the pair ``(rho(theta), sigma(theta))`` of its MGF bound (thesis Appendix A.1):

* arrival ``A``:  ``E[exp(theta A(m, n))]  <= exp(theta (rho_A(theta) (n - m) + sigma_A(theta)))``
* service ``S``:  ``E[exp(-theta S(m, n))] <= exp(theta (rho_S(theta) (n - m) + sigma_S(theta)))``

Time is discrete: ``n - m`` counts steps of :data:`STEP_S` seconds, so rates are work per step;
work is in the stage's unit (bytes on a link, device-seconds on storage). ``theta`` is per unit of
work and may be a numpy array of any shape: every operator is evaluated elementwise.

Dependencies (thesis Appendix A.2). Every node carries the set of flow ids its randomness comes
from. An operator whose two operands share a flow id uses the Hölder form of its theorem: the
first operand is evaluated at ``x·theta``, the second at ``y·theta`` with ``1/x + 1/y = 1``;
independent operands use ``x = y = 1``, which turns each Hölder form into the independent form.
The Hölder parameters are mutable attributes (``x``, ``y`` and their search ranges) because the
latency optimiser (:mod:`tailbound.snc.latency`) tunes them in place; they may hold numpy arrays
that broadcast against ``theta`` to evaluate many candidate parameter sets at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray
else:
    from tailbound.lazy import numpy as np


#: Length of one discrete time step in seconds (10 µs, as in the reference implementation).
STEP_S = 1e-5

#: Lower end of the Hölder search ranges (x, y > 1).
HOLDER_MIN = 1.001

if TYPE_CHECKING:
    Array = NDArray[np.float64]
    Param = float | Array


class Bound:
    """A node of an SNC expression: an arrival or a service process with its MGF bound.

    ``deps`` is the set of flow ids the process depends on. ``dependent`` is true when the two
    operands of this node share a flow id, in which case the Hölder parameters ``x`` and ``y`` are
    used (``1/x + 1/y = 1``); ``dependent_nodes`` lists this node (if dependent) followed by the
    dependent nodes of its operands, in the order the Hölder search visits them (duplicates kept:
    a node reached through two operands is visited twice).
    """

    is_arrival: bool = True

    def __init__(self, deps: Iterable[int] = ()) -> None:
        self.deps: frozenset[int] = frozenset(deps)
        self.dependent = False
        self.dependent_nodes: list[Bound] = []
        self.x: Param = 1.0
        self.y: Param = 1.0
        self.x_range = (1.0, 1.0)
        self.y_range = (1.0, 1.0)
        self.operands: tuple[Bound, Bound] | None = None

    # ------------------------------------------------------------------ Hölder parameters
    def _combine(self, first: Bound, second: Bound) -> None:
        """Record the operands' dependencies; switch to the Hölder form if they share a flow."""
        if first.deps & second.deps:
            self.dependent = True
            self.x_range = (HOLDER_MIN, 2.0)
            self.y_range = (HOLDER_MIN, 2.0)
            self.set_x(2.0)
            self.dependent_nodes.append(self)
        self.deps = first.deps | second.deps
        self.operands = (first, second)
        self.dependent_nodes.extend(first.dependent_nodes)
        self.dependent_nodes.extend(second.dependent_nodes)

    def set_x(self, x: Param) -> None:
        """Set the Hölder parameter of the first operand; ``y = 1 / (1 - 1/x)`` follows."""
        self.x = x
        self.y = 1.0 / (1.0 - 1.0 / np.asarray(x)) if np.ndim(x) else 1.0 / (1.0 - 1.0 / x)

    def set_y(self, y: Param) -> None:
        """Set the Hölder parameter of the second operand; ``x = 1 / (1 - 1/y)`` follows."""
        self.y = y
        self.x = 1.0 / (1.0 - 1.0 / np.asarray(y)) if np.ndim(y) else 1.0 / (1.0 - 1.0 / y)

    # ------------------------------------------------------------------ evaluation
    def bound(self, theta: Array) -> tuple[Array, Array]:
        """``(rho(theta), sigma(theta))`` elementwise for an array of ``theta > 0``."""
        raise NotImplementedError

    def operand_bounds(self, theta: Array) -> tuple[Array, Array, Array, Array]:
        """``(rho_1, sigma_1, rho_2, sigma_2)``: the first operand's bound at ``x theta`` and the
        second's at ``y theta`` (work per step, work), the evaluation every operator's theorem
        starts from (thesis Appendix A.2; ``x = y = 1`` when the operands are independent)."""
        assert self.operands is not None, "a leaf has no operands"
        first, second = self.operands
        r1, s1 = first.bound(self.x * theta)
        r2, s2 = second.bound(self.y * theta)
        return r1, s1, r2, s2

    def pole_of(self, first: Bound, second: Bound) -> Param:
        """The pole of this node applied to operands ``first`` and ``second``."""
        return np.minimum(first.pole() / self.x, second.pole() / self.y)

    def pole(self) -> Param:
        """A ``theta`` at and beyond which the bound is infinite (``inf`` if none is known):
        the smallest pole of the leaves, divided by the Hölder parameters on the way."""
        if self.operands is None:
            return np.inf
        return self.pole_of(*self.operands)


class ServiceBound(Bound):
    """A service process (``rho`` is negative: minus the guaranteed rate)."""

    is_arrival = False


class ArrivalBound(Bound):
    """An arrival process (``rho`` is non-negative: the effective rate)."""

    is_arrival = True


class ConstantService(ServiceBound):
    """A work-conserving server of constant rate: ``rho_S = -rate · STEP_S``, ``sigma_S = 0``.

    ``rate`` is work per second (bytes/s for a link, 1 device-second per second for a device);
    thesis §4.2.1, Table 4.1, second row.

    >>> ConstantService(125e6).bound(np.array([1e-4]))
    (array([-1250.]), array([0.]))
    """

    def __init__(self, rate: float) -> None:
        super().__init__()
        if not rate > 0:
            raise ValueError(f"a server's rate must be positive, got {rate}")
        self.rate = rate
        self.rate_per_step = rate * STEP_S

    def bound(self, theta: Array) -> tuple[Array, Array]:
        theta = np.asarray(theta, dtype=np.float64)
        return np.full(theta.shape, -self.rate_per_step), np.zeros(theta.shape)

    def __repr__(self) -> str:
        return f"ConstantService({self.rate:g})"


class FixedBound(Bound):
    """A process given directly by its ``rho`` and ``sigma`` functions (tests, examples)."""

    def __init__(
        self,
        rho: Callable[[Array], ArrayLike],
        sigma: Callable[[Array], ArrayLike] | None = None,
        *,
        deps: Iterable[int] = (),
        arrival: bool = True,
    ) -> None:
        super().__init__(deps)
        self.is_arrival = arrival
        self._rho = rho
        self._sigma = sigma

    def bound(self, theta: Array) -> tuple[Array, Array]:
        theta = np.asarray(theta, dtype=np.float64)
        rho = np.broadcast_to(np.asarray(self._rho(theta), dtype=np.float64), theta.shape)
        sigma = (
            np.zeros(theta.shape)
            if self._sigma is None
            else np.broadcast_to(np.asarray(self._sigma(theta), dtype=np.float64), theta.shape)
        )
        return rho, sigma


def _log1m_exp(z: Array) -> Array:
    """``log(1 - exp(z))`` with ``-inf`` (not NaN, no warning) where ``z >= 0`` (unstable)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.log(-np.expm1(z))
    return np.where(z < 0, out, -np.inf)


class Aggregate(ArrivalBound):
    """``A1 ⊕ A2``, the multiplexed arrivals of two flows (thesis Theorem 4).

    ``rho = rho_1(x theta) + rho_2(y theta)``, ``sigma = sigma_1(x theta) + sigma_2(y theta)``.

    >>> a = FixedBound(lambda t: 2 + t, deps={1})
    >>> b = FixedBound(lambda t: 3 * t, deps={2})
    >>> Aggregate(a, b).bound(np.array([1.0]))[0]  # independent: 3 + 3
    array([6.])
    >>> dep = FixedBound(lambda t: 3 * t, deps={1})
    >>> Aggregate(a, dep).bound(np.array([1.0]))[0]  # Hölder x = y = 2: 4 + 6
    array([10.])
    """

    def __init__(self, first: Bound, second: Bound) -> None:
        super().__init__()
        self.first, self.second = first, second
        self._combine(first, second)

    def bound(self, theta: Array) -> tuple[Array, Array]:
        r1, s1, r2, s2 = self.operand_bounds(theta)
        return r1 + r2, s1 + s2


class Leftover(ServiceBound):
    """``S ⊖ A``, the service left to lower-or-equal priority flows (thesis Theorem 2).

    ``rho = rho_A(x theta) + rho_S(y theta)``, ``sigma = sigma_A(x theta) + sigma_S(y theta)``.
    The result is a service process again; when ``rho >= 0`` it guarantees nothing and any
    latency through it is infinite.
    """

    def __init__(self, service: Bound, arrival: Bound) -> None:
        super().__init__()
        self.arrival, self.service = arrival, service
        self._combine(arrival, service)

    def bound(self, theta: Array) -> tuple[Array, Array]:
        ra, sa, rs, ss = self.operand_bounds(theta)
        return ra + rs, sa + ss


class Output(ArrivalBound):
    """``A ⊘ S``, the departures of arrivals ``A`` from a server ``S`` (thesis Theorem 3).

    ``rho = rho_A(x theta)``,
    ``sigma = sigma_A(x theta) + sigma_S(y theta) - log(1 - exp(theta (rho_A(x theta) +
    rho_S(y theta)))) / theta``; infinite when the queue is unstable.
    """

    def __init__(self, arrival: Bound, service: Bound) -> None:
        super().__init__()
        self.arrival, self.service = arrival, service
        self._combine(arrival, service)

    def bound(self, theta: Array) -> tuple[Array, Array]:
        ra, sa, rs, ss = self.operand_bounds(theta)
        with np.errstate(invalid="ignore"):
            sigma = sa + ss - _log1m_exp(theta * (ra + rs)) / theta
        return ra, sigma


class Convolution(ServiceBound):
    """``S1 ⊗ S2``, two servers in tandem as one (thesis Theorem 5).

    ``rho = max(rho_1(x theta), rho_2(y theta))``,
    ``sigma = sigma_1 + sigma_2 - log(1 - exp(-theta |rho_1 - rho_2|)) / theta``.
    Where ``rho_1 == rho_2`` the theorem does not apply; as the thesis suggests (Appendix A.2)
    and the reference implementation does, the first server is taken 1% slower
    (``rho_1 ← 0.99 rho_1``).

    >>> s = Convolution(ConstantService(2e5), ConstantService(1e5))  # 2 and 1 per step
    >>> rho, sigma = s.bound(np.array([1.0]))
    >>> float(rho[0]), round(float(sigma[0]), 6)  # -log(1 - e^-1) = 0.458675
    (-1.0, 0.458675)
    """

    def __init__(self, first: Bound, second: Bound) -> None:
        super().__init__()
        self.first, self.second = first, second
        self._combine(first, second)

    def bound(self, theta: Array) -> tuple[Array, Array]:
        r1, s1, r2, s2 = self.operand_bounds(theta)
        r1 = np.where(r1 == r2, 0.99 * r1, r1)
        with np.errstate(invalid="ignore"):
            sigma = s1 + s2 - _log1m_exp(-theta * np.abs(r1 - r2)) / theta
        return np.maximum(r1, r2), sigma


def aggregate_all(arrivals: list[Bound]) -> Bound:
    """Aggregate arrivals with the fewest Hölder steps (thesis Appendix A.4, Theorem 6).

    Each arrival joins the first group holding nothing it depends on (aggregated with the
    independent form, the new arrival as first operand, as the reference implementation does);
    the group aggregates, mutually dependent by construction, are then aggregated left to right.
    With cliques of at most ``k`` mutually dependent flows this uses ``k - 1`` Hölder steps.

    >>> a, b, c = (FixedBound(lambda t: t, deps=d) for d in ({1, 2}, {1, 2}, {3}))
    >>> agg = aggregate_all([a, b, c])
    >>> sum(n.dependent for n in agg.dependent_nodes)  # one Hölder step for the clique {a, b}
    1
    """
    if not arrivals:
        raise ValueError("nothing to aggregate")
    groups: list[Bound] = []
    for arrival in arrivals:
        for i, group in enumerate(groups):
            if not arrival.deps & group.deps:
                groups[i] = Aggregate(arrival, group)
                break
        else:
            groups.append(arrival)
    total = groups[0]
    for group in groups[1:]:
        total = Aggregate(total, group)
    return total
