"""Vectorised meaning of a canonical mapping: buffer positions to tensor indices, and back.

:func:`forward` evaluates ``map`` over a numpy array of buffer positions (or over every position at once,
built by broadcasting so that each coordinate array is materialised once) and returns per-axis coordinate
arrays plus a validity mask (``False`` where ``map`` is ``None``: padding, resize, windows).
:func:`inverse` goes the other way, from coordinates to the buffer position that holds them, with a mask
of the indices the buffer holds.  Engines use only these two.

>>> from visa.mapping.axes import AxisSet
>>> from visa.mapping.syntax import parse
>>> from visa.mapping.canon import build
>>> import numpy as np
>>> dims = build(parse("C, D # 64", AxisSet(C=13, D=61)))
>>> ev = forward(dims, np.array([0, 60, 61, 64]))
>>> ev.valid.tolist(), np.where(ev.valid, ev.coords["D"], -1).tolist(), ev.coords["C"].tolist()
([True, True, False, True], [0, 60, -1, 0], [0, 0, 0, 1])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.errors import VisaError
from visa.mapping.canon import Atom, Canon, Dim, Lin, SkewAtom, Sym, Win, axis_atoms, canon_size, is_regular

__all__ = ["Evaluation", "digit_weights", "forward", "validity", "cover", "inverse", "plain_dims", "covers_once",
           "strided_view", "IntArray", "BoolArray", "RelationError", "lin_key", "lin_keys", "has_lin"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class RelationError(VisaError):
    """A linear combination is a relation, not a function (manual L1006–1016): it has no single ``map``."""

    code = "V103"


@dataclass(slots=True)
class Evaluation:
    """Per-axis coordinates (zero where an axis is absent) and the validity mask of a forward evaluation: the
    manual's ``map`` (L596–620) at many positions, ``None`` where the mask is False."""

    coords: dict[str, IntArray]
    valid: BoolArray

    def coord(self, axis: str) -> IntArray:
        """Coordinates along ``axis`` (zeros when the mapping never sets it)."""
        got = self.coords.get(axis)
        if got is None:
            return np.zeros(self.valid.shape, dtype=np.int64)
        return got


def digit_weights(dims: Canon) -> list[int]:
    """The buffer-position weight of each digit of a canonical mapping (mixed radix, the last digit the
    fastest: position = Σ digit · weight, manual L596–620)."""
    w, out = 1, [0] * len(dims)
    for j in range(len(dims) - 1, -1, -1):
        out[j] = w
        w *= dims[j].size
    return out


_Pending = list[tuple[SkewAtom, IntArray]]


def _decode_atoms(
    atoms: dict[Atom, IntArray], shape: tuple[int, ...], *, top: bool = True
) -> tuple[dict[str, IntArray], BoolArray | None, _Pending]:
    """Turn atom flat positions into axis coordinates (symbols, then windows, then skews last).

    A skewed axis's coordinate is ``B' = B − A`` over the *whole* tensor index (manual L988: "whose coordinate
    at any point equals B minus A"), so a skew inside a window is only resolved at the top level, with every
    coordinate known (``top=False`` returns it pending); the positions of one skewed axis from every window and
    every digit add up first, as the coordinates of an index do (L711), and are resolved once.
    """
    coords: dict[str, IntArray] = {}
    sizes: dict[str, int] = {}
    valid: BoolArray | None = None

    def add(name: str, value: IntArray) -> None:
        if name in coords:
            coords[name] = coords[name] + value
        else:
            coords[name] = value

    skews: _Pending = []
    for atom, pos in atoms.items():
        if isinstance(atom, Sym):
            add(atom.name, pos)
            sizes[atom.name] = atom.size
        elif isinstance(atom, Win):
            ok = (pos >= 0) & (pos < atom.size)
            sub_atoms, sub_valid = _atoms_at(atom.inner, np.where(ok, pos, 0))
            sub_coords, sub_wvalid, sub_skews = _decode_atoms(sub_atoms, shape, top=False)
            for name, val in sub_coords.items():
                add(name, val)
            skews += sub_skews
            sizes.update(_axis_sizes(atom.inner, skews=False))
            for part in (sub_valid, sub_wvalid):
                if part is not None:
                    ok = ok & part
            valid = ok if valid is None else valid & ok
        else:
            skews.append((atom, pos))
    if top:
        # One skewed axis is one coordinate of the index however many digits or composites name it: its
        # positions add up (Index::add, L711) and the sum is resolved once (L988).
        summed: dict[SkewAtom, IntArray] = {}
        for atom, pos in skews:
            summed[atom] = summed[atom] + pos if atom in summed else pos
        for atom, pos in summed.items():
            sk = atom.skew
            shift = np.zeros((), dtype=np.int64)
            for other, coef in sk.coefs:
                if other in coords:
                    shift = shift + coef * coords[other]
            add(sk.base, np.mod(pos - shift, sk.size))
            sizes[sk.base] = sk.size
            if int(np.max(pos, initial=0)) >= sk.size:  # B' itself past its end (terms of a repeated B' add up)
                ok = pos < sk.size
                valid = ok if valid is None else valid & ok
        skews = []
    # A tensor index must lie inside every axis: contributions that add up past the end are not held.
    for name, val in coords.items():
        size = sizes.get(name)
        if size is not None and int(np.max(val, initial=0)) >= size:
            ok = val < size
            valid = ok if valid is None else valid & ok
    return coords, valid, skews


def _atoms_at(dims: Canon, positions: IntArray) -> tuple[dict[Atom, IntArray], BoolArray | None]:
    """The flat position of every atom of ``dims`` at buffer ``positions`` (already inside [0, SIZE))."""
    return _digit_atoms(dims, _digits(dims, positions), None)


def _digits(dims: Canon, positions: IntArray) -> list[IntArray]:
    """The digit of every dimension of ``dims`` at buffer ``positions`` (already inside [0, SIZE))."""
    return [(positions // w) % d.size if w > 1 else positions % d.size
            for w, d in zip(digit_weights(dims), dims, strict=True)]


def _digit_atoms(dims: Canon, digits: list[IntArray], valid: BoolArray | None
                 ) -> tuple[dict[Atom, IntArray], BoolArray | None]:
    """The flat position of every atom of ``dims`` from each dimension's ``digits``, and ``valid`` narrowed to
    the digits inside each dimension's window (manual ``map``, L596–620)."""
    atoms: dict[Atom, IntArray] = {}
    for dig, d in zip(digits, dims, strict=True):
        if isinstance(d, Lin):
            # the combination's own position, as a coordinate of its own (lin_key): what a stream carries (issue
            # 27, convolution); map() still refuses it (one position, several indices, L1016)
            key = Sym(lin_key(d), d.size)
            atoms[key] = atoms[key] + dig if key in atoms else dig
            continue
        if d.offset or d.count < d.size:
            ok = (dig >= d.offset) & (dig < d.offset + d.count) if d.offset else dig < d.count
            valid = ok if valid is None else valid & ok
        if d.atom is None:
            continue
        rel = dig - d.offset if d.offset else dig
        contrib = rel * d.stride if d.stride != 1 else rel
        atoms[d.atom] = atoms[d.atom] + contrib if d.atom in atoms else contrib
    return atoms, valid


def lin_key(d: Lin) -> str:
    """The coordinate name a linear combination's position takes in an :class:`Evaluation`: its canonical text
    (``"$(W : 1, Fw : 1)"``).  A stream may carry a combination whole (the input row of a convolution, L3738–3776):
    its "index" there is the buffer position of the combination, which the buffer it is read from holds at the same
    digit (:func:`inverse` reads it back); the indices the position relates to (L1016) are the Stream Adapter's
    business (:mod:`visa.engines.contraction.shift`)."""
    from visa.mapping.canon import canon_text

    return canon_text((d,))


def _skew_others(dims: Canon) -> set[str]:
    """Axes a skewed axis of ``dims`` is skewed by that ``dims`` does not set itself.

    ``B = (B' + A) mod |B|`` (manual L1003) reads ``A`` from the index; where the mapping does not set ``A``
    the evaluator takes ``A = 0``, so the mapping holds only indices with ``A = 0`` (docs/manual-notes.md,
    review of issue 15): its inverse must not ignore ``A`` as it ignores an unused (broadcast) axis.
    """
    sets = set(_axis_sizes(dims))
    return {other for a in axis_atoms(dims) if isinstance(a, SkewAtom)
            for other, _ in a.skew.coefs if other not in sets}


def _axis_sizes(dims: Canon, *, skews: bool = True) -> dict[str, int]:
    """The size of every axis a canonical mapping holds (a skewed axis stands for its base)."""
    out: dict[str, int] = {}
    for a in axis_atoms(dims):
        if isinstance(a, Sym):
            out[a.name] = a.size
        elif skews:
            out[a.skew.base] = a.skew.size
    return out


def forward(dims: Canon, positions: npt.ArrayLike | None = None, *, digits_shape: bool = False) -> Evaluation:
    """Evaluate the mapping at buffer ``positions`` (any shape), or at every position when ``None`` (the
    manual's ``map``, L596–620, vectorised).

    Positions outside ``[0, SIZE)`` are invalid.  Raises :class:`RelationError` for linear combinations.
    With ``digits_shape`` (and every position), the arrays keep the shape of the canonical digits (one axis per
    digit, position order) as read-only broadcast views: nothing of the mapping's size is materialised.
    """
    size = canon_size(dims)
    if positions is None:
        nd = len(dims)
        shape = tuple(d.size for d in dims)
        digits: list[IntArray] = []
        for j, d in enumerate(dims):
            view = [1] * nd
            view[j] = d.size
            digits.append(np.arange(d.size, dtype=np.int64).reshape(view))
        valid0: BoolArray | None = None
    else:
        pos = np.asarray(positions, dtype=np.int64)
        shape = pos.shape
        inside = (pos >= 0) & (pos < size)
        digits = _digits(dims, np.where(inside, pos, 0))
        valid0 = inside
    atoms, valid = _digit_atoms(dims, digits, valid0)
    coords, wvalid, _ = _decode_atoms(atoms, shape)
    if wvalid is not None:
        valid = wvalid if valid is None else valid & wvalid
    if positions is None and digits_shape:
        views = {k: np.broadcast_to(v, shape) for k, v in coords.items()}
        return Evaluation(views, np.broadcast_to(True if valid is None else valid, shape))
    if positions is None:
        full = (size,)
        out = {k: np.broadcast_to(v, shape).reshape(full) for k, v in coords.items()}
        mask = np.ones(full, dtype=bool) if valid is None else np.broadcast_to(valid, shape).reshape(full)
        return Evaluation(out, mask)
    outc = {k: np.broadcast_to(v, shape) for k, v in coords.items()}
    mask2 = np.ones(shape, dtype=bool) if valid is None else np.broadcast_to(valid, shape)
    return Evaluation(outc, mask2)


def validity(dims: Canon) -> BoolArray:
    """``forward(dims).valid`` without the coordinates: whether each position holds an index (L616–620).

    The mask is built over the canonical digits (each digit's contribution broadcast, not materialised per
    axis), so a 4M-position stream costs one boolean array, not one int64 array per axis (issue 15).
    """
    ev = forward(dims, digits_shape=True)
    return np.array(ev.valid, dtype=bool).reshape(canon_size(dims))


def cover(dims: Canon) -> BoolArray:
    """Whether each position *may* hold an index: :func:`validity` for a mapping with linear combinations too.

    A linear combination ``$(e1 : n1, …)`` holds, at position ``p``, every index whose terms' positions ``s_k``
    add up to ``p = Σ s_k·n_k`` (L1006–1016): ``p`` is covered when some such split exists with every ``s_k`` a
    position its term holds.  For a mapping without one this is :func:`validity` (exact); with one it is a
    superset (a union of indices that adds up past the end of an axis, ``$(A : 1, A : 1)`` at 2 of A = 2, is
    counted as held), which is what a footprint needs: the bytes a read may touch (issue 27, the sliding-window
    view)."""
    if not any(isinstance(d, Lin) for d in _all_digits(dims)):
        return validity(dims)
    return _cover(dims, np.arange(canon_size(dims), dtype=np.int64))


def _all_digits(dims: Canon) -> list[Dim | Lin]:
    out: list[Dim | Lin] = []
    for d in dims:
        out.append(d)
        if isinstance(d, Dim) and isinstance(d.atom, Win):
            out.extend(_all_digits(d.atom.inner))
        elif isinstance(d, Lin):
            for part, _ in d.parts:
                out.extend(_all_digits(part))
    return out


def _lin_cover(d: Lin) -> BoolArray:
    """Positions of a linear combination reachable as ``Σ s_k·n_k`` with each ``s_k`` held by its term."""
    held = np.ones(1, dtype=np.int64)
    for part, n in d.parts:
        pv = cover(part)
        spread = np.zeros((pv.size - 1) * n + 1, dtype=np.int64)
        spread[::n] = pv
        held = (np.convolve(held, spread) > 0).astype(np.int64)
    out = np.zeros(d.size, dtype=bool)
    out[: min(d.size, held.size)] = held[: d.size] > 0
    return out


def _cover(dims: Canon, positions: IntArray) -> BoolArray:
    valid = np.ones(positions.shape, dtype=bool)
    atoms: dict[Atom, IntArray] = {}
    for dig, d in zip(_digits(dims, positions), dims, strict=True):
        if isinstance(d, Lin):
            valid &= _lin_cover(d)[dig]
            continue
        if d.offset or d.count < d.size:
            valid &= (dig >= d.offset) & (dig < d.offset + d.count)
        if d.atom is None:
            continue
        contrib = (dig - d.offset) * d.stride
        atoms[d.atom] = atoms[d.atom] + contrib if d.atom in atoms else contrib
    for atom, pos in atoms.items():
        if isinstance(atom, Win):
            ok = (pos >= 0) & (pos < atom.size)
            valid &= ok & _cover(atom.inner, np.where(ok, pos, 0))
    return valid


def _atom_position(atom: Atom, coords: dict[str, IntArray], shape: tuple[int, ...]) -> tuple[IntArray, BoolArray]:
    if isinstance(atom, Sym):
        p = coords.get(atom.name)
        if p is None:
            p = np.zeros(shape, dtype=np.int64)
        return p, (p >= 0) & (p < atom.size)
    if isinstance(atom, SkewAtom):
        sk = atom.skew
        b = coords.get(sk.base, np.zeros(shape, dtype=np.int64))
        for other, coef in sk.coefs:
            if other in coords:
                b = b + coef * coords[other]
        return np.mod(b, sk.size), np.ones(shape, dtype=bool)
    return inverse(atom.inner, coords, shape)


def inverse(dims: Canon, coords: dict[str, IntArray], shape: tuple[int, ...] | None = None,
            *, verify: bool | None = None) -> tuple[IntArray, BoolArray]:
    """Buffer position holding each tensor index in ``coords``, and whether the buffer holds it at all.

    Axes in ``coords`` that the mapping does not use are ignored (the buffer is constant along them:
    broadcast, manual L1557).  ``shape`` is the common broadcast shape of the coordinate arrays.
    """
    arrs = {k: np.asarray(v, dtype=np.int64) for k, v in coords.items()}
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in arrs.values())) if arrs else ()
    if verify is None and not is_regular(dims) and not _has_lin(dims) and canon_size(dims) <= _TABLE_LIMIT:
        return _table_inverse(dims, arrs, shape)
    weights = digit_weights(dims)
    position = np.zeros(shape, dtype=np.int64)
    held = np.ones(shape, dtype=bool)
    by_atom: dict[Atom, list[tuple[int, Dim]]] = {}
    for j, d in enumerate(dims):
        if isinstance(d, Lin):
            own = arrs.get(lin_key(d))
            if own is not None:  # the combination carried whole (lin_key): its position is the coordinate
                digit = np.broadcast_to(own, shape)
                held = held & (digit >= 0) & (digit < d.size)
                position = position + np.where(held, digit, 0) * weights[j]
                continue
            digit = np.zeros(shape, dtype=np.int64)
            for part, n in d.parts:
                q, h = inverse(part, arrs, shape)
                digit = digit + q * n
                held = held & h
            held = held & (digit < d.size)
            position = position + digit * weights[j]
        elif d.atom is not None:
            by_atom.setdefault(d.atom, []).append((j, d))
        else:
            position = position + d.offset * weights[j]
            if d.offset >= d.size:
                held = held & False
    parts = _coordinate_parts(by_atom, arrs) if len(by_atom) > 1 else None
    for atom, refs in by_atom.items():
        p, ok = _atom_position(atom, arrs if parts is None else parts[atom], shape)
        held = held & ok
        rem = p
        for j, d in sorted(refs, key=lambda r: -r[1].stride):
            rel = rem // d.stride if d.stride > 1 else rem
            rel = np.minimum(rel, d.count - 1)
            held = held & (rel >= 0)
            rem = rem - rel * d.stride
            position = position + (rel + d.offset) * weights[j]
        held = held & (rem == 0)
    if verify is None:
        verify = not is_regular(dims) and not any(isinstance(d, Lin) for d in dims)
    if verify:
        back = forward(dims, np.where(held, position, 0))
        for name, val in arrs.items():
            if name in back.coords:
                held = held & (back.coords[name] == val)
        names = set(arrs)
        for name, val in back.coords.items():
            if name not in names:
                held = held & (val == 0)
        for name in _skew_others(dims):  # forward reads them as 0 (issue 15 review)
            if name in arrs and name not in back.coords:
                held = held & (arrs[name] == 0)
        held = held & back.valid
    return position, np.broadcast_to(held, shape)


_TABLE_LIMIT = 1 << 24

#: How an atom contributes to one axis: multiples of ``grain``, each below ``reach``.
_Reach = tuple[int, int]


def _reach_of(dims: Canon) -> dict[str, _Reach] | None:
    """For each axis a canonical mapping sets: the grain and reach of its contributions (None when a skewed axis
    or a linear combination takes part: their coordinates are not sums of digits)."""
    out: dict[str, _Reach] = {}

    def add(axis: str, grain: int, reach: int) -> None:
        g, r = out.get(axis, (0, 1))
        out[axis] = (math.gcd(g, grain), r + reach - 1)

    for d in dims:
        if isinstance(d, Lin) or isinstance(d.atom, SkewAtom):
            return None
        if isinstance(d.atom, Sym):
            add(d.atom.name, d.stride, (d.count - 1) * d.stride + 1)
        elif isinstance(d.atom, Win):
            inner = _reach_of(d.atom.inner)
            if inner is None:
                return None
            for axis, (g, r) in inner.items():
                add(axis, g, r)
    return out


def _coordinate_parts(by_atom: dict[Atom, list[tuple[int, Dim]]], coords: dict[str, IntArray]
                      ) -> dict[Atom, dict[str, IntArray]] | None:
    """Each atom's share of the coordinates when an axis is split between atoms (``G / 2, [G % 2, D] # n``:
    the symbol G holds the multiples of 2, the composite G's remainder), so that each atom is inverted on its
    own share (issue 23: exact above the table's limit).  An axis's atoms must form a mixed radix: the finer
    atoms' contributions together stay below the next coarser one's grain.  None when they do not (the caller
    then inverts every atom on the whole coordinate and verifies)."""
    reach: dict[Atom, dict[str, _Reach]] = {}
    for atom, refs in by_atom.items():
        if isinstance(atom, Sym):
            g = 0
            for _, d in refs:
                g = math.gcd(g, d.stride)
            reach[atom] = {atom.name: (g, sum((d.count - 1) * d.stride for _, d in refs) + 1)}
        elif isinstance(atom, Win):
            got = _reach_of(atom.inner)
            if got is None:
                return None
            reach[atom] = got
        else:
            return None
    out = {atom: dict(coords) for atom in by_atom}
    axes = {axis for r in reach.values() for axis in r}
    for axis in axes:
        owners = sorted((a for a in by_atom if axis in reach[a]), key=lambda a: -reach[a][axis][0])
        if len(owners) < 2 or axis not in coords:
            continue
        rest = coords[axis]
        for k, atom in enumerate(owners):
            grain = reach[atom][axis][0]
            below = sum(reach[b][axis][1] - 1 for b in owners[k + 1:])
            if k == len(owners) - 1:
                out[atom][axis] = rest
            elif grain > 0 and below < grain:
                out[atom][axis] = rest - rest % grain
                rest = rest % grain
            else:
                return None
    return out


def has_lin(dims: Canon) -> bool:
    """Does ``dims`` hold a linear combination (at its top or inside a composite)?"""
    return any(isinstance(d, Lin) or (isinstance(d.atom, Win) and has_lin(d.atom.inner)) for d in dims)


_has_lin = has_lin


def lin_keys(dims: Canon) -> set[str]:
    """The :func:`lin_key` of every linear combination ``dims`` holds (at its top or inside a composite)."""
    out: set[str] = set()
    for d in dims:
        if isinstance(d, Lin):
            out.add(lin_key(d))
        elif isinstance(d.atom, Win):
            out |= lin_keys(d.atom.inner)
    return out


def _table_inverse(dims: Canon, coords: dict[str, IntArray], shape: tuple[int, ...]) -> tuple[IntArray, BoolArray]:
    """Inverse of an irregular mapping (an axis split across atoms, or skewed) by sorting its forward table.

    The first buffer position holding an index wins when several do.
    """
    ev = forward(dims)
    sizes = _axis_sizes(dims)
    for name in _skew_others(dims):  # forward reads them as 0: only coordinate 0 is held (issue 15 review)
        sizes.setdefault(name, 1)
    names = sorted(sizes)
    key = np.zeros(canon_size(dims), dtype=np.int64)
    want = np.zeros(shape, dtype=np.int64)
    ok = np.ones(shape, dtype=bool)
    for name in names:
        key = key * sizes[name] + ev.coord(name)
        c = np.broadcast_to(coords.get(name, np.zeros((), dtype=np.int64)), shape)
        ok = ok & (c >= 0) & (c < sizes[name])
        want = want * sizes[name] + np.where(ok, c, 0)
    valid_pos = np.nonzero(ev.valid)[0]
    keys = key[valid_pos]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    at = np.searchsorted(sorted_keys, want)
    at_c = np.minimum(at, max(len(sorted_keys) - 1, 0))
    if len(sorted_keys) == 0:
        return np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=bool)
    found = ok & (sorted_keys[at_c] == want)
    return np.where(found, valid_pos[order[at_c]], 0), found


def plain_dims(dims: Canon) -> tuple[tuple[str, int, int], ...] | None:
    """``(axis, stride, size)`` per dim, outermost first, when every dim of ``dims`` is a plain digit of an axis
    (no padding, window, skew or linear combination): then buffer position ``p`` holds, on each axis, the sum
    of its digits times their strides — the buffer is a strided view of the logical tensor (no evaluation
    needed, :func:`strided_view`).  None otherwise."""
    out = []
    for d in dims:
        if not isinstance(d, Dim) or not isinstance(d.atom, Sym) or d.count != d.size or d.offset:
            return None
        out.append((d.atom.name, d.stride, d.size))
    return tuple(out)


def covers_once(plain: tuple[tuple[str, int, int], ...], sizes: dict[str, int]) -> bool:
    """Does the plain mapping hold every index of the axes ``sizes`` exactly once (a permutation of them)?"""
    seen: dict[str, list[tuple[int, int]]] = {a: [] for a in sizes}
    for axis, stride, size in plain:
        if axis not in seen:
            return False
        seen[axis].append((stride, size))
    for axis, digits in seen.items():
        place = 1
        for stride, size in sorted(digits):
            if stride != place:
                return False
            place *= size
        if place != sizes[axis]:
            return False
    return True


def strided_view(logical: npt.NDArray[Any], order: Sequence[str], plain: tuple[tuple[str, int, int], ...],
                 writeable: bool = False) -> npt.NDArray[Any]:
    """The buffer of a plain mapping (:func:`plain_dims`) over ``logical`` (numpy dims in the axis ``order``),
    shaped by the mapping's dims: a view (flatten it for the buffer).  Writing through it (``writeable``) lays
    a buffer out as the logical tensor when the mapping holds every index once (:func:`covers_once`)."""
    shape = tuple(size for _, _, size in plain)
    strides = tuple(stride * logical.strides[list(order).index(axis)] for axis, stride, _ in plain)
    # as_strided goes through the array interface, which does not know extension types (ml_dtypes' floats):
    # stride an unsigned integer view of the same width, then view it back
    word = np.dtype(f"u{logical.dtype.itemsize}") if logical.dtype.itemsize in (1, 2, 4, 8) else logical.dtype
    view: npt.NDArray[Any] = np.lib.stride_tricks.as_strided(logical.view(word), shape, strides, writeable=writeable)
    return view.view(logical.dtype)
