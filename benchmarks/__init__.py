"""tailbound's benchmarks: each ``bench_<thing>.py`` runs as ``python -m benchmarks.bench_<thing>``
and prints a Markdown table; ``python -m benchmarks.run`` runs them all (``make bench``)."""
