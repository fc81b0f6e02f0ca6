"""Fast path ``dma.overwritten-copies`` (issue 24), beside :mod:`visa.memory.transfer`, whose ``_copy_chip`` it
serves: a DMA that writes every byte of a range of every unit it spans (known bytes, each once) drops the pending
copies wholly inside that box (:meth:`visa.memory.images.DenseImage._drop_overwritten`) before it takes its view
of the destination, instead of making them and overwriting them at once.

The reference makes every pending copy that reaches the bytes a DMA writes (:meth:`~visa.memory.images.
DenseImage._raw`, :mod:`visa.memory.pending`) — the rhs tile the peer matmul broadcasts over a group's slices is
made, 1.8 MiB a K tile, just before the next K tile's DMA overwrites it.  The bytes those copies would have made
are all overwritten by the DMA, their written-state is the DMA's to mark, and a copy only partly inside the box is
made as before; so every byte, written-state and replica id after the DMA is the reference's
(``tests/memory/test_fast_overwritten.py``).  The readers holding views of the image settle first (as before any
change to its bytes).
"""

from __future__ import annotations

from typing import Any

from visa import fastpaths

__all__ = ["OVERWRITTEN", "drop"]

OVERWRITTEN = fastpaths.register("dma.overwritten-copies", "a DMA writing whole rows of units drops the pending "
                                                           "copies wholly inside them, not made first and "
                                                           "overwritten")


def drop(dst: Any, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
    """Bytes ``[unit_lo, unit_hi)`` of every unit of the destination's flat range ``[lo, hi)`` on ``chip`` are
    about to be written: drop the pending copies wholly inside (an endpoint without pending copies: nothing)."""
    image = getattr(dst, "pending_image", None)
    if image is None:
        return
    owner, units = image(chip, lo, hi)
    if owner._pending.copies:
        owner._settle_readers()
        owner._drop_overwritten(units, unit_lo, unit_hi)
