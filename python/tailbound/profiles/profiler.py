"""Measure a device's read and write bandwidth by request size on a real file (thesis §2.3.2).

"Our system builds a performance profile for each SSD by measuring the empirical throughput over
a range of request sizes" (thesis §2.3.2). For each request size and each operation, ``threads``
threads issue random-offset, aligned requests to a scratch file for ``seconds_per_point``
seconds; the point's bandwidth is the bytes moved divided by the wall time from the common start
to the last thread's finish (including the final ``fsync`` of buffered writes). The result is an
:class:`~tailbound.profiles.tokens.SsdProfile`, whose JSON form is the WorkloadCompactor
system's ``profile_ssd.json``.

How the I/O is done:

* The file is opened with ``O_DIRECT`` where the file system allows it, so reads reach the device
  rather than the page cache. When ``O_DIRECT`` is refused (at ``open`` or on the first aligned
  request), the profiler falls back to buffered I/O, drops the file's cached pages with
  ``posix_fadvise(POSIX_FADV_DONTNEED)`` before every point and ``fsync``\\ s after every write
  point, and reports a note: the figures then include the page cache's effect.
* Buffers come from anonymous ``mmap`` (page aligned); offsets are multiples of 4096 bytes;
  request sizes must be multiples of 512 bytes.
* ``os.preadv``/``os.pwrite`` release the GIL, so Python threads give real concurrency.
* The scratch file starts with a 4096-byte header that the profiler never overwrites; a non-empty
  file without this header is refused rather than overwritten with random data.

The dispatch limits of the profile (documented choice): ``readMPL = writeMPL = threads`` (the
concurrency the bandwidths were measured at) and ``maxOutstanding{Read,Write}Bytes = threads ×
largest profiled size`` (room for every thread to have its largest request in flight).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tailbound.errors import TailboundError
from tailbound.profiles.tokens import SsdProfile

#: Default request sizes: powers of two from 512 B to 256 KiB.
DEFAULT_SIZES: tuple[int, ...] = tuple(512 << k for k in range(10))
#: Offsets are multiples of this many bytes (a page; enough for O_DIRECT on 512e and 4Kn drives).
OFFSET_ALIGN = 4096
#: Request sizes must be multiples of this many bytes (a sector).
SIZE_ALIGN = 512
#: The scratch file's header: this magic string padded to ``OFFSET_ALIGN`` bytes, never overwritten.
MAGIC = b"tailbound profiler scratch file v1\n"
_FILL_CHUNK = 1 << 20


class ProfilerError(TailboundError):
    """A profiling run that cannot be done (bad settings, unusable target file, I/O failure)."""

    def __init__(self, target: str | Path | None, message: str) -> None:
        self.target = None if target is None else str(target)
        super().__init__(f"{self.target or '<profile>'}: {message}")


@dataclass(frozen=True)
class ProfileSettings:
    """What to measure: request sizes (bytes), threads, seconds per point, scratch file size."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    threads: int = 4
    seconds_per_point: float = 2.0
    file_size: int = 1 << 30

    def check(self, target: str | Path | None = None) -> None:
        """Raise :class:`ProfilerError` naming the setting at fault."""
        if not self.sizes:
            raise ProfilerError(target, "--sizes: give at least one request size")
        for s in self.sizes:
            if s <= 0 or s % SIZE_ALIGN:
                raise ProfilerError(
                    target, f"--sizes: {s} is not a positive multiple of {SIZE_ALIGN} bytes"
                )
        if len(set(self.sizes)) != len(self.sizes):
            raise ProfilerError(target, "--sizes: a request size appears twice")
        if self.threads < 1:
            raise ProfilerError(target, f"--threads: expected at least 1, got {self.threads}")
        if not self.seconds_per_point > 0:
            raise ProfilerError(
                target, f"--seconds-per-point: expected > 0, got {self.seconds_per_point}"
            )
        need = OFFSET_ALIGN + max(self.sizes)
        if self.file_size < need:
            raise ProfilerError(
                target,
                f"--file-size: {self.file_size} bytes cannot hold the header ({OFFSET_ALIGN} B) "
                f"and one {max(self.sizes)}-byte request; use at least {need}",
            )


@dataclass
class ProfileRun:
    """A finished profile, whether ``O_DIRECT`` was used, and notes for the user."""

    profile: SsdProfile
    direct_io: bool
    notes: list[str] = field(default_factory=list)


def _prepare_file(target: Path, file_size: int) -> None:
    """Create ``target`` or extend it to ``file_size`` bytes of random data behind the header."""
    if target.is_dir():
        raise ProfilerError(target, "is a directory; name a file to create or reuse")
    if not target.parent.is_dir():
        raise ProfilerError(target, f"directory {target.parent} does not exist")
    if target.exists():
        info = target.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ProfilerError(target, "is not a regular file (devices are not supported)")
        if info.st_size > 0:
            with target.open("rb") as f:
                if f.read(len(MAGIC)) != MAGIC:
                    raise ProfilerError(
                        target,
                        "exists and is not a tailbound profiler scratch file; refusing to "
                        "overwrite it with random data (remove it or name a new file)",
                    )
    header = MAGIC.ljust(OFFSET_ALIGN, b"\0")
    filler = np.random.default_rng(0).bytes(_FILL_CHUNK)
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ProfilerError(target, f"cannot open: {e.strerror}") from None
    try:
        os.pwrite(fd, header, 0)
        position = max(os.fstat(fd).st_size, OFFSET_ALIGN)
        while position < file_size:
            chunk = filler[: min(_FILL_CHUNK, file_size - position)]
            position += os.pwrite(fd, chunk, position)
        os.fsync(fd)
    except OSError as e:
        raise ProfilerError(target, f"cannot write the scratch file: {e.strerror}") from None
    finally:
        os.close(fd)


def _open_direct(target: Path, probe_size: int) -> int | None:
    """A descriptor opened with ``O_DIRECT`` that served one aligned read, or ``None``."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        fd = os.open(target, os.O_RDWR | flag)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return None
        raise ProfilerError(target, f"cannot open: {e.strerror}") from None
    buffer = mmap.mmap(-1, max(probe_size, OFFSET_ALIGN))
    view = memoryview(buffer)
    try:
        os.preadv(fd, [view[:probe_size]], OFFSET_ALIGN)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return None
        raise ProfilerError(target, f"cannot read: {e.strerror}") from None
    finally:
        view.release()
        buffer.close()
    return fd


def _drop_cache(fd: int) -> None:
    os.fsync(fd)
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def _measure_point(
    fd: int,
    *,
    size: int,
    write: bool,
    settings: ProfileSettings,
    seeds: Sequence[np.random.SeedSequence],
    target: Path,
) -> float:
    """Bytes per second moved by ``settings.threads`` threads issuing ``size``-byte requests."""
    slots = (settings.file_size - OFFSET_ALIGN - size) // OFFSET_ALIGN + 1
    moved = [0] * settings.threads
    finished = [0.0] * settings.threads
    failures: list[BaseException] = []
    start = [0.0]

    def mark_start() -> None:  # run once, by the last thread to arrive, before any is released
        start[0] = time.perf_counter()

    start_barrier = threading.Barrier(settings.threads, action=mark_start)

    def worker(index: int) -> None:
        rng = np.random.default_rng(seeds[index])
        buffer = mmap.mmap(-1, size)
        view = memoryview(buffer)
        try:
            if write:
                view[:] = rng.bytes(size)
            start_barrier.wait()
            deadline = start[0] + settings.seconds_per_point
            total = 0
            now = time.perf_counter()
            while now < deadline:
                offsets = (OFFSET_ALIGN + rng.integers(0, slots, 64) * OFFSET_ALIGN).tolist()
                for offset in offsets:
                    if write:
                        total += os.pwrite(fd, view, offset)
                    else:
                        total += os.preadv(fd, [view], offset)
                    now = time.perf_counter()
                    if now >= deadline:
                        break
            moved[index] = total
            finished[index] = now
        except BaseException as e:  # reported by the main thread
            failures.append(e)
            start_barrier.abort()
        finally:
            view.release()
            buffer.close()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(settings.threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        e = failures[0]
        reason = e.strerror if isinstance(e, OSError) else repr(e)
        op = "write" if write else "read"
        raise ProfilerError(target, f"{op} of {size} bytes failed: {reason}")
    end = max(finished)
    if write:
        os.fsync(fd)
        end = time.perf_counter()
    return sum(moved) / (end - start[0])


def profile_file(
    target: str | Path,
    settings: ProfileSettings | None = None,
    *,
    direct: bool | None = None,
    progress: bool = False,
    seed: int = 0,
    on_note: Callable[[str], None] | None = None,
) -> ProfileRun:
    """Profile ``target`` (created or extended to ``settings.file_size``) and return the result.

    ``direct=None`` tries ``O_DIRECT`` and falls back to buffered I/O; ``False`` forces buffered
    I/O; ``True`` fails when ``O_DIRECT`` is refused. ``on_note`` receives notes as they arise
    (they are also in :attr:`ProfileRun.notes`). ``progress`` shows a tqdm bar over the points.
    """
    from tqdm import tqdm

    settings = settings or ProfileSettings()
    path = Path(target)
    settings.check(path)
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if on_note is not None:
            on_note(message)

    sizes = sorted(settings.sizes)
    _prepare_file(path, settings.file_size)
    fd = None if direct is False else _open_direct(path, sizes[0])
    used_direct = fd is not None
    if fd is None:
        if direct:
            raise ProfilerError(path, "the file system refuses O_DIRECT")
        reason = (
            "buffered I/O requested"
            if direct is False
            else f"O_DIRECT refused (at open or on a {sizes[0]}-byte aligned read)"
        )
        note(
            f"{reason}: measuring buffered I/O, dropping cached pages (posix_fadvise DONTNEED) "
            "before each point and fsync-ing writes; the figures include the page cache's effect"
        )
        fd = os.open(path, os.O_RDWR)
    read_bw: list[float] = []
    write_bw: list[float] = []
    root = np.random.SeedSequence(seed)
    points = [(size, write) for size in sizes for write in (False, True)]
    try:
        bar = tqdm(points, desc="profile", unit="point", disable=not progress, leave=False)
        for (size, write), seeds in zip(bar, root.spawn(len(points)), strict=True):
            bar.set_postfix_str(f"{'write' if write else 'read'} {size} B")
            if not used_direct:
                _drop_cache(fd)
            bandwidth = _measure_point(
                fd,
                size=size,
                write=write,
                settings=settings,
                seeds=seeds.spawn(settings.threads),
                target=path,
            )
            if not bandwidth > 0:
                raise ProfilerError(
                    path, f"no {size}-byte request completed; raise --seconds-per-point"
                )
            (write_bw if write else read_bw).append(bandwidth)
    finally:
        os.close(fd)
    profile = SsdProfile(
        sizes=np.array(sizes, dtype=np.float64),
        read_bandwidth=np.array(read_bw),
        write_bandwidth=np.array(write_bw),
        read_mpl=settings.threads,
        write_mpl=settings.threads,
        max_outstanding_read_bytes=settings.threads * sizes[-1],
        max_outstanding_write_bytes=settings.threads * sizes[-1],
    )
    return ProfileRun(profile, used_direct, notes)
