"""``visa.tune``: sweep a kernel's choices in parallel, locally or on a Dask cluster.

A kernel writer has choices — tile sizes along K and M, one or two TRF halves (double buffering, manual
L4151–4154), which context loads what, the chips of a tensor-parallel split, a butterfly or a ring AllReduce
(L7382–7610) — and wants the fastest correct one without a chip.  Each choice is a simulation; a sweep runs
them all::

    from visa.tune import sweep

    def point(k_tile: int, double_buffer: bool) -> KernelReport:
        ctx = Context.acquire()
        ...                                  # build, launch and check the kernel for these choices
        return ctx.report()

    result = sweep(point, {"k_tile": [128, 256, 512], "double_buffer": [True, False]})
    result.best, result.table(), result.plot(), result.to_csv("sweep.csv")

``fn(**params)`` runs once per point of the grid (or of a list of points, or of a seeded sample of a large grid
with ``samples=``).  A point whose own check fails, or that visa refuses, records its error and the sweep goes
on.  The points run on ``executor`` — any :class:`concurrent.futures.Executor` — by default a pool of local
worker processes that each import visa once and keep its plan caches warm across the points they run
(``workers=1`` runs them one after another in this process).  For a cluster, Dask brings the scheduler, the
workers, retries and its dashboard: ``sweep(..., dask="tcp://scheduler:8786")``, or
``executor=distributed.Client(address).get_executor()`` (``pip install 'tcp-visa[dask]'``).

Results are cached on disk (:mod:`visa.tune.cache`), keyed by the swept function's module source, the point and
visa's version: an interrupted sweep resumes, an edited kernel runs again.  ``visa tune FILE:FUNCTION --grid
k_tile=256,512`` is the same from the command line (:mod:`visa.tune.command`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from visa.errors import VisaError
from visa.tune.cache import Cache, default_dir
from visa.tune.result import Row, SweepResult
from visa.tune.space import Point, Space, grid
from visa.tune.worker import Measured, Target, default_threads, run_point, target_of
from visa.validate import expect_callable, expect_instance, expect_int

__all__ = ["sweep", "Row", "SweepResult", "grid"]


def _row(params: Point, m: Measured) -> Row:
    return Row(params, m.cycles, m.utilisation, m.bound, m.wall, m.peak_memory, m.error)


@contextlib.contextmanager
def _executor(executor: Executor | None, dask: Any, workers: int | None) -> Iterator[Executor | None]:
    """The executor the points run on: the caller's, a Dask client's, a local process pool, or none (one after
    another in this process, ``workers=1``); the ones made here are closed after the sweep."""
    if executor is not None:
        yield executor
        return
    if dask is not None:
        try:
            import distributed
        except ImportError as err:
            raise VisaError("a sweep on a Dask cluster needs the distributed package", call="visa.tune.sweep",
                            fix="pip install 'tcp-visa[dask]'") from err
        client = dask if isinstance(dask, distributed.Client) else distributed.Client(dask)  # type: ignore[no-untyped-call]
        try:
            yield client.get_executor()  # type: ignore[no-untyped-call]
        finally:
            if client is not dask:
                client.close()  # type: ignore[no-untyped-call]
        return
    if workers == 1:
        yield None
        return
    # spawn: a fresh interpreter per worker (fork would copy this process's BLAS and engine threads mid-state)
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def sweep(fn: Callable[..., Any], space: Space, *, executor: Executor | None = None, dask: Any = None,
          workers: int | None = None, threads: int | None = None, samples: int | None = None,
          seed: int | None = 0, cache: bool | str | Path = True, progress: bool = False,
          on_row: Callable[[Row, int, int], None] | None = None) -> SweepResult:
    """Run ``fn(**point)`` for every point of ``space`` and return the rows in point order (module docstring).

    ``space``: ``{"name": [values…]}`` (every combination, the last name fastest) or a list of points;
    ``samples=N`` draws N points of a grid at random (seeded by ``seed``).  ``fn`` returns the kernel's
    ``KernelReport`` (``ctx.report()``), its cycles, or a dict with ``"cycles"``; it must be defined at module
    level (a worker loads it by name, or a script's by its source).

    ``executor`` / ``dask`` / ``workers`` choose where the points run (default: a local pool of
    ``os.cpu_count()`` worker processes; ``workers=1``: this process).  ``threads``: BLAS and Contraction
    Engine threads per point (default on a local pool: the cores shared out among the workers; else no limit).
    ``cache``: True (``~/.cache/visa/tune``, or ``$VISA_TUNE_CACHE``), a folder, or False.  ``progress`` shows a
    bar on a terminal; ``on_row(row, done, total)`` is called as each point finishes.
    """
    _check(fn, executor, workers, threads, cache, progress, on_row)
    target: Target = target_of(fn)
    points = grid(space, samples=samples, seed=seed)
    names = list(dict.fromkeys(k for p in points for k in p))
    store = None if cache is False else Cache(default_dir() if cache is True else Path(cache), target.fingerprint)
    rows: list[Row | None] = [None] * len(points)
    done = 0
    with _progress(progress, len(points)) as tick:

        def finish(i: int, row: Row) -> None:
            nonlocal done
            rows[i] = row
            done += 1
            tick(row)
            if on_row is not None:
                on_row(row, done, len(points))

        todo = []
        for i, p in enumerate(points):
            hit = store.get(p) if store is not None else None
            if hit is None:
                todo.append(i)
            else:
                finish(i, Row(p, cached=True, **{k: hit.get(k) for k in ("cycles", "utilisation", "bound",
                                                                           "peak_memory", "error")},
                              wall=float(hit.get("wall") or 0.0)))
        if todo:
            local = executor is None and dask is None
            per_point = threads if threads is not None or not local else \
                default_threads(workers or os.cpu_count() or 1) if workers != 1 else None
            with _executor(executor, dask, workers) as ex:
                if ex is None:
                    for i in todo:
                        row = _row(points[i], run_point(target, points[i], per_point))
                        if store is not None:
                            store.put(points[i], row.stored())
                        finish(i, row)
                else:
                    futures: dict[Future[Measured], int] = {
                        ex.submit(run_point, target, points[i], per_point): i for i in todo}
                    try:
                        for fut in as_completed(futures):
                            i = futures[fut]
                            err = fut.exception()
                            if err is not None:  # the worker itself failed (killed, out of memory): not cached
                                finish(i, Row(points[i], None, error=f"worker failed: {type(err).__name__}: {err}"))
                                continue
                            row = _row(points[i], fut.result())
                            if store is not None:
                                store.put(points[i], row.stored())
                            finish(i, row)
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        raise
    return SweepResult([r for r in rows if r is not None], names)


def _check(fn: object, executor: object, workers: object, threads: object, cache: object, progress: object,
           on_row: object) -> None:
    """Refuse :func:`sweep`'s arguments of the wrong type or out of range before any point runs (each was a raw
    ``TypeError``/``ValueError`` of the pool or the cache, or, for ``threads``, every point's recorded error)."""
    call = "visa.tune.sweep"
    expect_callable(fn, "fn", call=call)
    if executor is not None:
        expect_instance(executor, Executor, "executor", call=call, expected="a concurrent.futures.Executor")
    if workers is not None:  # (workers=0 silently meant every core: ``0 or os.cpu_count()``)
        expect_int(workers, "workers", call=call, lo=1, fix="pass workers=1 or more, or None for every core")
    if threads is not None:
        expect_int(threads, "threads", call=call, lo=1, fix="pass threads=1 or more, or None")
    expect_instance(cache, (bool, str, Path), "cache", call=call, expected="True, False or a folder (str, Path)")
    expect_instance(progress, bool, "progress", call=call)
    if on_row is not None:
        expect_callable(on_row, "on_row", call=call)


@contextlib.contextmanager
def _progress(show: bool, total: int) -> Iterator[Callable[[Row], None]]:
    """A progress bar (rich, on a terminal) that advances as points finish; a no-op when not asked for."""
    if not show:
        yield lambda row: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    best: list[int] = []
    with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}")) as bar:
        task = bar.add_task("", total=total)

        def tick(row: Row) -> None:
            if row.ok and (not best or (row.cycles or 0) < best[0]):
                best[:] = [row.cycles or 0]
            bar.update(task, advance=1, description=f"best {best[0]:,} cycles" if best else "")

        yield tick
