"""Aequitas' closed forms (``tailbound.dnc.wfq_delay``): the notes' worked example, hand cases of
every branch of Eq. (1) and Eq. (8), continuity at the branch points, Lemma 1 against Eq. (3),
the guaranteed share, and bad input refused by name."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tailbound.dnc.wfq_delay import (
    admissible,
    delay_h,
    delay_l,
    guaranteed_admitted_share,
    inversion_share,
    no_inversion,
)
from tailbound.errors import ConfigError


def test_delay_h_worked_example() -> None:
    """φ = 4, ρ = 2, μ = 0.8: 0 for x ≤ 0.4, x − 0.4 up to 0.8, 0.4 above (notes-aequitas.md)."""
    x = np.linspace(0.01, 1.0, 100)
    want = np.where(x <= 0.4, 0.0, np.where(x <= 0.8, x - 0.4, 0.4))
    np.testing.assert_allclose(delay_h(x, 4.0, 2.0, 0.8), want, atol=1e-12)


def test_delay_h_hand_cases_each_branch() -> None:
    """φ = 4, ρ = 1.5, μ = 0.6: q = 0.8, q/ρ = 0.5333, min(c, 1/ρ) = 0.6667 < q, so the third
    branch is empty and the fourth covers nothing; φ = 1, ρ = 1.25, μ = 0.5: q = 0.5, c = 0.6,
    1/ρ = 0.8, all five branches present."""
    # φ = 1, ρ = 1.25, μ = 0.5
    x = np.array([0.3, 0.45, 0.55, 0.7, 0.9])
    got = delay_h(x, 1.0, 1.25, 0.5)
    want = [
        0.0,  # x ≤ q/ρ = 0.4
        0.5 * (2 * 0.45 - 0.8),  # μ(x/q − 1/ρ) = 0.05
        0.5 * 0.45 * (2 - 1 / (1.25 * 0.55)),  # μ(1 − x)(φ + 1 − φ/(ρx)), x ≤ c = 0.6
        0.5 * (0.8 - 0.64) / 0.7,  # μ(1/ρ − 1/ρ²)/x, 0.6 < x ≤ 0.8
        0.5 * 0.2,  # μ(1 − 1/ρ)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # φ = 4, ρ = 1.5, μ = 0.6: zero, then μ(1.25x − 2/3), then μ/3 above q = 0.8
    np.testing.assert_allclose(
        delay_h([0.5, 0.7, 0.9], 4.0, 1.5, 0.6), [0.0, 0.6 * (0.875 - 2 / 3), 0.2], rtol=1e-12
    )


def test_delay_l_hand_cases_each_branch() -> None:
    # φ = 4, ρ = 2, μ = 0.8: 0.4 up to 0.5, 0.2x(5 − 1/(2(1 − x))) to 0.8, 0.8(5(1 − x) − 0.5)
    # to 0.9, then 0
    np.testing.assert_allclose(
        delay_l([0.3, 0.6, 0.85, 0.95], 4.0, 2.0, 0.8),
        [0.4, 0.45, 0.8 * (0.75 - 0.5), 0.0],
        rtol=1e-12,
    )
    # φ = 1, ρ = 1.25, μ = 0.5: 1 − 1/ρ = 0.2, q/ρ = 0.4: the second branch on (0.2, 0.4]
    np.testing.assert_allclose(
        delay_l([0.1, 0.3], 1.0, 1.25, 0.5), [0.1, 0.5 * 0.16 / 0.7], rtol=1e-12
    )
    # φ = 1, ρ = 5, μ = 0.3: 1 − 1/ρ = 0.8 > q = 0.5, so the second and third domains are
    # empty and μ((φ + 1)(1 − x) − 1/ρ) follows μ(1 − 1/ρ) at x = q
    np.testing.assert_allclose(
        delay_l([0.4, 0.6, 0.85, 0.95], 1.0, 5.0, 0.3),
        [0.24, 0.3 * (0.8 - 0.2), 0.3 * (0.3 - 0.2), 0.0],
        rtol=1e-12,
        atol=1e-15,
    )


@pytest.mark.parametrize("phi", [1.0, 1.5, 4.0, 8.0, 50.0])
@pytest.mark.parametrize("rho", [1.0, 1.2, 1.4, 2.0, 5.0])
@pytest.mark.parametrize("mu", [0.3, 0.8, 1.0])
def test_delays_continuous_and_bounded(phi: float, rho: float, mu: float) -> None:
    """No jump at any branch point (the case analysis glues continuous pieces), and neither
    delay exceeds μ(1 − 1/ρ)·max(…) nor is negative: the whole period's work is done by μ."""
    x = np.linspace(1e-4, 1.0, 20001)
    for f in (delay_h, delay_l):
        d = f(x, phi, rho, mu)
        assert np.all(d >= 0.0), f"{f.__name__}({phi=}, {rho=}, {mu=}) negative"
        assert np.all(d <= mu + 1e-12)
        jumps = np.abs(np.diff(d))
        assert jumps.max() < 1e-2, f"{f.__name__}({phi=}, {rho=}, {mu=}) jumps {jumps.max()}"


def test_phi_to_infinity_is_lemma_2() -> None:
    """Eq. (4): as φ → ∞, Delay_h = 0 up to 1/ρ and μ(x − 1/ρ) above."""
    x = np.linspace(0.05, 1.0, 96)
    want = np.where(x <= 0.5, 0.0, 0.8 * (x - 0.5))
    np.testing.assert_allclose(delay_h(x, 1e9, 2.0, 0.8), want, atol=1e-6)


@pytest.mark.parametrize("phi", [1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("rho", [1.2, 1.4, 2.0, 3.0])
@pytest.mark.parametrize("mu", [0.5, 0.8])
def test_admissible_region_ends_at_lemma_1(phi: float, rho: float, mu: float) -> None:
    """Eq. (3) from Eq. (1) and (8) against Lemma 1: admissible iff x ≤ φ/(φ + 1)."""
    x = np.linspace(0.01, 1.0, 100)
    q = float(inversion_share(phi))
    region = admissible(x, phi, rho, mu)
    assert np.array_equal(region, x <= q + 1e-12), (phi, rho, mu, x[region != (x <= q)])
    assert bool(admissible(q, phi, rho, mu))  # the inversion point itself: both delays equal
    assert bool(no_inversion([q, 1 - q], [phi, 1.0]))
    assert not bool(no_inversion([q + 0.01, 1 - q - 0.01], [phi, 1.0]))


def test_no_inversion_three_classes() -> None:
    mixes = np.array([[0.6, 0.3, 0.1], [0.5, 0.1, 0.4], [0.2, 0.1, 0.7], [8 / 13, 4 / 13, 1 / 13]])
    assert no_inversion(mixes, [8.0, 4.0, 1.0]).tolist() == [True, False, True, True]


def test_guaranteed_admitted_share() -> None:
    """φ_i/Σφ · μ/ρ: 4:1 at ρ = 2, μ = 0.8 is 0.32 and 0.08; halves when ρ doubles; the 8:4:1
    classes at ρ = 1.4, μ = 0.8 get 8/13, 4/13, 1/13 of 0.5714."""
    np.testing.assert_allclose(guaranteed_admitted_share([4.0, 1.0], 2.0, 0.8), [0.32, 0.08])
    rhos = np.array([1.0, 2.0, 4.0])
    share = guaranteed_admitted_share([4.0, 1.0], rhos, 0.8)
    assert share.shape == (3, 2)
    np.testing.assert_allclose(share[:, 0] * rhos, 0.64)
    np.testing.assert_allclose(
        guaranteed_admitted_share([8.0, 4.0, 1.0], 1.4, 0.8), np.array([8, 4, 1]) / 13 * 0.8 / 1.4
    )
    # as a share of the traffic it is Eq. (1)'s zero-delay edge
    edge = guaranteed_admitted_share([4.0, 1.0], 2.0, 0.8)[0] / 0.8
    assert float(delay_h(edge, 4.0, 2.0, 0.8)) == pytest.approx(0.0, abs=1e-12)
    assert float(delay_h(edge - 1e-6, 4.0, 2.0, 0.8)) == 0.0
    assert float(delay_h(edge + 1e-6, 4.0, 2.0, 0.8)) > 1e-7


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: delay_h(0.5, 0.0, 2.0, 0.8), "phi"),
        (lambda: delay_h(0.5, -1.0, 2.0, 0.8), "phi"),
        (lambda: delay_l(0.5, 0.5, 2.0, 0.8), "phi"),
        (lambda: delay_l(0.0, 4.0, 2.0, 0.8), "x"),
        (lambda: delay_h([0.5, 1.2], 4.0, 2.0, 0.8), "x"),
        (lambda: delay_h(np.nan, 4.0, 2.0, 0.8), "x"),
        (lambda: delay_h(0.5, 4.0, 2.0, 0.0), "mu"),
        (lambda: delay_l(0.5, 4.0, 2.0, -0.3), "mu"),
        (lambda: delay_h(0.5, 4.0, 2.0, 1.5), "mu"),
        (lambda: delay_h(0.5, 4.0, 0.5, 0.8), "rho"),
        (lambda: admissible(0.5, 4.0, 2.0, 0.0), "mu"),
        (lambda: inversion_share(0.0), "phi"),
        (lambda: no_inversion([0.5, 0.5], [1.0, 0.0]), "weights[1]"),
        (lambda: no_inversion([0.5, 0.5, 0.0], [1.0, 1.0]), "shares"),
        (lambda: no_inversion([1.5, -0.5], [1.0, 1.0]), "shares"),
        (lambda: guaranteed_admitted_share([4.0, -1.0], 2.0, 0.8), "weights[1]"),
        (lambda: guaranteed_admitted_share([4.0], 2.0, 0.8), "weights"),
        (lambda: guaranteed_admitted_share([4.0, 1.0], 2.0, 0.0), "mu"),
    ],
)
def test_bad_input_refused_naming_the_argument(call: Callable[[], object], field: str) -> None:
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field
    assert field in str(e.value)
