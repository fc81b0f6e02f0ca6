"""The Llama 3 LM head at full size: ``logits[V] = w_lm_head[V, D] · x_last[D]``, V = 128,256, D = 8192 (manual
"Language Model Head", L8186–8201; V and D of L7987), one chip, bf16 (issue 27 item 8).

V is no multiple of the 8192 columns of a :class:`~visa.kernels.Gemm` N tile: its 15 whole tiles and the last,
5,376 columns wide, run as two GEMMs into the one ``[V]`` output (``Gemm.parts``).  The weight (2.1 GB of bf16) is
generated from a seed in chunks of rows and written host → HBM chunk by chunk, then read as one tensor through
``HbmTensor.from_addr`` (L821), so the host never holds it whole; the check regenerates each chunk and compares
its rows of the logits with numpy's float64 product within the GEMM's bound.  Runs only when named
(``python -m benchmarks lm_head``): a few minutes and a few GB.
"""

from __future__ import annotations

import time
from typing import Any

import ml_dtypes
import numpy as np

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.kernels import Arena, Gemm, bounds

V, D, CHUNK = 128_256, 8192, 4096
AX = AxisSet(T=1, V=V, D=D)
M = AX.m
HEAD = Gemm(AX, "T", "V", "D")
W_ADDR = 1 << 32


def _chunk(seed: int, r0: int, rows: int) -> np.ndarray:
    """Rows ``[r0, r0 + rows)`` of the weight: uniform on ±√(3/D) (unit-variance logits), rounded to bf16."""
    w = np.random.default_rng((seed, r0)).random((rows, D), dtype=np.float32) - np.float32(0.5)
    w *= np.float32(np.sqrt(12 / D))
    return w.astype(ml_dtypes.bfloat16)


@device(chip=1)
def head(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """The LM head GEMV (streamed weight tiles, double-buffered TRF loads)."""
    return HEAD(ctx, Arena(), x, w)


def run() -> list[str]:
    """Upload, launch, check; the cycles and the wall times (the launch against numpy's product of the chunks)."""
    ctx = Context.acquire()
    rng = np.random.default_rng(7)
    x = HostTensor.rand(bf16, M["T, D"], rng)
    x_hbm = x.to_hbm(M["1"], M["T, D"], ctx.pdma, 0)
    t0 = time.perf_counter()
    for r0 in range(0, V, CHUNK):
        rows = min(CHUNK, V - r0)
        cax = AxisSet(R=rows, D=D)
        HostTensor.from_numpy(_chunk(1, r0, rows), bf16, cax.m["R, D"], axes="R D").to_hbm(
            cax.m["1"], cax.m["R, D"], ctx.pdma, W_ADDR + 2 * D * r0)
    upload = time.perf_counter() - t0
    w_hbm: HbmTensor[Any, Any, Any] = HbmTensor.from_addr(ctx, bf16, M["1"], M["V, D"], W_ADDR)
    first = len(ctx.schedule.ops)
    t0 = time.perf_counter()
    out = launch(head, ctx, x_hbm, w_hbm)
    wall = time.perf_counter() - t0
    got = np.asarray(out.to_host(M["T, V"], ctx.pdma).numpy(axes="V"), dtype=np.float64)
    xv = np.asarray(x.numpy(axes="D"), dtype=np.float64)
    numpy_s = 0.0
    for r0 in range(0, V, CHUNK):
        w = _chunk(1, r0, min(CHUNK, V - r0)).astype(np.float64)
        t1 = time.perf_counter()
        want = w @ xv
        numpy_s += time.perf_counter() - t1
        bound = bounds.gemm(xv[None, :], w, HEAD.parts[0][0].k_tiles)[0]
        assert np.all(np.abs(got[r0: r0 + w.shape[0]] - want) <= bound), r0
    ops = ctx.schedule.ops[first:]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)
    return [f"LM head V = {V:,}, D = {D:,} (bf16, 1 chip): {cycles:,} cycles; upload {upload:.1f} s, launch "
            f"{wall:.1f} s, numpy {numpy_s * 1e3:.0f} ms (ratio {wall / max(numpy_s, 1e-9):.0f}x); checked"]
