"""Aequitas' admission control through the binding (``_core.AequitasAdmission``): Algorithm 1 on
hand-computed sequences (docs/aequitas.md), bad configurations naming their field, and the RNL
tail against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound._core import (
    AEQUITAS_ARTIFACT_MSS_BYTES,
    AequitasAdmission,
    FieldError,
    rnl_tail,
    rpc_size_mtus,
)


def unit(rules: str = "paper") -> AequitasAdmission:
    """One class, 1 s per MTU at the 50th percentile: an increment window of exactly 2 s."""
    return AequitasAdmission([1.0], target_percentile=[0.5], rules=rules)


def test_aequitas_aimd_hand_sequence() -> None:
    a = unit()
    assert a.classes == 2
    steps = [  # (latency_s, size_mtus, now) -> (outcome, p_admit)
        ((14.0, 7.0, 1.0), ("decreased", 0.93)),  # 2 s/MTU misses: 1 − 0.01·7
        ((6.0, 3.0, 1.5), ("decreased", 0.90)),
        ((1.0, 2.0, 2.0), ("held", 0.90)),  # 2 − 0 is not > 2
        ((1.0, 2.0, 2.5), ("increased", 0.91)),  # window restarts at 2.5
        ((0.1, 1.0, 4.5), ("held", 0.91)),
        ((1.0, 1.0, 4.6), ("decreased", 0.90)),  # 1 s/MTU is not < 1
        ((0.1, 1.0, 4.75), ("increased", 0.91)),  # the miss did not restart the window
    ]
    for (latency, size, now), (outcome, p) in steps:
        assert a.complete(0, 1, 0, latency, size, now) == outcome
        assert a.p_admit(0, 1, 0) == pytest.approx(p, abs=1e-12)


def test_aequitas_downgrades_to_the_lowest_class_for_draws_above_p_admit() -> None:
    a = AequitasAdmission([1.0, 2.0])  # classes 0, 1 and the lowest, 2
    a.complete(3, 4, 0, 70.0, 7.0, 1.0)
    p = a.p_admit(3, 4, 0)
    assert p == pytest.approx(0.93)
    assert a.admit(3, 4, 0, p) == (0, False)
    assert a.admit(3, 4, 0, 0.94) == (2, True)
    assert a.admit(3, 4, 1, 0.999) == (1, False)
    assert a.admit(4, 3, 0, 0.999) == (0, False)  # another channel
    assert a.admit(3, 4, 2, 0.999) == (2, False)  # the lowest is always admitted
    assert a.complete(3, 4, 2, 1e9, 1.0, 2.0) == "uncontrolled"
    assert a.p_admit(3, 4, 2) == 1.0


def test_aequitas_artifact_rules() -> None:
    paper, artifact = unit(), unit("artifact")
    assert paper.complete(0, 1, 0, 3.0, 3.0, 1.0) == "decreased"  # a tie misses
    assert artifact.complete(0, 1, 0, 3.0, 3.0, 1.0) == "held"  # a tie meets
    for a in (paper, artifact):
        assert a.complete(0, 1, 0, 9.0, 3.0, 3.0) == "decreased"
    assert paper.complete(0, 1, 0, 0.0, 1.0, 4.0) == "increased"
    assert artifact.complete(0, 1, 0, 0.0, 1.0, 4.0) == "held"  # window restarted at 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"latency_target_s": []}, "latency_target_s"),
        ({"latency_target_s": [1e-6, -1.0]}, "latency_target_s[1]"),
        ({"latency_target_s": [1e-6], "target_percentile": [1.0]}, "target_percentile[0]"),
        ({"latency_target_s": [1e-6], "increment_window_s": [1.0, 2.0]}, "increment_window_s"),
        ({"latency_target_s": [1e-6], "alpha": 0.0}, "alpha"),
        ({"latency_target_s": [1e-6], "beta": -0.01}, "beta"),
        ({"latency_target_s": [1e-6], "floor": 0.0}, "floor"),
        ({"latency_target_s": [1e-6], "rules": "swift"}, "rules"),
    ],
)
def test_aequitas_bad_configuration_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(FieldError) as e:
        AequitasAdmission(**kwargs)
    assert e.value.args[0] == field


def test_aequitas_bad_calls() -> None:
    a = unit()
    with pytest.raises(ValueError, match="draw"):
        a.admit(0, 1, 0, 1.0)
    with pytest.raises(ValueError, match="class 2"):
        a.complete(0, 1, 2, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="size"):
        a.complete(0, 1, 0, 1.0, 0.0, 1.0)


def test_rpc_size_mtus_counts_whole_packets() -> None:
    assert AEQUITAS_ARTIFACT_MSS_BYTES == 5080.0
    assert rpc_size_mtus(32768.0, AEQUITAS_ARTIFACT_MSS_BYTES) == 7.0
    assert rpc_size_mtus(65536.0, AEQUITAS_ARTIFACT_MSS_BYTES) == 13.0


def test_rnl_tail_is_numpys_inverted_cdf_over_the_middle() -> None:
    rng = np.random.default_rng(7)
    start = rng.permutation(2000).astype(np.float64)
    rnl = rng.exponential(10e-6, 2000)
    order = np.argsort(start, kind="stable")
    middle = rnl[order[200:1800]]
    for p in (0.5, 0.99, 0.999, 1.0):
        expected = float(np.quantile(middle, p, method="inverted_cdf"))
        assert rnl_tail(start, rnl, p) == expected
    assert rnl_tail(start, rnl, 0.999, keep=1.0) == float(
        np.quantile(rnl, 0.999, method="inverted_cdf")
    )
