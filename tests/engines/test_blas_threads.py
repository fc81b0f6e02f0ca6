"""The Contraction Engine's worker threads run BLAS on one thread each and leave the caller's BLAS as they found
it (issues 15, 24).

visa splits a batch of products over worker threads and limits the BLAS numpy loaded to one thread for the
batch (``threadpoolctl``, whatever the BLAS).  In the OpenBLAS numpy ships the count is the whole process's, so a
limit that stayed would leave the user's own numpy products on one thread for the rest of the process (the GEMM
example's own check took twice as long): the count is given back after every batch.
"""

from __future__ import annotations

import numpy as np
import pytest

from visa.engines.contraction import blas


def _threads() -> int:
    ctl = blas._controller()
    assert ctl is not None
    return int(ctl.info()[0]["num_threads"])


def _with_workers() -> None:
    if blas._pool() is None:
        pytest.skip("no BLAS threadpoolctl controls in this numpy, or one core: products run in the caller")


def test_a_batch_gives_the_thread_count_back() -> None:
    _with_workers()
    before = _threads()
    a = np.ones((4, 8, 16), np.float32)
    w = np.ones((4, 16, 8), np.float32)
    np.testing.assert_array_equal(blas.batched_matmul(a, w), np.matmul(a, w))
    assert _threads() == before
    seen: list[int] = []
    blas.parallel_pieces(4, 1, lambda lo, hi: seen.append(hi - lo))
    assert sorted(seen) == [1, 1, 1, 1] and _threads() == before


def test_the_workers_run_blas_on_one_thread() -> None:
    _with_workers()
    inside: list[int] = []
    blas.parallel_pieces(2, 1, lambda lo, hi: inside.append(_threads()))
    assert inside == [1, 1]


def test_the_batch_equals_numpys_product() -> None:
    rng = np.random.default_rng(24)
    a = rng.standard_normal((6, 5, 7)).astype(np.float32)
    w = rng.standard_normal((6, 7, 3)).astype(np.float32)
    np.testing.assert_array_equal(blas.batched_matmul(a, w), np.matmul(a, w))


def test_a_small_contraction_runs_in_the_callers_thread() -> None:
    """Under ``SMALL_WORK`` multiply-adds the pieces run here (a decode step's GEMV: a hand-off costs more than the
    product, issue 25); at or over it, on the workers."""
    import threading

    here = threading.get_ident()
    small: list[int] = []
    blas.parallel_pieces(4, 1, lambda lo, hi: small.append(threading.get_ident()), work=blas.SMALL_WORK - 1)
    assert small == [here] * 4
    _with_workers()
    large: list[int] = []
    blas.parallel_pieces(4, 1, lambda lo, hi: large.append(threading.get_ident()), work=blas.SMALL_WORK)
    assert len(large) == 4 and here not in large
