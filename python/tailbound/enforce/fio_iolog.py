"""A tenant's trace as a fio iolog, and a fio job file that replays the tenants' iologs through
``tailbound-gate`` (or any NBD server) with fio's ``nbd`` engine (``docs/enforcement.md``,
"Storage path", "End to end").

**Format.** fio's iolog version 3 (fio ≥ 3.31, ``man fio``, "TRACE FILE FORMAT"): the line
``fio version 3 iolog``, then ``TIMESTAMP FILE add``, ``TIMESTAMP FILE open``, one
``TIMESTAMP FILE read|write OFFSET LENGTH`` per request and ``TIMESTAMP FILE close``.
Timestamps are **microseconds** from the start of the run: the manual does not say the unit;
fio 3.33's own ``write_iolog`` writes microseconds and its replay sleeps the differences as
microseconds (checked on this machine, and :func:`write_fio_iolog`'s test replays a log through
fio and times it). The file name is the tenant's name (fio's ``nbd`` engine ignores it; with a
file engine it is the file replayed on).

**Offsets** (a documented choice): an export of ``export_size`` bytes takes a request of
``size`` bytes at an offset that is a multiple of ``align`` in ``[0, export_size - size]``, i.e.
one of ``slots = (export_size - size) // align + 1`` positions. A trace with offsets keeps them
modulo the export: position ``(offset // align) mod slots``. A trace without offsets (the wc62
traces have none) is laid out one request after another, as a log-structured volume would write
it: request ``i`` at the sum of the sizes before it, wrapped by the same rule. A request larger
than the export is refused.

**Open loop, and its limits** (fio 3.33, checked on this machine; ``tests/enforce/
test_fio_iolog.py``). fio replays a v3 log by sleeping, before each request, the difference
between its timestamp and the previous one *minus the time since the previous issue*
(``iolog.c: iolog_delay``): requests go out at their timestamps while fio has a free slot
(``iodepth``) and the CPU to keep up; a request issued late moves the later ones with it. But
fio reaps completions only when all ``iodepth`` slots are busy (``backend.c: do_io`` waits for
completions on a full queue), so with ``iodepth > 1`` its completion latencies include the time
a finished request waited for fio, and the requests in flight when the log ends are not counted
at all; with ``iodepth = 1`` each request waits for the previous one (closed loop). Nor can it
log when it issued a replayed request (``read_iolog`` overrides ``write_iolog``). So fio with
these files is a faithful *load* (the trace's requests at its times) but not a latency meter:
the end-to-end test replays the same requests (same offsets, :func:`nbd_offsets`) with
``tailbound-replay client --nbd``, which measures every request's issue lag and its latency
from its trace timestamp.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError
from tailbound.traces.trace import Op, Trace

#: The header of fio's version 3 iolog.
HEADER = "fio version 3 iolog"
#: Offsets are multiples of this by default (a page: what O_DIRECT backends need).
DEFAULT_ALIGN = 4096
#: File names fio's iolog parser reads (``%256s``: no whitespace, at most 256 bytes).
_MAX_NAME = 256


def nbd_offsets(trace: Trace, export_size: int, *, align: int = DEFAULT_ALIGN) -> NDArray[np.int64]:
    """Each request's byte offset on an export of ``export_size`` bytes (see the module
    documentation: the trace's offsets modulo the export, else requests laid out one after
    another, wrapped; multiples of ``align``).

    >>> t = Trace.from_arrays(time=[0, 1, 2], op=[0, 1, 0], size=[4096, 8192, 8192])
    >>> nbd_offsets(t, 16384).tolist()  # the third would start at 12288: slot 3 of 3 wraps to 0
    [0, 4096, 0]
    >>> t = Trace.from_arrays(time=[0, 1], op=[0, 0], size=[512, 512], offset=[5000, 70000])
    >>> nbd_offsets(t, 65536).tolist()  # 16 slots of 4096: 5000 → slot 1, 70000 → slot 17 % 16
    [4096, 4096]
    """
    if align <= 0 or align & (align - 1):
        raise ConfigError(None, f"must be a power of two, got {align}", field="align")
    if export_size < align:
        raise ConfigError(
            None, f"{export_size} bytes is less than one {align}-byte slot", field="export_size"
        )
    size = trace.size.astype(np.int64)
    too_big = np.flatnonzero(size > export_size)
    if too_big.size:
        i = int(too_big[0])
        raise ConfigError(
            None,
            f"{trace.name or 'trace'}: request {i} of {int(size[i])} bytes is larger than the "
            f"export ({export_size} bytes)",
            field="export_size",
        )
    slots = (export_size - size) // align + 1
    if trace.offset is not None:
        position = trace.offset.astype(np.int64) // align
    else:
        ends = np.cumsum(size)
        position = (ends - size) // align  # where the request would start, in slots
    return (position % slots) * align


def write_fio_iolog(
    trace: Trace,
    path: str | Path,
    *,
    export_size: int,
    file_name: str | None = None,
    align: int = DEFAULT_ALIGN,
) -> int:
    """Write ``trace`` as a fio version 3 iolog at ``path`` (atomically) for an export of
    ``export_size`` bytes; returns the number of requests. Timestamps are the trace's times in
    microseconds, rounded to the nearest (fio's resolution); the first request keeps its time
    (fio sleeps until it). ``file_name`` defaults to the trace's name.

    >>> import tempfile
    >>> t = Trace.from_arrays(time=[0.25, 0.5], op=[0, 1], size=[4096, 512], name="T1")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = write_fio_iolog(t, Path(d) / "T1.iolog", export_size=1 << 20)
    ...     print((Path(d) / "T1.iolog").read_text(), end="")
    fio version 3 iolog
    0 T1 add
    0 T1 open
    250000 T1 read 0 4096
    500000 T1 write 4096 512
    500000 T1 close
    """
    name = file_name if file_name is not None else (trace.name or "tenant")
    if not name or len(name) > _MAX_NAME or any(c.isspace() for c in name):
        raise ConfigError(
            None, f"{name!r}: a fio iolog file name has no blanks and at most 256 bytes"
        )
    if len(trace) and trace.time[0] < 0:
        raise ConfigError(None, f"{name}: negative trace time {trace.time[0]}")
    if np.any(trace.size <= 0):
        i = int(np.flatnonzero(trace.size <= 0)[0])
        raise ConfigError(None, f"{name}: request {i} has size {int(trace.size[i])}; fio needs ≥ 1")
    offsets = nbd_offsets(trace, export_size, align=align)
    micros = np.rint(trace.time * 1e6).astype(np.int64)
    ops = np.where(trace.op == Op.READ, "read", "write")
    last = int(micros[-1]) if len(trace) else 0
    lines = [HEADER, f"0 {name} add", f"0 {name} open"]
    lines += [
        f"{t} {name} {o} {off} {s}"
        for t, o, off, s in zip(
            micros.tolist(), ops.tolist(), offsets.tolist(), trace.size.tolist(), strict=True
        )
    ]
    lines.append(f"{last} {name} close")
    write_text_atomic(Path(path), "\n".join(lines) + "\n")
    return len(trace)


def write_fio_job(
    iologs: Mapping[str, str | Path],
    path: str | Path,
    *,
    host: str,
    port: int,
    iodepth: int = 64,
) -> None:
    """Write a fio job file replaying each tenant's iolog (``{tenant: iolog path}``) on the
    export of the same name at ``nbd://host:port/`` with fio's ``nbd`` engine, all tenants in
    one run (one job each, started together), ``iodepth`` requests in flight at most per tenant
    (a request finding them all busy waits: give more than the tenant's largest backlog).
    Latency percentiles in fio's output are from fio's submission, not from the trace time."""
    if not 1 <= iodepth <= 65536:
        raise ConfigError(None, f"must be in 1..65536, got {iodepth}", field="iodepth")
    if not 0 < port < 65536:
        raise ConfigError(None, f"not a TCP port: {port}", field="port")
    lines = [
        "# written by tailbound (tailbound.enforce.fio_iolog): open-loop replay of a plan's",
        "# tenants through an NBD server, one job per tenant",
        "[global]",
        "ioengine=nbd",
        f"iodepth={iodepth}",
        "replay_no_stall=0",
        "group_reporting=0",
        "percentile_list=50:90:99:99.9",
    ]
    for tenant, log in iologs.items():
        if not tenant or any(c.isspace() or c in "[]/" for c in tenant):
            raise ConfigError(None, f"{tenant!r} cannot name a fio job or an NBD export here")
        lines += ["", f"[{tenant}]", f"uri=nbd://{host}:{port}/{tenant}", f"read_iolog={log}"]
    write_text_atomic(Path(path), "\n".join(lines) + "\n")
