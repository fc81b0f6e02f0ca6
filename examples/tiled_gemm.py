"""Tiled GEMM with double buffering (manual "Tiling", L7090–7150; "GEMM with Double-Buffering", L7089).

``C[I, J] = Σ_K A[I, K] B[K, J]`` with I = 512, J = 1024, K = 1024 does not fit one pass of the "Hello, TCP!"
GEMM (L466–525): a slice's B operand ``m["J / 8 % 4, K"]`` per TRF Row would be 4 × 1024 bf16 = 8 KiB — a whole
Row (L139), leaving nothing to load the next operand into while the Reducer reads — and 1024 columns of J need
twice the 16 × 16 slice grid.  So the kernel tiles:

- **along N (J)**: two tiles of 512 columns, ``J / 512``; each runs on the GEMM's 16 × 16 slice grid
  (``Slice = m["I / 32, J % 512 / 32"]``, a 32 × 32 output tile per slice, as in examples/gemm.py);
- **along K**: two tiles of 512, ``K / 512``; a tile's B operand is ``m["J / 8 % 4, K % 512"]`` per Row,
  4 KiB — one TRF half (``TrfAddress.FirstHalf`` / ``SecondHalf``, L4043–4048, L4151–4154);
- **higher-precision partials** (L7139–7143): each K tile's contraction commits its f32 accumulator output
  (no cast) to DM; a split-reduce pass (interleaved fetch of the two partials, ``vector_clip_zip(Add)`` in f32,
  L7151–7381) adds them and casts the sum to bf16 once.

**Double buffering**: the sub context loads the next K tile's B into the other TRF half while the main context
contracts the current one; the first tile, which nothing can hide, the main context loads itself (its fetch
reads 32 bytes at a time, the sub context's 8, L1757–1759: a TRF load takes L_main = 1024 cycles on main and
L_sub = 4096 on sub).  **Single buffering** (the baseline): the main context loads each tile before contracting
it, so load and compute never overlap.  ``main`` prints both makespans (from the first TRF load to the last
commit; the DMAs that bring A and B into DM come before and are the same in both) and the Reducer's utilisation
against its peak of ``rows × 2^depth`` bf16 MACs per cycle per slice (8 × 32, L4388) on the 256 slices used.

Hand-derived schedule (T = 4 (N, K) tiles, contraction C cycles, one add pass S per N tile, on main):
single = T·(L_main + C) + 2·S; double = L_main + T·C + 2·S as long as L_sub + H ≤ C — each sub load
finishes, and hands the tile over to main (H, docs/cost-model.md), while main contracts the previous tile.
The schedule orders by bytes and keeps the written order ("Scheduling", L7043–7070): a sub load into a half
the Reducer still reads waits for that contraction (write after read), and no operation starts before the one
written before it — so the next tile's load is written before the contraction it overlaps, and load ``t + 1``
(into the half contraction ``t − 1`` read) starts when contraction ``t − 1`` ends, alongside contraction ``t``.

Departures from the manual: the manual has no tiled-GEMM code (L7124–7131 is a placeholder; its commented
sizes M = N = 8192, K = 2048 are left to benchmarks/); the sizes here keep ``make run`` fast.  A and B are laid
out in DM tile-major (``m["K / 512, I % 32, K % 512"]``, ``m["J / 512, K / 512, J % 32, K % 512"]``) so that a
tile is a view (``view().tile``, L813–832) without a copy.  B is J-major in HBM as in examples/gemm.py (8-byte
DMA packets, L2424–2427).  Run it with ``visa run examples/tiled_gemm.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from visa import (
    AccumulationKind,
    ClipBinaryOpF32,
    Context,
    DmTensor,
    HbmTensor,
    HostTensor,
    TrfAddress,
    TrfTensor,
    axes,
    bf16,
    device,
    f32,
    launch,
    m,
)
from visa.context import Operation

axes(I=512, J=1024, K=1024, P=2)  # P: the two K-tile partials of one N tile, interleaved
N_TILES, K_TILES = 2, 2
Chip, Cluster = m["1"], m["1 # 2"]
Slice = m["I / 32, J % 512 / 32"]
HALVES = (TrfAddress.FirstHalf, TrfAddress.SecondHalf)
PARTIALS, OUT = 3 << 16, 4 << 16  # DM addresses: f32 partials (4 KiB each), the bf16 result
SEGMENT: list[Operation] = []  # the Tensor Unit passes of the last kernel run


def tiled(ctx: Context, a: HbmTensor[bf16, m["1"], m["I, K"]], b: HbmTensor[bf16, m["1"], m["J, K"]], *,
          double: bool) -> HbmTensor[bf16, m["1"], m["I, J"]]:
    """The tiled GEMM; ``double`` loads the TRF from the sub context into alternating halves."""
    a_dm = a.to_dm(Cluster, Slice, m["K / 512, I % 32, K % 512"], ctx.tdma, 0)
    b_dm = b.to_dm(Cluster, Slice, m["J / 512, K / 512, J % 32, K % 512"], ctx.tdma, 1 << 16)
    out: DmTensor[bf16, m["1"], m["1 # 2"], m["I / 32, J % 512 / 32"], m["J / 512, I % 32, J % 32"]] = DmTensor(
        ctx, bf16, Chip, Cluster, Slice, m["J / 512, I % 32, J % 32"], OUT, call="tiled_gemm")
    first = len(ctx.schedule.ops)

    def load(step: int) -> TrfTensor[Any, Any, Any, Any, Any, Any]:
        """TRF tile ``step`` of B: the sub context loads every tile but the first when double buffering."""
        loader = ctx.sub if double and step > 0 else ctx.main
        return (loader.begin(b_dm.view().tile(m["J / 512, K / 512"], 1, m["J % 32, K % 512"], step))
                .fetch(bf16, m["J % 8, J / 8 % 4"], m["K % 512"])
                .collect(m["J % 8, J / 8 % 4, K % 512 / 16"], m["K % 16"])
                .to_trf(m["J % 8"], m["J / 8 % 4, K % 512"], HALVES[step % 2] if double else HALVES[0]))

    # The schedule keeps the written order (L7043–7055): an operation never starts before the one written
    # before it, so the next tile's load is written *before* the contraction it should overlap.
    b_next = load(0)
    for nt in range(N_TILES):
        parts = []
        for kt in range(K_TILES):
            step = nt * K_TILES + kt
            b_trf = b_next if double else (b_next if step == 0 else load(step))
            if double and step + 1 < N_TILES * K_TILES:
                b_next = load(step + 1)  # into the other half, while main contracts this one
            part = (ctx.main.begin(a_dm.view().tile(m["K / 512"], 1, m["I % 32, K % 512"], kt))
                    .fetch(bf16, m["I % 32, J / 8 % 4"], m["K % 512"])
                    .collect(m["I % 32, J / 8 % 4, K % 512 / 16"], m["K % 16"])
                    .align(m["I % 32, J / 8 % 4, K % 512 / 32"], m["K % 32"], b_trf)
                    .contract(m["1"])
                    .accumulate(m["I % 32, J / 8 % 4"], m["J % 8"], AccumulationKind.Interleaved)
                    .commit(m["I % 32, J / 8 % 4, J % 8"], PARTIALS + (step << 12)))  # f32, no cast
            parts.append(part)
        # f32 accumulation across the K tiles, one rounding to bf16 (L7139–7143)
        (ctx.main.begin_interleaved(m["P"], parts[0].view(), parts[1].view())
         .fetch(f32, m["I % 32, J / 8 % 4, P"], m["J % 8"])
         .collect(m["I % 32, J / 8 % 4, P"], m["J % 8"])
         .vector_init()
         .vector_intra_slice_unzip("P", m["I % 32, J / 8 % 4, 1 # 2"], m["I % 32, J / 8 % 4"])
         .vector_clip_zip(ClipBinaryOpF32.Add)
         .vector_final()
         .cast(bf16, m["J % 8 # 16"])
         .commit_view(out.view().tile(m["J / 512"], 1, m["I % 32, J % 32"], nt)))
    SEGMENT[:] = ctx.schedule.ops[first:]
    return out.to_hbm(m["I, J"], ctx.tdma, 2 << 28)


@device(chip=1)
def single_buffered(ctx: Context, a: HbmTensor[bf16, m["1"], m["I, K"]],
                    b: HbmTensor[bf16, m["1"], m["J, K"]]) -> HbmTensor[bf16, m["1"], m["I, J"]]:
    """The baseline: the main context loads each TRF tile, then contracts it."""
    return tiled(ctx, a, b, double=False)


@device(chip=1)
def double_buffered(ctx: Context, a: HbmTensor[bf16, m["1"], m["I, K"]],
                    b: HbmTensor[bf16, m["1"], m["J, K"]]) -> HbmTensor[bf16, m["1"], m["I, J"]]:
    """The sub context loads the next TRF half while the main context contracts the current one."""
    return tiled(ctx, a, b, double=True)


@dataclass
class Timing:
    """One kernel run's Tensor Unit segment: makespan, its passes and the Reducer's utilisation."""

    makespan: int
    loads: list[Operation]
    contractions: list[Operation]
    adds: list[Operation]
    utilisation: float


def measure(ops: list[Operation], ctx: Context) -> Timing:
    """Makespan from the first TRF load to the last commit; utilisation = MACs / (makespan · peak)."""
    makespan = max(op.end for op in ops) - min(op.start for op in ops)
    loads = [op for op in ops if op.name.endswith("to_trf")]
    contractions = [op for op in ops if "reducer" in op.name or "aligner" in op.name]
    adds = [op for op in ops if "vector" in op.name]
    hw = ctx.hw
    peak = hw.dm.slices_per_cluster * hw.contraction.rows * hw.contraction.reduced_elements("bf16")
    macs = 512 * 1024 * 1024
    return Timing(makespan, loads, contractions, adds, macs / (makespan * peak))


def run(seed: int = 3) -> tuple[Timing, Timing]:
    """Run both kernels on the same random bf16 A and B; check each against numpy; return their timings.

    Tolerance (derived): each K tile's sum of 512 bf16 products (exact in f32) is accumulated in f32 (within
    512·2⁻²⁴·Σ|a||b| of the exact sum, any order), the two partials are added in f32 (one more rounding) and the
    result is rounded to bf16 once (half an ulp, 2⁻⁹ relative; taken as 2⁻⁸ to cover the f32 errors' effect on
    the rounding).  So |C − C*| ≤ 2⁻⁸|C*| + (K + 1)·2⁻²⁴·(|A||B|).
    """
    rng = np.random.default_rng(seed)
    a = HostTensor.rand(bf16, m["I, K"], rng)
    b = HostTensor.rand(bf16, m["K, J"], rng)
    x, y = a.numpy(axes="I K").astype(np.float64), b.numpy(axes="K J").astype(np.float64)
    want = x @ y
    bound = np.abs(want) * 2.0**-8 + (x.shape[1] + 1) * 2.0**-24 * (np.abs(x) @ np.abs(y))
    timings = []
    results = []
    for kernel in (single_buffered, double_buffered):
        ctx = Context.acquire()
        a_hbm = a.to_hbm(Chip, m["I, K"], ctx.pdma, 0)
        b_hbm = b.to_hbm(Chip, m["J, K"], ctx.pdma, 1 << 28)
        got = np.asarray(launch(kernel, ctx, a_hbm, b_hbm).to_host(m["I, J"], ctx.pdma).numpy(axes="I J"),
                         dtype=np.float64)
        assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))
        results.append(got)
        timings.append(measure(list(SEGMENT), ctx))
    assert np.array_equal(results[0], results[1])  # the same arithmetic in another schedule
    return timings[0], timings[1]


def main() -> None:
    """Run both, print makespans, the hand-derived expectation and utilisation."""
    single, double = run()
    load, comp = single.loads[0].cycles, single.contractions[0].cycles
    sub_load = double.loads[1].cycles
    add = sum(op.cycles for op in single.adds)
    tiles = N_TILES * K_TILES
    print(f"  tiled GEMM 512 × 1024 × 1024 (bf16, f32 partials): TRF load L_main = {load}, "
          f"L_sub = {sub_load}, contraction C = {comp}, adds {add} cycles")
    print(f"    single-buffered makespan {single.makespan:>7} cycles (T·(L_main + C) + adds = "
          f"{tiles * (load + comp) + add}), Reducer utilisation {single.utilisation:.1%}")
    print(f"    double-buffered makespan {double.makespan:>7} cycles (L_main + T·C + adds = "
          f"{load + tiles * comp + add}), Reducer utilisation {double.utilisation:.1%}")
    print(f"    speed-up {single.makespan / double.makespan:.2f}×")
    assert double.makespan <= single.makespan


if __name__ == "__main__":
    main()
