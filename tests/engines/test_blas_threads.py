"""The Contraction Engine's worker threads leave the caller's BLAS as they found it (issue 15).

visa splits a batch of products over worker threads, each using one BLAS thread.  In the OpenBLAS numpy ships,
``openblas_set_num_threads_local`` set the count of every thread, so after the first batch the user's own numpy
products ran on one thread for the rest of the process (the GEMM example's own check took twice as long).
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable

import numpy as np
import pytest

from visa.engines.contraction import blas


def _get_threads() -> Callable[[], int] | None:
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*.so*"))):
        lib = ctypes.CDLL(path)
        for name in ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return lambda: int(fn())
    return None


def test_a_batch_gives_the_thread_count_back() -> None:
    get = _get_threads()
    if get is None or blas._pool() is None:
        pytest.skip("no OpenBLAS thread control in this numpy, or one core: products run in the caller")
    before = get()
    a = np.ones((4, 8, 16), np.float32)
    w = np.ones((4, 16, 8), np.float32)
    np.testing.assert_array_equal(blas.batched_matmul(a, w), np.matmul(a, w))
    assert get() == before
    seen: list[int] = []
    blas.parallel_pieces(4, 1, lambda lo, hi: seen.append(hi - lo))
    assert sorted(seen) == [1, 1, 1, 1] and get() == before
