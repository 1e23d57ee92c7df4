"""The deterministic Hölder search: one latency expression compiled into the Rust core.

The reference implementation searches the Hölder parameters of a dependent expression at
random (:meth:`tailbound.snc.latency.LatencyBound.latency` replays it: 25 rounds of ``10 k``
candidates, each with a full ``theta`` search). This module compiles the same expression tree
(:mod:`tailbound.snc.bounds`: MMPP arrivals, constant-rate servers, aggregate, leftover, output,
convolution, Theorem 1 at the root) into a ``_core.SncTree`` and minimises the latency over
``theta`` and every parameter jointly, without randomness (``tailbound_core::snc_tree``: a scan
at ``x = 2``, one coordinate scan per parameter, then Nelder–Mead restarted until it stops
gaining). Every ``theta > 0`` and Hölder pair gives a valid bound, so the result is a bound
whatever the search finds; ``tests/snc/test_tree.py`` checks that it is, per flow, no looser than
the reference search's on several networks.

The search is selected with ``search="deterministic"`` in :func:`tailbound.snc.network.
flow_latencies` (the default of ``tailbound bound``; ``--arrival-model reference`` keeps the
reference's search, whose numbers match the reference implementation's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tailbound.snc.bounds import (
    STEP_S,
    Aggregate,
    Bound,
    ConstantService,
    Convolution,
    Leftover,
    Output,
)
from tailbound.snc.mmpp import MmppArrival

SEARCHES = ("reference", "deterministic")

_KIND = {Aggregate: 0, Leftover: 1, Output: 2, Convolution: 3}


class Unsupported(Exception):
    """A node the core's tree does not know (e.g. a ``FixedBound`` of the tests)."""


@dataclass(frozen=True)
class Searched:
    """The deterministic search's result: latency (seconds), ``theta``, every parameter's
    ``x`` (in the order of the expression's unique dependent nodes), evaluations spent."""

    latency_s: float
    theta: float
    x: tuple[float, ...]
    evaluations: int


def compile_tree(arrival: Bound, service: Bound, root: Bound, eps: float) -> object:
    """``_core.SncTree`` of the latency of ``arrival`` through ``service`` (``root`` is the
    latency's own node, dependent or not); raises :class:`Unsupported` for unknown nodes."""
    from tailbound._core import SncTree

    tree = SncTree()
    sources: dict[int, int] = {}
    params: dict[int, int] = {}

    def param(node: Bound) -> int | None:
        if not node.dependent:
            return None
        return params.setdefault(id(node), len(params))

    def add(node: Bound) -> int:
        if isinstance(node, MmppArrival):
            key = id(node.model)
            if key not in sources:
                m = node.model
                sources[key] = tree.add_source(
                    np.ascontiguousarray(m.generator(), dtype=np.float64),
                    np.ascontiguousarray(m.p_request, dtype=np.float64),
                    np.ascontiguousarray(m.mu, dtype=np.float64),
                )
            return tree.add_leaf(sources[key])
        if isinstance(node, ConstantService):
            return tree.add_constant(node.rate_per_step)
        kind = _KIND.get(type(node))
        if kind is None or node.operands is None:
            raise Unsupported(type(node).__name__)
        p = param(node)  # the parent's index first, as the reference's node order
        first, second = (add(o) for o in node.operands)
        return tree.add_op(kind, first, second, p)

    p = param(root)
    tree.set_root(add(arrival), add(service), p, eps)
    return tree


def search_latency(arrival: Bound, service: Bound, root: Bound, eps: float) -> Searched:
    """The deterministic search of the latency of ``arrival`` through ``service`` at violation
    probability ``eps`` (module docstring)."""
    tree = compile_tree(arrival, service, root, eps)
    steps, theta, x, evaluations = tree.search()  # type: ignore[attr-defined]
    return Searched(float(steps) * STEP_S, float(theta), tuple(float(v) for v in x), evaluations)
