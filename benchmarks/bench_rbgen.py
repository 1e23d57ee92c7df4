"""rbGen and the exact r-b curve: Rust against the vectorised numpy reference, and real traces.

Run with ``.venv/bin/python -m benchmarks.bench_rbgen`` (add ``--quick`` for a smaller run).
Prints Markdown tables:

1. rbGen with 1000 rates on a 10M-request synthetic trace: Rust single-threaded and with two
   threads, against ``reference.rbgen_numpy`` (one numpy pass per rate) on a few rates, scaled to
   1000 rates (its cost is linear in the number of rates), as rate·request updates per second.
2. The exact curve of wc62's ``trace0036`` at its three stages (links at 125,000,000 B/s, the SSD
   profile of wc62) and of a 1M-request synthetic trace, with the passes and rates it evaluated.
3. All 186 WorkloadCompactor grid curves (62 traces × 3 stages, up to 1001 rates each) against
   the about 390 s the WorkloadCompactor system needed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from tailbound.characterize import exact_rb_curve, rb_curve, rbgen
from tailbound.characterize.exact import exact_rb_points
from tailbound.characterize.reference import rbgen_numpy
from tailbound.profiles import SsdProfile, stage_model
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces import Trace
from tailbound.traces.readers import read_trace

# ../shared/data beside the project, or beside a folder above it (from a git worktree)
DATA = next(
    (
        p / "shared" / "data"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "data").is_dir()
    ),
    Path("../shared/data"),
)
WC_REFERENCE_S = 390.0  # the WorkloadCompactor system's time for the 186 curves


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Bursty arrivals (5% long gaps) with tokens of a 1 Gb/s link at mean utilisation ~0.3."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.05, rng.exponential(2e-3, n), rng.exponential(2e-5, n))
    time = np.cumsum(gaps)
    tokens = rng.choice([512, 4096, 16384, 65536], n) * 1.1 / 125e6
    tokens *= 0.3 * time[-1] / tokens.sum()
    return time, tokens


def timed(f, *args, **kwargs):  # type: ignore[no-untyped-def]
    """``(value, wall seconds)``; the CPU seconds of the last call are in ``LAST_CPU_S[0]``."""
    start, cpu = time.perf_counter(), time.process_time()
    value = f(*args, **kwargs)
    LAST_CPU_S[0] = time.process_time() - cpu
    return value, time.perf_counter() - start


#: CPU time of the last ``timed`` call: on the shared 2-core machine wall time includes waiting
#: for other processes, CPU time does not.
LAST_CPU_S = [0.0]


def bench_rbgen(n: int, rates_count: int, numpy_rates: int) -> None:
    t, w = synthetic(n)
    rates = np.linspace(0.3, 1.0, rates_count)
    updates = n * rates_count
    print(f"### rbGen, {n:,} requests × {rates_count} rates\n")
    print("| implementation | rates run | wall (s) | CPU (s) | updates/s (wall) | vs numpy |")
    print("|---|---:|---:|---:|---:|---:|")
    few = rates[:: max(1, rates_count // numpy_rates)][:numpy_rates]
    ref, numpy_s = timed(rbgen_numpy, t, w, few)
    numpy_cpu = LAST_CPU_S[0]
    numpy_rate = n * len(few) / numpy_s
    rows = []
    for threads in (1, 2):
        _, seconds = timed(rbgen, t, w, rates, threads=threads)
        name = f"Rust, {threads} thread{'s' * (threads > 1)}"
        rows.append((name, rates_count, seconds, LAST_CPU_S[0]))
        check = rbgen(t, w, few)
        # The numpy route subtracts cumulative sums of the whole trace: on 10M requests its
        # rounding reaches ~1e-8 relative (Rust's recursion stays near 1e-12 of the exact value).
        assert np.allclose(check, ref, rtol=1e-6, atol=1e-12), "Rust and numpy disagree"
    for name, count, seconds, cpu in rows:
        rate = n * count / seconds
        print(
            f"| {name} | {count} | {seconds:.2f} | {cpu:.2f} | {rate:.3g} "
            f"| {rate / numpy_rate:.0f}× |"
        )
    scale = rates_count / len(few)
    print(
        f"| numpy reference (`rbgen_numpy`) | {len(few)} | {numpy_s:.2f} "
        f"(×{scale:.0f} ≈ {numpy_s * scale:.0f}) | {numpy_cpu:.2f} | {numpy_rate:.3g} | 1× |"
    )
    print(f"\n{updates:.3g} rate·request updates in all.\n")


def bench_exact_synthetic(n: int) -> None:
    bursty = synthetic(n, seed=1)
    # decelerating arrivals: cumulative work concave in time, every other request a breakpoint
    concave = (np.arange(n, dtype=float) ** 2 / n, np.full(n, 1e-3))
    cases = [
        ("bursty", bursty, "auto"),
        ("bursty", bursty, "hull"),
        ("concave (adversarial)", concave, "auto"),
    ]
    print(f"### Exact curve, synthetic traces of {n:,} requests\n")
    print("| trace | method | used | points | passes | rates evaluated | wall (s) | CPU (s) |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name, (t, w), method in cases:
        mean = float(w.sum() / t[-1])
        e, seconds = timed(exact_rb_points, t, w, mean, method=method)
        print(
            f"| {name} | {method} | {e.method} | {len(e.rates):,} | {e.passes} | {e.evaluations} "
            f"| {seconds:.3f} | {LAST_CPU_S[0]:.3f} |"
        )
    print()


def wc62_models() -> dict[Stage, object]:
    profile = SsdProfile.load(DATA / "wc62" / "profile_ssd.json")
    return {
        s: stage_model(s, link_bandwidth_bytes_per_s=125e6, profile=profile) for s in STORAGE_PATH
    }


def bench_exact_wc62() -> None:
    trace = read_trace(DATA / "wc62" / "traces" / "trace0036.txt")
    print(f"### Exact curve of wc62 trace0036 ({len(trace):,} requests)\n")
    print("| stage | points | passes | rates evaluated | exact (s) | 1001-rate grid (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for stage, model in wc62_models().items():
        c, seconds = timed(exact_rb_curve, trace, model)
        tokens = model.tokens(trace)  # type: ignore[attr-defined]
        e = exact_rb_points(trace.time, tokens, c.mean_rate)
        _, grid_s = timed(rb_curve, trace, model)
        print(
            f"| {stage.value} | {len(c)} | {e.passes} | {e.evaluations} | {seconds:.3f} "
            f"| {grid_s:.3f} |"
        )
    print()


def bench_wc62_all() -> None:
    paths = sorted((DATA / "wc62" / "traces").glob("trace*.txt"))
    traces: list[Trace]
    traces, read_s = timed(lambda: [read_trace(p) for p in paths])
    models = wc62_models()
    start = time.perf_counter()
    points = 0
    for trace in traces:
        for model in models.values():
            points += len(rb_curve(trace, model))
    grid_s = time.perf_counter() - start
    start = time.perf_counter()
    for trace in traces:
        for model in models.values():
            exact_rb_curve(trace, model)
    exact_s = time.perf_counter() - start
    curves = len(traces) * len(models)
    print(f"### All {curves} curves of the {len(traces)} wc62 traces\n")
    print("| what | time (s) | vs WorkloadCompactor (~390 s) |")
    print("|---|---:|---:|")
    print(f"| reading the {len(traces)} traces | {read_s:.2f} | |")
    print(
        f"| WC grid curves ({points:,} points), 1 thread | {grid_s:.2f} "
        f"| {WC_REFERENCE_S / grid_s:.0f}× faster |"
    )
    print(f"| exact curves, 1 thread | {exact_s:.2f} | {WC_REFERENCE_S / exact_s:.0f}× faster |\n")


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    bench_rbgen(1_000_000 if quick else 10_000_000, 1000, 3 if quick else 5)
    bench_exact_synthetic(200_000 if quick else 1_000_000)
    if (DATA / "wc62").is_dir():
        bench_exact_wc62()
        bench_wc62_all()
    else:
        print(f"(wc62 data not found at {DATA}: skipped the real-trace benchmarks)")


if __name__ == "__main__":
    main()
