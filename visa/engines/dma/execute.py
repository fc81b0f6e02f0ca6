"""Running a DMA plan over the byte images (manual ``DmaSequencer``, L2505–2541)."""

from __future__ import annotations

from visa.engines.dma.config import DmaPlan
from visa.memory.transfer import Endpoint
from visa.memory.transfer import copy as copy_bytes

__all__ = ["execute"]


def execute(p: DmaPlan, src: Endpoint, dst: Endpoint) -> None:
    """Run the plan's fused sequencer (``DmaSequencer``, L2505–2541) over the images: every engine, every
    command."""
    loops = [(lp.size, lp.src, lp.dst) for lp in p.all_loops()]
    copy_bytes(loops, p.base, src, dst)
