"""The web pages over plain HTTP against a real server (:mod:`tests.service.ui_harness`):
signing in and out, the session cookie on the API, CSRF refusals, anonymous requests (the API's
401, the pages' redirect), revocation ending a session, the pages outside the OpenAPI
document; and the cookie's signing (:mod:`tailbound.service.web_session`) without a server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.service.harness import Demo, register
from tests.service.ui_harness import Site, hidden, sign_in, start_site

from tailbound.errors import ConfigError
from tailbound.service.web_session import (
    COOKIE,
    SECRET_ENV,
    SESSION_S,
    Signer,
    load_secret,
)

PAGES = ("/ui/", "/ui/clusters/demo", "/ui/clusters/demo/plans", "/ui/compare")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    yield from start_site(tmp_path_factory.mktemp("ui-http"), admitted=2)


def test_anonymous_api_is_401_and_pages_redirect_to_the_form(site: Site) -> None:
    with httpx.Client(base_url=site.url, follow_redirects=False) as c:
        for path in ("/clusters", "/clusters/demo/report", "/clusters/demo/plans/current"):
            r = c.get(path)
            assert r.status_code == 401, path
            assert "location" not in r.headers and r.headers["www-authenticate"] == "Bearer"
        assert c.post("/clusters/demo/admissions", json={"tenant": "x"}).status_code == 401
        for path in PAGES:
            r = c.get(path)
            assert r.status_code == 303, path
            assert r.headers["location"].startswith("/ui/login?next=")
        # a forged or foreign cookie is no session
        c.cookies.set(COOKIE, "eyJ0IjoxfQ.AAAA")
        assert c.get("/clusters").status_code == 401
        assert c.get("/ui/").status_code == 303


def test_pages_stay_out_of_the_openapi_document(site: Site) -> None:
    paths = httpx.get(site.url + "/openapi.json").json()["paths"]
    assert paths and "/clusters" in paths
    assert not [p for p in paths if p.startswith("/ui") or p == "/"]


def test_sign_in_cookie_flags_and_the_api_accepts_it(site: Site) -> None:
    form = httpx.get(site.url + "/ui/login")
    with httpx.Client(base_url=site.url, follow_redirects=False) as c:
        c.cookies.update(form.cookies)
        r = c.post(
            "/ui/login",
            data={"token": site.operator, "nonce": hidden(form.text, "nonce"), "next": "/ui/"},
        )
        assert r.status_code == 303
        header = next(h for h in r.headers.get_list("set-cookie") if h.startswith(COOKIE))
        flags = {f.strip().lower() for f in header.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/", f"max-age={SESSION_S}"} <= flags
        assert site.operator not in header  # the cookie holds no token
        # the API answers the cookie as it answers the token
        assert [x["name"] for x in c.get("/clusters").json()] == ["demo"]
        assert c.get("/clusters/demo/report").status_code == 200
        for path in PAGES:
            assert c.get(path).status_code == 200, path


def test_api_changes_by_cookie_need_the_csrf_header(site: Site) -> None:
    with sign_in(site.url, site.operator) as c:
        page = c.get("/ui/clusters/demo").text
        csrf = hidden(page, "csrf")
        before = c.get("/clusters/demo").json()["version"]
        tenant = site.tenants[4]
        r = c.post("/clusters/demo/admissions", json={"tenant": tenant})
        assert r.status_code == 403 and r.json()["field"] == "x-csrf-token"
        r = c.post(
            "/clusters/demo/admissions", json={"tenant": tenant}, headers={"X-CSRF-Token": "wrong"}
        )
        assert r.status_code == 403
        assert c.get("/clusters/demo").json()["version"] == before
        r = c.post(
            "/clusters/demo/admissions", json={"tenant": tenant}, headers={"X-CSRF-Token": csrf}
        )
        assert r.status_code == 200 and r.json()["admitted"], r.text
        assert c.get("/clusters/demo").json()["version"] == before + 1


def test_forms_without_the_csrf_token_are_refused(site: Site) -> None:
    with sign_in(site.url, site.operator) as c:
        before = c.get("/clusters/demo").json()["version"]
        tenant = site.tenants[5]
        for fields in ({"tenant": tenant}, {"tenant": tenant, "csrf": "x" * 32}):
            r = c.post("/ui/clusters/demo/admissions", data=fields)
            assert r.status_code == 403 and "CSRF" in r.text
            r = c.post("/ui/clusters/demo/verify", data=fields)
            assert r.status_code == 403
        # another session's CSRF token is not this one's
        with sign_in(site.url, site.operator) as other:
            theirs = hidden(other.get("/ui/clusters/demo").text, "csrf")
        r = c.post("/ui/clusters/demo/admissions", data={"tenant": tenant, "csrf": theirs})
        assert r.status_code == 403
        assert c.get("/clusters/demo").json()["version"] == before
        # with it: the decision, with the reasons the API gives
        mine = hidden(c.get("/ui/clusters/demo").text, "csrf")
        r = c.post("/ui/clusters/demo/admissions", data={"tenant": tenant, "csrf": mine})
        assert r.status_code == 200 and 'id="decision"' in r.text
        decided = c.get("/clusters/demo/decisions").json()[-1]
        assert decided["tenant"] == tenant
        for key in decided["reasons"]:
            assert f'<th scope="row">{key}</th>' in r.text
        assert f'id="plan-version" class="plan-version">{before + 1}<' in r.text


def test_login_form_needs_its_nonce_and_a_valid_token(site: Site) -> None:
    with httpx.Client(base_url=site.url, follow_redirects=False) as c:
        # no nonce cookie: a form posted from another site
        r = c.post("/ui/login", data={"token": site.operator, "nonce": "n.x", "next": "/ui/"})
        assert r.status_code == 403 and COOKIE not in r.cookies
        form = c.get("/ui/login")
        nonce = hidden(form.text, "nonce")
        for token, status in (("tb_nope", 401), ("", 401), (site.agent, 401)):
            r = c.post("/ui/login", data={"token": token, "nonce": nonce, "next": "/ui/"})
            assert r.status_code == status and COOKIE not in r.cookies, token
        # never redirected off the site after signing in
        r = c.post(
            "/ui/login", data={"token": site.reader, "nonce": nonce, "next": "//evil.example/"}
        )
        assert r.status_code == 303 and r.headers["location"] == "/ui/"


def test_reader_sessions_read_and_cannot_change(site: Site) -> None:
    with sign_in(site.url, site.reader) as c:
        page = c.get("/ui/clusters/demo")
        assert page.status_code == 200 and "Decide admission" not in page.text
        csrf = hidden(page.text, "csrf")
        r = c.post("/ui/clusters/demo/admissions", data={"tenant": site.tenants[6], "csrf": csrf})
        assert r.status_code == 403
        r = c.post(
            "/clusters/demo/admissions",
            json={"tenant": site.tenants[6]},
            headers={"X-CSRF-Token": csrf},
        )
        assert r.status_code == 403


def test_revoking_the_token_ends_its_sessions_and_logout_ends_one(site: Site) -> None:
    with httpx.Client(base_url=site.url) as ops:
        ops.headers["Authorization"] = f"Bearer {site.operator}"
        made = ops.post("/tokens", json={"name": "temp", "scope": "read"}).json()["token"]
        with sign_in(site.url, made) as c:
            assert c.get("/clusters").status_code == 200
            assert ops.delete("/tokens/temp").status_code == 200
            assert c.get("/clusters").status_code == 401
            assert c.get("/ui/").status_code == 303
    with sign_in(site.url, site.reader) as d:
        csrf = hidden(d.get("/ui/").text, "csrf")
        r = d.post("/ui/logout", data={"csrf": csrf})
        assert r.status_code == 303 and r.headers["location"] == "/ui/login"
        assert d.get("/ui/").status_code == 303
        assert d.get("/clusters").status_code == 401


def test_unknown_cluster_page_is_404_html(site: Site) -> None:
    with sign_in(site.url, site.reader) as c:
        r = c.get("/ui/clusters/nope")
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
        assert "no cluster" in r.text


# ------------------------------------------------------------------------------ signing
def test_signer_refuses_tampering_and_expiry() -> None:
    s = Signer(b"k" * 32)
    value, csrf = s.issue(7, "operator", now=1000.0)
    data = s.read(value, now=1001.0)
    assert data is not None and (data.token_id, data.scope, data.csrf) == (7, "operator", csrf)
    assert s.read(value, now=1000.0 + SESSION_S) is None  # expired
    payload, mac = value.split(".")
    assert s.read(f"{payload}x.{mac}", now=1001.0) is None
    assert s.read(f"{payload}.{mac[:-2]}AA", now=1001.0) is None
    assert Signer(b"j" * 32).read(value, now=1001.0) is None  # another server's secret
    nonce = s.login_nonce()
    assert s.login_nonce_ok(nonce, nonce)
    assert not s.login_nonce_ok(nonce, s.login_nonce())
    assert not Signer(b"j" * 32).login_nonce_ok(nonce, nonce)


def test_secret_from_the_environment_or_kept_in_the_data_folder(tmp_path: Path) -> None:
    key = load_secret(tmp_path, {})
    assert len(key) == 32 and load_secret(tmp_path, {}) == key
    assert (tmp_path / "session.key").stat().st_mode & 0o777 == 0o600
    assert load_secret(tmp_path, {SECRET_ENV: "s" * 40}) == b"s" * 40
    with pytest.raises(ConfigError, match=SECRET_ENV):
        load_secret(tmp_path, {SECRET_ENV: "short"})


def test_a_graduated_slo_is_shown_grade_by_grade(site: Site) -> None:
    entry = next(t for t in site.demo.tenants if t["name"] == site.tenants[7])
    with httpx.Client(base_url=site.url, timeout=120) as ops:
        ops.headers["Authorization"] = f"Bearer {site.operator}"
        sha = ops.post("/traces", content=site.demo.trace(entry["name"]).read_bytes()).json()
    doc = {k: v for k, v in entry.items() if k not in ("slo_s", "percentile", "name")}
    doc |= {
        "name": "graded",
        "trace": sha["sha256"],
        "slo_grades": [[0.005, 0.9], [0.05, 0.99], [0.5, 1.0]],
    }
    with httpx.Client(base_url=site.url, timeout=120) as ops:
        ops.headers["Authorization"] = f"Bearer {site.operator}"
        r = ops.post("/clusters/demo/tenants", json=doc)
        assert r.status_code == 201, r.text
    with sign_in(site.url, site.reader) as c:
        page = c.get("/ui/clusters/demo/tenants/graded")
        assert page.status_code == 200, page.text
        assert "90% ≤ 5 ms, 99% ≤ 50 ms, 100% ≤ 500 ms" in page.text
        assert "(graduated)" in page.text
        assert "r-b curve of graded at storage" in page.text  # characterised before admission


def test_snc_rejection_through_the_form_shows_the_apis_reasons(site: Site) -> None:
    """An SNC-Meister cluster (network tenants): a tenant whose SLO no bound can meet is
    rejected through the form, with the reasons the API records and no new version; the
    replay and the comparison pages take the admission cluster too."""
    network = [{k: v for k, v in t.items() if k != "device"} for t in site.demo.tenants[:2]]
    network[1] = {**network[1], "slo_s": 1e-6}  # a microsecond at the 99.9th percentile
    d = Demo(site.demo.folder, network, site.demo.cluster, site.demo.profile)
    rule = {"alone_floor": False, "split_levels": False, "add_model_error": False, "police": False}
    with site.server.client(site.operator) as api:
        register(api, d, "snc", policy="snc-meister", options={"rule": rule})
    with sign_in(site.url, site.operator) as c:
        for entry, admitted in zip(network, (True, False), strict=True):
            page = c.get("/ui/clusters/snc").text
            r = c.post(
                "/ui/clusters/snc/admissions",
                data={"tenant": entry["name"], "csrf": hidden(page, "csrf")},
            )
            assert r.status_code == 200, r.text
            decided = c.get("/clusters/snc/decisions").json()[-1]
            assert decided["tenant"] == entry["name"] and decided["admitted"] is admitted
            for key in decided["reasons"]:
                assert f'<th scope="row">{key}</th>' in r.text
            if not admitted:
                assert "Rejected: its SLO would be missed" in r.text
                assert decided["published"] is None
                assert "none (nothing changed)" in r.text
        assert 'class="plan-version">1<' in r.text
        page = c.get("/ui/clusters/snc").text
        replay = c.post("/ui/clusters/snc/verify", data={"csrf": hidden(page, "csrf")})
        assert replay.status_code == 200 and "Plan version 1 of snc replayed" in replay.text
        compare = c.get("/ui/compare").text
        assert "snc (snc-meister)" in compare and "demo (workloadcompactor)" in compare


def test_verdicts_follow_the_reports_flags(site: Site) -> None:
    """Measurements an agent posts move a tenant's verdict on the pages as the API's report
    flags it: approaching its bound (≥ 0.9 of it), beyond it, beyond its characterisation."""
    with site.server.client(site.operator) as api:
        version, plan = api.plan("demo")
    tenant = next(t for t in plan["tenants"] if t["server"] == "server00")
    bound = tenant["latency_bound_s"]
    with sign_in(site.url, site.reader) as c, site.server.client(site.agent) as agent:
        for fraction, beyond, words in (
            (0.95, 0, "approaching its bound"),
            (1.5, 0, "beyond its bound"),
            (0.5, 3, "beyond its characterisation"),
        ):
            agent.json(
                "POST",
                "/clusters/demo/measurements",
                json={
                    "host": "server00",
                    "plan_version": version,
                    "window_s": 10.0,
                    "tenants": [
                        {
                            "tenant": tenant["name"],
                            "count": 100,
                            "percentiles": {"0.999": bound * fraction},
                            "beyond_buckets": beyond,
                        }
                    ],
                },
            )
            flags = next(
                t["flags"]
                for t in c.get("/clusters/demo/report").json()["tenants"]
                if t["tenant"] == tenant["name"]
            )
            assert flags, fraction
            page = c.get(f"/ui/clusters/demo/tenants/{tenant['name']}").text
            assert f'id="verdict">{words}' in page
            assert words in c.get("/ui/clusters/demo").text


def test_compare_form_runs_every_placement_policy_and_charts_it(site: Site) -> None:
    """A cluster of three registered tenants (none admitted): the comparison on them, charted,
    for a reader; refused without the form's CSRF secret."""
    from tailbound.policies.registry import names

    with site.server.client(site.operator) as api:
        register(api, site.demo, "cmp", names=site.tenants[:3])
    with sign_in(site.url, site.reader) as c:
        csrf = hidden(c.get("/ui/compare").text, "csrf")
        # without the session's CSRF secret: refused, nothing run
        for fields in ({"cluster": "demo"}, {"csrf": "x" * 32}):
            r = c.post("/ui/clusters/cmp/compare", data=fields)
            assert r.status_code == 403 and "CSRF" in r.text
        r = c.post("/ui/clusters/cmp/compare", data={"csrf": csrf}, timeout=120)
    assert r.status_code == 200, r.text
    page = r.text
    assert "3 registered tenants (" + ", ".join(site.tenants[:3]) + ")" in page
    charts = page.split("<svg")[1:]
    assert len(charts) == 2
    policies = [n.replace(":K", ":2") for n in names("placement")]
    for chart in charts:
        for p in policies:
            assert f">{p}</text>" in chart, p
    assert 'data-series="sound model"' in charts[0]
    assert 'data-series="reference model"' in charts[0]
    rows = page.split('<tr class="outcome">')[1:]
    assert len(rows) == 2 * len(policies)
    assert [row.split("</th>")[0].removeprefix('<th scope="row">') for row in rows[::2]] == (
        policies
    )
    # every plan ran and was replayed (the demo's tenants fit and carry their traces)
    assert all(" of 3<" in row for row in rows), rows
    assert "replay failed" not in page and 'data-series="worst (sound)"' in charts[1]
    # computed in the scratch folder, nothing left there
    assert not list((site.server.data / "scratch").glob("compare-*"))


def test_compare_refuses_more_tenants_than_its_limit(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from tailbound.service.engines import Context
    from tailbound.service.pages.policy_compare import MAX_TENANTS, run_compare
    from tailbound.service.problems import Problem

    rows: Any = [SimpleNamespace(name=f"t{i}", document={}) for i in range(MAX_TENANTS + 1)]
    context = Context("big", "knee", Any, None, tmp_path / "profile.json", {})
    with pytest.raises(Problem) as e:
        run_compare(context, rows, tmp_path, tmp_path / "scratch")
    assert e.value.status == 422 and f"at most {MAX_TENANTS}" in e.value.message
    context = Context("bare", "knee", Any, None, None, {})
    with pytest.raises(Problem, match="no device profile"):
        run_compare(context, rows[:1], tmp_path, tmp_path / "scratch")
