"""The hosts' parts of an Aequitas Plan (docs/service.md, "Aequitas through the service").

An Aequitas network (:class:`~tailbound.rpc_network.RpcNetwork`) numbers its hosts ``0 … n − 1``
(one big switch); a cluster names its hosts. The cluster's option ``rpc_hosts`` maps them: a
list of ``n`` distinct host names of the cluster, ``rpc_hosts[i]`` being the network's host
``i`` (absent: the hosts are named by their numbers, ``"0"``, ``"1"``, …, as an Aequitas hosts
file of ``tailbound enforce replay`` names them). ``rpc_port`` (default :data:`DEFAULT_PORT`) is
the TCP port every host's RPC server listens on (a connection per destination and class, not
per tenant: ``tailbound-replay rpc``).

A host's part (:func:`host_part`) is the whole Plan — every RPC tenant of the one-big-switch
patterns (``all_to_all``, ``incast``) crosses every host, and the RPCs a host sends are cut from
the whole Plan's by the tenants' order (``sim.aequitas_plan.tenant_rpcs`` seeds tenant ``k`` with
``(seed, k)``), so the Plan stays whole for ``enforce replay`` to draw the same RPCs as
``verify`` — with ``meta.host``, ``meta.addresses`` in the Aequitas hosts file's layout
(``{"hosts": {"1": address}, "ports": {"1": rpc_port}}``, by number: ``enforce replay --plan
PART --hosts FILE --host N`` reads it as it is) and ``meta.rpc``, what this host enforces:

- ``host`` (its number) and ``hosts`` (every number's name);
- ``link``: the weighted HTB classes of its egress (``plan_aequitas.enforcer_view``: the link
  rate in bits per second and, per class, name, weight and DSCP; HTB guaranteed rates in the
  weights' proportion, ceiling the link, matched by DSCP);
- ``channels``: the RPC channels it sends on, one per (destination, class), each with the
  destination's number and name, the class's DSCP and SLO, and the tenants sending on it (the
  classes the tenants' mixes ask for and the lowest, where downgraded RPCs run);
- ``serves``: whether some tenant sends to it (it runs the RPC server);
- ``controller``: the controller's configuration by the core ``Config``'s names
  (``AequitasPlan.admission_config``).

A host that is none of the network's hosts, or a Plan without tenants, gets a part without
tenants (its agent removes what it installed). The ETag is the SHA-256 of the part's text, as
for every family (:func:`tailbound.service.plans.part_text`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tailbound.errors import ConfigError
from tailbound.plan_aequitas import AequitasPlan, aequitas_from_json
from tailbound.service.plans import COMPACT, sha256

#: The TCP port the hosts' RPC servers listen on when the cluster gives no ``rpc_port``.
DEFAULT_PORT = 7311


def host_names(options: Mapping[str, Any], hosts: int) -> tuple[str, ...]:
    """The name of each of the network's ``hosts`` numbers: the cluster's ``rpc_hosts`` option,
    or the numbers themselves."""
    given = options.get("rpc_hosts")
    return tuple(given) if given is not None else tuple(str(i) for i in range(hosts))


def check_options(options: Mapping[str, Any], network: Any, cluster: Any) -> None:
    """``rpc_hosts`` and ``rpc_port`` of an Aequitas cluster (module documentation);
    :class:`ConfigError` naming ``options.rpc_hosts[i]`` or ``options.rpc_port``: not a list of
    ``network.hosts`` distinct names of the cluster's hosts (servers and client hosts), or a
    port outside 1–65535."""
    given = options.get("rpc_hosts")
    if given is not None:
        if not isinstance(given, list) or len(given) != network.hosts:
            raise ConfigError(
                None,
                f"expected a list of {network.hosts} host names (one per host of the "
                f"rpc_network, in its numbering), got {given!r}",
                field="options.rpc_hosts",
            )
        known = {s.name for s in cluster.servers} | {c.name for c in cluster.client_hosts}
        for i, name in enumerate(given):
            where = f"options.rpc_hosts[{i}]"
            if not isinstance(name, str) or name not in known:
                raise ConfigError(None, f"the cluster has no host {name!r}", field=where)
            if name in given[:i]:
                raise ConfigError(
                    None, f"{name!r} is host {given.index(name)} already", field=where
                )
    port = options.get("rpc_port", DEFAULT_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(
            None, f"expected a TCP port in 1..65535, got {port!r}", field="options.rpc_port"
        )


def channels(section: AequitasPlan, source: int) -> list[dict[str, Any]]:
    """The channels host ``source`` sends on (module documentation), by destination then class
    rank."""
    from tailbound.sim.aequitas_plan import pattern_of

    network = section.network
    lowest = len(network.classes) - 1
    found: dict[tuple[int, int], list[str]] = {}
    for name, traffic in section.tenants.items():
        pattern = pattern_of(traffic, network)
        asked = {i for i, share in enumerate(traffic.mix(network)) if share > 0} | {lowest}
        for d, senders in zip(pattern.dests, pattern.senders, strict=True):
            if source in senders:
                for c in asked:
                    found.setdefault((int(d), c), []).append(name)
    out = []
    for (d, c), tenants in sorted(found.items()):
        k = network.classes[c]
        out.append(
            {
                "destination": d,
                "class": k.name,
                "dscp": k.dscp,
                "slo_s": k.slo_s,
                "tenants": tenants,
            }
        )
    return out


def receives(section: AequitasPlan, host: int) -> bool:
    """Whether some tenant of ``section`` sends RPCs to ``host``."""
    from tailbound.sim.aequitas_plan import pattern_of

    return any(host in pattern_of(t, section.network).dests for t in section.tenants.values())


def host_part(
    document: dict[str, Any],
    host: str,
    options: Mapping[str, Any],
    addresses: Mapping[str, str] | None,
) -> dict[str, Any]:
    """``host``'s part of the Aequitas Plan ``document`` (module documentation); ``options``
    the cluster's (``rpc_hosts``, ``rpc_port``), ``addresses`` its hosts' addresses by name."""
    part = dict(document)
    part["rejected"] = []
    meta = {**document.get("meta", {}), "host": host}
    part["meta"] = meta
    section_doc = document.get("aequitas")
    names = [t["name"] for t in document.get("tenants", [])]
    section = None if section_doc is None else aequitas_from_json(section_doc, names, None)
    numbers = () if section is None else host_names(options, section.network.hosts)
    if section is None or not names or host not in numbers:
        part["tenants"] = []
        part.pop("aequitas", None)
        meta["addresses"] = {"hosts": {}, "ports": {}}
        return part
    me = numbers.index(host)
    sends = channels(section, me)
    serves = receives(section, me)
    view = section.enforcer_view()
    meta["rpc"] = {
        "host": me,
        "hosts": list(numbers),
        "link": {
            "rate_bps": view.link_rate_bps,
            "classes": [{"name": c.name, "weight": c.weight, "dscp": c.dscp} for c in view.classes],
        },
        "channels": [{**c, "host": numbers[c["destination"]]} for c in sends],
        "serves": serves,
        "controller": section.admission_config(),
    }
    port = int(options.get("rpc_port", DEFAULT_PORT))
    talks = sorted({c["destination"] for c in sends} | ({me} if serves else set()))
    known = dict(addresses or {})
    meta["addresses"] = {
        "hosts": {str(i): known[numbers[i]] for i in talks if numbers[i] in known},
        "ports": {str(i): port for i in talks},
    }
    return part


def part_text(
    document: dict[str, Any],
    host: str,
    options: Mapping[str, Any],
    addresses: Mapping[str, str] | None,
) -> tuple[str, str]:
    """The text of ``host``'s part and its ETag (quoted SHA-256), as
    :func:`tailbound.service.plans.part_text` for the other families."""
    text = json.dumps(host_part(document, host, options, addresses), separators=COMPACT) + "\n"
    return text, f'"{sha256(text)}"'


def sends(part: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The channels a part's host sends on (``meta.rpc.channels``; none for another family's
    part or a part without tenants)."""
    return list(part.get("meta", {}).get("rpc", {}).get("channels", []))
