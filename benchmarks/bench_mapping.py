"""Vectorised mapping evaluation over 2^20 positions against numpy's reshape/transpose (issue 2).

The mapping ``m["C, A / 4, B, A % 4"]`` over A = 64, B = 128, C = 128 stores a tensor with a permuted,
split axis.  Evaluating it at every buffer position gives, for each position, the tensor index it holds;
numpy computes the same permutation as the flat tensor index of every position with a reshape and a
transpose.  Both produce the same 2^20-element int64 array (checked).
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet

A, B, C = 64, 128, 128


def visa_flat_index() -> np.ndarray:
    mapping = AxisSet(A=A, B=B, C=C).m["C, A / 4, B, A % 4"]
    ev = mapping.evaluate()
    return (ev.coords["A"] * B + ev.coords["B"]) * C + ev.coords["C"]


def numpy_flat_index() -> np.ndarray:
    flat = np.arange(A * B * C, dtype=np.int64).reshape(A // 4, 4, B, C)
    return flat.transpose(3, 0, 2, 1).reshape(-1)


def visa_coords_only() -> object:
    return AxisSet(A=A, B=B, C=C).m["C, A / 4, B, A % 4"].evaluate()


def run() -> list[str]:
    assert np.array_equal(visa_flat_index(), numpy_flat_index())
    theirs = best_of(numpy_flat_index)
    return [
        report("mapping.evaluate() 2^20 positions (coordinates)", best_of(visa_coords_only), theirs, 3),
        report("mapping.evaluate() 2^20 positions (flat index)", best_of(visa_flat_index), theirs, 3),
    ]


if __name__ == "__main__":
    print("\n".join(run()))
