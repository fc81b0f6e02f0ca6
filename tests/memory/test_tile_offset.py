"""A tile's offset and stride check (manual L813–832, L955–970): the per-axis check of
:func:`visa.memory.layout.strides_kept` agrees with the position-by-position check it replaces on regular
mappings, the refusals are unchanged, and a 70B-size weight tile is checked without visiting its elements."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from visa import AxisSet
from visa.errors import VisaError
from visa.memory.layout import check_every_position, strides_kept, sym_only, tile_offset

# base Element layouts over A (size a) and B (size b): plain, transposed, padded, split digits, a broadcast 1
BASES = ["A, B", "B, A", "A, B # {pb}", "A # {pa}, B", "A / 2, B, A % 2", "B / 4, A, B % 4", "A, 1 # 2, B"]
# tile mappings: right and wrong strides, resizes, paddings, a swapped order, an axis the base lacks
TILES = ["A, B = {t} # {f}", "A = {t} # {f}, B", "B = {t} # {f}, A", "A, B = {t}", "A = {t}, B # {pb}",
         "A, B = {t} # {f}, 1 # 2", "B / 4 = {t} # {f}, A, B % 4", "A / 2 = {t} # {f}, B, A % 2", "A = {t} # {f}",
         "A, B = {t} # {f}, C"]
DIMS = ["A", "B", "B / 4", "A / 2"]


def full(element: object, dim: object, tile: object, shift: dict[str, int], offset: int) -> bool:
    try:
        check_every_position(element, dim, tile, shift, offset, "tile")  # type: ignore[arg-type]
    except VisaError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(a=st.sampled_from([2, 4, 6, 8]), b=st.sampled_from([4, 8, 12, 16]), base=st.sampled_from(BASES),
       tile=st.sampled_from(TILES), dim=st.sampled_from(DIMS), t=st.integers(1, 16), f=st.integers(1, 20),
       pa=st.integers(0, 4), pb=st.integers(0, 6), size=st.integers(1, 16), start=st.integers(0, 16))
def test_per_axis_check_equals_the_position_by_position_check(a: int, b: int, base: str, tile: str, dim: str,
                                                              t: int, f: int, pa: int, pb: int, size: int,
                                                              start: int) -> None:
    ax = AxisSet(A=a, B=b, C=2)
    try:
        element = ax.m[base.format(pa=a + pa, pb=b + pb)]
        tm = ax.m[tile.format(t=t, f=f, pb=b + pb)]
        dm = ax.m[dim]
    except VisaError:
        assume(False)
        return
    assume(start + size <= dm.size)
    first = dm.map(start)
    offset = element.position_of(first if first is not None else {})
    assume(offset is not None)
    assert offset is not None
    shift = dict(first or {})
    fast = strides_kept(element, tm, shift, offset)
    want = full(element, dm, tm, shift, offset)
    if sym_only(element.canon) and sym_only(tm.canon):
        assert fast == want, (base, tile, dim, start)
    else:
        assert not fast or want
    # tile_offset refuses exactly when the full check does, with the full check's message
    try:
        got = tile_offset(element, dm, size, tm, start, "tile")
    except VisaError as e:
        assert not want and not fast
        assert e.call == "tile" and e.level == "Element" and e.fix
    else:
        assert want and got == offset


def test_wrong_stride_is_still_refused_naming_the_position_l829() -> None:
    ax = AxisSet(A=8, B=512)
    with pytest.raises(VisaError) as err:
        tile_offset(ax.m["A, B"], ax.m["B"], 2, ax.m["A, B = 2 # 4"], 0, "DmTensorView.tile")
    assert "tile position 4 holds a different element" in str(err.value)
    assert err.value.call == "DmTensorView.tile" and err.value.axis == "B" and err.value.fix


def test_a_weight_tile_of_the_70b_layer_is_checked_per_axis() -> None:
    """A 28672 × 512 tile of a 28672 × 8192 weight (the FFN's, 14.7M positions) is accepted by the per-axis check
    (from its axes' extents; the position-by-position check would build arrays of that size: seconds and
    hundreds of MB), and a wrong footprint is not."""
    ax = AxisSet(N=28672, K=8192)
    element, tm = ax.m["N, K"], ax.m["N, K = 512 # 8192"]
    assert tile_offset(element, ax.m["K"], 512, tm, 7 * 512, "tile") == 7 * 512
    assert strides_kept(element, tm, {"K": 7 * 512}, 7 * 512)
    assert not strides_kept(element, ax.m["N, K = 512 # 8190"], {"K": 0}, 0)


def test_a_large_tile_views_footprint_is_its_runs_not_its_extent() -> None:
    """A tile view over more than 2^20 positions (a K tile of a weight) occupies its rows' runs: the schedule's
    hazards and traffic see the tile's bytes (N × 512 × 2), not everything from its start to its footprint's end."""
    from visa import Context, bf16
    from visa.schedule.footprints import span_of
    from visa.tensors.handles import HbmTensor

    ax = AxisSet(N=4096, K=1024)
    ctx = Context.acquire()
    w = HbmTensor(ctx, bf16, ax.m["1"], ax.m["N, K"], 1 << 20)
    tile = w.view().tile(ax.m["K"], 512, ax.m["N, K = 512 # 1024"], 512)
    span = span_of(tile)
    assert span is not None and span.nbytes == 4096 * 512 * 2
    assert span.lo[0] == (1 << 20) + 1024 and span.hi[0] == (1 << 20) + 2048 and span.lo.size == 4096
    whole = span_of(w.view())
    assert whole is not None and whole.nbytes == 4096 * 1024 * 2 and whole.lo.size == 1
