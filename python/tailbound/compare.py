"""Every policy on one set of tenants: what each costs and which of its promises hold.

``tailbound compare`` (issue 28) answers "what would each policy cost on my traces, and which of
its promises hold": it runs every placement policy of the registry
(:mod:`tailbound.policies.registry`) under both server models — ``sound``, the bounds that hold
against the device's dispatch limits (docs/dnc.md, "The storage stage"), and ``reference``, the
WorkloadCompactor paper's Eq. 5.1 — and, when every tenant names its client and server hosts,
every admission policy; each plan is saved and replayed exactly as ``tailbound verify`` replays
a saved plan (:func:`verify_saved`: the plan's recorded traces checked against their hashes,
:func:`tailbound.verify.replay_plan`), and the outcome of each is one :class:`Outcome`: servers
used, tenants placed or admitted, time taken (seconds), bounds exceeded, SLOs missed and the
replayed latency over the bound per tenant.

A policy that cannot run on the input is an outcome with the reason, never an error: an
admission policy without hosts, a graduated SLO (only Nested QoS honours one), a PSLO tenant
without a throughput SLO, or any failure of the policy itself. The server model is a
placement's: admission policies bound the network (and the device) with their own analyses, so
they run once, under no server model (``model`` ``None``).

All placement rows share one characterisation of the tenants (r-b curves, the same as
``tailbound place`` computes, safety margin 1), timed apart (:attr:`Comparison.curves_s`).

Examples
--------
>>> [c.label for c in cases(["knee", "dnc"])]
['knee (sound)', 'knee (reference)', 'dnc']
>>> cases(["average-rate:K"])[0].policy  # the pattern stands for the default K
'average-rate:2'
"""

from __future__ import annotations

import csv
import math
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.atomic import atomic_path
from tailbound.errors import ConfigError, TailboundError
from tailbound.executor import Runner
from tailbound.policies.registry import build, entry, find, names, registered
from tailbound.tables import markdown_table

if TYPE_CHECKING:
    from tailbound.model import Cluster, TenantSet
    from tailbound.plan import Plan
    from tailbound.verify import Verification

# The plan, the simulator and the policies are imported where used: building the CLI's parser
# (which reads COLUMNS) stays cheap.

#: The server models a placement runs under (``tailbound place --server-model``), in order.
MODELS = ("sound", "reference")

#: ``average-rate:K`` compared at this K (the issue's and Fig. 5.4's ``average-rate:2``).
DEFAULT_K = 2.0


@dataclass(frozen=True)
class Case:
    """One run to compare: a registered ``policy`` of ``kind`` (``placement`` or
    ``admission``) under server ``model`` (:data:`MODELS`; ``None`` for admission)."""

    kind: str
    policy: str
    model: str | None = None

    @property
    def label(self) -> str:
        """``"knee (sound)"``, or the policy's name for an admission policy."""
        return self.policy if self.model is None else f"{self.policy} ({self.model})"

    @property
    def slug(self) -> str:
        """A file name stem: ``place-knee-sound``, ``admit-dnc``."""
        verb = "place" if self.kind == "placement" else "admit"
        return "-".join(p for p in (verb, self.policy.replace(":", "_"), self.model) if p)


def cases(policies: Sequence[str] | None = None, models: Sequence[str] = MODELS) -> list[Case]:
    """The runs of ``policies`` (registered names of either kind; default every placement
    policy, then every admission policy but Aequitas', whose tenants are RPC streams): a
    placement policy once per server model, an admission policy once. ``average-rate:K``
    stands for ``average-rate:2`` (:data:`DEFAULT_K`).
    An unknown name is a ``ValueError`` with the registry's list."""
    default = [*names("placement"), *(n for n in names("admission") if find(n).family != "rpc")]
    chosen = list(policies) if policies is not None else default
    out: list[Case] = []
    for name in chosen:
        e = find(name)
        if e.kind not in ("placement", "admission"):
            raise ValueError(f"{name!r} is a {e.kind} policy: compare runs placement and admission")
        if e.family == "rpc":
            raise ValueError(
                f"{name!r} plans RPC tenants over WFQ classes: compare runs the "
                "storage and network tenants' policies (verify an Aequitas plan)"
            )
        if name == e.name and e.parameterised:
            name = f"{e.name.partition(':')[0]}:{DEFAULT_K:g}"
        registered([name], e.kind)  # a parameterised name's number checked here
        if e.kind == "placement":
            out += [Case("placement", name, m) for m in models]
        else:
            out.append(Case("admission", name))
    return list(dict.fromkeys(out))  # a name given twice runs once


@dataclass(frozen=True)
class Outcome:
    """One :class:`Case` run (or not): ``placed`` tenants placed or admitted out of
    ``tenants`` on ``servers`` servers in ``seconds`` (the decision; ``None`` when it did not
    run, ``reason`` saying why), its plan at ``plan_path``, and its replay: ``checked`` tenants
    with a promise, ``slo_missed`` and ``exceeded`` of them, and each one's replayed latency at
    the bound's percentile over its bound (``ratios``; above 1: exceeded), replayed in
    ``verify_s`` seconds. ``reason`` may also note what a run that ran could not do (its replay
    failing)."""

    case: Case
    tenants: int
    placed: int | None = None
    servers: int | None = None
    seconds: float | None = None
    reason: str = ""
    plan_path: Path | None = None
    checked: int | None = None
    slo_missed: int | None = None
    exceeded: int | None = None
    ratios: tuple[float, ...] = ()
    verify_s: float | None = None

    @property
    def ran(self) -> bool:
        """The policy ran and gave a plan."""
        return self.placed is not None

    @property
    def worst(self) -> float:
        """The largest replayed/bound (NaN without a replay)."""
        return max(self.ratios) if self.ratios else math.nan

    @property
    def median(self) -> float:
        """The median replayed/bound (the upper middle; NaN without a replay)."""
        r = sorted(self.ratios)
        return r[len(r) // 2] if r else math.nan


@dataclass(frozen=True)
class Inputs:
    """What every run reads: the tenants, the cluster placement fills, the SSD profile (path)
    of its devices, ``grow`` (add servers like the last one when none fits, as ``place
    --grow``) and the links' packet size (bytes)."""

    tset: TenantSet
    cluster: Cluster
    profile: Path
    grow: bool = False
    mtu_bytes: float = 1500.0


@dataclass
class Comparison:
    """The outcomes in case order and the shared characterisation's time (s; ``None`` when
    no placement ran)."""

    outcomes: list[Outcome] = field(default_factory=list)
    curves_s: float | None = None


def admission_blocker(tset: TenantSet) -> str | None:
    """Why admission policies cannot run on ``tset`` (a tenant without a client or server
    host: they analyse the network between the two), or ``None``."""
    for key in ("client_host", "server_host"):
        try:
            tset.require(key, "admission")
        except ConfigError as e:
            return f"no hosts: {e}"
    return None


def compare(
    inputs: Inputs,
    runs: Sequence[Case],
    out: Path,
    *,
    jobs: int = 1,
    progress: Callable[[str], None] = lambda _: None,
    characterized: Callable[[int], None] = lambda _: None,
    runner: Runner | None = None,
) -> Comparison:
    """Run every case of ``runs`` on ``inputs``, saving each plan under ``out/plans`` and its
    replay's per-tenant CSV (``tailbound verify``'s) under ``out/verify``; ``characterized(1)``
    after each tenant's r-b curves, ``progress(label)`` before each run (with ``jobs`` > 1, the
    runs go to that many processes, given the r-b curves once each, and ``progress`` says
    ``"<label> done"`` as each ends; the outcomes stay in case order). ``runner`` (a
    :class:`~tailbound.executor.Runner`, e.g. on a Dask cluster) replaces the ``jobs`` processes:
    the runs are independent, so they give the same outcomes wherever they run."""
    from tailbound.policies.graduated import refuse_graduated

    result = Comparison()
    graduated: str | None = None
    try:
        refuse_graduated(inputs.tset, "placement")
    except ConfigError as e:
        graduated = str(e)
    workloads: list[Any] | None = None
    if graduated is None and any(c.kind == "placement" for c in runs):
        start = time.perf_counter()
        workloads = characterize(inputs, characterized)
        result.curves_s = time.perf_counter() - start
    task = _Task(inputs, workloads, graduated, admission_blocker(inputs.tset), out)
    if runner is None:
        runner = Runner(jobs=jobs)
    if not runner.distributed and (runner.jobs <= 1 or len(runs) <= 1):
        for case in runs:
            progress(case.label)
            result.outcomes.append(task.run(case))
        return result
    done: list[Outcome | None] = [None] * len(runs)
    for i, outcome in runner.run(_run, runs, shared=task, desc="compare", unit="run"):
        progress(f"{runs[i].label} done")
        done[i] = outcome
    result.outcomes = [o for o in done if o is not None]
    return result


@dataclass(frozen=True)
class _Task:
    """What every run needs: the inputs, the shared r-b curves (``None`` when no placement
    runs, or when ``graduated`` says why none can), why admission cannot run (``blocker``),
    and the output folder."""

    inputs: Inputs
    workloads: list[Any] | None
    graduated: str | None
    blocker: str | None
    out: Path

    def run(self, case: Case) -> Outcome:
        """The outcome of ``case`` (a row with the reason when it cannot run or fails)."""
        n = len(self.inputs.tset.tenants)
        if case.kind == "placement":
            if self.graduated is not None or self.workloads is None:
                return Outcome(case, n, reason=self.graduated or "no r-b curves")
            return _guarded(case, n, partial(place, case, self.inputs, self.workloads, self.out))
        if self.blocker is not None:
            return Outcome(case, n, reason=self.blocker)
        return _guarded(case, n, partial(admit, case, self.inputs, self.out))


def _run(task: _Task, case: Case) -> Outcome:
    """One run on a runner's worker (the task, with its r-b curves, is shipped once)."""
    return task.run(case)


def _guarded(case: Case, n: int, run: Callable[[], Outcome]) -> Outcome:
    """``run()``, or an outcome giving the reason it failed (the error's message; the
    exception's type and last frame for anything but bad input)."""
    try:
        return run()
    except TailboundError as e:
        return Outcome(case, n, reason=f"cannot run: {e}")
    except Exception as e:  # a policy's own failure is a row of the answer, not a crash
        where = traceback.extract_tb(e.__traceback__)[-1]
        return Outcome(
            case,
            n,
            reason=f"failed: {type(e).__name__}: {e} ({Path(where.filename).name}:{where.lineno})",
        )


def characterize(inputs: Inputs, progress: Callable[[int], None]) -> list[Any]:
    """Every tenant's r-b curves as ``tailbound place`` computes them (whole traces, safety
    margin 1); a trace that cannot be read is bad input (:class:`TailboundError`)."""
    from tailbound.policies.workload import characterize_all
    from tailbound.profiles import SsdProfile
    from tailbound.traces.readers import read_trace

    return characterize_all(
        inputs.tset.tenants,
        lambda t: read_trace(t.trace),
        profile=SsdProfile.load(inputs.profile),
        link_bandwidth_bytes_per_s=inputs.cluster.link_bytes_per_s,
        progress=progress,
    )


def place(case: Case, inputs: Inputs, workloads: Sequence[Any], out: Path) -> Outcome:
    """``tailbound place --policy P --server-model M [--grow]`` on the shared r-b curves: the
    plan saved, then verified."""
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.placement import place as first_fit
    from tailbound.policies.server import REFERENCE
    from tailbound.policies.workloadcompactor import server_model, to_plan
    from tailbound.profiles import SsdProfile

    link = inputs.cluster.link_bytes_per_s
    model = (
        server_model(SsdProfile.load(inputs.profile), link, inputs.mtu_bytes)
        if case.model == "sound"
        else REFERENCE
    )
    policy = build(case.policy, "placement", model)
    result = first_fit(workloads, inputs.cluster, policy, grow=inputs.grow)
    plan = to_plan(
        result,
        inputs.cluster,
        policy=case.policy,
        safety_margin=1.0,
        meta={"verb": "compare", "grow": inputs.grow, "server_model": case.model},
    )
    plan = with_inputs(plan, inputs.tset, profile=inputs.profile, link_bytes_per_s=link)
    return _verified(case, inputs, plan, result.seconds, out)


def admit(case: Case, inputs: Inputs, out: Path) -> Outcome:
    """``tailbound admit --policy P`` at its defaults (an SNC policy under tailbound's rule,
    :class:`~tailbound.policies.admission_policies.SncRule`): the plan saved, then verified."""
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.admission import admission_plan, admit_in_order
    from tailbound.policies.admission_policies import SncRule
    from tailbound.policies.graduated import refuse_graduated

    tset = inputs.tset
    family = entry(case.policy, "admission").family
    meta: dict[str, object] = {"verb": "compare", "tenants": str(tset.path)}
    start = time.perf_counter()
    if family == "nested":
        plan = _nested(tset, meta)
        profile: Any = tset.ssd_profile
    elif family == "control":
        plan = build(case.policy, "admission", tset).plan(meta=meta)
        profile = tset.ssd_profile
    else:
        refuse_graduated(tset, case.policy)
        rule = SncRule()
        kwargs = rule.kwargs() if family == "snc" else {}
        policy = build(case.policy, "admission", tset, **kwargs)
        decisions = admit_in_order(tset.tenants, policy)
        if family == "snc":
            meta["rule"] = rule.text()
        plan = admission_plan(
            case.policy, policy, decisions, link_bytes_per_s=tset.link_bytes_per_s, meta=meta
        )
        profile = None
    seconds = time.perf_counter() - start
    plan = with_inputs(plan, tset, profile=profile)
    return _verified(case, inputs, plan, seconds, out)


def _nested(tset: TenantSet, meta: dict[str, object]) -> Plan:
    """``tailbound admit --policy nested-qos``'s plan: classes from each trace's storage work."""
    from tailbound.policies.nested_qos import NestedQosPolicy
    from tailbound.profiles.tokens import SsdModel, SsdProfile
    from tailbound.traces.readers import read_trace

    if tset.ssd_profile is None:
        raise ConfigError(tset.path, "missing (nested-qos needs it)", field="ssd_profile")
    tset.require("server_host", "nested-qos")
    tset.require("device", "nested-qos")
    model = SsdModel(SsdProfile.load(tset.ssd_profile))
    traces = []
    for t in tset.tenants:
        trace = read_trace(t.trace)
        traces.append((trace.time, model.tokens(trace)))
    policy = NestedQosPolicy(tset)
    return policy.plan(policy.decide(traces), meta=meta)


def _verified(case: Case, inputs: Inputs, plan: Plan, seconds: float, out: Path) -> Outcome:
    """Save ``plan`` under ``out/plans``, replay it as ``tailbound verify`` does, and write the
    replay's CSV under ``out/verify``; a replay that fails leaves the decision's numbers with
    the reason."""
    path = out / "plans" / f"{case.slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    plan.save(path)
    n = len(inputs.tset.tenants)
    decided = Outcome(
        case,
        n,
        placed=len(plan.tenants),
        servers=plan.servers_used,
        seconds=seconds,
        plan_path=path,
        reason=left_out(plan),
    )
    if not plan.tenants:
        return decided
    start = time.perf_counter()
    try:
        v = verify_saved(plan, path)
    except Exception as e:  # the decision stands; its replay is what failed
        failed = f"replay failed: {type(e).__name__}: {e}"
        return replace(decided, reason="; ".join(r for r in (decided.reason, failed) if r))
    verify_s = time.perf_counter() - start
    (out / "verify").mkdir(exist_ok=True)
    v.to_csv(out / "verify" / f"{case.slug}.csv")
    return replace(
        decided,
        checked=len(v.checks),
        slo_missed=len(v.violations),
        exceeded=len(v.exceeded),
        ratios=tuple(c.ratio for c in v.checks),
        verify_s=verify_s,
    )


def left_out(plan: Plan) -> str:
    """What ``plan`` left out, in one line: how many tenants and the first one's reason
    (``"5 left out; T0: fits on no server"``), or ``""``."""
    if not plan.rejected:
        return ""
    first = plan.rejected[0]
    return f"{len(plan.rejected)} left out; {first.name}: {first.reason}"


def verify_saved(plan: Plan, path: Path) -> Verification:
    """``tailbound verify --plan PATH`` at its defaults (:func:`tailbound.verify.replay_saved`:
    the traces, profile and link bandwidth the saved plan records, each trace checked against
    its hash, whole traces replayed with the plan's own limits)."""
    from tailbound.verify import replay_saved

    return replay_saved(plan, path)


# ------------------------------------------------------------------------------ reporting
#: The table's and the CSV's columns: (table header, CSV column, meaning in ``--help``).
COLUMNS = (
    ("policy", "policy", "the registered policy"),
    ("model", "server_model", "the server model a placement ran under (- for admission)"),
    ("placed", "placed", "tenants placed or admitted, of all"),
    ("servers", "servers", "servers the plan uses"),
    ("time s", "seconds", "the decision's time (placement: after the shared r-b curves)"),
    ("bounds exceeded", "bounds_exceeded", "tenants whose replayed latency exceeded the bound"),
    ("SLOs missed", "slos_missed", "tenants that missed their SLO in the replay"),
    ("worst", "worst_ratio", "the largest replayed latency / bound (at the bound's percentile)"),
    ("median", "median_ratio", "the median replayed latency / bound"),
    (
        "note",
        "note",
        "why it did not run, what failed, or what it left out and why (cut at 120 "
        "characters; whole in the CSV)",
    ),
)


def _cells(o: Outcome) -> list[object]:
    def num(x: float | None, digits: int) -> str:
        return "-" if x is None or math.isnan(x) else f"{x:.{digits}f}"

    return [
        o.case.policy,
        o.case.model or "-",
        "-" if o.placed is None else f"{o.placed} of {o.tenants}",
        "-" if o.servers is None else o.servers,
        num(o.seconds, 2),
        "-" if o.exceeded is None else o.exceeded,
        "-" if o.slo_missed is None else o.slo_missed,
        num(o.worst, 3),
        num(o.median, 3),
        _short(o.reason.replace("|", "/").replace("\n", " ")),
    ]


def _short(text: str, width: int = 120) -> str:
    """``text`` cut to ``width`` characters for the table (the CSV keeps it whole)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def table(comparison: Comparison) -> str:
    """The outcomes as one Markdown table (:data:`COLUMNS`)."""
    return markdown_table([c[0] for c in COLUMNS], [_cells(o) for o in comparison.outcomes])


def to_csv(comparison: Comparison, path: Path) -> None:
    """One row per outcome (:data:`COLUMNS`' CSV names; seconds; empty where it did not run),
    plus ``tenants``, ``verify_s`` and ``plan``, atomically."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*(c[1] for c in COLUMNS), "tenants", "verify_s", "plan"])
        for o in comparison.outcomes:
            writer.writerow(
                [
                    o.case.policy,
                    o.case.model or "",
                    "" if o.placed is None else o.placed,
                    "" if o.servers is None else o.servers,
                    "" if o.seconds is None else round(o.seconds, 4),
                    "" if o.exceeded is None else o.exceeded,
                    "" if o.slo_missed is None else o.slo_missed,
                    "" if not o.ratios else o.worst,
                    "" if not o.ratios else o.median,
                    o.reason,
                    o.tenants,
                    "" if o.verify_s is None else round(o.verify_s, 4),
                    "" if o.plan_path is None else str(o.plan_path),
                ]
            )


def plot(comparison: Comparison, path: Path) -> None:
    """Two panels over the runs that ran: the servers each plan uses (bars, the tenants it
    placed written on each), and each plan's replayed latency / bound per tenant (a box of
    the distribution, the tenants as points; the line at 1 is the bound)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.plotting import save_figure

    ran = [o for o in comparison.outcomes if o.ran]
    labels = [o.case.label for o in ran]
    x = list(range(len(ran)))
    fig, (bars, spread) = plt.subplots(
        2, 1, figsize=(max(6.0, 0.55 * len(ran) + 2), 7.0), sharex=True
    )
    colours = ["C0" if o.case.model == "sound" else "C1" if o.case.model else "C2" for o in ran]
    bars.bar(x, [o.servers or 0 for o in ran], color=colours)
    for i, o in enumerate(ran):
        bars.annotate(
            f"{o.placed}/{o.tenants}", (i, o.servers or 0), ha="center", va="bottom", fontsize=7
        )
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    bars.yaxis.set_major_locator(MaxNLocator(integer=True))
    bars.legend(
        handles=[
            Patch(color=c, label=k)
            for c, k in (("C0", "sound model"), ("C1", "reference model"), ("C2", "admission"))
            if c in colours
        ],
        fontsize=7,
    )
    bars.set_ylabel("servers used")
    bars.set_title("servers used (placed/tenants above each bar)", fontsize=9)
    boxed = [(i, o.ratios) for i, o in enumerate(ran) if o.ratios]
    if boxed:
        spread.boxplot(
            [list(r) for _, r in boxed],
            positions=[i for i, _ in boxed],
            widths=0.5,
            showfliers=False,
        )
        for i, r in boxed:
            spread.scatter([i] * len(r), r, s=6, alpha=0.5, color=colours[i])
    spread.axhline(1.0, color="k", linewidth=0.8, linestyle="--", label="bound")
    spread.set_ylabel("replayed / bound")
    spread.set_title(
        "each tenant's replayed latency over its bound (above 1: exceeded)", fontsize=9
    )
    spread.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    spread.legend(fontsize=7)
    save_figure(fig, path, bbox_inches="tight", dpi=120)
