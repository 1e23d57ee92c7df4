"""Refusing a graduated SLO where a policy plans for one latency and percentile (issue 25,
``docs/nested-qos.md``).

A graduated SLO (:attr:`tailbound.model.Slo.grades`: "90 % within 5 ms, 99 % within 50 ms") is
honoured only by the ``nested-qos`` admission policy, which gives the tenant one Nested QoS
class per grade. Every other admission, placement and prioritisation policy, and every analysis
of ``tailbound bound``, plans for a single ``(latency, percentile)``; planning it for the
innermost grade would promise nothing about the outer ones, so the verbs refuse such a tenant
(exit 2, naming ``tenants[i].slo_grades``). A module of its own, without numpy, because
``tailbound bound`` runs without it (``tests/cli/test_cold_imports.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tailbound.errors import ConfigError
from tailbound.model import Slo, TenantSet

#: The one policy that honours a graduated SLO (``tailbound.policies.nested_qos.NAME``).
HONOURED_BY = "nested-qos"


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def slo(self) -> Slo | None: ...


def refuse_graduated(tset: TenantSet, policy: str) -> None:
    """Raise :class:`ConfigError` naming the first tenant of ``tset`` with a graduated SLO,
    which ``policy`` cannot honour.

    >>> from tailbound.model import Tenant
    >>> t = Tenant("G", Slo.graduated([(0.005, 0.9), (0.05, 0.99)]), "g.csv")
    >>> refuse_graduated(TenantSet((t,), path=Path("t.json")), "dnc")
    Traceback (most recent call last):
    ...
    tailbound.errors.ConfigError: t.json, field tenants[0].slo_grades: tenant G has a graduated \
SLO, which dnc cannot honour (it plans for one latency and percentile); use tailbound admit \
--policy nested-qos
    """
    refuse_graduated_tenants(tset.tenants, tset.path, policy)
    tset.refuse_rpc(policy)  # nor an RPC tenant (issue 24: only the aequitas policy plans one)


def refuse_graduated_tenants(
    tenants: Sequence[_Named], path: str | Path | None, policy: str
) -> None:
    """:func:`refuse_graduated` of the ``tenants`` of a tenants file or a Plan at ``path`` (the
    error names ``tenants[i].slo_grades`` there)."""
    for i, t in enumerate(tenants):
        if t.slo is not None and t.slo.is_graduated:
            raise ConfigError(
                path,
                f"tenant {t.name} has a graduated SLO, which {policy} cannot honour (it plans "
                f"for one latency and percentile); use tailbound admit --policy {HONOURED_BY}",
                field=f"tenants[{i}].slo_grades",
            )
