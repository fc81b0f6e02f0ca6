"""Streams through the Tensor Unit: the typestate classes and, per engine, the code behind their methods.

``stages`` holds the classes (one per pipeline position, manual L1107–1121); each engine's stream-side
module (``fetch``, ``switch``, ``collect``, ``contraction``, ``cast``, ``transpose``, ``commit``,
``vector``) implements the methods of its stage by calling the engine's pure ``plan``/``execute``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.stream import fetch as _fetch  # (begin, once imported: not again at every pass)
from visa.stream.stages import (
    STAGE_METHODS,
    AccumulationKind,
    AccumulationTensor,
    AlignedTensor,
    BeginTensor,
    CastTensor,
    CollectTensor,
    ContractionTensor,
    FetchTensor,
    ReduceOp,
    StreamTensor,
    SwitchTensor,
    TransposeTensor,
    VectorFinalTensor,
)
from visa.tensors.device import TuHandle

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.tensors.handles import DmTensorView

__all__ = [
    "StreamTensor", "BeginTensor", "FetchTensor", "SwitchTensor", "CollectTensor", "AlignedTensor",
    "ContractionTensor", "AccumulationTensor", "CastTensor", "TransposeTensor", "VectorFinalTensor",
    "AccumulationKind", "ReduceOp", "STAGE_METHODS", "begin", "begin_interleaved", "TuContext",
]


class TuContext(TuHandle):
    """``ctx.main`` or ``ctx.sub``: a Tensor Unit execution context (manual L150–155, L3046–3053)."""

    __slots__ = ()

    def begin(self, view: DmTensorView, dual_channel: bool = False) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
        """Start a stream from a DM tensor view: Time ``m["1"]``, Packet = the view's Element (L1701).
        ``dual_channel=True`` (``ctx.main`` only) combines both contexts' channels for the pass: 64 bytes per
        cycle through fetch, switch and collect, the sub context busy meanwhile (L2125–2142, L3052)."""
        return begin(self, view, dual_channel)

    def begin_heterogeneous(self, axis: Mapping, views: Any) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
        """Heterogeneous fetch sequencers (L1748): the slices whose Slice coordinate of ``axis`` is g fetch from
        ``views[g]`` with their own sequencer (its own base and pattern); ``fetch`` then names the one stream."""
        import visa.stream.fetch as fetch

        return fetch.begin_heterogeneous(self, axis, views)

    def generate(self, view: Any, value: int | float) -> None:
        """Generate mode (``ctx.sub`` only, L2325–2326): write one 32-bit ``value`` at a one-element DM view in every
        slice the tensor occupies, by an ITOS command that bypasses the Tensor Unit pipeline."""
        import visa.stream.commit as commit

        commit.generate(self, view, value)

    def begin_interleaved(self, axis: Mapping, lhs: DmTensorView,
                          rhs: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
        """Interleave two tensors with identical mappings along a new Time axis ``axis`` of size 2 (L1843–1868)."""
        return begin_interleaved(self, axis, lhs, rhs)


def begin(tu: TuHandle, view: DmTensorView, dual_channel: bool = False) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``ctx.main.begin(dm.view())``: a stream at the start of the pipeline (Time ``1``, Packet = Element;
    L1700–1743); ``dual_channel`` as :meth:`TuContext.begin`."""
    return _fetch.begin(tu, view, dual_channel)


def begin_interleaved(tu: TuHandle, axis: Mapping, lhs: DmTensorView,
                      rhs: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``ctx.main.begin_interleaved::<I, …>(lhs, rhs)`` (manual L1843–1868)."""
    import visa.stream.fetch as fetch

    return fetch.begin_interleaved(tu, axis, lhs, rhs)


# The stages import these inside their methods (to keep the import graph acyclic); import them with the package,
# so that a kernel's first launch does not pay for importing them (issue 24).
import visa.stream.collect  # noqa: E402, F401
import visa.stream.commit  # noqa: E402, F401
import visa.stream.fetch  # noqa: E402, F401
import visa.stream.switch  # noqa: E402, F401
