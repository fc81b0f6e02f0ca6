"""Split reduce, Example 3: Mixture of Experts partial reduction (manual L7293–7316).

Two experts' outputs ``[Tokens, Hidden]`` (bf16, separate DM tensors) are combined with the routing weights
``[0.7, 0.3]`` (L7300) in one Tensor Unit pass: ``begin_interleaved`` along ``I = 2`` fetches both (cast to f32
by the fetch, L1960), ``vector_intra_slice_unzip`` splits the two groups, one ``MulF`` scales group 0 by 0.7 and
group 1 by 0.3 (a two-group binary op takes one operand per group, L5184–5211), ``vector_fp_zip(AddF)`` adds
them and the Cast Engine rounds the f32 sum to bf16 (L6756) — the manual's weighting "during fetch" and the
``reduce_add(axis: I)`` (L7301–7310) in one pass.

Departures from the manual, with lines:

- The weights are applied in the Vector Engine after the interleaved fetch, not as separate ``weighted_0/1``
  tensors (L7302–7303): a fetch scales only by zero points (integers, L2025); multiplying first would cost a
  pass per expert and round the products to bf16 in DM.
- Tokens = 256 (one per slice) and Hidden = 256 (the manual leaves both open).

Run it with ``visa run examples/split_reduce_moe.py``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from visa import (
    Context,
    FpBinaryOp,
    FpMulAlu,
    HbmTensor,
    HostTensor,
    axes,
    bf16,
    device,
    f32,
    launch,
    m,
)
from visa.context import Operation

axes(Tokens=256, Hidden=256, I=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["Tokens"]
WEIGHTS = (0.7, 0.3)  # routing_weights (L7300)
PASSES: list[tuple[str, Operation]] = []


@device(chip=1)
def combine(ctx: Context, e0: HbmTensor[bf16, m["1"], m["Tokens, Hidden"]],
            e1: HbmTensor[bf16, m["1"], m["Tokens, Hidden"]]) -> HbmTensor[bf16, m["1"], m["Tokens, Hidden"]]:
    """``0.7 · expert_0 + 0.3 · expert_1`` by interleaved fetch and a two-group Vector Engine pass (L7298–7310)."""
    x0 = e0.to_dm(Cluster, Slice, m["Hidden"], ctx.tdma, 0)
    x1 = e1.to_dm(Cluster, Slice, m["Hidden"], ctx.tdma, 1 << 10)
    out = (ctx.main.begin_interleaved(m["I"], x0.view(), x1.view())
           .fetch(f32, m["Hidden / 4, I"], m["Hidden % 4 # 8"])
           .collect(m["Hidden / 4, I"], m["Hidden % 4 # 8"])
           .vector_init()
           .vector_intra_slice_unzip("I", m["Hidden / 4, 1 # 2"], m["Hidden / 4"])
           .vector_trim_way4(m["Hidden % 4"])
           .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), WEIGHTS[0], WEIGHTS[1])
           .vector_fp_zip(FpBinaryOp.AddF)
           .vector_concat(m["Hidden / 8"], m["Hidden % 8"])  # two time steps of 4 lanes → one of 8 (Widen)
           .vector_final()
           .cast(bf16, m["Hidden % 8 # 16"])
           .commit(m["Hidden"], 1 << 11))
    PASSES.append(("interleaved weighted sum", ctx.schedule.ops[-1]))
    return out.to_hbm(m["Tokens, Hidden"], ctx.tdma, 2 << 28)


def run(seed: int = 11) -> list[tuple[str, Operation]]:
    """Run on random bf16 expert outputs and compare with numpy **exactly**: both products and the sum are single
    IEEE f32 roundings (f32 weights, bf16 inputs) and the cast rounds to nearest even, as numpy's float32 and
    ml_dtypes' bfloat16 do."""
    PASSES.clear()
    ctx = Context.acquire()
    rng = np.random.default_rng(seed)
    xs = [HostTensor.rand(bf16, m["Tokens, Hidden"], rng) for _ in range(2)]
    hbm = [x.to_hbm(Chip, m["Tokens, Hidden"], ctx.pdma, k << 28) for k, x in enumerate(xs)]
    got = launch(combine, ctx, hbm[0], hbm[1]).to_host(m["Tokens, Hidden"], ctx.pdma).numpy()
    a, b = (x.numpy(axes="Tokens Hidden").astype(np.float32) for x in xs)
    want = (np.float32(WEIGHTS[0]) * a + np.float32(WEIGHTS[1]) * b).astype(ml_dtypes.bfloat16)
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))
    return list(PASSES)


def main() -> None:
    """Run, check, print the pass's cycles against the manual's formula (L7350–7354)."""
    passes = run()
    for name, op in passes:
        print(f"    {name:<28}{op.cycles:>8} cycles")
    print(f"    manual (L7350–7354): 2 splits × 64 flits of 4 f32 = 128 fetch cycles + VE (overlapped); "
          f"measured {passes[-1][1].cycles}")


if __name__ == "__main__":
    main()
