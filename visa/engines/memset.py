"""Memset: every byte of a view set to a value's image (design API.md §8, ``view.memset(value, ctx.sub)`` or
``ctx.tdma``; the reference's ``memset(value)``, furiosa-opt v0.5 — a reference extension, docs/manual-notes.md
"issue 26").

The manual has no fill instruction; a fill is what its engines already do with a constant:

* **the sub context** writes SRAM with ``stos`` commands, whole 8-byte words (``commit_size`` 8, L2330), one
  word a cycle in every slice at once (the Commit Engine's rate, L2187–2248; ParallelCopy, L7603–7606): a DM
  view only, every run of it starting and ending on an 8-byte boundary (else the words would write bytes
  outside the view);
* **the tensor DMA** (``ctx.tdma``) writes an HBM or DM view as a DMA writes it (L2375–2384): DM writes keep
  8-byte aligned addresses and packets (L2424–2427), HBM any byte.

Three pure functions, as for every engine: :func:`plan` (the rules, shared with the mypy plugin through
:func:`check_value` and :func:`check_context`), :func:`execute` over the byte images, :func:`cycles`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from visa import dtypes as dt
from visa.errors import AddressError, DtypeError, TypestateError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.memory.footprint import merge_intervals
from visa.memory.images import DenseImage, PagedImage
from visa.memory.layout import element_bytes

__all__ = ["MemsetPlan", "check_value", "check_context", "plan", "execute", "cycles", "CONTEXTS"]

#: Where a memset may run, per medium of the view (the sub context writes DM only, L3046–3051).
CONTEXTS = {"dm": ("sub", "tdma"), "hbm": ("tdma",)}


@dataclass(frozen=True, eq=False)
class MemsetPlan:
    """A fill: the ``medium`` and ``context`` (``"sub"`` or ``"tdma"``), the ``pattern`` (the bytes of one
    element, two for a 4-bit type's byte), the byte ``runs`` ``[lo, hi)`` written in every unit (relative to the
    unit: a slice for DM, the chip for HBM), the ``chips`` and the flat DM ``units`` written."""

    hw: HardwareProfile
    dtype: type[dt.Scalar]
    medium: str
    context: str
    value: Any
    pattern: bytes
    runs: tuple[tuple[int, int], ...]
    chips: tuple[int, ...]
    units: tuple[int, ...]

    @property
    def bytes_per_unit(self) -> int:
        """Bytes written in each unit."""
        return sum(hi - lo for lo, hi in self.runs)

    def __str__(self) -> str:
        how = "stos 8-byte words (sub context)" if self.context == "sub" else "tensor DMA writes"
        return (f"memset {self.dtype!r} {self.value!r} by {how}: {len(self.runs)} run(s), {self.bytes_per_unit} B "
                f"per {'slice' if self.medium == 'dm' else 'chip'} on {len(self.chips)} chip(s)")


def check_value(dtype: type[dt.Scalar], value: object, call: str = "memset") -> Any:
    """``value`` must be a number ``dtype`` holds exactly (no rounding, no overflow); returns it in storage."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        from visa.validate import wrong_type

        raise wrong_type("value", value, f"a number of {dtype!r}", call=call)
    if not dt.is_representable(value, dtype):
        raise DtypeError(f"{value!r} is not a value of {dtype!r}: a memset writes the value's exact image",
                         call=call, level="Element",
                         fix=f"pass a value {dtype!r} holds exactly ("
                             + (f"{int(dtype.min)}..{int(dtype.max)})" if dtype.kind == "int" else f"±{dtype.max:g})"))
    return dt.as_storage(dtype, np.asarray([value]))[0]


def check_context(medium: str, context: str, call: str = "memset") -> None:
    """A DM view is filled by ``ctx.sub`` or ``ctx.tdma``, an HBM view by ``ctx.tdma`` (the sub context writes
    SRAM only, L3046–3051; ``ctx.main`` runs the compute pipeline, not fills)."""
    allowed = CONTEXTS.get(medium, ())
    if context not in allowed:
        where = " or ".join(f"ctx.{c}" for c in allowed)
        raise TypestateError(f"a memset of an {medium.upper()} view runs on {where}, not ctx.{context}"
                             + (" (the sub context writes SRAM only, manual L3046–3051)" if context == "sub" else ""),
                             call=call, fix=f"pass {where}")


def _runs(dtype: type[dt.Scalar], element: Mapping, bit_offset: int, call: str) -> list[tuple[int, int]]:
    """The byte runs the view's held positions cover (merged), relative to the unit."""
    valid = np.flatnonzero(element.validity()).astype(np.int64)
    if valid.size == 0:
        return []
    lo_bits = bit_offset + valid * dtype.size_bits
    hi_bits = lo_bits + dtype.size_bits
    a, b = merge_intervals(lo_bits, hi_bits)
    if np.any(a % 8) or np.any(b % 8):
        raise AddressError(f"a {dtype!r} run of the view starts or ends inside a byte; a memset writes whole bytes",
                           call=call, level="Element", mapping=repr(element),
                           fix="fill a view of whole bytes (an even number of 4-bit elements, from an even one)")
    return [(int(x) // 8, int(y) // 8) for x, y in zip(a, b, strict=True)]


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], medium: str, context: str, levels: dict[str, Mapping],
         element: Mapping, bit_offset: int, value: object, *, whole: bool = False, call: str = "memset"
         ) -> MemsetPlan:
    """Plan the fill of the view with ``levels`` (its base's, the view's ``element``) whose element 0 is at
    ``bit_offset`` in each unit.  ``whole`` (a view of the whole tensor) fills its padding too: its bytes are
    the tensor's own.  Raises the rule's :class:`~visa.errors.VisaError`."""
    check_context(medium, context, call)
    stored = check_value(dtype, value, call)
    if whole:
        total = element_bytes(dtype, element.size)
        runs = [(bit_offset // 8, bit_offset // 8 + total)] if element.size else []
    else:
        runs = _runs(dtype, element, bit_offset, call)
    if context == "sub" or medium == "dm":
        word = max(hw.commit.sub_commit_sizes) if context == "sub" else hw.dma.write_address_align["DM"]
        bad = next(((lo, hi) for lo, hi in runs if lo % word or hi % word), None)
        if bad is not None:
            who = "the sub context writes whole 8-byte words (commit_size 8, manual L2330)" if context == "sub" \
                else "DM writes need 8-byte aligned addresses and packets (manual L2424–2427)"
            raise AddressError(f"bytes {bad[0]}..{bad[1]} of the view are not whole {word}-byte words: {who}",
                               call=call, level="Element", mapping=repr(element),
                               axis=", ".join(sorted(element.axes)) or None,
                               fix=f"fill a view whose runs are multiples of {word} bytes from {word}-byte "
                                   "addresses (pad the Element), or fill the whole tensor")
    k = 2 if dtype.size_bits == 4 else 1
    pattern = dt.to_bytes(dtype, np.full(k, stored, dtype=dtype.storage)).tobytes()
    chips = tuple(int(c) for c in np.flatnonzero(levels["Chip"].validity()))
    units: tuple[int, ...] = ()
    if medium == "dm":
        cl = np.flatnonzero(levels["Cluster"].validity())
        sl = np.flatnonzero(levels["Slice"].validity())
        units = tuple(int(u) for u in (cl[:, None] * hw.dm.slices_per_cluster + sl[None, :]).reshape(-1))
    shown = stored.item() if dtype.kind == "int" else float(stored)
    return MemsetPlan(hw, dtype, medium, context, shown, pattern, tuple(runs), chips, units)


def _unit_ranges(units: tuple[int, ...]) -> list[tuple[int, int]]:
    """Contiguous ranges ``[a, b)`` of the sorted flat units."""
    out: list[tuple[int, int]] = []
    for u in sorted(units):
        if out and out[-1][1] == u:
            out[-1] = (out[-1][0], u + 1)
        else:
            out.append((u, u + 1))
    return out


def execute(p: MemsetPlan, images: list[DenseImage | PagedImage]) -> None:
    """Write the pattern over every run, in every unit of every chip of ``p.chips`` (``images[c]`` is chip
    ``c``'s DM or HBM image); the bytes are written (known) from then on."""
    pat = np.frombuffer(p.pattern, dtype=np.uint8)
    for chip in p.chips:
        img = images[chip]
        for lo, hi in p.runs:
            fill = np.resize(pat, hi - lo)
            if isinstance(img, PagedImage):
                data, known = img.window(lo, hi)
                data[...] = fill
                known[...] = True
                continue
            flat = img.flat_data(lo, hi)
            n = img.nbytes
            for a, b in _unit_ranges(p.units):
                flat.reshape(-1, n)[a:b, lo:hi] = fill
                img.mark_written(slice(a, b), lo, hi)


def cycles(p: MemsetPlan, dma_cycles: int = 0) -> int:
    """The sub context: one 8-byte word a cycle in every slice at once, so the bytes per slice over 8 (L2330,
    L2187–2248).  The tensor DMA: ``dma_cycles``, the DMA model's cost of writing the view's bytes (the caller
    plans it: :func:`visa.engines.dma.cost.cycles` of the view's own layout, its read side the constant)."""
    if p.context == "sub":
        return max(1, -(-p.bytes_per_unit // max(p.hw.commit.sub_commit_sizes)))
    return dma_cycles
