"""Every server's infeasibility certificates (:mod:`tailbound.policies.certificates`) in one set
of arrays, tested for a newcomer on many servers at once (our addition to wcPlacer, thesis
§5.2.3; exact).

Each server has :data:`~tailbound.policies.certificates.KEEP` slots, filled round-robin with the
certificates of the LPs that refused a newcomer there. When a tenant joins the server its terms
are added to every certificate (they are ``>= 0``, so the proofs only get stronger; a certificate
kept for newcomers of one SLO and device applies to all once a tenant of that SLO sits on that
device); when a tenant leaves, the server's certificates are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from tailbound.policies.certificates import KEEP, MARGIN, Certificate, region_vertices
from tailbound.policies.server import Placed
from tailbound.policies.workload import TenantCurves

_T = TypeVar("_T", bound=np.generic)


class CertificateStore:
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
        if not alive.any() or region_vertices(w) is None:
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
        if len(servers) == 0 or region_vertices(w) is None:
            return np.zeros(len(servers), dtype=bool)
        bound = self._bounds(w, device, servers, every=False)
        return np.any(bound > MARGIN * self.scale[servers], axis=1)

    def _bounds(
        self, w: TenantCurves, device: int, servers: NDArray[np.int64], *, every: bool
    ) -> NDArray[np.float64]:
        """``L(y)`` of each certificate of ``servers`` with ``w`` on ``device``: ``(C, KEEP)``;
        ``-inf`` for empty slots and (unless ``every``) certificates that do not apply."""
        verts = region_vertices(w)
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
