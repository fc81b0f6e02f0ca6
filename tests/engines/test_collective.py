"""Collectives across chips and clusters (manual "Chip/Cluster Reduce", L7382–7610; design API.md §7).

The primitives: ChipShuffle / cluster swap staged on a view and moved by a DMA (destination chip c receives
chip p[c]'s data, L7541), the asymmetric slice by ParallelCopy in the sub context (L7400–7441, L7603–7606),
and the collectives of ``examples/collectives.py`` built from them, on 2, 4 and 8 chips, with every
intermediate T_r checked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.example_loader import load_example
from visa import RNGD, AxisSet, Context, device, i8, i32, launch
from visa import dtypes as dt
from visa.engines import parallel_copy as pcopy
from visa.engines.dma import shuffle
from visa.errors import HardwareLimitError, LayoutError, TypestateError, UnsupportedFeatureError, VisaError
from visa.tensors.handles import HbmTensor, HostTensor
from visa.testing import place_dm

RNG = np.random.default_rng(12)
ROOT = Path(__file__).resolve().parents[2]
STARTUP = RNGD.dma.startup_cycles  # ~500 cycles a command (L2472)
PCIE = RNGD.dma.pcie_bytes_per_cycle  # 30 B/cycle between chips (L2389, L2845)


def ctx_for(n: int) -> Context:
    ctx = Context(RNGD)
    ctx.num_chips = n
    return ctx


def ints(shape: tuple[int, ...], dtype: type[dt.Scalar] = i32) -> np.ndarray:
    lo, hi = (-(1 << 20), 1 << 20) if dtype is i32 else (dtype.min, dtype.max)
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype.storage)


def rows(ctx: Context, ax: AxisSet, n: int, address: int = 0, element: str = "D") -> tuple[Any, np.ndarray]:
    """X[A = n, S = 256, D] on DM: chip a holds row a."""
    x = ints((n, 256, ax.m["D"].size))
    t = place_dm(ctx, x, i32, ax.m["A"], ax.m["1 # 2"], ax.m["S"], ax.m[element], address, axes="A S D")
    return t, x


def refused(err: pytest.ExceptionInfo[VisaError], call: str, level: str, *words: str) -> None:
    e = err.value
    assert e.call is not None and call in e.call, e.call
    assert e.level == level, e.level
    assert e.fix, "a refusal names the fix"
    for w in words:
        assert w in str(e), (w, str(e))


# ------------------------------------------------------------------------------------------- permutations
def test_rotations_are_the_manuals_shuffles_l7538_l7573() -> None:
    assert shuffle.rotation(4, 1) == (1, 2, 3, 0)  # T1, L7538
    assert shuffle.rotation(4, 2) == (2, 3, 0, 1)  # T2, L7552
    assert shuffle.rotation(4, 3) == (3, 0, 1, 2)  # T3, L7563


@pytest.mark.parametrize("perm, words", [
    ([1, 2, 3], ["3 entries", "4 chips"]),
    ([1, 2, 3, 0, 0], ["5 entries"]),
    ([0, 0, 1, 2], ["not a permutation", "chip 0", "chip 3 of none"]),
    ([0, 1, 2, 4], ["p[3] = 4", "0..3"]),
    ([0, 1, 2, -1], ["p[3] = -1"]),
    ([0, 1, 2, "3"], ["p[3] = '3'"]),
])
def test_permutation_refusals_name_the_chip(perm: list[Any], words: list[str]) -> None:
    with pytest.raises(LayoutError) as err:
        shuffle.check_permutation(perm, 4)
    refused(err, "chip_shuffle", "Chip", *words)


def test_one_chip_shuffle_is_refused() -> None:
    with pytest.raises(LayoutError) as err:
        shuffle.check_permutation([0], 1)
    refused(err, "chip_shuffle", "Chip", "one chip")
    ax = AxisSet(S=256, D=8)
    ctx = ctx_for(1)
    t = place_dm(ctx, ints((256, 8)), i32, ax.m["1"], ax.m["1 # 2"], ax.m["S"], ax.m["D"], 0, axes="S D")
    with pytest.raises(LayoutError) as err2:
        t.view().chip_shuffle([0])
    refused(err2, "chip_shuffle", "Chip", "one chip", "@device(chip=N)")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_shuffle_values_every_rotation(n: int) -> None:
    ax = AxisSet(A=n, S=256, D=8)
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    for r in range(1, n):
        out = t.view().chip_shuffle(list(shuffle.rotation(n, r))).to_dm(ax.m["1 # 2"], ax.m["S"], ax.m["D"],
                                                                          ctx.tdma, r * 64)
        assert np.array_equal(out.logical(axes="A S D"), np.roll(x, -r, axis=0))  # T_r[c] = X[(c + r) % n]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([2, 4, 8]).flatmap(lambda n: st.permutations(list(range(n)))))
def test_shuffle_any_permutation_destination_c_receives_p_c_l7541(perm: list[int]) -> None:
    n = len(perm)
    ax = AxisSet(A=n, S=256, D=8)
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    out = t.view().chip_shuffle(perm).to_dm(ax.m["1 # 2"], ax.m["S"], ax.m["D"], ctx.tdma, 4096)
    assert np.array_equal(out.logical(axes="A S D"), x[perm])
    assert t.logical(axes="A S D").tobytes() == x.tobytes()  # the source is unchanged


def test_shuffle_with_a_layout_change_in_the_same_dma() -> None:
    """HBM → HBM with the Element reordered, HBM → DM and DM → HBM: one DMA each (L7607–7608)."""
    n = 4
    ax = AxisSet(A=n, B=4, S=256, D=8)
    m = ax.m
    ctx = ctx_for(n)
    x = ints((n, 4, 256, 8))
    h = HostTensor.from_numpy(x, i32, m["A, B, S, D"], axes="A B S D").to_hbm(m["A"], m["B, S, D"], ctx.pdma, 0)
    perm = [2, 0, 3, 1]
    before = len(ctx.schedule.ops)
    hh = h.view().chip_shuffle(perm).to_hbm(m["A"], m["S, D, B"], ctx.tdma, 1 << 20)
    assert len(ctx.schedule.ops) == before + 1
    assert np.array_equal(hh.logical(axes="A B S D"), x[perm])
    hd = h.view().chip_shuffle(perm).to_dm(m["1 # 2"], m["S"], m["B, D"], ctx.tdma, 0)
    assert np.array_equal(hd.logical(axes="A B S D"), x[perm])
    back = hd.view().chip_shuffle(perm).to_hbm(m["A"], m["B, S, D"], ctx.tdma, 1 << 22)
    assert np.array_equal(back.logical(axes="A B S D"), x[perm][perm])


def test_shuffles_compose_and_tiles_shuffle() -> None:
    n = 4
    ax = AxisSet(A=n, S=256, D=8, E=4)
    m = ax.m
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    p, q = [1, 2, 3, 0], [3, 2, 0, 1]
    out = t.view().chip_shuffle(p).chip_shuffle(q).to_dm(m["1 # 2"], m["S"], m["D"], ctx.tdma, 4096)
    assert np.array_equal(out.logical(axes="A S D"), x[[p[c] for c in q]])  # chip c gets p[q[c]]
    tile = t.view().tile(m["D"], 4, m["D = 4 # 8"], 4)  # the upper half of each packet
    half = tile.chip_shuffle(p).to_dm(m["1 # 2"], m["S"], m["D = 4"], ctx.tdma, 8192)
    assert np.array_equal(half.logical(axes="A S D"), x[p][:, :, 4:])


def test_a_refused_shuffle_writes_nothing() -> None:
    n = 2
    ax = AxisSet(A=n, S=256, D=8)
    m = ax.m
    ctx = ctx_for(n)
    t, _ = rows(ctx, ax, n)
    staged = t.view().chip_shuffle([1, 0])
    before = len(ctx.schedule.ops)
    with pytest.raises(VisaError):
        staged.to_dm(m["1 # 2"], m["S"], m["1"], ctx.tdma, 4096)  # drops D: a move keeps every axis
    with pytest.raises(VisaError):
        staged.to_dm(m["1 # 2"], m["S"], m["D"], ctx.pdma, 4096)  # the tensor DMA, not PCIe host DMA
    assert len(ctx.schedule.ops) == before
    assert not ctx.memory.chip(0).dm.written[..., 4096:4128].any()


# ------------------------------------------------------------------------------------------------- cycles
@pytest.mark.parametrize("n", [2, 4, 8])
def test_shuffle_cycles_startup_plus_pcie_l2472_l2845(n: int) -> None:
    """Each chip's part pays the ~500-cycle startup (L2472) and moves its row over the chip's PCIe link at
    30 B/cycle (L2845); the chips run in parallel."""
    ax = AxisSet(A=n, S=256, D=8)
    ctx = ctx_for(n)
    t, _ = rows(ctx, ax, n)
    row = 256 * 8 * 4  # bytes a chip sends
    t.view().chip_shuffle(list(shuffle.rotation(n, 1))).to_dm(ax.m["1 # 2"], ax.m["S"], ax.m["D"], ctx.tdma, 4096)
    op = ctx.schedule.ops[-1]
    assert op.track == "tdma"
    assert op.cycles == STARTUP + math.ceil(row / PCIE)  # 500 + 274 = 774 for 8 KiB
    # on the schedule: every chip's PCIe link is busy (each sends and receives a row), and the PCIe path
    # carries the bytes that cross chips (L2389, L2845)
    assert {c for c, lane in op.lanes if lane == "pcie"} == set(range(n))
    assert op.traffic["PCIe"] == n * row


def test_shuffle_pcie_bytes_and_growth() -> None:
    n = 4
    for d, expect in ((8, 8192), (32, 32768)):
        ax = AxisSet(A=n, S=256, D=d)
        ctx = ctx_for(n)
        t, _ = rows(ctx, ax, n)
        src = t.view().chip_shuffle([1, 0, 2, 3])  # chips 2 and 3 keep their rows: no PCIe for them
        out = src.to_dm(ax.m["1 # 2"], ax.m["S"], ax.m["D"], ctx.tdma, 1 << 16)
        assert {c for c, lane in ctx.schedule.ops[-1].lanes if lane == "pcie"} == {0, 1}
        del out
        from visa.engines.dma.config import Side
        from visa.engines.dma.plan import plan

        lv = t.levels
        p = plan(RNGD, i32, Side.of("dm", lv, 0), Side.of("dm", lv, 1 << 16))
        sp = shuffle.ShufflePlan(p, (1, 0, 2, 3), ())
        assert shuffle.pcie_bytes(sp) == 2 * expect
        assert shuffle.cycles(sp).total == STARTUP + math.ceil(expect / PCIE)  # grows with the data moved
        ident = shuffle.ShufflePlan(p, (0, 1, 2, 3), ())
        assert shuffle.pcie_bytes(ident) == 0 and shuffle.cycles(ident).total < shuffle.cycles(sp).total


# ------------------------------------------------------------------------------------------- cluster swap
def test_cluster_swap_values_and_cost() -> None:
    ax = AxisSet(K=2, S=256, D=8)
    m = ax.m
    ctx = ctx_for(1)
    x = ints((2, 256, 8))
    t = place_dm(ctx, x, i32, m["1"], m["K"], m["S"], m["D"], 0, axes="K S D")
    out = t.view().cluster_swap().to_dm(m["K"], m["S"], m["D"], ctx.tdma, 4096)
    assert np.array_equal(out.logical(axes="K S D"), x[::-1])
    swapped = ctx.schedule.ops[-1].cycles
    t.view().to_dm(m["K"], m["S"], m["D"], ctx.tdma, 8192)
    assert swapped == ctx.schedule.ops[-1].cycles  # the clusters are symmetric: the swap costs nothing more
    twice = t.view().cluster_swap().cluster_swap().to_dm(m["K"], m["S"], m["D"], ctx.tdma, 12288)
    assert np.array_equal(twice.logical(axes="K S D"), x)
    # a layout change in the same DMA: K moves into the Element
    flat = t.view().cluster_swap().to_hbm(m["1"], m["S, K, D"], ctx.tdma, 0)
    assert np.array_equal(flat.logical(axes="K S D"), x[::-1])


def test_cluster_swap_refusals() -> None:
    ax = AxisSet(A=2, S=256, D=8)
    m = ax.m
    ctx = ctx_for(2)
    x = ints((2, 256, 8))
    h = HostTensor.from_numpy(x, i32, m["A, S, D"], axes="A S D").to_hbm(m["A"], m["S, D"], ctx.pdma, 0)
    with pytest.raises(LayoutError) as err:
        h.view().cluster_swap()
    refused(err, "cluster_swap", "Cluster", "HBM", "no Cluster level")
    with pytest.raises(LayoutError) as err2:
        shuffle.check_cluster_swap(RNGD, 1, medium="dm")
    refused(err2, "cluster_swap", "Cluster", "size 1")


# ------------------------------------------------------------------------------------------ asymmetric slice
@settings(max_examples=20, deadline=None)
@given(st.sampled_from([2, 4, 8]).flatmap(
    lambda n: st.lists(st.integers(0, n - 1), min_size=n, max_size=n)))
def test_asymmetric_chip_slice_chip_c_keeps_indices_c(indices: list[int]) -> None:
    n = len(indices)
    ax = AxisSet(A=n, B=n, S=256, D=8)
    m = ax.m
    ctx = ctx_for(n)
    x = ints((n, 256, n, 8))
    t = place_dm(ctx, x, i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0, axes="A S B D")
    out = t.asymmetric_chip_slice(m["B"], ctx.sub, indices, 1 << 14)
    assert out.levels["Element"] == m["D"]  # the Element lacks the sliced digit
    want = np.stack([x[c, :, indices[c]] for c in range(n)])
    assert np.array_equal(out.logical(axes="A S D"), want)


def test_asymmetric_slice_of_a_stride_digit_by_cluster() -> None:
    """``m["C / 4 % 2"]`` of an Element ``C, D`` (C = 8): cluster k keeps C in 4·j .. 4·j + 3, j = indices[k]."""
    ax = AxisSet(K=2, C=8, S=256, D=8)
    m = ax.m
    ctx = ctx_for(1)
    x = ints((2, 256, 8, 8), i8)
    t = place_dm(ctx, x, i8, m["1"], m["K"], m["S"], m["C, D"], 0, axes="K S C D")
    for idx in ([0, 1], [1, 0], [1, 1]):
        out = t.asymmetric_cluster_slice(m["C / 4 % 2"], ctx.sub, idx, 1 << 12)
        assert out.levels["Element"] == m["C % 4, D"]
        want = np.stack([x[k, :, 4 * idx[k]: 4 * idx[k] + 4] for k in range(2)])
        assert np.array_equal(out.logical(axes="K S C D"), want)
        out.free()
    # a digit in the middle: ParallelCopy slices the outermost digit (the reference's tightened check, issue 26);
    # a DMA-staged cluster slice takes it anywhere (tests/engines/test_reference_ext.py)
    with pytest.raises(LayoutError, match="outermost digit") as err:
        t.asymmetric_cluster_slice(m["C / 2 % 2"], ctx.sub, [1, 0], 1 << 13)
    assert err.value.axis == "C" and "cluster_slice" in (err.value.fix or "")


def test_asymmetric_slice_refusals() -> None:
    n = 4
    ax = AxisSet(A=n, B=n, S=256, D=8, C=8)
    m = ax.m
    ctx = ctx_for(n)
    t = place_dm(ctx, ints((n, 256, n, 8)), i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0, axes="A S B D")
    with pytest.raises(LayoutError) as err:
        t.asymmetric_chip_slice(m["S"], ctx.sub, [0, 1, 2, 3], 1 << 14)  # S is in Slice, not in the Element
    refused(err, "asymmetric_chip_slice", "Element", "not a digit of Element")
    assert err.value.axis == "S"
    with pytest.raises(LayoutError) as err2:
        t.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2, 4], 1 << 14)
    refused(err2, "asymmetric_chip_slice", "Chip", "chip 3's index 4", "0..3")
    assert err2.value.axis == "B"
    with pytest.raises(LayoutError) as err3:
        t.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2], 1 << 14)
    refused(err3, "asymmetric_chip_slice", "Chip", "3 indices for 4 chips")
    with pytest.raises(TypestateError) as err4:
        t.asymmetric_chip_slice(m["B"], ctx.main, [0, 1, 2, 3], 1 << 14)
    assert "sub context" in str(err4.value)
    with pytest.raises(LayoutError) as err5:
        t.asymmetric_cluster_slice(m["B"], ctx.sub, [0, 1, 2], 1 << 14)
    refused(err5, "asymmetric_cluster_slice", "Cluster", "3 indices for 2 clusters")
    with pytest.raises(LayoutError) as err6:
        t.asymmetric_chip_slice(m["B, D"], ctx.sub, [0, 1, 0, 1], 1 << 14)
    refused(err6, "asymmetric_chip_slice", "Element", "one digit of one axis")
    with pytest.raises(LayoutError) as err7:
        t.asymmetric_chip_slice(m["C"], ctx.sub, [0, 1, 0, 1], 1 << 14)  # an axis the tensor lacks
    refused(err7, "asymmetric_chip_slice", "Element", "not a digit")
    half = t.asymmetric_chip_slice(m["B / 2"], ctx.sub, [0, 1, 0, 1], 1 << 14)  # a digit of B: fine
    assert half.levels["Element"] == m["B % 2, D"]
    half.free()
    ctx.schedule.ops.clear()
    assert len(ctx.schedule.ops) == 0  # nothing was written or scheduled


def test_asymmetric_slice_of_a_sub_byte_type_is_refused() -> None:
    ax = AxisSet(A=2, B=2, S=256, D=64)
    m = ax.m
    with pytest.raises(UnsupportedFeatureError):
        pcopy.plan(RNGD, dt.i4, {"Chip": m["A"], "Cluster": m["1 # 2"], "Slice": m["S"], "Element": m["B, D"]},
                   m["B"], [0, 1], "chip")


def test_asymmetric_slice_cycles_and_overlap_with_main_l2330_l7606() -> None:
    """Sub-context commits of 8 bytes a write (L2330), in parallel with the main context (L7606)."""
    n = 2
    ax = AxisSet(A=n, B=n, S=256, D=8, I=2)
    m = ax.m
    ctx = ctx_for(n)
    t = place_dm(ctx, ints((n, 256, n, 8)), i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0, axes="A S B D")
    u = place_dm(ctx, ints((n, 256, 8)), i32, m["A"], m["1 # 2"], m["S"], m["D"], 1 << 16, axes="A S D")
    main = ctx.main.begin(u.view()).fetch(i32, m["1"], m["D"]).collect(m["1"], m["D"]).commit(m["D"], 1 << 17)
    del main
    out = t.asymmetric_chip_slice(m["B"], ctx.sub, [1, 0], 1 << 14)
    m_op, s_op = ctx.schedule.ops[-2], ctx.schedule.ops[-1]
    assert s_op.track == "sub" and m_op.track == "main"
    assert s_op.start < m_op.end  # overlaps the main context
    assert s_op.engines[0].cycles == 32 // 8  # 32 bytes a slice, 8 bytes a write
    assert s_op.cycles == RNGD.timing.full_command_cycles + 32 // 8  # a sub-context command (issue 22)
    assert pcopy.cycles(pcopy.plan(RNGD, i32, t.levels, m["B"], [0, 1], "chip")) == 4
    assert out.ready_at == s_op.end


# ------------------------------------------------------------------------------------------------ hygiene
def test_a_tensor_of_chips_the_kernel_does_not_have_is_refused() -> None:
    ax = AxisSet(A=4, S=256, D=8)
    m = ax.m
    ctx = Context(RNGD)
    x = ints((4, 256, 8))
    h = HostTensor.from_numpy(x, i32, m["A, S, D"], axes="A S D").to_hbm(m["A"], m["S, D"], ctx.pdma, 0)

    @device(chip=2)
    def kernel(c: Context) -> None:
        h.to_dm(m["1 # 2"], m["S"], m["D"], c.tdma, 0)  # a 4-chip tensor in a 2-chip kernel

    with pytest.raises(LayoutError) as err:
        launch(kernel, ctx)
    refused(err, "hbm.to_dm", "Chip", "chip 2", "@device(chip=2)")

    @device(chip=4)
    def fine(c: Context) -> HbmTensor[Any, Any, Any]:
        return h.view().chip_shuffle([3, 2, 1, 0]).to_hbm(m["A"], m["S, D"], c.tdma, 1 << 20)

    out = launch(fine, ctx)
    assert np.array_equal(out.logical(axes="A S D"), x[::-1])


def test_stream_engines_refuse_other_chips_too() -> None:
    ax = AxisSet(A=4, S=256, D=8)
    m = ax.m
    ctx = ctx_for(4)
    t = place_dm(ctx, ints((4, 256, 8)), i32, m["A"], m["1 # 2"], m["S"], m["D"], 0, axes="A S D")
    ctx.num_chips = 2  # as inside a 2-chip kernel
    with pytest.raises(LayoutError) as err:
        ctx.main.begin(t.view())
    refused(err, "begin", "Chip", "chip 2")
    with pytest.raises(LayoutError):
        t.asymmetric_chip_slice(m["D / 4"], ctx.sub, [0, 1, 0, 1], 1 << 14)


# ----------------------------------------------------------------------------------- the collectives (examples)
EX = load_example("collectives")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_reduce_scatter_step_table_l7400_l7476(n: int) -> None:
    ax = AxisSet(A=n, B=n, S=256, D=8, I=2)
    m = ax.m
    ctx = ctx_for(n)
    x = ints((n, n, 256, 8))
    t = place_dm(ctx, x, i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0, axes="A B S D")
    trace: list[Any] = []
    out = EX.reduce_scatter(ctx, m, t, n, 1 << 16, trace)
    assert len(trace) == n
    for r, tr in enumerate(trace):  # T_r: chip c holds X[(c + r) % n, B = c] (L7400–7469)
        want = np.stack([x[(c + r) % n, c] for c in range(n)])
        assert np.array_equal(tr.logical(axes="A S D"), want), r
    if n == 4:  # the manual's own table: T1 on chip 0 is (1, 0), T2 on chip 1 is (3, 1), T3 on chip 3 is (2, 3)
        assert np.array_equal(trace[1].logical(axes="A S D")[0], x[1, 0])
        assert np.array_equal(trace[2].logical(axes="A S D")[1], x[3, 1])
        assert np.array_equal(trace[3].logical(axes="A S D")[3], x[2, 3])
    want = x.astype(np.int64).sum(axis=0).astype(np.int32)  # chip c: Σ_a X[a, c] (step 5, L7470–7476)
    assert np.array_equal(out.logical(axes="A S D"), want)
    gathered = EX.all_gather(ctx, AxisSet(A=n, R=n, Q=n, S=256, D=8).m, out, n, 1 << 18)  # step 6 (Q12)
    assert np.array_equal(gathered.logical(axes="R A S D"), np.broadcast_to(want, (n, n, 256, 8)))
    # the schedule: n − 1 shuffles on the tensor DMA, n slices in the sub context, n − 1 adds in main
    tracks = [op.track for op in ctx.schedule.ops]
    assert tracks.count("sub") == n + n and tracks.count("main") == n - 1


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_all_reduce_rotations_l7503_l7602(n: int) -> None:
    ax = AxisSet(A=n, S=256, D=8, I=2)
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    trace: list[Any] = []
    out = EX.ring_all_reduce(ctx, ax.m, t, n, 1 << 16, trace)
    assert len(trace) == n - 1  # n − 1 rotations (L7602)
    for r, tr in enumerate(trace, start=1):
        assert np.array_equal(tr.logical(axes="A S D"), np.roll(x, -r, axis=0))
    total = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(out.logical(axes="A S D"), np.broadcast_to(total, x.shape))
    shuffles = [op for op in ctx.schedule.ops if op.name.startswith("chip_shuffle")]
    assert [op.cycles for op in shuffles] == [STARTUP + math.ceil(8192 / PCIE)] * (n - 1)


def test_ring_all_reduce_element_wider_than_a_flit() -> None:
    """An Element of 512 i32 (64 flits of 32 bytes, L3544): the add reads the pair axis innermost, so each group of
    the intra-slice unzip is one packet in the Vector Engine's 1 KiB register-file cache (L5154–5249); it used to
    read the pair outermost and was refused (a 2,048-byte group), which ``bench_heldout2``'s ring AllReduce hit."""
    n = 2
    ax = AxisSet(A=n, S=256, D=512, I=2)
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    out = EX.ring_all_reduce(ctx, ax.m, t, n, 1 << 18)
    total = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(out.logical(axes="A S D"), np.broadcast_to(total, x.shape))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_butterfly_all_reduce_xor_pairings(n: int) -> None:
    ax = AxisSet(A=n, S=256, D=8, I=2)
    ctx = ctx_for(n)
    t, x = rows(ctx, ax, n)
    trace: list[Any] = []
    out = EX.butterfly_all_reduce(ctx, ax.m, t, n, 1 << 16, trace)
    assert len(trace) == int(math.log2(n))
    acc = x.astype(np.int64)
    for k, tr in enumerate(trace):
        partner = [c ^ (1 << k) for c in range(n)]
        assert np.array_equal(tr.logical(axes="A S D"), acc[partner].astype(np.int32)), k
        acc = acc + acc[partner]
    total = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(out.logical(axes="A S D"), np.broadcast_to(total, x.shape))


def test_cluster_twins_on_one_chip() -> None:
    ax = AxisSet(K=2, B=2, S=256, D=8, I=2)
    m = ax.m
    ctx = ctx_for(1)
    x = ints((2, 256, 2, 8))
    t = place_dm(ctx, x, i32, m["1"], m["K"], m["S"], m["B, D"], 0, axes="K S B D")
    ar = EX.cluster_all_reduce(ctx, m, t, 1 << 16)
    total = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(ar.logical(axes="K S B D"), np.broadcast_to(total, x.shape))
    rs = EX.cluster_reduce_scatter(ctx, m, t, 1 << 18)
    assert np.array_equal(rs.logical(axes="K S D"), np.stack([total[:, 0], total[:, 1]]))
    assert not any(op.name.startswith("chip_shuffle") for op in ctx.schedule.ops)


def test_wrapping_sums_are_exact_at_the_extremes() -> None:
    """The Vector Engine's AddFxp wraps (L4826): the collectives' sums are numpy's wrapping i32 sums."""
    n = 2
    ax = AxisSet(A=n, S=256, D=8, I=2)
    m = ax.m
    ctx = ctx_for(n)
    x = np.full((n, 256, 8), 2**31 - 1, dtype=np.int32)
    x[1, :, ::2] = -(2**31)
    t = place_dm(ctx, x, i32, m["A"], m["1 # 2"], m["S"], m["D"], 0, axes="A S D")
    out = EX.ring_all_reduce(ctx, m, t, n, 1 << 16)
    want = (x.astype(np.int64).sum(axis=0) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    assert np.array_equal(out.logical(axes="A S D"), np.broadcast_to(want, x.shape))


# ------------------------------------------------------------------------------------- static = runtime message
def _mypy_said(line: int) -> str:
    corpus = ROOT / "tests" / "typing" / "corpus" / "bad_collectives.out"
    for text in corpus.read_text().splitlines():
        head = f"bad_collectives.py:{line}: error: "
        if text.startswith(head):
            return text[len(head):].rsplit("  [", 1)[0]
    raise AssertionError(f"no error at bad_collectives.py:{line}")


def test_the_plugin_reports_the_runtime_refusals() -> None:
    """``corpus/bad_collectives.py``: the same calls, run, raise exactly what mypy printed at their lines."""
    ax = AxisSet(A=4, B=4, S=256, D=8, C=8)
    m = ax.m
    ctx = ctx_for(4)
    x = place_dm(ctx, ints((4, 256, 4, 8)), i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0, axes="A S B D")
    h = HostTensor.from_numpy(ints((4, 4, 256, 8)), i32, m["A, B, S, D"], axes="A B S D").to_hbm(
        m["A"], m["B, S, D"], ctx.pdma, 0)
    cases: list[tuple[int, Any]] = [
        (12, lambda: h.view().chip_shuffle([1, 2, 3])),
        (13, lambda: h.view().chip_shuffle([0, 0, 1, 2])),
        (14, lambda: h.view().chip_shuffle([0, 1, 2, 7])),
        (15, lambda: h.view().cluster_swap()),
        (28, lambda: x.asymmetric_chip_slice(m["S"], ctx.sub, [0, 1, 2, 3], 4096)),
        (29, lambda: x.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2, 4], 4096)),
        (30, lambda: x.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2], 4096)),
        (31, lambda: x.asymmetric_chip_slice(m["B"], ctx.main, [0, 1, 2, 3], 4096)),
        (32, lambda: x.asymmetric_cluster_slice(m["C / 4 % 2"], ctx.sub, [0, 1], 4096)),
    ]
    for line, run in cases:
        with pytest.raises(VisaError) as err:
            run()
        assert err.value.describe() == _mypy_said(line), line
    one = ctx_for(1)
    h1 = HostTensor.from_numpy(ints((4, 256, 8)), i32, m["B, S, D"], axes="B S D").to_hbm(
        m["1"], m["B, S, D"], one.pdma, 0)
    with pytest.raises(VisaError) as err1:
        h1.view().chip_shuffle([0])
    assert err1.value.describe() == _mypy_said(20)
    c1 = ctx_for(1)
    d = place_dm(c1, ints((256, 8, 8)), i32, m["1"], m["1 # 2"], m["S"], m["C, D"], 0, axes="S C D")
    with pytest.raises(VisaError) as err2:
        d.asymmetric_cluster_slice(m["C / 4 % 2"], c1.sub, [1, 2], 4096)
    assert err2.value.describe() == _mypy_said(41)


def test_the_manuals_step_2_literally_i8_4x4_l7417_l7431() -> None:
    """The manual's own tensor: i8 [A=4, B=4], ``{chip: A, slice: 256 (padding), element: B}``.  Slice(3,0,1,2)
    keeps (0,3) (1,0) (2,1) (3,2) (L7417–7423); ChipShuffle(1,2,3,0) through HBM (L7607) gives chip 0 (1,0),
    chip 1 (2,1), chip 2 (3,2), chip 3 (0,3) (L7424–7431).  One i8 is padded to the sub context's 8-byte write
    (L2330)."""
    ax = AxisSet(A=4, B=4)
    m = ax.m
    ctx = ctx_for(4)
    x = (10 * np.arange(4)[:, None] + np.arange(4)[None, :]).astype(np.int8)  # X[a, b] = 10·a + b
    t = place_dm(ctx, x, i8, m["A"], m["1 # 2"], m["1 # 256"], m["B"], 0, axes="A B")
    s = t.asymmetric_chip_slice(m["B"], ctx.sub, [3, 0, 1, 2], 64)
    assert s.levels["Element"] == m["1 # 8"]
    assert s.logical(axes="A").tolist() == [3, 10, 21, 32]
    t1 = s.view().chip_shuffle([1, 2, 3, 0]).to_hbm(m["A"], m["1"], ctx.tdma, 0)
    assert t1.logical(axes="A").tolist() == [10, 21, 32, 3]
    cost = dict(ctx.schedule.ops[-1].engines[0].details)["cost"]
    assert "PCIe 1)" in str(cost)  # 1 byte over PCIe; a 1-byte HBM write is a read-modify-write (L2836-2837)
    assert ctx.schedule.ops[-1].cycles > STARTUP
    with pytest.raises(HardwareLimitError):  # one byte cannot be written to DM by a DMA (L2424–2427, L2834)
        s.view().chip_shuffle([1, 2, 3, 0]).to_dm(m["1 # 2"], m["1 # 256"], m["1"], ctx.tdma, 128)


def test_tensor_unit_engines_touch_only_their_own_chip() -> None:
    """A main-context pass on a 4-chip tensor computes chip c from chip c's DM only: changing chip 2's input
    changes chip 2's output and nothing else; only the DMA (a shuffle) moves data between chips (L2389)."""
    n = 4
    ax = AxisSet(A=n, S=256, D=8, I=2)
    m = ax.m
    x = ints((n, 256, 8))
    outs = []
    for bump in (0, 5):
        ctx = ctx_for(n)
        y = x.copy()
        y[2] += bump
        t = place_dm(ctx, y, i32, m["A"], m["1 # 2"], m["S"], m["D"], 0, axes="A S D")
        outs.append(EX.add(ctx, m, t, t, 4096).logical(axes="A S D"))
    diff = np.any(outs[0] != outs[1], axis=(1, 2))
    assert diff.tolist() == [False, False, True, False]
