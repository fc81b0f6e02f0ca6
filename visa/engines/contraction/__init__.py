"""Contraction Engine: Aligner (Stream Adapter + TRF Sequencer) and Reducer (manual "Contraction Engine",
L3670–4548).

Every einsum is broadcast LHS → broadcast RHS → multiply → reduce-add (L3678–3682): the Switch/Collect/Stream
Adapter path broadcasts the streamed operand, the TRF Sequencer the stationary one, and the Reducer
multiplies and adds, spatially over the packet (``contract``) and temporally over time (``accumulate``).

- :mod:`~visa.engines.contraction.aligner`: ``plan`` (``align``), the Stream Adapter, the TRF sequencer's
  addresses and cache;
- :mod:`~visa.engines.contraction.reducer`: ``plan_contract``, ``plan_accumulate``, cycles, the accumulator
  trace;
- :mod:`~visa.engines.contraction.compute`: the arithmetic over the data.
"""

from visa.engines.contraction.aligner import AlignPlan, TrfOperand, adapt, adapt_digits, addresses, cache_misses
from visa.engines.contraction.aligner import check_context as check_context
from visa.engines.contraction.aligner import cycles as align_cycles
from visa.engines.contraction.aligner import latency as align_latency
from visa.engines.contraction.aligner import plan as plan_align
from visa.engines.contraction.aligner import report_details as align_details
from visa.engines.contraction.compute import (
    TrfWindow,
    accumulate,
    contract_values,
    window_range,
)
from visa.engines.contraction.fast_compute import has_period, weight_period
from visa.engines.contraction.reducer import (
    KINDS,
    AccumulatePlan,
    ContractPlan,
    accumulate_cycles,
    accumulator_trace,
    contract_cycles,
    plan_accumulate,
    plan_contract,
)

__all__ = [
    "AlignPlan", "TrfOperand", "plan_align", "check_context", "adapt", "adapt_digits", "addresses", "cache_misses",
    "align_cycles", "align_latency", "align_details",
    "ContractPlan", "AccumulatePlan", "plan_contract", "plan_accumulate", "contract_cycles", "accumulate_cycles",
    "accumulator_trace", "KINDS", "TrfWindow", "accumulate", "contract_values", "window_range", "weight_period",
    "has_period",
]
