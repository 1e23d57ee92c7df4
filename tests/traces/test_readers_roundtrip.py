"""Property: a random trace written in each format by a small writer here reads back equal."""

from __future__ import annotations

import datetime as dt
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.traces import Trace, read_trace, write_parquet

FILETIME_UNIX_S = 11_644_473_600


@dataclass(frozen=True)
class Requests:
    """Integer columns of a random trace: ticks in some time unit, sorted."""

    ticks: list[int]
    op: list[int]
    size: list[int]  # in sectors for the sector formats, bytes otherwise
    offset: list[int]
    source: list[int]


@st.composite
def requests(draw: st.DrawFn, max_tick: int = 10**12) -> Requests:
    n = draw(st.integers(1, 40))
    ints = st.lists(st.integers(0, max_tick), min_size=n, max_size=n)
    return Requests(
        ticks=sorted(draw(ints)),
        op=draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        size=draw(st.lists(st.integers(0, 1 << 20), min_size=n, max_size=n)),
        offset=draw(st.lists(st.integers(0, 1 << 40), min_size=n, max_size=n)),
        source=draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)),
    )


def _read_back(name: str, content: str | bytes, **options: object) -> Trace:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return read_trace(path, **options)


def _check(trace: Trace, time: list[float], r: Requests, size: list[int], **cols: object) -> None:
    assert trace.time.tolist() == time
    assert trace.op.tolist() == r.op
    assert trace.size.tolist() == size
    for column, expected in cols.items():
        got = getattr(trace, column)
        assert got is not None and got.tolist() == expected, column


@settings(max_examples=30, deadline=None)
@given(requests())
def test_roundtrip_wc(r: Requests) -> None:
    ops = {0: "DiskRead", 1: "DiskWrite"}
    text = "".join(
        f"{t},0x{s:08x},{ops[o]}\n" for t, s, o in zip(r.ticks, r.size, r.op, strict=True)
    )
    trace = _read_back("t.txt", text)
    _check(trace, [t / 1e9 for t in r.ticks], r, r.size)
    assert trace.offset is None and trace.source is None and trace.origin_s == 0.0


@settings(max_examples=30, deadline=None)
@given(requests(), st.integers(116_444_736_000_000_000, 140_000_000_000_000_000))
def test_roundtrip_msr(r: Requests, start: int) -> None:
    ops = {0: "Read", 1: "Write"}
    ticks = [start + t for t in r.ticks]
    text = "".join(
        f"{t},host,{src},{ops[o]},{off},{s},1234\r\n"
        for t, src, o, off, s in zip(ticks, r.source, r.op, r.offset, r.size, strict=True)
    )
    trace = _read_back("t.csv", text)
    first = r.ticks[0]
    time = [(t - first) / 1e7 for t in r.ticks]
    _check(trace, time, r, r.size, offset=r.offset, source=r.source)
    t0 = start + first
    assert abs(trace.origin_s - (t0 // 10**7 - FILETIME_UNIX_S + t0 % 10**7 / 1e7)) < 1e-6


@settings(max_examples=30, deadline=None)
@given(
    requests(),
    st.sampled_from([("disksim", 1e3, 512), ("mqsim", 1e9, 512), ("disksim", 1e3, 4096)]),
)
def test_roundtrip_disksim_family(r: Requests, family: tuple[str, float, int]) -> None:
    fmt, per_s, sector = family
    rw = {0: 1, 1: 0}  # op 0 (read) is rw 1
    stamps = [f"{t / 1000:.3f}" if fmt == "disksim" else str(t) for t in r.ticks]
    lbas = [off // sector for off in r.offset]
    text = "".join(
        f"{stamp} {src}\t{lba}  {s} {rw[o]}\n"
        for stamp, src, lba, s, o in zip(stamps, r.source, lbas, r.size, r.op, strict=True)
    )
    trace = _read_back("t.trace", text, format=fmt, sector_bytes=sector)
    time = [float(s) / per_s for s in stamps]
    size = [s * sector for s in r.size]
    _check(trace, time, r, size, offset=[lba * sector for lba in lbas], source=r.source)


@settings(max_examples=30, deadline=None)
@given(requests())
def test_roundtrip_spc(r: Requests) -> None:
    ops = {0: "r", 1: "W"}
    stamps = [f"{t / 1e6:.6f}" for t in r.ticks]
    lbas = [off // 512 for off in r.offset]
    text = "".join(
        f"{src},{lba},{s},{ops[o]},{stamp}\n"
        for src, lba, s, o, stamp in zip(r.source, lbas, r.size, r.op, stamps, strict=True)
    )
    trace = _read_back("t.spc", text)
    _check(
        trace,
        [float(s) for s in stamps],
        r,
        r.size,
        offset=[x * 512 for x in lbas],
        source=r.source,
    )


@settings(max_examples=30, deadline=None)
@given(requests(max_tick=10**14))
def test_roundtrip_vscsi(r: Requests) -> None:
    cmd = {0: 0x28, 1: 0x2A}
    lbns = [off // 512 for off in r.offset]
    data = b"".join(
        struct.pack("<IIIHHQQ", i, s, 1, cmd[o], 0x0100, lbn, 5_000_000 + t)
        for i, (s, o, lbn, t) in enumerate(zip(r.size, r.op, lbns, r.ticks, strict=True))
    )
    trace = _read_back("t.vscsi", data)
    first = r.ticks[0]
    _check(trace, [(t - first) / 1e6 for t in r.ticks], r, r.size, offset=[x * 512 for x in lbns])
    assert trace.origin_s == (5_000_000 + first) / 1e6


@settings(max_examples=30, deadline=None)
@given(requests(max_tick=10**11))
def test_roundtrip_azure_llm(r: Requests) -> None:
    start = dt.datetime(2023, 11, 16, 18, 17, 3, tzinfo=dt.UTC)
    # Timestamps in 100 ns ticks, written with seven fractional digits as the dataset does.
    lines = []
    for t, ctx, gen in zip(r.ticks, r.size, r.offset, strict=True):
        stamp = start + dt.timedelta(microseconds=t // 10)
        lines.append(
            f"{stamp:%Y-%m-%d %H:%M:%S}.{stamp.microsecond:06d}{t % 10},{ctx},{gen % 9999}"
        )
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(lines)
    trace = _read_back("t.csv", text, format="azure-llm", size="context")
    first = r.ticks[0]
    assert trace.time.tolist() == [(t - first) / 1e7 for t in r.ticks]
    assert trace.size.tolist() == r.size
    assert np.all(trace.op == 0)
    assert abs(trace.origin_s - (start.timestamp() + first / 1e7)) < 1e-6


@settings(max_examples=30, deadline=None)
@given(requests())
def test_roundtrip_generic_csv_and_parquet(r: Requests) -> None:
    ops = {0: "Read", 1: "write"}
    text = "us,op,bytes,off,dev\n" + "".join(
        f"{t},{ops[o]},{s},{off},{src}\n"
        for t, o, s, off, src in zip(r.ticks, r.op, r.size, r.offset, r.source, strict=True)
    )
    mapping: dict[str, object] = {
        "time": "us",
        "op": "op",
        "size": "bytes",
        "offset": "off",
        "source": "dev",
    }
    trace = _read_back("t.csv", text, format="csv", time_unit="us", **mapping)
    _check(trace, [t / 1e6 for t in r.ticks], r, r.size, offset=r.offset, source=r.source)
    with tempfile.TemporaryDirectory() as d:
        back = read_trace(write_parquet(trace, Path(d) / "t.parquet"))
    _check(back, trace.time.tolist(), r, r.size, offset=r.offset, source=r.source)
    assert (back.name, back.origin_s, back.duration_s) == ("t", 0.0, None)
