"""Partials reduced across the two clusters (issue 15): ``visa.kernels.collectives.cluster_all_reduce`` and the
i8 GEMM that splits K over slices and clusters (``visa.kernels.gemm_i8``, the 16384³ benchmark's kernels).

The cluster swap is a DM → DM tensor DMA (cross-cluster transfers, manual L2386–2388); its cost is derived by
hand from the DMA model: one engine per DMN pair (L2404, L2831) pays the startup (L2467) and then its slower
part — one 256-byte request a cycle (L2469) or its DMNs at 128 B/cycle each (L2603).  Every DMN both sends its
cluster's partial and receives the other cluster's (the swap moves both ways), and a DMN's reads and writes are
sequential, so an engine's DM time is its bytes read plus written over 128 B/cycle — halved when its packets
alternate the pair's two DMNs (L2883–2893).  The add is one interleaved pass: two 32-byte flits per 8 i32 lanes
(L2192, L1843–1852) plus the one ALU's fill latency (``AddFxp``, L4826).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from visa import AxisSet, Context, HbmTensor, HostTensor, device, f32, i8, i32, launch
from visa.errors import LayoutError
from visa.hw import RNGD
from visa.kernels import Arena
from visa.kernels.collectives import cluster_all_reduce
from visa.kernels.gemm_i8 import i8_gemm_kernels

STARTUP = RNGD.dma.startup_cycles  # L2467
DMN_BYTES = RNGD.dm.dmn_bytes_per_cycle  # L2603
REQUEST = RNGD.dma.request_bytes  # L2469
FLIT = 32  # the fetch's flit (L2192)
ALU = 1  # AddFxp's fill latency (visa.hw.rngd: alu_latency_cycles)
COMMAND = RNGD.timing.full_command_cycles  # a Tensor Unit command's issue and fill (issue 22)
H = RNGD.timing.context_handoff_cycles  # a dependency between two contexts


def _swap_cycles(bytes_per_engine: int, dmns: int) -> int:
    """Startup plus the slower of the engine's requests and its DMNs: ``bytes_per_engine`` read and as many
    written, over ``dmns`` DMNs its packets alternate (1 or 2) at 128 B/cycle each."""
    return STARTUP + max(bytes_per_engine // REQUEST, 2 * bytes_per_engine // (DMN_BYTES * dmns))


def _reduce_across_clusters(x: np.ndarray, dtype: Any) -> tuple[Context, int, Any]:
    """``x[H = 2, S = 16, D = 128]`` uploaded, moved to DM with ``Cluster = m["H"]`` (one half per cluster) and
    summed across the clusters by ``cluster_all_reduce``: the context, the index of the kernel's first operation
    and the result."""
    ax = AxisSet(H=2, S=16, D=128)
    m = ax.m
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, dtype, m["H, S, D"], axes="H S D").to_hbm(m["1"], m["H, S, D"], ctx.pdma, 0)
    first = len(ctx.schedule.ops)
    return ctx, first, launch(_reduce_kernel(ax, m["H"]), ctx, xh)


def _reduce_kernel(ax: AxisSet, cluster: Any) -> Any:
    """The kernel both tests launch: ``xh`` to DM with Cluster ``cluster`` (S over the slices, D per slice),
    then ``cluster_all_reduce``."""
    m = ax.m

    @device(chip=1)
    def kernel(ctx: Context, xh: Any) -> Any:
        arena = Arena()
        xd = xh.to_dm(cluster, m["S # 256"], m["D"], ctx.tdma, arena.take_dm(4 * 128))
        return cluster_all_reduce(ctx, ax, arena, xd)

    return kernel


def test_cluster_all_reduce_i32_exact_and_its_two_operations_cost_what_the_model_derives() -> None:
    x = np.random.default_rng(1).integers(-(1 << 30), 1 << 30, size=(2, 16, 128)).astype(np.int32)
    ctx, first, out = _reduce_across_clusters(x, i32)
    load, swap, add = ctx.schedule.ops[first:]
    want = x.astype(np.int64).sum(axis=0).astype(np.int32)  # wrapping AddFxp (L4826)
    assert np.array_equal(out.logical(axes="H S D"), np.broadcast_to(want, (2, 16, 128)))  # both clusters
    assert swap.track == "tdma" and swap.name.startswith("cluster_swap.") and add.track == "main"
    # 16 slices of 512 B in each cluster, all in the cluster's first DMN: one engine per cluster moves 8 KiB
    assert swap.cycles == _swap_cycles(16 * 512, 1) == 628
    assert add.cycles - COMMAND == 2 * 128 * 4 // FLIT + ALU == 33
    assert swap.start == load.end and add.start == swap.end + H
    assert [d.kinds for d in add.deps if d.op == swap.index] == [("RAW",)]


def test_cluster_all_reduce_refuses_a_tensor_with_nothing_across_the_clusters() -> None:
    ax = AxisSet(S=16, D=128)
    m = ax.m
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(np.zeros((16, 128), np.int32), i32, m["S, D"], axes="S D").to_hbm(
        m["1"], m["S, D"], ctx.pdma, 0)
    first = len(ctx.schedule.ops)
    with pytest.raises(LayoutError) as err:
        launch(_reduce_kernel(ax, m["1 # 2"]), ctx, xh)
    e = err.value
    assert (e.call, e.level, e.mapping) == ("visa.kernels.cluster_all_reduce", "Cluster", 'm["1 # 2"]')
    assert "nothing to reduce" in e.describe() and 'm["H"]' in (e.fix or "")
    assert [op.track for op in ctx.schedule.ops[first:]] == ["tdma"]  # the load only: nothing swapped or added


def test_i8_gemm_reduces_over_slices_then_clusters_exactly_and_the_cross_cluster_step_is_scheduled() -> None:
    n, rows = 512, 64  # the smallest size the layout allows: a 512 × 256 tile of C, K tiles of 64
    kern = i8_gemm_kernels(n, rows)
    assert (kern.tile_i, kern.tile_j, kern.ks) == (512, 256, 64)
    rng = np.random.default_rng(15)
    x = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    y = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    full = AxisSet(I=n, J=n, K=n)
    ctx = Context.acquire()
    HostTensor.from_numpy(x, i8, full.m["I, K"]).to_hbm(full.m["1"], full.m["I, K"], ctx.pdma, 0)
    HostTensor.from_numpy(y, i8, full.m["J, K"], axes="K J").to_hbm(full.m["1"], full.m["J, K"], ctx.pdma, n * n)
    m = kern.ax.m
    a_dm = launch(kern.a_to_dm, ctx, HbmTensor.from_addr(ctx, i8, m["1"], kern.a_layout, 0))
    assert a_dm.levels["Cluster"] == m["H"]  # each cluster holds one half of K for the same rows
    first = len(ctx.schedule.ops)
    got = []
    for jt in range(n // kern.tile_j):
        b = HbmTensor.from_addr(ctx, i8, m["1"], kern.b_layout, n * n + jt * kern.tile_j * n)
        got.append(launch(kern.tile, ctx, a_dm, b, 2 * n * n + jt * kern.tile_i * kern.tile_j * 4)
                   .logical(axes="I J"))
    assert np.array_equal(np.concatenate(got, axis=1), x.astype(np.int64) @ y.astype(np.int64))

    ops = ctx.schedule.ops[first:]
    assert len(ops) == 2 * 6  # per tile: B to DM, B to TRF, contraction, cluster swap, add, C to HBM
    for t in range(2):
        load_b, to_trf, contract, swap, add, store = ops[6 * t: 6 * t + 6]
        assert (load_b.track, to_trf.track, contract.track, swap.track, add.track, store.track) == (
            "tdma", "sub", "main", "tdma", "main", "tdma")
        assert swap.name.startswith("cluster_swap.")
        # each cluster's 64 partials (rows × 32 i32 = 8 KiB) sit in every 4th slice: 8 per DMN, 16 per engine,
        # whose packets alternate its two DMNs
        assert swap.cycles == _swap_cycles(16 * rows * 32 * 4, 2) == 1524
        assert add.cycles - COMMAND == 2 * rows * 32 * 4 // FLIT + ALU == 513
        # the hazards order the step: swap after the commit of the partial, add after the swap, store after it
        assert swap.start == contract.end + H and add.start == swap.end + H and store.start == add.end + H
        for later, earlier in ((swap, contract), (add, swap), (store, add)):
            assert ("RAW",) in [d.kinds for d in later.deps if d.op == earlier.index]


@pytest.mark.parametrize("slices", [16, 256])
@pytest.mark.parametrize("by_cluster", [True, False])
def test_cluster_swap_copies_cluster_by_cluster_or_byte_by_byte_alike(slices: int, by_cluster: bool,
                                                                     reference: Callable[..., None]) -> None:
    """The swap's execution: the plan's source loop over the clusters is apart from the others (it steps one
    cluster, the rest stay inside one), so each destination cluster is one plain copy from the other cluster;
    without that shortcut (forced here) the bytes are gathered through the remapped addresses.  Both give the
    tensor with its clusters exchanged, and the swap costs the same move without it (L2866–2893)."""
    from visa.engines.dma import shuffle
    from visa.engines.dma.plan import Side, plan
    from visa.memory.transfer import address_space

    ax = AxisSet(H=2, S=slices, D=8)
    m = ax.m
    x = np.random.default_rng(slices).integers(-(1 << 30), 1 << 30, size=(2, slices, 8)).astype(np.int32)
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, i32, m["H, S, D"], axes="H S D").to_hbm(m["1"], m["H, S, D"], ctx.pdma, 0)
    lv = {"Chip": m["1"], "Cluster": m["H"], "Slice": m["S # 256"], "Element": m["D"]}
    p = plan(RNGD, i32, Side.of("dm", lv, 0), Side.of("dm", lv, 64))
    loops = [(lp.size, lp.src, lp.dst) for lp in p.all_loops()]
    assert shuffle._cluster_loop(shuffle.ShufflePlan(p, (), (1, 0)), loops, address_space(RNGD, "dm")) is not None
    if not by_cluster:
        reference("dma.shuffle-by-cluster")

    @device(chip=1)
    def kernel(ctx: Context, xh: Any) -> Any:
        xd = xh.to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, 0)
        return xd.view().cluster_swap().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, 64)

    out = launch(kernel, ctx, xh)
    assert np.array_equal(out.logical(axes="H S D"), x[::-1])
    assert ctx.schedule.ops[-1].cycles == shuffle.cycles(shuffle.ShufflePlan(p, (), ())).total


def test_i8_gemm_kernels_refuse_a_size_the_layout_cannot_hold() -> None:
    with pytest.raises(LayoutError) as err:
        i8_gemm_kernels(1000, 64)  # not a multiple of 8 · 64 = 512
    e = err.value
    assert (e.call, e.level, e.axis) == ("i8_gemm_kernels", "Slice", "K")
    assert "multiple of 512" in e.describe() and "16384" in (e.fix or "")
    with pytest.raises(LayoutError, match="at most 2048"):
        i8_gemm_kernels(32768)  # K tiles of 4096: 4 × 4096 i8 per TRF Row is past the 8 KiB TRF (L139)


def test_cluster_all_reduce_f32_is_one_ieee_add_and_both_clusters_agree() -> None:
    x = np.random.default_rng(2).standard_normal((2, 16, 128)).astype(np.float32)
    ctx, _, out = _reduce_across_clusters(x, f32)
    got = out.logical(axes="H S D")
    assert out.dtype is f32
    assert np.array_equal(got[0], x[0] + x[1]) and np.array_equal(got[1], x[1] + x[0])  # a + b = b + a (L7580)
