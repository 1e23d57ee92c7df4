"""Every server's infeasibility certificates (:mod:`tailbound.policies.certificates`), tested for
a newcomer on many servers at once (our addition to wcPlacer, thesis §5.2.3; exact).

Each server has :data:`~tailbound.policies.certificates.KEEP` slots, filled round-robin with the
certificates of the LPs that refused a newcomer there. When a tenant joins the server its terms
are added to every certificate (they are ``>= 0``, so the proofs only get stronger; a certificate
kept for newcomers of one SLO and device applies to all once a tenant of that SLO sits on that
device); when a tenant leaves, the server's certificates are dropped.

The certificates live in Rust (``tailbound._core.WcCertificateStore``,
``crates/tailbound-core/src/wc_screen/store.rs``); this class is its thin wrapper. The former
numpy implementation is the test oracle (``tests/policies/screen_oracle.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from tailbound._core import WcCertificateStore
from tailbound.policies.certificates import KEEP, MARGIN, Certificate
from tailbound.policies.server import Placed
from tailbound.policies.wc_tenant import prepared


class CertificateStore:
    """Certificates per server and slot; :meth:`refuted` tests a newcomer on many servers."""

    def __init__(self, max_devices: int) -> None:
        self.max_devices = max_devices
        self._core = WcCertificateStore(max_devices, KEEP, MARGIN)

    def fork(self) -> CertificateStore:
        """An independent copy (for :meth:`Placer.fork
        <tailbound.policies.placement.Placer.fork>`): servers are shared until one side
        changes them."""
        new = copy.copy(self)
        new._core = self._core.fork()
        return new

    def __deepcopy__(self, memo: dict[int, object]) -> CertificateStore:
        """``copy.deepcopy`` (of a whole :class:`~tailbound.policies.placement.Placer`, say): a
        :meth:`fork`, since the Rust state cannot be copied field by field."""
        return self.fork()

    # ------------------------------------------------------------------ bookkeeping
    def add_server(self) -> None:
        """A new server (no certificates) at the end of the cluster."""
        self._core.add_server()

    def add(self, server: int, certificates: Sequence[Certificate]) -> None:
        """Keep ``certificates`` of ``server`` (overwriting its oldest)."""
        for c in certificates:
            self._core.add(
                server,
                c.constant,
                c.scale,
                np.asarray(c.cap, dtype=np.float64),
                np.asarray(c.level, dtype=np.float64),
                np.asarray(c.device, dtype=np.int64),
                np.asarray(c.rb, dtype=np.float64).reshape(-1, 3),
                np.asarray(c.eq57, dtype=np.float64),
                c.only,
            )

    def clear(self, server: int) -> None:
        """Drop the certificates of ``server`` (a tenant left it: its rows changed)."""
        self._core.clear(server)

    def joined(self, server: int, tenant: Placed) -> None:
        """``tenant`` now sits on ``server``: add its terms to the server's certificates."""
        self._core.joined(server, prepared(tenant.workload), tenant.device)

    # ------------------------------------------------------------------ the test
    def refuted(self, newcomer: Placed, servers: NDArray[np.int64]) -> NDArray[np.bool_]:
        """For each server in ``servers``: does one of its certificates prove that the LP with
        ``newcomer`` added is infeasible?"""
        return self._core.refuted(
            prepared(newcomer.workload),
            newcomer.device,
            np.ascontiguousarray(servers, dtype=np.int64),
        )

    def bounds(self, newcomer: Placed, server: int, *, every: bool = False) -> NDArray[np.float64]:
        """``L(y)`` of each slot of ``server`` with ``newcomer`` (``-inf`` for empty slots and,
        unless ``every``, certificates that do not apply to it)."""
        return self._core.bounds(prepared(newcomer.workload), newcomer.device, server, every)
