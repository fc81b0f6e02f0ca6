"""Runtime guards: work that runs only when a device scalar says so (MoE blockwise execution, manual
L8596–8707: "At runtime, sparse operations skip execution for empty Grids", L8616).

The manual names the behaviour but no instruction or cost.  visa's model (docs/manual-notes.md, issue 13):
the context's command stream reads the guard's bytes with one DMA command — a startup (L2467, L2827) and one
request per 256 bytes (L2469) — and branches on them; when the predicate is false the guarded work is not
issued, so a skipped block costs only this read.  Spelling (design, not in the manual)::

    if ctx.main.when(count, lambda n: n > 0):      # or ctx.tdma.when(...)
        ...   # the guarded pass or DMA

The user-facing ``when`` (:mod:`visa.tensors.guard`) waits for the guard tensor to be ready, records the
read on that context's track (so the guarded work starts after it), reads the tensor's logical value (a
:class:`~visa.errors.PoisonError` if a byte was never written) and returns ``bool(predicate(value))``.
"""

from __future__ import annotations

from visa.hw import HardwareProfile

__all__ = ["guard_cycles", "register_read_cycles"]


def guard_cycles(hw: HardwareProfile, nbytes: int) -> int:
    """Cycles of a guard reading ``nbytes``: one DMA command's startup and its requests (L2467, L2469)."""
    return hw.dma.startup_cycles + hw.dma.requests(max(1, nbytes))


def register_read_cycles(hw: HardwareProfile, nbytes: int) -> int:
    """Cycles of a guard on a scalar staged in SPM (design API.md §8): a register read of ``nbytes`` at the SPM's
    128 B/cycle (L2945) — one cycle for a scalar, against :func:`guard_cycles`' ~500 for a DMA read of HBM."""
    return max(1, -(-nbytes // hw.spm.dmn_bytes_per_cycle))
