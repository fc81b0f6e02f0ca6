"""Fast paths of the Contraction Engine's sums and bookkeeping (issue 24), beside
:mod:`visa.engines.contraction.compute`, whose reference they stand for; ``tests/engines/test_fast_compute.py``
checks each against it with the path switched off.

- ``contraction.f32-sums``: the reference sums integer products in float64 (exact below 2^53; a float32 BLAS
  product per run of at most 2^24 / (max|a| · max|w|) terms with ``contraction.exact-f32``,
  :func:`visa.engines.contraction.fast_compute.exact_f32_terms`) and converts the
  sums to i32 through int64 with a wrap.  When every output sums at most that many products — the operands'
  storage types bound each product, the reduced digits count them — every partial sum is an integer below
  2^24, exact in float32 in any order: the sums stay float32 (half the memory) and convert to i32 directly
  (no value can wrap).
- ``contraction.whole-output``: an accumulation that computes every (Chip, Cluster, Slice) position and fills
  every lane of its packets (as many Rows as lanes) hands on the product's own array, instead of copying it
  into a zeroed stream; an output with no poisoned product hands on its known-mask as a broadcast of True
  (docs/manual-notes.md "All-known streams") instead of an array of Trues.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["F32_SUMS", "WHOLE_OUTPUT", "sum_type", "to_output"]

F32_SUMS = fastpaths.register("contraction.f32-sums", "integer contractions whose every sum stays below 2^24 "
                                                      "summed and converted in float32 instead of float64")
WHOLE_OUTPUT = fastpaths.register("contraction.whole-output", "an accumulation over every slice and lane handed on "
                                                              "as the product itself, an all-known mask as a "
                                                              "broadcast, not copied into a zeroed stream")


def sum_type(ctype: type[np.floating[Any]], terms: int, exact_terms: int) -> type[np.floating[Any]]:
    """The type the products are summed in: float32 instead of the reference's float64 when the path is on and
    each output sums ``terms`` products, at most ``exact_terms`` (how many a float32 sum of these operands holds
    exactly; 0 when they are not integers)."""
    if F32_SUMS.on and ctype is np.float64 and 0 < terms <= exact_terms:
        return np.float32
    return ctype


def to_output(values: npt.NDArray[Any], storage: np.dtype[Any]) -> npt.NDArray[Any] | None:
    """Integer sums kept in float32 by :func:`sum_type` (every one below 2^24) as ``storage`` (i32), or None."""
    if values.dtype != np.float32 or storage.kind != "i":
        return None
    return values.astype(storage)
