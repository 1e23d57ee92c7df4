"""The admission policies, one factory each (the registry's factories for ``admission``).

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

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from tailbound.model import TenantSet
from tailbound.policies.admission import AdmissionPolicy, SncPolicy
from tailbound.snc.analysis import snc_bound_function
from tailbound.snc.incremental import IncrementalSnc
from tailbound.snc.tenants import FitCache

if TYPE_CHECKING:
    from tailbound.policies.dnc_baselines import CurveCache, DncPolicy, QJumpPolicy, SiloPolicy

# The DNC baselines (HiGHS, r-b curves) and the measured floors (the simulator) are imported
# when asked for: `tailbound bound` with an SNC analysis starts without them.


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
        """The rule as the SNC factories' keyword arguments (:func:`snc_meister`)."""
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


def _ruled(
    policy: SncPolicy,
    tset: TenantSet,
    fits: FitCache,
    *,
    curves: CurveCache | None = None,
    alone_floor: bool = False,
    joint_floor: bool = False,
    split_levels: bool = False,
    device_floor: bool = True,
    add_model_error: bool = False,
    window_floor: bool = False,
    police: bool = False,
    alone: dict[tuple[str, float], float] | None = None,
) -> AdmissionPolicy:
    """An SNC ``policy`` for tenants of ``tset`` under the rule of the keywords (:class:`SncRule`).

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
    from ``curves``)."""
    out: AdmissionPolicy = policy
    if alone_floor or joint_floor:
        from tailbound.policies.floors import AloneFloor, JointFloor

        if alone_floor:
            out = AloneFloor(
                out,
                fits.trace,
                tset.link_bytes_per_s,
                alone,
                split_levels=split_levels,
                profile=tset.ssd_profile if device_floor else None,
                add_model_error=add_model_error,
                window_floor=window_floor,
            )
        if joint_floor:
            out = JointFloor(out, fits.trace, tset.link_bytes_per_s)
    if police:
        from tailbound.policies.dnc_baselines import CurveCache
        from tailbound.policies.policing import Policed

        out = Policed(out, curves if curves is not None else CurveCache(tset, fits.traces))
    return out


def snc_meister(
    tset: TenantSet,
    *,
    fits: FitCache | None = None,
    incremental: bool = True,
    search: str = "reference",
    **rule: Any,
) -> AdmissionPolicy:
    """SNC-Meister (thesis ch. 4, Appendix A.4) for tenants of ``tset``, with flows memoised
    across arrivals (:class:`~tailbound.snc.incremental.IncrementalSnc`: the same numbers up to
    the order of floating-point sums; ``incremental=False`` computes every bound afresh, for one
    fixed set of tenants), under the ``rule`` (:func:`_ruled`'s keywords; :meth:`SncRule.kwargs`).
    ``fits`` caches MMPP fits; ``search`` is the Hölder search of dependent expressions
    (:func:`tailbound.snc.network.flow_latencies`: ``"reference"`` or ``"deterministic"``)."""
    analysis = "snc-meister"
    fits = fits if fits is not None else FitCache()
    bounds = (
        IncrementalSnc(tset, fits, search)
        if incremental
        else snc_bound_function(tset, analysis, fits, search)
    )
    return _ruled(SncPolicy(bounds, analysis), tset, fits, **rule)


def _classic(
    analysis: str,
    tset: TenantSet,
    fits: FitCache | None,
    search: str,
    rule: dict[str, Any],
) -> AdmissionPolicy:
    fits = fits if fits is not None else FitCache()
    policy = SncPolicy(snc_bound_function(tset, analysis, fits, search), analysis)
    return _ruled(policy, tset, fits, **rule)


def snc_hop_by_hop(
    tset: TenantSet,
    *,
    fits: FitCache | None = None,
    incremental: bool = True,
    search: str = "reference",
    **rule: Any,
) -> AdmissionPolicy:
    """The SNC hop-by-hop analysis (thesis Appendix A.3) as an admission policy, keywords as
    :func:`snc_meister`'s (``incremental`` does not apply: its bounds are computed afresh)."""
    return _classic("snc-hop-by-hop", tset, fits, search, rule)


def snc_convolution(
    tset: TenantSet,
    *,
    fits: FitCache | None = None,
    incremental: bool = True,
    search: str = "reference",
    **rule: Any,
) -> AdmissionPolicy:
    """The SNC convolution analysis (thesis Appendix A.3) as an admission policy, keywords as
    :func:`snc_meister`'s (``incremental`` does not apply: its bounds are computed afresh)."""
    return _classic("snc-convolution", tset, fits, search, rule)


#: Keywords of the SNC factories (:func:`snc_meister`) that a DNC baseline accepts and ignores,
#: so that a verb or an experiment can build any admission policy with one call.
SNC_OPTIONS = frozenset(
    {"fits", "alone", "incremental", "search", *(f.name for f in fields(SncRule))}
)


def _unused_snc_options(baseline: str, options: dict[str, Any]) -> None:
    """A DNC baseline's worst-case bound is never below its traces' latencies, so the SNC rule
    (floors, policing) does not apply: ``options`` may name SNC keywords only, ignored."""
    unknown = sorted(set(options) - SNC_OPTIONS)
    if unknown:
        raise TypeError(f"the {baseline} baseline got unexpected keywords {', '.join(unknown)}")


def dnc(tset: TenantSet, *, curves: CurveCache | None = None, **snc_options: Any) -> DncPolicy:
    """PriorityMeister-style DNC, worst case (§4.3.1; :class:`DncPolicy`), r-b curves from
    ``curves``; ``snc_options`` (:data:`SNC_OPTIONS`) are ignored."""
    from tailbound.policies.dnc_baselines import DncPolicy

    _unused_snc_options("dnc", snc_options)
    return DncPolicy(tset, curves)


def silo(tset: TenantSet, *, curves: CurveCache | None = None, **snc_options: Any) -> SiloPolicy:
    """Silo++ (§4.3.1; :class:`SiloPolicy`); ``snc_options`` are ignored."""
    from tailbound.policies.dnc_baselines import SiloPolicy

    _unused_snc_options("silo", snc_options)
    return SiloPolicy(tset, curves)


def qjump(tset: TenantSet, *, curves: CurveCache | None = None, **snc_options: Any) -> QJumpPolicy:
    """QJump++ (§4.3.1; :class:`QJumpPolicy`); ``snc_options`` are ignored."""
    from tailbound.policies.dnc_baselines import QJumpPolicy

    _unused_snc_options("qjump", snc_options)
    return QJumpPolicy(tset, curves)
