"""Readers of the trace formats parsed in Rust (``tailbound_core::parse``).

Each reader takes the file's path and returns a :class:`~tailbound.traces.Trace` named after the
file's stem; ``name`` and ``duration_s`` override the name and set the recording's length
(seconds) where the file does not record it. Parsing runs in Rust with the GIL released; errors
name the file, line (record for binary files) and field. ``docs/traces.md`` describes each
format and the choices made where its documentation is silent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tailbound import _core
from tailbound.errors import TraceFormatError
from tailbound.traces.columns import make_trace, parse_errors, units_per_second
from tailbound.traces.trace import Op, Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from tailbound.lazy import numpy as np

log = logging.getLogger(__name__)


def _from_columns(
    path: Path, columns: _core._Columns, name: str | None, duration_s: float | None
) -> Trace:
    time, op, size, offset, source, origin_s, _skipped = columns
    return make_trace(
        path,
        time=time,
        op=op,
        size=size,
        offset=offset,
        source=source,
        origin_s=origin_s,
        name=name,
        duration_s=duration_s,
    )


def read_wc(path: Path, *, name: str | None = None, duration_s: float | None = None) -> Trace:
    """WorkloadCompactor / SNC-Meister CSV: ``arrival_ns,0xSIZE,DiskRead|DiskWrite|Get|Put``.

    Time counts from the file's zero (``origin_s`` 0); ``Get`` is a read and ``Put`` a write. The
    WorkloadCompactor example traces are 600 s recordings: pass ``duration_s=600`` to keep the
    idle tail after the last request.
    """
    with parse_errors(path):
        return _from_columns(path, _core.parse_wc(path), name, duration_s)


def read_msr(path: Path, *, name: str | None = None, duration_s: float | None = None) -> Trace:
    """MSR Cambridge CSV: ``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``.

    Time zero is the earliest request; ``origin_s`` is its Unix time (the timestamps are Windows
    FILETIME, 100 ns ticks since 1601-01-01 UTC). The source id is ``DiskNumber``; offsets are
    kept; hostname and response time are not.
    """
    with parse_errors(path):
        return _from_columns(path, _core.parse_msr(path), name, duration_s)


def read_disksim(
    path: Path,
    *,
    time_unit: str = "ms",
    sector_bytes: int = 512,
    read_value: int = 1,
    write_value: int = 0,
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """DiskSim-style ASCII: ``time device lba size rw``, separated by spaces or tabs.

    ``lba`` and ``size`` count ``sector_bytes``-byte sectors; the offset is ``lba ×
    sector_bytes``, the source id ``device``. ``rw`` equal to ``read_value`` is a read, equal to
    ``write_value`` a write, anything else an error. ``time_unit`` is ``s``, ``ms``, ``us`` or
    ``ns``; time counts from the file's zero. The defaults are DiskSim's and MSN-FS's
    conventions (milliseconds, 512-byte sectors, 1 read, 0 write); :func:`read_mqsim` has
    MQSim's.
    """
    per_s = units_per_second(time_unit, path)
    with parse_errors(path):
        columns = _core.parse_ascii(path, per_s, sector_bytes, read_value, write_value)
    return _from_columns(path, columns, name, duration_s)


def read_mqsim(
    path: Path,
    *,
    time_unit: str = "ns",
    sector_bytes: int = 512,
    read_value: int = 1,
    write_value: int = 0,
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """MQSim ASCII traces: :func:`read_disksim` with times in nanoseconds (type 0 write, 1 read)."""
    return read_disksim(
        path,
        time_unit=time_unit,
        sector_bytes=sector_bytes,
        read_value=read_value,
        write_value=write_value,
        name=name,
        duration_s=duration_s,
    )


def read_spc(path: Path, *, name: str | None = None, duration_s: float | None = None) -> Trace:
    """UMass SPC CSV: ``ASU,LBA,Size,Opcode,Timestamp[,…]``.

    ``LBA`` counts 512-byte sectors (offset ``LBA × 512``), ``Size`` is bytes, ``Opcode``
    ``r``/``R`` read or ``w``/``W`` write, ``Timestamp`` seconds from the file's zero; the source
    id is ``ASU``. Optional fields after the timestamp are ignored.
    """
    with parse_errors(path):
        return _from_columns(path, _core.parse_spc(path), name, duration_s)


def read_vscsi(
    path: Path,
    *,
    other_commands: Literal["skip", "error"] = "skip",
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """CloudPhysics VSCSI binary trace (version 1: 32-byte records; version 2: 40-byte records).

    SCSI READ(6/10/12/16) are reads and WRITE(6/10/12/16) writes. Other commands move no user
    data: with ``other_commands="skip"`` (the default) they are left out and their number logged
    at INFO level on ``tailbound.traces.native``; with ``"error"`` the first one is a
    :class:`~tailbound.errors.TraceFormatError` naming its record. The offset is ``lbn × 512``;
    time zero is the earliest timestamp and ``origin_s`` that timestamp on the recording's own
    clock (microseconds since the host booted, not a Unix time).
    """
    if other_commands not in ("skip", "error"):
        message = f"other_commands must be 'skip' or 'error', got {other_commands!r}"
        raise TraceFormatError(path, message, field="other_commands")
    with parse_errors(path):
        columns = _core.parse_vscsi(path, other_commands == "skip")
    skipped = columns[6]
    if skipped:
        log.info("%s: skipped %d SCSI commands that are neither reads nor writes", path, skipped)
    return _from_columns(path, columns, name, duration_s)


#: What an Azure LLM request's ``size`` counts, by the ``size`` option of :func:`read_azure_llm`.
LlmSize = Literal["total", "context", "generated"]


@dataclass(frozen=True)
class LlmRequests:
    """An Azure LLM trace with both token counts, aligned with ``trace``'s (sorted) requests."""

    trace: Trace
    context_tokens: NDArray[np.int64]
    generated_tokens: NDArray[np.int64]


def read_azure_llm_requests(
    path: Path,
    *,
    size: LlmSize = "total",
    name: str | None = None,
    duration_s: float | None = None,
) -> LlmRequests:
    """An Azure LLM inference trace as a :class:`Trace` plus both token counts per request.

    Each line is one RPC, recorded as a read (the client sends a prompt and waits for the
    answer). Its ``size`` is a token count, not bytes: ``ContextTokens + GeneratedTokens`` with
    ``size="total"`` (the default: the work an inference server does grows with both the prompt it
    prefills and the tokens it decodes), or only one of them. Time zero is the earliest request,
    ``origin_s`` its Unix time (the timestamps are UTC).
    """
    if size not in ("total", "context", "generated"):
        message = f"size must be 'total', 'context' or 'generated', got {size!r}"
        raise TraceFormatError(path, message, field="size")
    with parse_errors(path):
        time, context, generated, origin_s = _core.parse_azure_llm(path)
    sizes = {"total": context + generated, "context": context, "generated": generated}[size]
    order = np.argsort(time, kind="stable")
    trace = make_trace(
        path,
        time=time,
        op=np.full(time.shape, Op.READ, dtype=np.uint8),
        size=sizes,
        origin_s=origin_s,
        name=name,
        duration_s=duration_s,
    )
    return LlmRequests(trace, context[order], generated[order])


def read_azure_llm(
    path: Path,
    *,
    size: LlmSize = "total",
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """Azure LLM inference CSV (``TIMESTAMP,ContextTokens,GeneratedTokens``); see
    :func:`read_azure_llm_requests` for the mapping and for both token counts."""
    return read_azure_llm_requests(path, size=size, name=name, duration_s=duration_s).trace
