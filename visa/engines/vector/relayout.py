"""Reading a VRF tensor or the stash at the stream's mapping (manual L4977–4984, L5052–5081).

A VRF or stash operand is read element by element in the stream's order: the element at stream position
``(chip, cluster, slice, time, packet)`` is the operand's value at the same tensor index, taken from the
**same** chip, cluster and slice (a slice reads only its own register file).  Axes the operand lacks are
broadcast (the manual's ``vrf_add`` broadcasts over Time axis B, L5063–5081); an axis the operand has and the
stream lacks, an index the operand does not hold, or an index held in another slice is refused.

The gather index of a (source mappings, stream mappings) pair is computed once and cached.  It is worked out
on *compact* arrays: the stream's coordinates keep a dimension of size 1 wherever they do not vary (an axis
absent from a level, a level of padding), so a VRF operand broadcast over 4M stream positions is located at
the few thousand positions that name distinct indices (:func:`compact_eval`); the result is a broadcast view.
:func:`plan_gather_full`, the evaluation at every position, is the reference the fast path is tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.vector.cache import cached
from visa.errors import LayoutError
from visa.mapping import Mapping, pair_of
from visa.mapping.evaluate import BoolArray, IntArray, forward

__all__ = ["Gather", "plan_gather", "plan_gather_full", "joint_eval", "compact_eval", "regroup"]

LEAD = ("Chip", "Cluster", "Slice")


@dataclass(frozen=True)
class Gather:
    """For every stream position: the flat position in the source array, and whether it is read at all."""

    index: IntArray
    used: BoolArray


def joint_eval(mappings: tuple[Mapping, ...]) -> tuple[dict[str, IntArray], BoolArray]:
    """Coordinates (zero where invalid) and validity of every position of a multi-level buffer, shaped per level."""
    shape = tuple(m.size for m in mappings)
    ev = pair_of(*mappings).evaluate()
    valid = ev.valid.reshape(shape)
    coords = {a: np.where(ev.valid, c, 0).reshape(shape) for a, c in ev.coords.items()}
    return coords, valid


@cached()
def plan_gather(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], call: str, what: str,
                compact: bool = True) -> Gather:
    """The gather that reads ``source`` (Chip, Cluster, Slice, inner levels...) at every ``stream`` position.

    ``stream`` is the five stream levels.  Raises :class:`~visa.errors.LayoutError` naming the axis and the
    level when the source cannot feed the stream from the same slice.  The stream is evaluated on compact
    arrays (see the module docstring; the result's arrays may be read-only broadcast views); with ``compact``
    false, at every position (:func:`plan_gather_full`, the reference: the same gather and refusals).
    """
    shape = tuple(m.size for m in stream)
    got = compact_eval(stream) if compact else None
    coords, valid = got if got is not None else joint_eval(stream)
    src_axes = frozenset().union(*(m.axes for m in source))
    dst_axes = frozenset().union(*(m.axes for m in stream))
    extra = sorted(src_axes - dst_axes)
    if extra:
        raise LayoutError(f"the {what} holds axis {extra[0]}, which the stream does not have, so an element "
                          "of the stream does not name one value of it", call=call, axis=extra[0],
                          mapping=", ".join(repr(m) for m in source), fix=f"give the {what} the stream's axes only")
    joint = pair_of(*source)
    # located where the coordinates vary (compact coordinates need not be zero where the stream is invalid:
    # every use below is masked by ``valid``)
    cshape = np.broadcast_shapes(*(coords[a].shape for a in src_axes))
    flat, held = joint.locate({a: coords[a] for a in src_axes}, cshape)
    flat = np.where(valid & held, flat, 0)
    missing = valid & ~held
    if missing.any():
        bad = tuple(int(k[0]) for k in np.nonzero(np.broadcast_to(missing, shape)))
        index = ", ".join(f"{a}: {int(np.broadcast_to(coords[a], shape)[bad])}" for a in sorted(dst_axes))
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
            bad = tuple(int(x[0]) for x in np.nonzero(np.broadcast_to(wrong, shape)))
            index = ", ".join(f"{a}: {int(np.broadcast_to(coords[a], shape)[bad])}" for a in sorted(dst_axes))
            level = LEAD[k]
            raise LayoutError(f"index {{{index}}} is held by {level.lower()} "
                              f"{int(np.broadcast_to(here, shape)[bad])} of the {what}, but "
                              f"the stream processes it in {level.lower()} {bad[k]}; a slice reads only its own "
                              f"{what}", call=call, level=level, mapping=repr(source[k]),
                              axis=", ".join(sorted(source[k].axes | stream[k].axes)) or None,
                              fix=f"lay the {what} out with the stream's {level} mapping {stream[k]!r}")
    if flat.shape == shape and valid.shape == shape:
        return Gather(np.ascontiguousarray(flat), np.ascontiguousarray(valid))
    return Gather(np.broadcast_to(flat, shape), np.broadcast_to(valid, shape))


def compact_eval(mappings: tuple[Mapping, ...]) -> tuple[dict[str, IntArray], BoolArray] | None:
    """:func:`joint_eval` as compact arrays: each broadcasts to the level shape and has size 1 along every
    level over which it does not vary.  Coordinates are not zeroed where the position is invalid (that would
    make them vary wherever the validity does): read them only where ``valid`` holds.  ``None`` when the
    joint mapping's digits do not split at the levels' boundaries (each level a run of whole digits, after
    splitting digits at common divisors)."""
    joint = pair_of(*mappings)
    ev = forward(joint.canon, digits_shape=True)
    digits = tuple(d.size for d in joint.canon)
    levels = tuple(m.size for m in mappings)
    valid = regroup(_compact(ev.valid), digits, levels)
    if valid is None:
        return None
    coords: dict[str, IntArray] = {}
    for a, c in ev.coords.items():
        got = regroup(_compact(c), digits, levels)
        if got is None:
            return None
        coords[a] = got
    return coords, valid


def _compact(view: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A broadcast view with its stride-0 dimensions cut to size 1 (nothing is copied)."""
    return view[tuple(slice(0, 1) if st == 0 else slice(None) for st in view.strides)]


def regroup(arr: npt.NDArray[Any], digits: tuple[int, ...], levels: tuple[int, ...]) -> npt.NDArray[Any] | None:
    """``np.broadcast_to(arr, digits).reshape(levels)`` kept compact: ``arr`` broadcasts to ``digits``; the
    result broadcasts to ``levels`` and has size 1 along every level over whose digits ``arr`` does not vary.
    Only the levels that vary are materialised.  ``None`` when the two factorisations do not nest (a digit
    and a level overlapping with neither dividing the other's run).

    >>> import numpy as np
    >>> a = np.arange(4).reshape(1, 4, 1)  # varies along the middle of digits (2, 4, 8)
    >>> regroup(a, (2, 4, 8), (8, 8)).shape, regroup(a, (2, 4, 8), (16, 4)).shape
    ((8, 1), (16, 1))
    >>> regroup(np.arange(2).reshape(1, 2), (3, 2), (2, 3)) is None  # 3 | 2 ... neither divides the other
    True
    >>> bool((np.broadcast_to(regroup(a, (2, 4, 8), (2, 32)), (2, 32)) ==
    ...       np.broadcast_to(a, (2, 4, 8)).reshape(2, 32)).all())
    True
    """
    if math.prod(digits) != math.prod(levels) or arr.ndim > len(digits):
        return None
    arr = arr.reshape((1,) * (len(digits) - arr.ndim) + arr.shape)
    if any(n not in (1, d) for n, d in zip(arr.shape, digits, strict=True)):
        return None
    pieces: list[tuple[int, int, int]] = []  # the common refinement: (size, its digit, its level)
    di, li = list(digits), list(levels)
    d = lv = 0
    while True:
        while d < len(di) and di[d] == 1:
            d += 1
        while lv < len(li) and li[lv] == 1:
            lv += 1
        if d == len(di) or lv == len(li):
            break
        step = min(di[d], li[lv])
        if di[d] % step or li[lv] % step:
            return None
        pieces.append((step, d, lv))
        di[d] //= step
        li[lv] //= step
    fine = arr.reshape([n if arr.shape[dg] != 1 else 1 for n, dg, _ in pieces])
    active = {lv_ for (n, _, lv_), got in zip(pieces, fine.shape, strict=True) if got != 1}
    target = [n if lv_ in active else 1 for n, _, lv_ in pieces]
    return np.broadcast_to(fine, target).reshape([n if k in active else 1 for k, n in enumerate(levels)])


def plan_gather_full(source: tuple[Mapping, ...], stream: tuple[Mapping, ...], call: str, what: str) -> Gather:
    """:func:`plan_gather` evaluated at every stream position (the reference for its compact arrays)."""
    return plan_gather(source, stream, call, what, False)


def apply_gather(g: Gather, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                 ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """The source's values and known mask at every stream position (positions not read are unknown)."""
    v = values.reshape(-1)[g.index]
    k = known.reshape(-1)[g.index] & g.used
    return v, k
