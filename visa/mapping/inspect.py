"""Mapping inspection: questions a kernel writer asks of a layout (design API.md §8; a reference extension, the
mapping queries of furiosa-opt v0.7–v0.9, docs/manual-notes.md "issue 26").

Each answer is read off the canonical form (:mod:`visa.mapping.canon`: one mixed-radix digit per dim,
outermost first, L674–716), so equivalent mappings answer alike:

* :func:`remove_axis` — the mapping without the digits of one axis (what a slice of that axis leaves);
* :func:`is_broadcast` — every position holds the same data: no digit names a data axis and none is padding;
* :func:`has_no_padding` — every position holds an index (L741–778: padding positions map to nothing);
* :func:`innermost_writable_size` — how many positions, from the innermost end, form one run a write may cover
  before it meets a padding position (the trailing unpadded digits and the first padded one, as a DMA or a
  commit packs its innermost run, L2424–2428).

>>> from visa.mapping.axes import AxisSet
>>> ax = AxisSet(A=4, B=6, X=2)
>>> str(remove_axis(ax.m["A, X, B"], "X")), is_broadcast(ax.m["X"], data_axes="A B")
('A, B', True)
>>> has_no_padding(ax.m["A, B # 8"]), innermost_writable_size(ax.m["A, B # 8"]), innermost_writable_size(ax.m["A, B"])
(False, 6, 24)
"""

from __future__ import annotations

from collections.abc import Iterable

from visa.errors import LayoutError
from visa.mapping import canon as C
from visa.mapping.core import Mapping

__all__ = ["remove_axis", "is_broadcast", "has_no_padding", "innermost_writable_size"]


def remove_axis(mapping: Mapping, axis: str) -> Mapping:
    """``mapping`` without the digits of ``axis``: its other digits (padding included) in the same order, so the
    size shrinks by the axis' extent in it.  An axis the mapping does not name leaves it unchanged; an axis
    inside a composite digit, a skew or a linear combination (where it cannot be cut out alone) is a
    :class:`~visa.errors.LayoutError` naming it."""
    if not isinstance(axis, str):
        from visa.validate import wrong_type

        raise wrong_type("axis", axis, 'an axis name such as "A"', call="remove_axis")
    if axis not in mapping.axes:
        return mapping
    kept: list[C.Dim | C.Lin] = []
    for d in mapping.canon:
        if isinstance(d, C.Dim) and isinstance(d.atom, C.Sym):
            if d.atom.name != axis:
                kept.append(d)
            continue
        if isinstance(d, C.Dim) and d.atom is None:
            kept.append(d)
            continue
        inner = Mapping.from_canon((d,), mapping.axis_set).axes
        if axis in inner:
            raise LayoutError(f"{axis} shares a digit with {', '.join(sorted(inner - {axis})) or 'itself'} in "
                              f"{mapping!r}; a digit that mixes axes cannot lose one of them",
                              call="remove_axis", mapping=repr(mapping), axis=axis,
                              fix=f"lay {axis} out as digits of its own first")
        kept.append(d)
    return Mapping.from_canon(tuple(kept), mapping.axis_set) if kept else Mapping.identity(mapping.axis_set)


def is_broadcast(mapping: Mapping, data_axes: Iterable[str] | str | None = None) -> bool:
    """Whether every position of ``mapping`` holds the same data: no position is padding and no digit names one
    of ``data_axes`` (the tensor's own axes; a string is split on spaces).  Without ``data_axes`` every axis the
    mapping names counts as data, so only a mapping that names none (``m["1"]``) is a broadcast.  A level laid
    out over a broadcast mapping replicates the tensor on each of its positions (the placement a fetch lift
    replaces, design API.md §8; visa spells a broadcast digit as an axis the data does not have, as the
    manual's code does with a new axis, L3164)."""
    names = set(mapping.axes if data_axes is None else
                (data_axes.split() if isinstance(data_axes, str) else data_axes))
    return has_no_padding(mapping) and not (mapping.axes & names)


def has_no_padding(mapping: Mapping) -> bool:
    """Whether every position holds an index (no ``#`` padding, resize or window leaves one empty, L741–812)."""
    dims = mapping.canon
    if all(isinstance(d, C.Dim) and d.offset == 0 and d.count == d.size and not isinstance(d.atom, C.Win)
           for d in dims):
        return True
    return bool(mapping.validity().all())


def innermost_writable_size(mapping: Mapping) -> int:
    """The positions, counted from the innermost end, that one run of writes covers before it meets padding:
    the product of the trailing unpadded digits, times the held count of the first padded digit (``A, B # 8``
    with B = 6 gives 6; ``A, B`` gives A·B).  A composite, skewed or linear digit ends the run before it."""
    run = 1
    for d in reversed(mapping.canon):
        if not isinstance(d, C.Dim) or isinstance(d.atom, (C.Win, C.SkewAtom)):
            return run
        if d.offset != 0 or d.count != d.size:
            return run * (d.count if d.offset == 0 else 1)
        run *= d.size
    return run
