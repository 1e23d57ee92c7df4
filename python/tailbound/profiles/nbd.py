"""Measure an NBD export — ``tailbound-gate``'s backend through the gateway, or any NBD server —
with fio's ``nbd`` engine, as the Plan's costs need (``tailbound profile --nbd URI``;
``docs/enforcement.md``, "Storage path").

What is measured, per request size and operation (one fio run, the points one after another,
``stonewall``):

* **Bandwidth at the dispatch limits**: random, ``align``-aligned reads (writes) of that size
  over the whole export at queue depth ``depth`` for ``seconds_per_point`` seconds; the point's
  bandwidth is fio's ``bw_bytes`` (bytes moved over the job's run time). ``depth`` becomes the
  profile's ``readMPL``/``writeMPL`` and ``maxOutstanding{Read,Write}Bytes = depth × largest
  size``, the file profiler's choice (:mod:`tailbound.profiles.profiler`): the bandwidths are
  what the device gives with that many requests in service, which is what the dispatcher then
  allows.
* **Unqueued latency**: the same requests at queue depth 1 (one at a time), fio's completion
  latency median and 99th percentile. The profile format has no field for it; the JSON keeps it
  under ``"unqueuedLatency"`` (a list of ``{requestSize, readP50, readP99, writeP50, writeP99}``
  in seconds), which the profile readers ignore: it is the idle path's floor a live comparison
  adds to the simulator's prediction (``tests/enforce/test_gate_e2e.py``).

Writes overwrite the export's data: profile a scratch export.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from tailbound.profiles.profiler import SIZE_ALIGN, ProfilerError
from tailbound.profiles.tokens import SsdProfile

#: Request sizes profiled unless told: powers of two from 4 KiB to 256 KiB.
DEFAULT_NBD_SIZES: tuple[int, ...] = tuple(4096 << k for k in range(7))
#: fio's percentiles read back (its ``percentile_list``).
_PERCENTILES = "50:99"


@dataclass(frozen=True)
class NbdProfileSettings:
    """Request sizes (bytes), queue depth (the MPL), seconds per point and per latency point."""

    sizes: tuple[int, ...] = DEFAULT_NBD_SIZES
    depth: int = 4
    seconds_per_point: float = 2.0
    latency_seconds: float = 1.0

    def check(self, uri: str) -> None:
        """Raise :class:`ProfilerError` naming the setting at fault."""
        if not self.sizes:
            raise ProfilerError(uri, "--sizes: give at least one request size")
        for s in self.sizes:
            if s <= 0 or s % SIZE_ALIGN:
                raise ProfilerError(
                    uri, f"--sizes: {s} is not a positive multiple of {SIZE_ALIGN} bytes"
                )
        if len(set(self.sizes)) != len(self.sizes):
            raise ProfilerError(uri, "--sizes: a request size appears twice")
        if not 1 <= self.depth <= 4096:
            raise ProfilerError(
                uri, f"--threads: the queue depth must be 1..4096, got {self.depth}"
            )
        for name, value in (
            ("--seconds-per-point", self.seconds_per_point),
            ("--latency-seconds", self.latency_seconds),
        ):
            if not 0 < value <= 3600:
                raise ProfilerError(uri, f"{name}: expected seconds in (0, 3600], got {value}")


@dataclass
class NbdProfileRun:
    """The profile, each size's unqueued latencies (seconds) and fio's version."""

    profile: SsdProfile
    unqueued: list[dict[str, float]] = field(default_factory=list)
    fio_version: str = ""

    def to_json(self) -> dict[str, Any]:
        """The profile's JSON document with the unqueued latencies beside it."""
        document = self.profile.to_json()
        document["unqueuedLatency"] = self.unqueued
        return document


def check_uri(uri: str) -> str:
    """``nbd://HOST[:PORT]/EXPORT`` (or ``nbd+unix``), as fio's ``nbd`` engine takes it."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("nbd", "nbd+unix") or (parsed.scheme == "nbd" and not parsed.hostname):
        raise ProfilerError(uri, "--nbd: expected a URI nbd://HOST[:PORT]/EXPORT")
    return uri


def _fio() -> str:
    fio = shutil.which("fio")
    if fio is None:
        raise ProfilerError(None, "--nbd needs fio (Debian package fio, with its nbd engine)")
    return fio


def _job(uri: str, points: list[tuple[str, int, bool, int, float]]) -> str:
    lines = [
        "[global]",
        "ioengine=nbd",
        f"uri={uri}",
        "time_based=1",
        "norandommap=1",
        "randrepeat=0",
        f"percentile_list={_PERCENTILES}",
    ]
    for name, size, write, depth, seconds in points:
        lines += [
            "",
            f"[{name}]",
            "stonewall",
            f"rw={'randwrite' if write else 'randread'}",
            f"bs={size}",
            f"blockalign={size if size % 4096 else 4096}",
            f"iodepth={depth}",
            f"runtime={max(1, round(seconds * 1000))}ms",
        ]
    return "\n".join(lines) + "\n"


def _run_fio(uri: str, job: str, timeout_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tailbound-profile-") as tmp:
        path = Path(tmp) / "profile.fio"
        path.write_text(job)
        try:
            p = subprocess.run(
                [_fio(), "--output-format=json", str(path)],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProfilerError(uri, f"fio did not finish in {timeout_s:.0f} s") from None
    out = p.stdout
    start = out.find("{")
    if p.returncode != 0 or start < 0:
        message = (p.stderr.strip() or out.strip()).splitlines()
        raise ProfilerError(uri, f"fio failed: {message[-1] if message else p.returncode}")
    try:
        document: dict[str, Any] = json.loads(out[start:])
    except json.JSONDecodeError as e:
        raise ProfilerError(uri, f"fio's JSON output is unreadable: {e}") from None
    return document


def profile_nbd(uri: str, settings: NbdProfileSettings | None = None) -> NbdProfileRun:
    """Profile the NBD export at ``uri`` (see the module documentation)."""
    settings = settings or NbdProfileSettings()
    check_uri(uri)
    settings.check(uri)
    sizes = sorted(settings.sizes)
    points: list[tuple[str, int, bool, int, float]] = []
    for size in sizes:
        for write in (False, True):
            op = "write" if write else "read"
            bw_point = (f"bw-{op}-{size}", size, write, settings.depth, settings.seconds_per_point)
            points.append(bw_point)
            points.append((f"lat-{op}-{size}", size, write, 1, settings.latency_seconds))
    total = sum(p[4] for p in points)
    document = _run_fio(uri, _job(uri, points), timeout_s=60 + 3 * total)
    jobs = {j["jobname"]: j for j in document.get("jobs", [])}
    bandwidth: dict[tuple[str, int], float] = {}
    unqueued: list[dict[str, float]] = []
    for size in sizes:
        row: dict[str, float] = {"requestSize": size}
        for op in ("read", "write"):
            bw_job, lat_job = jobs.get(f"bw-{op}-{size}"), jobs.get(f"lat-{op}-{size}")
            if bw_job is None or lat_job is None:
                raise ProfilerError(uri, f"fio's output lacks the {op} points of {size} bytes")
            for j in (bw_job, lat_job):
                if j.get("error"):
                    raise ProfilerError(uri, f"fio job {j['jobname']}: error {j['error']}")
            bw = float(bw_job[op]["bw_bytes"])
            if not bw > 0:
                raise ProfilerError(
                    uri, f"no {size}-byte {op} completed; raise --seconds-per-point"
                )
            bandwidth[(op, size)] = bw
            clat = lat_job[op]["clat_ns"]
            if not clat.get("N"):
                raise ProfilerError(uri, f"no unqueued {size}-byte {op} completed")
            pct = clat["percentile"]
            row[f"{op}P50"] = float(pct["50.000000"]) / 1e9
            row[f"{op}P99"] = float(pct["99.000000"]) / 1e9
        unqueued.append(row)
    profile = SsdProfile(
        sizes=np.array(sizes, dtype=np.float64),
        read_bandwidth=np.array([bandwidth[("read", s)] for s in sizes]),
        write_bandwidth=np.array([bandwidth[("write", s)] for s in sizes]),
        read_mpl=settings.depth,
        write_mpl=settings.depth,
        max_outstanding_read_bytes=settings.depth * sizes[-1],
        max_outstanding_write_bytes=settings.depth * sizes[-1],
    )
    return NbdProfileRun(profile, unqueued, str(document.get("fio version", "")))
