"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

import os
from typing import final

import numpy as np
from numpy.typing import NDArray

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""

class FieldError(ValueError):
    """A bad field of a configuration table: ``args`` are ``(field, message)``."""

# --- r-b curves (crates/tailbound-py/src/rb.rs) ---------------------------------------------------

def rbgen(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    rates: NDArray[np.float64],
    threads: int = 1,
) -> NDArray[np.float64]:
    """``b(r)`` (s of work) per rate, thesis Algorithm 2.1."""

def rbgen_argmax(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    rates: NDArray[np.float64],
    threads: int = 1,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """``(b, first, last)`` per rate: requests ``first..=last`` fill the bucket to ``b``."""

def exact_rb_curve(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    min_rate: float,
    threads: int = 1,
    method: str = "auto",
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    int,
    int,
    str,
]:
    """``(rates, buckets, work, duration, passes, evaluations, method)`` of the exact curve."""

def prune_rb_curve(
    rates: NDArray[np.float64], buckets: NDArray[np.float64], k: int
) -> NDArray[np.int64]:
    """Indices of the vertices kept when pruning to at most ``k`` segments."""

# ---- traces: parsers of tailbound_core::parse (see tailbound.traces.readers) ----------------

#: ``(time, op, size, offset | None, source | None, origin_s, skipped)``
_Columns = tuple[
    NDArray[np.float64],
    NDArray[np.uint8],
    NDArray[np.int64],
    NDArray[np.int64] | None,
    NDArray[np.int32] | None,
    float,
    int,
]

def parse_wc(path: str | os.PathLike[str]) -> _Columns: ...
def parse_msr(path: str | os.PathLike[str]) -> _Columns: ...
def parse_ascii(
    path: str | os.PathLike[str],
    time_units_per_s: float,
    sector_bytes: int,
    read_value: int,
    write_value: int,
) -> _Columns: ...
def parse_spc(path: str | os.PathLike[str]) -> _Columns: ...
def parse_vscsi(path: str | os.PathLike[str], skip_other: bool) -> _Columns: ...
def parse_azure_llm(
    path: str | os.PathLike[str],
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], float]: ...

# --- sim: the trace-driven simulator (crates/tailbound-py/src/sim.rs) ---

@final
class Simulation:
    """A configured simulation of links, devices and workloads."""

    def __new__(
        cls,
        config_json: str,
        arrival: list[NDArray[np.float64]],
        op: list[NDArray[np.uint8]],
        size: list[NDArray[np.float64]],
        cost: list[list[NDArray[np.float64]]],
        offset: list[NDArray[np.float64]] | None = None,
        classes: list[NDArray[np.uint32]] | None = None,
        deadline: list[NDArray[np.float64]] | None = None,
    ) -> Simulation: ...
    def run(self, until: float) -> int: ...
    @property
    def now(self) -> float: ...
    @property
    def events(self) -> int: ...
    def set_param(
        self, kind: str, index: int, workload: int, name: str, values: list[float]
    ) -> None: ...
    def records(self) -> tuple[NDArray[np.float64], NDArray[np.float64], int]: ...
    def control_log(
        self, index: int
    ) -> tuple[
        NDArray[np.float64], NDArray[np.uint32], NDArray[np.float64], NDArray[np.float64]
    ]: ...
    def workload_ranges(self) -> list[tuple[int, int]]: ...

#: PSLO's policies as a device's ``control.policy`` spells them (``control::pslo::Policy``).
PSLO_POLICIES: tuple[str, ...]

def control_config(spec: str) -> str:
    """A device's controller (``sim::control::ControlSpec``, JSON) checked and with every
    default written out (JSON); raises ``FieldError(field, message)``."""

def shape(
    arrival: NDArray[np.float64], cost: NDArray[np.float64], buckets: list[tuple[float, float]]
) -> NDArray[np.float64]: ...

# --- decomposition (crates/tailbound-py/src/decompose.rs) ----------------------------------------

def decompose_primary(
    time: NDArray[np.float64], work: NDArray[np.float64], rate: float, delta: float
) -> NDArray[np.bool_]:
    """Which requests stay in the primary stream of the response-time-threshold decomposition
    (``tailbound_core::decompose``); raises ``ValueError`` for bad input."""

def decompose_count(
    time: NDArray[np.float64], work: NDArray[np.float64], rate: float, delta: float
) -> int:
    """How many requests stay in the primary stream (the count of ``decompose_primary``)."""

# --- sched: the scheduler kinds, defined once (crates/tailbound-py/src/sched.rs) ---------------

#: The scheduler kinds, as a queue table's ``kind`` spells them (``tailbound_core::sched::KINDS``).
SCHEDULER_KINDS: tuple[str, ...]
#: The fields a queue table may have, any kind (a field the kind does not read is ignored).
SCHEDULER_TABLE_FIELDS: tuple[str, ...]

def scheduler_config(
    fields: dict[str, object],
    workloads: list[tuple[str, float | None]],
    classes: list[str] | None = None,
) -> str:
    """The core's scheduler config (serde JSON) of a queue table keyed by workload name, for
    ``workloads`` ``(name, SLO latency or None)`` in workload order, its classes numbered by
    ``classes`` when given (else its own, sorted); raises ``FieldError``."""

def scheduler_classes(
    fields: dict[str, object], workloads: list[tuple[str, float | None]]
) -> list[str]:
    """The class names of a scenario's queue table, sorted (none for a kind without classes)."""

# --- snc (stochastic network calculus) ---------------------------------------------------------
def perron_roots(
    generator: NDArray[np.float64], excess: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Perron roots of ``diag(1 + e) G + diag(e)`` for each row ``e`` of ``excess``."""

# --- MMPP fit (crates/tailbound-py/src/mmpp.rs) ------------------------------------------------

@final
class Mmpp:
    """A fitted Markov-modulated Bernoulli process with exponential work (held in Rust)."""

    def __new__(
        cls,
        transition: list[float],
        p_request: list[float],
        mu: list[float],
        lambdas: list[float],
        a: float,
        state_of_interval: list[int],
    ) -> Mmpp: ...
    @property
    def states(self) -> int: ...
    @property
    def transition(self) -> list[float]: ...
    @property
    def p_request(self) -> list[float]: ...
    @property
    def mu(self) -> list[float]: ...
    @property
    def lambdas(self) -> list[float]: ...
    @property
    def a(self) -> float: ...
    @property
    def state_of_interval(self) -> list[int]: ...
    def generator(self) -> list[float]:
        """``G = P - I``, row-major."""
    def pole(self) -> float:
        """The smallest ``mu``."""

def fit_mmpp(
    arrival_ns: NDArray[np.int64], work: NDArray[np.float64], interval_ns: int, step_s: float
) -> Mmpp:
    """The reference MMPP fit of arrivals (integer ns) and each request's work."""

def fit_trace_file(
    path: str | os.PathLike[str],
    format: str,
    max_time_s: float,
    max_request_bytes: int,
    messages: list[tuple[float, float, float]],
    interval_ns: int,
    step_s: float,
) -> list[Mmpp] | None:
    """One fit per message model of a trace file parsed in Rust, or ``None``: use the reader."""

def mmpp_interval_counts(arrival_ns: list[int], interval_ns: int) -> list[int]: ...
def mmpp_place_states(counts: list[int], max_states: int) -> tuple[list[float], float]: ...
def mmpp_assign_states(counts: list[int], lambdas: list[float], a: float) -> list[int]: ...
def mmpp_transition_matrix(
    states: list[int], n: int, interval_ns: int, step_s: float
) -> list[float]: ...

@final
class SncNetwork:
    """Independent two-hop flows prepared for SNC-Meister's theta search (built once)."""

    def __new__(cls) -> SncNetwork: ...
    def add_source(
        self, generator: NDArray[np.float64], p: NDArray[np.float64], mu: NDArray[np.float64]
    ) -> int: ...
    def add_mmpp(self, model: Mmpp) -> int:
        """Add a fitted MMPP as a source (generator, ``p`` and ``mu`` taken in Rust)."""
    def add_flow(
        self,
        c1: float,
        c2: float,
        eps: float,
        pole: float,
        own: list[int],
        shared: list[int],
        first_only: list[int],
    ) -> int: ...
    def add_feeder(self, flow: int, c: float, into: list[int], other: list[int]) -> None: ...
    @property
    def flows(self) -> int: ...
    def search(self) -> tuple[list[float], list[float]]:
        """``(theta, latency_steps)`` per flow."""

@final
class SncTree:
    """One flow's SNC latency expression with Hölder parameters (``tailbound_core::snc_tree``)."""

    def __new__(cls) -> SncTree: ...
    def add_source(
        self, generator: NDArray[np.float64], p: NDArray[np.float64], mu: NDArray[np.float64]
    ) -> int: ...
    def add_leaf(self, source: int) -> int: ...
    def add_constant(self, rate_per_step: float) -> int: ...
    def add_op(self, kind: int, first: int, second: int, param: int | None) -> int: ...
    def set_root(self, arrival: int, service: int, param: int | None, eps: float) -> None: ...
    @property
    def params(self) -> int: ...
    def latencies(
        self, thetas: NDArray[np.float64], xs: NDArray[np.float64]
    ) -> NDArray[np.float64]: ...
    def search(self) -> tuple[float, float, NDArray[np.float64], int]:
        """``(latency_steps, theta, x, evaluations)`` of the deterministic search."""

# --- Aequitas' admission control and RNL (crates/tailbound-py/src/aequitas.rs) -----------------

@final
class AequitasAdmission:
    """Per-(src, dst, class) admit probabilities by AIMD; downgrades to the lowest class."""

    def __new__(
        cls,
        latency_target_s: list[float],
        target_percentile: list[float] | None = None,
        increment_window_s: list[float] | None = None,
        alpha: float = 0.01,
        beta: float = 0.01,
        floor: float = 0.1,
        per_mtu: bool = True,
        rules: str = "paper",
        start_s: float = 0.0,
    ) -> AequitasAdmission: ...
    @property
    def classes(self) -> int: ...
    def admit(self, src: int, dst: int, cls: int, u: float) -> tuple[int, bool]:
        """``(class_run, downgraded)`` for the draw ``u`` in [0, 1)."""
    def complete(
        self, src: int, dst: int, class_run: int, latency_s: float, size_mtus: float, now: float
    ) -> str:
        """``increased``, ``held``, ``decreased`` or ``uncontrolled``."""
    def p_admit(self, src: int, dst: int, cls: int) -> float: ...

#: The payload of a packet in the authors' simulator, bytes (MTU 5120 − header 40).
AEQUITAS_ARTIFACT_MSS_BYTES: float

def rpc_size_mtus(size_bytes: float, mss_bytes: float) -> float:
    """``⌈size / mss⌉``: an RPC's size in MTUs."""

def rnl_tail(
    start_s: NDArray[np.float64], values: NDArray[np.float64], p: float, keep: float = 0.8
) -> float:
    """The ``p``-percentile of ``values`` over the middle ``keep`` of the RPCs by start time."""

# --- The packet-level network of Aequitas (crates/tailbound-py/src/netsim.rs) ------------------

def simulate_network_rpcs(
    config_json: str,
    time_s: NDArray[np.float64],
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    size_bytes: NDArray[np.int64],
    cls: NDArray[np.uint8],
    until_s: float = ...,
) -> dict[str, NDArray[np.generic] | int | float]:
    """Per-RPC arrays (``class_run``, ``downgraded``, ``p_admit``, ``finish_s``, ``rnl_s``,
    ``size_mtus``), ``drops`` per class, and the run's counters (``events``, ``end_s``, …)."""

# --- WorkloadCompactor's exact screens (crates/tailbound-py/src/wc_screen.rs) -----------------

def wc_certificates(
    tenants: list[tuple[WcTenant, int]],
    r_level: NDArray[np.float64],
    r_device: NDArray[np.int64],
    devices: int,
    start: NDArray[np.int64],
    index: NDArray[np.int64],
    value: NDArray[np.float64],
    row_upper: NDArray[np.float64],
    ray: NDArray[np.float64],
    margin: float,
) -> list[tuple[float, float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], bool]]:
    """``(constant, scale, cap, rb, eq57, only)`` per certificate of an infeasible LP."""

@final
class WcClusterScreen:
    """Per-server sums of the cluster screen (``tailbound.policies.cluster_screen``)."""
    def __new__(cls, max_devices: int, max_levels: int, tolerance: float) -> WcClusterScreen: ...
    @property
    def active(self) -> bool: ...
    @property
    def levels(self) -> list[float]: ...
    def __len__(self) -> int: ...
    def fork(self) -> WcClusterScreen: ...
    def add_server(self, devices: int) -> None: ...
    def set_server(self, i: int, tenants: list[tuple[WcTenant, int]], devices: int) -> None: ...
    def infeasible(
        self, tenant: WcTenant, device: int, servers: NDArray[np.int64]
    ) -> NDArray[np.bool_]: ...

@final
class WcCertificateStore:
    """Every server's kept certificates (``tailbound.policies.certificate_store``)."""
    def __new__(cls, max_devices: int, keep: int, margin: float) -> WcCertificateStore: ...
    def __len__(self) -> int: ...
    def fork(self) -> WcCertificateStore: ...
    def add_server(self) -> None: ...
    def add(
        self,
        i: int,
        constant: float,
        scale: float,
        cap: NDArray[np.float64],
        level: NDArray[np.float64],
        device: NDArray[np.int64],
        rb: NDArray[np.float64],
        eq57: NDArray[np.float64],
        only: tuple[float, int] | None = None,
    ) -> None: ...
    def clear(self, i: int) -> None: ...
    def joined(self, i: int, tenant: WcTenant, device: int) -> None: ...
    def refuted(
        self, tenant: WcTenant, device: int, servers: NDArray[np.int64]
    ) -> NDArray[np.bool_]: ...
    def bounds(self, tenant: WcTenant, device: int, i: int, every: bool) -> NDArray[np.float64]: ...

# --- WorkloadCompactor's per-server arithmetic (crates/tailbound-py/src/wc.rs) -----------------

@final
class WcTenant:
    """The one prepared tenant (held in Rust): LP block, arrival curves, SLO, and the screens'
    curve points, region vertices and terms per level (``tailbound.policies.wc_tenant``)."""

    def __new__(
        cls, slo_s: float, rates: list[NDArray[np.float64]], buckets: list[NDArray[np.float64]]
    ) -> WcTenant: ...
    @property
    def slo_s(self) -> float: ...
    @property
    def out_of_bounds(self) -> bool: ...
    def block(
        self,
    ) -> tuple[
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.int64],
        NDArray[np.float64],
        NDArray[np.float64],
    ]:
        """Column bounds of the six columns, then curve rows (local column, coef, rhs)."""
    def vertices(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Curve points up to ``r = 0.999`` per stage, ``(3, K)``, ``K >= 16``, padded by
        repeating the last point."""
    def region(self) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """The region's vertices ``(rates, buckets)``, each ``(3, K)``; ``None`` if empty."""
    def terms(self, level: float) -> NDArray[np.float64]:
        """The cluster screen's ``h`` at ``level`` (s), ``(3, W·L)`` flattened stage-major."""
    def arrival(self, stage: int) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """The arrival curve at ``stage``: breakpoints and tail rate."""

def wc_build_lp(
    tenants: list[WcTenant],
    devices: list[int],
    constants: NDArray[np.float64] | None = None,
    shares_levels: bool = False,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.int32],
    NDArray[np.int32],
    NDArray[np.float64],
    list[tuple[float, int]],
]:
    """``(cost, col_lower, col_upper, row_lower, row_upper, start, index, value, r_vars)``."""

def wc_split_solution(
    x: list[float], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[float]]:
    """Rates clipped to ``[0, 0.999]``, buckets at least 0 (both ``(n, 3)``), ``R`` values."""

def wc_queue_rate_sums(
    devices: list[int], rate: NDArray[np.float64], n_devices: int
) -> NDArray[np.float64]: ...
def wc_queue_delays(
    tenants: list[WcTenant],
    devices: list[int],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    constants: NDArray[np.float64] | None = None,
    shares_levels: bool = False,
) -> NDArray[np.float64]: ...
def wc_shaper_delays(
    tenants: list[WcTenant], rate: NDArray[np.float64], bucket: NDArray[np.float64]
) -> NDArray[np.float64]: ...
def wc_latency_bounds(
    tenants: list[WcTenant],
    devices: list[int],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    constants: NDArray[np.float64] | None = None,
    shares_levels: bool = False,
) -> NDArray[np.float64]: ...
def wc_check(
    tenants: list[WcTenant],
    devices: list[int],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    n_devices: int,
    constants: NDArray[np.float64] | None = None,
    shares_levels: bool = False,
) -> bool: ...
def wc_certainly_infeasible(tenants: list[WcTenant], devices: list[int], newcomer: int) -> bool: ...
def wc_arrival_points(
    rates: NDArray[np.float64], buckets: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]: ...
