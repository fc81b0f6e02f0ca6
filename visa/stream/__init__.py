"""Streams through the Tensor Unit: the typestate classes and, per engine, the code behind their methods.

``stages`` holds the classes (one per pipeline position, manual L1107–1121); each engine's stream-side
module (``fetch``, ``switch``, ``collect``, ``contraction``, ``cast``, ``transpose``, ``commit``,
``vector``) implements the methods of its stage by calling the engine's pure ``plan``/``execute``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    StreamTensor,
    SwitchTensor,
    TransposeTensor,
    VectorFinalTensor,
)

if TYPE_CHECKING:
    from visa.context import TuContext
    from visa.mapping import Mapping
    from visa.memory.tensors import DmTensorView

__all__ = [
    "StreamTensor", "BeginTensor", "FetchTensor", "SwitchTensor", "CollectTensor", "AlignedTensor",
    "ContractionTensor", "AccumulationTensor", "CastTensor", "TransposeTensor", "VectorFinalTensor",
    "AccumulationKind", "STAGE_METHODS", "begin", "begin_interleaved",
]


def begin(tu: TuContext, view: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``ctx.main.begin(dm.view())``: a stream at the start of the pipeline (Time ``1``, Packet = Element;
    L1700–1743)."""
    import visa.stream.fetch as fetch

    return fetch.begin(tu, view)


def begin_interleaved(tu: TuContext, axis: Mapping, lhs: DmTensorView,
                      rhs: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``ctx.main.begin_interleaved::<I, …>(lhs, rhs)`` (manual L1843–1868)."""
    import visa.stream.fetch as fetch

    return fetch.begin_interleaved(tu, axis, lhs, rhs)
