"""DMA Engine: moves tensors between host, HBM and DM (manual "DMA Engine", L2355–2847).

A move is the identity on the mathematical tensor (L1162–1197): the destination holds the tensor the source
holds, in another layout.  Three pure functions do the work, the runtime and the mypy plugin share them:

* :func:`plan` derives the hardware configuration from the dtype, the two placements and an optional stream:
  the read and write sequencers (L2542–2594, with :func:`visa.mapping.sequencer.derive_many`, so they share
  their loops), fused into one DMA sequencer of ``(size, source stride, destination stride)`` loops in bytes
  whose innermost loop is the packet (``stride0``), and checks the DMA rules: DM writes 8-byte aligned and
  in packets of a multiple of 8 bytes, HBM→DM 8-byte aligned on both sides (L2413–2430, L2834–2839), packets
  of at most 4096 bytes (L2428), at most 8 loops of at most 65,536 (L1628–1637).  Without a stream, the plan
  picks one: the destination's layout without its padding, with the packet as large as the rules allow
  (the longest run contiguous on both sides), distributes the loops that select a DMN pair, cluster or chip
  across the DMA engines (aggregate operation, L2473–2491, L2546) and lets each engine alternate the two
  DMNs it serves (L2883–2893).  Loops beyond the sequencer's eight become separate commands (L2472, L2793).
* :func:`execute` runs the plan's loops over the byte images (:mod:`visa.memory.transfer`).
* :func:`cycles` costs it with the manual's model (L2465–2504, L2809–2847, L2848–3009): a startup of about
  500 cycles per command, one 256-byte request per cycle per engine, DMNs at 128 B/cycle each (two
  interleaved DMNs give 256), HBM channels at 256 B per 16/3 cycles with row switches, unaligned reads and
  read-modify-write partial writes, PCIe at 30 B/cycle between host and HBM or across chips.

The engine knows nothing of tensor handles or contexts: the moves users call (``host.to_hbm``,
``hbm.to_dm``, ... in :mod:`visa.tensors.moves`) check the source is still readable, plan, allocate the
destination, poison its bytes, execute, and record the operation on the schedule.  SPM is not a medium
of this planner: SPM tensors move by their own engine (:mod:`visa.engines.spm`, L2942–2947).

>>> from visa import AxisSet, RNGD, i8
>>> ax = AxisSet(N=4, C=3, H=8, W=8)                                      # manual L2431-2464
>>> p = plan(RNGD, i8, Side.of("hbm", {"Chip": ax.m["1"], "Element": ax.m["N, C, H, W"]}, 1024),
...          Side.of("hbm", {"Chip": ax.m["1"], "Element": ax.m["H, C, N, W"]}, 2048),
...          stream=(ax.m["H, C, N"], ax.m["W"]))
>>> str(p.read), str(p.write)
('[8 : 8, 3 : 64, 4 : 192, 8 : 1] : 8 @ 1024', '[8 : 96, 3 : 32, 4 : 8, 8 : 1] : 8 @ 2048')
>>> str(p)
'[8 : (8, 96), 3 : (64, 32), 4 : (192, 8), 8 : (1, 1)] @ (1024, 2048), stride0 8'
"""

from visa.engines.dma.config import DmaCost, DmaLoop, DmaPlan, Side
from visa.engines.dma.cost import cycles
from visa.engines.dma.execute import execute
from visa.engines.dma.plan import plan, staging

__all__ = [
    "Side", "DmaLoop", "DmaPlan", "DmaCost", "plan", "execute", "cycles", "staging",
]
