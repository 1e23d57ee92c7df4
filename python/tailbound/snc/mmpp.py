"""Markov-modulated arrivals fitted to a trace, and their MGF bound (thesis §4.2.1, §4.2.4).

The model is the discrete-time form of an MMPP (a Markov-modulated Bernoulli process): in every
step of :data:`~tailbound.snc.bounds.STEP_S` seconds the chain is in one state; in state ``s`` a
request arrives with probability ``p_s`` and brings exponentially distributed work of mean
``1 / mu_s``; then the chain moves by the per-step transition matrix ``P``. Its MGF bound is
(thesis Table 4.1, first row)::

    rho_A(theta) = log(sp(diag(MGF_s(theta)) · P)) / theta,   sigma_A(theta) = 0,
    MGF_s(theta) = 1 - p_s + p_s · mu_s / (mu_s - theta)   for theta < mu_s (else infinite),

``sp`` the spectral radius; ``rho_A`` is work per step.

Fitting (:func:`fit_mmpp`), the reference implementation's procedure:

1. cut the trace into 1-second intervals from time 0 to the last arrival and count arrivals;
2. place the states' rates ``lambda`` from the top: the top state has ``lambda + a sqrt(lambda) =
   max count`` (``a = 2``: a Poisson count's ±2 standard deviations); each next state's upper
   edge equals the lower edge of the state above (``sqrt(lambda') = sqrt(lambda) - a``). States
   are placed while their rate stays at or above the smallest count, at most 10; when all 10 are
   needed, ``a`` is enlarged by a binary search (precision 0.01) until the bottom state's lower
   edge reaches the smallest count;
3. each interval belongs to the highest state whose lower edge its count exceeds, else to state 0;
4. ``P[s, t]`` = (number of interval transitions ``s → t``) / (steps spent in ``s``) for
   ``s != t`` and ``P[s, s] = 1 - sum``; the steps spent in ``s`` count every interval in ``s``
   (including the last interval of the trace);
5. ``p_s = lambda_s · STEP_S / 1 s``; ``mu_s`` = (requests in state-``s`` intervals) / (their total
   work), or ``1e6`` when a state has no request (the reference's default).

The interval length is a parameter (``interval_ns``, default the reference's 1 s; our addition,
a diagnostic): counts are per interval ``T``, ``p_s = lambda_s · STEP_S / T`` and the steps spent
in a state are ``floor(T · intervals / STEP_S)``. Shorter intervals did not make these block
traces' bounds hold (docs/results-snc.md, "Why SNC-Meister misses").

The fit runs in the Rust core (``tailbound_core::mmpp``, the one implementation: the functions
below call it, and ``tailbound bound`` fits trace files there directly); it gives bit for bit the
numbers of the numpy code it replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tailbound import _core
from tailbound.snc.bounds import STEP_S, ArrivalBound

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from tailbound.snc.bounds import Array
else:
    from tailbound.lazy import numpy as np

INTERVAL_NS = 1_000_000_000
MAX_STATES = 10
DEFAULT_A = 2.0
EMPTY_STATE_MU = 1e6
MEMO_MAX_BATCH = 64


class MmppModel:
    """A fitted Markov-modulated Bernoulli process with exponential work.

    ``transition[s, t]`` is the per-step probability of moving from ``s`` to ``t``;
    ``p_request[s]`` the per-step probability of an arrival in state ``s``; ``mu[s]`` the rate of
    the exponential work (1 / mean work) in state ``s``; ``lambdas`` the states' request rates
    per second; ``a`` the width (in standard deviations) the fit used; ``state_of_interval``
    each interval's state (``None`` for a model not fitted from a trace).

    The model lives in the Rust core (``core``, a ``_core.Mmpp``: what the fit returns and the
    core's SNC search reads); the arrays are numpy views of it made on first use, so a model
    that only goes to the core's search (``tailbound bound``) never needs numpy.
    """

    __slots__ = ("_arrays", "_memo", "core")

    def __init__(
        self,
        transition: ArrayLike,
        p_request: ArrayLike,
        mu: ArrayLike,
        lambdas: ArrayLike,
        a: float = DEFAULT_A,
        state_of_interval: ArrayLike | None = None,
    ) -> None:
        states = [] if state_of_interval is None else np.asarray(state_of_interval).tolist()
        core = _core.Mmpp(
            np.asarray(transition, dtype=np.float64).ravel().tolist(),
            np.asarray(p_request, dtype=np.float64).tolist(),
            np.asarray(mu, dtype=np.float64).tolist(),
            np.asarray(lambdas, dtype=np.float64).tolist(),
            float(a),
            states,
        )
        self._bind(core, state_of_interval is not None)

    @classmethod
    def of_core(cls, core: _core.Mmpp, fitted: bool = True) -> MmppModel:
        """The model held by ``core``; ``fitted``: its ``state_of_interval`` is meaningful."""
        model = cls.__new__(cls)
        model._bind(core, fitted)
        return model

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as its parts: the core's model is not picklable itself."""
        c = self.core
        fitted = self._arrays.get("state_of_interval", 0) is not None
        parts = (c.transition, c.p_request, c.mu, c.lambdas, c.a, c.state_of_interval)
        return (_from_parts, (*parts, fitted))

    def _bind(self, core: _core.Mmpp, fitted: bool) -> None:
        self.core = core
        self._arrays: dict[str, Any] = {} if fitted else {"state_of_interval": None}
        # theta -> rho, shared by every analysis using this model: the reference theta search
        # revisits the same theta values (coarse levels, neighbouring flows) many times.
        self._memo: dict[float, float] = {}

    def _array(self, name: str, dtype: type) -> Any:
        if name not in self._arrays:
            a: NDArray[Any] = np.array(getattr(self.core, name), dtype=dtype)
            a.flags.writeable = False
            self._arrays[name] = a
        return self._arrays[name]

    @property
    def transition(self) -> NDArray[np.float64]:
        n = self.states
        return self._array("transition", np.float64).reshape(n, n)

    @property
    def p_request(self) -> NDArray[np.float64]:
        return self._array("p_request", np.float64)

    @property
    def mu(self) -> NDArray[np.float64]:
        return self._array("mu", np.float64)

    @property
    def lambdas(self) -> NDArray[np.float64]:
        return self._array("lambdas", np.float64)

    @property
    def a(self) -> float:
        return self.core.a

    @property
    def state_of_interval(self) -> NDArray[np.int64] | None:
        return self._array("state_of_interval", np.int64)

    def __repr__(self) -> str:
        return f"MmppModel(states={self.states}, a={self.a!r})"

    @property
    def states(self) -> int:
        return self.core.states

    def state_mgf(self, theta: Array) -> Array:
        """``MGF_s(theta)`` per state, shape ``theta.shape + (states,)``; ``inf`` for
        ``theta >= mu_s``."""
        theta = np.asarray(theta, dtype=np.float64)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            # mu = inf: a state whose requests carry no work (MGF of 0 work is 1).
            increment = np.where(np.isinf(self.mu), 1.0, self.mu / (self.mu - theta))
            mgf = self.p_request * increment + (1.0 - self.p_request)
        return np.where(theta < self.mu, mgf, np.inf)

    def mgf_minus_one(self, theta: Array) -> Array:
        """``MGF_s(theta) - 1 = p_s theta / (mu_s - theta)`` per state, computed without
        cancellation; ``inf`` for ``theta >= mu_s``."""
        theta = np.asarray(theta, dtype=np.float64)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            # mu = inf: a state whose requests carry no work (MGF of 0 work is 1).
            excess = np.where(np.isinf(self.mu), 0.0, self.p_request * theta / (self.mu - theta))
        return np.where(theta < self.mu, excess, np.inf)

    def generator(self) -> NDArray[np.float64]:
        """``G = P - I`` with the diagonal taken as minus the off-diagonal row sums (exact;
        computed in the core, which the SNC search reads it from)."""
        n = self.states
        return np.array(self.core.generator(), dtype=np.float64).reshape(n, n)

    def log_spectral_radius(self, theta: Array) -> Array:
        """``log sp(diag(MGF(theta)) · P)`` elementwise over ``theta`` (``inf`` where infinite).

        Numerics (our choice): the matrix is ``I + B`` with ``B = diag(MGF) G + diag(MGF - 1)``
        tiny (per-step probabilities ~1e-5), so the eigenvalues of ``diag(MGF) P`` cluster at 1
        and a direct eigen-solver loses digits of ``sp - 1``. We take the largest real
        eigenvalue ``b`` of the Metzler matrix ``B`` (the Perron root minus one: closed form for
        two states, shifted inverse iteration in the Rust core beyond) and return ``log1p(b)``.
        """
        theta = np.asarray(theta, dtype=np.float64)
        excess = self.mgf_minus_one(theta)
        finite = np.all(np.isfinite(excess), axis=-1)
        out = np.full(theta.shape, np.inf)
        rows = excess[finite]  # (k, n)
        if rows.shape[0] == 0:
            return out
        n = self.states
        if n == 1:
            b = rows[:, 0]
        elif n == 2:
            # Closed form: the larger eigenvalue of a real 2×2 matrix with real spectrum.
            g = self.generator()
            mats = (1.0 + rows)[:, :, None] * g[None, :, :]
            mats[:, [0, 1], [0, 1]] += rows
            a, d = mats[:, 0, 0], mats[:, 1, 1]
            bc = mats[:, 0, 1] * mats[:, 1, 0]
            b = (a + d) / 2.0 + np.sqrt(((a - d) / 2.0) ** 2 + bc)
        else:
            # Shifted inverse iteration in the Rust core (tailbound_core::snc), far cheaper
            # than a general eigen-solver per theta.
            b = _core.perron_roots(self.generator(), np.ascontiguousarray(rows))
        out[finite] = np.log1p(b)
        return out

    def spectral_radius(self, theta: Array) -> Array:
        """``sp(diag(MGF(theta)) · P)`` elementwise over ``theta`` (``inf`` where infinite)."""
        return np.exp(self.log_spectral_radius(theta))

    def rho(self, theta: Array) -> Array:
        """``rho_A(theta) = log sp(diag(MGF(theta)) P) / theta`` in work per step.

        Small requests (the ``theta`` search: a few dozen values, revisited by every flow that
        shares this source) are memoised per ``theta``; large batches (the Hölder search) are
        computed once per distinct value.
        """
        theta = np.asarray(theta, dtype=np.float64)
        if theta.size > MEMO_MAX_BATCH:
            # Hölder candidates repeat theta wherever their parameter is 1: evaluate each
            # distinct value once.
            values, inverse = np.unique(theta, return_inverse=True)
            return (self.log_spectral_radius(values) / values)[inverse.reshape(theta.shape)]
        memo = self._memo
        keys = theta.ravel().tolist()
        missing = [k for k in dict.fromkeys(keys) if k not in memo]
        if missing:
            values = np.asarray(missing)
            computed = self.log_spectral_radius(values) / values
            memo.update(zip(missing, computed.tolist(), strict=True))
        return np.array([memo[k] for k in keys], dtype=np.float64).reshape(theta.shape)

    def mean_rate(self) -> float:
        """Long-run mean work per step (stationary distribution · p / mu).

        A fitted chain can be reducible (a state no interval fell into never changes); its
        stationary distribution is then taken as the fraction of intervals in each state.
        """
        n = self.states
        if self.state_of_interval is not None:
            occupancy = np.bincount(self.state_of_interval, minlength=n)
            pi = occupancy / occupancy.sum()
            return float(np.sum(pi * self.p_request / self.mu))
        # pi (P - I) = 0 with sum(pi) = 1: replace one balance equation by the normalisation.
        system = (self.transition - np.eye(n)).T
        system[-1, :] = 1.0
        rhs = np.zeros(n)
        rhs[-1] = 1.0
        pi = np.linalg.lstsq(system, rhs, rcond=None)[0]
        return float(np.sum(pi * self.p_request / self.mu))


def _from_parts(
    transition: list[float],
    p_request: list[float],
    mu: list[float],
    lambdas: list[float],
    a: float,
    state_of_interval: list[int],
    fitted: bool,
) -> MmppModel:
    """An :class:`MmppModel` from what :meth:`MmppModel.__reduce__` gives."""
    core = _core.Mmpp(transition, p_request, mu, lambdas, a, state_of_interval)
    return MmppModel.of_core(core, fitted)


class MmppArrival(ArrivalBound):
    """The MGF bound of an :class:`MmppModel` (``sigma = 0``) as an SNC arrival node.

    ``deps`` are the flow ids it depends on (its own flow and its dependency group's flows).
    """

    def __init__(self, model: MmppModel, deps: set[int] | frozenset[int] = frozenset()) -> None:
        super().__init__(deps)
        self.model = model

    def bound(self, theta: Array) -> tuple[Array, Array]:
        theta = np.asarray(theta, dtype=np.float64)
        return self.model.rho(theta), np.zeros(theta.shape)

    def pole(self) -> float:
        """Every state's MGF is infinite from ``theta = mu_s`` on."""
        return self.model.core.pole()


def interval_counts(arrival_ns: ArrayLike, interval_ns: int = INTERVAL_NS) -> NDArray[np.int64]:
    """Arrivals per interval ``[k T, (k+1) T)`` (``T = interval_ns``, 1 s by default) from time
    0 to the last arrival (step 1 of the fit, in the core)."""
    ns = np.asarray(arrival_ns, dtype=np.int64).tolist()
    return np.array(_core.mmpp_interval_counts(ns, int(interval_ns)), dtype=np.int64)


def place_states(counts: ArrayLike, max_states: int = MAX_STATES) -> tuple[list[float], float]:
    """The states' rates (ascending) and the width ``a`` for interval counts ``counts`` (step
    2 of the fit, in the core).

    >>> lams, a = place_states(np.array([100, 100, 100]))  # constant rate: one state
    >>> [round(x, 3) for x in lams], a
    ([81.9], 2.0)
    """
    return _core.mmpp_place_states(np.asarray(counts, dtype=np.int64).tolist(), max_states)


def assign_states(counts: ArrayLike, lambdas: list[float], a: float) -> NDArray[np.int64]:
    """Each interval's state: the highest ``s >= 1`` with ``count > lambda_s - a sqrt(lambda_s)``,
    else 0 (step 3 of the fit, in the core)."""
    c = np.asarray(counts, dtype=np.int64).tolist()
    return np.array(_core.mmpp_assign_states(c, list(lambdas), float(a)), dtype=np.int64)


def transition_matrix(
    states: ArrayLike, n: int, interval_ns: int = INTERVAL_NS
) -> NDArray[np.float64]:
    """Per-step transition matrix from the interval states (step 4 of the fit, in the core);
    ``interval_ns`` is the intervals' length."""
    s = np.asarray(states, dtype=np.int64).tolist()
    flat = _core.mmpp_transition_matrix(s, n, int(interval_ns), STEP_S)
    return np.array(flat, dtype=np.float64).reshape(n, n)


def fit_mmpp(arrival_ns: ArrayLike, work: ArrayLike, interval_ns: int = INTERVAL_NS) -> MmppModel:
    """Fit the reference MMPP to arrival times (integer ns from the trace's origin) and each
    request's work (bytes or device-seconds), by the Rust core (``tailbound_core::mmpp``: the
    steps of the module docstring).

    >>> ns = np.arange(0, 4_000_000_000, 10_000_000)          # 100 requests/s for 4 s
    >>> m = fit_mmpp(ns, np.full(ns.shape, 1000.0))
    >>> m.states, m.p_request.round(6).tolist(), m.mu.tolist()
    (1, [0.000819], [0.001])
    """
    arrival = np.ascontiguousarray(arrival_ns, dtype=np.int64)
    work_a = np.ascontiguousarray(work, dtype=np.float64)
    return MmppModel.of_core(_core.fit_mmpp(arrival, work_a, int(interval_ns), STEP_S))
