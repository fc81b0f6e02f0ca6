"""No byte outside a DMA's footprint (issue 23, findings 1, 2 and 5).

A DMA into a tile writes the tile's bytes and nothing else: "write sequencer configurations must never write
beyond the tensor boundary" (manual L7896), and a tile's padding is the rest of its tensor (L813–832).  A DMA
into some slices or one cluster leaves the others alone: each slice has its own address space (L2874) and a
tensor's padding slices are unused space (L150–155).  A refused DMA changes no byte.  Each test names the
finding it reproduces; the property tests draw small layouts and compare every live tensor with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, HostTensor
from visa import dtypes as dt
from visa.errors import VisaError

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MB = 1 << 20


def _hbm(ctx: Context, m: Any, arr: np.ndarray, dtype: Any, element: str, axes: str, address: int) -> Any:
    return HostTensor.from_numpy(arr, dtype, m[element], axes=axes).to_hbm(m["1"], m[element], ctx.pdma, address)


def _values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    return dt.random_values(dtype, shape, np.random.default_rng(seed))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.asarray(a).tobytes() == np.asarray(b).tobytes()


# ---------------------------------------------------------------------------------------------------------
# finding 1: a DMA into a tile whose padded part is its innermost axis
# ---------------------------------------------------------------------------------------------------------


def test_finding1_tile_padded_innermost_writes_only_the_tile_l813_l7896() -> None:
    # out.view().tile(m["N"], 32, m["N = 32 # 64"], 32): the tile's N = 32 # 64 pads N to the tensor's 64, and
    # those 32 padding positions are out's elements 0..31 (or, past the end, the tensor next to it).
    ax = AxisSet(N=64)
    m = ax.m
    ctx = Context.acquire()
    out_np, next_np = _values(dt.i8, (64,), 1), _values(dt.i8, (64,), 2)
    out = _hbm(ctx, m, out_np, dt.i8, "N", "N", 0)
    nxt = _hbm(ctx, m, next_np, dt.i8, "N", "N", 64)
    new = _values(dt.i8, (32,), 3)
    src = _hbm(ctx, m, new, dt.i8, "N = 32", "N", MB)
    assert src.to_hbm_view(out.view().tile(m["N"], 32, m["N = 32 # 64"], 32), ctx.tdma) is out
    want = out_np.copy()
    want[32:] = new
    assert _same(out.logical("N"), want)
    assert _same(nxt.logical("N"), next_np)  # live and untouched
    assert ctx.schedule.ops[-1].traffic["DMA"] == 32  # the tile's 32 bytes, not 64


def test_finding1_two_cells_of_an_inner_axis_l813() -> None:
    # A 2-cell window of the inner axis L (of 96) of a K × L bf16 tensor: 2 × 8 cells, not the 1,536 bytes of all.
    ax = AxisSet(K=8, L=96)
    m = ax.m
    ctx = Context.acquire()
    base = _values(dt.bf16, (8, 96), 4)
    cache = _hbm(ctx, m, base, dt.bf16, "K, L", "K L", 0)
    new = _values(dt.bf16, (8, 2), 5)
    src = _hbm(ctx, m, new, dt.bf16, "K, L = 2", "K L", MB)
    src.to_hbm_view(cache.view().tile(m["L"], 2, m["K, L = 2 # 96"], 40), ctx.tdma)
    want = base.copy()
    want[:, 40:42] = new
    assert _same(cache.logical("K L"), want)


LAYOUTS = ["A, B", "B, A", "A, B # {pb}", "B # {pb}, A", "A, 1 # 2, B", "B, A # {pa}"]


@FAST
@given(a=st.sampled_from([2, 3, 4]), b=st.sampled_from([4, 6, 8, 16]), layout=st.sampled_from(LAYOUTS),
       tiled=st.sampled_from(["A", "B"]), pa=st.integers(0, 3), pb=st.integers(0, 5), data=st.data(),
       dtype=st.sampled_from([dt.i8, dt.bf16, dt.i32]), medium=st.sampled_from(["hbm", "dm"]))
def test_dma_into_any_tile_writes_only_its_elements(a: int, b: int, layout: str, tiled: str, pa: int, pb: int,
                                                   data: st.DataObject, dtype: Any, medium: str) -> None:
    """A DMA into a tile of any axis, at any position and size, of a padded or unpadded layout: the tile's
    elements take the source's values; every other element of the tensor, and a live tensor right after it,
    keep theirs (or the DMA is refused and nothing changes)."""
    ax = AxisSet(A=a, B=b)
    m = ax.m
    text = layout.format(pa=a + pa, pb=b + pb)
    extent = {"A": a, "B": b}[tiled]
    size = data.draw(st.integers(1, extent), label="size")
    start = data.draw(st.integers(0, extent - size), label="start")
    element = m[text]
    # the tile mapping: the tiled axis resized to the tile and padded to its extent in the layout
    digits = []
    for item in element.items():
        t = repr(item)[3:-2]
        if item.axes == {tiled}:
            pad = item.size
            t = f"{tiled} = {size} # {pad}" if size < pad else tiled
        digits.append(t)
    tile = m[", ".join(digits)]
    ctx = Context.acquire()
    shape = (a, b)
    base_np, next_np = _values(dtype, shape, 6), _values(dtype, shape, 7)
    nbytes = -(-element.size * dtype.size_bits // 8)
    src_el = m[f"A = {size}, B" if tiled == "A" else f"A, B = {size}"]
    new = _values(dtype, (size, b) if tiled == "A" else (a, size), 8)
    order = " ".join(x for x in "AB" if x in src_el.axes)
    try:
        src = HostTensor.from_numpy(new.reshape([n for n in new.shape if n > 1] if size == 1 else new.shape), dtype,
                                    src_el, axes=order).to_hbm(m["1"], src_el, ctx.pdma, 64 * MB)
        if medium == "hbm":
            base = _hbm(ctx, m, base_np, dtype, text, "A B", 0)
            nxt = _hbm(ctx, m, next_np, dtype, text, "A B", nbytes)
        else:
            nb = -(-nbytes // 8) * 8
            cl, sl = m["1 # 2"], m["1 # 256"]
            base = _hbm(ctx, m, base_np, dtype, text, "A B", 2 * MB).to_dm(cl, sl, m[text], ctx.tdma, 0)
            nxt = _hbm(ctx, m, next_np, dtype, text, "A B", 3 * MB).to_dm(cl, sl, m[text], ctx.tdma, nb)
    except VisaError:
        assume(False)  # a layout the DMA rules refuse (HBM→DM packets of 8 bytes): not this test's subject
        return
    try:
        view = base.view().tile(m[tiled], size, tile, start)
    except VisaError:
        assume(False)
        return
    want = base_np.copy()
    try:
        if medium == "hbm":
            src.to_hbm_view(view, ctx.tdma)
        else:
            src.to_dm_view(view, ctx.tdma)
    except VisaError:
        pass  # refused: nothing may have changed
    else:
        if tiled == "A":
            want[start:start + size] = new
        else:
            want[:, start:start + size] = new
    assert _same(base.logical("A B"), want), (text, repr(tile), start)
    assert _same(nxt.logical("A B"), next_np), (text, repr(tile), start)


# ---------------------------------------------------------------------------------------------------------
# finding 5: every check before any byte changes
# ---------------------------------------------------------------------------------------------------------


def _left_padded(ctx: Context, m: Any, how: str) -> tuple[Any, Any]:
    """``m["B # 8"]`` moved to ``m["# 2 + B"]`` (left padding the source lacks) by ``how``, over a live tensor:
    the result and the live tensor it may replace."""
    src = _hbm(ctx, m, np.arange(6, dtype=np.int32), dt.i32, "B # 8", "B", 0)
    hbm_dst = _hbm(ctx, m, np.arange(6, dtype=np.int32) + 10, dt.i32, "# 2 + B", "B", 4096)
    cl, sl = m["1 # 2"], m["1 # 256"]
    if how == "to_hbm":
        return src.to_hbm(m["1"], m["# 2 + B"], ctx.tdma, 8192), None
    if how == "to_dm":
        return src.to_dm(cl, sl, m["# 2 + B"], ctx.tdma, 0), None
    if how == "to_hbm_view":
        return src.to_hbm_view(hbm_dst.view(), ctx.tdma), None
    dm_dst = hbm_dst.to_dm(cl, sl, m["# 2 + B"], ctx.tdma, 64)
    if how == "to_dm_view":
        return src.to_dm_view(dm_dst.view(), ctx.tdma), None
    return src.view().tile(m["B"], 2, m["B = 2 # 8"], 2).to_hbm_view(
        hbm_dst.view().tile(m["B"], 2, m["B = 2 # 6"], 2), ctx.tdma), None


def test_finding5_left_padding_the_source_lacks_moves_or_refuses_cleanly() -> None:
    """The four moves of the issue, and one into a tile: the tensor arrives (the packet no longer reads before
    address 0, which made the HBM cost model raise a bare ValueError after the bytes were written), and the
    operation is on the schedule."""
    ax = AxisSet(B=6)
    m = ax.m
    for how in ("to_hbm", "to_dm", "to_hbm_view", "to_dm_view", "tile"):
        ctx = Context.acquire()
        before = len(ctx.schedule.ops)
        out, _ = _left_padded(ctx, m, how)
        want = np.arange(6) if how != "tile" else np.r_[10, 11, 2, 3, 14, 15]
        assert np.array_equal(out.logical("B"), want), how
        assert len(ctx.schedule.ops) > before, how


def test_finding5_a_cost_refusal_comes_before_the_write(monkeypatch: Any) -> None:
    """Whatever refuses a move — the plan, the placement or the cost model — refuses it before any byte changes:
    a live tensor at the destination stays live and readable, and nothing is on the schedule."""
    import visa.tensors.moves as moves
    from visa.errors import HardwareLimitError

    def refuse(p: Any) -> Any:
        raise HardwareLimitError("the cost model refuses", call="test")

    ax = AxisSet(B=6)
    m = ax.m
    ctx = Context.acquire()
    src = _hbm(ctx, m, np.arange(6, dtype=np.int32), dt.i32, "B # 8", "B", 0)
    live = _hbm(ctx, m, np.arange(6, dtype=np.int32) + 10, dt.i32, "B # 8", "B", 4096)
    before = len(ctx.schedule.ops)
    monkeypatch.setattr(moves, "cycles", refuse)
    try:
        src.to_hbm(m["1"], m["# 2 + B"], ctx.tdma, 4096)
    except HardwareLimitError:
        pass
    else:
        raise AssertionError("the move was not refused")
    assert np.array_equal(live.logical("B"), np.arange(6) + 10)
    assert len(ctx.schedule.ops) == before


# ---------------------------------------------------------------------------------------------------------
# finding 2: a DMA into some slices, or one cluster, leaves the others alone (L2874, L150–155)
# ---------------------------------------------------------------------------------------------------------


def test_finding2_slices_128_to_255_at_address_0_keep_slices_0_to_127() -> None:
    ax = AxisSet(S=128, E=8)
    m = ax.m
    ctx = Context.acquire()
    low_np, high_np = _values(dt.i8, (128, 8), 9), _values(dt.i8, (128, 8), 10)
    low = _hbm(ctx, m, low_np, dt.i8, "S, E", "S E", 0).to_dm(m["1 # 2"], m["S # 256"], m["E"], ctx.tdma, 0)
    high = _hbm(ctx, m, high_np, dt.i8, "S, E", "S E", MB).to_dm(m["1 # 2"], m["# 128 + S"], m["E"], ctx.tdma, 0)
    assert _same(low.logical("S E"), low_np)  # live, not stale, not poisoned
    assert _same(high.logical("S E"), high_np)
    # the other cluster likewise
    other = _hbm(ctx, m, low_np, dt.i8, "S, E", "S E", 2 * MB).to_dm(m["# 1 + 1"], m["S # 256"], m["E"], ctx.tdma, 0)
    assert _same(low.logical("S E"), low_np) and _same(other.logical("S E"), low_np)
    # a tensor that does share a slice is still made stale
    _hbm(ctx, m, high_np, dt.i8, "S, E", "S E", 3 * MB).to_dm(m["1 # 2"], m["# 64 + S + # 64"], m["E"], ctx.tdma, 0)
    try:
        low.logical("S E")
    except VisaError as err:
        assert "overwritten" in err.message
    else:
        raise AssertionError("a tensor over shared slices was not made stale")


SLICE_SETS = ["S # 256", "# 128 + S", "# 64 + S + # 64", "S, 1 # 2", "S, # 1 + 1"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.sampled_from(SLICE_SETS), second=st.sampled_from(SLICE_SETS),
       clusters=st.sampled_from([("1 # 2", "1 # 2"), ("1 # 2", "# 1 + 1"), ("# 1 + 1", "# 1 + 1")]))
def test_dm_tensors_over_disjoint_units_are_independent(first: str, second: str, clusters: tuple[str, str]) -> None:
    """Two DM tensors at the same address: the first stays live and intact exactly when the two share no slice
    (of the same cluster), and the second always arrives."""
    ax = AxisSet(S=128, E=8)
    m = ax.m
    ctx = Context.acquire()
    a_np, b_np = _values(dt.i8, (128, 8), 11), _values(dt.i8, (128, 8), 12)
    def move(values: np.ndarray, cl: str, sl: str, address: int, hbm_at: int) -> Any:
        src = _hbm(ctx, m, values, dt.i8, "S, E", "S E", hbm_at)
        return src.to_dm(m[cl], m[sl], m["E"], ctx.tdma, address)
    a = move(a_np, clusters[0], first, 0, 0)
    b = move(b_np, clusters[1], second, 0, MB)
    assert _same(b.logical("S E"), b_np)
    slots = [set((c * 256 + s) for c in np.flatnonzero(m[cl].validity()) for s in np.flatnonzero(m[sl].validity()))
             for cl, sl in ((clusters[0], first), (clusters[1], second))]
    if slots[0] & slots[1]:
        try:
            a.logical("S E")
        except VisaError:
            return
        raise AssertionError("a tensor over a shared slice was not made stale")
    assert _same(a.logical("S E"), a_np)
