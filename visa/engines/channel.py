"""Single and dual channel mode: the width of the Tensor Unit's data path (manual L2119–2142, L3046–3053).

The Tensor Unit has two Switch Engines, one per context, each ``hw.switch.width_bytes`` (32) wide.  In single
channel mode a pass moves one 32-byte flit per cycle through the fetch → switch → collect path, "half of the
available bandwidth" (L2125–2126).  In **dual channel mode** the main and sub contexts' channels combine into
``hw.switch.dual_channel_width_bytes`` (64) per cycle (L2127, L2137–2142, L3052): a pass that leaves the sub
context idle moves twice the bytes per cycle, and the sub context is unavailable for independent work while it
runs (L2142).  It "requires explicit configuration" (L2127): ``ctx.main.begin(view, dual_channel=True)``.

This module is the one place of the rule: :func:`dual` rewrites a pass's engine reports (the channel engines'
cycles, :data:`CHANNEL_ENGINES`), :func:`check_context` refuses the mode on the sub context.  The schedule gives
the pass the sub context's lane too (``visa.stream.collect.record_pass``), so that an independent sub-context
operation issued meanwhile waits for it.

A fetch whose sequencer reads less than a channel's width per cycle (``fetch_size`` < 32 bytes, L1757) is bound
by its reads, not by the channel: its cycles do not change.  The stream's mappings do not change either: the
flits the Collect Engine emits are the same 32-byte units two at a time (the Flit Buffer holds "1 dual-channel
flit (64 bytes)", L3928).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from visa.engines.common import EngineReport
from visa.errors import TypestateError
from visa.hw import HardwareProfile

__all__ = ["CHANNEL_ENGINES", "dual", "dual_cycles", "check_context", "width_bytes"]

#: The engines on the channel's data path: what the wider path speeds up (L2119–2127).
CHANNEL_ENGINES = frozenset({"fetch", "switch", "collect"})


def width_bytes(hw: HardwareProfile, dual_channel: bool) -> int:
    """Bytes per cycle of the data path: one Switch Engine's width, or both combined (L2125–2127, L2140)."""
    return hw.switch.dual_channel_width_bytes if dual_channel else hw.switch.width_bytes


def dual_cycles(hw: HardwareProfile, report: EngineReport) -> int:
    """An engine's cycles in dual channel mode: ``ceil(cycles · single width / dual width)`` for a channel engine
    moving a full flit per cycle (fetch: ``fetch_size`` = the channel's width), else unchanged."""
    if report.engine not in CHANNEL_ENGINES:
        return report.cycles
    single, wide = hw.switch.width_bytes, hw.switch.dual_channel_width_bytes
    if report.engine == "fetch" and int(dict(report.details).get("fetch_size", single)) < single:  # type: ignore[call-overload]
        return report.cycles
    return -(-report.cycles * single // wide)


def dual(hw: HardwareProfile, reports: Sequence[EngineReport]) -> tuple[EngineReport, ...]:
    """A pass's reports in dual channel mode: each channel engine's cycles by :func:`dual_cycles`, its details
    saying so."""
    out = []
    wide = hw.switch.dual_channel_width_bytes
    for r in reports:
        if r.engine in CHANNEL_ENGINES:
            r = dataclasses.replace(r, cycles=dual_cycles(hw, r),
                                    details=(*r.details, ("channel", f"dual, {wide} B/cycle (L2127, L2140)")))
        out.append(r)
    return tuple(out)


def check_context(kind: str, call: str = "begin") -> None:
    """Refuse dual channel mode outside the main context: it borrows the sub context's channel (L3052)."""
    if kind != "main":
        raise TypestateError(
            f"dual channel mode combines the main and sub contexts' channels for a main-context pass (L2127, L3052); "
            f"ctx.{kind} has no other channel to borrow", call=call, level="Time",
            fix="ctx.main.begin(view, dual_channel=True), or a single-channel ctx.sub.begin(view)")
