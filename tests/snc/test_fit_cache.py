"""MMPP fits kept on disk by trace content (FitCache.disk)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tailbound.model import Slo, Tenant, TenantSet
from tailbound.snc.mmpp import MmppModel
from tailbound.snc.tenants import FitCache
from tailbound.traces import read_trace

FIELDS = ("transition", "p_request", "mu", "lambdas", "state_of_interval")


def write_trace(path: Path, seed: int) -> None:
    """A wc62-format trace (``arrival_ns,0xSIZE,DiskRead|DiskWrite``) of bursty arrivals."""
    rng = np.random.default_rng(seed)
    rates = rng.choice([50, 400], size=60)
    lines = []
    for s, rate in enumerate(rates):
        for t in np.sort(rng.uniform(s, s + 1, rng.poisson(rate))):
            op = "DiskRead" if rng.random() < 0.7 else "DiskWrite"
            lines.append(f"{int(t * 1e9)},0x{int(rng.choice([4096, 65536])):x},{op}")
    path.write_text("\n".join(lines) + "\n")


def tenants(trace: Path) -> TenantSet:
    t = Tenant(name="A", slo=Slo(0.05, 0.999), trace=trace, client_host="c", server="s")
    return TenantSet((t,), 125e6)


def same(a: MmppModel, b: MmppModel) -> bool:
    return a.a == b.a and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def test_fits_are_read_back_exactly_and_keyed_by_content(tmp_path: Path) -> None:
    trace = tmp_path / "a.txt"
    write_trace(trace, 1)
    tset = tenants(trace)
    spec = tset.tenants[0]
    cache = tmp_path / "cache"
    first = FitCache(disk=cache)
    fitted = {d: first.model(spec, d, tset) for d in ("in", "out")}
    assert first.disk_hits == 0
    assert len(list((cache / "mmpp").glob("*.fit"))) == 2

    again = FitCache(disk=cache)
    for d in ("in", "out"):
        assert same(again.model(spec, d, tset), fitted[d])
    assert again.disk_hits == 2
    assert not again.traces, "a fit read from the cache does not read the trace"

    # A copy elsewhere has the same content: found. Another content at the same path: fitted.
    copy = tmp_path / "copy.txt"
    copy.write_bytes(trace.read_bytes())
    found = FitCache(disk=cache)
    found.model(tenants(copy).tenants[0], "in", tenants(copy))
    assert found.disk_hits == 1
    write_trace(trace, 2)
    changed = FitCache(disk=cache)
    model = changed.model(spec, "in", tset)
    assert changed.disk_hits == 0
    assert not same(model, fitted["in"])
    assert same(model, FitCache().model(spec, "in", tset))


def test_primed_traces_are_not_cached(tmp_path: Path) -> None:
    trace = tmp_path / "a.txt"
    write_trace(trace, 3)
    tset = tenants(trace)
    spec = tset.tenants[0]
    cache = FitCache(disk=tmp_path / "cache")
    # An experiment primes the cache with the traces it decides from (e.g. first halves).
    cache.traces[str(trace)] = read_trace(trace).slice_time(0.0, 30.0)
    cache.model(spec, "in", tset)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------ fits straight from the file
def test_file_fits_are_the_reader_path_fits(tmp_path: Path, data_dir: Path) -> None:
    """The core's fit of a trace file (no Python trace: what ``tailbound bound`` runs) is bit
    for bit the fit of the trace the reader builds, in both directions."""
    from tailbound.snc.mmpp import fit_mmpp
    from tailbound.snc.tenants import read_requests, work

    for trace in (data_dir / "wc62" / "traces" / "trace0012.txt", tmp_path / "a.txt"):
        if trace.parent == tmp_path:
            write_trace(trace, 4)
        tset = tenants(trace)
        spec = tset.tenants[0]
        cache = FitCache()
        req = read_requests(trace)
        for d in ("in", "out"):
            assert same(cache.model(spec, d, tset), fit_mmpp(req.arrival_ns, work(req, d, tset)))
        assert not cache.traces and not cache.requests, "fitted from the file, not a trace"


def test_files_the_reader_would_change_go_through_it(tmp_path: Path) -> None:
    """A trace the reader sorts (with its warning) or rejects is read by the reader: the same
    fit as the sorted trace's, the same error naming the line."""
    import pytest

    from tailbound.errors import TraceFormatError
    from tailbound.traces import UnsortedTraceWarning

    trace = tmp_path / "a.txt"
    write_trace(trace, 5)
    lines = trace.read_text().splitlines()
    shuffled = tmp_path / "shuffled.txt"
    shuffled.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    tset = tenants(shuffled)
    cache = FitCache()
    with pytest.warns(UnsortedTraceWarning):
        model = cache.model(tset.tenants[0], "in", tset)
    assert str(shuffled) in cache.traces  # read by the reader
    assert same(model, FitCache().model(tenants(trace).tenants[0], "in", tenants(trace)))

    bad = tmp_path / "bad.txt"
    bad.write_text(f"{lines[0]}\n{lines[1]}\n12,0xZZ,DiskRead\n")
    with pytest.raises(TraceFormatError, match="line 3"):
        FitCache().model(tenants(bad).tenants[0], "in", tenants(bad))
