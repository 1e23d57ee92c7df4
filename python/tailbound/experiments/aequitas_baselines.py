"""The schemes Aequitas is compared with (Figs. 19, 21, 22), their metrics and the production sizes.

Zhang et al., "Aequitas: Admission Control for Performance-Critical RPCs in Datacenters",
SIGCOMM 2022, §6.7, §6.9–6.10. Each scheme is a configuration of the packet network simulator
(:mod:`tailbound.sim.network_rpc`; the port kinds in ``docs/aequitas.md``, "Port kinds"), set as
the authors' artifact sets it (SymbioticLab/Aequitas, ``artifact-eval``,
``py/related_work_comp/config/conf_*.txt``):

- ``wfq``: WFQ 8:4:1 alone, the Swift-like window (``conf_baseline``);
- ``aequitas``: the same with admission control (``conf_aequitas``: ``priority_downgrade``);
- ``spq``: strict priority in place of WFQ, the same window (§6.7);
- ``pfabric``: pFabric's SRPT ports by remaining RPC size, ACKs first, the largest remaining
  dropped on overflow; pFabric's minimal rate control as the artifact's ``PFabricFlow``: a
  window starting at 30 packets (their ``init_cwnd: 30``, ``max_cwnd: 30``: line rate), back
  to 1 on a timeout and slow start to half of it (``CongestionWindow(loss_based=True)``),
  go-back-N after the 450 µs timeout; each RPC a flow of its own (pFabric's hosts, and the
  artifact's ``PFabricFlow`` per RPC), modelled as :data:`PFABRIC_FLOWS` parallel channels
  per (source, destination, class), an RPC issued on an idle one (each keeps its window
  between RPCs, as a pool of connections);
- ``qjump``: strict priority ports pushing out the lowest class, each host pacing each class
  to one packet per epoch with throughput factors 32:16:1 and 1 µs of processing delay
  (``qjump_tput_factor``, ``qjump_cumulative_pd``), no window.

**Production RPC sizes.** The paper's distribution is Google's and not published; the artifact
reads it from a ``CDF.txt`` that is not in the repository (only ``CDF_uniform_32K.txt`` is).
The stand-ins are the size models of :mod:`tailbound.experiments.aequitas_sizes`
(``azure-prompts``: the Azure LLM prompts, mean 5.7 KB; ``storage-10mtu``: the MSN File Server
storage request sizes scaled to the paper's mean of 10 MTUs; ``azure-prompts-10mtu``).

**Metrics** (§6.10): per class the 99.9th percentile of RNL per MTU over the middle 80% of the
RPCs run at it; per requested class the share of its bytes that **met its SLO from the class
it asked for** (ran there, not downgraded, and finished within the per-MTU SLO × its MTUs: the
paper's metric, "from their initially assigned QoS levels"), and two readings that do not
count a downgrade as a miss (:func:`met_slo_share`'s ``downgrades``): the share of the bytes
asked at the class that finished within its SLO wherever they ran, and the share of the bytes
run at the class (admitted) that did; and the network utilisation, achieved goodput over the
maximum goodput the input allows: the payload of RPCs finished within the middle 80% of the
issue period over the payload issued in it (a scheme that falls behind its input scores below
1; a run whose backlog from before the window drains in it can score slightly above 1).

**pFabric's priorities**: the exact remaining bytes of the RPC (``pfabric_levels=False``), or
the artifact's eight levels by the thresholds 4 KiB … 256 KiB (``pfabric_limited_priority: 1``
in its ``conf_pfabric.txt``; :data:`~tailbound.sim.network_rpc.PFABRIC_ARTIFACT_THRESHOLDS`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tailbound import _core
from tailbound.experiments import aequitas_sizes
from tailbound.sim.network_rpc import (
    PFABRIC_ARTIFACT_THRESHOLDS,
    CongestionWindow,
    NetworkAdmission,
    NetworkConfig,
    NetworkRun,
    QjumpLevels,
)
from tailbound.traces.rpc_arrivals import PairOnOffRpcs, RpcArrivals, all_to_all
from tailbound.traces.sizes import EmpiricalSizes

SCHEMES = ("wfq", "aequitas", "spq", "pfabric", "qjump")
#: The schemes by name (the experiments' labels of the network's port kinds, not registered
#: policy names).
WFQ, AEQUITAS, SPQ, PFABRIC, QJUMP_SCHEME = SCHEMES
WEIGHTS = (8.0, 4.0, 1.0)
#: The artifact's normalised SLOs for Fig. 22 (``hardcoded_targets: 25,35`` µs with
#: ``normalized_lat: 1``), s per MTU, QoS_h and QoS_m.
SLOS_PER_MTU_S = (25e-6, 35e-6)
#: pFabric's parallel channels per (source, destination, class): more than the RPCs a triple
#: has in progress at once in Fig. 22 (bursts of 23 RPCs, about 12 per class), so that each
#: RPC gets a flow of its own instead of waiting in its triple's FIFO.
PFABRIC_FLOWS = 32
#: The artifact's QJump levels.
QJUMP = QjumpLevels((32.0, 16.0, 1.0), 1e-6)
LINK_BPS = 100e9
MSS_BYTES = aequitas_sizes.MSS_BYTES
HEADER_BYTES = 40
NAMES = ("QoS_h", "QoS_m", "QoS_l")
#: :func:`met_slo_share`'s readings of a downgraded RPC: a miss (the paper's), judged by its
#: RNL against the SLO of the class it asked for, or left out (only the RPCs run at the class).
DOWNGRADE_READINGS = ("miss", "by_latency", "admitted_only")


def production_sizes(data: Path | None = None) -> EmpiricalSizes:
    """The first stand-in for the paper's production sizes: the Azure LLM prompts,
    ``ContextTokens × 4`` bytes (:func:`~tailbound.experiments.aequitas_sizes.azure_prompts`)."""
    return aequitas_sizes.azure_prompts(data)


def scheme_config(
    scheme: str,
    n_hosts: int,
    seed: int,
    *,
    slos_s: tuple[float, ...] = SLOS_PER_MTU_S,
    per_mtu: bool = True,
    increment_window_s: tuple[float, ...] | None = None,
    admission: bool | None = None,
    pfabric_levels: bool = False,
) -> NetworkConfig:
    """The network of ``scheme`` (:data:`SCHEMES`, or ``aequitas_spq``: admission over strict
    priority) on ``n_hosts`` hosts, 512 KiB buffers; admission at ``slos_s`` (per MTU unless
    ``per_mtu`` is false) for the Aequitas schemes (or as ``admission`` says); pFabric with
    the artifact's eight priority levels if ``pfabric_levels`` (else exact remaining bytes;
    the other schemes ignore it)."""
    if scheme not in (*SCHEMES, "aequitas_spq"):
        raise ValueError(f"unknown scheme {scheme!r}")
    admit = scheme.startswith("aequitas") if admission is None else admission
    adm = (
        NetworkAdmission(
            slos_s, per_mtu=per_mtu, rules="artifact", increment_window_s=increment_window_s
        )
        if admit
        else None
    )
    kind = {
        "wfq": "wfq",
        "aequitas": "wfq",
        "spq": "strict_priority",
        "aequitas_spq": "strict_priority",
        "pfabric": "pfabric",
        "qjump": "qjump",
    }[scheme]
    cc = (
        CongestionWindow(init_cwnd=30.0, loss_based=True)
        if scheme == PFABRIC
        else CongestionWindow()
    )
    return NetworkConfig(
        n_hosts=n_hosts,
        weights=WEIGHTS,
        admission=adm,
        seed=seed,
        scheduling=kind,
        cc=cc,
        qjump=QJUMP if scheme == QJUMP_SCHEME else None,
        channels_per_class=PFABRIC_FLOWS if scheme == PFABRIC else 1,
        pfabric_priority_thresholds=(
            PFABRIC_ARTIFACT_THRESHOLDS if scheme == PFABRIC and pfabric_levels else ()
        ),
    )


def tail_per_mtu(run: NetworkRun, cls: int, p: float = 0.999) -> float:
    """The ``p``-percentile RNL per MTU (s) of the RPCs run at ``cls``, middle 80% by issue."""
    return run.rnl_tail(cls, p, per_mtu=True)


def middle(run: NetworkRun, keep: float = 0.8) -> tuple[float, float]:
    """The middle ``keep`` of the issue period, (start, end) s."""
    t = run.rpcs.time_s
    span = t[-1] - t[0]
    return t[0] + (1 - keep) / 2 * span, t[0] + (1 + keep) / 2 * span


def met_slo_share(
    run: NetworkRun, cls: int, slos_per_mtu_s: tuple[float, ...], downgrades: str = "miss"
) -> float:
    """Of the bytes of the RPCs that asked for ``cls`` (issued in the middle 80%), the share
    that finished within its per-MTU SLO × its MTUs (NaN: none asked). ``downgrades``
    (:data:`DOWNGRADE_READINGS`): ``"miss"`` (the paper's metric, "from their initially
    assigned QoS levels": an RPC run at another class misses), ``"by_latency"`` (an RPC
    counts by its RNL wherever it ran), ``"admitted_only"`` (of the bytes that asked for and
    ran at ``cls``). Without admission the three are equal."""
    if downgrades not in DOWNGRADE_READINGS:
        raise ValueError(f"downgrades {downgrades!r}: one of {DOWNGRADE_READINGS}")
    t0, t1 = middle(run)
    r = run.rpcs
    asked = (r.cls == cls) & (r.time_s >= t0) & (r.time_s <= t1)
    if downgrades != "by_latency":
        here = asked & (run.class_run == cls)
    if downgrades == "admitted_only":
        asked = here
    total = float(r.size_bytes[asked].sum())
    if total == 0:
        return math.nan
    rnl = np.where(np.isnan(run.rnl_s), np.inf, run.rnl_s)
    ok = (here if downgrades != "by_latency" else asked) & (
        rnl <= slos_per_mtu_s[cls] * run.size_mtus
    )
    return float(r.size_bytes[ok].sum()) / total


def utilisation(run: NetworkRun) -> float:
    """Payload of the RPCs finished within the middle 80% of the issue period over the payload
    issued in it (a backlog from before the window draining in it can lift it above 1)."""
    t0, t1 = middle(run)
    r = run.rpcs
    issued = float(r.size_bytes[(r.time_s >= t0) & (r.time_s <= t1)].sum())
    finish = np.where(np.isnan(run.finish_s), np.inf, run.finish_s)
    done = float(r.size_bytes[(finish >= t0) & (finish <= t1)].sum())
    return done / issued if issued else math.nan


def rnl_tail_of_asked(run: NetworkRun, cls: int, p: float = 0.999) -> float:
    """The ``p``-percentile RNL per MTU (s) of the RPCs that **asked** for ``cls``, wherever
    they ran (middle 80% by issue time)."""
    m = run.rpcs.cls == cls
    if not m.any():
        return math.nan
    v = np.where(np.isnan(run.rnl_s[m]), np.inf, run.rnl_s[m]) / run.size_mtus[m]
    return float(_core.rnl_tail(run.rpcs.time_s[m], v, p, 0.8))


def production_arrivals(
    n_hosts: int,
    class_mix: tuple[float, ...],
    duration_s: float,
    seed: int,
    *,
    burst_load: float,
    load: float = 0.8,
    rpcs_per_burst: int = 4,
    sizes: EmpiricalSizes | None = None,
) -> RpcArrivals:
    """All-to-all on/off RPCs of ``sizes`` (default :func:`production_sizes`) among
    ``n_hosts`` hosts, each pair in bursts of ``rpcs_per_burst`` at ``burst_load`` (the
    instantaneous load of a link when all its senders burst at once) and mean ``load``; the
    load counts headers (the 33-host setup's rule)."""
    sizes = production_sizes() if sizes is None else sizes
    mean = int(sizes.mean_bytes)
    rate = LINK_BPS * mean / (mean + math.ceil(mean / MSS_BYTES) * HEADER_BYTES)
    gen = PairOnOffRpcs(
        burst_load,
        load,
        sizes,
        class_mix=class_mix,
        rpcs_per_burst=rpcs_per_burst,
        link_rate_bps=rate,
    )
    return gen.generate(all_to_all(n_hosts), duration_s, seed=seed)


def scheme_row(
    scheme: str, run: NetworkRun, wall_s: float, slos_per_mtu_s: tuple[float, ...]
) -> dict[str, float | str]:
    """One CSV row of a scheme's run: per class tails (µs per MTU, by the class run and by the
    class asked), the share of bytes meeting the SLO from the class asked, run shares,
    utilisation, counters."""
    row: dict[str, float | str] = {"scheme": scheme}
    for c, name in enumerate(NAMES):
        key = name.lower()
        row[f"{key}_p999_us_per_mtu"] = tail_per_mtu(run, c) * 1e6
        row[f"{key}_asked_p999_us_per_mtu"] = rnl_tail_of_asked(run, c) * 1e6
        row[f"{key}_run_share"] = run.run_share(c)
    for c in range(len(slos_per_mtu_s)):
        row[f"{NAMES[c].lower()}_slo_us_per_mtu"] = slos_per_mtu_s[c] * 1e6
        row[f"{NAMES[c].lower()}_met_slo_share"] = met_slo_share(run, c, slos_per_mtu_s)
        for reading in DOWNGRADE_READINGS[1:]:
            row[f"{NAMES[c].lower()}_met_slo_share_{reading}"] = met_slo_share(
                run, c, slos_per_mtu_s, reading
            )
    row["utilisation"] = utilisation(run)
    row["rpcs"] = float(len(run.rpcs))
    row["data_drops"] = run.counters["data_drops"]
    row["timeouts"] = run.counters["timeouts"]
    row["end_s"] = run.counters["end_s"]
    row["wall_s"] = wall_s
    return row
