"""Memory a weight upload holds beyond its bytes (issue 24: peak memory of the full-size Llama 70B layer).

The 70B example writes its weights to HBM in 1 MiB host → HBM pieces that HBM adopts (shares; ``dma.adopt``).
Each adopted region used to carry a written-mask of one bool per byte, allocated at once and never needed (the
region is all known): 1 GiB of masks for 1 GiB of weights.  Measured with :mod:`tracemalloc` (numpy reports its
allocations to it), not with a clock: the memory the device holds after the upload, and the peak during it.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

from visa import AxisSet, Context, HostTensor, bf16, fastpaths, i8

PIECE = 1 << 20  # bytes of a host → HBM piece, as the 70B example writes them
PIECES = 8


BASE = 1 << 30  # HBM address of the first piece (the pieces side by side, as a weight's)


def _held(dtype: type, element_bytes: int) -> tuple[int, int]:
    """(bytes traced after uploading PIECES pieces and dropping the host tensors, peak traced during it)."""
    ctx = Context.acquire()
    rows = PIECE // (512 * element_bytes)
    cax = AxisSet(R=rows, C=512)
    rng = np.random.default_rng(0)
    pieces = [rng.integers(-100, 100, size=(rows, 512)).astype(np.float32 if dtype is bf16 else np.int8)
              for _ in range(PIECES)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k, piece in enumerate(pieces):
            host = HostTensor.from_numpy(piece, dtype, cax.m["R, C"], axes="R C")
            host.to_hbm(cax.m["1"], cax.m["R, C"], ctx.pdma, BASE + k * PIECE)
            del host  # the example's loop rebinds its host tensor: nothing but HBM keeps the bytes
        gc.collect()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    hbm = ctx.memory.chip(0).hbm
    assert sum(hi - lo for lo, hi in hbm.regions()) == PIECES * PIECE
    del ctx
    return now - before, peak - before


def test_adopted_weights_hold_their_bytes_and_no_mask() -> None:
    """bf16 pieces (the 70B weights: each converted to its bit patterns once) and int8 pieces (shared with the
    host tensor as they are): what stays allocated is the weights' bytes plus bookkeeping, not a mask as large."""
    for dtype, nb in ((bf16, 2), (i8, 1)):
        held, peak = _held(dtype, nb)
        weights = PIECES * PIECE
        assert held <= weights * 1.1, (dtype, held / weights)
        # one piece's conversions in flight at most beyond what stays (the float32 input is the caller's); the
        # reference host layout evaluates the mapping, int64 coordinates per element
        if fastpaths.get("host.plain-layout").on:
            assert peak <= held + 4 * PIECE, (dtype, (peak - held) / PIECE)
