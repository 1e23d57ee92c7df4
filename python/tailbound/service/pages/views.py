"""The routes of the web pages (``/ui/…``), outside the OpenAPI schema.

Every page is rendered on the server (Jinja2 templates beside this module) and reads without
JavaScript; charts are inline SVG (:mod:`tailbound.service.pages.charts`). A page asked without
a session is a redirect to the sign-in form (303); the API never redirects (401). Forms that
change state carry the session's CSRF secret (:mod:`tailbound.service.web_session`) and are
refused (403) without it. Admissions and departures go through the server's one
:class:`~tailbound.service.admission.Decider`, as the API's do.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from sqlalchemy import select

from tailbound.errors import ConfigError
from tailbound.service import plan_store
from tailbound.service.admission import find_cluster, find_tenant
from tailbound.service.db import ClusterRow, TenantRow
from tailbound.service.pages import charts
from tailbound.service.pages.data import (
    CurveCache,
    history,
    overview,
    replay,
    seconds,
    slo_text,
    tenant_page,
)
from tailbound.service.pages.policy_compare import MAX_TENANTS, CompareRun, run_compare
from tailbound.service.pages.policy_compare import compare_charts as policy_charts
from tailbound.service.problems import Problem
from tailbound.service.tokens import Principal
from tailbound.service.web_session import (
    COOKIE,
    LOGIN_COOKIE,
    SESSION_S,
    SessionData,
    Signer,
    csrf_matches,
    principal_of,
    token_row,
)

if TYPE_CHECKING:
    from tailbound.service.app import State

log = logging.getLogger("tailbound.service")

#: The largest form body read (bytes): the forms carry a token, a name and a CSRF secret.
MAX_FORM_BYTES = 16 * 1024
TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


def templates() -> Environment:
    """The pages' Jinja2 environment (HTML autoescaped; an undefined name is an error)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["s"] = seconds
    env.filters["slo"] = slo_text
    env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M:%S UTC") if d else "–"
    env.filters["pct"] = lambda f: "–" if f is None else f"{100 * float(f):.4g}%"
    return env


class Pages:
    """The pages of one server: its state, its cookie signer and its templates."""

    def __init__(self, state: State, signer: Signer) -> None:
        self.state, self.signer = state, signer
        self.env = templates()
        self.curves = CurveCache()

    # ---------------------------------------------------------------- plumbing
    def session(self, request: Request) -> tuple[Principal, SessionData] | None:
        data = self.signer.read(request.cookies.get(COOKIE))
        if data is None:
            return None
        with self.state.sessions() as s:
            who = principal_of(s, data)
        return None if who is None else (who, data)

    def html(
        self,
        request: Request,
        template: str,
        status: int = 200,
        signed: tuple[Principal, SessionData] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        text = self.env.get_template(template).render(
            who=None if signed is None else signed[0],
            csrf=None if signed is None else signed[1].csrf,
            path=request.url.path,
            **context,
        )
        return HTMLResponse(
            text,
            status_code=status,
            headers={
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'none'; style-src 'self'; "
                "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
                "base-uri 'none'",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "same-origin",
            },
        )

    def error(
        self, request: Request, status: int, message: str, signed: Any = None
    ) -> HTMLResponse:
        return self.html(request, "error.html", status, signed, code=status, message=message)

    def to_login(self, request: Request) -> RedirectResponse:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/ui/login?next={quote(target)}", status_code=303)

    def view(
        self, request: Request, build: Callable[[Principal], tuple[str, dict[str, Any]]]
    ) -> Response:
        """A read-only page: the session (else the sign-in form), then ``build(who)`` as
        ``(template, context)``; a :class:`Problem` is an error page with its status."""
        signed = self.session(request)
        if signed is None:
            return self.to_login(request)
        if not signed[0].may("read"):
            return self.error(request, 403, "this token may not read the pages", signed)
        try:
            template, context = build(signed[0])
        except Problem as e:
            return self.error(request, e.status, e.message, signed)
        except ConfigError as e:  # a stored document the library's loaders refuse
            return self.error(request, 422, str(e), signed)
        return self.html(request, template, 200, signed, **context)

    async def form(self, request: Request) -> dict[str, str]:
        """A posted ``application/x-www-form-urlencoded`` form, one value per field."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise Problem(413, f"a form is at most {MAX_FORM_BYTES} bytes", "body")
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/x-www-form-urlencoded":
            raise Problem(415, "expected a form (application/x-www-form-urlencoded)", "body")
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in fields.items()}

    async def operator_form(
        self, request: Request, scope: str = "operator"
    ) -> tuple[tuple[Principal, SessionData], dict[str, str]] | Response:
        """The session and the form of a posted request: a session that ``may(scope)`` (an
        operator's, by default: the request changes state) whose CSRF secret the form carries
        (else an error page, or the sign-in form)."""
        signed = self.session(request)
        if signed is None:
            return self.to_login(request)
        try:
            fields = await self.form(request)
        except Problem as e:
            return self.error(request, e.status, e.message, signed)
        if not csrf_matches(signed[1], fields.get("csrf")):
            return self.error(
                request, 403, "the form's CSRF token is missing or stale: reload the page", signed
            )
        if not signed[0].may(scope):
            return self.error(request, 403, f"this needs a {scope} token", signed)
        return signed, fields


def router(state: State, signer: Signer) -> APIRouter:
    """The web pages of a server (module docstring)."""
    pages = Pages(state, signer)
    r = APIRouter(include_in_schema=False)

    @r.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=303)

    @r.get("/ui/static/tailbound.css")
    def css() -> Response:
        return Response(
            (STATIC / "tailbound.css").read_text(),
            media_type="text/css",
            headers={"Cache-Control": "max-age=3600"},
        )

    # ---------------------------------------------------------------- signing in
    @r.get("/ui/login")
    def login_form(request: Request, next: str = "/ui/") -> Response:
        nonce = signer.login_nonce()
        response = pages.html(request, "login.html", nonce=nonce, next=safe_next(next), failed="")
        response.set_cookie(
            LOGIN_COOKIE,
            nonce,
            max_age=3600,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/ui/login",
        )
        return response

    @r.post("/ui/login")
    async def login(request: Request) -> Response:
        try:
            fields = await pages.form(request)
        except Problem as e:
            return pages.error(request, e.status, e.message)
        target = safe_next(fields.get("next", "/ui/"))
        if not signer.login_nonce_ok(request.cookies.get(LOGIN_COOKIE), fields.get("nonce")):
            return pages.error(
                request, 403, "the sign-in form expired or came from elsewhere: reload it"
            )

        def check() -> tuple[int, str] | None:
            with state.sessions() as s:
                row = token_row(s, fields.get("token", "").strip())
                return None if row is None else (row.id, row.scope)

        found = await run_in_threadpool(check)
        if found is None or found[1] not in ("read", "operator"):
            failed = (
                "unknown or revoked token"
                if found is None
                else "an agent token cannot sign in (read or operator tokens can)"
            )
            return pages.html(
                request,
                "login.html",
                401,
                nonce=fields.get("nonce", ""),
                next=target,
                failed=failed,
            )
        value, _ = signer.issue(*found)
        redirect = RedirectResponse(target, status_code=303)
        redirect.set_cookie(
            COOKIE,
            value,
            max_age=SESSION_S,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        redirect.delete_cookie(LOGIN_COOKIE, path="/ui/login")
        log.info("signed in", extra={"scope": found[1], "token_id": found[0]})
        return redirect

    @r.post("/ui/logout")
    async def logout(request: Request) -> Response:
        signed = pages.session(request)
        if signed is not None:
            try:
                fields = await pages.form(request)
            except Problem as e:
                return pages.error(request, e.status, e.message, signed)
            if not csrf_matches(signed[1], fields.get("csrf")):
                return pages.error(request, 403, "the form's CSRF token is missing", signed)
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # ---------------------------------------------------------------- read-only pages
    @r.get("/ui/")
    def index(request: Request) -> Response:
        def build(who: Principal) -> tuple[str, dict[str, Any]]:
            with state.sessions() as s:
                rows = list(s.scalars(select(ClusterRow).order_by(ClusterRow.id)))
                clusters = [overview(s, row) for row in rows]
            return "index.html", {"clusters": clusters}

        return pages.view(request, build)

    @r.get("/ui/clusters/{cluster}")
    def cluster_page(request: Request, cluster: str) -> Response:
        def build(who: Principal) -> tuple[str, dict[str, Any]]:
            with state.sessions() as s:
                view = overview(s, find_cluster(s, cluster))
            return "cluster.html", {**view, "chart": Markup(bound_chart(view["rows"]))}

        return pages.view(request, build)

    @r.get("/ui/clusters/{cluster}/tenants/{tenant}")
    def tenant_view(request: Request, cluster: str, tenant: str) -> Response:
        def build(who: Principal) -> tuple[str, dict[str, Any]]:
            with state.sessions() as s:
                row = find_cluster(s, cluster)
                t = find_tenant(s, row, tenant)
                view = tenant_page(s, row, t)
            context = state.decider.context(row)
            curves = pages.curves.get(context, row.id, t, state.traces.root)
            return "tenant.html", {
                **view,
                "measured_chart": Markup(measured_chart(view)),
                "rb_charts": [Markup(c) for c in rb_charts(tenant, curves, view["entry"])],
            }

        return pages.view(request, build)

    @r.get("/ui/clusters/{cluster}/plans")
    def plans_page(request: Request, cluster: str, before: int | None = None) -> Response:
        def build(who: Principal) -> tuple[str, dict[str, Any]]:
            with state.sessions() as s:
                row = find_cluster(s, cluster)
                return "plans.html", {"cluster": row, **history(s, row, before=before)}

        return pages.view(request, build)

    @r.get("/ui/compare")
    def compare_page(request: Request) -> Response:
        def build(who: Principal) -> tuple[str, dict[str, Any]]:
            with state.sessions() as s:
                rows = list(s.scalars(select(ClusterRow).order_by(ClusterRow.id)))
                views = [overview(s, row) for row in rows]
            return "compare.html", {
                "views": views,
                "max_tenants": MAX_TENANTS,
                **compare_charts(views),
            }

        return pages.view(request, build)

    # ---------------------------------------------------------------- forms
    @r.post("/ui/clusters/{cluster}/admissions")
    async def admit(request: Request, cluster: str) -> Response:
        return await decide(request, cluster, "admit")

    @r.post("/ui/clusters/{cluster}/departures")
    async def depart(request: Request, cluster: str) -> Response:
        return await decide(request, cluster, "depart")

    async def decide(request: Request, cluster: str, event: str) -> Response:
        checked = await pages.operator_form(request)
        if isinstance(checked, Response):
            return checked
        signed, fields = checked
        tenant = fields.get("tenant", "")
        run = state.decider.admit if event == "admit" else state.decider.depart
        try:
            result = await run_in_threadpool(run, cluster, tenant)
        except Problem as e:
            return pages.error(request, e.status, e.message, signed)
        log.info(
            "admission" if event == "admit" else "departure",
            extra={**result.to_json(), "by": signed[0].name, "via": "ui"},
        )

        def now_version() -> int:
            with state.sessions() as s:
                return find_cluster(s, cluster).version

        version = await run_in_threadpool(now_version)
        return pages.html(
            request,
            "decision.html",
            200,
            signed,
            cluster=cluster,
            result=result.to_json(),
            version=version,
            decision_json=json.dumps(result.to_json(), indent=1, default=str),
        )

    @r.post("/ui/clusters/{cluster}/verify")
    async def verify(request: Request, cluster: str) -> Response:
        checked = await pages.operator_form(request)
        if isinstance(checked, Response):
            return checked
        signed, _ = checked

        def run() -> Any:
            with state.sessions() as s:
                row = find_cluster(s, cluster)
                if row.version == 0:
                    raise Problem(409, f"cluster {cluster!r} has no Plan yet", "version")
                text = plan_store.version_text(s, row.id, row.version)
            assert text is not None
            return replay(text, row.version, state.settings.data / "scratch")

        try:
            done = await run_in_threadpool(run)
        except Problem as e:
            return pages.error(request, e.status, e.message, signed)
        except ConfigError as e:  # a trace or profile the Plan records is missing or changed
            return pages.error(request, 422, str(e), signed)
        return pages.html(
            request,
            "verify.html",
            200,
            signed,
            cluster=cluster,
            replay=done,
            chart=Markup(verify_chart(cluster, done)),
        )

    @r.post("/ui/clusters/{cluster}/compare")
    async def compare_cluster(request: Request, cluster: str) -> Response:
        checked = await pages.operator_form(request, "read")
        if isinstance(checked, Response):
            return checked
        signed, _ = checked

        def run() -> CompareRun:
            with state.sessions() as s:
                row = find_cluster(s, cluster)
                tenants = list(
                    s.scalars(
                        select(TenantRow)
                        .where(TenantRow.cluster_id == row.id)
                        .order_by(TenantRow.id)
                    )
                )
                context = state.decider.context(row)
            return run_compare(context, tenants, state.traces.root, state.settings.data / "scratch")

        try:
            done = await run_in_threadpool(run)
        except Problem as e:
            return pages.error(request, e.status, e.message, signed)
        except ConfigError as e:  # a trace or the profile the library's loaders refuse
            return pages.error(request, 422, str(e), signed)
        return pages.html(request, "compare_run.html", 200, signed, run=done, **policy_charts(done))

    return r


def safe_next(target: str) -> str:
    """Where to go after signing in: a page of ours (``/ui/…``), never another site.

    >>> safe_next("//evil.example/ui/"), safe_next("/ui/clusters/a"), safe_next("/tokens")
    ('/ui/', '/ui/clusters/a', '/ui/')
    """
    if target.startswith("/ui/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/"


# ------------------------------------------------------------------------------ charts
def bound_chart(rows: list[dict[str, Any]]) -> str:
    """A cluster's tenants: SLO, the Plan's bound and the latest measured tail, per tenant."""
    names = [r["tenant"] for r in rows]
    return charts.bar_chart(
        "SLO, bound and latest measured tail per tenant",
        names,
        [
            ("SLO", [r["slo_s"] for r in rows]),
            ("Plan's bound", [r["predicted_s"] for r in rows]),
            ("measured at the SLO's percentile", [r["measured_s"] for r in rows]),
        ],
        y_label="latency (log scale)",
        y_format=charts.si_seconds,
        width=max(760, 90 * len(rows) + 300),
        log_y=True,
    )


def measured_chart(view: dict[str, Any]) -> str:
    """A tenant's measured percentiles over time, against the Plan's bound and the SLO."""
    rows = view["measurements"]
    start = rows[0]["at"].timestamp() if rows else 0.0
    span = rows[-1]["at"].timestamp() - start if rows else 0.0
    unit, per = (
        ("hours", 3600.0) if span > 7200 else ("minutes", 60.0) if span > 120 else ("seconds", 1.0)
    )
    keys = sorted({k for r in rows for k in r["percentiles"]}, key=float)
    series = [
        charts.Series(
            f"p{100 * float(k):.4g}",
            [
                ((r["at"].timestamp() - start) / per, r["percentiles"][k])
                for r in rows
                if k in r["percentiles"]
            ],
        )
        for k in keys
    ]
    entry = view["entry"] or {}
    refs = [
        charts.Ref("Plan's bound", entry.get("latency_bound_s") or math.nan),
        charts.Ref("SLO", entry.get("slo_s") or view["tenant"].document.get("slo_s") or math.nan),
    ]
    first = datetime.fromtimestamp(start, UTC).strftime("%H:%M:%S UTC") if rows else ""
    return charts.line_chart(
        f"Measured latency of {view['tenant'].name}",
        series,
        x_label=f"{unit} since the first measurement ({first})" if rows else "no measurements",
        y_label="latency",
        refs=refs,
        y_format=charts.si_seconds,
    )


def rb_charts(name: str, curves: dict[str, Any], entry: dict[str, Any] | None) -> list[str]:
    """A tenant's r-b curve at each stage (one chart a stage: their scales differ by orders of
    magnitude), with the Plan's token buckets at that stage as points."""
    out = []
    limits = {} if entry is None else entry.get("stages", {})
    for stage, c in curves.items():
        series = [
            charts.Series("r-b curve", list(zip(c.rates.tolist(), c.buckets.tolist(), strict=True)))
        ]
        if stage in limits:
            limit = limits[stage]
            points = [(limit["rate"], limit["bucket"])]
            points += [(e["rate"], e["bucket"]) for e in limit.get("extra", [])]
            series.append(charts.Series("Plan's token bucket", points, markers=True))
        out.append(
            charts.line_chart(
                f"r-b curve of {name} at {stage}",
                series,
                x_label="rate (utilisation of the stage)",
                y_label="bucket (seconds of work)",
                y_format=charts.si_seconds,
                width=560,
                height=280,
            )
        )
    return out


def verify_chart(cluster: str, done: Any) -> str:
    """A replay: per tenant its SLO, the Plan's bound and the replayed latencies."""
    names = [c["name"] for c in done.checks]
    return charts.bar_chart(
        f"Plan version {done.version} of {cluster} replayed",
        names,
        [
            ("SLO", [c["slo_s"] for c in done.checks]),
            ("Plan's bound", [c["bound_s"] for c in done.checks]),
            ("replayed at the bound's percentile", [c["at_bound_s"] for c in done.checks]),
            ("replayed at the SLO's percentile", [c["achieved_s"] for c in done.checks]),
        ],
        y_label="latency (log scale)",
        y_format=charts.si_seconds,
        width=max(760, 110 * len(names) + 300),
        log_y=True,
    )


def compare_charts(views: list[dict[str, Any]]) -> dict[str, Any]:
    """The clusters side by side (as ``tailbound compare`` sets policies side by side): the
    tenants each admitted, and each one's worst and median bound/SLO and measured/bound."""

    def ratios(rows: list[dict[str, Any]], top: str, bottom: str) -> list[float]:
        return sorted(
            r[top] / r[bottom]
            for r in rows
            if r[top] is not None and r[bottom] and math.isfinite(r[top] / r[bottom])
        )

    names = [f"{v['cluster'].name} ({v['cluster'].policy})" for v in views]
    summary: list[dict[str, Any]] = []
    for v in views:
        slo = ratios(v["rows"], "predicted_s", "slo_s")
        meas = ratios(v["rows"], "measured_s", "predicted_s")
        summary.append(
            {
                "view": v,
                "admitted": len(v["admitted"]),
                "waiting": len(v["waiting"]),
                "bound_slo": (slo[-1], slo[len(slo) // 2]) if slo else (None, None),
                "measured_bound": (meas[-1], meas[len(meas) // 2]) if meas else (None, None),
            }
        )
    count = charts.bar_chart(
        "Tenants admitted and not admitted per cluster",
        names,
        [
            ("admitted", [float(x["admitted"]) for x in summary]),
            ("not admitted", [float(x["waiting"]) for x in summary]),
        ],
        y_label="tenants",
        width=max(760, 160 * len(names) + 300),
    )
    ratio = charts.bar_chart(
        "Bounds against SLOs and measurements against bounds",
        names,
        [
            ("worst bound / SLO", [x["bound_slo"][0] for x in summary]),
            ("median bound / SLO", [x["bound_slo"][1] for x in summary]),
            ("worst measured / bound", [x["measured_bound"][0] for x in summary]),
        ],
        y_label="ratio",
        refs=[charts.Ref("1: at the limit", 1.0)],
        width=max(760, 160 * len(names) + 300),
    )
    return {"summary": summary, "count_chart": Markup(count), "ratio_chart": Markup(ratio)}
