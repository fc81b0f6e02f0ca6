"""What a Vector Engine pass costs (manual L5270–5277, L5566–5573, L6738–6755, L4375).

* Throughput: one flit per cycle per slice in every section.  A Way8 section moves 8 lanes per flit, a Way4
  section 4, so after ``vector_split`` the Way4 section has twice the flits (L4841, L5270–5273); the pass
  runs at its slowest section: ``cycles = max(flits of each section)``.
* Latency: one cycle per ALU used, added up along the chain (L5274–5277; the intra-slice reducer is one of
  them); the inter-slice ring adds one traversal of the reduction group, ``r`` slices at
  ``inter_slice_cycles_per_slice`` each (L6738–6749, L4375: 256 slices ≈ 256 cycles).
* The intra-slice reducer's first output comes ``n`` flit cycles after its first input, ``n`` the time steps of
  the reduce axis (L5569–5571): the delay of an output behind the inputs it sums, which the pass's ``n``-flit
  input already spans.  It is not charged again: a reduction over ``n`` flits costs ``n`` + a constant, as the
  Contraction Engine's accumulator does (L4543–4544).

>>> from visa.hw import RNGD
>>> r = vector_report(RNGD, ("fxp(AddFxp, 1)",), (1, 1), alus=1)
>>> r.cycles, r.latency
(1, 1)
>>> r = vector_report(RNGD, ("intra_slice_reduce",), (1024, 1), alus=1, reduce_steps=1024)
>>> r.cycles + r.latency
1025
"""

from __future__ import annotations

from visa.engines.common import EngineReport
from visa.hw import HardwareProfile

__all__ = ["vector_report", "pass_cycles", "pass_latency"]


def pass_cycles(sections: tuple[int, ...]) -> int:
    """Cycles of the slowest section (flits per slice; slices, clusters and chips run in parallel)."""
    return max(sections) if sections else 0


def pass_latency(hw: HardwareProfile, alus: int, ring: int = 0) -> int:
    """Fill latency of the pass: the ALUs used (the reducer among them) and the inter-slice ring tail."""
    v = hw.vector
    return alus * v.alu_latency_cycles + ring * v.inter_slice_cycles_per_slice


def vector_report(hw: HardwareProfile, ops: tuple[str, ...], sections: tuple[int, ...], *, alus: int,
                  reduce_steps: int = 0, ring: int = 0, alu_names: tuple[str, ...] = ()) -> EngineReport:
    """The Vector Engine's report for one pass."""
    return EngineReport("vector", " → ".join(ops) or "pass-through", pass_cycles(sections),
                        pass_latency(hw, alus, ring),
                        (("sections", sections), ("alus", alu_names), ("reduce_delay", reduce_steps),
                         ("ring", ring)))
