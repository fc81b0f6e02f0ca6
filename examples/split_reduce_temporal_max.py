"""Split reduce, Example 4: temporal reduction across windows — the global max (manual L7318–7338).

Four temporal chunks ``[Time_k = 128, Features]`` (bf16, separate DM tensors, L7324–7327) are max-pooled over
time: one pass per chunk reduces ``T`` with the intra-slice reducer (f32 ``Max``, L5397) to ``max_t0..max_t3``
(L7329–7332), then the split reduce combines the four (L7334–7337).

Departures from the manual, with lines:

- **A tree of pairs, not one 4-way fetch** (L7334–7336): "At most two tensors can be interleaved" (L1850), so
  ``begin_interleaved().fetch(&max_t0, &max_t1, &max_t2, &max_t3)`` with ``I: 4`` is refused.  Three 2-way
  split reduces do it: ``max(max_t0, max_t1)``, ``max(max_t2, max_t3)`` and the max of those (decision in
  docs/manual-notes.md, "hardware profile": ``fetch.max_interleaved``).  The result stays f32 (exact: a max of
  bf16 values).
- The chunk axis is ``T`` (the manual's ``Time_k``, renamed so it is not read as the stream's Time level) and
  Features = 2048, eight per slice (the manual leaves it open).
- The per-chunk maxima are f32 DM tensors (``Element m["F % 8 / 4, F % 4 # 8"]``: four lanes per flit, the
  intra-slice reducer's Way4 output padded).

Cycles (L7350–7354): ``N_splits · fetch + VE`` with N = 4: each max is 2 flits per slice, so the manual's formula
gives 8 cycles; the tree takes three passes (``2 + 2 + 2`` flits).  Run it with
``visa run examples/split_reduce_temporal_max.py``.
"""

from __future__ import annotations

import numpy as np

from visa import (
    BranchMode,
    ClipBinaryOpF32,
    Context,
    DmTensor,
    HbmTensor,
    HostTensor,
    IntraSliceReduceOpF32,
    axes,
    bf16,
    device,
    f32,
    launch,
    m,
)
from visa.context import Operation

axes(T=128, F=2048, I=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["F / 8"]
Window = HbmTensor[bf16, m["1"], m["T, F"]]
Max = DmTensor[f32, m["1"], m["1 # 2"], m["F / 8"], m["F % 8 / 4, F % 4 # 8"]]
PASSES: list[tuple[str, Operation]] = []


def window_max(ctx: Context, x: DmTensor[bf16, m["1"], m["1 # 2"], m["F / 8"], m["T, F % 8"]], address: int) -> Max:
    """``chunk.reduce_max(axis: Time_k)`` (L7329): the max over T of each feature."""
    out = (ctx.main.begin(x.view())
           .fetch(f32, m["T, F % 8 / 4"], m["F % 4 # 8"])
           .collect(m["T, F % 8 / 4"], m["F % 4 # 8"])
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_trim_way4(m["F % 4"])
           .vector_intra_slice_reduce("T", m["F % 8 / 4"], m["F % 4"], IntraSliceReduceOpF32.Max)
           .vector_pad_way8(m["F % 4 # 8"])
           .vector_final()
           .commit(m["F % 8 / 4, F % 4 # 8"], address))
    PASSES.append(("window max over T", ctx.schedule.ops[-1]))
    return out


def pair_max(ctx: Context, a: Max, b: Max, address: int) -> Max:
    """One 2-way split reduce: interleaved fetch, unzip, ``ClipBinaryOpF32.Max`` of the two groups (L7334–7337)."""
    out = (ctx.main.begin_interleaved(m["I"], a.view(), b.view())
           .fetch(f32, m["I, F % 8 / 4"], m["F % 4 # 8"])
           .collect(m["I, F % 8 / 4"], m["F % 4 # 8"])
           .vector_init()
           .vector_intra_slice_unzip("I", m["1 # 2, F % 8 / 4"], m["F % 8 / 4"])
           .vector_clip_zip(ClipBinaryOpF32.Max)
           .vector_final()
           .commit(m["F % 8 / 4, F % 4 # 8"], address))
    PASSES.append(("split reduce (pair max)", ctx.schedule.ops[-1]))
    return out


@device(chip=1)
def global_max(ctx: Context, w0: Window, w1: Window, w2: Window, w3: Window) -> HbmTensor[f32, m["1"], m["F"]]:
    """The max over all four windows of every feature (L7322–7337)."""
    dms = [w.to_dm(Cluster, Slice, m["T, F % 8"], ctx.tdma, k << 11) for k, w in enumerate((w0, w1, w2, w3))]
    base = 1 << 13
    maxes = [window_max(ctx, d, base + 64 * k) for k, d in enumerate(dms)]
    left = pair_max(ctx, maxes[0], maxes[1], base + 256)
    right = pair_max(ctx, maxes[2], maxes[3], base + 320)
    top = pair_max(ctx, left, right, base + 384)
    return top.to_hbm(m["F"], ctx.tdma, 4 << 28)


def run(seed: int = 13) -> list[tuple[str, Operation]]:
    """Run on random bf16 windows; the max is exact, so the check is equality with numpy."""
    PASSES.clear()
    ctx = Context.acquire()
    rng = np.random.default_rng(seed)
    xs = [HostTensor.rand(bf16, m["T, F"], rng) for _ in range(4)]
    hbm = [x.to_hbm(Chip, m["T, F"], ctx.pdma, k << 28) for k, x in enumerate(xs)]
    got = launch(global_max, ctx, hbm[0], hbm[1], hbm[2], hbm[3]).to_host(m["F"], ctx.pdma).numpy()
    want = np.max(np.stack([x.numpy(axes="T F").astype(np.float32) for x in xs]), axis=(0, 1))
    assert np.array_equal(got, want)
    return list(PASSES)


def main() -> None:
    """Run, check, print the passes' cycles against the manual's formula (L7350–7354)."""
    passes = run()
    for name, op in passes:
        print(f"    {name:<28}{op.cycles:>8} cycles")
    tree = sum(op.cycles for name, op in passes if name.startswith("split"))
    print(f"    manual (L7350–7354): 4 splits × 2 flits = 8 fetch cycles + VE; the tree of pairs measured {tree}")


if __name__ == "__main__":
    main()
