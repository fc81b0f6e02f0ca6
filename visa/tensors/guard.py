"""``ctx.main.when(count, predicate)``: a runtime guard over a device scalar (MoE blockwise execution, manual
L8596–8707); the cost model is :func:`visa.engines.guard.guard_cycles`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from visa.engines.common import EngineReport
from visa.engines.guard import guard_cycles
from visa.errors import PoisonError, TypestateError
from visa.memory.layout import element_bytes
from visa.tensors.device import Device
from visa.validate import expect_callable, wrong_type

__all__ = ["when"]


def when(ctx: Device, track: str, tensor: Any, predicate: Callable[[Any], Any]) -> bool:
    """Run the guard on ``track`` (``"main"``, ``"sub"`` or ``"tdma"``): True when the guarded work should run.

    The predicate gets the tensor's logical value (numpy; a one-element tensor's value is a 0-d array or a
    one-element array, so ``lambda n: n > 0`` works) and must give one truth value."""
    from visa.tensors.handles import DeviceTensor

    call = f"ctx.{track}.when"
    if not isinstance(tensor, DeviceTensor) or tensor.MEMORY not in ("hbm", "dm"):
        raise wrong_type("tensor", tensor, "a device scalar in HBM or DM (an HbmTensor or DmTensor)", call=call,
                         fix="move the count to HBM or DM first (e.g. commit it from the Vector Engine)")
    expect_callable(predicate, "predicate", call=call)
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
    if arr.dtype != np.bool_:  # a count, a string, None: truthy or not, not a decision (issue 23)
        raise wrong_type("predicate", got, "a predicate giving a truth value (a bool), e.g. lambda n: n > 0",
                         call=call, fix="compare the value: lambda n: n > 0, not lambda n: n")
    nbytes = element_bytes(tensor.dtype, tensor.levels["Element"].size)
    cost = guard_cycles(ctx.hw, nbytes)
    taken = bool(arr.reshape(-1)[0])
    report = EngineReport("guard", f"read {nbytes} B of {tensor.describe()}: {'run' if taken else 'skip'}",
                          cost - ctx.hw.dma.startup_cycles, latency=ctx.hw.dma.startup_cycles)
    ctx.record(track, f"{call}({tensor.describe()}) → {'run' if taken else 'skip'}", [report], reads=[tensor])
    return taken
