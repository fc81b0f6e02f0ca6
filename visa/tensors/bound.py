"""Bound outputs: ``launch(kernel, ctx, *args, out=existing)`` (design API.md §8; the reference's
``launch(f, args).output(&mut hbm)``, furiosa-opt v0.7, a reference extension — docs/manual-notes.md "issue 26").

A bound output is an HBM tensor made before the launch (on the host, or by an earlier launch) that the kernel's
result is written into instead of a new buffer: the binding points the kernel's output buffer at it, so the
write that made the result lands in ``existing`` at no extra cost (no DMA is added to the schedule; the kernel's
last write is the one that fills it).  The rules (:func:`check_bound`, pure): the result and ``existing`` hold
the same dtype and equivalent Chip and Element mappings (the same bytes mean the same elements), and
``existing`` is a live HBM tensor of the launching context.  The result's bytes are then moved to
``existing``'s address (:func:`bind`), the temporary result released, and ``existing`` returned, current and
ready when the result was.
"""

from __future__ import annotations

from typing import Any

from visa.errors import DtypeError, LayoutError, TypestateError
from visa.memory.layout import element_bytes
from visa.validate import wrong_type

__all__ = ["check_out", "check_bound", "bind"]


def check_out(out: object, ctx: Any, kernel: str) -> Any:
    """``out`` must be a live HBM tensor of ``ctx`` (checked before the kernel runs: nothing is written if not)."""
    from visa.tensors.handles import HbmTensor

    if not isinstance(out, HbmTensor):
        raise wrong_type("out", out, "an HbmTensor to bind the kernel's result to", call="launch",
                         fix=f"pass out=hbm, an HbmTensor made earlier (e.g. host.to_hbm(...)); {kernel} writes "
                             "its result there")
    out.check_context(ctx, "launch")
    if out.region is None:
        raise TypestateError(f"{out.describe()} was freed (or is a from_addr handle): a bound output is a live "
                             "tensor", call="launch", fix="bind a tensor that is still allocated")
    return out


def check_bound(result: object, out: Any, kernel: str) -> None:
    """The kernel's result must be an HBM tensor with ``out``'s dtype and equivalent Chip and Element mappings."""
    from visa.tensors.handles import HbmTensor

    if not isinstance(result, HbmTensor):
        raise TypestateError(f"{kernel} returned {type(result).__name__}, not an HbmTensor: only an HBM result can "
                             "be written into a bound output", call="launch", fix="return the HbmTensor result, or "
                                                                                 "drop out=")
    if result.dtype is not out.dtype:
        raise DtypeError(f"{kernel}'s result holds {result.dtype!r}, the bound output {out.describe()} holds "
                         f"{out.dtype!r}", call="launch", fix="bind an output of the result's type")
    for level in ("Chip", "Element"):
        got, want = result.levels[level], out.levels[level]
        if got != want:
            raise LayoutError(f"{kernel}'s result has {level} {got!r}, the bound output {want!r}: the same bytes "
                              "would hold other elements", call="launch", level=level, mapping=repr(got),
                              axis=", ".join(sorted(got.axes ^ want.axes)) or None,
                              fix=f"bind an output laid out as {got!r}, or return the result in {want!r}")


def bind(result: Any, out: Any) -> Any:
    """Move the result's bytes (and which are written) to ``out``'s address on every chip, release the result,
    and return ``out``, current and ready when the result was."""
    ctx = result.ctx
    n = element_bytes(result.dtype, result.levels["Element"].size)
    if result.address != out.address:
        for chip in range(result.levels["Chip"].size):
            img = ctx.memory.chip(chip).hbm
            data, known = img.window(result.address, result.address + n)
            data, known = data.copy(), known.copy()
            dst, dknown = img.window(out.address, out.address + n)
            dst[...] = data
            dknown[...] = known
        result.free()
    if out.region is not None:
        ctx.memory.registry.note_write(out.region, call="launch", writer=f"the bound result of {out.describe()}")
        out.region.stale_by = None  # it holds the new value in its own layout: current
    out.ready_at = max(out.ready_at, result.ready_at)
    return out
