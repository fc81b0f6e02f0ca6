"""The fast paths of the operand gather (:mod:`visa.engines.vector.relayout`, :mod:`visa.fastpaths`): faster
ways to compute exactly the gather the reference locates at every stream position.

- ``vector.gather-by-parts`` (:func:`factored`, :func:`apply_by_parts`): when the operand's Chip, Cluster and
  Slice are the stream's and share no axis with the inner levels (a VRF operand, a stash), or only axes whose
  digits add without a carry (:func:`_digits_apart`), the slices and the inner levels are located apart — a few
  thousand positions each instead of every element of the stream — and the gather is applied as a broadcast, a
  view, or a gather along the inner positions only.
- ``vector.gather-view`` (:func:`gather_view`): a gather whose index is a mixed-radix affine function of the
  position is read as a read-only strided view of the source.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

from visa.engines.vector.relayout import Gather, joint_eval
from visa.mapping import Mapping, pair_of
from visa.mapping.canon import Lin, SkewAtom, Sym, Win, axis_atoms
from visa.mapping.evaluate import IntArray
from visa.memory.known import is_everywhere, known_everywhere

__all__ = ["factored", "apply_by_parts", "apply_occupied", "gather_view"]


def factored(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], src_axes: frozenset[str]) -> Gather | None:
    """``relayout.plan_gather`` by parts, when the source's and the stream's Chip, Cluster and Slice are the same
    mappings and share no axis with their inner levels (a VRF operand, a stash), or only axes cut into digits
    that add without a carry, which both inner sides use (:func:`_digits_apart`): the source position is then the
    (Chip, Cluster, Slice) part, located over the slices alone, times the inner size plus the inner part, located
    over the inner levels alone — a few thousand positions each instead of every element of the stream.  None
    (the caller runs the whole-stream inverse) when the parts do not separate, an axis is skewed, or an index is
    not held or is held by another slice (the caller then names it in its error)."""
    if tuple(source[:3]) != tuple(stream[:3]) or len(source) < 4:
        return None
    outer = frozenset().union(*(m.axes for m in stream[:3]))
    inner_axes = frozenset().union(*(m.axes for m in (*stream[3:], *source[3:])))
    if any(isinstance(t, SkewAtom) for m in (*stream, *source) for t in axis_atoms(m.canon)):
        return None
    shared = outer & inner_axes
    if shared and not (all(a in m_axes for a in shared for m_axes in (_axes(stream[3:]), _axes(source[3:])))
                       and _digits_apart(shared, stream[:3], (stream[3:], source[3:]))):
        return None  # (an inner level without the axis would take it for a broadcast: the reference refuses it)
    o_shape, i_shape = tuple(m.size for m in stream[:3]), tuple(m.size for m in stream[3:])
    oc, o_valid = joint_eval(tuple(stream[:3]))
    ic, i_valid = joint_eval(tuple(stream[3:]))
    o_flat, o_held = pair_of(*source[:3]).locate({a: oc[a] for a in src_axes & outer}, o_shape)
    i_flat, i_held = pair_of(*source[3:]).locate({a: ic[a] for a in src_axes & inner_axes}, i_shape)
    lead = (...,) + (None,) * len(i_shape)
    shape = (*o_shape, *i_shape)
    # the parts share no axis: a position is valid when its slice part and its inner part are
    every = bool(o_valid.all()) and bool(i_valid.all())
    valid = known_everywhere(shape) if every else np.logical_and(o_valid[lead], i_valid)
    o_held, i_held = np.asarray(o_held), np.asarray(i_held)
    slices_ok = np.asarray(o_flat) == np.arange(math.prod(o_shape), dtype=np.int64).reshape(o_shape)
    if not (bool(o_held.all()) and bool(i_held.all()) and bool(slices_ok.all())):  # (else nothing to check)
        if bool((valid & ~(o_held[lead] & i_held & slices_ok[lead])).any()):
            return None
    inner = math.prod(m.size for m in source[3:])
    if every:  # the index is built from the parts only if something asks for it
        return Gather(valid, None, np.broadcast_to(i_flat, i_shape).copy(), inner)
    index = np.asarray(o_flat)[lead] * inner + np.asarray(i_flat)
    occupied = occupied_inner = None
    if bool(i_valid.all()):  # every inner position of the valid slices is read (vector.gather-occupied)
        occupied = np.flatnonzero(o_valid)
        occupied_inner = np.ascontiguousarray(np.broadcast_to(np.asarray(i_flat), i_shape)).reshape(-1)
    return Gather(valid, np.ascontiguousarray(np.where(valid, index, 0)), occupied=occupied,
                  occupied_inner=occupied_inner)


def _axes(levels: tuple[Mapping, ...]) -> frozenset[str]:
    """The axes some of ``levels`` use."""
    return frozenset().union(*(m.axes for m in levels))


def _digits_apart(shared: frozenset[str], outer: tuple[Mapping, ...], sides: tuple[tuple[Mapping, ...], ...]) -> bool:
    """Whether each axis of ``shared`` (used by both the slice levels and the inner levels) is cut into digits
    that add without a carry: plain digits of the axis alone (no composite, no linear combination, no offset),
    every slice-level stride a multiple of the least one ``s``, ``s`` dividing the axis size, and on each inner
    side (the stream's Time and Packet; the operand's Element) the largest inner part, Σ (count − 1) · stride over
    its digits of the axis, below ``s`` (overlapping inner digits add: ``N % 4`` and ``N % 2`` reach 4) — so a
    slice part and an inner part never add past a slice part's step nor past the axis.  The coordinate of a
    stream position is then its slice part plus its inner part (L674–716), and the operand is located by parts as
    for axes of their own: the tokens of ``[N / r]`` slices with ``N % r`` along Time reading one scale each
    (``bench_heldout4``'s quantisation: 393 of 502 ms of its first launch)."""
    for a in shared:
        lows: list[int] = []
        reaches: list[int] = []
        sizes: set[int] = set()
        for group, is_outer in ((outer, True), *((side, False) for side in sides)):
            reach = 0
            for m in group:
                for d in m.canon:
                    if isinstance(d, Lin):
                        if any(isinstance(t, Sym) and t.name == a for c, _ in d.parts for t in axis_atoms(c)):
                            return False
                        continue
                    if isinstance(d.atom, Win):
                        if any(isinstance(t, Sym) and t.name == a for t in axis_atoms(d.atom.inner)):
                            return False
                        continue
                    if not (isinstance(d.atom, Sym) and d.atom.name == a):
                        continue
                    if d.offset:
                        return False
                    sizes.add(d.atom.size)
                    if is_outer:
                        lows.append(d.stride)
                    else:
                        reach += (d.count - 1) * d.stride
            if not is_outer:
                reaches.append(reach)
        if not lows:
            return False
        least = min(lows)
        if len(sizes) != 1:  # (the axis's size as its digits hold it: the mypy plugin's mappings declare no set)
            return False
        size = sizes.pop()
        if size % least or any(low % least for low in lows) or any(reach >= least for reach in reaches):
            return False
    return True


def apply_by_parts(g: Gather, inner: IntArray, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """``relayout.apply_gather`` of a gather by parts that reads every position (``g.inner`` set): each slice reads its
    own inner positions ``inner``, so one value a slice (a VRF operand) is a broadcast, the stream's own layout (a
    stash) a view, anything else a gather along the inner positions only.  The results are read-only."""
    shape = g.used.shape
    outer = shape[:3]
    n_out = math.prod(outer)
    flat = inner.reshape(-1)
    per = values.size // n_out
    lead = (*outer, *([1] * (len(shape) - 3)))

    def pick(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
        rows = arr.reshape(n_out, per)
        if bool((flat == flat[0]).all()):
            out: npt.NDArray[Any] = np.broadcast_to(rows[:, int(flat[0])].reshape(lead), shape)
            return out
        if flat.size == per and bool((flat == np.arange(per)).all()):
            out = rows.reshape(shape).view()
        else:
            out = rows[:, flat].reshape(shape)
        out.flags.writeable = False
        return out

    k = known_everywhere(shape) if is_everywhere(known) else pick(np.asarray(known))
    return pick(values), k


def apply_occupied(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                   ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """``relayout.apply_gather`` of a gather by parts whose valid slices read all their inner positions and whose
    other slices read nothing (``g.occupied`` set; ``vector.gather-occupied``): each occupied slice reads its own
    row of the source at ``g.occupied_inner``; every other position holds what the index gives it — the source's
    first element, unknown — without an index over every position of the stream."""
    assert g.occupied is not None and g.occupied_inner is not None
    shape = g.used.shape
    n_out = math.prod(shape[:3])
    sel, flat = g.occupied, g.occupied_inner
    v = np.full(shape, values.reshape(-1)[0], dtype=values.dtype)
    k = np.zeros(shape, dtype=bool)
    if sel.size:
        v.reshape(n_out, -1)[sel] = values.reshape(n_out, -1)[sel][:, flat]
        k.reshape(n_out, -1)[sel] = np.asarray(known).reshape(n_out, -1)[sel][:, flat]
    return v, k


def gather_view(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_], tuple[int, ...]] | None:
    """``relayout.apply_gather`` as read-only strided views of ``values`` and ``known`` in the split shape of
    ``g.strided`` (returned third), when the plan has one (else None).
    Every position is read (``g.used`` is all True), so the view's known is the source's known."""
    if g.strided is None:
        return None
    shape, strides, offset = g.strided
    lo = offset + sum((n - 1) * st for n, st in zip(shape, strides, strict=True) if st < 0)
    hi = offset + sum((n - 1) * st for n, st in zip(shape, strides, strict=True) if st > 0)
    if lo < 0 or hi >= values.size or values.size != known.size:
        return None  # (not the source the plan was made for: the index path reports it)
    out = []
    for arr in (values, known):
        if arr is known and is_everywhere(known):
            out.append(known_everywhere(shape))
            continue
        base = np.ascontiguousarray(arr).reshape(-1)[offset:]  # (a copy of the source only if it is strided)
        out.append(as_strided(base, shape, tuple(s * arr.itemsize for s in strides), writeable=False))
    return out[0], out[1], shape
