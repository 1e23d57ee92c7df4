"""``tailbound agent``: fetch this host's part of the current Plan and apply it (docs/service.md,
"Agents").

One step (:meth:`Agent.step`, all of ``agent --once``):

1. ask the server for the host's part with the ETag of the part last applied
   (``If-None-Match``; a long poll of ``wait_s`` seconds); 304 means nothing changed;
2. a new part is accepted only whole: the body's SHA-256 must be the ETag the server computed
   over the text it sent, so a truncated or altered transfer is refused and nothing is applied
   (**never a half-fetched Plan**); it is then written atomically to ``<state>/plan.json``;
3. it is applied by the same verbs an operator runs: ``tailbound enforce net`` (idempotent),
   then ``enforce net --check`` to confirm the device holds it, and/or ``tailbound gate
   --reload`` for the storage gateway; a part with no tenant left removes the network
   configuration (``enforce net --remove``). The addresses and ports ``enforce net`` needs come
   with the part (its ``meta.addresses``, from the cluster's and tenants' documents), written
   beside it as ``<state>/hosts.json``; an operator's ``--hosts`` file replaces them;
4. only when everything applied is the ETag recorded in ``<state>/state.json`` (atomically), so
   an agent killed in the middle applies the same part again when it restarts (the verbs are
   idempotent), and one that finds the server down keeps what it applied and retries.

Measurements (:meth:`Agent.measure`): the storage gateway's ``/metrics`` histograms
(``tailbound_gate_latency_seconds``, one export per tenant) are read, the requests since the
previous reading (kept in ``<state>/gate-metrics.json``) summarised per tenant — the count and
the 0.5, 0.99, 0.999 percentiles, each the upper bound of the histogram bucket it falls in (a
conservative reading: never below the true percentile) — and posted to the server. The
replayer's client CSV (``enforce replay --out``: every request's latency through the network
stages, and its bytes on the wire) is summarised per tenant of the part the same way, exactly,
with the requests sent beyond the Plan's ``net_in`` token bucket counted
(:meth:`Agent.measure_replay`); a running replayer's progress file (``enforce replay
--progress``) is followed as it grows and each step's new rows posted as one window
(:meth:`Agent.follow_replay`, :mod:`tailbound.service.replay_follow`). With the network
meter (``--net-meter``) each step reads ``enforce net --meter`` (the kernel's count of each
tenant's packets beyond its network bucket, :mod:`tailbound.enforce.net_meter`) and the window's
difference goes into that step's rows: added to a gateway row's ``beyond_buckets`` (another
stage), the larger of it and a replayer row's estimate (the same ``net_in`` bucket), and for a
tenant no
other row carried, in a row of its own (its packets sent, no percentiles)
(:meth:`Agent.measure_net`, :meth:`Agent.post_net`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tailbound.atomic import write_text_atomic
from tailbound.service import replay_follow as rf
from tailbound.service.client import Client, ServiceError
from tailbound.service.replay_follow import FRACTIONS


@dataclass(frozen=True)
class Net:
    """Apply the network stages with ``enforce net`` on ``device``; the addresses and ports from
    ``hosts`` (an ``enforce net --hosts`` file), or when None from the part itself."""

    device: str
    hosts: Path | None = None
    netns: str | None = None
    link_rate: str | None = None
    dry_run: bool = False
    #: Read ``enforce net``'s meter (``enforce net --meter``) and post each window's packets
    #: beyond the Plan's network buckets (:meth:`Agent.measure_net`).
    meter: bool = False


@dataclass(frozen=True)
class Gate:
    """Push the storage stage to the gateway serving ``device`` from ``backend``."""

    device: str
    backend: Path


@dataclass
class Agent:
    """An agent of ``host`` on ``cluster``, keeping its state in ``state``."""

    client: Client
    cluster: str
    host: str
    state: Path
    net: Net | None = None
    gate: Gate | None = None
    #: The storage gateway's metrics URL (``http://HOST:PORT/metrics``) to report from.
    metrics_url: str | None = None
    #: The replayer's client CSV (``enforce replay --out``) to report from.
    replay_csv: Path | None = None
    #: The host's Aequitas RPCs served and replayed (``--rpc-replay``: service.rpc_agent).
    rpc: Any = None
    #: A running replayer's progress file (``enforce replay --progress``) to follow.
    replay_progress: Path | None = None
    #: Runs a ``tailbound`` command line; its exit status and output (replaceable in tests).
    run: Callable[[Sequence[str]], tuple[int, str]] = field(default=None)  # type: ignore[assignment]

    #: The network meter's packets beyond the buckets per tenant in the current window, not yet
    #: posted (:meth:`measure_net` fills it, the step's posts take from it).
    net_pending: dict[str, int] = field(default_factory=dict)
    #: The meter's reading of :meth:`measure_net` and the window's packets sent per tenant.
    _net_reading: tuple[dict[str, Any], dict[str, int]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        if self.run is None:
            self.run = tailbound

    @property
    def plan_path(self) -> Path:
        return self.state / "plan.json"

    @property
    def hosts_path(self) -> Path:
        """The ``enforce net --hosts`` file: the operator's, or the part's addresses."""
        if self.net is not None and self.net.hosts is not None:
            return self.net.hosts
        return self.state / "hosts.json"

    def applied(self) -> dict[str, Any]:
        """What was last applied: ``{"etag", "version"}`` (empty before the first)."""
        try:
            return dict(json.loads((self.state / "state.json").read_text()))
        except (OSError, ValueError):
            return {}

    def step(self, wait_s: float = 0.0) -> dict[str, Any]:
        """Fetch and apply once (module docstring); what happened, as a JSON-able report."""
        held = self.applied().get("etag")
        version, etag, text = self.client.host_part(self.cluster, self.host, held, wait_s)
        if text is None:
            return {"version": version, "changed": False, "ok": True}
        if f'"{hashlib.sha256(text.encode()).hexdigest()}"' != etag:
            raise ServiceError(502, "the part received does not match its ETag (incomplete)", None)
        document = json.loads(text)
        tenants = document["tenants"]
        write_text_atomic(self.plan_path, text)
        if self.net is not None and self.net.hosts is None:
            addresses = document.get("meta", {}).get("addresses")
            if tenants and addresses is None:
                raise ServiceError(
                    502, "the part holds no addresses (meta.addresses): give --hosts", None
                )
            write_text_atomic(self.hosts_path, json.dumps(addresses or {"hosts": {}}))
        steps = self.apply(bool(tenants))
        ok = all(code == 0 for _, code, _ in steps)
        if ok:
            write_text_atomic(
                self.state / "state.json", json.dumps({"etag": etag, "version": version})
            )
        return {
            "version": version,
            "changed": True,
            "ok": ok,
            "tenants": [t["name"] for t in tenants],
            "steps": [
                {"command": c, "status": code, "output": out[-2000:]} for c, code, out in steps
            ],
        }

    def apply(self, any_tenant: bool) -> list[tuple[str, int, str]]:
        """Run the verbs applying ``plan.json``; (command, status, output) each."""
        steps: list[tuple[str, int, str]] = []

        def do(argv: list[str]) -> bool:
            code, out = self.run(argv)
            steps.append((" ".join(argv), code, out))
            return code == 0

        if self.net is not None:
            n = self.net
            base = ["enforce", "net", "--device", n.device]
            base += ["--netns", n.netns] if n.netns else []
            if not any_tenant:
                if not n.dry_run:
                    do([*base, "--remove"])
            else:
                base += [
                    "--plan",
                    str(self.plan_path),
                    "--host",
                    self.host,
                    "--hosts",
                    str(self.hosts_path),
                ]
                base += ["--link-rate", n.link_rate] if n.link_rate else []
                if n.dry_run:
                    do([*base, "--dry-run"])
                elif do(base):
                    do([*base, "--check"])
        if self.gate is not None and any_tenant:
            g = self.gate
            do(
                [
                    "gate",
                    "--plan",
                    str(self.plan_path),
                    "--device",
                    g.device,
                    "--backend",
                    str(g.backend),
                    "--reload",
                ]
            )
        return steps

    def measure(self, metrics_text: str, window_s: float | None = None) -> dict[str, Any] | None:
        """Post the gateway's requests since the last reading (module docstring), for the
        tenants of the part applied; the server's answer, or None when nothing was new. The
        window defaults to the time since the last reading (1 s for the first). Each row
        carries the requests that arrived beyond the Plan's storage buckets in the window
        (``tailbound_gate_beyond_buckets_requests_total``, docs/enforcement.md)."""
        path = self.state / "gate-metrics.json"
        if window_s is None:
            window_s = max(time.time() - path.stat().st_mtime, 1e-3) if path.exists() else 1.0
        try:
            kept = json.loads(path.read_text())
        except (OSError, ValueError):
            kept = {}
        if "latency" not in kept:  # the layout before the beyond counters: histograms only
            kept = {"latency": kept, "beyond": {}}
        before = {k: [tuple(p) for p in v] for k, v in kept["latency"].items()}
        now = gate_histograms(metrics_text)
        beyond_now = gate_beyond(metrics_text)
        applied = self.applied()
        mine = set()
        if self.plan_path.exists():
            mine = {t["name"] for t in json.loads(self.plan_path.read_text())["tenants"]}
        rows = []
        for export, histogram in now.items():
            summary = summarise(histogram, before.get(export))
            if summary is not None and export in mine and summary["percentiles"]:
                over = beyond_now.get(export, 0) - kept["beyond"].get(export, 0)
                rows.append({"tenant": export, **summary, "beyond_buckets": max(over, 0)})
        self._with_net(rows, same_bucket=False)
        answer = None
        if rows:
            body = {
                "host": self.host,
                "plan_version": applied.get("version", 0),
                "window_s": window_s,
                "tenants": rows,
            }
            answer = self.client.json("POST", f"/clusters/{self.cluster}/measurements", json=body)
        # only once posted: a failed post is retried
        write_text_atomic(path, json.dumps({"latency": now, "beyond": beyond_now}))
        return answer

    def measure_replay(self, csv: Path) -> dict[str, Any] | None:
        """Post the replayer's measurements of this host's tenants from its client CSV (the
        network stages end to end, and the requests beyond the Plan's buckets:
        :func:`replay_summaries`), once per version of the file (its size and modification time
        are kept in ``<state>/replay.json``); the server's answer, or None when nothing new."""
        mark = self.state / "replay.json"
        try:
            st = csv.stat()
        except FileNotFoundError:
            return None
        seen = {"path": str(csv.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        try:
            if json.loads(mark.read_text()) == seen:
                return None
        except (OSError, ValueError):
            pass
        if not self.plan_path.exists():
            return None
        rows = replay_summaries(csv, json.loads(self.plan_path.read_text()))
        self._with_net(rows, same_bucket=True)
        answer = None
        if rows:
            from tailbound.enforce.replay import read_latencies

            spans = [float(m.time.max() - m.time.min()) for m in read_latencies(csv).values()]
            body = {
                "host": self.host,
                "plan_version": self.applied().get("version", 0),
                "window_s": max([*spans, 1e-3]),
                "tenants": rows,
            }
            answer = self.client.json("POST", f"/clusters/{self.cluster}/measurements", json=body)
        write_text_atomic(mark, json.dumps(seen))  # only once posted: a failed post is retried
        return answer

    def follow_replay(self, progress: Path) -> dict[str, Any] | None:
        """Post this host's tenants' requests answered since the last reading of a running
        replayer's ``progress`` file, one window per call (:mod:`tailbound.service.replay_follow`;
        where it stopped is kept in ``<state>/replay-progress.json``, advanced only once posted);
        the server's answer, or None when nothing new was answered. The window is the time since
        the previous reading (the span of the rows' issue times for the first)."""
        mark = self.state / "replay-progress.json"
        try:
            kept = json.loads(mark.read_text())
        except (OSError, ValueError):
            kept = {}
        cursor = rf.Cursor.from_json(kept.get("cursor", {}))
        rows, after = rf.read_new(progress, cursor)
        if not rows and after.offset == cursor.offset:
            return None
        answer = None
        summaries = (
            rf.summaries(rows, json.loads(self.plan_path.read_text()), after)
            if self.plan_path.exists()
            else []
        )
        self._with_net(summaries, same_bucket=True)
        now = time.time()
        if summaries:
            if "at" in kept:
                window_s = now - float(kept["at"])
            else:
                issued = [float(r["time_s"]) for r in rows if r.get("time_s")]
                window_s = max(issued) - min(issued) if issued else 0.0
            body = {
                "host": self.host,
                "plan_version": self.applied().get("version", 0),
                "window_s": max(window_s, 1e-3),
                "tenants": summaries,
            }
            answer = self.client.json("POST", f"/clusters/{self.cluster}/measurements", json=body)
        write_text_atomic(mark, json.dumps({"cursor": after.to_json(), "at": now}))
        return answer

    def measure_net(self, listing: str | None = None) -> dict[str, int]:
        """Read ``enforce net``'s meter (``listing``: the JSON ``enforce net --meter`` prints;
        by default it is run on the agent's device) and keep, per tenant of the part applied,
        the window's packets beyond its network buckets in :attr:`net_pending`, for the step's
        posts to carry (:meth:`post_net`); returns them. The window is the difference from the
        reading kept in ``<state>/net-meter.json`` (written by :meth:`post_net` once posted):
        a counter below the kept one was reset (the table was re-installed) and counts whole
        (one re-installed and already past the kept count between two readings, a step apart,
        would be read as a difference: an undercount).
        The window's packets sent are kept too, for :meth:`post_net`'s own rows."""
        if listing is None:
            if self.net is None:
                raise ValueError("measure_net needs a net device (--net-device)")
            argv = ["enforce", "net", "--device", self.net.device, "--meter"]
            argv += ["--netns", self.net.netns] if self.net.netns else []
            code, out = self.run(argv)
            if code != 0:
                raise OSError(f"tailbound {' '.join(argv)}: exit {code}: {out[-500:]}")
            listing = out.strip().splitlines()[-1] if out.strip() else "{}"
        now = {k: dict(v) for k, v in json.loads(listing).items()}
        try:
            kept = json.loads((self.state / "net-meter.json").read_text())
        except (OSError, ValueError):
            kept = {}
        before = kept.get("counts", {})
        mine = set()
        if self.plan_path.exists():
            mine = {t["name"] for t in json.loads(self.plan_path.read_text())["tenants"]}
        sent: dict[str, int] = {}
        beyond: dict[str, int] = {}
        for key, c in now.items():
            if c["tenant"] not in mine:
                continue
            old = before.get(key, {})
            reset = int(c["packets"]) < int(old.get("packets", 0))  # the table was re-installed
            for name, into in (("packets", sent), ("beyond_packets", beyond)):
                d = int(c[name]) - (0 if reset else int(old.get(name, 0)))
                into[c["tenant"]] = into.get(c["tenant"], 0) + max(d, 0)
        self._net_reading = (now, sent)
        self.net_pending = {t: n for t, n in beyond.items() if sent.get(t, 0) > 0 or n > 0}
        return dict(self.net_pending)

    def _with_net(self, rows: list[dict[str, Any]], *, same_bucket: bool) -> None:
        """Carry the network meter's pending counts into ``rows`` (taking them): added to a
        row's ``beyond_buckets`` (the gateway's storage requests: another stage), or, with
        ``same_bucket``, the larger of the two (the replayer's rows, whose count is the agent's
        estimate of the ``net_in`` bucket the kernel meters on this client host: requests at
        the application against packets at the egress, each positive exactly when it saw the
        tenant beyond; in ``shaping`` mode the kernel sees the sender held back, so the
        replayer's count is the one that shows it, docs/enforcement.md)."""
        for row in rows:
            n = self.net_pending.pop(row["tenant"], None)
            if n is not None:
                had = int(row.get("beyond_buckets", 0))
                row["beyond_buckets"] = max(had, n) if same_bucket else had + n

    def post_net(self, window_s: float | None = None) -> dict[str, Any] | None:
        """Post the network meter's window (:meth:`measure_net`) for the tenants no other post
        of the step carried: per tenant ``count`` = its packets sent in the window, no
        percentiles (the meter measures no latency), ``beyond_buckets`` = its packets beyond
        the bucket; then keep the reading. The window defaults to the time since the last
        reading (1 s for the first). The server's answer, or None when nothing was left."""
        reading = self._net_reading
        if reading is None:
            return None
        now, sent = reading
        path = self.state / "net-meter.json"
        if window_s is None:
            window_s = max(time.time() - path.stat().st_mtime, 1e-3) if path.exists() else 1.0
        rows = [
            {"tenant": t, "count": sent.get(t, 0), "percentiles": {}, "beyond_buckets": n}
            for t, n in sorted(self.net_pending.items())
        ]
        answer = None
        if rows:
            body = {
                "host": self.host,
                "plan_version": self.applied().get("version", 0),
                "window_s": window_s,
                "tenants": rows,
            }
            answer = self.client.json("POST", f"/clusters/{self.cluster}/measurements", json=body)
        write_text_atomic(path, json.dumps({"counts": now}))  # only once posted
        self.net_pending, self._net_reading = {}, None
        return answer

    def loop(self, wait_s: float, retry_s: float, report: Callable[[dict[str, Any]], None]) -> None:
        """Step forever; while the server is unreachable, retry every ``retry_s`` seconds."""
        while True:
            try:
                report(self.step(wait_s))
                if self.net is not None and self.net.meter and not self.net.dry_run:
                    self.measure_net()
                if self.metrics_url is not None:
                    posted = self.measure(httpx.get(self.metrics_url, timeout=10).text)
                    if posted is not None:
                        report({"measurements": posted})
                if self.replay_csv is not None:
                    posted = self.measure_replay(self.replay_csv)
                    if posted is not None:
                        report({"replay_measurements": posted})
                if self.rpc is not None and (done := self.rpc.after(self)) is not None:
                    report(done)
                if self.replay_progress is not None:
                    posted = self.follow_replay(self.replay_progress)
                    if posted is not None:
                        report({"replay_window": posted})
                if (posted := self.post_net()) is not None:
                    report({"net_meter": posted})
            except (ServiceError, httpx.HTTPError, OSError) as e:  # e.g. the server restarting
                report({"ok": False, "error": str(e)})
                time.sleep(retry_s)


_BUCKET = re.compile(
    r'^tailbound_gate_latency_seconds_bucket\{export="(?P<export>[^"]+)",le="(?P<le>[^"]+)"\}'
    r"\s+(?P<count>\S+)$"
)


def gate_histograms(text: str) -> dict[str, list[tuple[float, float]]]:
    """The cumulative latency histogram of each export in the gateway's metrics ``text``:
    ``(upper bound s, requests at or below)`` in increasing order, ``+Inf`` last."""
    out: dict[str, list[tuple[float, float]]] = {}
    for line in text.splitlines():
        m = _BUCKET.match(line.strip())
        if m:
            out.setdefault(m["export"], []).append((float(m["le"]), float(m["count"])))
    return {k: sorted(v) for k, v in out.items()}


_BEYOND = re.compile(
    r'^tailbound_gate_beyond_buckets_requests_total\{export="(?P<export>[^"]+)"\}\s+(?P<n>\S+)$'
)


def gate_beyond(text: str) -> dict[str, int]:
    """Each export's requests that arrived beyond the Plan's buckets, from the gateway's
    metrics ``text`` (a counter since the gateway started; none for a gateway without it).

    >>> gate_beyond('tailbound_gate_beyond_buckets_requests_total{export="A"} 3\\n')
    {'A': 3}
    """
    out = {}
    for line in text.splitlines():
        m = _BEYOND.match(line.strip())
        if m:
            out[m["export"]] = int(float(m["n"]))
    return out


def summarise(
    now: list[tuple[float, float]], before: list[tuple[float, float]] | None
) -> dict[str, Any] | None:
    """The requests between two readings of one export's histogram: their count and the
    percentiles of :data:`FRACTIONS` (each a bucket's upper bound; ``None`` when none)."""
    previous = dict(before or [])
    window = [(le, count - previous.get(le, 0.0)) for le, count in now]
    total = window[-1][1] if window else 0.0
    if total <= 0:
        return None
    percentiles = {}
    for fraction in FRACTIONS:
        le = next(le for le, count in window if count >= fraction * total)
        percentiles[str(fraction)] = le if math.isfinite(le) else None
    return {
        "count": int(total),
        "percentiles": {k: v for k, v in percentiles.items() if v is not None},
    }


def beyond_bucket(
    times_s: Sequence[float], sizes_bytes: Sequence[float], rate_bytes_per_s: float, bucket: float
) -> int:
    """How many of a tenant's messages (issued at ``times_s``, in order, of ``sizes_bytes``
    each) found fewer tokens than their size in the token bucket ``(rate_bytes_per_s,
    bucket)`` (full at the start; a message takes its size when it has it): its requests sent
    beyond the Plan's bucket, which its characterisation did not foresee.

    >>> beyond_bucket([0.0, 0.0, 0.0, 1.0], [100, 100, 100, 100], 100.0, 200.0)
    1
    """
    return rf.meter(list(times_s), list(sizes_bytes), rate_bytes_per_s, bucket, None)[0]


def replay_summaries(csv: Path, part: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tenant of the host's ``part`` found in the replayer's client CSV (``tailbound enforce
    replay --out``): its requests' count, the latency percentiles of :data:`FRACTIONS` and the
    largest (s, exact: each request's latency is recorded; unanswered ones are left out), and
    the requests sent beyond the Plan's ``net_in`` token bucket (:func:`beyond_bucket` over the
    requests' issue times and bytes on the wire)."""
    import numpy as np

    from tailbound.enforce.replay import read_latencies
    from tailbound.plan import Plan
    from tailbound.stages import Stage

    measured = read_latencies(csv)
    rows = []
    for t in Plan.from_json(part).tenants:
        m = measured.get(t.name)
        if m is None:
            continue
        answered = m.latency[np.isfinite(m.latency)]
        if not answered.size:
            continue
        order = np.argsort(m.time + m.issue_lag, kind="stable")
        limit = t.limits.get(Stage.NET_IN)
        over = 0
        if limit is not None and limit.capacity_per_s is not None:
            over = beyond_bucket(
                (m.time + m.issue_lag)[order].tolist(),
                m.request_bytes[order].tolist(),
                limit.rate * limit.capacity_per_s,
                limit.bucket_s * limit.capacity_per_s,
            )
        rows.append(rf.summary(t.name, answered, over))
    return rows


def tailbound(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``tailbound ARGV`` (this interpreter's); its exit status and combined output."""
    done = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", *argv], capture_output=True, text=True
    )
    return done.returncode, done.stdout + done.stderr
