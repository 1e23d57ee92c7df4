"""Traces: the ``Trace`` type, readers for every supported format, a Parquet writer and
synthetic workload generators."""

from tailbound.traces.trace import Op, Trace, TraceSummary, UnsortedTraceWarning

__all__ = ["Op", "Trace", "TraceSummary", "UnsortedTraceWarning"]
