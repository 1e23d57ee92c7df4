"""The front door of trace ingestion: :func:`read_trace` reads any supported format into a
:class:`~tailbound.traces.Trace`, detecting the format from the file's content unless told.

Formats are registered by name in :data:`FORMATS`; each entry's reader takes the path and the
format's keyword options, plus ``name`` (default: the file's stem) and ``duration_s`` (the
recording's length in seconds when the file does not say it). ``docs/traces.md`` describes every
format and the choices made where its documentation is silent.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tailbound.errors import TraceFormatError
from tailbound.traces import native, tabular
from tailbound.traces.detect import detect_format
from tailbound.traces.trace import Trace


@dataclass(frozen=True)
class TraceFormat:
    """A registered trace format: its name, what it is, and its reader."""

    name: str
    description: str
    reader: Callable[..., Trace]

    @property
    def options(self) -> tuple[str, ...]:
        """Keyword options the reader accepts."""
        params = inspect.signature(self.reader).parameters.values()
        return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _register(*formats: TraceFormat) -> dict[str, TraceFormat]:
    return {f.name: f for f in formats}


#: Every format :func:`read_trace` knows, by name.
FORMATS: dict[str, TraceFormat] = _register(
    TraceFormat("wc", "WorkloadCompactor / SNC-Meister CSV: arrival_ns,0xSIZE,op", native.read_wc),
    TraceFormat("msr", "MSR Cambridge CSV (SNIA IOTTA), FILETIME timestamps", native.read_msr),
    TraceFormat(
        "disksim", "DiskSim-style ASCII 'time device lba size rw' (default ms)", native.read_disksim
    ),
    TraceFormat("msnfs", "MSN File Server ASCII: DiskSim-style, milliseconds", native.read_disksim),
    TraceFormat("mqsim", "MQSim ASCII: DiskSim-style, nanoseconds", native.read_mqsim),
    TraceFormat("vscsi", "CloudPhysics VSCSI binary (32- or 40-byte records)", native.read_vscsi),
    TraceFormat("spc", "UMass SPC CSV: ASU,LBA,size,opcode,timestamp", native.read_spc),
    TraceFormat(
        "azure-llm",
        "Azure LLM inference CSV: TIMESTAMP,ContextTokens,GeneratedTokens",
        native.read_azure_llm,
    ),
    TraceFormat("csv", "any CSV with a column mapping (Arrow)", tabular.read_csv),
    TraceFormat(
        "parquet", "tailbound Parquet, or any Parquet with a mapping", tabular.read_parquet
    ),
)


def read_trace(path: str | os.PathLike[str], format: str | None = None, **options: object) -> Trace:
    """Read the trace in ``path``.

    ``format`` is a key of :data:`FORMATS`; without it the format is detected from the file's
    content (:func:`~tailbound.traces.detect_format`). ``options`` are the format's keyword
    options (``FORMATS[format].options``), such as ``time_unit="us"`` for ``disksim`` or the
    column mapping of ``csv``. Every reader accepts ``name`` and ``duration_s``.

    Raises :class:`TraceFormatError` naming the file, line and field of malformed input, and for
    a missing or empty file, an unknown format, or an option the format does not have or whose
    value it cannot use (naming the option as the field).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "trace0000.txt"
    >>> _ = p.write_text("500000000,0x1000,DiskRead\\n1500000000,0x200,DiskWrite\\n")
    >>> t = read_trace(p, duration_s=600)
    >>> t.name, len(t), t.time.tolist(), t.size.tolist(), t.duration
    ('trace0000', 2, [0.5, 1.5], [4096, 512], 600.0)
    """
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(path, "no such file")
    if path.is_dir():
        raise TraceFormatError(path, "is a directory, not a trace file")
    name = detect_format(path) if format is None else format
    spec = FORMATS.get(name)
    if spec is None:
        raise TraceFormatError(
            path, f"unknown format {name!r}; known formats: {', '.join(FORMATS)}"
        )
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise TraceFormatError(
            path,
            f"format {name!r} has no option {', '.join(map(repr, unknown))}; "
            f"its options are {', '.join(spec.options)}",
        )
    return spec.reader(path, **options)
