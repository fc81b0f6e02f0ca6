"""Reading a VRF tensor or the stash at the stream's mapping (manual L4977–4984, L5052–5081).

A VRF or stash operand is read element by element in the stream's order: the element at stream position
``(chip, cluster, slice, time, packet)`` is the operand's value at the same tensor index, taken from the
**same** chip, cluster and slice (a slice reads only its own register file).  Axes the operand lacks are
broadcast (the manual's ``vrf_add`` broadcasts over Time axis B, L5063–5081); an axis the operand has and the
stream lacks, an index the operand does not hold, or an index held in another slice is refused.

The gather index of a (source mappings, stream mappings) pair is computed once and cached.  When the operand's
Chip, Cluster and Slice are the stream's and share no axis with the inner levels (a VRF operand, a stash), the
slices and the inner levels are located apart (``fast_relayout.factored``) and the gather is applied as a broadcast or a
view; :func:`plan_gather_full`, the location at every position, is the reference it is tested against.

When every stream position reads the source and the index is a mixed-radix affine function of the position (the
stream's axes split into digits, each stepping the source by a fixed stride, 0 for a broadcast axis — the usual case: a
vector read once per row, or the stash read as it was saved), the plan also keeps that strided form, and
:func:`gather_view` reads the operand as a read-only strided view of the source (no copy, no index array
read); the elementwise ops then compute in the split shape (:class:`~visa.engines.vector.elementwise.Resolved`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.vector.cache import cached
from visa.errors import LayoutError
from visa.mapping import Mapping, pair_of
from visa.mapping.evaluate import BoolArray, IntArray
from visa.memory.known import is_everywhere

__all__ = ["Gather", "plan_gather", "plan_gather_full", "joint_eval", "apply_gather", "gather_view", "StridedIndex",
           "strided_index"]

LEAD = ("Chip", "Cluster", "Slice")

BY_PARTS = fastpaths.register("vector.gather-by-parts", "a VRF or stash operand whose slices and inner levels "
                              "separate is located over each part alone and read as a broadcast or a view")
VIEW = fastpaths.register("vector.gather-view", "an operand gather that is a mixed-radix affine index is read as "
                          "a strided view of the source (no index array, no copy)")
OCCUPIED = fastpaths.register("vector.gather-occupied", "an operand gather by parts over a stream whose padding "
                              "slices read nothing is applied to the slices that read (a few of a decode step's "
                              "512), the rest filled as the index gives them, not by an index over every position")


#: ``(shape, strides, offset)``: the stream's shape with each axis split into digits (outermost first, their
#: product the axis size), and per digit the step of the source's flat position (elements; 0 broadcasts).
StridedIndex = tuple[tuple[int, ...], tuple[int, ...], int]


@dataclass(frozen=True, eq=False)
class Gather:
    """For every stream position: the flat position in the source array (:attr:`index`), and whether it is read
    at all (``used``)."""

    used: BoolArray
    #: the flat positions, when given as such (else built from the parts below when first asked)
    explicit: IntArray | None = None
    #: when the gather is by parts (``fast_relayout.factored``) and every stream position is read: the source's inner
    #: position read at each inner stream position (shape of the stream's Time, Packet), each slice its own
    inner: IntArray | None = None
    #: the source's inner size (a slice's ``inner`` positions start at slice · ``inner_size``)
    inner_size: int = 0
    #: when the gather is by parts, reads every inner position of some slices and nothing of the others (the
    #: stream's padding slices): those slices' flat (Chip, Cluster, Slice) positions, each reading its own
    #: :attr:`explicit` inner positions ``occupied_inner`` (the fast path ``vector.gather-occupied``)
    occupied: IntArray | None = None
    occupied_inner: IntArray | None = None

    @cached_property
    def index(self) -> IntArray:
        """The flat source position of every stream position (0 where none is read)."""
        if self.explicit is not None:
            return self.explicit
        assert self.inner is not None
        shape = self.used.shape
        n_out = math.prod(shape[:3])
        lead = (*shape[:3], *([1] * (len(shape) - 3)))
        slices = np.arange(n_out, dtype=np.int64).reshape(lead) * self.inner_size
        out: IntArray = np.ascontiguousarray(slices + self.inner)
        return out

    @cached_property
    def strided(self) -> StridedIndex | None:
        """The index as digits and strides (:func:`strided_index`) when every position is read and it is one,
        else None: a gather by parts from its slices (one inner block each) and its inner positions, without
        building the whole index; any other from the index."""
        if not (is_everywhere(self.used) or bool(np.all(self.used))):
            return None
        if self.inner is None:
            return strided_index(self.index)
        shape = self.used.shape
        inner = strided_index(np.ascontiguousarray(np.broadcast_to(self.inner, shape[3:])))
        if inner is None:
            return None
        i_shape, i_strides, offset = inner
        lead = shape[:3]
        l_strides = tuple(self.inner_size * math.prod(lead[k + 1:]) for k in range(len(lead)))
        return (*lead, *i_shape), (*l_strides, *i_strides), offset


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
    every = bool(np.all(ev.valid))  # (then the coordinates need no zeroing)
    coords = {a: (np.asarray(c) if every else np.where(ev.valid, c, 0)).reshape(shape) for a, c in ev.coords.items()}
    return coords, valid


@cached(paths=(BY_PARTS,))
def plan_gather(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], call: str, what: str,
                by_parts: bool = True) -> Gather:
    """The gather that reads ``source`` (Chip, Cluster, Slice, inner levels...) at every ``stream`` position.

    ``stream`` is the five stream levels.  Raises :class:`~visa.errors.LayoutError` naming the axis and the
    level when the source cannot feed the stream from the same slice.  When the slices and the inner levels
    separate and the fast path ``vector.gather-by-parts`` is on, they are located apart
    (``fast_relayout.factored``); with ``by_parts`` false or the path off, the source is
    located at every stream position (:func:`plan_gather_full`, the reference: the same gather and refusals).
    """
    src_axes = frozenset().union(*(m.axes for m in source))
    dst_axes = frozenset().union(*(m.axes for m in stream))
    extra = sorted(src_axes - dst_axes)
    if by_parts and BY_PARTS.on and not extra:
        from visa.engines.vector import fast_relayout

        fast = fast_relayout.factored(source, stream, src_axes)
        if fast is not None:
            return fast
    coords, valid = joint_eval(stream)
    shape = valid.shape
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
    return Gather(np.ascontiguousarray(valid), np.ascontiguousarray(flat))


def plan_gather_full(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], call: str, what: str) -> Gather:
    """:func:`plan_gather` located at every stream position (the reference for the gather by parts)."""
    return plan_gather(source, stream, call, what, False)


def apply_gather(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                 ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """The source's values and known mask at every stream position (positions not read are unknown)."""
    if g.inner is not None:  # (planned by parts: the fast path vector.gather-by-parts)
        from visa.engines.vector import fast_relayout

        return fast_relayout.apply_by_parts(g, g.inner, values, known)
    if g.occupied is not None and OCCUPIED.on:
        from visa.engines.vector import fast_relayout

        return fast_relayout.apply_occupied(g, values, known)
    v = values.reshape(-1)[g.index]
    k = known.reshape(-1)[g.index] & g.used
    return v, k


def gather_view(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_], tuple[int, ...]] | None:
    """:func:`apply_gather` as read-only strided views of ``values`` and ``known`` in the split shape of
    ``g.strided`` (returned third), when the plan has one and the fast path ``vector.gather-view`` is on (else
    None: the caller applies the gather, :func:`apply_gather`)."""
    if not VIEW.on:
        return None
    from visa.engines.vector import fast_relayout

    return fast_relayout.gather_view(g, values, known)
