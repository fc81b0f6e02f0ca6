"""The footprint of a tensor handle: which bytes of which memory a tensor, a view or a tile occupies (manual
L1085–1093, L813–832, "Scheduling" L7067–7070).

Aliases see the same bytes because they are the same bytes: a view, a tile, a ``relabel`` or a ``from_addr``
handle gives the span of the addresses it covers, whatever object it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa.mapping.canon import canon_size
from visa.mapping.evaluate import digit_weights
from visa.memory.footprint import EMPTY, Footprint, Span, merge_intervals, units_of
from visa.memory.footprint import index_mask as _mask
from visa.memory.footprint import valid_positions as _valid
from visa.memory.layout import element_bytes, sym_only
from visa.tensors.handles import DeviceTensor, TensorView

__all__ = ["footprint", "span_of", "units_of", "live_dm_bytes", "tensor_dm_bytes", "dependencies"]

#: Views whose Element is larger than this are covered by their runs (:func:`_runs`) or, failing that, by their
#: extent (one interval) instead of element by element: a conservative cover, cheap for huge tensors.
_EXACT_LIMIT = 1 << 20
#: At most this many runs describe a large view (else its extent).
_RUN_LIMIT = 1 << 16


def _runs(element: Any) -> tuple[npt.NDArray[np.int64], int] | None:
    """The starts and the length (positions) of runs covering every position a large regular Element holds: the
    trailing unpadded digits and the first padded one make a run, the digits outside it enumerate the starts
    (each within its valid range).  A cover, not always exact (an axis split into digits may stop short of its
    last digit's range); ``None`` when the mapping is not a plain digit decomposition or has too many runs."""
    dims = element.canon
    if not sym_only(dims):
        return None
    weights, total = digit_weights(dims), canon_size(dims)
    j = len(dims) - 1
    while j >= 0 and dims[j].offset == 0 and dims[j].count == dims[j].size:
        j -= 1
    if j < 0:
        return np.zeros(1, dtype=np.int64), total
    inner, length = dims[j].offset * weights[j], dims[j].count * weights[j]
    count = 1
    for d in dims[:j]:
        count *= d.count
    if count > _RUN_LIMIT:
        return None
    starts = np.full(1, inner, dtype=np.int64)
    for d, w in zip(dims[:j], weights[:j], strict=True):
        starts = (starts[:, None] + ((d.offset + np.arange(d.count, dtype=np.int64)) * w)[None, :]).reshape(-1)
    return starts, length


def span_of(handle: Any) -> Span | None:
    """The span of a device tensor or a view of one (``None`` for a host tensor: the host is synchronous)."""
    reach = None
    if isinstance(handle, TensorView):
        base, element, offset = handle.base, handle.element, handle.offset
        reach = handle.reach
    elif isinstance(handle, DeviceTensor):
        base, element, offset = handle, None, 0
    else:
        return None
    levels = base.levels
    if element is None or (reach is None and offset == 0 and element == levels["Element"]):
        return _whole(base)
    hw = base.ctx.hw
    memory = base.MEMORY
    bits = base.dtype.size_bits
    start = base.address
    if reach is not None and element is not None:  # a runtime tile start: every tile it could reach (API.md §8)
        valid = _valid(element)
        lead, tail = (int(valid[0]), int(valid[-1]) + 1) if valid.size else (0, 0)
        starts = np.asarray(reach, dtype=np.int64)
        lo = start + ((starts + lead) * bits) // 8
        hi = start + ((starts + tail) * bits + 7) // 8
    elif element is None or (offset == 0 and element == levels["Element"]):
        lo = np.array([start], dtype=np.int64)
        hi = lo + element_bytes(base.dtype, levels["Element"].size)
    elif bits % 8 == 0:  # whole bytes: the view's intervals are those of its Element, shifted (kept per Element)
        rel_lo, rel_hi = _relative(element, bits)
        shift = start + offset * bits // 8
        chips, units, rows = _units(memory, levels, hw)
        return Span(memory, chips, units, rows, rel_lo, rel_hi, shift)  # (the Element's intervals, shared)
    else:
        lo, hi = _intervals(element, offset, bits)
        lo, hi = start + lo, start + hi
    chips, units, rows = _units(memory, levels, hw)
    return Span.of(memory, chips, lo, hi, units=units, rows=rows)


def _whole(base: Any) -> Span:
    """The span of a whole tensor: its Element's bytes from its address, in the units and rows its levels hold —
    kept on the handle (``_span``) with the placement it was derived from (address, dtype and level mappings: an
    alias handle made by ``relabel`` or ``as_tensor`` has its own), so that a pass reading or writing a tensor
    derives it once."""
    memo = base._span
    levels, address, dtype = base.levels, base.address, base.dtype
    if memo is not None and memo[0] is levels and memo[1] == address and memo[2] is dtype:
        span: Span = memo[3]
        return span
    memory, hw = base.MEMORY, base.ctx.hw
    maps = tuple(levels.values())
    ident = (memory, id(hw), dtype, address, tuple(levels), *map(id, maps))
    seen = _WHOLE_BY_ID.get(ident)
    if seen is not None and seen[0] is hw and all(a is b for a, b in zip(seen[1], maps, strict=True)):
        base._span = (levels, address, dtype, seen[2])
        return seen[2]
    key = (memory, hw.dm.slices_per_cluster, hw.spm.slices_per_pe if memory == "spm" else 0, dtype, address,
           *[(name, mp.key) for name, mp in levels.items()])
    got = _WHOLE.get(key)
    if got is None:  # (a Span is immutable, its intervals read-only: tensors of one placement share it)
        nbytes = element_bytes(dtype, levels["Element"].size)
        chips, units, rows = _units(memory, levels, hw)
        lo = np.array([address] if nbytes > 0 else [], dtype=np.int64)
        hi = lo + nbytes
        lo.setflags(write=False)
        hi.setflags(write=False)
        got = Span(memory, chips, units, rows, lo, hi)  # (one interval: already merged)
        if len(_WHOLE) >= 4096:
            _WHOLE.clear()
        _WHOLE[key] = got
    if len(_WHOLE_BY_ID) >= 4096:
        _WHOLE_BY_ID.clear()
    _WHOLE_BY_ID[ident] = (hw, maps, got)
    base._span = (levels, address, dtype, got)
    return got


#: :func:`_whole`'s span per placement: memory, the unit counts the units are found with, dtype, address and the level
#: mappings (exact keys): a new handle of a placement seen before (a register load's result at every pass) finds it.
_WHOLE: dict[tuple[Any, ...], Span] = {}
#: :data:`_WHOLE`'s span found by the identity of the hardware profile and the level mappings (kept in the value, so
#: that their ids name no other object meanwhile; both immutable): a handle of the same mapping objects finds it
#: without building their exact keys.
_WHOLE_BY_ID: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...], Span]] = {}


def _intervals(element: Any, offset: int, bits: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The byte intervals ``[lo, hi)`` (relative to the tensor's address) the positions ``offset + p`` of the
    Element occupy: each position, or runs covering them, or the extent (a large Element)."""
    if element.size > _EXACT_LIMIT and (runs := _runs(element)) is not None:
        first, length = runs
        return ((offset + first) * bits) // 8, ((offset + first + length) * bits + 7) // 8
    if element.size > _EXACT_LIMIT or element.size == 0:
        return (np.array([(offset * bits) // 8], dtype=np.int64),
                np.array([((offset + element.size) * bits + 7) // 8], dtype=np.int64))
    pos = offset + _valid(element)
    return (pos * bits) // 8, ((pos + 1) * bits + 7) // 8


_RELATIVE: dict[object, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
_UNITS: dict[object, tuple[int, int, int]] = {}


def _relative(element: Any, bits: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_intervals` at offset 0, merged, for whole-byte elements (a view at offset ``o`` is the same
    intervals shifted by ``o · bits / 8``): derived once per Element (by its exact key), read-only (issue 24)."""
    key = (element.key, bits)
    got = _RELATIVE.get(key)
    if got is None:
        lo, hi = merge_intervals(*_intervals(element, 0, bits))
        lo.setflags(write=False)
        hi.setflags(write=False)
        if len(_RELATIVE) >= 4096:
            _RELATIVE.clear()
        got = _RELATIVE[key] = (lo, hi)
    return got


def _units(memory: str, levels: dict[str, Any], hw: Any) -> tuple[int, int, int]:
    """The chip, unit and row bitmasks of a tensor's levels (``-1``: every unit of HBM, every row outside the
    TRF), kept per level mappings (by their exact keys; issue 24)."""
    spc = hw.dm.slices_per_cluster
    key = (memory, spc, hw.spm.slices_per_pe if memory == "spm" else 0,
           *(levels[name].key for name in ("Chip", "Cluster", "Slice", "Pe", "Row") if name in levels))
    got = _UNITS.get(key)
    if got is None:
        chips = _mask(_valid(levels["Chip"]))
        if memory == "hbm":
            got = (chips, -1, -1)
        elif memory == "spm":  # units: cluster · PEs per cluster + PE (design API.md §8)
            pes = spc // hw.spm.slices_per_pe
            clusters, pe = _valid(levels["Cluster"]), _valid(levels["Pe"])
            got = (chips, _mask((clusters[:, None] * pes + pe[None, :]).reshape(-1)), -1)
        else:
            got = (chips, units_of(levels, spc), _mask(_valid(levels["Row"])) if "Row" in levels else -1)
        if len(_UNITS) >= 4096:
            _UNITS.clear()
        _UNITS[key] = got
    return got


def dependencies(*handles: Any) -> Footprint:
    """What using these handles reads besides their own bytes: the device scalars a runtime tile's start reads
    (design API.md §8), so that an operation writing such a tile still waits for the scalar."""
    spans = [d.span() for h in handles for d in getattr(h, "depends", ())]
    return Footprint(tuple(spans)) if spans else EMPTY


def footprint(*handles: Any, depends: bool = True) -> Footprint:
    """The footprint of tensors, views and footprints together (``None`` and host tensors are skipped); with
    ``depends`` also the scalars a runtime tile's start reads (:func:`dependencies`)."""
    spans: list[Span] = list(dependencies(*handles).spans) if depends else []
    for h in handles:
        if h is None:
            continue
        if isinstance(h, Footprint):
            spans.extend(h.spans)
        elif isinstance(h, Span):
            spans.append(h)
        else:
            s = span_of(h)
            if s is not None:
                spans.append(s)
    return Footprint(tuple(spans)) if spans else EMPTY


def tensor_dm_bytes(region: Any) -> dict[int, int]:
    """DM bytes per chip a live DM region holds: its bytes per slice times the slices its tensor occupies."""
    owner = region.owner() if region.owner is not None else None
    levels = getattr(owner, "levels", None)
    units = 1
    if owner is not None and levels is not None:
        units = _valid(levels["Cluster"]).size * _valid(levels["Slice"]).size
    return {c: (region.hi - region.lo) * units for c in region.chips}


def live_dm_bytes(registry: Any) -> dict[int, int]:
    """DM bytes per chip held by live tensors now (:func:`tensor_dm_bytes` of each live DM region)."""
    out: dict[int, int] = {}
    for region in registry.live_regions("dm"):
        for c, n in tensor_dm_bytes(region).items():
            out[c] = out.get(c, 0) + n
    return out
