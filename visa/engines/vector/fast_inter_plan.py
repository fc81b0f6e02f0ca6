"""Fast path ``vector.inter-plan-digits`` (issue 24): the Inter-Slice Block's ring groups derived from the
mappings' digits instead of from every stream position.

The reference plan (:func:`visa.engines.vector.inter.plan_inter_reduce`) evaluates the input and the output at
every position (a coordinate array per axis), numbers each position's group by its kept coordinates, sorts the
positions by group and ranks the output's groups: several full-size arrays, a sort and a hash-free unique over
millions of positions on a first launch (a ring sum of 4 × 262,144 i32 planned for 0.4 s).

When both layouts are plain digits (each digit of the joint mapping a stride of one axis, or a dummy ``1 # n``),
every index inside each digit's range is held, and the kept digits number the groups as a mixed radix (each
digit's weight in the group number larger than everything the digits below it can add), the same plan is a
broadcast: the groups in order are the kept digits, largest weight first; a group's members in ring order are the
reduced digits in position order (the reference sorts stably by group, then by position); each output position's
group rank is the sum of its kept digits' ranks, each output digit standing for the input digit of equal weight
and range.  Anything else (windows, skews, an output digit with no input digit of its weight: a layout the
reference refuses or groups unevenly) takes the reference.  ``tests/engines/vector/test_fast_inter_plan.py``
checks the plans equal, field by field, with the path off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visa import fastpaths
from visa.engines.affine import Factors
from visa.engines.vector.fast_inter_factors import FACTORS, coarsest
from visa.mapping import Mapping, pair_of
from visa.mapping.canon import Dim, Sym
from visa.mapping.evaluate import IntArray, digit_weights

__all__ = ["DIGITS", "groups"]

DIGITS = fastpaths.register("vector.inter-plan-digits", "the inter-slice reduce's ring groups from the mappings' "
                                                        "digits (broadcast) instead of sorting every position")


@dataclass(frozen=True)
class _Digit:
    axis: str | None  # None: a dummy or a digit of one value (it adds nothing)
    stride: int  # step of the axis's coordinate per digit value
    size: int
    count: int
    offset: int
    weight: int  # step of the buffer position per digit value


def _digits(levels: tuple[Mapping, ...]) -> list[_Digit] | None:
    """The joint mapping's digits, or None when one is not a plain digit of a symbol (or the coordinates it adds
    up to can leave an axis)."""
    canon = pair_of(*levels).canon
    out: list[_Digit] = []
    reach: dict[str, int] = {}
    limit: dict[str, int] = {}
    for d, w in zip(canon, digit_weights(canon), strict=True):
        if not isinstance(d, Dim) or d.count < 1:
            return None
        if d.atom is None or d.count == 1:
            if d.atom is not None and not isinstance(d.atom, Sym):
                return None
            out.append(_Digit(None, 0, d.size, d.count, d.offset, w))
            continue
        if not isinstance(d.atom, Sym):
            return None
        name = d.atom.name
        reach[name] = reach.get(name, 0) + (d.count - 1) * d.stride
        limit[name] = d.atom.size
        out.append(_Digit(name, d.stride, d.size, d.count, d.offset, w))
    if any(reach[a] >= limit[a] for a in reach):  # (the reference masks those positions: not plain)
        return None
    return out


def _reach(digits: list[_Digit], axis: str) -> int:
    """The largest coordinate of ``axis`` the digits reach (0 when they do not name it)."""
    return sum((d.count - 1) * d.stride for d in digits if d.axis == axis)


def groups(src: tuple[Mapping, ...], dst: tuple[Mapping, ...], kept: list[str]
           ) -> tuple[IntArray, IntArray, tuple[Factors | None, Factors | None] | None] | None:
    """``(members, out_group, factors)`` of the reference plan (every group full), or None (take the reference).
    ``factors`` (with ``vector.inter-factors-digits`` on, else None) are :func:`visa.engines.affine.factor` of the
    members (one row) and of the valid output positions with their groups (two rows), read off the digits
    (:mod:`visa.engines.vector.fast_inter_factors`)."""
    si, so = _digits(src), _digits(dst)
    if si is None or so is None:
        return None
    sizes = {a: max(_reach(si, a), _reach(so, a)) + 1 for a in kept}
    scale = {a: math.prod(sizes[b] for b in kept[k + 1:]) for k, a in enumerate(kept)}

    def g(d: _Digit) -> int:
        return d.stride * scale[d.axis] if d.axis is not None else 0

    keep = sorted((j for j, d in enumerate(si) if d.axis in scale), key=lambda j: -g(si[j]))
    for k, j in enumerate(keep):  # a mixed radix: each weight above all the digits below can add
        if g(si[j]) <= sum((si[i].count - 1) * g(si[i]) for i in keep[k + 1:]):
            return None
    ring = [j for j, d in enumerate(si) if d.count > 1 and d.axis not in scale]  # (a dummy of several: replicas)
    base = sum(d.offset * d.weight for d in si)
    grid: IntArray = np.full((), base, dtype=np.int64)
    for j in (*keep, *ring):
        grid = grid[..., None] + np.arange(si[j].count, dtype=np.int64) * si[j].weight
    members = grid.reshape(math.prod(si[j].count for j in keep), -1)
    # the output: each kept digit is an input kept digit of the same weight and range, each input one once
    rank = {g(si[j]): (math.prod(si[i].count for i in keep[k + 1:]), si[j].count) for k, j in enumerate(keep)}
    shape = tuple(d.size for d in so)
    part = np.zeros((1,) * len(so), dtype=np.int64)
    used: set[int] = set()
    ranks = [0] * len(so)  # each output digit's step of the group rank (0: the group repeats over it)
    for j, d in enumerate(so):
        if d.axis not in scale:  # a broadcast axis, a dummy: the group repeats over it
            continue
        got = rank.get(g(d))
        if got is None or got[1] != d.count or g(d) in used:
            return None
        used.add(g(d))
        ranks[j] = got[0]
        view = [1] * len(so)
        view[j] = d.count
        part = part + (np.arange(d.count, dtype=np.int64) * got[0]).reshape(view)
    if len(used) != len(keep):
        return None
    if all(d.offset == 0 and d.count == d.size for d in so):  # every output position valid: one pass, no -1 fill
        out_group = np.empty(shape, dtype=np.int64)
        out_group[...] = part
    else:
        out_group = np.full(shape, -1, dtype=np.int64)
        out_group[tuple(slice(d.offset, d.offset + d.count) for d in so)] = part
    factors = None
    if FACTORS.on:  # the members' digits; the valid outputs' box of digits, each with its group rank's step
        factors = (coarsest([(si[j].count, (si[j].weight,)) for j in (*keep, *ring)], (base,)),
                   coarsest([(d.count, (d.weight, r)) for d, r in zip(so, ranks, strict=True)],
                            (sum(d.offset * d.weight for d in so), 0)))
    return members, out_group.reshape(tuple(m.size for m in dst)), factors
