"""Fast path ``memory.nibble-words`` (issue 24), beside :func:`visa.memory.images.load_nest` of 4-bit elements
(``_load_nibbles``), whose values and known-mask it computes.

A byte holds two i4 elements: element ``2j`` its low nibble, ``2j + 1`` its high one (docs/manual-notes.md
"dtypes"), each sign-extended into its own int8.  The reference writes the two halves of the output by two
strided passes (every other byte), and the known-mask likewise.  Here each byte becomes one 16-bit word of the
output, both nibbles at once: ``(b | b << 4) & 0x0F0F`` puts the low nibble in the low byte and the high nibble in
the high byte (little-endian: the low byte is element ``2j``), and ``w | (w & 0x0808) · 30`` sign-extends both
(bit 3 set gives ``0xF0`` in that byte, no carry between the bytes).  The known-mask of a read whose bytes were all
written is filled whole; otherwise each byte's flag is written to both halves as one 16-bit word.  Measured on the
i4 GEMV's 4096 × 4096 weights (16 Mi nibbles): 21 → 12 ms for the values, 8 → 1 ms for the mask, on a loaded
machine (``tests/memory/test_nibble_nests.py`` compares it with the path off).
"""

from __future__ import annotations

import sys

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["NIBBLE_WORDS", "unpack"]

NIBBLE_WORDS = fastpaths.register("memory.nibble-words", "4-bit elements unpacked from their bytes a 16-bit word "
                                  "(both nibbles, sign-extended) at a time, not by two strided passes")


def unpack(raw: npt.NDArray[np.uint8], raw_known: npt.NDArray[np.bool_], values: npt.NDArray[np.int8],
           known: npt.NDArray[np.bool_]) -> bool:
    """Write the sign-extended nibbles of ``raw`` (``(..., n)`` bytes) into ``values`` (``(..., 2n)`` int8,
    C-ordered: low nibble first) and each byte's flag ``raw_known`` into both of its elements' ``known``; False
    (nothing written) when this path does not apply (a big-endian machine, or another layout)."""
    if sys.byteorder != "little" or values.dtype != np.int8 or known.dtype != np.bool_ \
            or not (values.flags.c_contiguous and known.flags.c_contiguous) or values.size != 2 * raw.size:
        return False
    words = values.reshape(-1).view(np.uint16).reshape(raw.shape)
    np.left_shift(raw, 4, out=words, dtype=np.uint16)
    words |= raw
    words &= 0x0F0F
    sign = words & np.uint16(0x0808)
    sign *= 30
    words |= sign
    if bool(np.all(raw_known)):
        known.fill(True)
    else:
        flags = known.reshape(-1).view(np.uint16).reshape(raw.shape)
        np.multiply(raw_known.view(np.uint8), 0x0101, out=flags, dtype=np.uint16)
    return True
