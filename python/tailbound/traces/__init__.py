"""Traces: the ``Trace`` type, readers for every supported format, a Parquet writer and
synthetic workload generators.

:func:`read_trace` is the front door: it detects a file's format (:func:`detect_format`) and
reads it with the matching reader registered in :data:`FORMATS`; :func:`write_parquet` writes a
trace that reads back equal.
"""

from tailbound.traces.detect import detect_format
from tailbound.traces.native import LlmRequests, read_azure_llm_requests
from tailbound.traces.readers import FORMATS, TraceFormat, read_trace
from tailbound.traces.tabular import write_parquet
from tailbound.traces.trace import Op, Trace, TraceSummary, UnsortedTraceWarning

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
