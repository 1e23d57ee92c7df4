"""Trace ingestion speed: ``read_trace`` on 1M-line files against a naive Python parser.

Generates a 1,000,000-line WorkloadCompactor CSV, MSR Cambridge CSV and generic CSV (column
mapping, parsed by Arrow) in a temporary directory, times ``read_trace`` (best of 3) and a
line-by-line Python parser building the same ``Trace`` (once), and prints a Markdown table with
the ratio. Target: under 2 s per million lines.

Run: ``.venv/bin/python -m benchmarks.bench_traces`` (or ``make bench``); ``--quick``: 100,000-line
files, the target scaled to 0.2 s (a few seconds; what the test suite runs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tailbound.traces import Trace, read_trace

LINES = 1_000_000
TARGET_S = 2.0
FILETIME_UNIX_S = 11_644_473_600


def _columns(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ns = np.cumsum(rng.exponential(600e9 / n, n)).astype(np.int64)
    op = rng.integers(0, 2, n)
    size = rng.choice([512, 4096, 8192, 65536], n)
    offset = rng.integers(0, 1 << 36, n) // 512 * 512
    return ns, op, size, offset


def write_wc(path: Path, n: int) -> None:
    ns, op, size, _ = _columns(n)
    names = np.array(["DiskRead", "DiskWrite"])[op]
    path.write_text(
        "".join(f"{t},0x{s:08x},{o}\n" for t, s, o in zip(ns, size, names, strict=True))
    )


def write_msr(path: Path, n: int) -> None:
    ns, op, size, offset = _columns(n)
    ticks = 128_166_386_783_630_075 + ns // 100
    names = np.array(["Read", "Write"])[op]
    path.write_text(
        "".join(
            f"{t},hm,0,{o},{off},{s},2896\n"
            for t, o, off, s in zip(ticks, names, offset, size, strict=True)
        )
    )


def write_csv(path: Path, n: int) -> None:
    ns, op, size, offset = _columns(n)
    names = np.array(["R", "W"])[op]
    path.write_text(
        "time_us,op,size,offset\n"
        + "".join(
            f"{t / 1000:.3f},{o},{s},{off}\n"
            for t, o, s, off in zip(ns, names, size, offset, strict=True)
        )
    )


def naive_wc(path: Path) -> Trace:
    """What one writes without tailbound: split every line in Python."""
    time_s, op, size = [], [], []
    with path.open() as f:
        for line in f:
            t, s, o = line.rstrip("\n").split(",")
            time_s.append(int(t) / 1e9)
            size.append(int(s, 16))
            op.append(0 if o == "DiskRead" else 1)
    return Trace.from_arrays(time=time_s, op=op, size=size, name=path.stem)


def naive_msr(path: Path) -> Trace:
    ticks, op, size, offset, source = [], [], [], [], []
    with path.open() as f:
        for line in f:
            stamp, _host, disk, kind, off, s, _rt = line.rstrip("\n").split(",")
            ticks.append(int(stamp))
            source.append(int(disk))
            op.append(0 if kind == "Read" else 1)
            offset.append(int(off))
            size.append(int(s))
    first = min(ticks)
    return Trace.from_arrays(
        time=[(t - first) / 1e7 for t in ticks],
        op=op,
        size=size,
        offset=offset,
        source=source,
        origin_s=first / 1e7 - FILETIME_UNIX_S,
        name=path.stem,
    )


def naive_csv(path: Path) -> Trace:
    time_s, op, size, offset = [], [], [], []
    with path.open() as f:
        next(f)
        for line in f:
            t, o, s, off = line.rstrip("\n").split(",")
            time_s.append(float(t) / 1e6)
            op.append(0 if o == "R" else 1)
            size.append(int(s))
            offset.append(int(off))
    return Trace.from_arrays(time=time_s, op=op, size=size, offset=offset, name=path.stem)


def _best(fn: Callable[[], Trace], repeat: int) -> tuple[float, Trace]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000-line files")
    args = ap.parse_args(argv or [])  # `make bench` calls main() with no arguments
    lines = LINES // 10 if args.quick else LINES
    target_s = TARGET_S * lines / LINES
    cases: list[tuple[str, Callable[[Path, int], None], Callable[[Path], Trace], dict]] = [
        ("wc", write_wc, naive_wc, {}),
        ("msr", write_msr, naive_msr, {}),
        (
            "csv (Arrow)",
            write_csv,
            naive_csv,
            {"time": "time_us", "op": "op", "size": "size", "offset": "offset", "time_unit": "us"},
        ),
    ]
    print(
        f"| format | lines | read_trace (s) | naive Python (s) | speed-up | under {target_s:g} s |"
    )
    print("|---|---:|---:|---:|---:|:---:|")
    with tempfile.TemporaryDirectory() as d:
        for name, write, naive, options in cases:
            path = Path(d) / f"bench_{name.split()[0]}.txt"
            write(path, lines)
            fast_s, fast = _best(lambda p=path, o=options: read_trace(p, **o), 3)
            slow_s, slow = _best(lambda p=path, f=naive: f(p), 1)
            assert len(fast) == len(slow) == lines
            assert np.array_equal(fast.size, slow.size) and np.array_equal(fast.op, slow.op)
            assert np.allclose(fast.time, slow.time, rtol=0, atol=1e-9)
            ok = "yes" if fast_s < target_s else "**no**"
            print(
                f"| {name} | {lines:,} | {fast_s:.3f} | {slow_s:.3f} | "
                f"{slow_s / fast_s:.1f}× | {ok} |",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
