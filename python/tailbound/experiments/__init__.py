"""Experiments: one module per reproduced result, each writing a table and a plot.

WorkloadCompactor (thesis ch. 5): :mod:`~tailbound.experiments.wc_fig54` (servers per policy),
:mod:`~tailbound.experiments.wc_fff` (fast-first-fit against first-fit),
:mod:`~tailbound.experiments.wc_departures` (arrivals and departures, Fig. 5.10),
:mod:`~tailbound.experiments.wc_ssds` (several SSDs per server, Fig. 5.11).
"""
