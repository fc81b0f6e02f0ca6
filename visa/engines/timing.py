"""What one Tensor Unit command costs: the one place a pass's cycles are put together (design ARCHITECTURE.md
principle 8; docs/cost-model.md).

A pass (fetch → … → commit, or a register load) is one command of its context (L150–155, L7057–7065).  It costs

    overhead + fill + busy

* **busy**: its slowest engine's cycles — the engines stream in a pipeline, each at the rate its own ``cycles``
  states (fetch L2060, switch L3137, collect, contraction L4544, vector L5270–5273, cast L6816, transpose L6905,
  commit L2243);
* **fill**: every engine's stated latency, added along the pipeline (type conversion 1–2 cycles L2135, the
  reducer tree's depth 5–7 L4543, one cycle per ALU L5275, the inter-slice ring L6738–6749, the accumulator's
  output);
* **overhead**: issue, sequencer start and the pipeline's fixed fill and drain, which the manual does not state.
  A completely contiguous load into the TRF or the VRF (fetch → forwarding → collect → register file, no adapter
  stage, no padding) runs as the StoTRF/StoVRF short command; every other pass goes through the full pipeline,
  which "has higher setup overhead" (L4112–4114).  The two figures are ``hw.timing.short_command_cycles`` and
  ``hw.timing.full_command_cycles``, fitted to the reference's published makespans (docs/manual-notes.md,
  "Timing model (issue 22)").

A dependency between two contexts adds ``hw.timing.context_handoff_cycles`` (the schedule applies it,
:meth:`visa.schedule.Schedule.record`).

>>> from visa.hw import RNGD
>>> from visa.engines.common import EngineReport
>>> cost = pass_cost(RNGD, (EngineReport("fetch", "", 4), EngineReport("reducer.tree", "", 2, latency=5)))
>>> (cost.overhead, cost.fill, cost.busy, cost.total) == (RNGD.timing.full_command_cycles, 5, 4,
...                                                       RNGD.timing.full_command_cycles + 9)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from visa.engines.common import EngineReport
from visa.hw import HardwareProfile

__all__ = ["PassCost", "pass_cost", "is_short_command", "SHORT_COMMAND_ENGINES"]

#: The engines of a register-file load that can run as a short command (L4112–4114), in pipeline order.
SHORT_COMMAND_ENGINES = (("fetch", "switch", "collect", "to_trf"), ("fetch", "switch", "collect", "to_vrf"))


@dataclass(frozen=True)
class PassCost:
    """The cycles of one Tensor Unit command and their parts (module docstring)."""

    overhead: int
    fill: int
    busy: int
    short: bool

    @property
    def total(self) -> int:
        """``overhead + fill + busy``."""
        return self.overhead + self.fill + self.busy

    def __str__(self) -> str:
        kind = "short command" if self.short else "command"
        return f"{self.total} = {kind} {self.overhead} + fill {self.fill} + busy {self.busy}"


def _detail(report: EngineReport, key: str) -> object:
    return dict(report.details).get(key)


def is_short_command(reports: Sequence[EngineReport]) -> bool:
    """Whether a pass is a completely contiguous register-file load: fetch (no adapter stage, one contiguous run
    per slice), forwarding switch, collect without padding, TRF or VRF (L4112–4114)."""
    if tuple(r.engine for r in reports) not in SHORT_COMMAND_ENGINES:
        return False
    fetch, switch, collect = reports[0], reports[1], reports[2]
    return (_detail(fetch, "contiguous") is True and _detail(switch, "topology") == "Forwarding"
            and not _detail(collect, "padding"))


def pass_cost(hw: HardwareProfile, reports: Sequence[EngineReport]) -> PassCost:
    """The cycles of a Tensor Unit command made of ``reports`` (module docstring)."""
    short = is_short_command(reports)
    t = hw.timing
    return PassCost(t.short_command_cycles if short else t.full_command_cycles,
                    sum(r.latency for r in reports), max((r.cycles for r in reports), default=0), short)
