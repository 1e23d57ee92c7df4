"""``tailbound admit``: arrival-order admission control, written as a Plan."""

from __future__ import annotations

import argparse
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.options import add_quiet, integer, number, progress
from tailbound.policies.registry import names

#: ``--pslo-*`` options: the controller parameter each sets (``policies.pslo.PARAMETERS``).
PSLO_OPTIONS = {
    "pslo_interval": "interval_completions",
    "pslo_threshold": "threshold",
    "pslo_enable_s": "enable_s",
    "pslo_sigma": "sigma",
    "pslo_max_depth": "max_depth",
}

#: The legend of the table ``admit`` prints (in ``--help``).
COLUMNS = (
    ("decision", "admitted, or rejected because a tenant would miss its SLO"),
    ("predicted ms", "the tenant's latency bound at its arrival (after the floors)"),
    ("alone ms", "its latency replayed alone, the floor of the prediction (- without it)"),
    ("together ms", "with --joint-floor: its latency replayed with the admitted tenants"),
    ("SLO ms", "the latency target"),
    ("pct", "the SLO's percentile"),
    ("would miss", "the tenants whose SLO admitting it would break"),
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "admit",
        help="decide admission of tenants in arrival order (SNC-Meister or a DNC baseline)",
        description=(
            "Tenants arrive in file order; each is admitted only if it and every admitted "
            "tenant still meet their SLOs (thesis §4.2). Rejected tenants run best effort. "
            "dnc, silo and qjump are the worst-case (100th percentile) baselines of thesis "
            "§4.3.1 (PriorityMeister-style DNC, Silo++, QJump++). The plan written by --out "
            "holds the admitted tenants with their priorities, rate limits and bounds, and "
            "every rejected tenant with the reason. --policy aequitas plans RPC tenants over WFQ "
            "classes (the tenants file's rpc_network and each tenant's rpc; docs/aequitas.md)."
        ),
        epilog=epilog(None, COLUMNS)
        + " Rejecting a tenant is the verb's answer, not a failed check: it exits 0.",
    )
    parser.add_argument("--tenants", required=True, help="tenants JSON file (arrival order)")
    parser.add_argument(
        "--policy",
        default="snc-meister",
        choices=names("admission"),
        help="admission policy (default snc-meister)",
    )
    parser.add_argument(
        "--no-alone-floor",
        action="store_true",
        help=(
            "decide on the SNC bound alone and enforce priorities by SLO (the thesis' "
            "SNC-Meister; implies --no-model-error, --no-split-levels and --no-police); by "
            "default a tenant's predicted latency is at least its latency alone, measured by "
            "replaying its trace in the simulator, so a tenant whose own bursts miss its SLO "
            "is rejected"
        ),
    )
    parser.add_argument(
        "--no-model-error",
        action="store_true",
        help=(
            "do not add to a tenant's bound what the analysis under-predicts it alone (its "
            "measured latency alone minus its bound alone; docs/snc.md, model error)"
        ),
    )
    parser.add_argument(
        "--no-split-levels",
        action="store_true",
        help=(
            "enforce one level per SLO class; by default the tenants the analysis "
            "under-predicts alone run one sub-level below their class (docs/snc.md)"
        ),
    )
    parser.add_argument(
        "--no-police",
        action="store_true",
        help=(
            "do not police: by default each tenant's traffic beyond its own trace's load (a "
            "token bucket at the trace's long-run rate, sized to the backlog it builds) is "
            "demoted below every level, so a tenant that sends more than its trace did cannot "
            "break another tenant's SLO (docs/snc.md, conformance policing)"
        ),
    )
    parser.add_argument(
        "--joint-floor",
        action="store_true",
        help=(
            "also replay the admitted tenants and the newcomer together in the simulator at "
            "each arrival, and admit only if every one meets its SLO in that replay too (SNC "
            "policies; one replay per arrival)"
        ),
    )
    pslo = parser.add_argument_group(
        "PSLO (--policy pslo)",
        "the controller the plan's storage stage carries (docs/pslo.md); the core's defaults "
        "where not given",
    )
    pslo.add_argument(
        "--pslo-policy",
        choices=_pslo_policies(),
        help="PSLO's policy (Table 1; default LS+T)",
    )
    pslo.add_argument(
        "--pslo-interval",
        type=integer(low=1),
        metavar="N",
        help="completions per decision interval, all controlled tenants' together (default 1000)",
    )
    pslo.add_argument(
        "--pslo-threshold",
        type=number(low=1.0, low_open=True),
        metavar="H",
        help="the forecast's threshold on a service time over its 20 ms mean, > 1 (default 2)",
    )
    pslo.add_argument(
        "--pslo-enable-s",
        type=number(low=0.0),
        metavar="SECONDS",
        help="τ: how long a forecast keeps the depth controllers enabled (default 0.1 s)",
    )
    pslo.add_argument(
        "--pslo-sigma",
        type=number(low=0.0, low_open=True),
        metavar="SIGMA",
        help="σ: the exploration gain of Eq. 10, > 0 (default 0.1)",
    )
    pslo.add_argument(
        "--pslo-max-depth",
        type=integer(low=1),
        metavar="REQUESTS",
        help="the largest IO depth a tenant is given (default 64)",
    )
    parser.add_argument("--out", help="write the plan (admitted and rejected tenants) as JSON")
    add_quiet(parser)
    parser.set_defaults(run=run)


class Ticking:
    """``policy`` (a bound function) ticking ``bar`` once per arrival decided: when its newcomer
    screen rejects the tenant, else when the bounds of the trial set are computed (with
    ``--joint-floor`` these include the joint replay, so each tick follows one replay)."""

    def __init__(self, policy: Any, bar: Any) -> None:
        self.policy, self.bar = policy, bar
        if hasattr(policy, "newcomer_bound"):
            self.newcomer_bound = self._screen

    def _screen(self, trial: Any) -> Any:
        result = self.policy.newcomer_bound(trial)
        if not result.meets_slo:
            self.bar.update(1)  # rejected here: bounds are not computed for this arrival
        return result

    def __call__(self, tenants: Any) -> Any:
        results = self.policy(tenants)
        self.bar.update(1)
        return results


def run(args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError
    from tailbound.model import load_tenants
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.admission import admission_plan, admit_in_order
    from tailbound.policies.admission_policies import SncRule
    from tailbound.policies.nested_qos import refuse_graduated
    from tailbound.policies.registry import build, entry
    from tailbound.tables import fmt_ms, markdown_table

    tset = load_tenants(args.tenants)
    family = entry(args.policy, "admission").family
    given = [k for k in ("pslo_policy", *PSLO_OPTIONS) if getattr(args, k, None) is not None]
    if given and family != "control":
        option = "--" + given[0].replace("_", "-")
        raise ConfigError(None, f"only with --policy pslo, not {args.policy}", field=option)
    if family == "rpc":
        return run_aequitas(args, tset)
    tset.refuse_rpc(args.policy)
    if family == "control":
        return run_pslo(args, tset)
    if family == "nested":
        return run_nested(args, tset)
    refuse_graduated(tset, args.policy)
    floor = not args.no_alone_floor
    rule = SncRule(
        alone_floor=floor,
        split_levels=floor and not args.no_split_levels,
        add_model_error=floor and not args.no_model_error,
        joint_floor=args.joint_floor,
        police=floor and not args.no_police,
    )
    policy = build(args.policy, "admission", tset, **rule.kwargs())
    snc = entry(args.policy, "admission").family == "snc"  # the rule applies
    with progress(args, total=len(tset.tenants), desc="admission", unit="tenant") as bar:
        decisions = admit_in_order(tset.tenants, Ticking(policy, bar))
    rows = [
        [
            d.tenant.name,
            "admitted" if d.admitted else "rejected",
            fmt_ms(d.bound.latency_s),
            fmt_ms(d.bound.latency_alone_s),
            *([fmt_ms(d.bound.latency_joint_s)] if args.joint_floor else []),
            fmt_ms(d.tenant.slo_s),
            d.tenant.percentile,
            ", ".join(d.violated),
        ]
        for d in decisions
    ]
    header = ["tenant", "decision", "predicted ms", "alone ms", "SLO ms", "pct", "would miss"]
    if args.joint_floor:
        header.insert(4, "together ms")
    print(markdown_table(header, rows))
    admitted = sum(d.admitted for d in decisions)
    print(
        f"\n{args.policy}: admitted {admitted} of {len(decisions)} tenants"
        + (f" (rule: {rule.text()})" if snc else "")
    )
    if args.out:
        plan = admission_plan(
            args.policy,
            policy,
            decisions,
            link_bytes_per_s=tset.link_bytes_per_s,
            meta={
                "verb": "admit",
                "tenants": str(tset.path),
                **({"rule": rule.text()} if snc else {}),
            },
        )
        with_inputs(plan, tset).save(args.out)
    return Exit.OK


def run_nested(args: argparse.Namespace, tset: Any) -> int:
    """``admit --policy nested-qos``: each tenant's classes chosen from its trace's storage
    work (the tenants file's ``ssd_profile``), admitted by Lemma 3 per device, written as a
    Plan scheduling the storage stage ``nested`` (:mod:`tailbound.policies.nested_qos`)."""
    from tailbound.errors import ConfigError
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.nested_qos import NestedQosPolicy
    from tailbound.profiles.tokens import SsdModel, SsdProfile
    from tailbound.tables import fmt_ms, markdown_table
    from tailbound.traces.readers import read_trace

    if tset.ssd_profile is None:
        raise ConfigError(tset.path, f"missing ({args.policy} needs it)", field="ssd_profile")
    tset.require("server_host", args.policy)
    tset.require("device", args.policy)
    model = SsdModel(SsdProfile.load(tset.ssd_profile))
    traces = []
    for t in tset.tenants:
        trace = read_trace(t.trace)
        traces.append((trace.time, model.tokens(trace)))
    policy = NestedQosPolicy(tset)
    decisions = policy.decide(traces)
    rows = [
        [
            d.tenant.name,
            "admitted" if d.admitted else "rejected",
            f"{d.capacity:.3f}",
            "; ".join(
                f"{c.sigma_s * 1e3:.3g} ms, {c.rho:.3g}, {fmt_ms(c.delta_s)} ms" for c in d.classes
            ),
        ]
        for d in decisions
    ]
    print(markdown_table(["tenant", "decision", "device capacity", "classes (σ, ρ, δ)"], rows))
    admitted = sum(d.admitted for d in decisions)
    print(f"\n{args.policy}: admitted {admitted} of {len(decisions)} tenants")
    if args.out:
        plan = policy.plan(decisions, meta={"verb": "admit", "tenants": str(tset.path)})
        with_inputs(plan, tset, profile=tset.ssd_profile).save(args.out)
    return Exit.OK


def _pslo_policies() -> tuple[str, ...]:
    from tailbound import _core

    return tuple(_core.PSLO_POLICIES)


def run_pslo(args: argparse.Namespace, tset: Any) -> int:
    """``admit --policy pslo``: every tenant admitted, the plan's storage stage carrying PSLO's
    controller with each tenant's latency and throughput SLOs (:mod:`tailbound.policies.pslo`)."""
    from tailbound.errors import ConfigError
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.registry import build
    from tailbound.tables import fmt_ms, markdown_table

    params = {
        name: getattr(args, option)
        for option, name in PSLO_OPTIONS.items()
        if getattr(args, option) is not None
    }
    try:
        policy = build(
            args.policy, "admission", tset, pslo_policy=args.pslo_policy or "LS+T", **params
        )
    except ValueError as e:  # a parameter the core refuses, named by its core name
        name, _, message = str(e).partition(": ")
        option = next((o for o, p in PSLO_OPTIONS.items() if p == name), "pslo_policy")
        raise ConfigError(None, message, field="--" + option.replace("_", "-")) from None
    plan = policy.plan(meta={"verb": "admit", "tenants": str(tset.path)})
    c = plan.control[next(iter(plan.control))]
    rows = [
        [
            t.name,
            "admitted",
            f"{t.server}.{t.device}",
            fmt_ms(t.slo.latency_s),
            t.slo.percentile,
            f"{t.slo.throughput_iops:g}",
        ]
        for t in plan.tenants
        if t.slo is not None
    ]
    print(
        markdown_table(["tenant", "decision", "device", "SLO ms", "pct", "throughput IOPS"], rows)
    )
    p = c.params
    print(
        f"\n{args.policy}: admitted {len(rows)} of {len(rows)} tenants; controller {c.policy}, "
        f"N = {p['interval_completions']:g}, H = {p['threshold']:g}, "
        f"τ = {p['enable_s']:g} s, σ = {p['sigma']:g}"
    )
    if args.out:
        with_inputs(plan, tset, profile=tset.ssd_profile).save(args.out)
    return Exit.OK


def run_aequitas(args: argparse.Namespace, tset: Any) -> int:
    """``admit --policy aequitas``: every RPC tenant admitted, the plan carrying the WFQ classes,
    class SLOs, DSCP marks, the controller and the predicted admitted share per class
    (:mod:`tailbound.policies.aequitas`)."""
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.registry import build
    from tailbound.tables import markdown_table

    plan = build(args.policy, "admission", tset).plan(
        meta={"verb": "admit", "tenants": str(tset.path)}
    )
    section = plan.aequitas
    rows = [
        [
            t.name,
            "admitted",
            ", ".join(f"{k} {v:g}" for k, v in section.tenants[t.name].class_mix.items()),
            section.tenants[t.name].pattern,
        ]
        for t in plan.tenants
    ]
    print(markdown_table(["tenant", "decision", "class mix", "pattern"], rows))
    p = section.prediction
    unit = {"mtu": " per MTU", "rpc": " per RPC"}[section.network.slo_unit]
    classes = [
        [
            c.name,
            f"{c.weight:g}",
            c.dscp,
            "-" if c.slo_s is None else f"{c.slo_s * 1e6:.4g} µs{unit} @ {100 * c.percentile:g}%",
            "-" if c.name not in p.offered_share else f"{p.offered_share[c.name]:.3f}",
            "-" if c.name not in p.admitted_share else f"{p.admitted_share[c.name]:.3f}",
        ]
        for c in section.network.classes
    ]
    print()
    print(
        markdown_table(
            ["class", "weight", "DSCP", "SLO", "offered share", "predicted admitted share"],
            classes,
        )
    )
    print(
        f"\n{args.policy}: admitted {len(rows)} of {len(rows)} tenants; the link deciding "
        f"{section.network.classes[0].name}'s share: load μ = {p.load:.3f}, burst "
        f"ρ = {p.burst_load:.3f}"
    )
    if args.out:
        with_inputs(plan, tset).save(args.out)
    return Exit.OK
