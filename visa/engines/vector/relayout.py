"""Reading a VRF tensor or the stash at the stream's mapping (manual L4977–4984, L5052–5081).

A VRF or stash operand is read element by element in the stream's order: the element at stream position
``(chip, cluster, slice, time, packet)`` is the operand's value at the same tensor index, taken from the
**same** chip, cluster and slice (a slice reads only its own register file).  Axes the operand lacks are
broadcast (the manual's ``vrf_add`` broadcasts over Time axis B, L5063–5081); an axis the operand has and the
stream lacks, an index the operand does not hold, or an index held in another slice is refused.

The gather index of a (source mappings, stream mappings) pair is computed once and cached.  When every stream
position reads the source and the index is a mixed-radix affine function of the position (the stream's axes
split into digits, each stepping the source by a fixed stride, 0 for a broadcast axis — the usual case: a
vector read once per row, or the stash read as it was saved), the plan also keeps that strided form, and
:func:`gather_view` reads the operand as a read-only strided view of the source (no copy, no index array
read); the elementwise ops then compute in the split shape (:class:`~visa.engines.vector.elementwise.Resolved`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

from visa.engines.vector.cache import cached
from visa.errors import LayoutError
from visa.mapping import Mapping, pair_of
from visa.mapping.evaluate import BoolArray, IntArray
from visa.memory.known import is_everywhere, known_everywhere

__all__ = ["Gather", "plan_gather", "joint_eval", "apply_gather", "gather_view", "StridedIndex", "strided_index"]

LEAD = ("Chip", "Cluster", "Slice")


#: ``(shape, strides, offset)``: the stream's shape with each axis split into digits (outermost first, their
#: product the axis size), and per digit the step of the source's flat position (elements; 0 broadcasts).
StridedIndex = tuple[tuple[int, ...], tuple[int, ...], int]


@dataclass(frozen=True)
class Gather:
    """For every stream position: the flat position in the source array, and whether it is read at all;
    ``strided`` is the same index as digits and strides when every position is read and it is one (else None)."""

    index: IntArray
    used: BoolArray
    strided: StridedIndex | None = None


def _digits(line: IntArray) -> list[tuple[int, int]] | None:
    """``line`` (``line[0] == 0``) as digits ``(size, stride)``, outermost first, whose product is its length and
    whose weighted sum is ``line`` at every position; None when the greedy split finds none (checked by the
    caller against the whole index)."""
    n = int(line.size)
    out: list[tuple[int, int]] = []
    block = 1
    while block < n:
        stride = int(line[block])
        r = 2
        while block * (r + 1) <= n and int(line[block * r]) == r * stride:
            r += 1
        while (n // block) % r:
            r -= 1
        if r < 2:
            return None
        out.append((r, stride))
        block *= r
    return out[::-1]


def strided_index(index: IntArray) -> StridedIndex | None:
    """``index`` (any shape) as a mixed-radix affine function of its position (:data:`StridedIndex`), or None.

    >>> strided_index(np.array([[0, 8, 16, 0, 8, 16], [1, 9, 17, 1, 9, 17]]))
    ((2, 2, 3), (1, 0, 8), 0)
    >>> strided_index(np.array([3, 1, 2])) is None
    True
    """
    if index.size == 0:
        return None
    origin = int(index.reshape(-1)[0])
    shape: list[int] = []
    strides: list[int] = []
    for axis, n in enumerate(index.shape):
        at = [0] * index.ndim
        at[axis] = slice(None)  # type: ignore[call-overload]
        digits = _digits(np.asarray(index[tuple(at)], dtype=np.int64) - origin) if n > 1 else []
        if digits is None:
            return None
        shape += [d for d, _ in digits] or [1]
        strides += [s for _, s in digits] or [0]
    want = np.full((), origin, dtype=np.int64)
    for n, st in zip(shape, strides, strict=True):
        want = want[..., None] + np.arange(n, dtype=np.int64) * st
    if not np.array_equal(want.reshape(index.shape), index):
        return None
    return tuple(shape), tuple(strides), origin


def joint_eval(mappings: tuple[Mapping, ...]) -> tuple[dict[str, IntArray], BoolArray]:
    """Coordinates (zero where invalid) and validity of every position of a multi-level buffer, shaped per level."""
    shape = tuple(m.size for m in mappings)
    ev = pair_of(*mappings).evaluate()
    valid = ev.valid.reshape(shape)
    coords = {a: np.where(ev.valid, c, 0).reshape(shape) for a, c in ev.coords.items()}
    return coords, valid


@cached()
def plan_gather(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], call: str, what: str) -> Gather:
    """The gather that reads ``source`` (Chip, Cluster, Slice, inner levels...) at every ``stream`` position.

    ``stream`` is the five stream levels.  Raises :class:`~visa.errors.LayoutError` naming the axis and the
    level when the source cannot feed the stream from the same slice.
    """
    coords, valid = joint_eval(stream)
    shape = valid.shape
    src_axes = frozenset().union(*(m.axes for m in source))
    dst_axes = frozenset().union(*(m.axes for m in stream))
    extra = sorted(src_axes - dst_axes)
    if extra:
        raise LayoutError(f"the {what} holds axis {extra[0]}, which the stream does not have, so an element "
                          "of the stream does not name one value of it", call=call, axis=extra[0],
                          mapping=", ".join(repr(m) for m in source), fix=f"give the {what} the stream's axes only")
    joint = pair_of(*source)
    flat, held = joint.locate({a: coords[a] for a in src_axes}, shape)
    flat = np.where(valid & held, flat, 0)
    missing = valid & ~held
    if missing.any():
        bad = tuple(int(k[0]) for k in np.nonzero(missing))
        index = ", ".join(f"{a}: {int(coords[a][bad])}" for a in sorted(dst_axes))
        raise LayoutError(f"the {what} does not hold index {{{index}}} that the stream needs", call=call,
                          mapping=", ".join(repr(m) for m in source),
                          fix=f"load every index of the stream's operand into the {what}")
    # the source position's chip / cluster / slice must be the stream position's
    inner = 1
    for m in source[3:]:
        inner *= m.size
    rest = flat // inner
    for k in (2, 1, 0):
        here = rest % source[k].size
        rest = rest // source[k].size
        view = [1] * len(shape)
        view[k] = shape[k]
        pos = np.arange(shape[k], dtype=np.int64).reshape(view)
        wrong = valid & (here != pos)
        if wrong.any():
            bad = tuple(int(x[0]) for x in np.nonzero(wrong))
            index = ", ".join(f"{a}: {int(coords[a][bad])}" for a in sorted(dst_axes))
            level = LEAD[k]
            raise LayoutError(f"index {{{index}}} is held by {level.lower()} {int(here[bad])} of the {what}, but "
                              f"the stream processes it in {level.lower()} {bad[k]}; a slice reads only its own "
                              f"{what}", call=call, level=level, mapping=repr(source[k]),
                              axis=", ".join(sorted(source[k].axes | stream[k].axes)) or None,
                              fix=f"lay the {what} out with the stream's {level} mapping {stream[k]!r}")
    flat, valid = np.ascontiguousarray(flat), np.ascontiguousarray(valid)
    return Gather(flat, valid, strided_index(flat) if bool(valid.all()) else None)


def apply_gather(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                 ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """The source's values and known mask at every stream position (positions not read are unknown)."""
    v = values.reshape(-1)[g.index]
    k = known.reshape(-1)[g.index] & g.used
    return v, k


def gather_view(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_], tuple[int, ...]] | None:
    """:func:`apply_gather` as read-only strided views of ``values`` and ``known`` in the split shape of
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
