"""Stream side of the Switch Engine (manual L3054–3542): ``fetch_tensor.switch(Slice2, Time2, config)``.

The switch sits between the Fetch and the Collect Engine (pipeline order L131, L3016); its result, a
:class:`~visa.stream.stages.SwitchTensor`, is collected (or committed) next.  Chip, Cluster and the packet
pass through unchanged (L3085–3089).  The rules and the routing are :mod:`visa.engines.switch`'s.

When a kernel skips ``switch`` and collects the FetchTensor directly, the packets still cross the ring in
forwarding mode (ring size 1, L3120–3138): :func:`forwarding_report` is that report, for the Collect side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.engines import switch as engine
from visa.engines.cache import cached
from visa.engines.common import EngineReport, StreamLayout
from visa.mapping.core import ensure_mapping

if TYPE_CHECKING:
    from visa.hw import HardwareProfile
    from visa.mapping import Mapping
    from visa.stream.stages import FetchTensor, SwitchTensor

__all__ = ["switch", "forwarding_report", "report"]


def report(plan: engine.SwitchPlan) -> EngineReport:
    """The Switch Engine's report for one plan: configuration text and ``ring_size × time × flits`` cycles
    (L3520–3542)."""
    return EngineReport("switch", plan.describe(), engine.cycles(plan), details=engine.report_details(plan))


def forwarding_report(hw: HardwareProfile, layout: StreamLayout) -> EngineReport:
    """The report of a forwarding pass through the ring (``collect()`` straight on a FetchTensor, L3120–3138)."""
    return _forwarding_report(hw, layout.dtype, layout.slice, layout.time, layout.packet)


@cached(256)
def _forwarding_report(hw: HardwareProfile, dtype: type[Any], slice_: Mapping, time: Mapping,
                       packet: Mapping) -> EngineReport:
    """:func:`forwarding_report`, planned once per layout (a pure function of its arguments; the report is
    frozen, so every pass of the layout may share it)."""
    return report(engine.forwarding(hw, dtype, slice_, time, packet))


def switch(
    stream: FetchTensor[Any, Any, Any, Any, Any, Any], slice_: Mapping, time: Mapping, config: Any
) -> SwitchTensor[Any, Any, Any, Any, Any, Any]:
    """``switch::<Slice2, Time2>(config)`` (manual L3066–3075): redistribute packets across the ring.

    Plans the routing (every rule of the topology), runs it over the stream's data as one gather and appends
    the Switch Engine's report (``ring_size × input_time × cycles_per_packet``, L3520–3542).
    """
    from visa.stream.stages import SwitchTensor

    slice_ = ensure_mapping(slice_, "Slice2", "switch", "Slice")
    time = ensure_mapping(time, "Time2", "switch", "Time")
    layout = stream.layout
    plan = engine.plan(stream.ctx.hw, layout.dtype, layout.slice, layout.time, layout.packet, slice_, time,
                       config)
    data = engine.execute(plan, stream.data)
    out: SwitchTensor[Any, Any, Any, Any, Any, Any] = stream.then(
        SwitchTensor, layout.with_(slice=slice_, time=time), data, report(plan))
    return out
