"""Traces: the ``Trace`` type, readers for every supported format, a Parquet writer and
synthetic workload generators.

:func:`read_trace` is the front door: it detects a file's format (:func:`detect_format`) and
reads it with the matching reader registered in :data:`FORMATS`; :func:`write_parquet` writes a
trace that reads back equal.

The readers and the writer are imported on first use (PEP 562): ``import tailbound`` loads the
``Trace`` type only, and ``tailbound bound``, which fits trace files in the Rust core, never
loads the readers (their logging, Arrow glue and registry cost ~7 ms of its cold start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tailbound.traces.trace import Op, Trace, TraceSummary, UnsortedTraceWarning

if TYPE_CHECKING:
    from tailbound.traces.detect import detect_format
    from tailbound.traces.native import LlmRequests, read_azure_llm_requests
    from tailbound.traces.readers import FORMATS, TraceFormat, read_trace
    from tailbound.traces.tabular import write_parquet

#: Where each name imported on first use is defined.
_LAZY = {
    "detect_format": "tailbound.traces.detect",
    "LlmRequests": "tailbound.traces.native",
    "read_azure_llm_requests": "tailbound.traces.native",
    "FORMATS": "tailbound.traces.readers",
    "TraceFormat": "tailbound.traces.readers",
    "read_trace": "tailbound.traces.readers",
    "write_parquet": "tailbound.traces.tabular",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "LlmRequests",
    "Op",
    "Trace",
    "TraceFormat",
    "TraceSummary",
    "UnsortedTraceWarning",
    "detect_format",
    "read_azure_llm_requests",
    "read_trace",
    "write_parquet",
]
