"""Fast path ``vector.inter-factors-digits`` (issue 24): the strided form of an inter-slice reduce's plan read
off the mappings' digits, instead of factoring its index arrays.

``vector.inter-strided`` (:mod:`visa.engines.vector.fast_inter`) runs the Inter-Slice Block through strided views:
once per configuration it factors the members array (groups × ring) and the output's (position, group) pairs into
their coarsest mixed radix (:func:`visa.engines.affine.factor`, a pass over every entry; a ring sum of
4 × 262,144 i32 factored 1M members and 2M output positions on its first launch).  When the plan itself came from
the digits (``vector.inter-plan-digits``, :mod:`visa.engines.vector.fast_inter_plan`), those arrays are sums of
digits by construction: the members are ``base + Σ i_j · weight_j`` over the kept then the ring digits, the valid
outputs the box ``offset_d ≤ i_d < offset_d + count_d`` of the output's digits, each reading group rank
``Σ i_d · rank_d``.  Their coarsest radix is those digits with the one-valued ones dropped and each pair of
neighbours merged where the outer one's strides are the inner one's times its size (in every row): what
:func:`~visa.engines.affine.factor` finds, without reading an entry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from visa import fastpaths
from visa.engines.affine import MAX_DIMS, Factors

__all__ = ["FACTORS", "coarsest"]

FACTORS = fastpaths.register("vector.inter-factors-digits", "the inter-slice reduce's strided views from the "
                                                            "mappings' digits instead of factoring its index arrays")


def coarsest(dims: Sequence[tuple[int, tuple[int, ...]]], bases: tuple[int, ...]) -> Factors | None:
    """:func:`visa.engines.affine.factor` of the rows ``bases[r] + Σ_d i_d · strides_d[r]`` (``dims`` outermost
    first: ``(size, strides per row)``, C order over the ``i_d``) without building them: the digits of more than
    one value, merged from the innermost out where ``strides_outer == size_inner · strides_inner`` in every row;
    None where :func:`~visa.engines.affine.factor` answers None (no positions, more than ``MAX_DIMS`` factors).

    >>> coarsest([(3, (10,)), (1, (5,)), (2, (4,)), (4, (1,))], (7,))
    ((3, 8), ((10, 1),), (7,))
    """
    if math.prod(n for n, _ in dims) == 0:
        return None
    inner_first: list[tuple[int, tuple[int, ...]]] = []
    for n, s in reversed(dims):
        if n == 1:
            continue
        if inner_first and all(o == inner_first[-1][0] * i for o, i in zip(s, inner_first[-1][1], strict=True)):
            inner_first[-1] = (inner_first[-1][0] * n, inner_first[-1][1])
        else:
            inner_first.append((n, s))
    if len(inner_first) > MAX_DIMS:
        return None
    out = inner_first[::-1]
    sizes = tuple(n for n, _ in out)
    per_row = tuple(tuple(s[r] for _, s in out) for r in range(len(bases)))
    return sizes, per_row, bases
