"""One way to run many independent tasks: in this process, a local process pool, or a Dask cluster.

Sweeps of experiments, characterisation of many traces and partitioned placement are coarse,
independent, pure tasks (a seed and an index in, a value out). :class:`Runner` runs them behind
a plain :class:`concurrent.futures.Executor`:

- ``jobs=1`` (the default): in this process, one after another (no pool, no pickling);
- ``jobs=N``: a local :class:`~concurrent.futures.ProcessPoolExecutor` of ``N`` spawned processes;
- ``scheduler="tcp://host:8786"`` (or the environment variable ``DASK_SCHEDULER_ADDRESS``): a
  Dask distributed cluster, through ``Client.get_executor()`` (docs/scale-out.md); or an existing
  ``distributed.Client`` (a ``LocalCluster`` in the tests and benchmarks).

The same code path for all three: :meth:`Runner.run` submits ``fn(shared, item)`` for every item
and yields ``(index, result)`` as each finishes, with a progress bar on stderr driven by the
finished futures. ``shared`` (traces, curves, a scenario) is shipped **once** per worker, never
pickled per task: the local pool hands it to each process's initializer, Dask scatters it to
every worker (``Client.scatter(..., broadcast=True)``) and passes the resulting future.

A worker dying mid-run does not change the result, since the tasks are pure and seeded: Dask's
scheduler re-runs the lost worker's tasks elsewhere (up to
``distributed.scheduler.allowed-failures``
times, 3 by default); the local pool, when one of its processes dies
(:class:`~concurrent.futures.process.BrokenProcessPool`), is started again and the unfinished
tasks resubmitted, up to :data:`RESTARTS` times. An exception raised by a task is not retried (a
pure task would raise it again): it is raised by :meth:`Runner.run`.

>>> with Runner() as runner:
...     sorted(runner.run(pow, [1, 2, 3], shared=2))
[(0, 2), (1, 4), (2, 8)]
>>> Runner(jobs=2).describe()
'a local pool of 2 processes'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, TypeVar

#: The environment variable naming a Dask scheduler (as Dask's own tools read it).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
#: How many times a local pool whose process died is started again within one :meth:`Runner.run`.
RESTARTS = 3

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

#: The shared value of a local pool's worker process (set once, by its initializer).
_SHARED: Any = None


def _install(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def _call_local(fn: Callable[[Any, T], R], item: T) -> R:
    return fn(_SHARED, item)


def _call(fn: Callable[[Any, T], R], shared: Any, item: T) -> R:
    return fn(shared, item)


def scheduler_address(explicit: str | None = None) -> str | None:
    """The Dask scheduler to use: ``explicit`` (``--scheduler``), else ``$DASK_SCHEDULER_ADDRESS``,
    else ``None`` (run locally)."""
    if explicit:
        return explicit
    return os.environ.get(SCHEDULER_ENV) or None


@dataclass
class Runner:
    """Runs pure tasks ``fn(shared, item)`` in this process, a local pool or a Dask cluster.

    Parameters
    ----------
    jobs
        Local worker processes (1: run in this process). Ignored on a Dask cluster.
    scheduler
        A Dask scheduler's address (``tcp://host:8786``); ``None`` reads
        ``$DASK_SCHEDULER_ADDRESS``, and runs locally when that is unset too.
    client
        An existing ``distributed.Client`` (takes precedence over ``scheduler``; not closed by
        :meth:`close`).
    progress
        Draw a progress bar on stderr (``desc`` of :meth:`run` names it).
    """

    jobs: int = 1
    scheduler: str | None = None
    client: Any = None
    progress: bool = False
    #: Local pool restarts after a dead process, over this runner's life (for the report).
    restarts: int = 0
    _own_client: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {self.jobs}")
        if self.client is None:
            address = scheduler_address(self.scheduler)
            if address is not None:
                from distributed import Client

                self.client = Client(address)
                self._own_client = True

    @property
    def distributed(self) -> bool:
        """Whether the tasks run on a Dask cluster."""
        return self.client is not None

    @property
    def workers(self) -> int:
        """How many tasks run at once: the cluster's worker threads, or ``jobs``."""
        if self.client is not None:
            return max(1, sum(self.client.nthreads().values()))
        return self.jobs

    def describe(self) -> str:
        """Where the tasks run, for a log line."""
        if self.client is not None:
            return f"the Dask cluster at {self.client.scheduler.address} ({self.workers} threads)"
        if self.jobs == 1:
            return "this process"
        return f"a local pool of {self.jobs} processes"

    def run(
        self,
        fn: Callable[[S, T], R],
        items: Iterable[T],
        *,
        shared: S = None,  # type: ignore[assignment]
        desc: str = "tasks",
        unit: str = "task",
    ) -> Iterator[tuple[int, R]]:
        """``(index, fn(shared, item))`` for every item, as each finishes (in input order when
        running in this process). ``fn`` must be a module-level function (it is pickled by
        reference); ``shared`` is sent once per worker. The progress bar counts finished tasks."""
        todo = list(items)
        bar = self._bar(len(todo), desc, unit)
        try:
            if self.client is not None:
                stream = self._run_dask(fn, todo, shared)
            elif self.jobs == 1 or len(todo) <= 1:
                stream = ((i, fn(shared, item)) for i, item in enumerate(todo))
            else:
                stream = self._run_local(fn, todo, shared)
            for done in stream:
                if bar is not None:
                    bar.update(1)
                yield done
        finally:
            if bar is not None:
                bar.close()

    def map(
        self,
        fn: Callable[[S, T], R],
        items: Iterable[T],
        *,
        shared: S = None,  # type: ignore[assignment]
        desc: str = "tasks",
        unit: str = "task",
    ) -> list[R]:
        """:meth:`run`'s results in input order."""
        todo = list(items)
        out: list[Any] = [None] * len(todo)
        for i, value in self.run(fn, todo, shared=shared, desc=desc, unit=unit):
            out[i] = value
        return out

    def _bar(self, total: int, desc: str, unit: str) -> Any:
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)

    def _run_local(
        self, fn: Callable[[Any, T], R], todo: list[T], shared: Any
    ) -> Iterator[tuple[int, R]]:
        from multiprocessing import get_context

        pending = dict(enumerate(todo))
        restarts = 0
        while pending:
            pool = ProcessPoolExecutor(
                min(self.jobs, len(pending)),
                mp_context=get_context("spawn"),
                initializer=_install,
                initargs=(shared,),
            )
            broken = False
            try:
                futures = {pool.submit(_call_local, fn, item): i for i, item in pending.items()}
                for future in as_completed(futures):
                    try:
                        value = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    i = futures[future]
                    del pending[i]
                    yield i, value
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            if broken and pending:
                if restarts >= RESTARTS:
                    raise BrokenProcessPool(
                        f"a worker process died {restarts + 1} times; "
                        f"{len(pending)} tasks left unfinished"
                    )
                restarts += 1
                self.restarts += 1

    def _run_dask(
        self, fn: Callable[[Any, T], R], todo: list[T], shared: Any
    ) -> Iterator[tuple[int, R]]:
        handle = self.client.scatter(shared, broadcast=True, hash=False)
        executor: Executor = self.client.get_executor(pure=False)
        futures: dict[Future[R], int] = {}
        try:
            futures = {executor.submit(_call, fn, handle, item): i for i, item in enumerate(todo)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            for future in futures:
                future.cancel()
            self.client.cancel([handle])

    def close(self) -> None:
        """Close a client this runner opened (from an address)."""
        if self._own_client and self.client is not None:
            self.client.close()
            self.client = None
            self._own_client = False

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
