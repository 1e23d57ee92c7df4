"""Live replay: a Plan's tenants' traces sent as real TCP traffic by ``tailbound-replay`` (the Rust
binary in ``crates/tailbound-replay``) and checked like :func:`tailbound.verify.replay_plan`.

The network counterpart of ``tailbound verify``: per request the client sends a request message
and the server answers with a response message of the network token model's sizes
(:class:`tailbound.profiles.tokens.MessageSizes`: a read's request ``200 + 0.025·size`` bytes and
its response ``200 + 1.1·size``, a write the reverse), open loop at the trace's timestamps, one
TCP connection per tenant to its server's address and port (the hosts file of ``tailbound
enforce net``). A request's latency runs from its trace timestamp to the last byte of its
response, as the simulator's runs from the request's arrival to its response's delivery.
The measurements become :class:`~tailbound.sim.results.SimResults` (one stage, ``net``) and are
checked by :func:`tailbound.verify.check_results`, so the table is ``tailbound verify``'s (a
tenant's throughput SLO against its completions per second, or the bytes per second of the
requests' sizes, which the client's CSV records). ``docs/enforcement.md`` ("The replayer")
has the design and the measured comparison.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.atomic import write_text_atomic
from tailbound.enforce.fio_iolog import nbd_offsets
from tailbound.enforce.net import Addresses, dscp_of
from tailbound.errors import ConfigError, TailboundError
from tailbound.plan import Plan, client_name
from tailbound.sim.results import SimResults, WorkloadResult
from tailbound.stages import Stage
from tailbound.traces.trace import Op, Trace
from tailbound.verify import Verification, check_results

BINARY_NAME = "tailbound-replay"
#: Requests of all tenants together one run takes (the binary's own limit).
MAX_REQUESTS = 10_000_000


class ReplayError(TailboundError):
    """The replayer is missing or its run failed."""


def binary() -> Path:
    """The ``tailbound-replay`` binary: ``$TAILBOUND_REPLAY``, else the checkout's
    ``target/release`` (``make install`` builds it), else ``PATH``."""
    env = os.environ.get("TAILBOUND_REPLAY")
    if env:
        return Path(env)
    built = Path(__file__).resolve().parents[3] / "target" / "release" / BINARY_NAME
    if built.is_file():
        return built
    found = shutil.which(BINARY_NAME)
    if found is None:
        raise ReplayError(
            f"{BINARY_NAME} not found: run `make install` (it builds target/release/{BINARY_NAME})"
            " or set TAILBOUND_REPLAY"
        )
    return Path(found)


def write_requests(
    traces: Mapping[str, Trace], path: str | Path, *, export_size: int | None = None
) -> int:
    """Write every tenant's requests as the replayer's input CSV (``tenant,time_s,op,size``,
    times in seconds as in the traces); returns the number of requests. With ``export_size``
    (the NBD mode) a fifth column ``offset`` places each request on an export of that many bytes
    (:func:`tailbound.enforce.fio_iolog.nbd_offsets`, the fio iologs' offsets)."""
    total = sum(len(t) for t in traces.values())
    if total > MAX_REQUESTS:
        raise ConfigError(None, f"{total} requests to replay, above the limit {MAX_REQUESTS}")
    with open(path, "w", newline="") as f:
        f.write("tenant,time_s,op,size" + (",offset\n" if export_size is not None else "\n"))
        for name, trace in traces.items():
            if "," in name or "=" in name:
                raise ConfigError(None, f"tenant name {name!r}: no ',' or '=' in a live replay")
            ops = np.where(trace.op == Op.READ, "R", "W")
            columns = [trace.time.tolist(), ops.tolist(), trace.size.tolist()]
            if export_size is not None:
                columns.append([f",{o}" for o in nbd_offsets(trace, export_size).tolist()])
            else:
                columns.append([""] * len(trace))
            f.writelines(
                f"{name},{t!r},{o},{s}{off}\n" for t, o, s, off in zip(*columns, strict=True)
            )
    return total


@dataclass(frozen=True)
class Measured:
    """One tenant's requests in a live run (seconds): trace times, issue lags (the pacer's
    lateness: time from the trace timestamp to the start of the request's write), latencies
    (NaN: not answered before the deadline), the bytes each message had on the wire and each
    request's size in bytes (the trace's; ``None`` for a CSV without the column)."""

    time: NDArray[np.float64]
    issue_lag: NDArray[np.float64]
    latency: NDArray[np.float64]
    request_bytes: NDArray[np.int64]
    response_bytes: NDArray[np.int64]
    size: NDArray[np.float64] | None = None

    @property
    def lost(self) -> int:
        return int(np.count_nonzero(~np.isfinite(self.latency)))


def read_latencies(path: str | Path) -> dict[str, Measured]:
    """The client's CSV, per tenant (in the order tenants first appear; empty issue lags and
    latencies, requests not sent or not answered, are NaN)."""
    import pyarrow as pa
    from pyarrow import csv as pa_csv

    types = {name: pa.float64() for name in ("time_s", "issue_lag_s", "latency_s", "size")}
    types |= {"tenant": pa.string(), "request_bytes": pa.int64(), "response_bytes": pa.int64()}
    with open(path) as f:
        header = f.readline().strip().split(",")
    if "size" not in header:  # written before the column was read: no bytes/s throughput
        del types["size"]
    table = pa_csv.read_csv(
        path,
        convert_options=pa_csv.ConvertOptions(column_types=types, include_columns=list(types)),
    )
    tenant = table.column("tenant").to_numpy(zero_copy_only=False)
    cols = {n: table.column(n).to_numpy(zero_copy_only=False) for n in types if n != "tenant"}
    names, first = np.unique(tenant, return_index=True)
    out = {}
    for name in names[np.argsort(first)]:
        rows = tenant == name
        out[str(name)] = Measured(
            time=cols["time_s"][rows].astype(np.float64),
            issue_lag=cols["issue_lag_s"][rows].astype(np.float64),
            latency=cols["latency_s"][rows].astype(np.float64),
            request_bytes=cols["request_bytes"][rows].astype(np.int64),
            response_bytes=cols["response_bytes"][rows].astype(np.int64),
            size=cols["size"][rows].astype(np.float64) if "size" in cols else None,
        )
    return out


def results_of(measured: Mapping[str, Measured], plan: Plan, *, stage: str = "net") -> SimResults:
    """Live measurements as simulator results: one stage (``stage``), issue = trace time, exit =
    trace time + latency (NaN when not answered, which the statistics leave out: a live check
    counts them separately, :attr:`LiveRun.lost`)."""
    workloads = []
    for t in plan.tenants:
        m = measured.get(t.name)
        if m is None:
            continue
        workloads.append(
            WorkloadResult(
                name=t.name,
                stages=(stage,),
                issue=m.time,
                exit=(m.time + m.latency)[:, None],
                slo=t.slo,
            )
        )
    end = max((float(np.nanmax(w.exit)) for w in workloads if np.isfinite(w.exit).any()), default=0)
    return SimResults(tuple(workloads), 0, end)


@dataclass(frozen=True)
class LiveRun:
    """A live replay of a Plan: the measurements, and the Plan checked against them."""

    measured: dict[str, Measured]
    verification: Verification

    @property
    def lost(self) -> int:
        return sum(m.lost for m in self.measured.values())

    @property
    def all_held(self) -> bool:
        """Every SLO met, every bound held and every request answered."""
        return self.verification.all_held and self.lost == 0


def client_tenants(plan: Plan, host: str | None) -> list[str]:
    """The tenants whose network stages start at ``host`` (every tenant with a network stage
    when ``host`` is None)."""
    names = []
    for t in plan.tenants:
        if Stage.NET_IN not in t.stages and Stage.NET_OUT not in t.stages:
            continue
        if host is None or client_name(t) == host:
            names.append(t.name)
    return names


def destinations(
    plan: Plan, names: Sequence[str], addresses: Addresses, *, dscp: bool = False
) -> list[str]:
    """The client's ``--tenant`` arguments: ``NAME=SERVER_IP:PORT[,tos=...]``; with ``dscp`` the
    TOS byte carries the DSCP ``tailbound enforce net`` gives the tenant's ``net_in`` level."""
    args = []
    for name in names:
        t = plan.tenant(name)
        if t.server is None:
            raise ConfigError(None, f"tenant {name} has no server to replay against")
        ip = addresses.ip(t.server, name, "live replay")
        if name not in addresses.ports:
            raise ConfigError(
                addresses.path, f"tenant {name} needs a port to replay", field=f"ports.{name}"
            )
        arg = f"{name}={ip}:{addresses.ports[name]}"
        level = t.priority.get(Stage.NET_IN)
        if dscp and level is not None:
            arg += f",tos={dscp_of(min(level, 6)) << 2}"
        args.append(arg)
    return args


def serve(
    ports: Sequence[int],
    duration_s: float,
    *,
    address: str = "0.0.0.0",
    prefix: Sequence[str] = (),
    log: str | Path | None = None,
) -> tuple[subprocess.Popen[str], list[str]]:
    """Start a replayer server on ``ports`` (0: any free port) for ``duration_s`` seconds,
    behind ``prefix`` (e.g. ``ip netns exec NS``); returns it once it listens, with the
    addresses it bound."""
    cmd = [*prefix, str(binary()), "server", "--duration", repr(float(duration_s))]
    for p in ports:
        cmd += ["--listen", f"{address}:{p}"]
    if log is not None:
        cmd += ["--log", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "ready":
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise ReplayError(f"{BINARY_NAME} server did not start: {err.strip()}")
    return proc, line[1:]


def replay(
    plan: Plan,
    traces: Mapping[str, Trace],
    tenant_args: Sequence[str],
    *,
    drain_s: float = 5.0,
    start_delay_s: float = 0.5,
    prefix: Sequence[str] = (),
    window_s: float = 180.0,
    workdir: str | Path | None = None,
    nbd_export_size: int | None = None,
    start_at: float | None = None,
    origin: float | None = None,
    out_csv: str | Path | None = None,
    progress_csv: str | Path | None = None,
) -> LiveRun:
    """Run the replayer client on ``traces`` (by tenant name) with the ``--tenant`` arguments
    ``tenant_args`` (:func:`destinations`) and check ``plan`` against what it measured.

    With ``nbd_export_size`` the client replays NBD reads and writes instead (``--nbd``: each
    ``--tenant NAME=HOST:PORT`` is the export ``NAME`` of the NBD server there, e.g.
    ``tailbound-gate``, of that many bytes; offsets from :func:`write_requests`) and the
    measurements are one ``storage`` stage.

    Several client hosts replaying one scenario share a wall-clock ``start_at`` (seconds since
    the Unix epoch, instead of ``start_delay_s`` after connecting) and an ``origin``, the trace
    time that maps to it (default: the earliest request's), so every host's trace time 0 is the
    same instant. ``out_csv`` keeps the client's per-request CSV (written atomically);
    ``progress_csv`` gets each answered request's row as it completes (the client's
    ``--progress``: what ``tailbound agent --replay-progress`` follows)."""
    nbd = nbd_export_size is not None
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        requests, out = Path(tmp) / "requests.csv", Path(tmp) / "latency.csv"
        write_requests(traces, requests, export_size=nbd_export_size)
        cmd = [
            *prefix,
            str(binary()),
            "client",
            *(["--nbd"] if nbd else []),
            "--requests",
            str(requests),
            "--out",
            str(out),
            "--drain",
            repr(float(drain_s)),
            "--start-delay",
            repr(float(start_delay_s)),
        ]
        if progress_csv is not None:
            cmd += ["--progress", str(progress_csv)]
        for a in tenant_args:
            cmd += ["--tenant", a]
        wait = start_delay_s
        if start_at is not None:
            cmd += ["--start-at", repr(float(start_at))]
            wait = max(start_at - time.time(), 0.0)
        if origin is not None:
            cmd += ["--origin", repr(float(origin))]
        first = min((float(t.time.min()) for t in traces.values() if len(t)), default=0.0)
        last = max((float(t.time.max()) for t in traces.values() if len(t)), default=0.0)
        span = last - (first if origin is None else min(origin, first))
        p = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=span + drain_s + wait + 30,
            check=False,
        )
        if p.returncode not in (0, 1) or not out.exists():
            raise ReplayError(f"{BINARY_NAME} client failed: {p.stderr.strip()[-500:]}")
        measured = read_latencies(out)
        if out_csv is not None:
            write_text_atomic(out_csv, out.read_text())
    replayed = dataclasses.replace(plan, tenants=[t for t in plan.tenants if t.name in measured])
    results = results_of(measured, plan, stage="storage" if nbd else "net")
    sizes = {name: m.size for name, m in measured.items() if m.size is not None}
    return LiveRun(measured, check_results(replayed, results, window_s=window_s, sizes=sizes))
