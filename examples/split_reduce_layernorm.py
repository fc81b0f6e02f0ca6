"""Split reduce, Example 1: Layer Normalization statistics (manual "Split Reduce", L7151–7261).

The feature axis Hidden = 8192 of a token does not fit a slice's 8 KB VRF as bf16 (L7196–7201), so it lives in
two chunks ``Hidden_0``/``Hidden_1`` of 4096 (L7203–7206), two separate DM tensors.  The kernel follows the
manual's three steps:

1. **partial sums** (L7208–7216): one pass per chunk fetches it as f32 (the fetch's bf16 → f32 cast, L1960) and
   reduces ``H0`` over Time and the packet in the intra-slice reducer (f32 ``Add``, L5397) — the manual names
   "Reducer + Inter-Slice Block" for this (L7214); the token is the slice here, so no inter-slice step is needed;
2. **split reduce** (L7218–7229): ``begin_interleaved`` fetches the two partial sums along ``I = 2``
   (L1843–1868), ``vector_intra_slice_unzip`` splits the groups, ``vector_fp_zip(AddF)`` adds them and
   ``MulF(1/8192)`` gives the mean (L7229);
3. **variance** (L7231–7241): the mean goes to the VRF through the sub context; each chunk pass subtracts it
   (``SubF`` with the VRF operand, broadcast over Time, L5063), squares (``vector_stash`` then ``MulF`` by the
   stash, L4983) and reduces; a second split reduce adds the two and takes ``Sqrt``.

Departures from the manual, each with its lines:

- **Batch = 2, not 32** (L7192): 256 tokens, one per slice; the manual's 4096 tokens would be 16 per slice and
  only repeat the same passes 16 times (the manual-scale cost is computed in ``manual_estimate`` and printed).
- **std = sqrt(Σ(x − mean)² / Hidden)** (L7240–7241): the manual's ``total_variance.sqrt()`` omits the division
  by Hidden (and the ε of its own formula, L7190); without it the result is not a standard deviation.
- The partial statistics are f32 DM tensors whose Element is ``m["1 # 8"]`` (one value and seven pad values,
  one 32-byte flit per token), not ``m![Batch, SeqLen]`` (L7214–7215): the token is the slice.
- The manual's ``reduce_sum``/``reduce_add``/``square`` are shorthands (L7214, L7227, L7235); here they are the
  Vector Engine stages that do them.

Cycles (L7244–7254): the manual's "~8K cycles" is ``2 · Batch · SeqLen · ⌈Hidden_0 / 16⌉`` bf16 flits of fetch
spread over 256 slices (2 · 4096 · 256 / 256 = 8192).  Here a chunk pass fetches **4** f32 per cycle, not 16
bf16: the f32 intra-slice reducer is a Way4 stage (L4907–4913), so the packet holds four lanes after the
bf16 → f32 cast.  So step 1 costs 4× the manual's fetch estimate; step 2, the split reduce itself, is one flit
per tensor per token (2 cycles per token on each slice), as the table of L7244–7248 says.
See docs/manual-notes.md, "workloads (issue 14)".  Run it with ``visa run examples/split_reduce_layernorm.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visa import (
    BranchMode,
    Context,
    DmTensor,
    FpBinaryOp,
    FpMulAlu,
    FpUnaryOp,
    HbmTensor,
    HostTensor,
    IntraSliceReduceOpF32,
    Stash,
    VrfTensor,
    axes,
    bf16,
    device,
    f32,
    launch,
    m,
)
from visa.context import Operation

axes(Batch=2, SeqLen=128, H0=4096, I=2)  # manual: Batch = 32 (L7192); H0 is Hidden_0 = Hidden_1 = 4096
HIDDEN = 2 * 4096
Chip, Cluster = m["1"], m["1 # 2"]
Slice = m["Batch, SeqLen"]  # one token per slice

Stat = DmTensor[f32, m["1"], m["1 # 2"], m["Batch, SeqLen"], m["1 # 8"]]
StatHbm = HbmTensor[f32, m["1"], m["Batch, SeqLen"]]
PASSES: list[tuple[str, Operation]] = []  # (pass, cycles) of the last run, in order


def chunk_sum(ctx: Context, chunk: DmTensor[bf16, m["1"], m["1 # 2"], m["Batch, SeqLen"], m["H0"]],
              address: int, mean: VrfTensor[f32, m["1"], m["1 # 2"], m["Batch, SeqLen"], m["1 # 8"]] | None = None
              ) -> Stat:
    """Σ over the chunk (``mean`` None, L7214) or Σ (x − mean)² (L7235), one f32 per token, in one pass."""
    s = (ctx.main.begin(chunk.view())
         .fetch(f32, m["H0 / 4"], m["H0 % 4 # 8"])  # bf16 → f32 in the fetch (L1960); four lanes: Way4 (L4907)
         .collect(m["H0 / 4"], m["H0 % 4 # 8"])
         .vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional)
         .vector_trim_way4(m["H0 % 4"]))
    if mean is None:
        r = s.vector_intra_slice_reduce("H0", m["1"], m["1 # 4"], IntraSliceReduceOpF32.Add)
    else:
        r = (s.vector_fp_binary(FpBinaryOp.SubF, mean)  # x − mean, the VRF value broadcast over Time (L5063)
             .vector_stash()
             .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)  # (x − mean)², the stash (L4983)
             .vector_intra_slice_reduce("H0", m["1"], m["1 # 4"], IntraSliceReduceOpF32.Add))
    out = r.vector_pad_way8(m["1 # 8"]).vector_final().commit(m["1 # 8"], address)
    PASSES.append(("chunk " + ("Σ(x−mean)²" if mean is not None else "Σx"), ctx.schedule.ops[-1]))
    return out


def split_reduce(ctx: Context, s0: Stat, s1: Stat, address: int, *, sqrt: bool) -> Stat:
    """The split reduce (L7218–7229): interleaved fetch along I, unzip, add, scale by 1/Hidden (and √)."""
    s = (ctx.main.begin_interleaved(m["I"], s0.view(), s1.view())
         .fetch(f32, m["I"], m["1 # 8"])
         .collect(m["I"], m["1 # 8"])
         .vector_init()
         .vector_intra_slice_unzip("I", m["1 # 2"], m["1"])
         .vector_trim_way4(m["1 # 4"])
         .vector_fp_zip(FpBinaryOp.AddF)
         .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 1.0 / HIDDEN))
    if sqrt:
        s = s.vector_fp_unary(FpUnaryOp.Sqrt)
    out = s.vector_pad_way8(m["1 # 8"]).vector_final().commit(m["1 # 8"], address)
    PASSES.append(("split reduce" + (" → std" if sqrt else " → mean"), ctx.schedule.ops[-1]))
    return out


@device(chip=1)
def layer_norm_stats(ctx: Context, x0: HbmTensor[bf16, m["1"], m["Batch, SeqLen, H0"]],
                     x1: HbmTensor[bf16, m["1"], m["Batch, SeqLen, H0"]]) -> tuple[StatHbm, StatHbm]:
    """Mean and standard deviation over Hidden = Hidden_0 ++ Hidden_1 of every token (L7208–7241)."""
    c0 = x0.to_dm(Cluster, Slice, m["H0"], ctx.tdma, 0)
    c1 = x1.to_dm(Cluster, Slice, m["H0"], ctx.tdma, 1 << 13)
    stats = 1 << 14
    mean = split_reduce(ctx, chunk_sum(ctx, c0, stats), chunk_sum(ctx, c1, stats + 32), stats + 64, sqrt=False)
    mean_vrf = (ctx.sub.begin(mean.view())
                .fetch(f32, m["1"], m["1 # 8"])
                .collect(m["1"], m["1 # 8"])
                .to_vrf(m["1 # 8"], 0))
    std = split_reduce(ctx, chunk_sum(ctx, c0, stats + 96, mean_vrf), chunk_sum(ctx, c1, stats + 128, mean_vrf),
                       stats + 160, sqrt=True)
    return (mean.to_hbm(m["Batch, SeqLen"], ctx.tdma, 2 << 28), std.to_hbm(m["Batch, SeqLen"], ctx.tdma, 3 << 28))


def manual_estimate(batch: int = 32, seq_len: int = 128, hidden_chunk: int = 4096, slices: int = 256) -> int:
    """The manual's split-reduce total (L7249–7254): fetch both chunks, 16 bf16 per 32-byte flit, plus one VE
    cycle per token, spread over the slices (its "~8K cycles" for the manual's sizes)."""
    flit_elements = 32 // 2
    fetch = 2 * batch * seq_len * -(-hidden_chunk // flit_elements)
    return (fetch + batch * seq_len) // slices


@dataclass
class Result:
    """What :func:`run` measured: the statistics' errors and each pass's cycles."""

    mean_err: float
    std_err: float
    passes: list[tuple[str, Operation]]


def run(seed: int = 7) -> Result:
    """Run the kernel on random bf16 activations and check it against numpy in float64.

    Tolerance (derived): an f32 sum of n terms in any order is within γ_n·Σ|x| of the exact sum, γ_n = n·u/(1 − n·u),
    u = 2⁻²⁴; here n = 4096 + 2 (a chunk, the split add, the scale by a power of two is exact).  The mean's error is
    that over Hidden.  For the std, Σ(x − m̂)² has relative error γ_{n+3} (the subtraction and the square add
    two roundings; m̂'s own error changes the sum only by Hidden·(m̂ − m)², second order) and √ halves the
    relative error and adds half an ulp: |std − σ| ≤ (γ_{n+3}/2 + 2⁻²⁴)·σ + ε₂, ε₂ the second-order term.
    """
    PASSES.clear()
    ctx = Context.acquire()
    rng = np.random.default_rng(seed)
    xs = [HostTensor.rand(bf16, m["Batch, SeqLen, H0"], rng) for _ in range(2)]
    hbm = [x.to_hbm(Chip, m["Batch, SeqLen, H0"], ctx.pdma, k << 28) for k, x in enumerate(xs)]
    mean_hbm, std_hbm = launch(layer_norm_stats, ctx, hbm[0], hbm[1])
    mean = np.asarray(mean_hbm.to_host(m["Batch, SeqLen"], ctx.pdma).numpy(), dtype=np.float64)
    std = np.asarray(std_hbm.to_host(m["Batch, SeqLen"], ctx.pdma).numpy(), dtype=np.float64)

    full = np.concatenate([x.numpy(axes="Batch SeqLen H0").astype(np.float64) for x in xs], axis=-1)
    want_mean, want_std = full.mean(axis=-1), full.std(axis=-1)
    u = 2.0**-24
    n = 4096 + 2
    gamma = n * u / (1 - n * u)
    mean_bound = gamma * np.abs(full).sum(axis=-1) / HIDDEN
    assert np.all(np.abs(mean - want_mean) <= mean_bound), float(np.max(np.abs(mean - want_mean) - mean_bound))
    gamma3 = (n + 3) * u / (1 - (n + 3) * u)
    second = HIDDEN * mean_bound**2 / (2 * want_std)
    std_bound = (gamma3 / 2 + u) * want_std + second
    assert np.all(np.abs(std - want_std) <= std_bound), float(np.max(np.abs(std - want_std) - std_bound))
    return Result(float(np.max(np.abs(mean - want_mean))), float(np.max(np.abs(std - want_std))), list(PASSES))


def main() -> None:
    """Run, check against numpy, print each pass's cycles and the manual's estimate."""
    r = run()
    print(f"  layer-norm statistics over Hidden = 2 × 4096: max |Δmean| {r.mean_err:.2e}, max |Δstd| {r.std_err:.2e}")
    for name, op in r.passes:
        print(f"    {name:<26}{op.cycles:>8} cycles")
    split = sum(op.cycles for name, op in r.passes if name.startswith("split"))
    print(f"    manual estimate (L7249–7254, Batch 32): {manual_estimate()} cycles for fetch + VE; here step 1 "
          f"costs {16 * r.passes[0][1].cycles} per chunk at 16 tokens per slice (Way4: 4 f32 per cycle), the two "
          f"split reduces {split} cycles for one token per slice")


if __name__ == "__main__":
    main()
