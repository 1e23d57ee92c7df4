"""An HTTP client of the control plane (``tailbound client``, the agent, the tests).

Every method returns the parsed JSON answer; an error answer raises :class:`ServiceError` with
the status, the message and the field the server named.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

#: Seconds to wait for the server before giving up on a request.
TIMEOUT_S = 300.0
#: Bytes sent at a time when uploading a trace.
CHUNK = 1 << 20


class ServiceError(Exception):
    """An error answer: HTTP ``status``, the server's ``detail`` and ``field``."""

    def __init__(self, status: int, detail: str, field: str | None) -> None:
        where = f" (field {field})" if field else ""
        super().__init__(f"HTTP {status}: {detail}{where}")
        self.status, self.detail, self.field = status, detail, field


class Client:
    """A client of the server at ``url`` with ``token`` (None: anonymous)."""

    def __init__(self, url: str, token: str | None, *, timeout_s: float = TIMEOUT_S) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The raw response of a request; :class:`ServiceError` for a 4xx or 5xx."""
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                body = response.json()
                detail, field = str(body.get("detail")), body.get("field")
            except ValueError:
                detail, field = response.text[:500], None
            raise ServiceError(response.status_code, detail, field)
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.call(method, path, **kwargs).json()

    # ------------------------------------------------------------------ the API
    def upload_trace(self, path: str | Path) -> dict[str, Any]:
        """Upload the trace file at ``path`` (streamed); its hash, size, format, requests."""

        def chunks() -> Iterator[bytes]:
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK):
                    yield chunk

        return self.json(
            "POST",
            "/traces",
            content=chunks(),
            headers={"Content-Type": "application/octet-stream"},
        )

    def create_cluster(
        self,
        name: str,
        policy: str,
        cluster: dict[str, Any],
        profile: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        addresses: dict[str, str] | None = None,
    ) -> Any:
        body = {
            "name": name,
            "policy": policy,
            "cluster": cluster,
            "profile": profile,
            "options": options or {},
            "addresses": addresses or {},
        }
        return self.json("POST", "/clusters", json=body)

    def register_tenant(self, cluster: str, tenant: dict[str, Any]) -> Any:
        return self.json("POST", f"/clusters/{cluster}/tenants", json=tenant)

    def admit(self, cluster: str, tenant: str) -> Any:
        return self.json("POST", f"/clusters/{cluster}/admissions", json={"tenant": tenant})

    def depart(self, cluster: str, tenant: str) -> Any:
        return self.json("POST", f"/clusters/{cluster}/departures", json={"tenant": tenant})

    def plan(self, cluster: str, version: int | None = None) -> tuple[int, dict[str, Any]]:
        """A Plan version (the current one by default): its version and document."""
        which = "current" if version is None else str(version)
        r = self.call("GET", f"/clusters/{cluster}/plans/{which}")
        return int(r.headers["X-Plan-Version"]), r.json()

    def host_part(
        self, cluster: str, host: str, etag: str | None = None, wait_s: float = 0.0
    ) -> tuple[int, str, str | None]:
        """``host``'s part of the current Plan: (version, ETag, text), the text None when the
        ETag held is still current (304)."""
        headers = {"If-None-Match": etag} if etag else {}
        r = self.call(
            "GET",
            f"/clusters/{cluster}/hosts/{host}/plan",
            headers=headers,
            params={"wait": wait_s},
        )
        text = None if r.status_code == 304 else r.text
        return int(r.headers["X-Plan-Version"]), r.headers["ETag"], text
