"""One admission or departure decided by the library's own policies, as ``tailbound place`` and
``tailbound admit`` decide them (docs/service.md, "No second implementation").

A cluster's policy is a name of :mod:`tailbound.policies.registry`:

- a **placement** policy (``workloadcompactor``, ``effective-bandwidth``, ``knee``,
  ``average-rate:K``, ...): the cluster's state is a
  :class:`~tailbound.policies.placement.Placer`; an arrival is ``Placer.add`` of the tenant's
  r-b curves (:func:`~tailbound.policies.workload.characterize`, as ``place`` makes them), a
  departure ``Placer.remove`` (``place --events``), and the Plan is
  :func:`~tailbound.policies.workloadcompactor.to_plan`;
- an **admission** policy of the ``snc`` or ``dnc`` family (``snc-meister``, ``dnc``, ``silo``,
  ``qjump``, ...): the state is the admitted tenants in arrival order; an arrival is one step of
  ``admit``'s loop (:func:`~tailbound.policies.admission.decide`), a departure drops the tenant,
  and the Plan is :func:`~tailbound.policies.admission.bounds_plan` of the admitted tenants;
- Nested QoS (family ``nested``), PSLO (family ``control``) and Aequitas (family ``rpc``, its
  network the cluster's ``rpc_network`` option): :class:`NestedEngine`, :class:`PsloEngine`,
  :class:`AequitasEngine`; a new family adds its engine to :data:`ADMISSION_ENGINES`.

Either way the Plan records its inputs (:class:`~tailbound.plan_inputs.PlanInputs`: traces with
their hashes, the embedded profile, the link bandwidth), so it stands alone. A tenant given by
its characterisation instead of a trace (placement policies only: the r-b curves and largest
requests are what they analyse; :func:`~tailbound.policies.workload.from_characterisation`)
has that recorded in the Plan in place of a trace.

An engine is a value: :meth:`Engine.admit` and :meth:`Engine.depart` return an
:class:`Outcome` holding the engine *after* the event, and leave the engine they were called on
unchanged, so a decision computed against Plan version ``v`` is dropped, not undone, when ``v``
is no longer current at commit (:mod:`tailbound.service.admission`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tailbound.errors import ConfigError
from tailbound.jsonio import read_json
from tailbound.model import Cluster, Tenant, TenantSet
from tailbound.plan import Plan
from tailbound.plan_inputs import PlanInputs, TraceRef
from tailbound.policies import registry
from tailbound.service import characterised

#: The options a cluster may set, with their defaults (docs/service.md, "Clusters").
OPTIONS: dict[str, Any] = {
    "mtu_bytes": 1500.0,  # placement: packet size on the links, bytes
    "safety_margin": 1.0,  # placement: r-b curves scaled by it (work × margin)
    "low_priority_work_s": None,  # placement: cap on the work in service below the top level
    "fast_first_fit": False,  # placement: skip near-full servers
    "rule": {},  # snc admission: SncRule's fields (tailbound admit's flags); default its rule
    "pslo": {},  # pslo: {"policy": one of _core.PSLO_POLICIES, and pslo.PARAMETERS' numbers}
    "rpc_network": None,  # aequitas: a tenants file's rpc_network (docs/aequitas.md)
    "rpc_hosts": None,  # aequitas: the cluster's host of each network host number (rpc_parts)
    "rpc_port": 7311,  # aequitas: the hosts' RPC servers' TCP port (rpc_parts.DEFAULT_PORT)
}


def rpc_network_of(options: Mapping[str, Any]) -> Any:
    """The :class:`~tailbound.rpc_network.RpcNetwork` of ``options["rpc_network"]`` (None if
    unset); :class:`ConfigError` naming ``options.rpc_network.<field>`` if it is bad."""
    doc = options.get("rpc_network")
    if doc is None:
        return None
    from tailbound.rpc_network import network_from_json

    return network_from_json(doc, None, "options.rpc_network")


@dataclass(frozen=True)
class Outcome:
    """An event decided: admitted (or departed) or not, why, the Plan after it (None when
    nothing changed) and the engine after it."""

    admitted: bool
    reasons: dict[str, Any]
    plan: Plan | None
    after: Engine
    seconds: float


class Engine(Protocol):
    """A cluster's decision state (module docstring)."""

    def admitted(self) -> list[str]:
        """The admitted tenants, in arrival order."""
        ...

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        """Decide ``tenant``'s arrival; ``plan=False`` skips building the Plan (a replay)."""
        ...

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        """``name``'s departure; ``plan=False`` skips building the Plan (a replay)."""
        ...


@dataclass
class Context:
    """What every version of a cluster's engine shares: the cluster, its policy and options,
    its profile (and the file it is kept in), the cache of r-b curves and of trace references by
    tenant, and the characterisations of the tenants given by one instead of a trace (by name)."""

    name: str
    policy: str
    cluster: Cluster
    profile: Any  # SsdProfile or DiskProfile, or None
    profile_path: Path | None
    options: dict[str, Any]
    curves: dict[Tenant, Any] = field(default_factory=dict)
    characterisations: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    refs: dict[Path, TraceRef] = field(default_factory=dict)
    #: ``workloadcompactor.to_plan``'s memo of each server's entries (unchanged servers reuse).
    plan_memo: dict[object, Any] = field(default_factory=dict)
    #: An admission policy's caches of what it computes from traces (``curves``: the DNC
    #: baselines' r-b curves, ``fits``: the SNC policies' MMBP fits), where a characterised
    #: tenant's are put (:func:`tailbound.service.characterised.prime`).
    caches: dict[str, Any] = field(default_factory=dict)
    _profile_document: dict[str, Any] | None = None

    @property
    def rpc_network(self) -> Any:
        """The cluster's ``rpc_network`` option read (:func:`rpc_network_of`); None if unset."""
        return rpc_network_of(self.options)

    def tenant_set(self, tenants: tuple[Tenant, ...]) -> TenantSet:
        return TenantSet(tenants, self.cluster.link_bytes_per_s, self.profile_path)

    def trace_ref(self, tenant: Tenant) -> TraceRef:
        """``tenant``'s trace hashed and its format detected once: the service's traces are
        stored by content hash and never change."""
        if tenant.trace not in self.refs:  # by path: an RPC tenant (its class mix) is unhashable
            self.refs[tenant.trace] = TraceRef.of(tenant.trace)
        return self.refs[tenant.trace]

    def inputs(self, tenants: list[Tenant]) -> PlanInputs:
        """The inputs a Plan of ``tenants`` records (``plan_inputs``): their traces or their
        characterisations, the embedded profile, the link bandwidth."""
        if self._profile_document is None and self.profile_path is not None:
            self._profile_document = dict(read_json(self.profile_path, what="the profile"))
        traces = {
            t.name: self.trace_ref(t) for t in tenants if t.name not in self.characterisations
        }
        given = {t.name: self.characterisations[t.name] for t in tenants if t.name not in traces}
        return PlanInputs(
            traces, self.cluster.link_bytes_per_s, self._profile_document, characterisations=given
        )

    def plan_of(self, plan: Plan, tenants: Mapping[str, Tenant]) -> Plan:
        """``plan`` with its inputs recorded and its ``meta`` naming the cluster."""
        kept = [tenants[t.name] for t in plan.tenants]
        return dataclasses.replace(
            plan, meta={**plan.meta, "cluster": self.name}, inputs=self.inputs(kept)
        )


def check_options(policy: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` over :data:`OPTIONS`' defaults; :class:`ConfigError` naming
    ``options.<key>`` for an unknown key or a value of the wrong type."""
    out = dict(OPTIONS)
    for key, value in options.items():
        if key not in OPTIONS:
            raise ConfigError(
                None, f"unknown option (known: {', '.join(OPTIONS)})", field=f"options.{key}"
            )
        out[key] = value
    where = "options."
    for key in ("mtu_bytes", "safety_margin"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < float("inf"):
            raise ConfigError(None, f"expected a positive number, got {v!r}", field=where + key)
    cap = out["low_priority_work_s"]
    if cap is not None and (
        isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 <= cap < float("inf")
    ):
        raise ConfigError(
            None,
            f"expected a number >= 0 or null, got {cap!r}",
            field=where + "low_priority_work_s",
        )
    pslo = out["pslo"]
    if not isinstance(pslo, dict):
        raise ConfigError(None, "expected an object", field=where + "pslo")
    from tailbound.policies.pslo import PARAMETERS

    for key, value in pslo.items():
        if key == "policy":
            from tailbound import _core

            if value not in _core.PSLO_POLICIES:
                raise ConfigError(
                    None,
                    f"expected one of {', '.join(_core.PSLO_POLICIES)}, got {value!r}",
                    field=f"{where}pslo.policy",
                )
        elif key not in PARAMETERS:
            names = ", ".join(["policy", *PARAMETERS])
            raise ConfigError(None, f"unknown key (known: {names})", field=f"{where}pslo.{key}")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(None, f"expected a number, got {value!r}", field=f"{where}pslo.{key}")
    rpc_network_of(out)  # refused naming its field
    if registry.find(policy).family != "rpc":
        for key in ("rpc_network", "rpc_hosts", "rpc_port"):
            if options.get(key) is not None:
                raise ConfigError(
                    None, f"{policy} plans no RPC classes (aequitas does)", field=where + key
                )
    if not isinstance(out["fast_first_fit"], bool):
        raise ConfigError(None, "expected true or false", field=where + "fast_first_fit")
    rule = out["rule"]
    if not isinstance(rule, dict):
        raise ConfigError(None, "expected an object of SncRule fields", field=where + "rule")
    from tailbound.policies.admission_policies import SncRule

    known = {f.name for f in dataclasses.fields(SncRule)}
    for key, value in rule.items():
        if key not in known:
            raise ConfigError(
                None,
                f"unknown rule field (known: {', '.join(sorted(known))})",
                field=f"{where}rule.{key}",
            )
        if not isinstance(value, bool):
            raise ConfigError(None, "expected true or false", field=f"{where}rule.{key}")
    return out


def kind_of(policy: str) -> str:
    """``placement`` or ``admission`` for a policy the service decides with; ConfigError naming
    ``policy`` otherwise."""
    try:
        found = registry.find(policy)
    except (KeyError, ValueError) as e:
        raise ConfigError(None, str(e).strip("'\""), field="policy") from None
    if found.kind == "admission" and found.family not in FAMILIES:
        raise ConfigError(
            None,
            f"the service decides with placement policies and admission families "
            f"{', '.join(FAMILIES)}; {policy!r} is of family {found.family!r}",
            field="policy",
        )
    if found.kind not in ("placement", "admission"):
        raise ConfigError(
            None, f"{policy!r} is a {found.kind} policy, not placement or admission", field="policy"
        )
    return found.kind


def new_engine(context: Context) -> Engine:
    """The empty engine of ``context``'s cluster (no tenant admitted)."""
    if kind_of(context.policy) == "placement":
        return PlacementEngine.empty(context)
    return ADMISSION_ENGINES[registry.find(context.policy).family](context)


# ------------------------------------------------------------------------------ placement
@dataclass(frozen=True)
class PlacementEngine:
    """A placement policy's state: the :class:`Placer` and the admitted tenants."""

    context: Context
    placer: Any  # tailbound.policies.placement.Placer
    tenants: dict[str, Tenant]

    @classmethod
    def empty(cls, context: Context) -> PlacementEngine:
        from tailbound.policies.placement import Placer
        from tailbound.policies.workloadcompactor import server_model

        if context.profile is None:
            raise ConfigError(None, f"{context.policy} needs a device profile", field="profile")
        o = context.options
        model = server_model(
            context.profile,
            context.cluster.link_bytes_per_s,
            o["mtu_bytes"],
            o["low_priority_work_s"],
        )
        try:
            policy = registry.build(context.policy, "placement", model)
        except ValueError as e:
            raise ConfigError(None, str(e), field="policy") from None
        placer = Placer(context.cluster, policy, fast_first_fit=o["fast_first_fit"])
        return cls(context, placer, {})

    def admitted(self) -> list[str]:
        return list(self.tenants)

    def _curves(self, tenant: Tenant) -> Any:
        from tailbound.policies.workload import characterize
        from tailbound.traces.readers import read_trace

        cache = self.context.curves
        given = self.context.characterisations.get(tenant.name)
        if tenant not in cache and given is not None:
            from tailbound.policies.workload import from_characterisation

            cache[tenant] = from_characterisation(
                tenant, given, safety_margin=self.context.options["safety_margin"]
            )
        if tenant not in cache:
            cache[tenant] = characterize(
                tenant,
                read_trace(tenant.trace),
                profile=self.context.profile,
                link_bandwidth_bytes_per_s=self.context.cluster.link_bytes_per_s,
                safety_margin=self.context.options["safety_margin"],
            )
        return cache[tenant]

    def _copy(self) -> Any:
        # O(servers) cheap steps, sharing what is immutable (Placer.fork)
        return self.placer.fork()

    def _plan(self, placer: Any, tenants: dict[str, Tenant]) -> Plan:
        from tailbound.policies.workloadcompactor import to_plan

        placer.rejected.clear()
        plan = to_plan(
            placer.result(0.0),
            self.context.cluster,
            policy=self.context.policy,
            safety_margin=self.context.options["safety_margin"],
            memo=self.context.plan_memo,
        )
        return self.context.plan_of(plan, tenants)

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        workload = self._curves(tenant)
        placer = self._copy()
        server = placer.add(workload)
        if server is None:
            refused = {"reason": "fits on no server", "policy": self.context.policy}
            return Outcome(False, refused, None, self, time.perf_counter() - start)
        tenants = {**self.tenants, tenant.name: tenant}
        after = PlacementEngine(self.context, placer, tenants)
        if not plan:
            return Outcome(True, {}, None, after, time.perf_counter() - start)
        made = self._plan(placer, tenants)
        mine = made.tenant(tenant.name)
        reasons: dict[str, Any] = {
            "server": mine.server,
            "device": mine.device,
            "bound_s": mine.bound.latency_s if mine.bound else None,
            "policy": self.context.policy,
        }
        return Outcome(True, reasons, made, after, time.perf_counter() - start)

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        placer = self._copy()
        placer.remove(name)
        tenants = {k: v for k, v in self.tenants.items() if k != name}
        made = self._plan(placer, tenants) if plan else None
        after = PlacementEngine(self.context, placer, tenants)
        return Outcome(True, {"departed": name}, made, after, time.perf_counter() - start)


# ------------------------------------------------------------------------------ admission
@dataclass(frozen=True)
class AdmissionEngine:
    """An admission policy's state: the policy (a bound function) and the admitted tenants in
    arrival order."""

    context: Context
    policy: Any  # tailbound.policies.admission.AdmissionPolicy
    tenants: tuple[Tenant, ...]
    #: The bounds of ``tenants`` by name when known: an event then re-analyses only the
    #: tenants it can change, where that is exact (snc_local).
    bounds: Mapping[str, Any] | None = None
    #: The coupling graph of ``tenants`` (snc_local.Graph) when the policy allows the above.
    graph: Any = None

    @classmethod
    def empty(cls, context: Context) -> AdmissionEngine:
        from tailbound.policies.admission_policies import SncRule

        rule = SncRule(**context.options["rule"])
        tset = context.tenant_set(())
        family = registry.find(context.policy).family
        if family == characterised.DNC_FAMILY:
            from tailbound.policies.dnc_baselines import CurveCache

            context.caches["curves"] = CurveCache(tset)
        elif family == "snc":
            from tailbound.snc.tenants import FitCache

            context.caches["fits"] = FitCache()
        try:
            policy = registry.build(
                context.policy, "admission", tset, **rule.kwargs(), **context.caches
            )
        except ValueError as e:
            raise ConfigError(None, str(e), field="policy") from None
        from tailbound.service import snc_local

        graph = snc_local.Graph() if snc_local.analysis(policy) is not None else None
        return cls(context, policy, (), {}, graph)

    def admitted(self) -> list[str]:
        return [t.name for t in self.tenants]

    def restored(
        self, tenants: tuple[Tenant, ...], bounds: Mapping[str, Any] | None = None
    ) -> AdmissionEngine:
        """This (empty) engine with ``tenants`` admitted in that order, as a snapshot restores
        it: their coupling graph rebuilt and, where the policy re-analyses components
        (:mod:`snc_local`), their ``bounds`` (name → bound, as the engine that stored them had
        them: the next event then re-analyses what the live engine would, to the bit), and the
        latencies alone the bounds carry given to the policy's floor. Without
        ``bounds`` (a snapshot of format 1) they are unknown: the next event re-analyses every
        tenant, which equals the component-only re-analysis up to the order of floating-point
        sums. ValueError if ``bounds`` are not exactly the tenants'."""
        graph = self.graph
        if graph is not None:
            for t in tenants:
                graph = graph.add(t)
        if graph is None or bounds is None:
            return dataclasses.replace(self, tenants=tenants, bounds=None, graph=graph)
        if set(bounds) != {t.name for t in tenants} or len(bounds) != len(tenants):
            raise ValueError("the bounds stored are not the admitted tenants'")
        from tailbound.service import snc_local

        snc_local.remember_floors(self.policy, tenants, bounds)  # their latencies alone
        return dataclasses.replace(self, tenants=tenants, bounds=dict(bounds), graph=graph)

    def _decide(self, tenant: Tenant) -> tuple[Any, Any, Mapping[str, Any] | None]:
        """:func:`~tailbound.policies.admission.decide` of ``tenant``, re-analysing only the
        admitted tenants it can change when that is exact (:mod:`snc_local`): the same
        decision and bounds as the full re-analysis; also the graph with ``tenant`` admitted
        and every bound by name (None when unknown)."""
        from tailbound.policies.admission import decide
        from tailbound.service import snc_local

        if self.graph is None or self.bounds is None:
            decision, found = decide(self.tenants, tenant, self.policy)
            graph = None if self.graph is None else self.graph.add(tenant)
            return decision, graph, None if found is None else {b.name: b for b in found}
        return snc_local.arrival(self.policy, self.graph, self.bounds, tenant)

    def _plan(self, tenants: tuple[Tenant, ...], bounds: Mapping[str, Any]) -> Plan:
        from tailbound.policies.admission import bounds_plan

        plan = bounds_plan(
            self.context.policy,
            self.policy,
            tenants,
            [bounds[t.name] for t in tenants],
            link_bytes_per_s=self.context.cluster.link_bytes_per_s,
        )
        return self.context.plan_of(plan, {t.name: t for t in tenants})

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        given = self.context.characterisations.get(tenant.name)
        if given is not None:
            _check_characterisation(self.context, tenant, "admission")
            characterised.prime(self.context.caches, tenant, given)
        start = time.perf_counter()
        decision, graph, bounds = self._decide(tenant)
        reasons: dict[str, Any] = {
            "bound_s": decision.bound.latency_s,
            "slo_s": tenant.slo_s,
            "percentile": tenant.percentile,
            "violated": list(decision.violated),
            "policy": self.context.policy,
        }
        if not decision.admitted:
            reasons["reason"] = (
                "its SLO would be missed"
                if decision.violated == (tenant.name,)
                else "admitted tenants' SLOs would be missed"
            )
            return Outcome(False, reasons, None, self, time.perf_counter() - start)
        tenants = (*self.tenants, tenant)
        assert bounds is not None  # admitted: the bounds with it present are known
        made = self._plan(tenants, bounds) if plan else None
        after = AdmissionEngine(self.context, self.policy, tenants, bounds, graph)
        return Outcome(True, reasons, made, after, time.perf_counter() - start)

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        from tailbound.service import snc_local

        start = time.perf_counter()
        tenants = tuple(t for t in self.tenants if t.name != name)
        made = None
        graph = self.graph
        known: Mapping[str, Any] | None = None  # replaying (plan=False): left to the next arrival
        if graph is not None and self.bounds is not None:
            graph, known = snc_local.departure(self.policy, graph, self.bounds, name)
        else:
            graph = None if graph is None else graph.remove(name)
            if plan:
                known = {b.name: b for b in (self.policy(list(tenants)) if tenants else [])}
        if plan:
            assert known is not None
            made = self._plan(tenants, known)
        after = AdmissionEngine(self.context, self.policy, tenants, known, graph)
        return Outcome(True, {"departed": name}, made, after, time.perf_counter() - start)


# ------------------------------------------------------------------------------ aequitas
@dataclass(frozen=True)
class AequitasEngine:
    """Aequitas' state (registry family ``rpc``, :mod:`tailbound.policies.aequitas`): the
    admitted RPC tenants in arrival order over the cluster's ``rpc_network`` option. Aequitas
    admits per RPC at run time (downgrading to the lowest class), so every RPC tenant is
    admitted and the Plan — classes, controller, each tenant's traffic and the predicted
    admitted share per class — is :meth:`AequitasPolicy.plan
    <tailbound.policies.aequitas.AequitasPolicy.plan>` of the admitted tenants, as ``tailbound
    admit --policy aequitas`` writes it."""

    context: Context
    network: Any  # tailbound.rpc_network.RpcNetwork
    tenants: tuple[Tenant, ...]
    #: The prediction per destination link (``policies.aequitas.LinkPredictor``): an arrival
    #: re-reads the links its RPCs reach only; None after replays (rebuilt when next needed).
    predictor: Any = None

    @classmethod
    def empty(cls, context: Context) -> AequitasEngine:
        network = context.rpc_network
        if network is None:
            raise ConfigError(
                None,
                f"missing ({context.policy} needs the network its RPC tenants share: a "
                "tenants file's rpc_network)",
                field="options.rpc_network",
            )
        from tailbound.service.rpc_parts import check_options

        check_options(context.options, network, context.cluster)
        return cls(context, network, ())

    def admitted(self) -> list[str]:
        return [t.name for t in self.tenants]

    def _plan(self, tenants: tuple[Tenant, ...], predictor: Any) -> Plan:
        from tailbound.policies.aequitas import AequitasPolicy

        tset = TenantSet(
            tenants,
            self.context.cluster.link_bytes_per_s,
            self.context.profile_path,
            rpc_network=self.network,
        )
        plan = AequitasPolicy(tset).plan(prediction=predictor.prediction())
        return self.context.plan_of(plan, {t.name: t for t in tenants})

    def _source(self, name: str) -> tuple[Any, Any]:
        """An admitted tenant's traffic and trace (bytes), read again."""
        from tailbound.sim.aequitas_plan import read_rpc_trace

        t = next(t for t in self.tenants if t.name == name)
        assert t.rpc is not None  # admit refuses a tenant without rpc
        return t.rpc, read_rpc_trace(t.trace, None, t.rpc)

    def _predictor(self) -> Any:
        """The admitted tenants' :class:`~tailbound.policies.aequitas.LinkPredictor`."""
        from tailbound.policies.aequitas import LinkPredictor

        if self.predictor is not None:
            return self.predictor
        out = LinkPredictor(self.network)
        for t in self.tenants:
            out = out.add(t.name, *self._source(t.name))
        return out

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        if tenant.rpc is None:
            raise ConfigError(
                None,
                f"{self.context.policy} plans RPC tenants; {tenant.name} has no rpc",
                field="rpc",
            )
        _no_characterisation(self.context, tenant)
        tenants = (*self.tenants, tenant)
        made, predictor = None, None
        if plan:
            from tailbound.sim.aequitas_plan import read_rpc_trace

            trace = read_rpc_trace(tenant.trace, None, tenant.rpc)
            predictor = self._predictor().add(tenant.name, tenant.rpc, trace)
            made = self._plan(tenants, predictor)
        reasons: dict[str, Any] = {
            "policy": self.context.policy,
            "slo_s": tenant.slo_s,
            "reason": "Aequitas admits per RPC at run time (downgrading to the lowest class)",
        }
        if made is not None and made.aequitas is not None:
            reasons["predicted_admitted_share"] = dict(made.aequitas.prediction.admitted_share)
        after = AequitasEngine(self.context, self.network, tenants, predictor)
        return Outcome(True, reasons, made, after, time.perf_counter() - start)

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        tenants = tuple(t for t in self.tenants if t.name != name)
        made, predictor = None, None
        if plan and tenants:
            predictor = self._predictor().without(name, self._source)
            made = self._plan(tenants, predictor)
        if plan and not tenants:
            from tailbound.policies.aequitas import NAME

            made = self.context.plan_of(Plan(NAME, 0, []), {})
        after = AequitasEngine(self.context, self.network, tenants, predictor)
        return Outcome(True, {"departed": name}, made, after, time.perf_counter() - start)


# ------------------------------------------------------------------------------ nested QoS
@dataclass(frozen=True)
class NestedEngine:
    """Nested QoS (``nested-qos``, family ``nested``): the admitted tenants' decisions in
    arrival order; an arrival is one step of ``NestedQosPolicy.decide``
    (:func:`~tailbound.policies.nested_qos.decide_one`: the tenant's classes from its trace's
    storage work, Lemma 3 against the tenants admitted on its device), the Plan
    ``NestedQosPolicy.plan`` of the admitted decisions."""

    context: Context
    decisions: tuple[Any, ...]  # nested_qos.Decision, admitted, in arrival order

    @classmethod
    def empty(cls, context: Context) -> NestedEngine:
        from tailbound.profiles import SsdProfile

        if not isinstance(context.profile, SsdProfile):
            raise ConfigError(None, f"{context.policy} needs an SSD profile", field="profile")
        return cls(context, ())

    def admitted(self) -> list[str]:
        return [d.tenant.name for d in self.decisions]

    def _work(self, tenant: Tenant) -> Any:
        """The tenant's requests' arrivals and work (s) on the profile's SSD, computed once."""
        from tailbound.profiles.tokens import SsdModel
        from tailbound.traces.readers import read_trace

        cache = self.context.curves
        if tenant not in cache:
            trace = read_trace(tenant.trace)
            cache[tenant] = (trace.time, SsdModel(self.context.profile).tokens(trace))
        return cache[tenant]

    def _plan(self, decisions: tuple[Any, ...]) -> Plan:
        from tailbound.policies.nested_qos import NestedQosPolicy

        tenants = tuple(d.tenant for d in decisions)
        plan = NestedQosPolicy(self.context.tenant_set(tenants)).plan(decisions)
        return self.context.plan_of(plan, {t.name: t for t in tenants})

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        from tailbound.policies.nested_qos import NestedClass, decide_classes, decide_one

        given = self.context.characterisations.get(tenant.name)
        start = time.perf_counter()
        there = [
            d
            for d in self.decisions
            if (d.tenant.server, d.tenant.device) == (tenant.server, tenant.device)
        ]
        if given is not None:  # its classes given instead of its trace
            _check_characterisation(self.context, tenant, "nested")
            classes = tuple(NestedClass(*c) for c in given["nested_classes"])
            d = decide_classes(there, tenant, classes, float(given["largest_work_s"]))
        else:
            time_s, work_s = self._work(tenant)
            d = decide_one(there, tenant, time_s, work_s)
        reasons: dict[str, Any] = {
            "server": tenant.server,
            "device": tenant.device,
            "capacity": d.capacity,
            "classes": [[c.sigma_s, c.rho, c.delta_s] for c in d.classes],
            "policy": self.context.policy,
        }
        if not d.admitted:
            reasons["reason"] = (
                f"its device would need {d.capacity:.3g} times its capacity (Lemma 3)"
            )
            return Outcome(False, reasons, None, self, time.perf_counter() - start)
        decisions = (*self.decisions, d)
        made = self._plan(decisions) if plan else None
        return Outcome(
            True, reasons, made, NestedEngine(self.context, decisions), time.perf_counter() - start
        )

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        decisions = tuple(d for d in self.decisions if d.tenant.name != name)
        made = self._plan(decisions) if plan else None
        after = NestedEngine(self.context, decisions)
        return Outcome(True, {"departed": name}, made, after, time.perf_counter() - start)


# ------------------------------------------------------------------------------ PSLO
@dataclass(frozen=True)
class PsloEngine:
    """PSLO (``pslo``, family ``control``): every tenant PSLO can control is admitted
    (``pslo.check_tenants``: a server, a device, a percentile in (0, 1), a throughput SLO in
    IOPS), the Plan ``PsloPolicy.plan`` of the admitted tenants with the cluster's controller
    (option ``pslo``: ``tailbound admit --pslo-*``)."""

    context: Context
    tenants: tuple[Tenant, ...]

    @classmethod
    def empty(cls, context: Context) -> PsloEngine:
        cls._policy(context, ())  # the controller's parameters checked now
        return cls(context, ())

    @staticmethod
    def _policy(context: Context, tenants: tuple[Tenant, ...]) -> Any:
        options = dict(context.options["pslo"])
        kind = options.pop("policy", "LS+T")
        try:
            return registry.build(
                context.policy,
                "admission",
                context.tenant_set(tenants),
                pslo_policy=kind,
                **options,
            )
        except ValueError as e:  # a parameter the core refuses, named by its core name
            name, _, message = str(e).partition(": ")
            raise ConfigError(None, message, field=f"options.pslo.{name}") from None

    def admitted(self) -> list[str]:
        return [t.name for t in self.tenants]

    def _plan(self, tenants: tuple[Tenant, ...]) -> Plan:
        plan = self._policy(self.context, tenants).plan()
        return self.context.plan_of(plan, {t.name: t for t in tenants})

    def admit(self, tenant: Tenant, *, plan: bool = True) -> Outcome:
        from tailbound.policies.pslo import check_tenants

        _no_characterisation(self.context, tenant)
        start = time.perf_counter()
        check_tenants(self.context.tenant_set((tenant,)))
        tenants = (*self.tenants, tenant)
        made = self._plan(tenants) if plan else None
        reasons: dict[str, Any] = {
            "server": tenant.server,
            "device": tenant.device,
            "slo_s": tenant.slo_s,
            "throughput_iops": tenant.slo.throughput_iops,
            "policy": self.context.policy,
        }
        after = PsloEngine(self.context, tenants)
        return Outcome(True, reasons, made, after, time.perf_counter() - start)

    def depart(self, name: str, *, plan: bool = True) -> Outcome:
        start = time.perf_counter()
        tenants = tuple(t for t in self.tenants if t.name != name)
        made = self._plan(tenants) if plan else None
        after = PsloEngine(self.context, tenants)
        return Outcome(True, {"departed": name}, made, after, time.perf_counter() - start)


def _check_characterisation(context: Context, tenant: Tenant, kind: str) -> None:
    """:class:`ConfigError` naming ``characterisation…`` unless the cluster takes ``tenant``'s
    characterisation (:func:`tailbound.service.characterised.refusal`)."""
    doc = context.characterisations[tenant.name]
    found = characterised.refusal(
        kind, registry.find(context.policy).family, context.policy, context.options, doc
    )
    if found is None and registry.find(context.policy).family == "nested":
        found = characterised.nested_refusal(tenant, doc)
    if found is not None:
        message, where = found
        field_name = f"characterisation.{where}" if where else "characterisation"
        raise ConfigError(None, message, field=field_name)


def _no_characterisation(context: Context, tenant: Tenant) -> None:
    if tenant.name in context.characterisations:
        raise ConfigError(
            None,
            f"{context.policy} analyses a tenant's trace; {tenant.name} has a characterisation "
            "only",
            field="characterisation",
        )


#: The engine of each admission family the service decides with, by its registry family. **The
#: hook for a new family** (Aequitas, issue 26): add its engine — a value with ``empty(context)``,
#: ``admitted``, ``admit`` and ``depart`` as above, deciding with the policy's own functions — here
#: under its family's name; ``kind_of`` and the API then accept its policies.
ADMISSION_ENGINES: dict[str, Callable[[Context], Engine]] = {
    # families, not policy names (the DNC family shares its name with the `dnc` policy)
    **dict.fromkeys(("snc", "dnc"), AdmissionEngine.empty),
    "nested": NestedEngine.empty,
    "control": PsloEngine.empty,  # pslo
    "rpc": AequitasEngine.empty,  # aequitas
}
#: Admission families the service decides with.
FAMILIES = tuple(ADMISSION_ENGINES)
