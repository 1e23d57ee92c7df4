from __future__ import annotations

import numpy as np
import pytest

from tailbound.errors import TraceFormatError
from tailbound.traces import Op, Trace, UnsortedTraceWarning


def make(times: list[float], duration_s: float | None = None) -> Trace:
    n = len(times)
    return Trace.from_arrays(
        time=times, op=[Op.READ] * n, size=[512] * n, offset=list(range(n)), duration_s=duration_s
    )


def test_trace_columns_have_domain_dtypes() -> None:
    t = make([0.0, 1.0])
    assert t.time.dtype == np.float64 and t.op.dtype == np.uint8
    assert t.size.dtype == np.int64 and t.offset is not None and t.offset.dtype == np.int64
    assert not t.time.flags.writeable


def test_trace_unsorted_is_sorted_with_warning() -> None:
    with pytest.warns(UnsortedTraceWarning):
        t = Trace.from_arrays(time=[2.0, 1.0, 3.0], op=[0, 1, 0], size=[1, 2, 3])
    assert t.time.tolist() == [1.0, 2.0, 3.0]
    assert t.size.tolist() == [2, 1, 3]
    assert t.op.tolist() == [1, 0, 0]


def test_trace_empty_is_an_error_naming_the_file() -> None:
    with pytest.raises(TraceFormatError, match="x.csv: the trace has no requests"):
        Trace.from_arrays(time=[], op=[], size=[], path="x.csv")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": [-1]}, "negative size"),
        ({"op": [2]}, "0 \\(read\\) or 1 \\(write\\)"),
        ({"time": [float("nan")]}, "not finite"),
    ],
)
def test_trace_rejects_bad_columns(kwargs: dict, message: str) -> None:
    columns = {"time": [0.0], "op": [0], "size": [1]} | kwargs
    with pytest.raises(ValueError, match=message):
        Trace(**columns)


def test_trace_halves_split_at_half_duration_and_rebase() -> None:
    t = make([0.0, 100.0, 299.0, 300.0, 599.0], duration_s=600.0)
    first, second = t.first_half(), t.second_half()
    assert first.time.tolist() == [0.0, 100.0, 299.0]
    assert second.time.tolist() == [0.0, 299.0]
    assert second.origin_s == 300.0 and second.duration == 300.0
    assert len(first) + len(second) == len(t)


def test_trace_second_half_keeps_last_arrival_without_duration() -> None:
    t = make([0.0, 1.0, 2.0])
    assert len(t.first_half()) + len(t.second_half()) == 3


def test_trace_scale_time_changes_rate_not_requests() -> None:
    t = make([0.0, 1.0, 3.0], duration_s=4.0)
    slow = t.scale_time(2.0)
    assert slow.time.tolist() == [0.0, 2.0, 6.0] and slow.duration == 8.0
    assert slow.summary().mean_iops == pytest.approx(t.summary().mean_iops / 2)


def test_trace_concat_plays_traces_back_to_back() -> None:
    a, b = make([0.0, 1.0], duration_s=5.0), make([0.5], duration_s=2.0)
    c = Trace.concat([a, b])
    assert c.time.tolist() == [0.0, 1.0, 5.5] and c.duration == 7.0


def test_trace_shift_circular_wraps_and_keeps_requests() -> None:
    t = make([0.0, 1.0, 8.0], duration_s=10.0)
    s = t.shift_circular(3.0)
    assert s.time.tolist() == [1.0, 3.0, 4.0]
    assert s.offset is not None and s.offset.tolist() == [2, 0, 1]


def test_trace_summary_counts() -> None:
    t = Trace.from_arrays(time=[0.0, 1.0, 2.0, 4.0], op=[0, 0, 0, 1], size=[100, 100, 100, 100])
    s = t.summary()
    assert (s.requests, s.duration_s, s.read_fraction, s.total_bytes) == (4, 4.0, 0.75, 400)
    assert s.mean_iops == 1.0
