"""RPC arrivals for network experiments (Aequitas, issue 24): on/off, all-to-all, incast, Azure LLM.

An RPC is one row of :class:`RpcArrivals`: its issue time (s), source host, destination host, size
(bytes) and priority class (0 = highest, as in ``tailbound._core.AequitasAdmission``).

**The on/off process** (Aequitas §5.1's traffic model; Zhang et al., SIGCOMM 2022): every
destination ``d`` of a :class:`Pattern` receives traffic in *ON periods* at an aggregate rate of
``burst_load · link_rate`` (ρ, which may exceed 1: several senders converge on ``d``'s link) and
nothing in the OFF periods between them, so its long-run load is ``load`` (μ ≤ ρ) and the fraction
of time it is ON is μ/ρ. One ON period holds ``bursts_per_on`` bursts, each ``rpcs_per_burst``
RPCs of one (src, d) pair (several RPCs per pair, as the paper's bursts); the senders of one ON
period are distinct, drawn from the pattern's senders of ``d``. The bursts of an ON period are
interleaved round-robin (RPC ``j`` of every burst before RPC ``j + 1`` of any), and the RPC at
position ``i`` is issued at ``on_start + bytes_before_i / (ρ · link_rate / 8)``: the ON period
lasts exactly its bytes at rate ρ. An OFF period after an ON period of length ``T`` is exponential
with mean ``T · (ρ/μ − 1)``, so ``E[ON] / (E[ON] + E[OFF]) = μ/ρ`` and the byte rate averages to
``μ · link_rate``. Destinations are independent; the first ON period of each starts after an
exponential OFF (no synchronised start). Sizes come from any
:class:`~tailbound.traces.sizes.SizeDistribution`, classes per RPC from ``class_mix``. Everything
is drawn with numpy over whole ON periods (Python loops only per destination and per chunk of ON
periods), from one seeded generator.

**Per pair, as the authors' simulator** (:class:`PairOnOffRpcs`): each (src, dst) pair alternates
busy bursts at its share of ρ and idle times ``(ρ/μ − 1)`` × the busy time, all pairs starting
together; see the class.

**Patterns**: :func:`all_to_all` (every host sends to every other) and :func:`incast` (``fan_in``
senders to one destination; with ``bursts_per_on = fan_in`` every ON period is a synchronised
incast of all of them).

**Azure LLM traces** (:func:`azure_llm_rpcs`): each request of the trace is one RPC at its
timestamp, its size the prompt's tokens × ``bytes_per_token`` (default 4: a token of English text
is about 4 characters of UTF-8, OpenAI's tokenizer rule of thumb; the prompt is what crosses the
network to the inference server), reading the file with the traces layer's own reader
(:func:`tailbound.traces.native.read_azure_llm_requests`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.traces.sizes import SizeDistribution
from tailbound.traces.trace import Op, Trace

#: The authors' simulator's links (bits per second).
DEFAULT_LINK_RATE_BPS = 100e9
#: Bytes per LLM token used by :func:`azure_llm_rpcs` unless told otherwise.
DEFAULT_BYTES_PER_TOKEN = 4


def _bad(message: str, field: str) -> ConfigError:
    return ConfigError(None, message, field=field)


def _check_class_mix(class_mix: Sequence[float]) -> NDArray[np.float64]:
    mix = np.asarray(class_mix, dtype=np.float64)
    if mix.ndim != 1 or mix.size == 0 or mix.size > 255:
        raise _bad(f"expected 1 to 255 class fractions, got {list(mix.ravel())}", "class_mix")
    if not np.all(np.isfinite(mix)) or np.any(mix < 0):
        raise _bad(f"class fractions must be finite and >= 0, got {mix.tolist()}", "class_mix")
    if abs(float(mix.sum()) - 1.0) > 1e-9:
        raise _bad(f"class fractions must sum to 1, got {float(mix.sum())}", "class_mix")
    return mix


def _draw_classes(rng: np.random.Generator, mix: NDArray[np.float64], n: int) -> NDArray[np.uint8]:
    if mix.size == 1:
        return np.zeros(n, dtype=np.uint8)
    edges = np.cumsum(mix)
    edges[-1] = 1.0
    return np.searchsorted(edges, rng.random(n), side="right").astype(np.uint8)


# ----------------------------------------------------------------------------------- patterns
@dataclass(frozen=True)
class Pattern:
    """Who sends to whom: ``senders[d]`` are the hosts sending to destination ``dests[d]``.

    Hosts are numbered ``0 … n_hosts − 1``. Build it with :func:`all_to_all` or :func:`incast`.
    """

    n_hosts: int
    dests: tuple[int, ...]
    senders: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if self.n_hosts < 2:
            raise _bad(f"expected at least 2 hosts, got {self.n_hosts}", "n_hosts")
        if len(self.dests) != len(self.senders) or not self.dests:
            raise _bad("expected one sender list per destination", "senders")
        for d, s in zip(self.dests, self.senders, strict=True):
            if not 0 <= d < self.n_hosts:
                raise _bad(f"destination {d} is not a host of 0..{self.n_hosts - 1}", "dests")
            if not s or len(set(s)) != len(s) or d in s:
                raise _bad(f"destination {d} needs distinct senders other than itself", "senders")
            if any(not 0 <= h < self.n_hosts for h in s):
                raise _bad(f"a sender to {d} is not a host of 0..{self.n_hosts - 1}", "senders")


def all_to_all(n_hosts: int) -> Pattern:
    """Every host sends to every other host (``n_hosts · (n_hosts − 1)`` pairs).

    >>> all_to_all(3).senders
    ((1, 2), (0, 2), (0, 1))
    """
    hosts = range(n_hosts)
    return Pattern(n_hosts, tuple(hosts), tuple(tuple(h for h in hosts if h != d) for d in hosts))


def incast(n_hosts: int, *, dst: int = 0, fan_in: int | None = None) -> Pattern:
    """``fan_in`` hosts (default all others, the lowest-numbered first) send to ``dst``.

    >>> incast(4, dst=1).senders
    ((0, 2, 3),)
    """
    others = tuple(h for h in range(n_hosts) if h != dst)
    k = len(others) if fan_in is None else fan_in
    if not 1 <= k <= len(others):
        raise _bad(f"fan_in must be in 1..{len(others)}, got {fan_in}", "fan_in")
    return Pattern(n_hosts, (dst,), (others[:k],))


# ------------------------------------------------------------------------------------ columns
@dataclass(frozen=True, eq=False)
class RpcArrivals:
    """RPCs sorted by issue time, as columns.

    ``time_s`` issue times (s, non-decreasing, in ``[0, duration_s)``); ``src``, ``dst`` host
    numbers (int32); ``size_bytes`` (int64, > 0); ``cls`` priority class (uint8, 0 highest).
    """

    time_s: NDArray[np.float64]
    src: NDArray[np.int32]
    dst: NDArray[np.int32]
    size_bytes: NDArray[np.int64]
    cls: NDArray[np.uint8]
    n_hosts: int
    duration_s: float

    def __len__(self) -> int:
        return int(self.time_s.shape[0])

    def offered_load(self, link_rate_bps: float = DEFAULT_LINK_RATE_BPS) -> NDArray[np.float64]:
        """Mean load on each host's downlink over ``duration_s``, a fraction of the link rate."""
        per_dst = np.bincount(self.dst, weights=self.size_bytes, minlength=self.n_hosts)
        return np.asarray(8.0 * per_dst / (link_rate_bps * self.duration_s), dtype=np.float64)

    def pair_traces(self) -> dict[tuple[int, int], Trace]:
        """One :class:`Trace` per (src, dst) pair that has RPCs (sizes in bytes, ops all reads)."""
        key = self.src.astype(np.int64) * self.n_hosts + self.dst
        order = np.argsort(key, kind="stable")  # stable: times stay sorted within a pair
        keys, starts = np.unique(key[order], return_index=True)
        ends = np.append(starts[1:], order.size)
        out: dict[tuple[int, int], Trace] = {}
        for k, a, b in zip(keys.tolist(), starts.tolist(), ends.tolist(), strict=True):
            rows = order[a:b]
            out[(k // self.n_hosts, k % self.n_hosts)] = Trace(
                time=self.time_s[rows],
                op=np.full(rows.size, Op.READ, dtype=np.uint8),
                size=self.size_bytes[rows],
                duration_s=self.duration_s,
                name=f"rpc-{k // self.n_hosts}-{k % self.n_hosts}",
            )
        return out


def _sorted(
    time: NDArray[np.float64],
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    size: NDArray[np.int64],
    cls: NDArray[np.uint8],
    n_hosts: int,
    duration_s: float,
) -> RpcArrivals:
    order = np.argsort(time, kind="stable")
    return RpcArrivals(
        time_s=np.ascontiguousarray(time[order]),
        src=src[order].astype(np.int32),
        dst=dst[order].astype(np.int32),
        size_bytes=size[order].astype(np.int64),
        cls=cls[order],
        n_hosts=n_hosts,
        duration_s=float(duration_s),
    )


def _check_on_off(gen: OnOffRpcs | PairOnOffRpcs) -> None:
    """Refuse bad fields shared by the two on/off processes, naming the field."""
    if not (0 < gen.load <= 1):
        raise _bad(f"the average load μ must be in (0, 1], got {gen.load}", "load")
    if not (math.isfinite(gen.burst_load) and gen.burst_load > 0):
        raise _bad(f"the burst load ρ must be finite and > 0, got {gen.burst_load}", "burst_load")
    if gen.load > gen.burst_load:
        raise _bad(
            f"the average load μ={gen.load} exceeds the burst load ρ={gen.burst_load}", "load"
        )
    if not (math.isfinite(gen.link_rate_bps) and gen.link_rate_bps > 0):
        raise _bad(f"expected a link rate > 0, got {gen.link_rate_bps}", "link_rate_bps")
    if int(gen.rpcs_per_burst) != gen.rpcs_per_burst or gen.rpcs_per_burst < 1:
        raise _bad(f"expected an integer >= 1, got {gen.rpcs_per_burst}", "rpcs_per_burst")
    if not (gen.sizes.mean_bytes > 0):
        raise _bad(f"expected a mean RPC size > 0, got {gen.sizes.mean_bytes}", "sizes")
    _check_class_mix(gen.class_mix)


def _check_duration(duration_s: float) -> None:
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise _bad(f"expected a finite duration > 0, got {duration_s}", "duration_s")


# ---------------------------------------------------------------------------------- on / off
@dataclass(frozen=True)
class OnOffRpcs:
    """The bursty on/off RPC process of the module docstring, per destination of a pattern.

    Parameters
    ----------
    burst_load
        ρ: aggregate load on a destination's link during an ON period, a fraction of
        ``link_rate_bps`` (> 0, may exceed 1; the paper's Figs. 12–13 use 1.4, Eq. 1's example 2).
    load
        μ: long-run load on each destination's link, in (0, 1] and at most ρ.
    sizes
        RPC sizes in bytes (e.g. ``FixedSize(32768)``, the paper's 32 KiB RPCs).
    class_mix
        Probability of each priority class, highest first (sums to 1), e.g. ``(0.6, 0.3, 0.1)``.
    rpcs_per_burst
        RPCs of one (src, dst) pair in one burst (>= 1).
    bursts_per_on
        Bursts (distinct senders) per ON period (>= 1, at most every destination's sender count).
    link_rate_bps
        Link rate in bits per second (100 Gb/s in the paper).
    """

    burst_load: float
    load: float
    sizes: SizeDistribution
    class_mix: tuple[float, ...] = (1.0,)
    rpcs_per_burst: int = 4
    bursts_per_on: int = 1
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS

    def __post_init__(self) -> None:
        _check_on_off(self)
        if int(self.bursts_per_on) != self.bursts_per_on or self.bursts_per_on < 1:
            raise _bad(f"expected an integer >= 1, got {self.bursts_per_on}", "bursts_per_on")

    def generate(self, pattern: Pattern, duration_s: float, seed: int) -> RpcArrivals:
        """Every RPC issued in ``[0, duration_s)`` to every destination of ``pattern``."""
        _check_duration(duration_s)
        for d, s in zip(pattern.dests, pattern.senders, strict=True):
            if self.bursts_per_on > len(s):
                raise _bad(
                    f"{self.bursts_per_on} bursts per ON period but destination {d} has only "
                    f"{len(s)} senders",
                    "bursts_per_on",
                )
        rng = np.random.default_rng(seed)
        mix = _check_class_mix(self.class_mix)
        parts = [
            self._destination(rng, np.asarray(s, dtype=np.int64), duration_s)
            for s in pattern.senders
        ]
        time = np.concatenate([p[0] for p in parts])
        src = np.concatenate([p[1] for p in parts])
        size = np.concatenate([p[2] for p in parts])
        dst = np.concatenate(
            [
                np.full(p[0].size, d, dtype=np.int64)
                for p, d in zip(parts, pattern.dests, strict=True)
            ]
        )
        cls = _draw_classes(rng, mix, time.size)
        return _sorted(time, src, dst, size, cls, pattern.n_hosts, duration_s)

    def _destination(
        self, rng: np.random.Generator, senders: NDArray[np.int64], duration_s: float
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
        """Issue times, sources and sizes of the RPCs to one destination with ``senders``."""
        byte_rate = self.burst_load * self.link_rate_bps / 8.0  # bytes/s while ON
        b, r = int(self.bursts_per_on), int(self.rpcs_per_burst)
        per_on = b * r
        off_factor = self.burst_load / self.load - 1.0
        mean_cycle = per_on * self.sizes.mean_bytes / byte_rate * (1.0 + off_factor)
        times, srcs, sizes = [], [], []
        clock = (
            float(rng.exponential(mean_cycle * off_factor / (1 + off_factor)))
            if off_factor > 0
            else 0.0
        )
        while clock < duration_s:
            n_on = int(1.2 * (duration_s - clock) / mean_cycle) + 16
            size = self.sizes.sample(rng, n_on * per_on).reshape(n_on, r, b)
            # RPC j of every burst before RPC j + 1 of any: positions are (on, j, burst)
            order_in_on = np.cumsum(size.reshape(n_on, per_on), axis=1)
            start_offset = (order_in_on - size.reshape(n_on, per_on)) / byte_rate
            on_len = order_in_on[:, -1] / byte_rate
            off_len = (
                rng.exponential(1.0, n_on) * on_len * off_factor
                if off_factor > 0
                else np.zeros(n_on)
            )
            on_start = clock + np.concatenate(([0.0], np.cumsum(on_len + off_len)[:-1]))
            clock = float(on_start[-1] + on_len[-1] + off_len[-1])
            chosen = np.argsort(rng.random((n_on, senders.size)), axis=1)[:, :b]
            src = np.broadcast_to(senders[chosen][:, None, :], (n_on, r, b))
            t = on_start[:, None] + start_offset
            times.append(t.ravel())
            srcs.append(src.reshape(-1))
            sizes.append(size.reshape(-1))
        time = np.concatenate(times) if times else np.empty(0)
        keep = time < duration_s
        src_all = np.concatenate(srcs) if srcs else np.empty(0, dtype=np.int64)
        size_all = np.concatenate(sizes) if sizes else np.empty(0, dtype=np.int64)
        return time[keep], src_all[keep], size_all[keep]


@dataclass(frozen=True)
class PairOnOffRpcs:
    """On/off RPC arrivals per (src, dst) pair, as the authors' simulator's "dynamic load".

    SymbioticLab/Aequitas, ``coresim/event.cpp`` (``FlowCreationForInitializationEvent`` with
    ``use_dynamic_load``) and ``run/flow_generator.cpp`` (``FlowBytesGenerator``): every pair of
    the pattern runs its own process. A *busy* period issues ``rpcs_per_burst`` RPCs (their
    ``burst_size``, in RPCs) with independent gaps, exponential (``poisson=True``) or constant
    (their ``disable_poisson_arrival``), of mean ``8 · mean_size / (ρ · link_rate / n_senders)``:
    the senders of a destination together offer ρ while busy. The busy time ``T`` is the sum of
    its ``rpcs_per_burst`` gaps (the gap after the last RPC included); the next busy period starts
    ``(ρ/μ) · T`` after the start of this one (their ``t_idle = ρT/μ − T``), so the long-run load
    of a destination is μ. All pairs start at time 0, as theirs do at 1.0 (synchronised first
    bursts). Their load counts the packet headers (``sizeWithHeader``); here the size
    distribution's bytes are the load: pass the sizes on the wire to count headers. Vectorised per
    pair (one loop over pairs).

    Parameters are those of :class:`OnOffRpcs` without ``bursts_per_on``.
    """

    burst_load: float
    load: float
    sizes: SizeDistribution
    class_mix: tuple[float, ...] = (1.0,)
    rpcs_per_burst: int = 4
    poisson: bool = True
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS

    def __post_init__(self) -> None:
        _check_on_off(self)

    def generate(self, pattern: Pattern, duration_s: float, seed: int) -> RpcArrivals:
        """Every RPC issued in ``[0, duration_s)`` on every pair of ``pattern``."""
        _check_duration(duration_s)
        rng = np.random.default_rng(seed)
        mix = _check_class_mix(self.class_mix)
        r = int(self.rpcs_per_burst)
        stretch = self.burst_load / self.load  # period / busy time
        times, srcs, dsts = [], [], []
        for d, senders in zip(pattern.dests, pattern.senders, strict=True):
            mean_gap = (
                8.0 * self.sizes.mean_bytes * len(senders) / (self.burst_load * self.link_rate_bps)
            )
            n_bursts = math.ceil(duration_s / (stretch * r * mean_gap) * 1.2) + 8
            for s in senders:
                t = self._pair(rng, mean_gap, r, stretch, n_bursts, duration_s)
                times.append(t)
                srcs.append(np.full(t.size, s, dtype=np.int64))
                dsts.append(np.full(t.size, d, dtype=np.int64))
        time = np.concatenate(times)
        size = self.sizes.sample(rng, time.size)
        cls = _draw_classes(rng, mix, time.size)
        return _sorted(
            time, np.concatenate(srcs), np.concatenate(dsts), size, cls, pattern.n_hosts, duration_s
        )

    def _pair(
        self,
        rng: np.random.Generator,
        mean_gap: float,
        r: int,
        stretch: float,
        n_bursts: int,
        duration_s: float,
    ) -> NDArray[np.float64]:
        """Issue times of one pair in ``[0, duration_s)``."""
        out = []
        origin = 0.0
        while origin < duration_s:
            if self.poisson:
                gaps = rng.exponential(mean_gap, (n_bursts, r))
            else:
                gaps = np.full((n_bursts, r), mean_gap)
            within = np.cumsum(gaps, axis=1) - gaps  # RPC i after the first i gaps
            period = stretch * gaps.sum(axis=1)
            starts = origin + np.cumsum(period) - period
            out.append((starts[:, None] + within).ravel())
            origin = float(starts[-1] + period[-1])
        t = np.concatenate(out)
        return t[t < duration_s]


# ------------------------------------------------------------------------------- Azure LLM
def azure_llm_rpcs(
    path: str | Path,
    pattern: Pattern,
    *,
    seed: int,
    class_mix: Sequence[float] = (1.0,),
    bytes_per_token: int = DEFAULT_BYTES_PER_TOKEN,
    tokens: Literal["context", "generated", "total"] = "context",
    load: float | None = None,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
) -> RpcArrivals:
    """RPCs from an Azure LLM inference trace (``TIMESTAMP,ContextTokens,GeneratedTokens``).

    Each request is one RPC issued at its timestamp (time 0 the first request), of
    ``tokens × bytes_per_token`` bytes (``tokens="context"``, the default, counts the prompt the
    client sends; ``"generated"`` the answer, ``"total"`` both), at least 1 byte. The trace names
    no hosts: each RPC goes to a destination of ``pattern`` drawn uniformly, from one of its
    senders drawn uniformly, with a class from ``class_mix``, all from ``seed``. The recorded
    arrivals are a few per second, far below a 100 Gb/s link; with ``load`` set, time is
    compressed by one factor so that the mean load per destination over the trace is ``load`` of
    ``link_rate_bps`` (the order and relative gaps of the trace are kept).
    """
    from tailbound.traces.native import read_azure_llm_requests

    if int(bytes_per_token) != bytes_per_token or bytes_per_token < 1:
        raise _bad(f"expected an integer >= 1, got {bytes_per_token}", "bytes_per_token")
    if tokens not in ("context", "generated", "total"):
        raise _bad(f"expected 'context', 'generated' or 'total', got {tokens!r}", "tokens")
    if load is not None and not (0 < load <= 1):
        raise _bad(f"the load must be in (0, 1], got {load}", "load")
    mix = _check_class_mix(class_mix)
    trace = read_azure_llm_requests(Path(path), size=tokens).trace
    size = np.maximum(trace.size * int(bytes_per_token), 1)
    time = trace.time - trace.time[0]
    duration = float(time[-1])
    if load is not None:
        if duration <= 0:
            raise ConfigError(
                path, "the trace spans no time; cannot scale it to a load", field="load"
            )
        natural = 8.0 * float(size.sum()) / (link_rate_bps * duration * len(pattern.dests))
        factor = natural / load  # < 1 compresses
        time = time * factor
        duration *= factor
    rng = np.random.default_rng(seed)
    d_index = rng.integers(0, len(pattern.dests), size=time.size)
    dst = np.asarray(pattern.dests, dtype=np.int64)[d_index]
    width = max(len(s) for s in pattern.senders)
    table = np.full((len(pattern.dests), width), -1, dtype=np.int64)
    counts = np.array([len(s) for s in pattern.senders], dtype=np.int64)
    for i, s in enumerate(pattern.senders):
        table[i, : len(s)] = s
    pick = np.floor(rng.random(time.size) * counts[d_index]).astype(np.int64)
    src = table[d_index, pick]
    cls = _draw_classes(rng, mix, time.size)
    # the last RPC sits at duration: extend by one ulp-scale step to keep times in [0, duration)
    return _sorted(
        time, src, dst, size.astype(np.int64), cls, pattern.n_hosts, np.nextafter(duration, np.inf)
    )
