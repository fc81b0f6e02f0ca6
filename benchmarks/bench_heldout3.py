"""A third set of held-out kernels (issue 24, "fast on anyone's kernel"), written the way a kernel writer new to
visa would write them from the manual's Vector Engine chapter, each checked exactly against numpy and timed at a
repeat launch.

- **Scale and clamp, 4M f32 → bf16** (a quantisation prologue): ``x · s`` (``FpBinaryOp::MulF``, L4889–4897),
  clamped to ``[lo, hi]`` (the Clip cluster's ``Max`` then ``Min``, L4953–4963), rounded to bf16 by the Cast
  Engine (L6756–6819).  Every step is one f32 rounding, so the bits equal numpy's
  ``np.clip(x * s, lo, hi).astype(bfloat16)``.
- **Saturating difference, 2 × 2M i32** (an interleaved pair, L5154–5249): ``x`` and ``y`` interleaved along
  ``P`` by ``begin_interleaved``, unzipped and subtracted with ``SubFxpSat`` (L4821–4836): numpy's
  ``clip(x − y, i32 range)`` computed in int64.
- **bf16 elementwise multiply, 2 × 1M** (an interleaved pair read as f32 for the Way4 float cluster): ``x`` and
  ``y`` 16 KiB apart in each slice, fetched as f32 in ``A % 4 # 8`` packets (four lanes and four of padding),
  unzipped, trimmed to Way4, multiplied (``MulF`` zip), padded back to Way8 and rounded to bf16: a product of two
  bf16 values is exact in f32, so the bits equal numpy's ``(x · y).astype(bfloat16)`` from the same values.  This
  one found a pathological case: the pair's padded lanes reach past the element, which made the fetch take its
  general path (one address per position) and ask the pages between the tensors — 145 ms, 291× numpy; now
  ``fetch.pair-padded-nest`` and ``memory.written-pieces``.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from benchmarks.bench_elementwise import PER, RELU, N
from benchmarks.common import best_of, line
from visa import (
    AxisSet,
    BranchMode,
    ClipBinaryOpF32,
    Context,
    FpBinaryOp,
    FpMulAlu,
    FxpBinaryOp,
    HbmTensor,
    HostTensor,
    bf16,
    device,
    f32,
    i32,
    launch,
)

SC = RELU  # (the 4M-element stream of bench_elementwise, 8192 a slice)
SCALE, LO, HI = 0.37, -1.5, 2.25

D = 1 << 21
DIF = AxisSet(A=D, P=2)

B = 1 << 20
MULB = AxisSet(A=B, P=2)


@device(chip=1)
def scale_clamp(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """bf16(clip(x · SCALE, LO, HI)) over 4M f32, 8192 per slice."""
    m = SC.m
    dm = x.to_dm(m[f"A / {N // 2}"], m[f"A % {N // 2} / {PER}"], m[f"A % {PER}"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(f32, m[f"A % {PER} / 8"], m["A % 8"])
           .collect(m[f"A % {PER} / 8"], m["A % 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_split(m[f"A % {PER} / 8, A % 8 / 4"], m["A % 4"])  # (the Fp stage takes Way4 packets)
           .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), SCALE)
           .vector_concat(m[f"A % {PER} / 8"], m["A % 8"])
           .vector_clip(ClipBinaryOpF32.Max, LO)
           .vector_clip(ClipBinaryOpF32.Min, HI)
           .vector_final()
           .cast(bf16, m["A % 8 # 16"])
           .commit(m[f"A % {PER}"], 1 << 17))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res


def _unzipped(ctx: Context, ax: AxisSet, n: int, x: HbmTensor[Any, Any, Any], y: HbmTensor[Any, Any, Any],
              gap: int, dtype: Any, lanes: int, packet: str) -> tuple[Any, Any]:
    """x and y (``n`` elements of ``A``) moved into DM ``gap`` bytes apart in each slice (``n / 512`` elements a
    slice), fetched as one interleaved stream (``lanes`` elements a packet ``packet``) and unzipped into the two
    groups (L5154–5249); and the Element mapping of a slice's elements."""
    m, per = ax.m, n // 512
    cluster, slice_, el = m[f"A / {n // 2}"], m[f"A % {n // 2} / {per}"], m[f"A % {per}"]
    xd = x.to_dm(cluster, slice_, el, ctx.tdma, 0)
    yd = y.to_dm(cluster, slice_, el, ctx.tdma, gap)
    t = m[f"A % {per} / {lanes}, P"]
    pair = (ctx.main.begin_interleaved(m["P"], xd.view(), yd.view())
            .fetch(dtype, t, m[packet])
            .collect(t, m[packet])
            .vector_init()
            .vector_intra_slice_unzip("P", m[f"A % {per} / {lanes}, 1 # 2"], m[f"A % {per} / {lanes}"]))
    return pair, el


@device(chip=1)
def saturating_difference(ctx: Context, x: HbmTensor[Any, Any, Any], y: HbmTensor[Any, Any, Any]
                          ) -> HbmTensor[Any, Any, Any]:
    """clip(x − y) to i32 over 2M pairs, 4096 per slice: x and y interleaved along P, unzipped, SubFxpSat."""
    pair, el = _unzipped(ctx, DIF, D, x, y, 1 << 15, i32, 8, "A % 8")
    out = pair.vector_fxp_zip(FxpBinaryOp.SubFxpSat).vector_final().commit(el, 1 << 16)
    res: HbmTensor[Any, Any, Any] = out.to_hbm(DIF.m["A"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def bf16_multiply(ctx: Context, x: HbmTensor[Any, Any, Any], y: HbmTensor[Any, Any, Any]
                  ) -> HbmTensor[Any, Any, Any]:
    """bf16(x · y) over 1M bf16 pairs, 2048 per slice, computed in f32 on the Way4 float cluster."""
    m = MULB.m
    pair, el = _unzipped(ctx, MULB, B, x, y, 1 << 14, f32, 4, "A % 4 # 8")
    out = (pair.vector_trim_way4(m["A % 4"])
           .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
           .vector_pad_way8(m["A % 4 # 8"])
           .vector_final()
           .cast(bf16, m["A % 4 # 16"])
           .commit(el, 1 << 15))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res


def run() -> list[str]:
    rng = np.random.default_rng(11)
    lines = []
    x = (rng.standard_normal(N) * 4).astype(np.float32)
    ctx = Context.acquire()
    m = SC.m
    xh = HostTensor.from_numpy(x, f32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    got = launch(scale_clamp, ctx, xh).to_host(m["A"], ctx.pdma).numpy()

    def theirs() -> Any:
        return np.clip(x * np.float32(SCALE), np.float32(LO), np.float32(HI)).astype(ml_dtypes.bfloat16)

    want = theirs()
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16)), "scale and clamp differ"
    lines.append(line("held-out: 4M f32 scale and clamp → bf16, a repeat", best_of(lambda: launch(scale_clamp, ctx,
                                                                                                    xh), 5),
                      best_of(theirs, 7), width=64))

    m = DIF.m
    a = rng.integers(-2**31, 2**31, size=D, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, size=D, dtype=np.int64).astype(np.int32)
    a[:4], b[:4] = [2**31 - 1, -2**31, 5, 0], [-1, 1, 7, -2**31]  # both saturations, a plain difference
    ctx = Context.acquire()
    ah = HostTensor.from_numpy(a, i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    bh = HostTensor.from_numpy(b, i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 1 << 26)
    got = launch(saturating_difference, ctx, ah, bh).to_host(m["A"], ctx.pdma).numpy()

    def diff() -> Any:
        return np.clip(a.astype(np.int64) - b, -2**31, 2**31 - 1).astype(np.int32)

    assert np.array_equal(got, diff()), "the saturating difference differs"
    lines.append(line("held-out: 2M i32 saturating difference (pair), a repeat",
                      best_of(lambda: launch(saturating_difference, ctx, ah, bh), 5), best_of(diff, 7), width=64))

    m = MULB.m
    ctx = Context.acquire()
    xs, ys = HostTensor.rand(bf16, m["A"], rng), HostTensor.rand(bf16, m["A"], rng)
    xh, yh = xs.to_hbm(m["1"], m["A"], ctx.pdma, 0), ys.to_hbm(m["1"], m["A"], ctx.pdma, 1 << 26)
    got = launch(bf16_multiply, ctx, xh, yh).to_host(m["A"], ctx.pdma).numpy()
    xb, yb = xs.numpy(), ys.numpy()

    def product() -> Any:
        return (xb.astype(np.float32) * yb.astype(np.float32)).astype(ml_dtypes.bfloat16)

    assert np.array_equal(np.asarray(got).view(np.uint16), product().view(np.uint16)), "the bf16 product differs"
    lines.append(line("held-out: 1M bf16 × bf16 (f32 pair, Way4 MulF), a repeat",
                      best_of(lambda: launch(bf16_multiply, ctx, xh, yh), 5), best_of(product, 7), width=64))
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
