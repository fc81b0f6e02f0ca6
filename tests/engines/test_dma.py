"""The DMA Engine (manual "DMA Engine", L2355–2847; "Memory Performance", L2848–3009).

Every move is the identity on the tensor (L1162–1197): the test of a move is that the logical tensor comes
back unchanged.  The manual's worked configurations and cycle figures are checked with their lines, with the
typos corrected as docs/manual-notes.md explains.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context, device, launch
from visa import dtypes as dt
from visa.engines.dma import DmaPlan, Side, cycles, plan
from visa.errors import (
    AddressError,
    DtypeError,
    HardwareLimitError,
    IncompatibleShapesError,
    LayoutError,
    TypestateError,
    UnsupportedFeatureError,
    VisaError,
)
from visa.tensors.handles import HbmTensor, HostTensor

SL = RNGD.dm.slice_address_space_bytes  # the manual's slice_stride (L2541)
DMN = RNGD.dm.slices_per_dmn * SL  # DMN_stride
PAIR = RNGD.dma.dmns_per_engine * DMN
CLUSTER = RNGD.dm.slices_per_cluster * SL
rng = np.random.default_rng(2024)
DMA_TYPES = [dt.i4, dt.i8, dt.f8e4m3, dt.f8e5m2, dt.i16, dt.f16, dt.bf16, dt.i32, dt.f32]  # L2525


def hbm(m: Any, element: str, address: int = 0, chip: str = "1", name: str = "") -> Side:
    return Side.of("hbm", {"Chip": m[chip], "Element": m[element]}, address, name=name)


def dm(m: Any, slice_: str, element: str, address: int = 0, cluster: str = "1 # 2") -> Side:
    return Side.of("dm", {"Chip": m["1"], "Cluster": m[cluster], "Slice": m[slice_], "Element": m[element]},
                   address)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f" or b.dtype.kind not in "iu":
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    return bool(np.array_equal(a, b))


# ---------------------------------------------------------------------------------------------------------
# the manual's configurations (digest §10.5)
# ---------------------------------------------------------------------------------------------------------


def test_d1_hbm_to_dm_l1184() -> None:
    # HbmTensor<bf16, m![A], m![B]> → DmTensor<bf16, m![A], m![1], m![B / 2], m![B % 2]> at 64 KB.  The manual's
    # Cluster m![1] breaks Cluster::SIZE == 2 (L1080), and its 4-byte slices break the 8-byte packets of an
    # HBM→DM transfer (L2427): both are refused; the smallest legal change keeps 4 elements per slice.
    ax = AxisSet(A=8, B=512)
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["A, B"], rng)
    h = x.to_hbm(m["A"], m["B"], ctx.pdma, 0)

    @device(chip=8)
    def hbm_to_dm(ctx: Context, hbm: HbmTensor[Any, Any, Any], cluster: str, slice_: str, element: str) -> Any:
        return hbm.to_dm(m[cluster], m[slice_], m[element], ctx.tdma, 1 << 16)

    with pytest.raises(HardwareLimitError) as err:
        launch(hbm_to_dm, ctx, h, "1", "B / 2", "B % 2")
    assert err.value.level == "Cluster"
    with pytest.raises(HardwareLimitError) as err:
        launch(hbm_to_dm, ctx, h, "1 # 2", "B / 2", "B % 2")
    assert err.value.level == "Packet" and err.value.axis == "B"
    d = launch(hbm_to_dm, ctx, h, "1 # 2", "B / 4 # 256", "B % 4")
    assert same(d.logical(axes="A B"), x.numpy(axes="A B"))


def test_d2_basic_hbm_to_hbm_l2431() -> None:
    # Read [H=8:8, C=3:64, N=3:192, W=8:1] and write [H=8:192, C=8:32, N=3:8, W=8:1] (L2441-2442) are typos:
    # the pseudocode (L2447-2458) loops n over 0..4 and writes at h·96 + c·32 + n·8
    ax = AxisSet(N=4, C=3, H=8, W=8)
    m = ax.m
    p = plan(RNGD, dt.i8, hbm(m, "N, C, H, W", 1024), hbm(m, "H, C, N, W", 2048), stream=(m["H, C, N"], m["W"]))
    assert str(p.read) == "[8 : 8, 3 : 64, 4 : 192, 8 : 1] : 8 @ 1024"
    assert str(p.write) == "[8 : 96, 3 : 32, 4 : 8, 8 : 1] : 8 @ 2048"
    assert p.stride0 == 8 and p.base == (1024, 2048)
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i8, m["N, C, H, W"], rng)
    y = x.to_hbm(m["1"], m["N, C, H, W"], ctx.pdma, 1024).to_hbm(m["1"], m["H, C, N, W"], ctx.tdma, 2048,
                                                                 stream=(m["H, C, N"], m["W"]))
    # the pseudocode: Mem[h*96 + c*32 + n*8 + w + 2048] = Mem[h*8 + c*64 + n*192 + w + 1024]
    raw = ctx.memory.chip(0).hbm.window(2048, 2048 + 768)[0].view(np.int8).reshape(8, 3, 4, 8)
    assert same(raw, x.numpy(axes="N C H W").transpose(2, 1, 0, 3))
    assert same(y.logical(axes="N C H W"), x.numpy(axes="N C H W"))


def test_d3_dma_sequencer_and_cycles_l2555() -> None:
    ax = AxisSet(A=256, B=256, C=256)
    m = ax.m
    p = plan(RNGD, dt.i8, hbm(m, "A, B, C", 0), hbm(m, "B, A, C", 256 ** 3), stream=(m["A, B, C"], m["1"]))
    # DmaSequencer = [A=256:(65536, 256), B=256:(256, 65536), C=256:(1, 1)], base=(0, 256^3), stride0 = 256
    assert str(p) == "[256 : (65536, 256), 256 : (256, 65536), 256 : (1, 1)] @ (0, 16777216), stride0 256"
    assert str(p.read) == "[256 : 65536, 256 : 256, 256 : 1] : 1"  # L2586
    assert str(p.write) == "[256 : 256, 256 : 65536, 256 : 1] : 1 @ 16777216"  # L2587
    assert cycles(p).total == 500 + 256 * 256  # L2581


def test_d4_example1_hbm_to_hbm_l2608() -> None:
    ax = AxisSet(A=8, B=8, C=256)
    m = ax.m
    p = plan(RNGD, dt.i8, hbm(m, "A, B, C", 0), hbm(m, "B, A, C", 16384), stream=(m["A, B"], m["C"]))
    assert str(p.read) == "[8 : 2048, 8 : 256, 256 : 1] : 256"  # L2621
    assert str(p.write) == "[8 : 256, 8 : 2048, 256 : 1] : 256 @ 16384"  # L2622
    # "approximately 128 cycles (64 read requests + 64 write requests) plus ~500" (L2630); the engine moves a
    # 256-byte read and write per cycle as D3 on the same page counts (L2577-2581, L2596), and HBM has
    # separate read and write bandwidth (L2602): 64 + 500 (docs/manual-notes.md)
    assert cycles(p).total == 500 + 64


def test_d5_example2_hbm_to_dm_l2637() -> None:
    ax = AxisSet(A=256, B=256, C=256)
    m = ax.m
    src, dst = hbm(m, "B, A, C"), dm(m, "A / 4 # 256", "A % 4, B, C")
    p = plan(RNGD, dt.i8, src, dst, stream=(m["B, A % 4, A / 4 % 32, A / 128"], m["C"]))
    assert str(p.read) == "[256 : 65536, 4 : 256, 32 : 1024, 2 : 32768, 256 : 1] : 256"  # L2651
    sl, dmn = SL, DMN
    assert str(p.write) == f"[256 : 256, 4 : 65536, 32 : {sl}, 2 : {dmn}, 256 : 1] : 256"  # L2652
    assert cycles(p).total == 66036  # max(65536, 65536) + 500 (L2658)
    # without a stream the plan interleaves the DMNs itself and reaches the same figure
    auto = plan(RNGD, dt.i8, src, dst)
    assert auto.stride0 == 256 and cycles(auto).total == 66036


def test_d6_example3_dm_to_dm_l2659() -> None:
    ax = AxisSet(A=256, B=256, C=256)
    m = ax.m
    src = dm(m, "A / 4 # 256", "A % 4, B, C")
    dst = dm(m, "A / 4 # 256", "B, A % 4, C", 4 * 256 * 256)
    p = plan(RNGD, dt.i8, src, dst, stream=(m["B, A % 4, A / 4 % 32, A / 128"], m["C"]))
    # the manual prints the read's B stride as 1 (L2672); B advances 256 bytes in m![A % 4, B, C]
    assert str(p.read) == f"[256 : 256, 4 : 65536, 32 : {SL}, 2 : {DMN}, 256 : 1] : 256"
    assert str(p.write) == f"[256 : 1024, 4 : 256, 32 : {SL}, 2 : {DMN}, 256 : 1] : 256 @ 262144"  # L2673
    assert cycles(p).total == 131072 + 500  # reads and writes of one cluster in sequence (L2681)


def test_d7_example4_bank_conflicts_l2682() -> None:
    # The manual's own configuration (its In/Out mappings break the 512 KB rule, Q9): 8 engines, cluster i and
    # DMN pair j, reading HBM at i·2^20 + j·2^18 (L2700-2702)
    p = DmaPlan.from_loops(RNGD, dt.i8, ("hbm", "dm"),
                           [(256, 1024, 1024), (4, 256, 256), (32, 1 << 21, SL), (2, 1 << 26, DMN), (256, 1, 1)],
                           spatial=[(2, 1 << 20, CLUSTER), (4, 1 << 18, PAIR)])
    cost = cycles(p)
    # Within one engine's window of 64 requests on a channel, A walks the row bits 21-26 (L2703-2708): every
    # request opens another row of the same bank, so the switches serialise (40 ns each, L2987) and the channel's
    # other banks have nothing queued to overlap them.  The manual charges each request 40 cycles, "a conservative
    # estimate" (L2709-2716); the model adds each request's own 16/3-cycle transfer: 16384 x (40 + 16/3) at most.
    assert 655360 + 500 < cost.total <= 500 + 16384 * (40 + 16 / 3)
    assert cost.total / (655360 + 500) < 1.15
    assert cost.hbm > 4 * 65536  # HBM reads are the bottleneck (L2705)
    assert any("bank conflicts" in w for w in cost.why)


def test_d8_example5_missing_stack_bit_l2717() -> None:
    loops = [(8, 512, 256), (32, 4096, SL), (2, 131072, DMN), (256, 1, 1)]
    spatial = [(2, 1 << 20, CLUSTER), (4, 1 << 18, PAIR)]
    cost = cycles(DmaPlan.from_loops(RNGD, dt.i8, ("hbm", "dm"), loops, spatial=spatial))
    # 4096 requests on 16 channels, 256 per channel at 16/3 cycles each; the manual rounds 16/3 to 5.3 and
    # gets 1357 + 500 = 1857 (L2741-2744)
    assert cost.total == 500 + 1366
    assert abs(cost.total - 1857) <= 10


def test_d9_example6_heterogeneous_segmentation_l2752() -> None:
    # DMNs 0-2 run one command; DMN 3 two (L2786-2808).  Reads: exec #1's read config repeats exec #0's in the
    # manual (L2776); it reads the single A' = 14 half (A'/2 % 2 = 1), like its write config (L2783)
    k0 = DmaPlan.from_loops(RNGD, dt.i8, ("dm", "hbm"), [(2, 256, 256), (32, SL, 15 * 256), (2, DMN, 512), (256, 1, 1)])
    e0 = DmaPlan.from_loops(RNGD, dt.i8, ("dm", "hbm"), [(2, 256, 256), (32, SL, 15 * 256), (256, 1, 1)],
                            (3 * PAIR, 3 * 1024))
    e1 = DmaPlan.from_loops(RNGD, dt.i8, ("dm", "hbm"), [(32, SL, 15 * 256), (256, 1, 1)],
                            (3 * PAIR + DMN, 3 * 1024 + 512))
    # DMNs 0-2: "reads and writes overlap" (L2798): 128 + 500 (the manual then adds them, 756; see notes)
    assert cycles(k0).total == 628
    # DMN 3 reads one DMN, 128 B/cycle: 128 + 500 and 64 + 500; the slowest DMN decides (L2806-2808)
    assert cycles(e0).total + cycles(e1).total == 1192
    assert max(cycles(k0).total, cycles(e0).total + cycles(e1).total) == 1192


def test_d10_packet_size_and_requests_l2469() -> None:
    ax = AxisSet(X=4095, Y=4099, Z=8192)
    m = ax.m
    p = plan(RNGD, dt.i8, hbm(m, "X"), hbm(m, "X", 1 << 20))
    assert p.stride0 == 4095 and cycles(p).issue == 16  # ceil(4095 / 256) requests (L2469)
    p = plan(RNGD, dt.i8, hbm(m, "Y"), hbm(m, "Y", 1 << 20))
    assert p.stride0 == 1  # 4099 is prime: one byte at a time (L2472)
    p = plan(RNGD, dt.i8, hbm(m, "Z"), hbm(m, "Z", 1 << 20))
    assert p.stride0 == 4096 and str(p).startswith("[2 : (4096, 4096), 4096 : (1, 1)]")  # AXI limit (L2428)


def test_weight_tiles_of_the_70b_layer_l2682_l2981() -> None:
    # An 8192 x 512 bf16 weight tile (8 MiB) into cluster 0's 256 slices, as visa.kernels.Gemm streams it: four
    # engines, one per DMN pair, each 2 MiB = 8192 requests of 256 bytes (L2469).
    from visa.memory import performance as perf

    ax = AxisSet(N=8192, F=7168, K=512)
    m = ax.m
    ideal = 32768 / 32 * 16 / 3  # 8 MiB over 32 channels at 16/3 cycles per 256 bytes (L2980): 5461
    contiguous = cycles(plan(RNGD, dt.bf16, hbm(m, "N, K"), dm(m, "N / 32", "N % 32, K")))
    assert contiguous.engines == 4 and contiguous.issue == 8192
    # Each engine streams 2 MiB; a window of its 64 requests on a channel asks 8 banks for one row each (bits
    # 13-18), so the channels' bus is the bound and the engines' 8192 requests each the longer part.
    assert contiguous.hbm == math.ceil(ideal) and contiguous.total == 500 + 8192
    # The layer's tile is K-tile t of a row-major [8192, 8192] weight: 1 KiB of every 16 KiB.  Bits 10-13 are
    # fixed and bits 14-16 (the byte-in-row bits of a 2 KiB DRAM row) also pick the channel (L2970-2977), so
    # every 256-byte unit of the tile lands in a DRAM row of its own.  Unlike Example 4 (L2682-2716) the rows are
    # spread over 16 banks of each channel: a window of 64 queued requests holds 4 per bank, so each bank's
    # switches overlap the other banks' transfers (L2989-2993) and the tile streams at the channels' rate.
    units = (np.arange(8192, dtype=np.int64)[:, None] * 16384 + np.arange(4) * 256).reshape(-1)
    rows = {(c, b, r) for c, b, r in zip(perf.hbm_channel(RNGD, units).tolist(), perf.hbm_bank(RNGD, units).tolist(),
                                         perf.hbm_row(RNGD, units).tolist(), strict=True)}
    assert len(rows) == units.size
    assert len(set(perf.hbm_bank(RNGD, units).tolist())) == 16
    strided = cycles(plan(RNGD, dt.bf16, hbm(m, "N, K # 8192"), dm(m, "N / 32", "N % 32, K")))
    assert strided.hbm == contiguous.hbm == math.ceil(ideal) and strided.total == contiguous.total == 500 + 8192
    # gate/up's 7168-row tiles fill 224 slices, 3.5 DMN pairs: one engine per DMN (seven), 1 MiB each at
    # 128 B/cycle (L2603) = 8192 cycles, as long as a whole pair's engine (before: one engine, 57320)
    gate = plan(RNGD, dt.bf16, hbm(m, "F, K"), dm(m, "F / 32 # 256", "F % 32, K"))
    assert len(gate.spatial) == 1 and gate.spatial[0].size == 7 and gate.spatial[0].dst == DMN
    assert cycles(gate).dm == 8192 and cycles(gate).issue == 4096


def test_tiles_over_partial_dmn_pairs_use_the_engines_of_their_dmns_l2547_l2752() -> None:
    # N x 512 bf16 weight tiles into cluster 0's slices, 32 rows (32 KiB) per slice, as visa.kernels.Gemm streams
    # them; 8 packets of 4096 B per slice, each 32 cycles of its DMN at 128 B/cycle (L2603).  Any engine may serve
    # any DMN (L2547-2548) and an uneven split is a heterogeneous operation (L2752-2808): the slices run in equal
    # runs within one DMN, one engine each, and the tile lasts startup 500 (L2467) + its busiest DMN.
    def tile(rows: int) -> DmaPlan:
        m = AxisSet(N=rows, K=512).m
        return plan(RNGD, dt.bf16, hbm(m, "N, K"), dm(m, "N / 32 # 256", "N % 32, K"))
    # 80 slices (2560 rows, the 4-chip q/k/v stack of the 70B TP layer): 2½ DMNs.  Before, one engine read them
    # slice by slice, one DMN at a time: 640 packets x 32 cycles, halved at the two DMN changes (dm_engine_time:
    # 16 x (640 + 638) = 20448), 500 + 20448 = 20948.  Now 5 engines of 16 slices (two in each full DMN, one in
    # the half): DMNs 0 and 1 serve 2 x 128 packets x 32 = 8192 cycles, DMN 2 4096; HBM (2.5 MiB contiguous over
    # 32 channels) and the engines' 2048 requests each are below that: 500 + 8192.
    p80 = tile(2560)
    assert [lp.size for lp in p80.spatial] == [5] and p80.spatial[0].dst == DMN // 2
    c80 = cycles(p80)
    assert (c80.engines, c80.issue, c80.dm, c80.total) == (5, 2048, 8192, 500 + 8192) and c80.hbm < 8192
    # 48 slices (1½ DMNs, less than a pair): before one engine, 16 x (384 + 383) = 12272 + 500; now 3 engines of
    # 16 slices, DMN 0 busiest with 256 packets: 500 + 8192
    c48 = cycles(tile(1536))
    assert (c48.engines, c48.dm, c48.total) == (3, 8192, 500 + 8192)
    # 160 slices (5 whole DMNs, 2½ pairs) were already one engine per DMN (the 3½-pair rule): 256 packets x 32
    # = 8192 on each DMN, unchanged 500 + 8192; so are one DMN (32 slices, one engine) and one pair (64 slices,
    # one engine alternating its two DMNs at 256 B/cycle, L2883-2893)
    c160 = cycles(tile(5120))
    assert (c160.engines, c160.dm, c160.total) == (5, 8192, 500 + 8192) and c160.hbm < 8192
    assert (cycles(tile(1024)).engines, cycles(tile(1024)).total) == (1, 500 + 8192)
    assert (cycles(tile(2048)).engines, cycles(tile(2048)).total) == (1, 500 + 8192)
    # the values: every element lands where the one-engine plan put it (the plan only moves loops to engines)
    ctx = Context.acquire()
    m = AxisSet(N=2560, K=64).m
    x = HostTensor.from_numpy(rng.integers(-99, 99, (2560, 64)).astype(np.int32), dt.i32, m["N, K"], axes="N K")
    h = x.to_hbm(m["1"], m["N, K"], ctx.pdma, 1 << 28)
    d = h.to_dm(m["1 # 2"], m["N / 32 # 256"], m["N % 32, K"], ctx.tdma, 0)
    back = d.to_hbm(m["N, K"], ctx.tdma, 1 << 29).to_host(m["N, K"], ctx.pdma)
    assert same(back.numpy(axes="N K"), x.numpy(axes="N K"))
    assert plan(RNGD, dt.i32, hbm(m, "N, K"), dm(m, "N / 32 # 256", "N % 32, K")).engines == 5


def test_gemv_broadcast_vector_to_all_slices_l441() -> None:
    # vector: HbmTensor<bf16, Chip, m![J]> → DmTensor<bf16, Chip, Cluster, m![I], m![J]> (L441-446): every
    # slice i holds the vector, a tensor constant along I
    ax = AxisSet(I=256, J=2048)
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["J"], rng)
    h = x.to_hbm(m["1"], m["J"], ctx.pdma, 1 << 28)
    d = h.to_dm(m["1 # 2"], m["I"], m["J"], ctx.tdma, 1 << 12)
    want = np.broadcast_to(x.numpy(), (256, 2048))
    assert same(d.logical(axes="I J"), want)
    back = d.to_hbm(m["I, J"], ctx.tdma, 0).to_host(m["I, J"], ctx.pdma)
    assert same(back.numpy(axes="I J"), want)
    p = plan(RNGD, dt.bf16, hbm(m, "J"), dm(m, "I", "J"))
    assert p.stride0 == 4096 and p.engines == 4  # one engine per DMN pair of the cluster
    assert p.all_loops()[0].src == 0  # the broadcast reads stride 0 (L1557)


def test_hello_tcp_dma_round_trip_l180() -> None:
    ax = AxisSet(A=2048)
    m = ax.m

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any]) -> Any:
        dm_ = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
        return dm_.to_hbm(m["A"], ctx.tdma, 1 << 28)

    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["A"], rng)
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), x.numpy())
    tracks = [op.track for op in ctx.schedule.ops]
    assert tracks == ["pdma", "tdma", "tdma", "pdma"]
    assert all(op.cycles >= RNGD.dma.startup_cycles for op in ctx.schedule.ops)
    starts = [op.start for op in ctx.schedule.ops]
    assert starts == sorted(starts)  # each move waits for its input


# ---------------------------------------------------------------------------------------------------------
# round trips host → HBM → DM → HBM → host
# ---------------------------------------------------------------------------------------------------------


def round_trip(ax: AxisSet, dtype: type[dt.Scalar], host: str, hbm_e: str, slice_: str, element: str,
               back: str, axes: str, cluster: str = "1 # 2", dm_address: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dtype, m[host], rng)
    h = x.to_hbm(m["1"], m[hbm_e], ctx.pdma, 256)
    d = h.to_dm(m[cluster], m[slice_], m[element], ctx.tdma, dm_address)
    y = d.to_hbm(m[back], ctx.tdma, 1 << 24).to_host(m[host], ctx.pdma)
    return x.numpy(axes=axes), y.numpy(axes=axes)


@pytest.mark.parametrize("dtype", DMA_TYPES, ids=lambda d: d.__name__)
def test_round_trip_every_dtype(dtype: type[dt.Scalar]) -> None:
    ax = AxisSet(A=64, B=24)
    back = "A, B" if dtype.size_bits == 4 else "B, A"  # a byte mover cannot transpose nibbles
    x, y = round_trip(ax, dtype, "B, A", "A, B", "A / 4 # 256", "A % 4, B", back, "A B")
    assert same(x, y)


@pytest.mark.parametrize("dtype", [dt.i4, dt.i8, dt.bf16], ids=lambda d: d.__name__)
def test_round_trip_padding_splitting_reordering(dtype: type[dt.Scalar]) -> None:
    ax = AxisSet(A=63, B=13, C=2)
    # padded slices, a padded innermost row (the DMA writes 16 elements: padding goes along), a split axis,
    # a reordered one, and the two clusters
    x, y = round_trip(ax, dtype, "C, A, B", "A, C, B # 16", "A # 256", "B # 16", "C, A, B # 16", "C A B",
                      cluster="C")
    assert same(x, y)


def test_round_trip_multi_chip() -> None:
    ax = AxisSet(K=2, A=512)
    m = ax.m

    @device(chip=2)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any]) -> Any:
        d = x.to_dm(m["1 # 2"], m["A / 2"], m["A % 2"], ctx.tdma, 0)
        return d.to_hbm(m["A"], ctx.tdma, 1 << 20)

    ctx = Context.acquire()
    x = HostTensor.rand(dt.f32, m["K, A"], rng)
    y = launch(kernel, ctx, x.to_hbm(m["K"], m["A"], ctx.pdma, 0)).to_host(m["K, A"], ctx.pdma)
    assert same(y.numpy(axes="K A"), x.numpy(axes="K A"))


def test_relayout_across_chips_crosses_pcie() -> None:
    ax = AxisSet(K=2, A=1024)
    m = ax.m
    p = plan(RNGD, dt.i32, hbm(m, "K, A", chip="1 # 2"), hbm(m, "A", chip="K"))
    cost = cycles(p)
    assert cost.pcie >= 1024 * 4 // RNGD.dma.pcie_bytes_per_cycle  # chip 0 → chip 1 at 30 B/cycle (L2389)
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["K, A"], rng)
    h = x.to_hbm(m["1 # 2"], m["K, A"], ctx.pdma, 0)
    y = h.to_hbm(m["K"], m["A"], ctx.tdma, 1 << 20)
    assert same(y.logical(axes="K A"), x.numpy(axes="K A"))


def test_tile_moves_to_dm() -> None:
    ax = AxisSet(A=8, B=512)
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["A, B"], rng)
    t = x.to_hbm(m["1"], m["A, B"], ctx.pdma, 0)
    tile = t.view().tile(m["B / 32"], 2, m["A, B / 32 = 2 # 16, B % 32"], 3)
    d = tile.to_dm(m["1 # 2"], m["A # 256"], m["B = 64"], ctx.tdma, 0)
    assert same(d.logical(axes="A B"), x.numpy(axes="A B")[:, 96:160])


def test_more_than_eight_loops_become_commands_l1630() -> None:
    ax = AxisSet(A=2, B=2, C=2, D=2, E=2, F=2, G=2, H=2, I=2, J=8)
    m = ax.m
    src = hbm(m, "A, B, C, D, E, F, G, H, I, J")
    dst = hbm(m, "I, H, G, F, E, D, C, B, A, J", 1 << 20)
    p = plan(RNGD, dt.i8, src, dst)
    assert len(p.loops) <= RNGD.sequencer.max_entries and p.command_count > 1
    assert cycles(p).startup == 500 * p.command_count  # each command pays the startup (L2472)
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i8, m["A, B, C, D, E, F, G, H, I, J"], rng)
    y = x.to_hbm(m["1"], m["A, B, C, D, E, F, G, H, I, J"], ctx.pdma, 0).to_hbm(
        m["1"], m["I, H, G, F, E, D, C, B, A, J"], ctx.tdma, 1 << 20)
    order = "A B C D E F G H I J"
    assert same(y.logical(axes=order), x.numpy(axes=order))


def test_loops_longer_than_65536_are_split_l1631() -> None:
    ax = AxisSet(A=1 << 18, B=2)
    m = ax.m
    p = plan(RNGD, dt.i8, hbm(m, "A, B"), hbm(m, "B, A", 1 << 20))
    assert all(lp.size <= RNGD.sequencer.max_entry_size for lp in p.loops)


# ---------------------------------------------------------------------------------------------------------
# the DMA's rules: each raises, names the tensor, the level and the axis, and writes nothing
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def setup() -> tuple[Context, Any, Any]:
    ax = AxisSet(A=64, B=12, C=16, D=6)
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i8, m["A, B"], rng)
    return ctx, m, x.to_hbm(m["1"], m["A, B # 16"], ctx.pdma, 0)  # rows of 16 bytes, 12 of them data


def nothing_written(ctx: Context, ops: int = 1) -> None:
    assert len(ctx.schedule.ops) == ops
    assert not ctx.memory.chip(0).dm.written[..., :4096].any()
    assert ctx.memory.chip(0).hbm.regions() == [(0, 64 * 16)]


def test_dm_write_packets_are_multiples_of_8_bytes_l2426(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    with pytest.raises(HardwareLimitError) as err:
        h.to_dm(m["1 # 2"], m["A # 256"], m["B"], ctx.tdma, 0)  # 12-byte rows
    assert err.value.level == "Packet" and err.value.axis == "B"
    assert "DmTensor[i8" in str(err.value) and "multiple of 8 bytes" in str(err.value)
    nothing_written(ctx)
    d = h.to_dm(m["1 # 2"], m["A # 256"], m["B # 16"], ctx.tdma, 0)  # padded rows move as 16-byte packets
    assert np.array_equal(d.logical(axes="A B"), h.logical(axes="A B"))
    assert plan(RNGD, dt.i8, hbm(m, "A, B # 16"), dm(m, "A # 256", "B # 16")).stride0 == 16


def test_dm_write_addresses_are_8_byte_aligned_l2426(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    with pytest.raises(AddressError) as err:
        h.to_dm(m["1 # 2"], m["A # 256"], m["B # 16"], ctx.tdma, 4)
    assert err.value.level == "Element" and err.value.axis == "B" and "DmTensor[i8" in str(err.value)
    nothing_written(ctx)


def test_hbm_to_dm_reads_8_byte_aligned_l2427() -> None:
    ax = AxisSet(A=64, B=16)
    m = ax.m
    ctx = Context.acquire()
    h = HostTensor.rand(dt.i8, m["A, B"], rng).to_hbm(m["1"], m["A, B"], ctx.pdma, 4)
    with pytest.raises(AddressError) as err:
        h.to_dm(m["1 # 2"], m["A # 256"], m["B"], ctx.tdma, 0)
    assert err.value.level == "Element" and err.value.axis == "A, B"
    assert "HbmTensor[i8" in str(err.value) and "HBM→DM" in str(err.value)
    assert len(ctx.schedule.ops) == 1 and not ctx.memory.chip(0).dm.written[..., :4096].any()


def test_dm_write_strides_are_8_byte_aligned_l2426() -> None:
    ax = AxisSet(A=4, B=8)
    m = ax.m
    src = hbm(m, "A, B # 12")
    dst = dm(m, "1 # 256", "A, B # 12")
    with pytest.raises(AddressError) as err:
        plan(RNGD, dt.i8, src, dst, stream=(m["A"], m["B"]))  # 8-byte packets, rows 12 bytes apart
    assert err.value.level == "Time" and err.value.axis == "A"
    # the derived stream moves the padding too: one 48-byte packet
    assert plan(RNGD, dt.i8, src, dst).stride0 == 48


def test_half_bytes_are_refused_for_4_bit_types(setup: tuple[Context, Any, Any]) -> None:
    ax = AxisSet(A=64, B=12)
    m = ax.m
    ctx = Context.acquire()
    h = HostTensor.rand(dt.i4, m["A, B"], rng).to_hbm(m["1"], m["A, B"], ctx.pdma, 0)
    with pytest.raises(HardwareLimitError) as err:
        h.to_hbm(m["1"], m["B, A"], ctx.tdma, 1 << 20)
    assert err.value.level == "Packet" and "whole bytes" in str(err.value) and "HbmTensor[i4" in str(err.value)
    assert len(ctx.schedule.ops) == 1 and ctx.memory.chip(0).hbm.regions() == [(0, 384)]


def test_destination_must_keep_every_axis_l1162(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    d = h.to_dm(m["1 # 2"], m["A # 256"], m["B # 16"], ctx.tdma, 0)
    with pytest.raises(LayoutError) as err:
        d.to_hbm(m["B"], ctx.tdma, 1 << 20)
    assert err.value.axis == "A" and err.value.level == "Element" and "HbmTensor[i8" in str(err.value)
    assert len(ctx.schedule.ops) == 2 and ctx.memory.chip(0).hbm.regions() == [(0, 64 * 16)]


def test_destination_must_hold_every_index_l1162(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    with pytest.raises(LayoutError) as err:
        h.to_hbm(m["1"], m["A = 32, B # 16"], ctx.tdma, 1 << 20)
    assert err.value.axis == "A" and err.value.level == "Element"
    nothing_written(ctx)


def test_source_must_hold_what_the_destination_needs_l1639(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    tile = h.view().tile(m["A"], 32, m["A = 32, B # 16"], 0)
    with pytest.raises(VisaError) as err:
        tile.to_hbm(m["1"], m["A, B # 16"], ctx.tdma, 1 << 20)
    assert err.value.axis == "A"
    nothing_written(ctx)


def test_the_dma_planner_sends_spm_to_its_own_moves_l2942() -> None:
    ax = AxisSet(A=64)
    m = ax.m
    with pytest.raises(UnsupportedFeatureError) as err:
        plan(RNGD, dt.i8, hbm(m, "A"), Side.of("spm", {"Chip": m["1"], "Element": m["A"]}))
    assert "L2942" in str(err.value) and "dm.to_spm" in str(err.value)


def test_a_linear_combination_is_refused_l1006() -> None:
    # regression: the padded DMA buffer of a linear combination failed an assertion inside the mapping algebra
    ax = AxisSet(A=8, B=8)
    m = ax.m
    ctx = Context.acquire()
    host = HostTensor.from_numpy(np.zeros((8, 8), np.int8), dt.i8, m["A, B"])
    with pytest.raises(UnsupportedFeatureError) as err:
        host.to_hbm(m["1"], m["$(A : 1, B : 1)"], ctx.pdma, 0)
    assert err.value.level == "Element" and err.value.axis == "A, B" and err.value.call == "host.to_hbm"
    assert not ctx.schedule.ops and not ctx.memory.chip(0).hbm.regions()


def test_trf_and_stream_only_types_are_not_dma_media_l2525() -> None:
    ax = AxisSet(A=64)
    m = ax.m
    with pytest.raises(DtypeError):
        plan(RNGD, dt.i9, hbm(m, "A"), hbm(m, "A", 1024))
    with pytest.raises(UnsupportedFeatureError):
        plan(RNGD, dt.i8, hbm(m, "A"), Side.of("trf", {"Element": m["A"]}))


def test_the_right_dma_context(setup: tuple[Context, Any, Any]) -> None:
    ctx, m, h = setup
    with pytest.raises(TypestateError) as err:
        h.to_dm(m["1 # 2"], m["A # 256"], m["B # 16"], ctx.pdma, 0)
    assert "ctx.tdma" in str(err.value)
    with pytest.raises(TypestateError):
        h.to_host(m["A, B # 16"], ctx.tdma)
    nothing_written(ctx)


def test_a_move_reads_a_tensor_of_its_own_context_l39() -> None:
    # regression: hbm.to_host with another context's pdma read that context's HBM at the tensor's address
    ax = AxisSet(A=64)
    m = ax.m
    mine, other = Context.acquire(), Context.acquire()
    theirs = HostTensor.from_numpy(np.arange(64), dt.i8, m["A"]).to_hbm(m["1"], m["A"], other.pdma, 0)
    HostTensor.from_numpy(np.arange(64)[::-1], dt.i8, m["A"]).to_hbm(m["1"], m["A"], mine.pdma, 0)
    for move in (lambda: theirs.to_host(m["A"], mine.pdma),
                 lambda: theirs.to_dm(m["1 # 2"], m["A # 256"], m["1"], mine.tdma, 0)):
        with pytest.raises(VisaError) as err:
            move()
        assert "another context" in str(err.value) and err.value.fix and err.value.call in ("hbm.to_host",
                                                                                               "hbm.to_dm")
    assert len(mine.schedule.ops) == 1 and not mine.memory.chip(0).dm.written.any()


def test_a_given_stream_may_not_write_past_the_destination_l7896() -> None:
    ax = AxisSet(A=4, C=13)
    m = ax.m
    with pytest.raises(LayoutError) as err:
        plan(RNGD, dt.i8, hbm(m, "A, C"), hbm(m, "A, C", 4096), stream=(m["A"], m["C # 16"]))
    assert err.value.level == "Packet"
    ok = plan(RNGD, dt.i8, hbm(m, "A, C"), hbm(m, "A, C # 16", 4096), stream=(m["A"], m["C # 16"]))
    assert ok.stride0 == 16  # the padded packet reads 3 bytes past each 13-byte source row


def test_plan_is_pure_and_cached() -> None:
    ax = AxisSet(A=64, B=16)
    m = ax.m
    a = plan(RNGD, dt.i8, hbm(m, "A, B"), dm(m, "A # 256", "B"))
    b = plan(RNGD, dt.i8, hbm(m, "A, B"), dm(m, "A # 256", "B"))
    assert a is b and cycles(a) is cycles(b)


# ---------------------------------------------------------------------------------------------------------
# property: random layouts make the round trip unchanged
# ---------------------------------------------------------------------------------------------------------


@st.composite
def layouts(draw: st.DrawFn) -> tuple[Any, ...]:
    dtype = draw(st.sampled_from(DMA_TYPES))
    row = {4: 16, 8: 8, 16: 4, 32: 2}[dtype.size_bits] * draw(st.sampled_from([1, 2]))  # 8 or 16 bytes
    sizes = {"R": row, "P": draw(st.sampled_from([2, 3, 4, 6])), "Q": draw(st.sampled_from([2, 4, 5]))}
    outer = draw(st.permutations(["P", "Q"]))
    split = draw(st.sampled_from([None, "P", "Q"]))
    z = draw(st.sampled_from([0, 2, 3]))  # broadcast axis only the DM layout has
    if z:
        sizes["Z"] = z
    ax = AxisSet(**sizes)

    def items(order: list[str]) -> list[str]:
        out: list[str] = []
        for a in order:
            if a == split and sizes[a] % 2 == 0:
                out += [f"{a} / 2", f"{a} % 2"]
            else:
                out.append(a)
        return out

    host = ", ".join(draw(st.permutations(["P", "Q", "R"])))
    pad = draw(st.sampled_from(["", f" # {2 * row}"]))
    hbm_e = ", ".join(items(list(outer))) + f", R{pad}"
    on_slice = draw(st.sampled_from(outer))
    others = [a for a in outer if a != on_slice]
    slice_ = f"{on_slice} # 256"
    rest = items(others)
    if sizes[on_slice] % 2 == 0 and draw(st.booleans()):  # the slice axis split between Slice and Element
        slice_ = f"{on_slice} / 2 # 256"
        rest.append(f"{on_slice} % 2")
    inner = "R # 32" if dtype.size_bits == 4 and row == 16 and draw(st.booleans()) else "R"
    elem = ", ".join((["Z"] if z else []) + rest + [inner])
    # an optional DM → DM hop that reorders the outer part of each slice (rows stay contiguous)
    hop = ", ".join((["Z"] if z else []) + draw(st.permutations(rest)) + [inner]) if draw(st.booleans()) else ""
    back_order = draw(st.permutations(["P", "Q", "R"] + (["Z"] if z else [])))
    back = ", ".join(back_order)
    return ax, dtype, host, hbm_e, slice_, elem, back, z, hop


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_round_trip_property(case: tuple[Any, ...]) -> None:
    ax, dtype, host, hbm_e, slice_, elem, back, z, hop = case
    m = ax.m
    ctx = Context.acquire()
    x = HostTensor.rand(dtype, m[host], rng)
    h = x.to_hbm(m["1"], m[hbm_e], ctx.pdma, 0)
    d = h.to_dm(m["1 # 2"], m[slice_], m[elem], ctx.tdma, 0)
    if hop:
        d = d.to_dm(m["1 # 2"], m[slice_], m[hop], ctx.tdma, 1 << 16)
    try:
        h2 = d.to_hbm(m[back], ctx.tdma, 1 << 20)
    except HardwareLimitError as err:
        # a byte mover cannot transpose 4-bit elements: refused cleanly, nothing written
        assert dtype.size_bits == 4 and err.level == "Packet"
        assert ctx.memory.chip(0).hbm.regions()[-1][1] <= 1 << 20
        assume(False)
    order = "P Q R" + (" Z" if z else "")
    y = h2.to_host(m[back], ctx.pdma)
    want = x.numpy(axes="P Q R")
    if z:
        want = np.broadcast_to(want[..., None], (*want.shape, z))
    assert same(y.numpy(axes=order), np.ascontiguousarray(want))
    assert same(d.logical(axes=order), np.ascontiguousarray(want))


def test_a_packet_carries_the_elements_own_padding_only_l2424() -> None:
    """A padded packet may carry an element and its own padding (``A, 1 # 2``, L1818–1840), never the padding
    of the Cluster or Slice levels: those positions are other units' bytes.  A one-byte Element with padded
    Cluster and Slice is refused for the 8-byte DM write rule (L2424–2427) rather than planned as a 512-byte
    packet that would overwrite 511 bytes of other slices' data (found by the collectives' i8 step, L7417)."""
    ax = AxisSet(A=4)
    m = ax.m
    src = Side.of("dm", {"Chip": m["A"], "Cluster": m["1 # 2"], "Slice": m["1 # 256"], "Element": m["1 # 8"]}, 64)
    dst = Side.of("dm", {"Chip": m["A"], "Cluster": m["1 # 2"], "Slice": m["1 # 256"], "Element": m["1"]}, 128)
    with pytest.raises(HardwareLimitError) as err:
        plan(RNGD, dt.i8, src, dst)
    assert err.value.level == "Packet"
    padded = Side.of("dm", {"Chip": m["A"], "Cluster": m["1 # 2"], "Slice": m["1 # 256"], "Element": m["1 # 8"]},
                     128)
    assert plan(RNGD, dt.i8, src, padded).stride0 == 8


# ------------------------------------------------------------------------------------------ skewed layouts


def test_a_skewed_layout_moves_into_the_same_skew_only_L986() -> None:
    """A DMA between a skewed layout (B' = B - A) and an unskewed one: each row is a rotation of the other's, which
    a sequencer cannot walk; refused naming the skew (issue 27 item 9: it read as "insufficient input" / "not
    evenly spaced" with the HBM buffer's capacity padding in the text).  The same skew on both sides moves."""
    ax = AxisSet(A=4, B=8).skew("B'", "B - A")
    m = ax.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    x = HostTensor.from_numpy(np.arange(32, dtype=np.int32).reshape(4, 8), dt.i32, m["A, B"])
    skewed = x.to_hbm(m["1"], m["A, B' = 8"], ctx.pdma, 1 << 20)
    plain = x.to_hbm(m["1"], m["A, B"], ctx.pdma, 1 << 21)
    for src, element in ((skewed, "A, B"), (plain, "A, B' = 8")):
        with pytest.raises(IncompatibleShapesError) as err:
            src.to_dm(m["1 # 2"], m["1 # 256"], m[element], ctx.tdma, 0)
        text = str(err.value)
        assert "skewed axis B' = B - A" in text and "rotation" in text and "L986–1003" in text
        assert "insufficient" not in text and "12884901888" not in text
        assert err.value.axis == "B'" and "same skew" in (err.value.fix or "")
    moved = skewed.to_dm(m["1 # 2"], m["1 # 256"], m["A, B' = 8"], ctx.tdma, 0)
    assert np.array_equal(moved.logical(axes="A B"), np.arange(32).reshape(4, 8))
