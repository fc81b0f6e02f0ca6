"""Index arrays that are strided views in disguise (issue 24).

Several engines derive, once per configuration, an array of flat positions: which input element each output
reads (a gather), or where each result goes (a scatter).  Moving data through such an array costs a read of the
index and a scattered access per element.  When the array is *affine* — position ``p`` of it, written in a
mixed radix ``(p_0, …, p_k)``, holds ``base + Σ p_d · stride_d`` — the same data moves through a strided view
(``numpy.lib.stride_tricks.as_strided``) instead: no index, no scattered access.  :func:`factor` finds that
radix (the coarsest one) or says there is none; it is exact (every entry is checked), so a caller may take
the view whenever it answers.

>>> import numpy as np
>>> idx = (np.arange(3)[:, None, None] * 100 + np.arange(4)[None, :, None] * 0 + np.arange(5)[None, None, :])
>>> factor(idx.reshape(1, -1))
((3, 4, 5), ((100, 0, 1),), (0,))
>>> factor(np.array([[0, 2, 1, 3, 7]])) is None
True
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Factors", "factor", "split_inner", "view"]

IntArray = npt.NDArray[np.int64]

#: ``(sizes, strides, bases)``: sizes outermost first; ``strides[r]`` the strides of row ``r`` (same order);
#: ``bases[r]`` its first entry.
Factors = tuple[tuple[int, ...], tuple[tuple[int, ...], ...], tuple[int, ...]]

MAX_DIMS = 24  # more factors than this is no structure worth a view (and numpy's limit is 64 dimensions)


def factor(rows: IntArray) -> Factors | None:
    """The coarsest mixed radix in which every row of ``rows`` (``(m, n)``, integers) is affine with the same
    sizes: ``rows[r, flat(p)] = bases[r] + Σ_d p_d · strides[r][d]``; None when there is none (within
    :data:`MAX_DIMS` factors).  O(m · n)."""
    rest = np.asarray(rows, dtype=np.int64)
    m, n = rest.shape
    if n == 0:
        return None
    sizes: list[int] = []
    strides: list[IntArray] = []
    while rest.shape[1] > 1:
        length = rest.shape[1]
        step = rest[:, 1] - rest[:, 0]
        same = (np.diff(rest, axis=1) == step[:, None]).all(axis=0)
        k = int(np.argmin(same)) + 1 if not same.all() else length  # the run every row keeps its first step
        while length % k:
            k -= 1
        if k < 2 or len(sizes) >= MAX_DIMS:
            return None
        block = rest.reshape(m, length // k, k)
        if not np.array_equal(block, block[:, :, :1] + step[:, None, None] * np.arange(k, dtype=np.int64)):
            return None
        sizes.append(k)
        strides.append(step)
        rest = np.ascontiguousarray(block[:, :, 0])
    sizes.reverse()
    strides.reverse()
    per_row = tuple(tuple(int(s[r]) for s in strides) for r in range(m))
    return tuple(sizes), per_row, tuple(int(b) for b in rest[:, 0])


def split_inner(f: Factors, inner: int) -> tuple[Factors, int] | None:
    """``f`` with its innermost factors covering exactly ``inner`` positions (one factor split in two if it
    straddles that boundary), and how many innermost factors they are; None when no split does it."""
    sizes, strides, bases = f
    out_sizes = list(sizes)
    out_strides = [list(s) for s in strides]
    covered, count = 1, 0
    for d in range(len(sizes) - 1, -1, -1):
        if covered == inner:
            break
        size = sizes[d]
        if covered * size <= inner:
            covered *= size
            count += 1
            continue
        part = inner // covered
        if inner % covered or size % part:
            return None
        out_sizes[d:d + 1] = [size // part, part]
        for s in out_strides:
            s[d:d + 1] = [s[d] * part, s[d]]
        covered, count = inner, count + 1
        break
    if covered != inner:
        return None
    return (tuple(out_sizes), tuple(tuple(s) for s in out_strides), bases), count


def view(flat: npt.NDArray[np.generic], sizes: tuple[int, ...], strides: tuple[int, ...], base: int
         ) -> npt.NDArray[np.generic]:
    """The strided view of the contiguous 1-D ``flat`` whose entry ``p`` is ``flat[base + Σ p_d · stride_d]``
    (strides in elements; writable when ``flat`` is and no stride is 0)."""
    assert flat.ndim == 1 and flat.flags.c_contiguous
    item = flat.itemsize
    writeable = flat.flags.writeable and all(strides)
    return np.lib.stride_tricks.as_strided(flat[base:], shape=sizes, strides=tuple(s * item for s in strides),
                                           writeable=writeable)
