"""Chip/Cluster Reduce (manual L7382–7610): ReduceScatter by the manual's step table, AllGather, the rotation
("ring") AllReduce, the butterfly AllReduce and their 2-cluster twins on one chip.

The three primitives are the manual's (L7603–7610): an asymmetric Slice by ParallelCopy in the sub context
(``dm.asymmetric_chip_slice``), a ChipShuffle by DMA (``view.chip_shuffle(p).to_dm(...)``: destination chip c
receives chip p[c]'s data, L7541) and tensor addition by an interleaved fetch and a Vector Engine add
(``begin_interleaved`` + ``vector_fxp_zip(AddFxp)``).  Every function below takes the mapping factory ``mm`` of
an axis set with ``A`` (the chips), ``B`` (the digit ReduceScatter slices), ``S`` (slices), ``D`` (the
elements of one 32-byte packet) and ``I = 2`` (the interleave axis), so the tests run them on 2, 4 and 8 chips.

Departures from the manual, with lines:

* i32, not i8 (L7395): the manual's i8 sums overflow (spec digest Q2); the Vector Engine adds i32 (L4826).
* Each (A, B) entry of the manual's 4 × 4 tensor is one 32-byte packet per slice (``D`` = 8 i32 in each of the
  256 slices): DM writes are 8-byte packets (L2834) and the Fetch Engine reads 32-byte flits (L2192); the
  manual's ``slice: 256`` (L7396) is read as 256 slices that each hold a part of every entry (digest Q13).
* ReduceScatter stops after step 5 (L7470–7476): its result is ``{chip: B, element: 1}``.  Step 6 ("AllGather",
  L7477–7481) contradicts the stated ReduceScatter output (L7486–7491; digest Q12) — after it every chip holds
  every sum, which is AllReduce.  It is :func:`all_gather` here, run after ReduceScatter to give AllReduce.
* The manual's tensor addition of four tensors (L7474, L7577) is three interleaved pairwise adds: the fetch
  interleaves exactly two tensors (L1843–1852; digest Q8).
* The AllReduce rotations (L7538–7573) are called "ring" here; the shuffles are DM → DM DMAs (all nine
  source/destination pairs are DMA moves, L2386–2389), not the HBM → HBM of L7607.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa import AxisSet, Context, DmTensor, HostTensor, device, i32, launch
from visa.engines.dma.shuffle import rotation
from visa.engines.vector import FxpBinaryOp
from visa.kernels.collectives import pair_add_axes

N = 4  # chips of the runs in main(); the tests run 2, 4 and 8

Dm = DmTensor[Any, Any, Any, Any, Any]


def add(ctx: Context, mm: Any, a: Dm, b: Dm, address: int) -> Dm:
    """Tensor addition (L7610): fetch ``a`` and ``b`` interleaved along ``I`` and add them in the Vector Engine
    (wrapping i32 add, L4826); the result has ``a``'s layout, at ``address``."""
    # an Element wider than one 32-byte flit: its rest in Time, the pair innermost (L3544, L5154–5249)
    packet, time, tile, split = pair_add_axes(mm, a.levels["Element"], "I")
    out: Dm = (ctx.main.begin_interleaved(mm["I"], a.view(), b.view())
               .fetch(i32, time, packet).collect(time, packet)
               .vector_init()
               .vector_intra_slice_unzip("I", tile, split)
               .vector_fxp_zip(FxpBinaryOp.AddFxp)
               .vector_final()
               .commit(a.levels["Element"], address))
    return out


def reduce_scatter(ctx: Context, mm: Any, x: Dm, n: int, base: int, trace: list[Dm] | None = None) -> Dm:
    """ReduceScatter by the manual's table (L7400–7476): T_r = Slice(indices (c − r) mod n) then
    ChipShuffle(rotation r), so chip c holds X[(c + r) mod n, B = c]; then T0 + … + T_{n−1}.  ``x`` is laid
    out ``{Chip: A, Element: B, D}``; the result ``{Chip: A (now meaning B), Element: D}`` holds
    ``Σ_a X[a, B = c]`` on chip c.  Each T_r is appended to ``trace``."""
    step = 1 << 12
    acc: Dm | None = None
    for r in range(n):
        sliced = x.asymmetric_chip_slice(mm["B"], ctx.sub, [(c - r) % n for c in range(n)], base + r * step)
        t = sliced if r == 0 else sliced.view().chip_shuffle(list(rotation(n, r))).to_dm(
            sliced.levels["Cluster"], sliced.levels["Slice"], sliced.levels["Element"], ctx.tdma,
            base + (n + r) * step)
        if trace is not None:
            trace.append(t)
        acc = t if acc is None else add(ctx, mm, acc, t, base + (2 * n + r) * step)
    assert acc is not None
    return acc


def ring_all_reduce(ctx: Context, mm: Any, x: Dm, n: int, base: int, trace: list[Dm] | None = None) -> Dm:
    """AllReduce by rotations (L7503–7602): T_r = ChipShuffle(rotation r)(T0) for r = 1 … n − 1 (chip c holds
    X[(c + r) mod n]), then T0 + T1 + … on every chip."""
    step = 1 << 12
    lv = x.levels
    acc = x
    for r in range(1, n):
        t = x.view().chip_shuffle(list(rotation(n, r))).to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma,
                                                              base + r * step)
        if trace is not None:
            trace.append(t)
        acc = add(ctx, mm, acc, t, base + (n + r) * step)
    return acc


def butterfly_all_reduce(ctx: Context, mm: Any, x: Dm, n: int, base: int, trace: list[Dm] | None = None) -> Dm:
    """AllReduce by XOR pairings: in round k chip c adds what its partner c XOR 2^k holds; after log2(n) rounds
    every chip holds the sum (n must be a power of two, as the manual's chip counts are, L7602)."""
    step = 1 << 12
    lv = x.levels
    acc = x
    k, r = 1, 0
    while k < n:
        t = acc.view().chip_shuffle([c ^ k for c in range(n)]).to_dm(lv["Cluster"], lv["Slice"], lv["Element"],
                                                                     ctx.tdma, base + (2 * r) * step)
        if trace is not None:
            trace.append(t)
        acc = add(ctx, mm, acc, t, base + (2 * r + 1) * step)
        k, r = 2 * k, r + 1
    return acc


def all_gather(ctx: Context, mm: Any, s: Dm, n: int, base: int) -> Dm:
    """AllGather (ReduceScatter's step 6, L7477–7481): chip c holds S[c] (Element D); afterwards every chip
    holds S[0 … n − 1] (Element ``A, D``, Chip the new axis ``R``).

    The shuffles T_r (chip c receives S[(c + r) mod n]) land side by side as slots ``Q`` of one buffer; a
    rotation is no layout, so the slots are put in order by asymmetric slices: output slot a on chip c is slot
    (a − c) mod n."""
    lv = s.levels
    width = lv["Element"].size * 4  # bytes of one slot (i32)
    slots = base
    for r in range(n):
        if r == 0:  # slot 0: the chip's own part, a plain copy
            s.view().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, slots)
        else:
            s.view().chip_shuffle(list(rotation(n, r))).to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma,
                                                              slots + r * width)
    stacked: Dm = DmTensor.from_addr(ctx, i32, mm["R"], lv["Cluster"], lv["Slice"], mm["Q, D"], slots)
    out = base + (1 << 14)
    for a in range(n):
        stacked.asymmetric_chip_slice(mm["Q"], ctx.sub, [(a - c) % n for c in range(n)], out + a * width)
    gathered: Dm = DmTensor.from_addr(ctx, i32, mm["R"], lv["Cluster"], lv["Slice"], mm["A, D"], out)
    return gathered


def cluster_all_reduce(ctx: Context, mm: Any, x: Dm, base: int) -> Dm:
    """The 2-cluster twin of AllReduce on one chip: X + ClusterSwap(X) (cluster k holds X[k] + X[1 − k])."""
    lv = x.levels
    t = x.view().cluster_swap().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, base)
    return add(ctx, mm, x, t, base + (1 << 12))


def cluster_reduce_scatter(ctx: Context, mm: Any, x: Dm, base: int) -> Dm:
    """The 2-cluster twin of ReduceScatter: T0 = ClusterSlice(0, 1); T1 = ClusterSlice(1, 0) then ClusterSwap,
    so cluster k holds X[1 − k, B = k]; T0 + T1 on cluster k is Σ X[:, B = k]."""
    t0 = x.asymmetric_cluster_slice(mm["B"], ctx.sub, [0, 1], base)
    s1 = x.asymmetric_cluster_slice(mm["B"], ctx.sub, [1, 0], base + (1 << 12))
    lv = s1.levels
    t1 = s1.view().cluster_swap().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, base + (2 << 12))
    return add(ctx, mm, t0, t1, base + (3 << 12))


# ---------------------------------------------------------------------------------------------------- runs
ax = AxisSet(A=N, B=N, R=N, Q=N, S=256, D=8, I=2)
twin = AxisSet(K=2, B=2, S=256, D=8, I=2)
RNG = np.random.default_rng(7)


@device(chip=4)
def rs_then_gather(ctx: Context, xh: Any) -> tuple[Dm, Dm]:
    """ReduceScatter (steps 1–5) and AllGather (step 6) on 4 chips."""
    mm = ax.m
    x = xh.to_dm(mm["1 # 2"], mm["S"], mm["B, D"], ctx.tdma, 0)
    s = reduce_scatter(ctx, mm, x, N, 1 << 16)
    return s, all_gather(ctx, mm, s, N, 1 << 18)


@device(chip=4)
def all_reduces(ctx: Context, xh: Any) -> tuple[Dm, Dm]:
    """Ring and butterfly AllReduce on 4 chips."""
    mm = ax.m
    x = xh.to_dm(mm["1 # 2"], mm["S"], mm["D"], ctx.tdma, 0)
    return ring_all_reduce(ctx, mm, x, N, 1 << 16), butterfly_all_reduce(ctx, mm, x, N, 1 << 18)


@device(chip=1)
def cluster_twins(ctx: Context, xh: Any) -> tuple[Dm, Dm]:
    """The 2-cluster twins on one chip."""
    mm = twin.m
    x = xh.to_dm(mm["K"], mm["S"], mm["B, D"], ctx.tdma, 0)
    xd = xh.to_dm(mm["K"], mm["S"], mm["B, D"], ctx.tdma, 1 << 12)
    return cluster_all_reduce(ctx, mm, xd, 1 << 16), cluster_reduce_scatter(ctx, mm, x, 1 << 18)


def main() -> None:
    """Run every collective against numpy (wrapping i32 sums, L4826) and print the schedules (``visa run``)."""
    mm = ax.m
    x = RNG.integers(-(1 << 20), 1 << 20, size=(N, N, 256, 8), dtype=np.int64).astype(np.int32)
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, i32, mm["A, B, S, D"], axes="A B S D").to_hbm(mm["A"], mm["B, S, D"],
                                                                                   ctx.pdma, 0)
    s, g = launch(rs_then_gather, ctx, xh)
    sums = x.astype(np.int64).sum(axis=0).astype(np.int32)  # [B, S, D]
    assert np.array_equal(s.logical(axes="A S D"), sums)  # chip c holds Σ_a X[a, B = c]
    assert np.array_equal(g.logical(axes="R A S D"), np.broadcast_to(sums, (N, N, 256, 8)))

    y = x[:, 0]  # [A, S, D]
    ctx2 = Context.acquire()
    yh = HostTensor.from_numpy(y, i32, mm["A, S, D"], axes="A S D").to_hbm(mm["A"], mm["S, D"], ctx2.pdma, 0)
    ring, fly = launch(all_reduces, ctx2, yh)
    total = y.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(ring.logical(axes="A S D"), np.broadcast_to(total, (N, 256, 8)))
    assert np.array_equal(fly.logical(axes="A S D"), np.broadcast_to(total, (N, 256, 8)))

    tm = twin.m
    z = RNG.integers(-(1 << 20), 1 << 20, size=(2, 2, 256, 8), dtype=np.int64).astype(np.int32)
    ctx3 = Context.acquire()
    zh = HostTensor.from_numpy(z, i32, tm["K, B, S, D"], axes="K B S D").to_hbm(tm["1"], tm["K, B, S, D"],
                                                                                   ctx3.pdma, 0)
    car, crs = launch(cluster_twins, ctx3, zh)
    zsum = z.astype(np.int64).sum(axis=0).astype(np.int32)  # [B, S, D]
    assert np.array_equal(car.logical(axes="K S B D"), np.broadcast_to(zsum.transpose(1, 0, 2), (2, 256, 2, 8)))
    assert np.array_equal(crs.logical(axes="K S D"), zsum)


if __name__ == "__main__":
    main()
