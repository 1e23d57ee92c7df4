"""tailbound: tail-latency SLO guarantees for workloads sharing storage and networks.

Units everywhere: time in seconds, sizes in bytes, tokens in seconds of exclusive service at a
stage ("work"), rates as utilisations of a stage (0 < r <= 1), bucket sizes in seconds of work.
"""

from tailbound._core import __version__
from tailbound.errors import ConfigError, TailboundError, TraceFormatError
from tailbound.stages import Stage
from tailbound.traces.trace import Op, Trace, TraceSummary

__all__ = [
    "ConfigError",
    "Op",
    "Stage",
    "TailboundError",
    "Trace",
    "TraceFormatError",
    "TraceSummary",
    "__version__",
]
