"""The HTTP API of ``tailbound serve`` (FastAPI; docs/service.md lists every route).

Routes call the library through :mod:`tailbound.service.engines` (the registry's policies,
``Placer.add``/``remove``, ``admission.decide``, ``to_plan``/``bounds_plan``,
``with_inputs``) and the loaders of :mod:`tailbound.model` and
:mod:`tailbound.traces.readers`: no second implementation. Every route but ``/health``,
``/metrics``, ``/openapi.json`` and the documentation pages needs a token
(``Authorization: Bearer tb_...``): none or an unknown one is 401, a token without the scope 403
(:mod:`tailbound.service.tokens`), or the session cookie of a browser signed in on the web
pages (:mod:`tailbound.service.web_session`, :mod:`tailbound.service.pages`).
"""

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from tailbound.errors import ConfigError, TraceFormatError
from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.plan_inputs import check_characterisation
from tailbound.policies import registry
from tailbound.service import characterised, pages, plan_store, rpc_parts, rpc_reports, tokens
from tailbound.service.admission import Decider, find_cluster, find_tenant, tenant_entry
from tailbound.service.db import (
    AgentRow,
    ClusterRow,
    DecisionRow,
    MeasurementRow,
    PlanRow,
    TenantRow,
    TraceRow,
    make_engine,
    now,
    sessions,
)
from tailbound.service.engines import (
    Context,
    check_options,
    kind_of,
    new_engine,
    rpc_network_of,
)
from tailbound.service.host_parts import HostParts
from tailbound.service.metrics import Metrics
from tailbound.service.plans import Addresses, diff
from tailbound.service.problems import Problem, bad_input
from tailbound.service.reports import tenant_report
from tailbound.service.schemas import (
    ClusterIn,
    ClusterOut,
    MeasurementsIn,
    TenantIn,
    TenantOut,
    TenantRef,
    TokenIn,
    TraceOut,
)
from tailbound.service.schemas import Problem as ProblemOut
from tailbound.service.tokens import Principal
from tailbound.service.trace_store import DEFAULT_MAX_BYTES, TraceStore
from tailbound.service.web_session import Signer, cookie_principal, load_secret

log = logging.getLogger("tailbound.service")

#: The longest an agent's poll may wait for its part to change (s): below the server's graceful
#: shutdown time (30 s), so a stop waits for no poll longer than that.
MAX_WAIT_S = 25.0
#: How often a waiting poll looks for a new version (s).
POLL_S = 0.2


@dataclass(frozen=True)
class Settings:
    """What a server needs: the database URL, the folder for traces and profiles, and the
    largest trace upload (bytes)."""

    db: str
    data: Path
    max_upload_bytes: int = DEFAULT_MAX_BYTES


class State:
    """A server's shared objects: sessions, the trace store, the decider, the metrics."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = make_engine(settings.db)
        self.sessions: sessionmaker[Session] = sessions(self.engine)
        self.metrics = Metrics()
        self.traces = TraceStore(settings.data / "traces", settings.max_upload_bytes)
        self.decider = Decider(
            self.sessions, self.traces.root, settings.data / "profiles", self.metrics
        )
        #: Hosts' parts cut from the stored entries (host_parts).
        self.parts = HostParts()
        with self.sessions() as s:
            for row in s.scalars(select(ClusterRow)):
                self.metrics.plan_version.labels(row.name).set(row.version)


_bearer = HTTPBearer(auto_error=False, description="an API token: tailbound token create")
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ProblemOut} for code in (401, 403, 404, 409, 413, 422)
}


def create_app(settings: Settings) -> FastAPI:
    """The application over the database and data folder of ``settings`` (the database must be
    migrated: :func:`tailbound.service.migrate.upgrade`)."""
    app = FastAPI(
        title="tailbound control plane",
        version="1",
        description="Admission, Plans and measurements over the tailbound library "
        "(docs/service.md).",
        responses=ERRORS,
    )
    state = State(settings)
    app.state.tb = state
    install_handlers(app)

    signer = Signer(load_secret(settings.data))

    def principal(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        if credentials is None:  # a browser signed in on /ui/login (web_session)
            by_cookie = cookie_principal(signer, state.sessions, request)
            if by_cookie is not None:
                return by_cookie
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise Problem(401, "a token is required (Authorization: Bearer TOKEN)", "Authorization")
        with state.sessions() as s:
            who = tokens.authenticate(s, credentials.credentials)
        if who is None:
            raise Problem(401, "unknown or revoked token", "Authorization")
        return who

    def scope(name: str) -> Callable[..., Principal]:
        def check(who: Annotated[Principal, Depends(principal)]) -> Principal:
            if not who.may(name):
                raise Problem(
                    403, f"the token's scope {who.scope!r} does not allow this ({name} needed)"
                )
            return who

        return check

    Reader = Annotated[Principal, Depends(scope("read"))]
    Operator = Annotated[Principal, Depends(scope("operator"))]
    Anyone = Annotated[Principal, Depends(principal)]

    # ------------------------------------------------------------------ open routes
    @app.get("/health", tags=["operations"])
    def health() -> dict[str, Any]:
        """Whether the server runs and reaches its database."""
        with state.sessions() as s:
            s.execute(select(1))
        return {"status": "ok"}

    @app.get("/metrics", tags=["operations"], response_class=Response)
    def metrics() -> Response:
        """Prometheus metrics (tailbound.service.metrics)."""
        return Response(state.metrics.exposition(), media_type="text/plain; version=0.0.4")

    # ------------------------------------------------------------------ traces
    @app.post("/traces", status_code=201, tags=["traces"])
    async def upload_trace(request: Request, who: Operator) -> TraceOut:
        """Upload a trace file as the request body (any format the trace readers detect);
        returns its SHA-256, by which tenants name it."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > state.traces.max_bytes:
            state.metrics.uploads.labels("refused").inc()
            raise Problem(413, f"the trace is larger than {state.traces.max_bytes} bytes", "body")
        try:
            path, digest, size = await state.traces.receive(request.stream())
            stored = await run_in_threadpool(state.traces.keep, path, digest, size)
        except Problem:
            state.metrics.uploads.labels("refused").inc()
            raise
        try:
            with state.sessions.begin() as s:
                if s.get(TraceRow, stored.sha256) is None:
                    s.add(
                        TraceRow(
                            sha256=stored.sha256,
                            size=stored.size,
                            format=stored.format,
                            requests=stored.requests,
                        )
                    )
        except IntegrityError:
            pass  # the same trace, uploaded at the same moment by another request
        state.metrics.uploads.labels("stored").inc()
        log.info("trace stored", extra={"sha256": stored.sha256, "bytes": size, "by": who.name})
        return TraceOut(
            sha256=stored.sha256, size=stored.size, format=stored.format, requests=stored.requests
        )

    @app.get("/traces/{sha256}", tags=["traces"])
    def get_trace(sha256: str, who: Reader) -> TraceOut:
        """A stored trace's size, format and request count."""
        with state.sessions() as s:
            row = s.get(TraceRow, sha256)
        if row is None:
            raise Problem(404, f"no trace {sha256!r}", "sha256")
        return TraceOut(sha256=row.sha256, size=row.size, format=row.format, requests=row.requests)

    # ------------------------------------------------------------------ clusters
    def cluster_out(row: ClusterRow) -> ClusterOut:
        cluster = cluster_from_json(row.document, f"cluster {row.name}")
        hosts = [s.name for s in cluster.servers] + [c.name for c in cluster.client_hosts]
        return ClusterOut(
            name=row.name,
            policy=row.policy,
            version=row.version,
            options=row.options,
            hosts=hosts,
            addresses=row.addresses or {},
        )

    @app.post("/clusters", status_code=201, tags=["clusters"])
    def create_cluster(body: ClusterIn, who: Operator) -> ClusterOut:
        """Register a cluster with its policy; its first Plan is published by its first
        admission (version 1)."""
        try:
            kind_of(body.policy)
            cluster = cluster_from_json(body.cluster, "cluster")
        except ConfigError as e:
            raise bad_input(e, "cluster" if e.path == "cluster" else "body") from None
        profile = None
        if body.profile is not None:
            from tailbound.profiles.tokens import PROFILE_TYPES

            kind = body.profile.get("type")
            if kind not in PROFILE_TYPES:
                raise Problem(
                    422,
                    f"unknown profile type {kind!r} (known: {', '.join(PROFILE_TYPES)})",
                    "profile.type",
                )
            try:
                profile = PROFILE_TYPES[kind].from_json(body.profile, path="profile")
            except ConfigError as e:
                raise bad_input(e, "profile") from None
            except (TypeError, ValueError, KeyError) as e:
                raise Problem(422, f"not a {kind} profile: {e}", "profile") from None
        try:
            options = check_options(body.policy, body.options)
            new_engine(Context(body.name, body.policy, cluster, profile, None, options))
        except ConfigError as e:
            raise bad_input(e, "body") from None
        addresses = check_addresses(cluster, body.addresses)
        try:
            with state.sessions.begin() as s:
                row = ClusterRow(
                    name=body.name,
                    policy=body.policy,
                    document=body.cluster,
                    profile=body.profile,
                    options=body.options,
                    addresses=addresses,
                    version=0,
                )
                s.add(row)
        except IntegrityError:
            raise Problem(409, f"a cluster named {body.name!r} exists", "name") from None
        state.metrics.plan_version.labels(body.name).set(0)
        log.info(
            "cluster registered",
            extra={"cluster": body.name, "policy": body.policy, "by": who.name},
        )
        return cluster_out(row)

    @app.get("/clusters", tags=["clusters"])
    def list_clusters(who: Reader) -> list[ClusterOut]:
        """Every cluster."""
        with state.sessions() as s:
            return [cluster_out(r) for r in s.scalars(select(ClusterRow).order_by(ClusterRow.id))]

    @app.get("/clusters/{cluster}", tags=["clusters"])
    def get_cluster(cluster: str, who: Reader) -> ClusterOut:
        """One cluster and its current Plan version."""
        with state.sessions() as s:
            return cluster_out(find_cluster(s, cluster))

    # ------------------------------------------------------------------ tenants
    @app.post("/clusters/{cluster}/tenants", status_code=201, tags=["tenants"])
    def register_tenant(cluster: str, body: TenantIn, who: Operator) -> TenantOut:
        """Register a tenant (SLO, uploaded trace or characterisation, hosts) on a cluster;
        admission is a separate request."""
        doc = body.model_dump(by_alias=True, exclude_none=True)
        if "slo_grades" in doc:  # the tenants file's form: [latency_s, fraction] lists
            doc["slo_grades"] = [list(g) for g in doc["slo_grades"]]
        if (body.trace is None) == (body.characterisation is None):
            raise Problem(
                422,
                "give trace (an uploaded trace's SHA-256) or characterisation, one of them",
                "body.trace",
            )
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            if body.trace is not None and s.get(TraceRow, body.trace) is None:
                raise Problem(
                    422, f"no trace {body.trace!r} was uploaded (POST /traces)", "body.trace"
                )
        entry = tenant_entry(doc)
        if body.characterisation is not None:
            try:
                doc["characterisation"] = check_characterisation(
                    body.characterisation, "characterisation"
                )
            except ConfigError as e:
                raise bad_input(e, "body") from None
            refused = characterised.refusal(
                kind_of(row.policy),
                registry.find(row.policy).family,
                row.policy,
                row.options,
                doc["characterisation"],
            )
            if refused is not None:
                where = f".{refused[1]}" if refused[1] else ""
                raise Problem(422, refused[0], f"body.characterisation{where}")
            entry = {k: v for k, v in entry.items() if k != "characterisation"}
            entry["trace"] = "characterisation"  # checked below as a name only, never read
        try:
            network = rpc_network_of(row.options)
            tenant = tenant_from_json(
                entry, source="body", traces=state.traces.root, network=network
            )
        except ConfigError as e:
            raise bad_input(e, "body") from None
        check_hosts(row, doc)
        if body.port is not None:
            with state.sessions() as s:
                check_port(s, row, body.name, body.port)
        family = registry.find(row.policy).family
        if family == "nested" and "characterisation" in doc:
            found = characterised.nested_refusal(tenant, doc["characterisation"])
            if found is not None:
                raise Problem(422, found[0], f"body.characterisation.{found[1]}")
        if (family == "rpc") != (tenant.rpc is not None):
            raise Problem(
                422,
                f"{row.policy} plans RPC tenants: give rpc"
                if family == "rpc"
                else f"{row.policy} plans no RPC tenant (the aequitas policy does)",
                "body.rpc",
            )
        if family == "snc" and tenant.percentile >= 1:
            raise Problem(422, "SNC bounds need a percentile in (0, 1)", "body.percentile")
        if family == "control":  # what PSLO's controller needs of each tenant
            from tailbound.model import TenantSet
            from tailbound.policies.pslo import check_tenants

            try:
                check_tenants(TenantSet((tenant,)))
            except ConfigError as e:
                field = (e.field or "").removeprefix("tenants[0].")
                raise Problem(422, e.message, f"body.{field}" if field else "body") from None
        try:
            with state.sessions.begin() as s:
                s.add(
                    TenantRow(
                        cluster_id=row.id,
                        name=body.name,
                        document=doc,
                        trace_sha256=body.trace,
                        state="registered",
                    )
                )
        except IntegrityError:
            raise Problem(
                409, f"a tenant named {body.name!r} is registered on {cluster!r}", "body.name"
            ) from None
        return TenantOut(name=body.name, state="registered", document=doc)

    @app.get("/clusters/{cluster}/tenants", tags=["tenants"])
    def list_tenants(cluster: str, who: Reader) -> list[TenantOut]:
        """The cluster's tenants and their state (registered, admitted, rejected, departed)."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            rows = s.scalars(
                select(TenantRow).where(TenantRow.cluster_id == row.id).order_by(TenantRow.id)
            )
            return [TenantOut(name=t.name, state=t.state, document=t.document) for t in rows]

    @app.get("/clusters/{cluster}/tenants/{tenant}", tags=["tenants"])
    def get_tenant(cluster: str, tenant: str, who: Reader) -> TenantOut:
        """One tenant."""
        with state.sessions() as s:
            t = find_tenant(s, find_cluster(s, cluster), tenant)
            return TenantOut(name=t.name, state=t.state, document=t.document)

    # ------------------------------------------------------------------ decisions
    @app.post("/clusters/{cluster}/admissions", tags=["decisions"])
    def admit(cluster: str, body: TenantRef, who: Operator) -> dict[str, Any]:
        """Decide a registered tenant's admission under the cluster's policy: the decision, its
        reasons, and when admitted the Plan version it published."""
        result = state.decider.admit(cluster, body.tenant)
        log.info("admission", extra={**result.to_json(), "by": who.name})
        return result.to_json()

    @app.post("/clusters/{cluster}/departures", tags=["decisions"])
    def depart(cluster: str, body: TenantRef, who: Operator) -> dict[str, Any]:
        """An admitted tenant leaves: a new Plan version without it."""
        result = state.decider.depart(cluster, body.tenant)
        log.info("departure", extra={**result.to_json(), "by": who.name})
        return result.to_json()

    @app.get("/clusters/{cluster}/decisions", tags=["decisions"])
    def decisions(cluster: str, who: Reader) -> list[dict[str, Any]]:
        """Every decision on the cluster, oldest first."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            rows = s.scalars(
                select(DecisionRow).where(DecisionRow.cluster_id == row.id).order_by(DecisionRow.id)
            )
            return [
                {
                    "tenant": d.tenant,
                    "event": d.event,
                    "admitted": d.admitted,
                    "reasons": d.reasons,
                    "based_on": d.based_on,
                    "published": d.published,
                    "seconds": d.seconds,
                    "at": d.created_at.isoformat(),
                }
                for d in rows
            ]

    # ------------------------------------------------------------------ plans
    def plan_row(s: Session, row: ClusterRow, version: int) -> PlanRow:
        found = s.scalar(
            select(PlanRow).where(PlanRow.cluster_id == row.id, PlanRow.version == version)
        )
        if found is None:
            raise Problem(404, f"cluster {row.name!r} has no Plan version {version}", "version")
        return found

    @app.get("/clusters/{cluster}/plans", tags=["plans"])
    def list_plans(cluster: str, who: Reader) -> list[dict[str, Any]]:
        """Every published Plan version: the event that made it and its SHA-256."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            rows = s.execute(
                select(
                    PlanRow.version,
                    PlanRow.event,
                    PlanRow.tenant,
                    PlanRow.sha256,
                    PlanRow.created_at,
                )
                .where(PlanRow.cluster_id == row.id)
                .order_by(PlanRow.version)
            ).all()
        return [
            {"version": v, "event": e, "tenant": t, "sha256": h, "at": at.isoformat()}
            for v, e, t, h, at in rows
        ]

    def plan_text_of(s: Session, row: ClusterRow, version: int) -> str:
        """The text of the cluster's Plan version ``version`` (404 if none)."""
        p = plan_row(s, row, version)
        return plan_store.load_text(s, row.id, p.version, p.skeleton)

    def plan_response(s: Session, p: PlanRow) -> Response:
        return Response(
            plan_store.load_text(s, p.cluster_id, p.version, p.skeleton),
            media_type="application/json",
            headers={"ETag": f'"{p.sha256}"', "X-Plan-Version": str(p.version)},
        )

    @app.get("/clusters/{cluster}/plans/current", tags=["plans"], response_class=Response)
    def current_plan(cluster: str, who: Reader) -> Response:
        """The current Plan (the Plan JSON document), its version in ``X-Plan-Version``."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            if row.version == 0:
                raise Problem(
                    404, f"cluster {cluster!r} has no Plan yet (nothing admitted)", "version"
                )
            return plan_response(s, plan_row(s, row, row.version))

    @app.get("/clusters/{cluster}/plans/{version}", tags=["plans"], response_class=Response)
    def get_plan(cluster: str, version: int, who: Reader) -> Response:
        """Plan version ``version`` (immutable)."""
        with state.sessions() as s:
            return plan_response(s, plan_row(s, find_cluster(s, cluster), version))

    @app.get("/clusters/{cluster}/plans/{version}/diff", tags=["plans"])
    def plan_diff(
        cluster: str, version: int, who: Reader, against: Annotated[int | None, Query(ge=1)] = None
    ) -> dict[str, Any]:
        """What changed from version ``against`` (default the previous one) to ``version``."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            new = plan_text_of(s, row, version)
            base = version - 1 if against is None else against
            old = json.loads(plan_text_of(s, row, base)) if base >= 1 else {"tenants": []}
        return {"from": base, "to": version, **diff(old, json.loads(new))}

    @app.get("/clusters/{cluster}/hosts/{host}/plan", tags=["plans"], response_class=Response)
    async def host_plan(
        cluster: str,
        host: str,
        request: Request,
        who: Anyone,
        wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0,
    ) -> Response:
        """The part of the current Plan for ``host`` (a Plan JSON document of the tenants whose
        queues are on it), with an ETag; ``If-None-Match`` with the ETag held gives 304, after
        waiting up to ``wait`` seconds for it to change (long poll: a waiting request holds no
        thread). An agent token reads its own host's part only."""
        if who.scope == "agent":
            if who.host != host:
                raise Problem(
                    403, f"this agent token serves host {who.host!r}, not {host!r}", "host"
                )
        elif not who.may("read"):
            raise Problem(403, "the token's scope does not allow this", None)

        def version_now() -> int:
            with state.sessions() as s:
                return find_cluster(s, cluster).version

        def part(version: int) -> tuple[str, str]:
            with state.sessions() as s:
                row = find_cluster(s, cluster)
                if registry.find(row.policy).family == "rpc":  # Aequitas: by host number
                    document = plan_text_of(s, row, version)
                    return rpc_parts.part_text(
                        json.loads(document), host, row.options, row.addresses
                    )
                plan_row(s, row, version)  # 404 if none
                return state.parts.part(s, row.id, version, host, addresses_of(s, row))

        held = request.headers.get("if-none-match")
        deadline = time.monotonic() + wait
        version = await run_in_threadpool(version_now)
        if version == 0:
            raise Problem(404, f"cluster {cluster!r} has no Plan yet", "version")
        text, etag = await run_in_threadpool(part, version)
        while held == etag and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
            latest = await run_in_threadpool(version_now)
            if latest != version:
                version = latest
                text, etag = await run_in_threadpool(part, version)
        if who.scope == "agent":
            await run_in_threadpool(contact, cluster, host, version)
        headers = {"ETag": etag, "X-Plan-Version": str(version)}
        if held == etag:
            return Response(status_code=304, headers=headers)
        return Response(text, media_type="application/json", headers=headers)

    def contact(cluster: str, host: str, version: int | None) -> None:
        state.metrics.agent_contact.labels(host).set(time.time())
        try:
            with state.sessions.begin() as s:
                agent = s.get(AgentRow, host)
                if agent is None:
                    s.add(AgentRow(host=host, cluster=cluster, last_contact=now(), version=version))
                else:
                    agent.cluster, agent.last_contact = cluster, now()
                    if version is not None:
                        agent.version = version
        except IntegrityError:
            pass  # the same agent's other request recorded it at the same moment

    # ------------------------------------------------------------------ measurements
    @app.post("/clusters/{cluster}/measurements", status_code=201, tags=["measurements"])
    def post_measurements(cluster: str, body: MeasurementsIn, who: Anyone) -> dict[str, Any]:
        """An agent's per-tenant latency summaries over a window."""
        if who.scope == "agent":
            if who.host != body.host:
                raise Problem(
                    403,
                    f"this agent token serves host {who.host!r}, not {body.host!r}",
                    "body.host",
                )
        elif who.scope != "operator":
            raise Problem(403, "posting measurements needs an agent or operator token")
        for i, t in enumerate(body.tenants):
            rpc_reports.check_summary(t, i)
            for key in t.percentiles:
                try:
                    fraction = float(key)
                except ValueError:
                    fraction = float("nan")
                if not 0 < fraction <= 1:
                    raise Problem(
                        422,
                        f"a percentile key must be a fraction in (0, 1], got {key!r}",
                        f"body.tenants[{i}].percentiles",
                    )
        with state.sessions.begin() as s:
            row = find_cluster(s, cluster)
            known = set(s.scalars(select(TenantRow.name).where(TenantRow.cluster_id == row.id)))
            for i, t in enumerate(body.tenants):
                if t.tenant not in known:
                    raise Problem(
                        422,
                        f"no tenant {t.tenant!r} on cluster {cluster!r}",
                        f"body.tenants[{i}].tenant",
                    )
            for t in body.tenants:
                s.add(
                    MeasurementRow(
                        cluster_id=row.id,
                        tenant=rpc_reports.row_name(t.tenant, t.rpc_class),
                        host=body.host,
                        plan_version=body.plan_version,
                        window_s=body.window_s,
                        count=t.count,
                        percentiles=t.percentiles,
                        max_s=t.max_s,
                        beyond_buckets=rpc_reports.beyond(t),
                    )
                )
        if who.scope == "agent":
            contact(cluster, body.host, None)
        return {"stored": len(body.tenants)}

    @app.get("/clusters/{cluster}/report", tags=["measurements"])
    def report(cluster: str, who: Reader) -> dict[str, Any]:
        """Per tenant of the current Plan: predicted bound against the latest measured tail,
        with flags (tailbound.service.reports)."""
        with state.sessions() as s:
            row = find_cluster(s, cluster)
            if row.version == 0:
                return {"version": 0, "tenants": []}
            plan = json.loads(plan_text_of(s, row, row.version))
            latest_ids = (
                select(func.max(MeasurementRow.id))
                .where(MeasurementRow.cluster_id == row.id)
                .group_by(MeasurementRow.tenant)
            )
            latest = {
                m.tenant: m
                for m in s.scalars(select(MeasurementRow).where(MeasurementRow.id.in_(latest_ids)))
            }
            by_class = rpc_reports.latest_by_host(s, row.id) if plan.get("aequitas") else {}
            agents = [
                {"host": a.host, "last_contact": a.last_contact.isoformat(), "version": a.version}
                for a in s.scalars(select(AgentRow).where(AgentRow.cluster == cluster))
            ]
        rows = [tenant_report(t, latest.get(t["name"])) for t in plan["tenants"]]
        if plan.get("aequitas") is not None:  # per class: share and tail (rpc_reports)
            rows = rpc_reports.with_classes(plan, rows, by_class)
        return {"version": row.version, "tenants": rows, "agents": agents}

    # ------------------------------------------------------------------ tokens
    @app.post("/tokens", status_code=201, tags=["tokens"])
    def create_token(body: TokenIn, who: Operator) -> dict[str, str]:
        """Create a token (shown once)."""
        try:
            with state.sessions.begin() as s:
                token = tokens.create(s, body.name, body.scope, body.host)
        except ConfigError as e:
            raise bad_input(e, "body") from None
        except IntegrityError:
            raise Problem(409, f"a token named {body.name!r} exists", "body.name") from None
        return {"name": body.name, "scope": body.scope, "token": token}

    @app.get("/tokens", tags=["tokens"])
    def list_tokens(who: Operator) -> list[dict[str, Any]]:
        """Every token's name, scope and dates (never the secret)."""
        with state.sessions() as s:
            return tokens.listing(s)

    @app.delete("/tokens/{name}", tags=["tokens"])
    def revoke_token(name: str, who: Operator) -> dict[str, Any]:
        """Revoke a token."""
        with state.sessions.begin() as s:
            if not tokens.revoke(s, name):
                raise Problem(404, f"no active token {name!r}", "name")
        return {"name": name, "revoked": True}

    app.include_router(pages.router(state, signer))  # the web pages, outside the schema
    return app


def check_addresses(cluster: Any, addresses: dict[str, str]) -> dict[str, str]:
    """``addresses`` (host → IPv4 or IPv6) normalised; 422 naming ``body.addresses.<host>`` for
    a host the cluster lacks or a value that is no address."""
    import ipaddress

    hosts = {s.name for s in cluster.servers} | {c.name for c in cluster.client_hosts}
    out = {}
    for host, address in addresses.items():
        where = f"body.addresses.{host}"
        if host not in hosts:
            raise Problem(422, f"the cluster has no host {host!r}", where)
        try:
            out[host] = str(ipaddress.ip_address(address))
        except ValueError:
            message = f"expected an IPv4 or IPv6 address, got {address!r}"
            raise Problem(422, message, where) from None
    return out


def check_port(s: Session, row: ClusterRow, name: str, port: int) -> None:
    """409 naming ``body.port`` when another tenant of the cluster, not departed or rejected,
    has ``port`` (``enforce net`` could not tell the two apart)."""
    others = s.execute(
        select(TenantRow.name, TenantRow.document).where(
            TenantRow.cluster_id == row.id, TenantRow.state.in_(("registered", "admitted"))
        )
    )
    for other, document in others:
        if other != name and document.get("port") == port:
            raise Problem(409, f"port {port} is tenant {other!r}'s", "body.port")


def addresses_of(s: Session, row: ClusterRow) -> Addresses:
    """The cluster's hosts' addresses and its tenants' ports (``plans.Addresses``)."""
    ports = {
        name: int(document["port"])
        for name, document in s.execute(
            select(TenantRow.name, TenantRow.document).where(TenantRow.cluster_id == row.id)
        )
        if document.get("port") is not None
    }
    return Addresses(dict(row.addresses or {}), ports)


#: The hosts a tenant of the network analyses' families (``snc``, ``dnc``) needs.
NETWORK_HOSTS = ("client_host", "server_host")


def check_hosts(row: ClusterRow, doc: dict[str, Any]) -> None:
    """422 naming the field when a tenant names a host, VM or device the cluster lacks, or lacks
    the hosts its cluster's admission policy needs."""
    cluster = cluster_from_json(row.document, f"cluster {row.name}")
    servers = {s.name: s for s in cluster.servers}
    clients = {c.name: c for c in cluster.client_hosts}
    server, device = doc.get("server_host"), doc.get("device")
    if server is not None and server not in servers:
        raise Problem(
            422, f"cluster {row.name!r} has no server host {server!r}", "body.server_host"
        )
    if device is not None:
        if server is None:
            raise Problem(422, "a device needs its server_host", "body.device")
        if device not in servers[server].devices:
            raise Problem(422, f"server {server!r} has no device {device!r}", "body.device")
    client = doc.get("client_host")
    if client is not None and client not in clients:
        raise Problem(
            422, f"cluster {row.name!r} has no client host {client!r}", "body.client_host"
        )
    vm = doc.get("client_vm")
    if vm is not None and (client is None or vm not in clients[client].vms):
        raise Problem(422, f"client host {client!r} has no VM {vm!r}", "body.client_vm")
    if kind_of(row.policy) == "admission":
        family = registry.find(row.policy).family
        # the SNC and DNC analyses follow the network path; Nested QoS and PSLO the device
        needs = ("server_host", "device") if family in ("nested", "control") else NETWORK_HOSTS
        for key in needs:
            if doc.get(key) is None:
                raise Problem(422, f"missing ({row.policy} needs it)", f"body.{key}")


def install_handlers(app: FastAPI) -> None:
    """Every error as ``{"detail", "field"}``: a :class:`Problem` with its status, a request
    that does not parse or validate as 422 naming the first field at fault."""

    @app.exception_handler(Problem)
    async def problem(_: Request, e: Problem) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return JSONResponse(e.body(), status_code=e.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        errors = e.errors()
        first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse(
            {
                "detail": str(first.get("msg")),
                "field": where,
                "errors": json.loads(json.dumps(errors, default=str)),
            },
            status_code=422,
        )

    @app.exception_handler(TraceFormatError)
    async def trace_error(_: Request, e: TraceFormatError) -> JSONResponse:
        p = bad_input(e, "trace")
        return JSONResponse(p.body(), status_code=p.status)
