"""Weighted network classes (Aequitas' WFQ classes, issue 24) as Linux traffic control with what
this kernel has: HTB, u32 and pfifo (no ETS, DRR or prio qdisc).

On one device's egress, under the link-rate root of :mod:`tailbound.enforce.net`'s tree
(``7462:1``, rate = ceil = the link):

* per class ``c`` (in the order given) an HTB class ``7462:(0x20 + c)`` whose **guaranteed
  rate** is its weight's share of the link, ``⌊C · w_c / Σw⌋`` bytes/s, and whose **ceil is the
  link**: a class may borrow whatever the others leave;
* every class at the same HTB ``prio`` (0), with a DRR ``quantum`` in proportion to its weight
  (``MTU · w_c / min w``), so the bandwidth lent between backlogged classes is shared in the
  weights' proportion too (HTB lends in proportion to quanta), not equally;
* a pfifo of :data:`~tailbound.enforce.net.LEAF_LIMIT` packets under each;
* u32 filters on the DSCP alone (IPv4 ``ihl = 5`` and the TOS byte's top six bits; IPv6 the
  traffic class): the sender marks its packets (``tailbound-replay rpc`` sets each
  connection's ``IP_TOS``), so nothing else needs to be matched. Packets no filter takes (ARP,
  other DSCPs) go to the ``default`` class, the last one unless named: Aequitas' lowest class,
  the one downgraded RPCs run in.

How close this is to WFQ, measured, is in ``docs/enforcement.md`` ("Weighted classes"). The
result is a :class:`~tailbound.enforce.net.NetConfig`, so :func:`~tailbound.enforce.net.apply`
installs it idempotently (readback compared), :func:`~tailbound.enforce.net.diff` reports drift
(``tailbound enforce net --classes FILE --check``) and :func:`~tailbound.enforce.net.remove`
removes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailbound.enforce import net
from tailbound.errors import ConfigError
from tailbound.profiles.wire import MTU

#: Minor number of the first class's HTB class (``7462:20``); the switch's own classes use
#: ``0x10``-``0x16`` and a plan's tenants ``0x100`` on.
FIRST_MINOR = 0x20
#: The largest quantum HTB takes without a warning (bytes).
MAX_QUANTUM = 200_000


@dataclass(frozen=True)
class WeightedClass:
    """One network class: its ``name``, WFQ ``weight`` (> 0, any unit) and ``dscp`` (0-63)."""

    name: str
    weight: float
    dscp: int


def check_classes(
    classes: Sequence[WeightedClass | tuple[str, float, int]], *, path: str | None = None
) -> list[WeightedClass]:
    """``classes`` as :class:`WeightedClass` es, checked: at least one, names non-empty and
    distinct, weights finite and > 0, DSCPs whole numbers 0-63 and distinct. Raises
    :class:`ConfigError` naming ``classes[i].<field>``."""
    out: list[WeightedClass] = []
    if not classes:
        raise ConfigError(path, "at least one class", field="classes")
    for i, c in enumerate(classes):
        wc = c if isinstance(c, WeightedClass) else WeightedClass(*c)
        where = f"classes[{i}]"
        if not isinstance(wc.name, str) or not wc.name or wc.name in {k.name for k in out}:
            raise ConfigError(path, f"empty or given twice: {wc.name!r}", field=f"{where}.name")
        w = wc.weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
            raise ConfigError(path, f"must be a number > 0, got {w!r}", field=f"{where}.weight")
        d = wc.dscp
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < 64:
            raise ConfigError(path, f"expected 0..63, got {d!r}", field=f"{where}.dscp")
        twin = next((j for j, k in enumerate(out) if k.dscp == d), None)
        if twin is not None:
            raise ConfigError(path, f"{d} is classes[{twin}]'s too", field=f"{where}.dscp")
        out.append(WeightedClass(wc.name, float(w), d))
    return out


def load_classes(path: str | Path) -> list[WeightedClass]:
    """Read ``{"classes": [{"name": "h", "weight": 4, "dscp": 46}, ...]}`` (what ``tailbound
    enforce net --classes`` takes), checked (:func:`check_classes`)."""
    try:
        doc: Any = json.loads(Path(path).read_text())
    except OSError as e:
        raise ConfigError(path, f"cannot read the classes file: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, f"not JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("classes"), list):
        raise ConfigError(path, "expected an object with a list 'classes'", field="classes")
    unknown = set(doc) - {"classes"}
    if unknown:
        raise ConfigError(path, "unknown key", field=sorted(unknown)[0])
    raw = []
    for i, c in enumerate(doc["classes"]):
        if not isinstance(c, dict) or set(c) != {"name", "weight", "dscp"}:
            raise ConfigError(
                path, "expected an object with name, weight and dscp", field=f"classes[{i}]"
            )
        raw.append(WeightedClass(c["name"], c["weight"], c["dscp"]))
    return check_classes(raw, path=str(path))


def guaranteed_rates(classes: Sequence[WeightedClass], link_rate: int) -> list[int]:
    """Each class's guaranteed rate, bytes/s: ``⌊C · w / Σw⌋`` (at least 1).

    >>> guaranteed_rates([WeightedClass("h", 4, 46), WeightedClass("l", 1, 0)], 6_250_000)
    [5000000, 1250000]
    """
    total = sum(c.weight for c in classes)
    return [max(int(link_rate * c.weight / total), 1) for c in classes]


def quanta(classes: Sequence[WeightedClass]) -> list[int]:
    """Each class's DRR quantum, bytes: one MTU for the lightest, the others in proportion to
    their weights (capped at :data:`MAX_QUANTUM`), so HTB lends spare bandwidth between
    backlogged classes in the weights' proportion.

    >>> quanta([WeightedClass("h", 8, 46), WeightedClass("m", 4, 26), WeightedClass("l", 1, 0)])
    [12112, 6056, 1514]
    """
    lightest = min(c.weight for c in classes)
    return [min(round(MTU * c.weight / lightest), MAX_QUANTUM) for c in classes]


def weighted_config(
    device: str,
    classes: Sequence[WeightedClass | tuple[str, float, int]],
    link_rate: int,
    *,
    default: str | None = None,
) -> net.NetConfig:
    """The configuration of ``device``'s egress for weighted ``classes`` at ``link_rate``
    bytes/s (see the module's text); ``default`` names the class of unclassified packets (the
    last class if ``None``). Raises :class:`ConfigError` naming the field at fault."""
    checked = check_classes(classes)
    if isinstance(link_rate, bool) or not isinstance(link_rate, int) or link_rate <= 16 * MTU:
        raise ConfigError(None, f"must be > {16 * MTU} B/s, got {link_rate!r}", field="link_rate")
    names = [c.name for c in checked]
    if default is not None and default not in names:
        raise ConfigError(None, f"{default!r} is not a class", field="default")
    base = net.htb_class(
        net.LINK_CLASS,
        net.ROOT,
        rate=link_rate,
        ceil=link_rate,
        burst=MTU,
        cburst=MTU,
        prio=0,
        label="the link",
    )
    htb, leaves, filters = [base], [], []
    for k, (c, rate, quantum) in enumerate(
        zip(checked, guaranteed_rates(checked, link_rate), quanta(checked), strict=True)
    ):
        cid = net.ROOT | (FIRST_MINOR + k)
        htb.append(
            net.HtbClass(
                cid,
                net.LINK_CLASS,
                rate,
                link_rate,
                MTU,
                MTU,
                0,
                quantum,
                f"{c.name}: weight {c.weight:g}, DSCP {c.dscp}",
            )
        )
        leaves.append(net.Leaf((net.LEAF_MAJOR + 1 + k) << 16, cid, net.LEAF_LIMIT))
        v4 = ((0, 0x45, 0xFF), (1, c.dscp << 2, 0xFC))
        filters.append(net.Filter(100 + k, cid, v4, f"{c.name} DSCP {c.dscp}"))
        v6 = tuple(net._dscp_v6(c.dscp))
        filters.append(
            net.Filter(200 + k, cid, v6, f"{c.name} DSCP {c.dscp} (IPv6)", net.ETH_P_IPV6)
        )
    fallback = names.index(default) if default is not None else len(checked) - 1
    return net.NetConfig(
        device,
        link_rate,
        tuple(htb),
        tuple(leaves),
        tuple(filters),
        (),
        net.ROOT | (FIRST_MINOR + fallback),
    )
