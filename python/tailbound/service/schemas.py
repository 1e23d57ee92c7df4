"""The API's request and response bodies (pydantic; the OpenAPI document is built from them).

Every body forbids unknown fields and non-finite numbers, so a misspelt field or a ``NaN`` is a
422 naming it (``body.slo_s``) before anything runs; the documents the library's loaders read
(a cluster file's, a device profile) are checked by those loaders and named under their part
(``cluster.server_hosts[0].devices``, ``profile.bandwidthTable``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

#: A name of a cluster, tenant, token or host: letters, digits, ``.``, ``_``, ``-``.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ClusterIn(Body):
    """A cluster: its cluster-file document (``link_bandwidth_bytes_per_s``, ``server_hosts``,
    ``client_hosts``, as ``tailbound place --cluster`` reads), the device profile (an SSD or
    disk profile document; placement policies need one), the policy deciding admissions (a
    placement policy, or an admission policy of a family ``service.engines.FAMILIES`` lists) and its
    options;
    optionally each host's IPv4 or IPv6 address (``addresses``: host name → address), which the
    hosts' parts of the Plans carry for ``tailbound enforce net``."""

    name: Name
    policy: str = Field(min_length=1, max_length=100)
    cluster: dict[str, Any]
    profile: dict[str, Any] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    addresses: dict[Name, str] = Field(default_factory=dict)


class ClusterOut(BaseModel):
    name: str
    policy: str
    version: int
    options: dict[str, Any]
    hosts: list[str]
    addresses: dict[str, str]


class TenantIn(Body):
    """A tenant, as an entry of a tenants file, with its trace given by the SHA-256 an upload
    (``POST /traces``) returned, or instead its ``characterisation`` given directly (placement
    policies: ``tailbound.plan_inputs.check_characterisation``); optionally the TCP port its
    server listens on for it (``port``, which ``tailbound enforce net`` filters on, so that two
    tenants of one client and server are told apart)."""

    name: Name
    trace: Sha256 | None = None
    characterisation: dict[str, Any] | None = None
    slo_s: float | None = Field(default=None, gt=0)
    percentile: float | None = Field(default=None, gt=0, le=1)
    slo_grades: list[tuple[float, float]] | None = None
    client_host: Name | None = None
    client_vm: Name | None = None
    server_host: Name | None = None
    device: Name | None = None
    group: Name | None = None
    class_: Name | None = Field(default=None, alias="class")
    throughput_iops: float | None = Field(default=None, gt=0)
    throughput_bytes_per_s: float | None = Field(default=None, gt=0)
    port: int | None = Field(default=None, ge=1, le=65535)
    #: An RPC tenant's traffic over the cluster's ``rpc_network`` option (``aequitas``
    #: clusters; docs/aequitas.md, "How a user states it").
    rpc: dict[str, Any] | None = None


class TenantOut(BaseModel):
    name: str
    state: str
    document: dict[str, Any]


class TenantRef(Body):
    """The tenant an admission or departure is about."""

    tenant: Name


class TraceOut(BaseModel):
    sha256: str
    size: int
    format: str
    requests: int


class TokenIn(Body):
    """A token to create: its name, scope and, for an ``agent`` token, its host."""

    name: Name
    scope: str = Field(pattern=r"^(read|operator|agent)$")
    host: Name | None = None


class TenantSummary(Body):
    """One tenant's latencies over a window, as an agent measured them: the number of requests,
    latency percentiles (s) keyed by the fraction (``"0.999"``), the largest latency (s), and the
    requests that went beyond the Plan's token buckets (sent over the limits)."""

    tenant: Name
    count: int = Field(ge=0)
    percentiles: dict[str, Annotated[float, Field(ge=0)]]
    max_s: float | None = Field(default=None, ge=0)
    beyond_buckets: int = Field(default=0, ge=0)
    #: An Aequitas tenant's RPCs of one class (``service.rpc_reports``): the class they asked
    #: for, ``count`` of them asked it, ``admitted`` ran at it (the rest were downgraded) and
    #: ``percentiles`` are the RNL of those that ran there, in the class SLO's unit.
    rpc_class: Name | None = None
    admitted: int | None = Field(default=None, ge=0)


class MeasurementsIn(Body):
    """An agent's report: its host, the Plan version it runs, the window (s) and a summary per
    tenant."""

    host: Name
    plan_version: int = Field(ge=0)
    window_s: float = Field(gt=0)
    tenants: list[TenantSummary] = Field(min_length=1, max_length=10_000)


class Problem(BaseModel):
    """An error: what is wrong and the field at fault (None when no single field is)."""

    detail: str
    field: str | None = None
