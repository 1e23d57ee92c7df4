"""The former numpy implementations of the cluster screen and the certificate store, kept as test
oracles for their Rust versions (``tailbound._core.WcClusterScreen`` and ``WcCertificateStore``,
wrapped by :mod:`tailbound.policies.cluster_screen` and
:mod:`tailbound.policies.certificate_store`): the same arithmetic, level by level and certificate
by certificate, so the booleans agree and the numbers agree up to rounding."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray
from tests.policies.wc_oracle import _vertices

from tailbound.policies.certificates import KEEP, MARGIN, Certificate, LpRows
from tailbound.policies.cluster_screen import MAX_LEVELS, TOLERANCE
from tailbound.policies.server import RATE_CAP, SLO_SCALE, Placed, pad_edge, queue_ids
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

_K = 16


def _simplex(step: int) -> NDArray[np.float64]:
    pts = [(a, b, step - a - b) for a in range(step + 1) for b in range(step + 1 - a)]
    return np.array(pts, dtype=np.float64) / step


#: Weights ``w`` of the three queues (a grid on the simplex) and multipliers ``λ`` of the
#: capacity rows (units of ``SLO'_p``) tried by the proof: any ``w`` on the simplex and
#: ``λ >= 0`` give a valid proof, a finer grid finds more.
#: The grid contains the per-server screen's (the centre and the corners; λ 0, 0.5, 2), so a
#: server that screen would reject is rejected here too.
_WEIGHTS = np.vstack([_simplex(4), np.full((1, 3), 1 / 3)])
_LAMBDAS = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 4.0])
_NWL = _WEIGHTS.shape[0] * _LAMBDAS.shape[0]
#: ``λ`` of each ``(w, λ)`` column.
_LAMBDA_OF_COLUMN = np.tile(_LAMBDAS, _WEIGHTS.shape[0])
_T = TypeVar("_T", bound=np.generic)


#: Cached ``h`` per (tenant, level), oldest dropped first beyond :data:`_CACHE_SIZE`.
_terms: dict[tuple[TenantCurves, float], NDArray[np.float64]] = {}
_CACHE_SIZE = 262144
#: :func:`tenant_terms_at`'s results per (tenant, levels asked): a tenant is asked for the same
#: levels again and again (every level at or below its own, each time its server changes).
_stacked: dict[tuple[TenantCurves, bytes], NDArray[np.float64]] = {}


def tenant_terms_at(workload: TenantCurves, levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """``h_js(p)`` of a tenant at each level ``p`` in ``levels``, for each stage and ``(w, λ)``:
    shape ``(len(levels), 3, W·L)`` (the tenant counts as higher when its SLO is below ``p``;
    same arithmetic as the per-server screen). Computed in one pass for the levels not cached
    yet, the same floats level by level; cached (read-only)."""
    key = (workload, levels.tobytes())
    stacked = _stacked.get(key)
    if stacked is not None:
        return stacked
    todo = [float(x) for x in levels if (workload, float(x)) not in _terms]
    if todo:
        rates, buckets = _vertices(workload)
        p = np.array(todo)
        scaled = p * SLO_SCALE
        higher = (workload.slo_s < p).astype(np.float64)
        # (P, 3, W, L): scaled · (w_s [higher] + λ), as for one level
        c = scaled[:, None, None, None] * (
            _WEIGHTS.T[None, :, :, None] * higher[:, None, None, None]
            + _LAMBDAS[None, None, None, :]
        )
        h = (buckets[None, :, None, None, :] + c[..., None] * rates[None, :, None, None, :]).min(
            axis=4
        )
        h = h.reshape(len(todo), 3, _NWL)
        for level, terms in zip(todo, h, strict=True):
            _terms[(workload, level)] = terms
        while len(_terms) > _CACHE_SIZE:
            del _terms[next(iter(_terms))]
    stacked = np.stack([_terms[(workload, float(x))] for x in levels])
    stacked.flags.writeable = False  # shared by every caller asking for these levels
    _stacked[key] = stacked
    while len(_stacked) > _CACHE_SIZE:
        del _stacked[next(iter(_stacked))]
    return stacked


def _means(workload: TenantCurves) -> NDArray[np.float64]:
    return _vertices(workload)[0][:, 0]


class OracleClusterScreen:
    """Per-server sums of the screen's terms; :meth:`infeasible` tests a newcomer everywhere."""

    def __init__(self, max_devices: int, max_levels: int = MAX_LEVELS) -> None:
        self.max_devices = max_devices
        self.max_levels = max_levels
        self.active = True
        self.levels: list[float] = []
        self._level_index: dict[float, int] = {}
        self._servers: list[tuple[Sequence[Placed], int]] = []
        d = max_devices
        # Σ h over tenants at or above the level; Σ mean rates over the tenants below it on the
        # path; tenants of the level on the device. Axes: server, level, device[, (w, λ)].
        self.inside: NDArray[np.float64] = np.zeros((0, 0, d, _NWL))
        self.lower: NDArray[np.float64] = np.zeros((0, 0, d))
        self.count: NDArray[np.int64] = np.zeros((0, 0, d), dtype=np.int64)

    # ------------------------------------------------------------------ bookkeeping
    def add_server(self, devices: int) -> None:
        """A new empty server at the end of the cluster."""
        self._servers.append(((), devices))
        n = len(self._servers)
        if n > self.inside.shape[0]:  # grow the capacity geometrically
            extra = max(n, 16)
            self.inside = _grow(self.inside, 0, extra)
            self.lower = _grow(self.lower, 0, extra)
            self.count = _grow(self.count, 0, extra)

    def _add_level(self, level: float) -> bool:
        if len(self.levels) >= self.max_levels:
            self.active = False
            return False
        self._level_index[level] = len(self.levels)
        self.levels.append(level)
        self.inside = _grow(self.inside, 1, 1)
        self.lower = _grow(self.lower, 1, 1)
        self.count = _grow(self.count, 1, 1)
        for i in range(len(self._servers)):
            if self._servers[i][0]:
                self._fill(i, [len(self.levels) - 1])
        return True

    def set_server(self, i: int, tenants: Sequence[Placed], devices: int) -> None:
        """Server ``i`` now holds ``tenants`` (recomputes its sums)."""
        self._servers[i] = (list(tenants), devices)
        if not self.active:
            return
        for t in tenants:
            if t.workload.slo_s not in self._level_index and not self._add_level(t.workload.slo_s):
                return
        self._fill(i, range(len(self.levels)))

    def _fill(self, i: int, levels: Sequence[int]) -> None:
        """Recompute server ``i``'s sums at ``levels`` (all levels at once, tenant by tenant:
        the same additions in the same order as level by level)."""
        tenants, devices = self._servers[i]
        lv = np.array(list(levels), dtype=np.int64)
        p = np.array(self.levels)[lv]
        inside = np.zeros((len(lv), self.max_devices, _NWL))
        lower = np.zeros((len(lv), self.max_devices))
        count = np.zeros((len(lv), self.max_devices), dtype=np.int64)
        for t in tenants:
            at = t.workload.slo_s <= p  # the levels where the tenant is at or above
            if at.any():
                h = tenant_terms_at(t.workload, p[at])  # (A, 3, WL)
                inside[at, :devices] += (h[:, 0] + h[:, 2])[:, None, :]
                inside[at, t.device] += h[:, 1]
                count[at, t.device] += t.workload.slo_s == p[at]
            if not at.all():
                m = _means(t.workload)
                lower[~at, :devices] += m[0] + m[2]
                lower[~at, t.device] += m[1]
        self.inside[i, lv] = inside
        self.lower[i, lv] = lower
        self.count[i, lv] = count

    # ------------------------------------------------------------------ the test
    def infeasible(
        self, workload: TenantCurves, device: int, servers: NDArray[np.int64]
    ) -> NDArray[np.bool_]:
        """For each server in ``servers``: does the screen prove that ``workload`` on ``device``
        makes that server's LP infeasible? (All ``False`` when the screen is off.)"""
        out = np.zeros(len(servers), dtype=bool)
        slo = workload.slo_s
        if not self.active or (slo not in self._level_index and not self._add_level(slo)):
            return out
        if len(servers) == 0:
            return out
        lv = np.array([k for k, p in enumerate(self.levels) if p >= slo], dtype=np.int64)
        p = np.array(self.levels)[lv]
        scaled = p * SLO_SCALE  # (Lc,)
        h = tenant_terms_at(workload, p)  # (Lc, 3, WL)
        new = np.zeros((len(lv), self.max_devices, _NWL))
        new += (h[:, 0] + h[:, 2])[:, None, :]
        new[:, device] += h[:, 1]
        total = self.inside[np.ix_(servers, lv)]  # (C, Lc, D, WL), a copy
        avail = 3 * RATE_CAP - self.lower[np.ix_(servers, lv)]  # (C, Lc, D)
        # inside + new − (SLO'_p λ) · avail, in place (the same operations in the same order)
        total += new[None]
        total -= (scaled[None, :, None, None] * _LAMBDA_OF_COLUMN) * avail[..., None]
        proof = total.max(axis=3) > scaled[None, :, None] * (1 + TOLERANCE)  # (C, Lc, D)
        row = self.count[np.ix_(servers, lv)] > 0
        row[:, lv == self._level_index[slo], device] = True  # the newcomer's own row
        return np.any(proof & row, axis=(1, 2))


class OracleCertificateStore:
    """Certificates per server and slot; :meth:`refuted` tests a newcomer on many servers."""

    def __init__(self, max_devices: int) -> None:
        self.max_devices = max_devices
        s, k, v = 0, KEEP, 1
        self.alive: NDArray[np.bool_] = np.zeros((s, k), dtype=bool)
        self.constant: NDArray[np.float64] = np.zeros((s, k))
        self.scale: NDArray[np.float64] = np.zeros((s, k))
        self.cap: NDArray[np.float64] = np.zeros((s, k, 2 + max_devices))
        self.only_slo: NDArray[np.float64] = np.full((s, k), np.nan)  # NaN: for every newcomer
        self.only_device: NDArray[np.int64] = np.zeros((s, k), dtype=np.int64)
        # per R variable (padding: NaN level, zero multipliers)
        self.level: NDArray[np.float64] = np.full((s, k, v), np.nan)
        self.device: NDArray[np.int64] = np.zeros((s, k, v), dtype=np.int64)
        self.rb: NDArray[np.float64] = np.zeros((s, k, v, 3))
        self.eq57: NDArray[np.float64] = np.zeros((s, k, v))
        self.next_slot: NDArray[np.int64] = np.zeros(s, dtype=np.int64)
        self.servers = 0

    # ------------------------------------------------------------------ bookkeeping
    def add_server(self) -> None:
        """A new server (no certificates) at the end of the cluster."""
        self.servers += 1
        if self.servers > len(self.alive):  # grow the capacity geometrically
            extra = max(self.servers, 16)
            for name in ("alive", "constant", "scale", "cap", "only_device", "device", "rb"):
                setattr(self, name, _grow(getattr(self, name), 0, extra))
            self.eq57 = _grow(self.eq57, 0, extra)
            self.next_slot = _grow(self.next_slot, 0, extra)
            self.only_slo = _grow(self.only_slo, 0, extra, np.nan)
            self.level = _grow(self.level, 0, extra, np.nan)

    def add(self, server: int, certificates: Sequence[Certificate]) -> None:
        """Keep ``certificates`` of ``server`` (overwriting its oldest)."""
        for cert in certificates:
            v = len(cert.level)
            if v > self.level.shape[2]:
                extra = v - self.level.shape[2]
                self.level = _grow(self.level, 2, extra, np.nan)
                self.device = _grow(self.device, 2, extra)
                self.rb = _grow(self.rb, 2, extra)
                self.eq57 = _grow(self.eq57, 2, extra)
            k = int(self.next_slot[server])
            self.next_slot[server] = (k + 1) % KEEP
            self.alive[server, k] = True
            self.constant[server, k] = cert.constant
            self.scale[server, k] = cert.scale
            self.cap[server, k] = 0.0
            self.cap[server, k, : len(cert.cap)] = cert.cap
            self.only_slo[server, k] = np.nan if cert.only is None else cert.only[0]
            self.only_device[server, k] = 0 if cert.only is None else cert.only[1]
            self.level[server, k] = np.nan
            self.level[server, k, :v] = cert.level
            self.device[server, k] = 0
            self.device[server, k, :v] = cert.device
            self.rb[server, k] = 0.0
            self.rb[server, k, :v] = cert.rb
            self.eq57[server, k] = 0.0
            self.eq57[server, k, :v] = cert.eq57

    def clear(self, server: int) -> None:
        """Drop the certificates of ``server`` (a tenant left it: its rows changed)."""
        self.alive[server] = False

    def joined(self, server: int, tenant: Placed) -> None:
        """``tenant`` now sits on ``server``: add its terms to the server's certificates."""
        alive = self.alive[server]
        w = tenant.workload
        if not alive.any() or oracle_region_vertices(w) is None:
            return
        bound = self._bounds(w, tenant.device, np.array([server]), every=True)[0]
        self.scale[server, alive] += np.abs(bound[alive] - self.constant[server, alive])
        self.constant[server, alive] = bound[alive]
        same = (self.only_slo[server] == w.slo_s) & (self.only_device[server] == tenant.device)
        self.only_slo[server, same] = np.nan

    # ------------------------------------------------------------------ the test
    def refuted(self, newcomer: Placed, servers: NDArray[np.int64]) -> NDArray[np.bool_]:
        """For each server in ``servers``: does one of its certificates prove that the LP with
        ``newcomer`` added is infeasible?"""
        w, device = newcomer.workload, newcomer.device
        if len(servers) == 0 or oracle_region_vertices(w) is None:
            return np.zeros(len(servers), dtype=bool)
        bound = self._bounds(w, device, servers, every=False)
        return np.any(bound > MARGIN * self.scale[servers], axis=1)

    def _bounds(
        self, w: TenantCurves, device: int, servers: NDArray[np.int64], *, every: bool
    ) -> NDArray[np.float64]:
        """``L(y)`` of each certificate of ``servers`` with ``w`` on ``device``: ``(C, KEEP)``;
        ``-inf`` for empty slots and (unless ``every``) certificates that do not apply."""
        verts = oracle_region_vertices(w)
        assert verts is not None
        rates, buckets = verts
        slo = w.slo_s
        level = self.level[servers]  # (C, K, V)
        on_device = self.device[servers] == device
        lower = level > slo
        inside = level >= slo
        rb = self.rb[servers]  # (C, K, V, 3)
        eq57 = self.eq57[servers]
        cap = self.cap[servers]
        c = np.stack(
            [
                cap[..., 0] + (rb[..., 0] * lower).sum(axis=2),
                cap[..., 2 + device] + (rb[..., 1] * (lower & on_device)).sum(axis=2),
                cap[..., 1] + (rb[..., 2] * lower).sum(axis=2),
            ],
            axis=2,
        )  # (C, K, 3)
        d_path = (eq57 * inside).sum(axis=2)
        d = np.stack([d_path, (eq57 * (inside & on_device)).sum(axis=2), d_path], axis=2)
        terms = (c[..., None] * rates + d[..., None] * buckets).min(axis=3).sum(axis=2)
        bound = self.constant[servers] + terms
        usable = self.alive[servers]
        if not every:
            only = self.only_slo[servers]
            usable &= np.isnan(only) | ((only == slo) & (self.only_device[servers] == device))
        return np.where(usable, bound, -np.inf)


def _grow(a: NDArray[_T], axis: int, extra: int, fill: float = 0) -> NDArray[_T]:
    """``a`` with ``extra`` slices of ``fill`` appended along ``axis``."""
    shape = list(a.shape)
    shape[axis] = extra
    return np.concatenate([a, np.full(shape, fill, dtype=a.dtype)], axis=axis)


# ---------------------------------------------------------------------- certificates' core


@lru_cache(maxsize=65536)
def oracle_region_vertices(
    workload: TenantCurves,
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Lower-left vertices of the tenant's region at each stage, where ``c r + d b`` with
    ``c, d >= 0`` is smallest: the r-b curve between ``r_lo`` (the larger of its first rate and
    the rate where its bucket falls to ``SLO' = 0.999 SLO``) and ``r = 0.999``. Rates and
    buckets, shape ``(3, K)`` (padding repeats the last point); ``None`` if the region is empty
    at some stage (the tenant cannot meet its SLO).
    """
    slo = workload.slo_s * SLO_SCALE
    rs, bs = [], []
    for stage in STORAGE_PATH:
        c = workload.curves[stage]
        if c.rates[0] > RATE_CAP:
            return None
        b_cap = float(c.bucket_at(RATE_CAP))
        if b_cap > slo:
            return None
        keep = c.rates < RATE_CAP
        r = np.append(c.rates[keep], RATE_CAP)
        b = np.append(c.buckets[keep], b_cap)
        over = b > slo
        if over.any():
            k = int(np.nonzero(over)[0][-1])  # the last point above SLO'; the next is below
            r_lo = r[k] + (slo - b[k]) * (r[k + 1] - r[k]) / (b[k + 1] - b[k])
            r = np.concatenate([[min(max(r_lo, r[k]), r[k + 1])], r[k + 1 :]])
            b = np.concatenate([[slo], b[k + 1 :]])
        rs.append(r)
        bs.append(b)
    k = max(_K, *(len(r) for r in rs))
    return pad_edge(rs, k), pad_edge(bs, k)


def oracle_region_min(
    workload: TenantCurves, c: NDArray[np.float64], d: NDArray[np.float64]
) -> float:
    """``Σ_s min_{region_s} (c_s r + d_s b)`` for ``c, d >= 0`` of shape ``(3,)``."""
    verts = oracle_region_vertices(workload)
    if verts is None:
        return np.inf
    rates, buckets = verts
    return float((c[:, None] * rates + d[:, None] * buckets).min(axis=1).sum())


def oracle_regions_min(workloads: Sequence[TenantCurves], cd: NDArray[np.float64]) -> list[float]:
    """:func:`region_min` of each workload with ``c = cd[j, :, 0]``, ``d = cd[j, :, 1]``, in one
    numpy pass when the vertex arrays share their shape (the same floats)."""
    verts = [oracle_region_vertices(w) for w in workloads]
    if not verts or any(v is None or v[0].shape != (3, _K) for v in verts):
        return [oracle_region_min(w, cd[j, :, 0], cd[j, :, 1]) for j, w in enumerate(workloads)]
    rates = np.stack([v[0] for v in verts if v is not None])
    buckets = np.stack([v[1] for v in verts if v is not None])
    values = cd[:, :, 0, None] * rates + cd[:, :, 1, None] * buckets
    return [float(x) for x in values.min(axis=2).sum(axis=1)]


def oracle_proves(cert: Certificate, workload: TenantCurves, device: int) -> bool:
    """:meth:`Certificate.proves` with the oracle's region."""
    if cert.only is not None and cert.only != (workload.slo_s, device):
        return False
    c, d = cert.coefficients(workload.slo_s, device)
    return bool(cert.constant + oracle_region_min(workload, c, d) > MARGIN * cert.scale)


def oracle_from_dual_ray(
    tenants: Sequence[Placed],
    r_vars: Sequence[tuple[float, int]],
    devices: int,
    lp: LpRows,
    ray: NDArray[np.float64],
) -> list[Certificate]:
    """The certificates of the LP of ``tenants`` (the last one the newcomer) from HiGHS's dual
    ray ``ray`` (one entry per row); empty if the ray does not prove infeasibility this way.

    The rows of a level and path that only the newcomer brought (no other tenant of its SLO on
    its device) are not rows of the LP with another newcomer: a certificate using them is kept
    for newcomers of the same SLO and device only (``only``), and a second one without them,
    valid for every newcomer, is kept if it still proves this LP infeasible.
    """
    n_rb = 6 * len(tenants)
    row_of = np.repeat(np.arange(len(lp.start) - 1), np.diff(lp.start))
    coupling = np.isfinite(lp.row_upper)
    new = (tenants[-1].workload.slo_s, tenants[-1].device)
    own_rows = np.zeros(len(lp.row_upper), dtype=bool)
    if new not in {(t.workload.slo_s, t.device) for t in tenants[:-1]}:
        own_rows[row_of[lp.index == n_rb + list(r_vars).index(new)]] = True
    out: list[Certificate] = []
    for sign in (1.0, -1.0):
        y = np.where(coupling, np.maximum(sign * ray, 0.0), 0.0)
        variants = [(y, new if own_rows.any() else None)]
        if own_rows.any():
            variants.append((np.where(own_rows, 0.0, y), None))
        for yv, only in variants:
            if yv.any():
                cert = oracle_reduce(tenants, r_vars, devices, lp, row_of, yv, only)
                if oracle_proves(cert, tenants[-1].workload, tenants[-1].device):
                    out.append(cert)
        if out:
            break
    return out


def oracle_reduce(
    tenants: Sequence[Placed],
    r_vars: Sequence[tuple[float, int]],
    devices: int,
    lp: LpRows,
    row_of: NDArray[np.int64],
    y: NDArray[np.float64],
    only: tuple[float, int] | None,
) -> Certificate:
    """The certificate of multipliers ``y`` (zero outside the coupling rows)."""
    n = len(tenants)
    n_rb = 6 * n
    v = len(r_vars)
    g = np.bincount(lp.index, weights=y[row_of] * lp.value, minlength=n_rb + v)
    # classify the rows with a multiplier: capacity (no R), rate bound (R with -1), Eq. 5.7
    rows = np.nonzero(y)[0]
    first = lp.index[lp.start[rows]].astype(np.int64)
    last = lp.index[lp.start[rows + 1] - 1].astype(np.int64)
    last_value = lp.value[lp.start[rows + 1] - 1]
    stage = (first % 6) // 2
    q = queue_ids(tenants)
    cap = np.zeros(2 + devices)
    rb = np.zeros((v, 3))
    eq57 = np.zeros(v)
    is_cap = last < n_rb
    is_rb = ~is_cap & (last_value < 0)
    is_57 = ~is_cap & ~is_rb
    np.add.at(cap, q[first[is_cap] // 6, stage[is_cap]], y[rows[is_cap]])
    np.add.at(rb, (last[is_rb] - n_rb, stage[is_rb]), y[rows[is_rb]])
    np.add.at(eq57, last[is_57] - n_rb, y[rows[is_57]])
    terms = [-float(y @ np.where(np.isfinite(lp.row_upper), lp.row_upper, 0.0))]
    cd = np.maximum(g[:n_rb].reshape(n, 3, 2), 0.0)
    terms += oracle_regions_min([t.workload for t in tenants[:-1]], cd[: n - 1])
    terms.append(float(np.minimum(0.0, RATE_CAP * g[n_rb:]).sum()))
    return Certificate(
        constant=float(sum(terms)),
        scale=float(np.abs(terms).sum() + y.sum()),
        cap=cap,
        level=np.array([r[0] for r in r_vars], dtype=np.float64),
        device=np.array([r[1] for r in r_vars], dtype=np.int64),
        rb=rb,
        eq57=eq57,
        only=only,
    )
