"""Building the admission policies by name (the registry's factory for ``admission``).

- ``snc-meister``: SNC-Meister's bound (thesis Appendix A.4), for admission with flows memoised
  across arrivals (:class:`~tailbound.snc.incremental.IncrementalSnc`: the same numbers up to
  the order of floating-point sums);
- ``snc-hop-by-hop``, ``snc-convolution``: the classic SNC analyses (Appendix A.3);
- ``dnc``, ``silo``, ``qjump``: the DNC baselines of §4.3.1
  (:mod:`tailbound.policies.dnc_baselines`).

The SNC policies' predictions may be floored by measured latencies
(:mod:`tailbound.policies.floors`): ``alone_floor`` by each tenant's latency alone, ``joint_floor``
also by the tenants' latencies replayed together. A DNC baseline's worst-case bound is never below
either on its own traces, so the floors are not applied to it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tailbound.model import TenantSet
from tailbound.policies.admission import AdmissionPolicy, SncPolicy
from tailbound.snc.analysis import snc_bound_function
from tailbound.snc.incremental import IncrementalSnc
from tailbound.snc.tenants import FitCache

if TYPE_CHECKING:
    from tailbound.policies.dnc_baselines import CurveCache

# The DNC baselines (HiGHS, r-b curves) and the measured floors (the simulator) are imported
# when asked for: `tailbound bound` with an SNC analysis starts without them.
SNC_POLICIES = ("snc-meister", "snc-hop-by-hop", "snc-convolution")


@dataclass(frozen=True)
class SncRule:
    """What an SNC policy adds to its bound (docs/snc.md): the measured floors
    (:mod:`tailbound.policies.floors`), the model-error correction, split levels, and
    conformance policing (:mod:`tailbound.policies.policing`). The defaults are tailbound's
    SNC-Meister rule (``tailbound admit``'s default); :data:`THESIS_RULE` is the thesis' bound
    alone. Split levels, the model error and the window floor act through the floor alone."""

    alone_floor: bool = True
    split_levels: bool = True
    add_model_error: bool = True
    window_floor: bool = False
    joint_floor: bool = False
    police: bool = True
    #: A tenant with a device is measured alone through its device too (else the network path).
    device_floor: bool = True

    def kwargs(self) -> dict[str, Any]:
        """The rule as :func:`make_admission`'s keyword arguments."""
        return asdict(self)

    def text(self, device: bool = False) -> str:
        """The rule as the tables and plans name it (``device``: for tenants with a device,
        saying where the floor is measured).

        >>> print(SncRule().text().replace("; ", ";\\n"))
        SNC bound plus its error alone, measured floor alone;
        split levels;
        work beyond the decision trace's load demoted
        >>> THESIS_RULE.text()
        'SNC bound only (thesis)'
        >>> SncRule(add_model_error=False, split_levels=False, police=False).text()
        'SNC bound, measured floor alone; levels by SLO'
        >>> SncRule(device_floor=False, police=False).text(device=True)
        'SNC bound plus its error alone, measured floor alone on the network; split levels'
        """
        if not (self.alone_floor or self.joint_floor or self.police):
            return "SNC bound only (thesis)"
        text = "SNC bound" + (" plus its error alone" if self.add_model_error else "")
        if self.alone_floor and self.joint_floor:
            text += ", measured floors alone and joint"
        elif self.alone_floor:
            text += ", measured floor alone" + (" at the worst window" if self.window_floor else "")
            if device:
                text += " through the device" if self.device_floor else " on the network"
        elif self.joint_floor:
            text += ", measured floor joint"
        if self.alone_floor:
            text += "; split levels" if self.split_levels else "; levels by SLO"
        if self.police:
            text += "; work beyond the decision trace's load demoted"
        return text


#: The thesis' SNC-Meister: the bound alone, priorities by SLO.
THESIS_RULE = SncRule(alone_floor=False, split_levels=False, add_model_error=False, police=False)


def make_admission(
    name: str,
    tset: TenantSet,
    *,
    fits: FitCache | None = None,
    curves: CurveCache | None = None,
    alone_floor: bool = False,
    joint_floor: bool = False,
    split_levels: bool = False,
    device_floor: bool = True,
    add_model_error: bool = False,
    window_floor: bool = False,
    police: bool = False,
    alone: dict[tuple[str, float], float] | None = None,
    incremental: bool = True,
    search: str = "reference",
) -> AdmissionPolicy:
    """The admission policy ``name`` for tenants of ``tset`` (module docstring).

    ``fits`` and ``curves`` are caches of MMPP fits and r-b curves to share between policies
    (the traces they hold are the decision's: an experiment primes them with first halves);
    ``alone`` keeps measured latencies alone across policies (:class:`AloneFloor`);
    ``split_levels`` (with ``alone_floor``) enforces the analysis' misfits one sub-level below
    their SLO class (:class:`AloneFloor`); ``device_floor`` (default) measures the latency alone
    of a tenant with a device through its device too (with ``tset.ssd_profile``; ``False``: the
    network path only, the rule before); ``add_model_error`` adds the analysis' error alone to
    a misfit's bound and ``window_floor`` measures the floor at the worst 3-minute window
    (:class:`AloneFloor`); ``police`` demotes each tenant's traffic beyond its decision trace's
    load bucket below every level (:class:`~tailbound.policies.policing.Policed`, r-b curves
    from ``curves``);
    ``incremental=False`` computes every SNC-Meister bound afresh (one fixed set of tenants);
    ``search`` is the SNC analyses' Hölder search (:func:`tailbound.snc.network.flow_latencies`:
    ``"reference"`` or ``"deterministic"``)."""
    if name not in SNC_POLICIES:
        from tailbound.policies.dnc_baselines import POLICIES as DNC_POLICIES
        from tailbound.policies.dnc_baselines import dnc_bound_function

        if name in DNC_POLICIES:
            return dnc_bound_function(tset, name, curves)
        known = (*SNC_POLICIES, *DNC_POLICIES)
        raise ValueError(f"unknown admission policy {name!r} (known: {', '.join(known)})")
    fits = fits if fits is not None else FitCache()
    policy: AdmissionPolicy
    if name == "snc-meister" and incremental:
        policy = SncPolicy(IncrementalSnc(tset, fits, search), name)
    else:
        policy = SncPolicy(snc_bound_function(tset, name, fits, search), name)
    if alone_floor or joint_floor:
        from tailbound.policies.floors import AloneFloor, JointFloor

        if alone_floor:
            policy = AloneFloor(
                policy,
                fits.trace,
                tset.link_bytes_per_s,
                alone,
                split_levels=split_levels,
                profile=tset.ssd_profile if device_floor else None,
                add_model_error=add_model_error,
                window_floor=window_floor,
            )
        if joint_floor:
            policy = JointFloor(policy, fits.trace, tset.link_bytes_per_s)
    if police:
        from tailbound.policies.dnc_baselines import CurveCache
        from tailbound.policies.policing import Policed

        policy = Policed(policy, curves if curves is not None else CurveCache(tset, fits.traces))
    return policy
