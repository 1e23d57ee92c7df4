"""The device as the worst-case analyses see it: blocking by work in service."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailbound.dnc.device import DeviceLimits
from tailbound.profiles import SsdProfile

SPEC = SsdProfile.from_spec(
    read_overhead_s=1e-4, read_bytes_per_s=1e8, write_overhead_s=5e-4, write_bytes_per_s=5e7
)


def limits(read_mpl: int, write_mpl: int, read_bytes: float, write_bytes: float) -> DeviceLimits:
    d = DeviceLimits.of(SPEC)
    return DeviceLimits(
        read_mpl, write_mpl, read_bytes, write_bytes, d.sizes, d.read_bandwidth, d.write_bandwidth
    )


def test_count_bound_when_bytes_are_plenty() -> None:
    # 4 reads of at most 8 KiB in service, and one more held for a slot: 5 × (100 µs + 81.92 µs)
    d = limits(4, 0, 1e9, 0)
    assert d.blocking(8192, 0) == pytest.approx(5 * (1e-4 + 8192 / 1e8))
    assert d.blocking(0, 8192) == 0.0  # no write slots


def test_byte_bound_prefers_many_small_requests() -> None:
    # 64 KiB of room, 16 slots, requests up to 64 KiB: sixteen 4 KiB reads carry more work
    # (16 overheads) than one 64 KiB read
    d = limits(16, 0, 65536, 0)
    sixteen_small = 16 * (1e-4 + 4096 / 1e8)
    one_large = 1e-4 + 65536 / 1e8
    # an upper bound (the envelope between profile rows), within 1% of the exact optimum here
    assert sixteen_small + one_large <= d.blocking(65536, 0) <= 1.01 * (sixteen_small + one_large)


def test_one_request_larger_than_the_byte_limit_is_always_let_in() -> None:
    d = limits(8, 8, 4096, 4096)
    assert d.blocking(0, 262144) == pytest.approx(2 * (5e-4 + 262144 / 5e7))


def test_reads_and_writes_add_and_unknown_sizes_are_unbounded() -> None:
    d = limits(2, 3, 1e9, 1e9)
    read, write = 1e-4 + 4096 / 1e8, 5e-4 + 4096 / 5e7
    # in service: 2 reads and 3 writes; held: the larger of one read and one write
    assert d.blocking(4096, 4096) == pytest.approx(2 * read + 3 * write + write)
    assert math.isinf(d.blocking(math.inf, 0))


@given(
    read_mpl=st.integers(1, 64),
    room=st.floats(512, 4e6),
    largest=st.floats(512, 262144),
    sizes=st.lists(st.floats(1, 262144), min_size=1, max_size=64),
)
def test_no_admissible_set_of_requests_carries_more_work(
    read_mpl: int, room: float, largest: float, sizes: list[float]
) -> None:
    """The bound holds for every set the dispatcher can have in service: at most ``mpl``
    requests of sizes up to the largest within the byte limit (or a single request)."""
    d = limits(read_mpl, 0, room, 0)
    chosen = [min(s, largest) for s in sizes[:read_mpl]]
    while len(chosen) > 1 and sum(chosen) > room:
        chosen.pop()
    work = sum(d.work(False, s) for s in chosen)
    assert work + d.work(False, largest) <= d.blocking(largest, 0) * (1 + 1e-9)


def test_the_dispatcher_work_cap_bounds_what_is_in_service() -> None:
    d = limits(48, 96, 1e9, 1e9)
    capped = dataclasses.replace(d, low_priority_work_s=0.002)
    one = 5e-4 + 65536 / 5e7
    assert capped.blocking(65536, 65536) == pytest.approx(max(0.002, one) + one)
    assert capped.blocking(65536, 65536) < d.blocking(65536, 65536)


def test_wc62_profile_blocking_is_large() -> None:
    """The reason the reference system's bounds fail: 48 reads and 96 writes in service (1.5 and
    3 MB) of 64 KiB requests carry over 300 ms of device work."""
    from tailbound.profiles.tokens import SsdProfile as Profile

    table = {
        "bandwidthTable": [
            {
                "requestSize": s,
                "readBandwidth": 4e8 * s / (s + 60000),
                "writeBandwidth": 1e8 * s / (s + 60000),
            }
            for s in (512, 4096, 65536, 262144)
        ],
        "readMPL": 48,
        "writeMPL": 96,
        "maxOutstandingReadBytes": 1572864,
        "maxOutstandingWriteBytes": 3145728,
    }
    d = DeviceLimits.of(Profile.from_json(table))
    assert d.slots() == 144
    assert d.blocking(65536, 65536) > 0.1
    assert np.all(np.diff(d.sizes) > 0)


def test_one_request_per_level_bounds_the_blocking_by_the_levels_below() -> None:
    """``level_mpl``: at most that many requests of each less important level (and of the
    demoted requests) in service, plus one held; the smaller of this and the knapsack."""
    d = dataclasses.replace(limits(48, 96, 1e9, 1e9), level_mpl=1)
    read, write = 1e-4 + 65536 / 1e8, 5e-4 + 65536 / 5e7
    assert d.blocking(65536, 65536, 2) == pytest.approx(3 * write + write)
    assert d.blocking(65536, 65536) == pytest.approx(48 * read + 96 * write + write)
    two = dataclasses.replace(d, level_mpl=2)
    assert two.blocking(65536, 65536, 2) == pytest.approx(6 * write + write)
    assert d.blocking(0, 0, 2) == 0.0


def test_a_demoted_request_of_any_tenant_is_priced_at_its_own_size() -> None:
    """A rate limiter's demotion puts any tenant's request below every level: with one request
    per level, the demoted one in service and the one held are priced at the larger of the less
    important tenants' largest request and ``demoted_work``."""
    d = dataclasses.replace(limits(48, 96, 1e9, 1e9), level_mpl=1)
    write = 5e-4 + 65536 / 5e7
    assert d.blocking(65536, 65536, 2, demoted_work=0.01) == pytest.approx(2 * write + 0.02)
    assert d.blocking(65536, 65536, 2, demoted_work=1e-6) == pytest.approx(4 * write)
    assert d.blocking(65536, 65536, 2, demoted_work=math.inf) == d.blocking(65536, 65536)
