"""Stream side of the Cast Engine (manual L6756–6819): ``stream.cast(D2, OutPacket)``.

The engine follows the Collect, Contraction (accumulation) or Vector stage and precedes Transpose and Commit
(pipeline order L131, L3018).  Chip, Cluster, Slice and Time pass through; the rules and the conversion are
:mod:`visa.engines.cast`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.engines import cast as engine
from visa.engines.common import EngineReport
from visa.mapping.core import ensure_mapping
from visa.validate import expect_dtype

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import CastTensor, StreamTensor

__all__ = ["cast"]


def cast(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], dtype: Any, packet: Mapping
) -> CastTensor[Any, Any, Any, Any, Any, Any]:
    """``cast::<D2, OutPacket>()`` (manual L6756–6784): narrow every element and pad each flit.

    Plans the engine (type pair, one-flit packets, OutPacket = input data padded), converts the data and
    appends the engine's report (one flit per cycle, L6816–6819).
    """
    from visa.stream.stages import CastTensor

    dst = expect_dtype(dtype, "dtype", call="cast")
    packet = ensure_mapping(packet, "OutPacket", "cast", "Packet")
    hw = stream.ctx.hw
    engine.check_context(hw, stream.tu.kind)
    layout = stream.layout
    config = engine.plan(hw, layout.dtype, dst, layout.packet, packet, layout.time)
    data = engine.execute(config, stream.data)
    report = EngineReport("cast", config.describe(), engine.cycles(config), details=engine.report_details(config))
    out: CastTensor[Any, Any, Any, Any, Any, Any] = stream.then(
        CastTensor, layout.with_(dtype=dst, packet=packet), data, report)
    return out
