"""``view.memset(value, ctx.sub)`` / ``ctx.tdma``: fill a view of a live tensor in place (design API.md §8; the
rules, execution and cost are :mod:`visa.engines.memset`'s).

The view's tensor stays live and current (as after ``to_dm_view``); any other live tensor over the written bytes
goes stale.  The fill is put on the context's track (``sub`` or ``tdma``) writing the view, so a later reader
waits for it and it waits for earlier users of those bytes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from visa.engines import memset as engine
from visa.engines.common import EngineReport
from visa.engines.dma.config import Side
from visa.errors import TypestateError, VisaError
from visa.tensors.device import DmaContext, TuHandle
from visa.validate import wrong_type

__all__ = ["memset"]


def _dma_cost(hw: Any, dtype: Any, side: Side) -> tuple[int, Any]:
    """The DMA model's cycles for writing the view's bytes (the view's layout on both sides: the fill's source
    is a constant the engine reads as it writes), and the plan (for the lanes), or a startup plus one request
    per 256 bytes per chip where the layout has no plain DMA (L2467–2469)."""
    from visa.engines.dma.cost import cycles
    from visa.engines.dma.plan import plan

    try:
        p = plan(hw, dtype, side, side, call="memset", own_padding=False)
    except VisaError:
        return -1, None
    return cycles(p).total, p


def memset(view: Any, value: object, handle: object) -> Any:
    """Fill every byte of ``view`` (its held positions; a whole-tensor view its padding too) with ``value``'s
    image, on ``handle`` (``ctx.sub`` for a DM view, or ``ctx.tdma``).  Returns the view's tensor."""
    from visa.tensors.handles import TensorView

    call = "memset"
    if not isinstance(view, TensorView):
        raise wrong_type("view", view, "a view of an HBM or DM tensor", call=call)
    if not isinstance(handle, TuHandle | DmaContext):
        raise wrong_type("ctx", handle, "ctx.sub or ctx.tdma", call=call)
    if handle.kind == "pdma":
        raise TypestateError("ctx.pdma moves host data over PCIe; a memset runs on ctx.tdma (or ctx.sub for DM)",
                             call=call, fix="pass ctx.tdma")
    base = view.base
    ctx = handle.ctx
    if base.MEMORY not in engine.CONTEXTS:
        raise TypestateError(f"a memset fills an HBM or DM view, not {base.describe()}", call=call,
                             fix="fill the tensor before loading the register file")
    base.check_context(ctx, call)
    whole = view.offset == 0 and view.element == base.levels["Element"]
    bit = base.element_bit_offset() + view.offset * base.dtype.size_bits
    p = engine.plan(ctx.hw, base.dtype, base.MEMORY, handle.kind, base.levels, view.element, bit, value,
                    whole=whole, call=call)
    images = [getattr(ctx.memory.chip(c), base.MEMORY) for c in range(base.levels["Chip"].size)]
    transfer = None
    if handle.kind == "tdma":
        side = replace(Side.of(base.MEMORY, view.levels, name=repr(view)), bit_address=bit)
        dma, transfer = _dma_cost(ctx.hw, base.dtype, side)
        if dma < 0:
            nbytes = p.bytes_per_unit * max(1, len(p.units))
            dma = ctx.hw.dma.startup_cycles + ctx.hw.dma.requests(max(1, nbytes))
        cost = engine.cycles(p, dma)
        report = EngineReport("dma", str(p), cost - ctx.hw.dma.startup_cycles, latency=ctx.hw.dma.startup_cycles,
                              nbytes=p.bytes_per_unit * max(1, len(p.units)) * len(p.chips))
    else:
        cost = engine.cycles(p)
        report = EngineReport("memset", str(p), cost, nbytes=p.bytes_per_unit * len(p.units) * len(p.chips))
    engine.execute(p, images)
    if base.region is not None:
        ctx.memory.registry.note_write(base.region, call=call, writer=f"memset({view!r})")
    op = ctx.record(handle.kind, f"memset({view!r}, {p.value!r}) on ctx.{handle.kind}", [report], writes=[view],
                    transfer=transfer)
    base.ready_at = max(base.ready_at, op.end)
    return base
