"""The stated limits on every input size, count and duration that sets memory or time.

Input from a file, a command line or (later) the network is checked against these before any
work is sized by it, so a typo such as ``rate = 1e9`` or ``mtu_bytes = 0.5`` is a clear error
within a second rather than an allocation of tens of GiB or a run of hours. The simulator's own
limits are in ``crates/tailbound-core/src/sim/engine.rs`` (``MAX_PACKETS_PER_MESSAGE``,
``MAX_PACKET_HOPS_PER_RUN``, ``SEND_WINDOW_PACKETS``) and ``sim/topology.rs``
(``MIN_MTU_BYTES``), and the trace parsers' latest time in ``parse/fields.rs`` (``MAX_TIME_S``);
the values are repeated here for Python's checks and documented in ``docs/architecture.md``
("Note: bad input").
"""

from __future__ import annotations

import math

#: Latest arrival time of a trace, in seconds from its zero (317 years).
MAX_TIME_S = 1e10

#: Largest request, in bytes (1 TiB); larger is a malformed trace.
MAX_REQUEST_BYTES = 1 << 40

#: Smallest MTU in bytes (the minimum Ethernet frame).
MIN_MTU_BYTES = 64.0

#: Most requests a synthetic source may generate (about 0.5 GiB of columns).
MAX_SYNTHETIC_REQUESTS = 20_000_000

#: Most workloads of a generated fleet (``tailbound demo --workloads``).
MAX_FLEET_WORKLOADS = 10_000

#: Most token buckets per stage (``tailbound prioritize --k``).
MAX_BUCKETS_PER_STAGE = 64

#: Most rates of an r-b curve (``tailbound characterize --rates``, ``--prune``).
MAX_CURVE_RATES = 1_000_000

#: Most threads of a CPU-bound job (``--threads``).
MAX_THREADS = 1024


def finite(value: float) -> bool:
    """Whether ``value`` is a real number (not NaN, not ±infinity).

    >>> finite(1.0), finite(float("nan")), finite(float("inf"))
    (True, False, False)
    """
    return math.isfinite(value)
