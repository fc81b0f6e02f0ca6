"""Stream side of the Vector Engine: ``vector_init`` and the vector typestate (manual L4549–6755).

``CollectTensor.vector_init()`` / ``AccumulationTensor.vector_init()`` (:mod:`visa.stream.stages`) call
:func:`vector_init`, which returns a :class:`VectorInitTensor`.  From there the single-stream stage classes
(:mod:`visa.stream.vector.single`), the two-group pair classes (:mod:`visa.stream.vector.pair`) and the
inter-slice block lead to ``vector_final()``, which returns :class:`visa.stream.stages.VectorFinalTensor`.
"""

from __future__ import annotations

from typing import Any

from visa.engines.vector.plan import plan_entry
from visa.stream.stages import StreamTensor
from visa.stream.vector.base import VeState
from visa.stream.vector.pair import (
    VectorPairClipTensor,
    VectorPairFpDivTensor,
    VectorPairFpTensor,
    VectorPairFpToFxpTensor,
    VectorPairFxpTensor,
    VectorPairFxpToFpTensor,
    VectorPairLogicTensor,
    VectorPairNarrowTensor,
    VectorPairWidenTensor,
    VectorTensorPair,
)
from visa.stream.vector.single import (
    VectorBranchTensor,
    VectorClipTensor,
    VectorFilterTensor,
    VectorFpDivTensor,
    VectorFpTensor,
    VectorFpToFxpTensor,
    VectorFxpTensor,
    VectorFxpToFpTensor,
    VectorInitTensor,
    VectorInterSliceReduceTensor,
    VectorIntraSliceReduceTensor,
    VectorLogicTensor,
    VectorNarrowTensor,
    VectorWidenTensor,
)

__all__ = [
    "vector_init", "VectorInitTensor", "VectorBranchTensor", "VectorLogicTensor", "VectorFxpTensor",
    "VectorFxpToFpTensor", "VectorNarrowTensor", "VectorFpTensor", "VectorIntraSliceReduceTensor",
    "VectorFpDivTensor", "VectorWidenTensor", "VectorFpToFxpTensor", "VectorClipTensor", "VectorFilterTensor",
    "VectorInterSliceReduceTensor", "VectorTensorPair", "VectorPairLogicTensor", "VectorPairFxpTensor",
    "VectorPairFxpToFpTensor", "VectorPairNarrowTensor", "VectorPairFpTensor", "VectorPairFpDivTensor",
    "VectorPairWidenTensor", "VectorPairFpToFxpTensor", "VectorPairClipTensor",
]


def vector_init(stream: StreamTensor[Any, Any, Any, Any, Any, Any]) -> VectorInitTensor[Any, Any, Any, Any, Any, Any]:
    """Enter the Vector Engine (L4560–4578): i32 and f32 streams only (L4551); the mapping does not change."""
    plan_entry(stream.tu.ctx.hw, stream.dtype, stream.layout.packet, "vector_init")
    return VectorInitTensor(stream.tu, stream.layout, stream.data, stream.reports, stream.inputs, stream.carried,
                            ve=VeState(sections=(stream.layout.time.size,)))
