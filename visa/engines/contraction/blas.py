"""Batched matrix products for the Reducer's arithmetic: one BLAS thread per worker, the batch split between them.

The Contraction Engine's products are many small matrix products (one per slice, e.g. 64 × 2048 · 2048 × 32).
numpy hands each to BLAS, and OpenBLAS splits every one of them over its threads, which then wait for one
another at every call; on a machine whose cores are shared this waiting dominates (measured on the 2-core
development VM under load: a 2 G-MAC batch took 4–8 s with OpenBLAS's threads against 0.4–0.9 s with one
thread).  Here the batch is split into as many contiguous parts as there are cores (at most
:data:`MAX_WORKERS`), and each part runs in a worker thread while the BLAS numpy loaded is limited to one thread
(``threadpoolctl``, which finds and controls OpenBLAS, MKL, BLIS or FlexiBLAS, whatever build of numpy it is;
issue 24).  numpy releases the GIL inside ``matmul``, so the parts run in parallel.  Without ``threadpoolctl``
(the ``blas`` extra) or without a BLAS it can control, the product is numpy's own ``matmul``.  The result is the
same either way: every output element is one BLAS dot product of the same operands; only which thread computes
it changes.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

try:  # the ``blas`` extra
    import threadpoolctl
except ImportError:  # pragma: no cover - without it the products run on numpy's own threads
    threadpoolctl = None  # type: ignore[assignment]

__all__ = ["batched_matmul", "parallel_pieces", "workers", "MAX_WORKERS", "SMALL_WORK"]

#: Worker threads at most (the product of a batch is split into this many parts).
MAX_WORKERS = 4

#: Multiply-adds below which :func:`parallel_pieces` runs its pieces in the caller's thread (a host-side choice:
#: about a millisecond of one core's products, the order of a hand-off to a worker on a loaded machine).
SMALL_WORK = 1 << 22

_lock = threading.Lock()
_state: dict[str, Any] = {}
_limit: list[int] = []  # the innermost :func:`workers` limit, when one is in force


@contextlib.contextmanager
def workers(n: int) -> Iterator[None]:
    """At most ``n`` worker threads for the batches run inside the block (one: none, the caller computes), so
    that several simulations sharing a machine (:mod:`visa.tune`'s worker processes) do not each spread over
    every core.  Which thread computes a product never changes its bytes."""
    _limit.append(max(1, n))
    try:
        yield
    finally:
        _limit.pop()


def _parts(n: int) -> int:
    """Parts to split a batch of ``n`` into: the workers, within the limit in force."""
    return min(int(_state["workers"]), _limit[-1] if _limit else n, n)


def _controller() -> Any:
    """A ``threadpoolctl`` controller of the BLAS numpy loaded, or None (no ``threadpoolctl``, or no BLAS it
    controls)."""
    if "ctl" not in _state:
        ctl = None
        if threadpoolctl is not None:
            found = threadpoolctl.ThreadpoolController().select(user_api="blas")
            ctl = found if found.lib_controllers else None
        _state["ctl"] = ctl
    return _state["ctl"]


def _pool() -> ThreadPoolExecutor | None:
    with _lock:
        if "pool" not in _state:
            workers = min(MAX_WORKERS, os.cpu_count() or 1)
            _state["pool"] = (None if _controller() is None or workers < 2 else
                              ThreadPoolExecutor(workers, thread_name_prefix="visa-blas"))
            _state["workers"] = workers
        pool: ThreadPoolExecutor | None = _state["pool"]
        return pool


def batched_matmul(a: npt.NDArray[Any], w: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``np.matmul(a, w)`` for operands with the same leading (batch) shape, split over worker threads."""
    lead = a.shape[:-2]
    batch = math.prod(lead)
    pool = _pool() if a.ndim > 2 and w.shape[:-2] == lead and batch >= 2 and _limit[-1:] != [1] else None
    if pool is None:
        plain: npt.NDArray[Any] = np.matmul(a, w)
        return plain
    if lead[0] >= 2:  # split the first batch axis (no copy)
        a3, w3, n = a, w, lead[0]
    else:
        a3, w3, n = a.reshape(batch, *a.shape[-2:]), w.reshape(batch, *w.shape[-2:]), batch
    out = np.empty((*a3.shape[:-2], a.shape[-2], w.shape[-1]), dtype=np.result_type(a, w))
    parts = _parts(n)
    bounds = [n * k // parts for k in range(parts + 1)]

    def run(k: int) -> None:
        lo, hi = bounds[k], bounds[k + 1]
        np.matmul(a3[lo:hi], w3[lo:hi], out=out[lo:hi])

    _on_workers(pool, [(run, (k,)) for k in range(parts)])
    return out.reshape(*lead, a.shape[-2], w.shape[-1])


def _on_workers(pool: ThreadPoolExecutor, calls: list[tuple[Callable[..., None], tuple[int, ...]]]) -> None:
    """Run the calls on the worker threads and wait for them, BLAS limited to one thread for the duration of the
    batch and given its count back after it (in OpenBLAS 0.3.31, which numpy 2.4 ships, the count is the whole
    process's: had it stayed at one, the caller's own numpy products would have run on one thread for the rest of
    the process — measured: a 512 × 1024 · 1024 × 512 float32 product 2.1 → 4.1 ms)."""
    with _controller().limit(limits=1, user_api="blas"):
        for f in [pool.submit(call, *args) for call, args in calls]:
            f.result()


def parallel_pieces(n: int, piece: int, fn: Callable[[int, int], None], *, work: int | None = None) -> None:
    """Run ``fn(lo, hi)`` over ``[0, n)`` in pieces of at most ``piece`` items, on the worker threads (each
    with one BLAS thread), or in this thread when there are none.  The pieces must write disjoint outputs.

    ``work`` (the multiply-adds of the whole call, when the caller knows them): below :data:`SMALL_WORK` the pieces
    run in this thread — handing a GEMV of a decode step to the workers and waiting for them costs more than the
    product (issue 25: a few hundred such calls per SmolLM2 decode step, each a thread hand-off and a BLAS
    thread-count change, on a loaded 2-core machine whose workers wait to be scheduled).  The bytes are the same."""
    bounds = list(range(0, n, max(1, piece))) + [n]
    pairs = list(zip(bounds, bounds[1:], strict=False))
    small = work is not None and work < SMALL_WORK
    pool = _pool() if len(pairs) > 1 and _limit[-1:] != [1] and not small else None
    if pool is None:
        for lo, hi in pairs:
            fn(lo, hi)
        return
    _on_workers(pool, [(fn, pair) for pair in pairs])
