"""A tile whose start is a runtime scalar: ``view.tile(m["Group"], 1, tile_mapping, start=s)`` (design API.md §8;
the reference's runtime-indexed copy, furiosa-opt v0.5 "a tile offset can be an expression" and v0.9
``HbmScalar`` — a reference extension, docs/manual-notes.md "issue 26").

The DMA (or fetch, or commit) that uses the tile computes its address at run time from the scalar: a command
processor register read from SPM, folded into the command's issue.  Here:

* the start's value is read when the tile is made (``start`` must be an ``SpmScalar`` or an expression on one:
  the address comes from a register, so an ``HbmScalar`` is staged first with ``s.to_spm(ctx.sub)``); a value
  whose tile runs past ``dim`` is refused then, naming it (the reference rejects it at execution);
* the tile's *reach* is every element offset a start in ``0 .. dim.size - size`` gives (where the layout allows
  a tile there, :func:`visa.memory.layout.tile_offset`): the schedule records the whole footprint they cover
  (:func:`visa.schedule.footprints.span_of`), so a reader or writer of any of those bytes is ordered against
  the operation whatever the value;
* the tile *depends* on the scalar's bytes: an operation using it waits until the scalar is written.
"""

from __future__ import annotations

from typing import Any

from visa.errors import AddressError, TypestateError, VisaError
from visa.mapping import Mapping
from visa.memory.layout import tile_offset
from visa.tensors.scalar import leaves, scalar_value

__all__ = ["runtime_tile", "reach_offsets"]

#: Beyond this many possible starts the reach is taken as an arithmetic progression when its ends agree with
#: the first step (a regular layout), else every start is checked up to this many.
_CHECK_ALL = 256


def reach_offsets(element: Mapping, dim: Mapping, size: int, tile_mapping: Mapping, call: str) -> tuple[int, ...]:
    """The element offsets of the tiles at every start ``0 .. dim.size - size`` the layout allows."""
    last = dim.size - size

    def at(v: int) -> int | None:
        try:
            return tile_offset(element, dim, size, tile_mapping, v, call)
        except VisaError:
            return None

    first = at(0)
    if last > _CHECK_ALL and first is not None:
        second, end = at(1), at(last)
        if second is not None and end is not None and end == first + last * (second - first):
            return tuple(first + v * (second - first) for v in range(last + 1))
    out = [o for o in (at(v) for v in range(min(last, _CHECK_ALL * 16) + 1)) if o is not None]
    return tuple(out)


def runtime_tile(view: Any, dim: Mapping, size: int, tile_mapping: Mapping, start: Any, call: str
                 ) -> tuple[int, tuple[int, ...], tuple[Any, ...]]:
    """(the tile's element offset for the start's value, the reach as absolute offsets, the scalars read)."""
    scalars = leaves(start)
    ctx = view.base.ctx
    for s in scalars:
        if s.MEMORY != "spm":
            raise TypestateError(f"a tile's runtime start is read from a register: {s!r} is in HBM", call=call,
                                 fix="stage it once with s.to_spm(ctx.sub) and take the start from the copy")
        if s.ctx is not ctx:
            raise TypestateError(f"{s!r} belongs to another context", call=call, fix="use the context that made it")
    v = scalar_value(start, call)
    if not 0 <= v <= dim.size - size:
        raise AddressError(f"the runtime start {start!r} = {v}: a tile of {size} from {v} runs past {dim!r} (size "
                           f"{dim.size}); the copy is refused at run time", call=call, level="Element",
                           mapping=repr(dim), axis=", ".join(sorted(dim.axes)) or None,
                           fix=f"keep the scalar in 0..{dim.size - size} (guard it with ctx.main.when)")
    offset = tile_offset(view.element, dim, size, tile_mapping, v, call)
    base = view.offset
    prior = view.reach if view.reach is not None else (base,)
    mine = reach_offsets(view.element, dim, size, tile_mapping, call)
    reach = tuple(sorted({p + o for p in prior for o in mine}))
    return offset, reach, tuple(scalars)
