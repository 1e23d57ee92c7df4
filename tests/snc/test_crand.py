from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from tailbound.snc.crand import CRand


def test_crand_first_values_after_srand_1() -> None:
    assert CRand(1).integers(3).tolist() == [1804289383, 846930886, 1681692777]


def test_crand_matches_the_c_library() -> None:
    name = ctypes.util.find_library("c")
    if name is None or "libc.so" not in name:
        pytest.skip("glibc not available")
    libc = ctypes.CDLL(name)
    libc.srand(1)
    expected = [libc.rand() for _ in range(2000)]
    assert CRand(1).integers(2000).tolist() == expected
