"""Arrival processes for synthetic workloads: Poisson, n-phase MMPP and on/off bursts.

Every process draws arrival times in ``[0, duration_s)`` from a seeded
:class:`numpy.random.Generator`, vectorised over requests: Poisson points are drawn as a count and
then as sorted uniforms (normalised cumulative sums of exponentials, so no sort is needed), the
MMPP loops once per phase change only, and the on/off process draws its hyperexponential
inter-arrival times in one go. See ``docs/workloads.md`` for the constructions.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.errors import ConfigError


class ArrivalProcess(Protocol):
    """Something that draws sorted arrival times in ``[0, duration_s)``."""

    def times(self, rng: np.random.Generator, duration_s: float) -> NDArray[np.float64]:
        """Arrival times in seconds, non-decreasing, each in ``[0, duration_s)``."""
        ...

    @property
    def mean_rate(self) -> float:
        """Long-run arrivals per second."""
        ...


def _check_duration(duration_s: float) -> None:
    if not (duration_s >= 0 and math.isfinite(duration_s)):
        raise ConfigError(
            None, f"expected a finite duration >= 0, got {duration_s}", field="duration_s"
        )


def uniform_points_in_segments(
    rng: np.random.Generator,
    boundaries: NDArray[np.float64],
    counts: NDArray[np.int64],
) -> NDArray[np.float64]:
    """``counts[k]`` sorted uniform points in each segment ``[boundaries[k], boundaries[k+1])``.

    Conditioned on its count, a Poisson process's points in an interval are independent uniforms;
    their order statistics are ``S_i / S_{n+1}`` with ``S_i`` the partial sums of ``n + 1``
    standard exponentials. Doing this per segment with one global cumulative sum gives every point
    already sorted, in O(total) time and without a Python loop.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> t = uniform_points_in_segments(rng, np.array([0.0, 1.0, 3.0]), np.array([2, 3]))
    >>> len(t), bool(np.all(np.diff(t) >= 0)), bool(t[1] < 1.0 <= t[2] and t[-1] < 3.0)
    (5, True, True)
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.float64)
    if counts.size == 1:  # one segment: no per-segment bookkeeping
        e = rng.standard_exponential(total + 1)
        cumulative = np.cumsum(e)
        fraction = cumulative[:-1] / cumulative[-1]
        low, high = float(boundaries[0]), float(boundaries[1])
        return np.minimum(low + (high - low) * fraction, high)
    # one extra exponential per segment closes its block and normalises its partial sums
    block_end = np.cumsum(counts + 1) - 1
    cumulative = np.cumsum(rng.standard_exponential(total + counts.size))
    block_total = np.diff(cumulative[block_end], prepend=0.0)
    base = cumulative[block_end] - block_total  # cumulative sum before each block
    keep = np.ones(cumulative.size, dtype=bool)
    keep[block_end] = False
    segment = np.repeat(np.arange(counts.size), counts)
    fraction = (cumulative[keep] - base[segment]) / block_total[segment]
    start = boundaries[:-1][segment]
    end = boundaries[1:][segment]
    # rounding must not push a point past its segment's end (keeps the result non-decreasing)
    return np.minimum(start + (end - start) * fraction, end)


@dataclass(frozen=True)
class Poisson:
    """A Poisson process of ``rate`` arrivals per second (inter-arrival C² = 1).

    Examples
    --------
    >>> t = Poisson(100.0).times(np.random.default_rng(0), 10.0)
    >>> 900 < len(t) < 1100 and bool(np.all(np.diff(t) >= 0))
    True
    """

    rate: float

    def __post_init__(self) -> None:
        if not (self.rate >= 0 and math.isfinite(self.rate)):
            raise ConfigError(None, f"expected a finite rate >= 0, got {self.rate}", field="rate")

    @property
    def mean_rate(self) -> float:
        return float(self.rate)

    def times(self, rng: np.random.Generator, duration_s: float) -> NDArray[np.float64]:
        _check_duration(duration_s)
        n = rng.poisson(self.rate * duration_s)
        return uniform_points_in_segments(
            rng, np.array([0.0, float(duration_s)]), np.array([n], dtype=np.int64)
        )


@dataclass(frozen=True, eq=False)
class Mmpp:
    """A continuous-time Markov-modulated Poisson process with ``n`` phases.

    A hidden Markov chain with generator matrix ``Q`` (``Q[i, j] >= 0`` is the rate of jumping
    from phase ``i`` to phase ``j``, rows sum to 0, so phase ``i`` lasts an exponential time of
    mean ``-1 / Q[i, i]``) modulates a Poisson process: while in phase ``i`` requests arrive at
    ``rates[i]`` per second. Build it from ``Q`` directly or with :meth:`from_sojourn` (mean
    sojourn times and the jump probabilities of the embedded chain). The thesis (§4.2.4) uses the
    discrete-time form with per-slot transition probabilities; this is its continuous-time
    counterpart, which the generator needs to produce exact arrival times.

    The chain starts in its stationary distribution (:meth:`stationary`), so the process is
    stationary from time 0.

    Examples
    --------
    >>> m = Mmpp.from_sojourn([500.0, 20.0], mean_sojourn_s=[1.0, 4.0])
    >>> m.stationary().round(12).tolist()
    [0.2, 0.8]
    >>> round(m.mean_rate, 6)
    116.0
    >>> round(m.interarrival_c2(), 3)
    8.267
    """

    rates: NDArray[np.float64]
    generator: NDArray[np.float64]
    _stationary: NDArray[np.float64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rates = np.array(self.rates, dtype=np.float64)
        q = np.array(self.generator, dtype=np.float64)
        n = rates.size
        if rates.ndim != 1 or n == 0:
            raise ConfigError(None, "expected a non-empty list of phase rates", field="rates")
        if not np.all(np.isfinite(rates)) or np.any(rates < 0):
            raise ConfigError(None, f"phase rates must be finite and >= 0: {rates}", field="rates")
        if not np.any(rates > 0):
            raise ConfigError(None, "at least one phase needs a positive rate", field="rates")
        if q.shape != (n, n):
            raise ConfigError(None, f"expected a {n}x{n} matrix, got {q.shape}", field="generator")
        off = q - np.diag(np.diag(q))
        if not np.all(np.isfinite(q)) or np.any(off < 0):
            raise ConfigError(
                None, "off-diagonal entries must be finite and >= 0", field="generator"
            )
        if not np.allclose(q.sum(axis=1), 0.0, atol=1e-9 * max(1.0, float(np.abs(q).max()))):
            raise ConfigError(None, "every row must sum to 0", field="generator")
        rates.flags.writeable = False
        q.flags.writeable = False
        object.__setattr__(self, "rates", rates)
        object.__setattr__(self, "generator", q)
        # solved once; raises for a chain without a unique stationary distribution
        object.__setattr__(self, "_stationary", self._solve_stationary())

    @classmethod
    def from_sojourn(
        cls,
        rates: ArrayLike,
        mean_sojourn_s: ArrayLike,
        jump_probabilities: ArrayLike | None = None,
    ) -> Mmpp:
        """An MMPP from mean phase durations and where the chain jumps when a phase ends.

        ``Q[i, j] = P[i, j] / mean_sojourn_s[i]`` for ``j != i`` and ``Q[i, i] = -1 /
        mean_sojourn_s[i]``. ``jump_probabilities`` ``P`` has a zero diagonal and rows summing to
        1; by default it is uniform over the other phases (for two phases: they alternate).
        """
        rates_a = np.asarray(rates, dtype=np.float64)
        sojourn = np.asarray(mean_sojourn_s, dtype=np.float64)
        n = rates_a.size
        if sojourn.shape != (n,) or not np.all(sojourn > 0):
            raise ConfigError(
                None,
                f"expected {n} positive mean sojourn times, got {sojourn}",
                field="mean_sojourn_s",
            )
        if n == 1:
            return cls(rates_a, np.zeros((1, 1)))
        if jump_probabilities is None:
            p = (np.ones((n, n)) - np.eye(n)) / (n - 1)
        else:
            p = np.asarray(jump_probabilities, dtype=np.float64)
            if (
                p.shape != (n, n)
                or np.any(p < 0)
                or np.any(np.diag(p) != 0)
                or not np.allclose(p.sum(axis=1), 1.0)
            ):
                raise ConfigError(
                    None,
                    "expected an n x n matrix with zero diagonal, entries >= 0, rows summing to 1",
                    field="jump_probabilities",
                )
        q = p / sojourn[:, None]
        np.fill_diagonal(q, -1.0 / sojourn)
        return cls(rates_a, q)

    @property
    def phases(self) -> int:
        return int(self.rates.size)

    def stationary(self) -> NDArray[np.float64]:
        """The stationary distribution ``π``: ``π Q = 0``, ``Σ π = 1``."""
        return self._stationary.copy()

    def _solve_stationary(self) -> NDArray[np.float64]:
        n = self.phases
        a = np.vstack([self.generator.T, np.ones((1, n))])
        b = np.zeros(n + 1)
        b[-1] = 1.0
        pi, _, rank, _ = np.linalg.lstsq(a, b, rcond=None)
        if rank < n or not np.allclose(a @ pi, b, atol=1e-9):
            raise ConfigError(
                None, "the chain has no unique stationary distribution", field="generator"
            )
        pi = np.clip(pi, 0.0, None)
        return np.asarray(pi / pi.sum(), dtype=np.float64)

    @property
    def mean_rate(self) -> float:
        """``λ̄ = π · λ`` arrivals per second."""
        return float(self.stationary() @ self.rates)

    def interarrival_moments(self) -> tuple[float, float]:
        """First two moments of the stationary inter-arrival time, in s and s².

        As a Markovian arrival process (``D0 = Q − Λ``, ``D1 = Λ``), the phase just after an
        arrival is distributed as ``φ = π Λ / λ̄``, and an inter-arrival time is phase-type
        ``(φ, D0)``: ``E[X^k] = k! · φ (−D0)^{−k} 1``.
        """
        lam = np.diag(self.rates)
        d0 = self.generator - lam
        phi = self.stationary() @ lam
        phi = phi / phi.sum()
        ones = np.ones(self.phases)
        m1_vec = np.linalg.solve(-d0, ones)
        m2_vec = np.linalg.solve(-d0, m1_vec)
        return float(phi @ m1_vec), float(2.0 * phi @ m2_vec)

    def interarrival_c2(self) -> float:
        """Squared coefficient of variation of inter-arrival times, ``E[X²]/E[X]² − 1``."""
        m1, m2 = self.interarrival_moments()
        return m2 / (m1 * m1) - 1.0

    def phase_path(
        self, rng: np.random.Generator, duration_s: float
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """The phase boundaries ``[0, t1, ..., duration_s]`` and the phase of each segment."""
        _check_duration(duration_s)
        pi = self.stationary()
        hold = -np.diag(self.generator)
        state = int(rng.choice(self.phases, p=pi))
        if self.phases == 1 or hold[state] == 0:
            return np.array([0.0, float(duration_s)]), np.array([state], dtype=np.int64)
        jump = self.generator / np.where(hold > 0, hold, 1.0)[:, None]
        np.fill_diagonal(jump, 0.0)
        cumulative = [list(np.cumsum(row)) for row in jump]
        ends: list[float] = []
        states = [state]
        t = 0.0
        # One iteration per phase change (the brief allows it): draw random numbers in batches.
        batch = 256
        while True:
            sojourns = rng.standard_exponential(batch)
            uniforms = rng.random(batch)
            for k in range(batch):
                if hold[state] == 0:  # absorbing phase: stays to the end
                    t = math.inf
                else:
                    t += sojourns[k] / hold[state]
                if t >= duration_s:
                    ends.append(float(duration_s))
                    return np.array([0.0, *ends]), np.array(states, dtype=np.int64)
                ends.append(t)
                row = cumulative[state]
                state = min(bisect.bisect_right(row, uniforms[k] * row[-1]), self.phases - 1)
                states.append(state)

    def times(self, rng: np.random.Generator, duration_s: float) -> NDArray[np.float64]:
        boundaries, states = self.phase_path(rng, duration_s)
        expected = self.rates[states] * np.diff(boundaries)
        counts = rng.poisson(expected).astype(np.int64)
        return uniform_points_in_segments(rng, boundaries, counts)

    def __repr__(self) -> str:
        return (
            f"Mmpp(rates={self.rates.tolist()}, generator={self.generator.tolist()}, "
            f"mean_rate={self.mean_rate:.6g}, c2={self.interarrival_c2():.6g})"
        )


@dataclass(frozen=True)
class OnOff:
    """On/off bursts: a renewal process with hyperexponential (H2) inter-arrival times.

    Built from a target mean ``rate`` (arrivals/s) and a target inter-arrival ``c2 >= 1`` by the
    balanced-means two-phase hyperexponential: with probability ``p`` an inter-arrival time is
    exponential of rate ``μ1 = 2pλ``, otherwise of rate ``μ2 = 2(1−p)λ``, where

        p = (1 + sqrt((C² − 1) / (C² + 1))) / 2.

    Then ``E[X] = 1/λ`` and ``E[X²]λ² = 1 / (2p(1−p)) = C² + 1`` exactly. The same process is an
    interrupted Poisson process (Kuczura 1973): arrivals at ``on_rate = pμ1 + (1−p)μ2`` during
    exponential "on" periods of mean ``mean_on_s = 1/α``, none during exponential "off" periods of
    mean ``mean_off_s = 1/β``, with ``β = μ1μ2 / on_rate`` and ``α = μ1 + μ2 − on_rate − β``
    (see :meth:`as_mmpp`). ``C² = 1`` degenerates to Poisson (``α = 0``, never off).

    The first arrival is drawn from the H2's equilibrium residual (phase ``i`` picked with
    probability ∝ ``p_i / μ_i``, then exponential of rate ``μ_i``), so the process is stationary.

    Examples
    --------
    >>> b = OnOff(rate=100.0, c2=20.0)
    >>> round(b.as_mmpp().interarrival_c2(), 9), round(b.as_mmpp().mean_rate, 9)
    (20.0, 100.0)
    >>> round(b.on_rate, 3), round(b.mean_on_s, 4), round(b.mean_off_s, 4)
    (190.476, 0.2211, 0.2)
    """

    rate: float
    c2: float

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ConfigError(None, f"expected a finite rate > 0, got {self.rate}", field="rate")
        if not (self.c2 >= 1 and math.isfinite(self.c2)):
            raise ConfigError(
                None,
                f"on/off bursts need an inter-arrival C² >= 1 (Poisson is 1), got {self.c2}",
                field="c2",
            )

    @property
    def p(self) -> float:
        """Probability of the short (fast) phase of the H2."""
        return 0.5 * (1.0 + math.sqrt((self.c2 - 1.0) / (self.c2 + 1.0)))

    @property
    def phase_rates(self) -> tuple[float, float]:
        """``(μ1, μ2)``, the H2's exponential rates in 1/s."""
        p = self.p
        return 2.0 * p * self.rate, 2.0 * (1.0 - p) * self.rate

    @property
    def mean_rate(self) -> float:
        return float(self.rate)

    @property
    def on_rate(self) -> float:
        """Arrivals per second while on."""
        mu1, mu2 = self.phase_rates
        return self.p * mu1 + (1.0 - self.p) * mu2

    @property
    def _switch_rates(self) -> tuple[float, float]:
        mu1, mu2 = self.phase_rates
        beta = mu1 * mu2 / self.on_rate
        alpha = max(mu1 + mu2 - self.on_rate - beta, 0.0)
        return alpha, beta

    @property
    def mean_on_s(self) -> float:
        """Mean length of an on period (``inf`` for ``C² = 1``)."""
        alpha, _ = self._switch_rates
        return math.inf if alpha == 0 else 1.0 / alpha

    @property
    def mean_off_s(self) -> float:
        """Mean length of an off period."""
        return 1.0 / self._switch_rates[1]

    def as_mmpp(self) -> Mmpp:
        """The equivalent two-phase MMPP (on at :attr:`on_rate`, off at 0)."""
        alpha, beta = self._switch_rates
        return Mmpp(np.array([self.on_rate, 0.0]), np.array([[-alpha, alpha], [beta, -beta]]))

    def times(self, rng: np.random.Generator, duration_s: float) -> NDArray[np.float64]:
        _check_duration(duration_s)
        mu = np.array(self.phase_rates)
        p = np.array([self.p, 1.0 - self.p])
        residual = p / mu / np.sum(p / mu)
        first = rng.standard_exponential() / mu[0 if rng.random() < residual[0] else 1]
        if first >= duration_s:
            return np.empty(0, dtype=np.float64)
        # Renewal counts have variance ≈ C²·λ·T: draw enough for all but a vanishing fraction of
        # runs in one go, and extend in the rare case the draw ends before duration_s.
        mean_n = self.rate * (duration_s - first)
        batch = int(mean_n + 8.0 * math.sqrt(self.c2 * mean_n + 1.0) + 16)
        chunks = [np.array([first])]
        last = first
        while last < duration_s:
            fast = rng.random(batch) < p[0]
            gaps = rng.standard_exponential(batch) / np.where(fast, mu[0], mu[1])
            chunk = last + np.cumsum(gaps)
            chunks.append(chunk)
            last = float(chunk[-1])
        times = np.concatenate(chunks)
        return times[: int(np.searchsorted(times, duration_s, side="left"))]


def empirical_c2(times: ArrayLike) -> float:
    """Squared coefficient of variation of the gaps between consecutive ``times``.

    ``Var[X] / E[X]²`` over ``X = diff(times)``; ``nan`` for fewer than three arrivals.

    Examples
    --------
    >>> empirical_c2([0.0, 1.0, 2.0, 3.0])
    0.0
    """
    gaps = np.diff(np.asarray(times, dtype=np.float64))
    if gaps.size < 2:
        return math.nan
    mean = float(gaps.mean())
    return float(gaps.var() / (mean * mean)) if mean > 0 else math.nan
