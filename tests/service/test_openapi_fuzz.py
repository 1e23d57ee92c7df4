"""A property-based run over the served OpenAPI document (schemathesis): every operation, with
generated valid and invalid requests and an operator's token, answers without a server error
(no 5xx), on a server holding a cluster with an admitted tenant so that the generated names
sometimes meet real ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from tests.service.harness import Demo, Server, make_token, register

#: Generated requests per operation.
EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory, small_demo: Demo
) -> Iterator[tuple[Server, str]]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    db = f"sqlite:///{folder / 'tb.db'}"
    token = make_token(db, "op", "operator")
    make_token(db, "agent", "agent", host="server00")
    server = Server(db, folder / "data", max_upload_bytes=1_000_000).start()
    with server.client(token) as c:
        names = register(c, small_demo, "c", names=[t["name"] for t in small_demo.tenants[:2]])
        c.admit("c", names[0])
    yield server, token
    assert server.stop() == 0


def test_no_server_errors(fuzzed: tuple[Server, str]) -> None:
    """Each operation of the served document, :data:`EXAMPLES` generated requests (positive and
    negative data), none answered with a 5xx."""
    server, token = fuzzed
    api = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [o.ok() for o in api.get_all_operations()]
    assert len(operations) >= 20
    failures: list[str] = []
    statuses: list[int] = []
    for operation in operations:

        @given(
            case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
            | operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
        )
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def one(case: schemathesis.Case) -> None:
            response = case.call(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            statuses.append(response.status_code)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.text[:500]}")

        one()
    assert not failures, failures[:5]
    assert len(statuses) >= 5 * len(operations)
    assert {200, 201, 404, 422} <= set(statuses), sorted(set(statuses))
