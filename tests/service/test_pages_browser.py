"""The web pages in a real browser: Debian's chromium (``/usr/bin/chromium``, installed by
``.ci/run``) driven by Playwright's sync API, against a server the test starts on the demo's
generated fleet (:mod:`tests.service.ui_harness`). Screenshots go to ``artifacts/screenshots/``
(gitignored) for a person to look at after a run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright
from tests.service.ui_harness import SCREENSHOTS, Site, start_site

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    yield from start_site(tmp_path_factory.mktemp("ui-browser"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "Debian's chromium is needed: apt-get install chromium (.ci/run)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)
        yield b
        b.close()


def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def signed_in(
    browser: Browser, site: Site, token: str, *, javascript: bool = True
) -> BrowserContext:
    """A browser context signed in through the login form with ``token``."""
    context = browser.new_context(
        java_script_enabled=javascript, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.goto(site.url + "/ui/clusters/demo")
    # no session: the page sends the browser to the sign-in form, remembering where it was
    expect(page).to_have_url(re.compile(r"/ui/login\?next=/ui/clusters/demo$"))
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(site.url + "/ui/clusters/demo")
    page.close()
    return context


def plan_version(page: Page) -> int:
    return int(page.locator("#plan-version").inner_text())


def test_pages_load_and_admission_round_trip(browser: Browser, site: Site) -> None:
    context = signed_in(browser, site, site.operator)
    page = context.new_page()
    page.goto(site.url + "/ui/")
    expect(page.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
    expect(page.get_by_role("link", name="demo")).to_be_visible()
    shot(page, "clusters")

    page.goto(site.url + "/ui/clusters/demo")
    before = plan_version(page)
    shot(page, "cluster-before")
    waiting = site.tenants[3]
    page.get_by_label("Tenant to admit").select_option(waiting)
    page.get_by_role("button", name="Decide admission").click()
    expect(page.locator("#decision")).to_contain_text("Admitted")
    expect(page.get_by_role("row", name=re.compile("^server "))).to_be_visible()
    after = plan_version(page)
    assert after == before + 1
    shot(page, "decision")
    page.get_by_role("link", name="← cluster demo").click()
    assert plan_version(page) == after
    expect(page.get_by_role("link", name=waiting).first).to_be_visible()
    # the API agrees with the page
    r = httpx.get(site.url + "/clusters/demo", headers={"Authorization": f"Bearer {site.reader}"})
    assert r.json()["version"] == after

    page.goto(site.url + "/ui/clusters/demo/plans")
    row = page.get_by_role("row", name=re.compile(rf"^{after} admit {waiting}"))
    expect(row).to_contain_text(waiting)
    shot(page, "plans")
    context.close()


def test_chart_renders_the_measured_data(browser: Browser, site: Site) -> None:
    context = signed_in(browser, site, site.reader)
    page = context.new_page()
    r = httpx.get(
        site.url + "/clusters/demo/report", headers={"Authorization": f"Bearer {site.reader}"}
    )
    measured = next(t for t in r.json()["tenants"] if t["measured_s"] is not None)
    page.goto(site.url + f"/ui/clusters/demo/tenants/{measured['tenant']}")
    chart = page.get_by_role("img", name=f"Measured latency of {measured['tenant']}")
    expect(chart).to_be_visible()
    # one line per percentile the agent posted, two windows each, drawn inside the chart
    lines = chart.locator("polyline.series")
    expect(lines).to_have_count(3)
    assert {lines.nth(i).get_attribute("data-series") for i in range(3)} == {
        "p50",
        "p99",
        "p99.9",
    }
    assert chart.locator("circle.point").count() == 6
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 150
    # the verdict is the report's: 0.7 of the bound is meeting it
    expect(page.locator("#verdict")).to_have_text("meeting its bound")
    expect(page.get_by_role("img", name=re.compile("^r-b curve of .* at storage"))).to_be_visible()
    shot(page, "tenant")
    # a reader sees no forms that change state
    page.goto(site.url + "/ui/clusters/demo")
    expect(page.get_by_role("button", name="Decide admission")).to_have_count(0)
    context.close()


def test_read_only_pages_without_javascript(browser: Browser, site: Site) -> None:
    context = signed_in(browser, site, site.reader, javascript=False)
    page = context.new_page()
    for path, heading in (
        ("/ui/", "Clusters"),
        ("/ui/clusters/demo", "Cluster demo"),
        (f"/ui/clusters/demo/tenants/{site.tenants[0]}", f"Tenant {site.tenants[0]}"),
        ("/ui/clusters/demo/plans", "Plan history of demo"),
        ("/ui/compare", "Clusters side by side"),
    ):
        page.goto(site.url + path)
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        # the content is in the HTML itself: tables, charts, the clusters' sections
        assert page.locator("svg.chart, table, section").count() >= 1
    expect(
        page.get_by_role("img", name="Tenants admitted and not admitted per cluster")
    ).to_be_visible()
    shot(page, "compare-no-javascript")
    context.close()


def test_keyboard_skip_link_and_focus(browser: Browser, site: Site) -> None:
    context = signed_in(browser, site, site.operator)
    page = context.new_page()
    page.goto(site.url + "/ui/clusters/demo")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    # every form control has a label the browser's accessibility tree names it by
    expect(page.get_by_label("Tenant to admit")).to_be_visible()
    page.get_by_label("Tenant to admit").focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Decide admission")).to_be_focused()
    context.close()


def test_verify_replay_as_a_chart(browser: Browser, site: Site) -> None:
    context = signed_in(browser, site, site.operator)
    page = context.new_page()
    page.goto(site.url + "/ui/clusters/demo")
    version = plan_version(page)
    page.get_by_role("button", name=re.compile("verify")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Plan version {version} of demo, replayed"
    )
    chart = page.get_by_role("img", name=f"Plan version {version} of demo replayed")
    expect(chart).to_be_visible()
    assert chart.locator("rect.bar").count() >= 4 * 3
    expect(page.get_by_role("status")).to_contain_text("Every promise held")
    shot(page, "verify")
    context.close()
