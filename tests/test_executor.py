"""The executor (tailbound.executor.Runner): this process, a local pool and a Dask cluster give
the same results, shared inputs travel once, and a worker killed mid-run changes nothing."""

from __future__ import annotations

import math
import multiprocessing
import operator
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.executor import SCHEDULER_ENV, Runner, scheduler_address
from tailbound.experiments.bound_sweep import Outcome, run_seed, sweep
from tailbound.profiles import SsdProfile

#: Quick scenarios of the soundness sweep (0.1–2 s each), both policies among them.
SEEDS = (0, 2, 4, 5, 7, 6)


@pytest.fixture(scope="module")
def profile(wc62_dir: Path) -> SsdProfile:
    return SsdProfile.load(wc62_dir / "profile_ssd.json")


@pytest.fixture(scope="module")
def serial(profile: SsdProfile, data_dir: Path) -> list[Outcome]:
    return sweep(SEEDS, profile, data_dir)


@pytest.fixture
def in_process() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def same(a: list[Outcome], b: list[Outcome]) -> bool:
    """Same cases and the same ratio for every tenant (the seconds differ)."""
    return [(o.case, o.ratios) for o in a] == [(o.case, o.ratios) for o in b]


def test_shared_input_reaches_every_task_in_each_mode(in_process: Any) -> None:
    shared = [np.arange(k, k + 3) for k in range(7)]
    want = [s.sum() for s in shared]
    for runner in (Runner(), Runner(jobs=2), Runner(client=in_process)):
        got = [int(v.sum()) for v in runner.map(operator.getitem, range(7), shared=shared)]
        assert got == want, runner.describe()


def test_results_come_as_they_finish_with_their_index() -> None:
    done = dict(Runner(jobs=2).run(pow, [3, 1, 2], shared=10))
    assert done == {0: 1000, 1: 10, 2: 100}


def test_a_task_error_is_raised_not_retried(in_process: Any) -> None:
    for runner in (Runner(), Runner(jobs=2), Runner(client=in_process)):
        with pytest.raises(ValueError, match="math domain error"):
            runner.map(math.log, [1.0, 2.0], shared=-1.0)  # log(-1, base)


def test_the_scheduler_comes_from_the_option_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert scheduler_address(None) is None
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://10.0.0.1:8786")
    assert scheduler_address(None) == "tcp://10.0.0.1:8786"
    assert scheduler_address("tcp://h:1") == "tcp://h:1"
    with pytest.raises(ValueError, match="jobs"):
        Runner(jobs=0)


def test_in_process_cluster_gives_the_local_pools_sweep(
    serial: list[Outcome], profile: SsdProfile, data_dir: Path, in_process: Any
) -> None:
    pooled = sweep(SEEDS, profile, data_dir, Runner(jobs=2))
    assert same(pooled, serial)
    clustered = sweep(SEEDS, profile, data_dir, Runner(client=in_process))
    assert same(clustered, serial)
    assert any(o.ratios for o in serial)  # the comparison has something to compare


def test_a_local_pool_process_killed_mid_sweep_changes_nothing(
    serial: list[Outcome], profile: SsdProfile, data_dir: Path
) -> None:
    runner = Runner(jobs=2)
    got: dict[int, Outcome] = {}
    for i, outcome in runner.run(run_seed, SEEDS, shared=(profile, data_dir, "tighter")):
        if not got:  # after the first result, while others run: kill a worker
            children = multiprocessing.active_children()
            assert children
            os.kill(children[0].pid, signal.SIGKILL)  # type: ignore[arg-type]
        got[i] = outcome
    assert runner.restarts == 1
    assert same([got[i] for i in range(len(SEEDS))], serial)


def test_two_worker_processes_survive_a_killed_worker(
    serial: list[Outcome], profile: SsdProfile, data_dir: Path
) -> None:
    """The integration test: a LocalCluster of two worker processes (as ``dask-worker``s on
    two hosts), one killed mid-sweep; the nanny restarts it, the scheduler re-runs its tasks."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        pids = client.run(os.getpid)
        runner = Runner(client=client)
        assert runner.workers == 2
        got: dict[int, Outcome] = {}
        for i, outcome in runner.run(run_seed, SEEDS, shared=(profile, data_dir, "tighter")):
            if not got:
                os.kill(next(iter(pids.values())), signal.SIGKILL)
            got[i] = outcome
    assert same([got[i] for i in range(len(SEEDS))], serial)
