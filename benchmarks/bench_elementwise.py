"""Elementwise streaming kernels at 4M elements, a repeat launch against numpy's same arithmetic (issue 15).

Each kernel streams 16 MiB of i32 through the Vector Engine: HBM → DM (DMA), fetch → collect → vector_init →
branch → one elementwise op → vector_final → commit, DM → HBM (DMA).  The memory traffic the kernel implies is
about four passes over 16 MiB (DMA in, the stream, the commit, DMA out), against numpy's one.

- **ReLU on i32** (``examples/relu.py``'s ``vector_clip(Max, 0)`` on a 4M-element stream from DM): against
  ``np.maximum(x, 0)``.  Exact.
- **Elementwise multiply by a VRF operand** (``examples/elementwise_mul.py``'s ``MulInt`` scaled up): 512 slices,
  8192 elements each, times a 2048-element i32 vector loaded into every slice's VRF (8 KiB, the whole VRF) and
  read once per 2048 elements: ``y[s, t, e] = x[s, t, e] · w[e]`` wrapping to i32, against numpy's int32
  ``x * w`` (which wraps the same).  Exact.

- **f32 → bf16 through the Cast Engine** (``examples/relu.py``'s last step on 4M elements: one 32-byte flit of 8
  f32 in, 16 bf16 lanes out of which 8 hold the values, L6780–6784): against numpy's ``astype(bfloat16)``
  (round to nearest even, the Cast Engine's rounding).  Exact, bit for bit.

The 4M i32 constant add (``AddFxp``) is ``bench_heldout``'s.  What the profile of these kernels found, and what
changed, is in docs/manual-notes.md "Elementwise streaming cost (issue 15)".
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from benchmarks.common import best_of, line
from visa import (
    AxisSet,
    BranchMode,
    ClipBinaryOpI32,
    Context,
    FxpBinaryOp,
    HbmTensor,
    HostTensor,
    bf16,
    device,
    f32,
    i32,
    launch,
)

N = 1 << 22
PER = N // 512  # elements per slice
RELU = AxisSet(A=N)
MUL = AxisSet(S=512, T=PER // 2048, E=2048)


@device(chip=1)
def relu(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """max(x, 0) over 4M i32 (the Clip cluster's Max, L4953–4963), 8192 per slice."""
    m = RELU.m
    dm = x.to_dm(m[f"A / {N // 2}"], m[f"A % {N // 2} / {PER}"], m[f"A % {PER}"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(i32, m[f"A % {PER} / 8"], m["A % 8"])
           .collect(m[f"A % {PER} / 8"], m["A % 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_clip(ClipBinaryOpI32.Max, 0)
           .vector_final().commit(m[f"A % {PER}"], 1 << 16))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def mul_vrf(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """x · w (``MulInt``, wrapping, L4833) with ``w`` in every slice's VRF (L223–224, L5063–5081)."""
    m = MUL.m
    cluster, slice_ = m["S / 256"], m["S % 256"]
    x_dm = x.to_dm(cluster, slice_, m["T, E"], ctx.tdma, 0)
    w_dm = w.to_dm(cluster, slice_, m["E"], ctx.tdma, 1 << 16)  # the same 2048 elements in every slice
    w_vrf = (ctx.sub.begin(w_dm.view()).fetch(i32, m["E / 8"], m["E % 8"])
             .collect(m["E / 8"], m["E % 8"]).to_vrf(m["E"], 0))
    out = (ctx.main.begin(x_dm.view()).fetch(i32, m["T, E / 8"], m["E % 8"])
           .collect(m["T, E / 8"], m["E % 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.MulInt, w_vrf)
           .vector_final().commit(m["T, E"], 1 << 17))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["S, T, E"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def cast_bf16(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """4M f32 → bf16 (the Cast Engine, L6756–6819), 8192 per slice."""
    m = RELU.m
    dm = x.to_dm(m[f"A / {N // 2}"], m[f"A % {N // 2} / {PER}"], m[f"A % {PER}"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(f32, m[f"A % {PER} / 8"], m["A % 8"])
           .collect(m[f"A % {PER} / 8"], m["A % 8"]).cast(bf16, m["A % 8 # 16"])
           .commit(m[f"A % {PER}"], 1 << 17))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res



def run() -> list[str]:
    rng = np.random.default_rng(0)
    lines = []

    x = rng.integers(-2**31, 2**31 - 1, size=N, dtype=np.int32, endpoint=True)
    ctx = Context.acquire()
    x_hbm = HostTensor.from_numpy(x, i32, RELU.m["A"]).to_hbm(RELU.m["1"], RELU.m["A"], ctx.pdma, 0)
    got = launch(relu, ctx, x_hbm).to_host(RELU.m["A"], ctx.pdma).numpy()
    assert np.array_equal(got, np.maximum(x, np.int32(0))), "ReLU differs from numpy"
    lines.append(line("4M i32 ReLU (vector_clip Max 0), a repeat launch", best_of(lambda: launch(relu, ctx, x_hbm), 5),
                       best_of(lambda: np.maximum(x, np.int32(0)), 7)))

    m = MUL.m
    xs = x.reshape(MUL.sizes["S"], MUL.sizes["T"], MUL.sizes["E"])
    w = rng.integers(-2**31, 2**31 - 1, size=MUL.sizes["E"], dtype=np.int32, endpoint=True)
    ctx = Context.acquire()
    xs_hbm = HostTensor.from_numpy(xs, i32, m["S, T, E"]).to_hbm(m["1"], m["S, T, E"], ctx.pdma, 0)
    w_hbm = HostTensor.from_numpy(w, i32, m["E"]).to_hbm(m["1"], m["E"], ctx.pdma, 1 << 27)
    got = launch(mul_vrf, ctx, xs_hbm, w_hbm).to_host(m["S, T, E"], ctx.pdma).numpy()
    assert np.array_equal(got, xs * w), "the VRF multiply differs from numpy"  # int32 * int32 wraps like MulInt
    lines.append(line("4M i32 × a 2048-element VRF vector (MulInt), a repeat",
                       best_of(lambda: launch(mul_vrf, ctx, xs_hbm, w_hbm), 5), best_of(lambda: xs * w, 7)))

    f = rng.standard_normal(N).astype(np.float32)
    ctx = Context.acquire()
    f_hbm = HostTensor.from_numpy(f, f32, RELU.m["A"]).to_hbm(RELU.m["1"], RELU.m["A"], ctx.pdma, 0)
    got = launch(cast_bf16, ctx, f_hbm).to_host(RELU.m["A"], ctx.pdma).numpy()
    want = f.astype(ml_dtypes.bfloat16)
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16)), "the bf16 cast differs"
    ours = best_of(lambda: launch(cast_bf16, ctx, f_hbm), 5)
    lines.append(line("4M f32 → bf16 (Cast Engine), a repeat launch", ours,
                       best_of(lambda: f.astype(ml_dtypes.bfloat16), 7)))
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
