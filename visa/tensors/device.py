"""What a tensor handle, a DMA move and a stream stage need of the device they run on (manual L36–67,
L150–155).

The host layer's :class:`~visa.context.Context` is that device: its hardware profile, its memories, the
running kernel's chip count and the schedule its operations are recorded on.  This layer names only the
:class:`Device` protocol, so the handles and the stream stages import nothing from the host layer (imports
point down only, ARCHITECTURE "Layers").  :class:`DmaContext` is ``ctx.pdma`` / ``ctx.tdma``, the DMA contexts
a move takes (L44–47); :class:`TuHandle` is what a stream keeps of ``ctx.main`` / ``ctx.sub`` (L150–155).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from visa.errors import TypestateError
from visa.hw import HardwareProfile
from visa.memory.device import DeviceMemory
from visa.validate import wrong_type

__all__ = ["Device", "Recorded", "DmaContext", "TuHandle", "dma_device"]


class Recorded(Protocol):
    """An operation on the schedule, as the caller that recorded it sees it."""

    @property
    def end(self) -> int:
        """The cycle the operation finishes: its outputs are ready then."""
        ...


@runtime_checkable
class Device(Protocol):
    """A simulated device: ``hw``, ``memory``, the running kernel's ``num_chips`` (``None`` on the host,
    L1079) and ``record``, which puts an operation on the schedule ("Scheduling", L7042–7070)."""

    hw: HardwareProfile
    memory: DeviceMemory
    num_chips: int | None

    def record(self, *args: Any, **kwargs: Any) -> Recorded:
        """Put an operation on the device's schedule and return it (its ``end`` is when its outputs are ready)."""
        ...


class _Track:
    """A context of the device that runs on its own track of the schedule (``ctx.<kind>``, manual L36–67): the
    device, the track's name and the runtime guard every such context offers."""

    __slots__ = ("ctx", "kind")

    def __init__(self, ctx: Device, kind: str) -> None:
        self.ctx = ctx
        self.kind = kind

    def __repr__(self) -> str:
        return f"ctx.{self.kind}"

    def when(self, tensor: Any, predicate: Callable[[Any], Any] | None = None) -> bool:
        """Runtime guard (MoE blockwise execution, manual L8596–8707): read the device scalar ``tensor`` on
        this context's track and return ``bool(predicate(value))``; write ``if ctx.main.when(count, lambda n:
        n > 0): ...`` so that skipped work costs only the guard's read (:mod:`visa.tensors.guard`).  ``tensor``
        may be an ``HbmScalar``, its SPM copy or an expression on them (``ctx.main.when(s > 0)``; design API.md
        §8): from SPM the guard costs a register read, from HBM a DMA read."""
        from visa.tensors.guard import when

        return when(self.ctx, self.kind, tensor, predicate)


class DmaContext(_Track):
    """``ctx.pdma`` (PCIe: host ↔ HBM) or ``ctx.tdma`` (tensor DMA: HBM/SPM ↔ DM; manual L44–47)."""

    __slots__ = ()


class TuHandle(_Track):
    """``ctx.main`` or ``ctx.sub`` as a stream sees it: the device and which Tensor Unit context runs the pass
    (manual L150–155, L3046–3053).  :class:`visa.stream.TuContext` adds ``begin``."""

    __slots__ = ()


def dma_device(handle: object, kind: str, call: str) -> Device:
    """The device of ``handle`` when it is the DMA context ``kind`` (``"pdma"`` or ``"tdma"``, L44–47); a
    :class:`~visa.errors.TypestateError` naming the call otherwise."""
    if not isinstance(handle, DmaContext):
        raise wrong_type(kind, handle, f"ctx.{kind}", call=call)
    if handle.kind != kind:
        what = "PCIe DMA between host and HBM" if kind == "pdma" else "tensor DMA between HBM and DM"
        raise TypestateError(f"{call} takes ctx.{kind} (the {what}), got ctx.{handle.kind}", call=call,
                             fix=f"pass ctx.{kind}")
    return handle.ctx
