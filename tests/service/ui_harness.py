"""The web pages' test harness: one real server (``tailbound serve`` on a fresh SQLite file, as
:class:`tests.service.harness.Server` starts it) holding the demo's generated fleet as cluster
``demo`` (eight workloads, two servers, WorkloadCompactor), some tenants admitted and
measurements posted over the API, with an operator's, a reader's and an agent's token; and
signing in over plain HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.service.harness import Demo, Server, demo, make_token, register

#: Where the browser tests keep their screenshots (gitignored; docs/service.md, "Web pages").
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@dataclass(frozen=True)
class Site:
    """A running server with the demo cluster and its tokens."""

    server: Server
    demo: Demo
    db: str
    operator: str
    reader: str
    agent: str
    tenants: list[str]

    @property
    def url(self) -> str:
        return self.server.url


def start_site(folder: Path, *, admitted: int = 3) -> Iterator[Site]:
    """Start the server in ``folder``, register the demo cluster, admit its first ``admitted``
    tenants and post two windows of measurements for the first; yields the site, then stops
    the server."""
    d = demo(folder / "demo", 8, servers=2)
    db = f"sqlite:///{folder / 'tb.db'}"
    operator = make_token(db, "ops", "operator")
    reader = make_token(db, "viewer", "read")
    agent = make_token(db, "agent0", "agent", "server00")
    server = Server(db, folder / "data").start()
    try:
        with server.client(operator) as c:
            names = register(c, d, "demo")
            for name in names[:admitted]:
                c.admit("demo", name)
            version, plan = c.plan("demo")
            first = plan["tenants"][0]
            bound = first["latency_bound_s"]
            for fraction in (0.5, 0.7):
                c.json(
                    "POST",
                    "/clusters/demo/measurements",
                    json={
                        "host": first["server"],
                        "plan_version": version,
                        "window_s": 10.0,
                        "tenants": [
                            {
                                "tenant": first["name"],
                                "count": 1000,
                                "percentiles": {
                                    "0.5": bound * fraction / 10,
                                    "0.99": bound * fraction / 2,
                                    "0.999": bound * fraction,
                                },
                                "max_s": bound,
                            }
                        ],
                    },
                )
        yield Site(server, d, db, operator, reader, agent, names)
    finally:
        server.stop()


def hidden(html: str, name: str) -> str:
    """The value of hidden input ``name`` in a page."""
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found, f"no hidden field {name!r} in the page"
    return found.group(1)


@contextmanager
def sign_in(url: str, token: str) -> Iterator[httpx.Client]:
    """An HTTP client signed in on the pages with ``token`` (the login form, as a browser)."""
    with httpx.Client(base_url=url, timeout=120, follow_redirects=False) as client:
        form = client.get("/ui/login")
        assert form.status_code == 200
        r = client.post(
            "/ui/login",
            data={"token": token, "nonce": hidden(form.text, "nonce"), "next": "/ui/"},
        )
        assert r.status_code == 303, r.text
        assert r.headers["location"] == "/ui/"
        yield client
