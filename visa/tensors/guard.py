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


def when(ctx: Device, track: str, tensor: Any, predicate: Callable[[Any], Any] | None = None) -> bool:
    """Run the guard on ``track`` (``"main"``, ``"sub"`` or ``"tdma"``): True when the guarded work should run.

    ``tensor`` is an HBM or DM tensor, or a device scalar (:mod:`visa.tensors.scalar`: an ``HbmScalar``, its SPM
    copy, or an expression on them such as ``s > 0``).  The predicate gets the tensor's logical value (numpy; a
    one-element tensor's value is a 0-d array or a one-element array, so ``lambda n: n > 0`` works) or the
    scalar's value (a Python int, or bool for ``bool_``) and must give one truth value; without one the value
    itself is tested."""
    from visa.tensors.handles import DeviceTensor
    from visa.tensors.scalar import is_scalar

    call = f"ctx.{track}.when"
    if is_scalar(tensor):
        return _when_scalar(ctx, track, tensor, predicate, call)
    if predicate is None:
        raise wrong_type("predicate", predicate, "a callable such as lambda n: n > 0", call=call)
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


def _when_scalar(ctx: Device, track: str, s: Any, predicate: Callable[[Any], Any] | None, call: str) -> bool:
    """The guard on a device scalar or an expression on some: each scalar read from SPM costs a register read,
    from HBM a DMA read (:mod:`visa.engines.guard`); the guard waits until they are written."""
    from visa import dtypes as dt
    from visa.engines.guard import register_read_cycles
    from visa.tensors.scalar import DeviceScalar, leaves, scalar_value

    if predicate is not None:
        expect_callable(predicate, "predicate", call=call)
    scalars = leaves(s)
    for leaf in scalars:
        if leaf.ctx is not ctx:
            raise TypestateError(f"{leaf!r} belongs to another context", call=call, fix="use the context that made it")
    value: Any = scalar_value(s, call)
    if isinstance(s, DeviceScalar) and s.dtype is dt.bool_:
        value = bool(value)
    got = predicate(value) if predicate is not None else value
    arr = np.asarray(got)
    if arr.size != 1:
        raise TypestateError(f"the guard's predicate gave {arr.size} values, not one truth value", call=call,
                             fix="return one bool")
    taken = bool(arr.reshape(-1)[0])
    cost = 0
    latency = 0
    for leaf in scalars:
        if leaf.MEMORY == "spm":
            cost += register_read_cycles(ctx.hw, leaf.nbytes)
        else:
            cost += guard_cycles(ctx.hw, leaf.nbytes) - ctx.hw.dma.startup_cycles
            latency += ctx.hw.dma.startup_cycles
    where = ", ".join(f"{leaf!r}" for leaf in scalars) or "a constant"
    report = EngineReport("guard", f"read {where}: {'run' if taken else 'skip'}", cost, latency=latency)
    ctx.record(track, f"{call}({s!r}) → {'run' if taken else 'skip'}", [report], reads=[x.span() for x in scalars])
    return taken
