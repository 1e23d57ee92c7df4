"""A depth sweep of a real file or device (PSLO's Fig. 4; issue 26): throughput and latency
quantiles of one stream keeping ``D`` requests outstanding, ``D = 1, 2, 4, …, max``, and the
simulator's array model fitted to it (:mod:`tailbound.profiles.array_fit`).

The I/O is the profiler's (:mod:`tailbound.profiles.profiler`): a scratch file with its header,
``O_DIRECT`` where the file system allows it (else buffered I/O with the file's cached pages
dropped before every depth, noted), random aligned offsets, page-aligned buffers. Depth ``D`` is
``D`` threads each issuing one ``size``-byte request at a time (closed loop) for
``seconds_per_depth`` seconds; a request's latency is the wall time of its ``preadv`` (or
``pwrite``), and the depth's throughput the requests completed over the time from the common
start to the last thread's last completion.

:func:`sweep_profile` is what ``tailbound profile --depth-sweep`` writes: an SSD profile whose
bandwidth table is measured at depth 1 (under the array model a request's work is its time on one
channel), whose MPLs admit ``max`` requests, with two more sections the SSD profile's reader
ignores — ``array``, the fitted model as the simulator's ``array`` table (which
:func:`tailbound.sim.plan.scenario_from_plan` gives every device the profile serves), and
``depthSweep``, the measurements (``depths``, ``iops``, ``quantiles``, ``latencySeconds``).
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.profiles.array_fit import ArrayFit, fit_array
from tailbound.profiles.profiler import (
    OFFSET_ALIGN,
    SIZE_ALIGN,
    ProfilerError,
    ProfileRun,
    ProfileSettings,
    _drop_cache,
    _open_direct,
    _prepare_file,
    profile_file,
)

#: The latency quantiles a sweep reports (the tail fit reads those at or above 0.9).
QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99, 0.999)
#: The largest depth a sweep may ask for (threads of this process).
MAX_DEPTH = 256


def sweep_depths(max_depth: int) -> tuple[int, ...]:
    """``1, 2, 4, …`` up to ``max_depth``, which is always included.

    >>> sweep_depths(12)
    (1, 2, 4, 8, 12)
    """
    if not 1 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"the largest depth must be in [1, {MAX_DEPTH}], got {max_depth}")
    out = [1 << k for k in range(max_depth.bit_length()) if 1 << k <= max_depth]
    return tuple(out if out[-1] == max_depth else [*out, max_depth])


@dataclass(frozen=True)
class DepthSweep:
    """Per depth (requests outstanding) the throughput (requests per second) and the latency
    at each of ``quantiles`` (seconds), of ``op`` requests of ``size`` bytes."""

    op: str
    size: int
    depths: tuple[int, ...]
    iops: tuple[float, ...]
    quantiles: tuple[float, ...]
    latency_s: tuple[tuple[float, ...], ...]
    direct_io: bool = True
    notes: list[str] = field(default_factory=list)

    def fit(self) -> ArrayFit:
        """The array model fitted to the sweep (:func:`~tailbound.profiles.array_fit.fit_array`)."""
        return fit_array(self.depths, self.iops, self.quantiles, self.latency_s)

    def to_json(self) -> dict[str, Any]:
        """The profile's ``depthSweep`` section."""
        return {
            "op": self.op,
            "requestSize": self.size,
            "depths": list(self.depths),
            "iops": list(self.iops),
            "quantiles": list(self.quantiles),
            "latencySeconds": [list(row) for row in self.latency_s],
        }


def _measure_depth(
    fd: int, *, depth: int, size: int, write: bool, seconds: float, file_size: int, seed: int
) -> tuple[float, np.ndarray]:
    """Throughput (requests per second) and every request's latency (s) of ``depth`` threads
    each keeping one request outstanding for ``seconds``."""
    slots = (file_size - OFFSET_ALIGN - size) // OFFSET_ALIGN + 1
    latencies: list[list[float]] = [[] for _ in range(depth)]
    finished = [0.0] * depth
    failures: list[BaseException] = []
    start = [0.0]
    barrier = threading.Barrier(depth, action=lambda: start.__setitem__(0, time.perf_counter()))

    def worker(index: int) -> None:
        rng = np.random.default_rng([seed, depth, index])
        buffer = mmap.mmap(-1, size)
        view = memoryview(buffer)
        mine = latencies[index]
        try:
            if write:
                view[:] = rng.bytes(size)
            barrier.wait()
            deadline = start[0] + seconds
            now = time.perf_counter()
            while now < deadline:
                for offset in (OFFSET_ALIGN + rng.integers(0, slots, 64) * OFFSET_ALIGN).tolist():
                    before = time.perf_counter()
                    if write:
                        os.pwrite(fd, view, offset)
                    else:
                        os.preadv(fd, [view], offset)
                    now = time.perf_counter()
                    mine.append(now - before)
                    if now >= deadline:
                        break
            finished[index] = now
        except BaseException as e:  # reported by the caller
            failures.append(e)
            barrier.abort()
        finally:
            view.release()
            buffer.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(depth)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        e = failures[0]
        raise ProfilerError(None, f"depth {depth}: {e.strerror if isinstance(e, OSError) else e!r}")
    every = np.concatenate([np.asarray(x, dtype=np.float64) for x in latencies])
    span = max(finished) - start[0]
    return (every.size / span if span > 0 else 0.0), every


def measure_depth_sweep(
    target: str | Path,
    max_depth: int,
    *,
    size: int = 4096,
    write: bool = False,
    seconds_per_depth: float = 2.0,
    file_size: int = 1 << 30,
    direct: bool | None = None,
    seed: int = 0,
    on_depth: Callable[[int], None] | None = None,
) -> DepthSweep:
    """Sweep ``target`` (a scratch file, created or extended to ``file_size`` as the profiler
    does) at :func:`sweep_depths` of ``max_depth`` (module documentation). ``direct``: as
    :func:`~tailbound.profiles.profiler.profile_file`'s. ``on_depth`` is told each depth as it
    starts."""
    path = Path(target)
    if size <= 0 or size % SIZE_ALIGN:
        raise ProfilerError(path, f"--sweep-size: {size} is not a positive multiple of 512 bytes")
    if not seconds_per_depth > 0:
        raise ProfilerError(path, f"--seconds-per-point: expected > 0, got {seconds_per_depth}")
    if file_size < OFFSET_ALIGN + size:
        raise ProfilerError(path, f"--file-size: {file_size} bytes cannot hold one request")
    try:
        depths = sweep_depths(max_depth)
    except ValueError as e:
        raise ProfilerError(path, f"--depth-sweep: {e}") from None
    _prepare_file(path, file_size)
    notes: list[str] = []
    fd = None if direct is False else _open_direct(path, size)
    used_direct = fd is not None
    if fd is None:
        if direct:
            raise ProfilerError(path, "the file system refuses O_DIRECT")
        notes.append(
            "O_DIRECT refused or not asked for: buffered I/O, cached pages dropped before each "
            "depth; the latencies include the page cache's effect"
        )
        fd = os.open(path, os.O_RDWR)
    iops: list[float] = []
    rows: list[tuple[float, ...]] = []
    try:
        for depth in depths:
            if on_depth is not None:
                on_depth(depth)
            if not used_direct:
                _drop_cache(fd)
            x, latency = _measure_depth(
                fd,
                depth=depth,
                size=size,
                write=write,
                seconds=seconds_per_depth,
                file_size=file_size,
                seed=seed,
            )
            if latency.size < 2 or not x > 0:
                raise ProfilerError(path, f"depth {depth}: too few requests; raise the time")
            iops.append(x)
            rows.append(tuple(float(np.quantile(latency, q)) for q in QUANTILES))
        if write:
            os.fsync(fd)
    finally:
        os.close(fd)
    return DepthSweep(
        "write" if write else "read",
        size,
        depths,
        tuple(iops),
        QUANTILES,
        tuple(rows),
        used_direct,
        notes,
    )


@dataclass
class SweepProfile:
    """A profile with its depth sweep: the bandwidth table (depth 1), the sweep, the fit."""

    run: ProfileRun
    sweep: DepthSweep
    fit: ArrayFit

    def to_json(self) -> dict[str, Any]:
        """The SSD profile document with its ``array`` and ``depthSweep`` sections."""
        return {
            **self.run.profile.to_json(),
            "array": self.fit.table(),
            "depthSweep": {**self.sweep.to_json(), "fitResidual": self.fit.residual},
        }


def sweep_profile(
    target: str | Path,
    max_depth: int,
    *,
    sizes: Sequence[int],
    sweep_size: int = 4096,
    seconds_per_point: float = 2.0,
    file_size: int = 1 << 30,
    seed: int = 0,
    progress: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> SweepProfile:
    """The profile ``tailbound profile --depth-sweep`` writes (module documentation)."""
    settings = ProfileSettings(
        sizes=tuple(sizes), threads=1, seconds_per_point=seconds_per_point, file_size=file_size
    )
    run = profile_file(target, settings, progress=progress, seed=seed, on_note=on_note)
    bytes_cap = max_depth * max(max(sizes), sweep_size)
    run.profile = type(run.profile)(
        sizes=run.profile.sizes,
        read_bandwidth=run.profile.read_bandwidth,
        write_bandwidth=run.profile.write_bandwidth,
        read_mpl=max_depth,
        write_mpl=max_depth,
        max_outstanding_read_bytes=bytes_cap,
        max_outstanding_write_bytes=bytes_cap,
    )
    sweep = measure_depth_sweep(
        target,
        max_depth,
        size=sweep_size,
        seconds_per_depth=seconds_per_point,
        file_size=file_size,
        seed=seed,
    )
    for n in sweep.notes:
        if on_note is not None:
            on_note(n)
    return SweepProfile(run, sweep, sweep.fit())
