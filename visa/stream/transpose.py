"""Stream side of the Transpose Engine (manual L6820–7041): ``stream.transpose(OutTime, OutPacket)``.

The engine sits after the Fetch, Collect, Contraction (Accumulation), Vector or Cast stage and before the
Commit Engine (pipeline order L131, L3018; sources L6872–6875; interface L6826–6838); the result, a
:class:`~visa.stream.stages.TransposeTensor`, can only be committed.  Chip, Cluster and Slice pass through
unchanged (L6839).  The rules and the arithmetic are :mod:`visa.engines.transpose`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.engines import transpose as engine
from visa.engines.common import EngineReport
from visa.mapping.core import ensure_mapping

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import StreamTensor, TransposeTensor

__all__ = ["transpose"]


def transpose(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], time: Mapping, packet: Mapping
) -> TransposeTensor[Any, Any, Any, Any, Any, Any]:
    """``transpose::<OutTime, OutPacket>()`` (manual L6826–6838): reorder elements within flits.

    Plans the engine (every limit of ``hw.transpose``), runs the configuration over the stream's data and
    appends the engine's report (the single/double buffering cycle formula, L6887–6912).
    """
    from visa.stream.stages import TransposeTensor

    time = ensure_mapping(time, "OutTime", "transpose", "Time")
    packet = ensure_mapping(packet, "OutPacket", "transpose", "Packet")
    hw = stream.ctx.hw
    engine.check_context(hw, stream.tu.kind)
    layout = stream.layout
    config = engine.plan(hw, layout.dtype, layout.time, layout.packet, time, packet)
    data = engine.execute(config, stream.data)
    report = EngineReport("transpose", config.describe(), engine.cycles(config),
                          details=engine.report_details(config))
    out: TransposeTensor[Any, Any, Any, Any, Any, Any] = stream.then(
        TransposeTensor, layout.with_(time=time, packet=packet), data, report)
    return out
