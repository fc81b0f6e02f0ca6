"""Runtime guards: work that runs only when a device scalar says so (MoE blockwise execution, manual
L8596–8707: "At runtime, sparse operations skip execution for empty Grids", L8616).

The manual names the behaviour but no instruction or cost.  visa's model (docs/manual-notes.md, issue 13):
the context's command stream reads the guard's bytes with one DMA command — a startup (L2467, L2827) and one
request per 256 bytes (L2469) — and branches on them; when the predicate is false the guarded work is not
issued, so a skipped block costs only this read.  Spelling (design, not in the manual)::

    if ctx.main.when(count, lambda n: n > 0):      # or ctx.tdma.when(...)
        ...   # the guarded pass or DMA

``when`` waits for the guard tensor to be ready, records the read on that context's track (so the guarded
work starts after it), reads the tensor's logical value (a :class:`~visa.errors.PoisonError` if a byte was
never written) and returns ``bool(predicate(value))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from visa.engines.common import EngineReport
from visa.errors import PoisonError, TypestateError, VisaError
from visa.hw import HardwareProfile
from visa.memory.layout import element_bytes

if TYPE_CHECKING:
    from visa.context import Context

__all__ = ["guard_cycles", "when"]


def guard_cycles(hw: HardwareProfile, nbytes: int) -> int:
    """Cycles of a guard reading ``nbytes``: one DMA command's startup and its requests (L2467, L2469)."""
    return hw.dma.startup_cycles + hw.dma.requests(max(1, nbytes))


def when(ctx: Context, track: str, tensor: Any, predicate: Callable[[Any], Any]) -> bool:
    """Run the guard on ``track`` (``"main"``, ``"sub"`` or ``"tdma"``): True when the guarded work should run.

    The predicate gets the tensor's logical value (numpy; a one-element tensor's value is a 0-d array or a
    one-element array, so ``lambda n: n > 0`` works) and must give one truth value."""
    from visa.memory.tensors import DeviceTensor

    call = f"ctx.{track}.when"
    if not isinstance(tensor, DeviceTensor) or tensor.MEMORY not in ("hbm", "dm"):
        raise VisaError(f"a guard reads a device scalar in HBM or DM, got {type(tensor).__name__}", call=call,
                        fix="move the count to HBM or DM first (e.g. commit it from the Vector Engine)")
    tensor.check_context(ctx, call)
    tensor.check_readable(call)
    try:
        value = tensor.logical()
    except PoisonError as err:
        raise PoisonError(f"the guard {tensor.describe()}: {err.message}", call=call, fix=err.fix) from None
    got = predicate(value)
    arr = np.asarray(got)
    if arr.size != 1:
        raise TypestateError(f"the guard's predicate gave {arr.size} values, not one truth value", call=call,
                             fix="reduce it, e.g. lambda n: (n > 0).any(), or guard on a one-element tensor")
    nbytes = element_bytes(tensor.dtype, tensor.levels["Element"].size)
    cost = guard_cycles(ctx.hw, nbytes)
    taken = bool(arr.reshape(-1)[0])
    report = EngineReport("guard", f"read {nbytes} B of {tensor.describe()}: {'run' if taken else 'skip'}",
                          cost - ctx.hw.dma.startup_cycles, latency=ctx.hw.dma.startup_cycles)
    ctx.record(track, f"{call}({tensor.describe()}) → {'run' if taken else 'skip'}", [report], inputs=[tensor])
    return taken
