"""Reproductions of the documents' results: one module per figure, each writing a table and a
plot (``python -m tailbound.experiments.<name> --out DIR``).

WorkloadCompactor (thesis ch. 5): :mod:`~tailbound.experiments.wc_fig54` (servers per policy),
:mod:`~tailbound.experiments.wc_fig55` (each workload's replayed 99.9th percentile against its SLO,
Figs. 5.5–5.6), :mod:`~tailbound.experiments.wc_fff` (fast-first-fit against first-fit),
:mod:`~tailbound.experiments.wc_departures` (arrivals and departures, Fig. 5.10),
:mod:`~tailbound.experiments.wc_ssds` (several SSDs per server, Fig. 5.11).
SNC-Meister (thesis ch. 4): :mod:`~tailbound.experiments.snc_fig47` (latency against tenants),
:mod:`~tailbound.experiments.snc_fig48` (dependent tenants),
:mod:`~tailbound.experiments.snc_fig413` (number of nines, SNC-Meister and DNC),
``snc_fig411`` (against OPT), ``snc_fig412`` (small requests), ``snc_fig415`` (cluster size),
:mod:`~tailbound.experiments.snc_storage` (with a storage stage, §4.4.6), ``snc_fig417``
(storage at 99.9% and 90% SLOs, Figs. 4.17/4.18), ``snc_fig419`` (random SLO draws).
PriorityMeister (thesis ch. 3; harness :mod:`~tailbound.experiments.pm_common`):
:mod:`~tailbound.experiments.pm_fig33` (policies at the tail), ``pm_fig35`` (burstiness),
``pm_fig31`` (violations over time), ``pm_fig32`` (one token bucket or several),
``pm_fig36`` (misbehaving tenant), ``pm_fig37`` (network bottleneck at the server egress),
``pm_fig37_ingress`` (at the client ingress), ``pm_fig37_cake`` (Cake there, with and without
its network extension), ``pm_fig38`` (a constant-seek storage model), ``pm_fig39`` (SLO
permutations), ``pm_fig512``
(against WorkloadCompactor's placement).
Nested QoS (Wang's thesis ch. 4; harness :mod:`~tailbound.experiments.nested_qos_common`):
:mod:`~tailbound.experiments.nested_qos_fig43` (a bursty workload, §4.2–4.3),
``nested_qos_bandwidth`` (the bandwidth of well-behaved workloads, Fig. 4.3),
``nested_qos_capacity`` (capacity for 90% within deadline, §4.4, Fig. 4.9(a)),
``nested_qos_mixed`` (the same for dissimilar workloads, Fig. 4.9(b)), ``nested_qos_fig48``
(one workload's capacity, graduated against single-level, Fig. 4.8), ``nested_qos_disk``
(§4.5.1 on the disk model).
PSLO (EuroSys 2016; harness :mod:`~tailbound.experiments.pslo_common`):
:mod:`~tailbound.experiments.pslo_fig4` (depth sweep), ``pslo_fig5`` (policies, uniform SLOs),
``pslo_fig6`` (mixed per-VM SLOs).
Aequitas (SIGCOMM 2022; setups :mod:`~tailbound.experiments.aequitas_33host` and
:mod:`~tailbound.experiments.aequitas_baselines`): ``aequitas_fig10`` (Eq. 1), ``aequitas_fig11``
(SLO sweep), ``aequitas_fig12`` (33 hosts), ``aequitas_fig14`` (share sweep and convergence),
``aequitas_fig16`` (share ∝ 1/ρ), ``aequitas_fig17`` (fairness), ``aequitas_fig19`` (strict
priority), ``aequitas_fig20`` (mixed sizes), ``aequitas_fig21`` (144 hosts, 25× bursts),
``aequitas_fig22`` (against pFabric, QJump, SPQ), ``aequitas_equilibrium`` (where the AIMD
settles: miss fraction against admitted RPCs per increment window). ``tailbound experiment
LIST`` lists every module here with a ``main(argv)``.
"""
