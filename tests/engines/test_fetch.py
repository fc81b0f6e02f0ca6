"""Fetch Engine: the manual's fetch, masking, cast, zero-point, batching and interleaving cases (digest 1 §10.3).

Each test names the manual lines it checks.  Inputs go straight into DM (``visa.testing.place_dm``); the fetched
stream is read back by the tensor it holds (``visa.testing.stream_logical``) and compared with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import (
    RNGD,
    RNGD_S,
    AxisSet,
    Context,
    bf16,
    f8e4m3,
    f8e5m2,
    f16,
    f32,
    i4,
    i5,
    i8,
    i9,
    i16,
    i32,
)
from visa import dtypes as dt
from visa.engines import fetch as F
from visa.errors import (
    DtypeError,
    HardwareLimitError,
    IncompatibleShapesError,
    InsufficientInputError,
    LayoutError,
    StaleTensorError,
    TypestateError,
    UnsupportedFeatureError,
    UnsupportedOnProfileError,
    VisaError,
    WrongTypeError,
)
from visa.hw import HardwareProfile
from visa.testing import place_dm, stream_logical

RNG = np.random.default_rng(7)


def new_ctx(hw: HardwareProfile = RNGD) -> Context:
    ctx = Context(hw)
    ctx.num_chips = 1
    return ctx


def dm(ctx: Context, ax: AxisSet, array: Any, dtype: Any, element: str, address: int = 0, axes: str | None = None,
       slice_: str = "1 # 256") -> Any:
    m = ax.m
    return place_dm(ctx, array, dtype, m["1"], m["1 # 2"], m[slice_], m[element], address, axes=axes)


def plan(ax: AxisSet, src: Any, dst: Any, element: str, time: str, packet: str, **kw: Any) -> F.FetchConfig:
    m = ax.m
    hw = kw.pop("hw", RNGD)
    return F.plan(hw, src, dst, m["1"], m["1 # 2"], m["1 # 256"], m[element], m[time], m[packet], **kw)


def slice0(stream: Any) -> tuple[np.ndarray, np.ndarray]:
    """Values and known mask of slice 0 of cluster 0, shape (Time, Packet)."""
    return stream.data.values[0, 0, 0], stream.data.known[0, 0, 0]


# ------------------------------------------------------------------------------------------------ sequencer


NCHW = dict(N=4, C=3, H=4, W=8)


@pytest.mark.parametrize(
    "line,time,packet,config,contiguous,packet_size,fetch_size,fpp,cycles",
    [
        (2063, "N, C, H", "W", "[4 : 96, 3 : 32, 4 : 8, 8 : 1] : 8", 384, 8, 8, 1, 48),
        (2077, "N, C, H / 2", "H % 2, W", "[4 : 96, 3 : 32, 2 : 16, 2 : 8, 8 : 1] : 8", 384, 16, 16, 1, 24),
        (2088, "N, C", "H, W", "[4 : 96, 3 : 32, 4 : 8, 8 : 1] : 8", 384, 32, 32, 1, 12),
        (2099, "N", "C, H, W", "[4 : 96, 3 : 32, 4 : 8, 8 : 1] : 8", 384, 96, 32, 3, 12),
    ],
)
def test_batching_examples_L2063_L2110(line: int, time: str, packet: str, config: str, contiguous: int,
                                       packet_size: int, fetch_size: int, fpp: int, cycles: int) -> None:
    # The manual declares i4 but counts one byte per element (digest Q4): the examples are i8 here.
    ax = AxisSet(**NCHW)
    cfg = plan(ax, i8, i8, "N, C, H, W", time, packet)
    assert str(cfg.sequencer) == config
    assert (cfg.contiguous_sram_access_size, cfg.packet_size, cfg.fetch_size, cfg.fetches_per_packet) == (
        contiguous, packet_size, fetch_size, fpp)
    assert F.cycles(cfg) == cycles
    ctx = new_ctx()
    x = dt.random_values(i8, (4, 3, 4, 8), RNG)
    t = dm(ctx, ax, x, i8, "N, C, H, W", axes="N C H W")
    s = ctx.main.begin(t.view()).fetch(i8, ax.m[time], ax.m[packet])
    assert np.array_equal(stream_logical(s, axes="N C H W"), x)
    assert s.reports[-1].cycles == cycles and s.reports[-1].engine == "fetch"


@pytest.mark.parametrize(
    "line,time,packet,contiguous,fetch_size",
    [(1766, "N, C, H", "W", 384, 8), (1781, "C", "N, H, W", 32, 32), (1793, "1", "N, H, C, W", 8, 8)],
)
def test_contiguous_sram_access_size_L1766_L1803(line: int, time: str, packet: str, contiguous: int,
                                                 fetch_size: int) -> None:
    cfg = plan(AxisSet(**NCHW), i8, i8, "N, C, H, W", time, packet)
    assert cfg.contiguous_sram_access_size == contiguous
    assert cfg.fetch_size == fetch_size  # the largest supported size dividing gcd(packet, contiguous), L1760
    assert cfg.fetches_per_packet == cfg.packet_size // fetch_size


def test_padding_packets_cut_cycles_L1818_L1840() -> None:
    ax = AxisSet(A=3, B=5, C=2)
    assert F.cycles(plan(ax, f8e4m3, f8e4m3, "A, B, C", "A", "[B, C] # 16")) == 3
    assert F.cycles(plan(ax, f8e4m3, f8e4m3, "A, B, C", "1", "[A, B, C] # 32")) == 1
    # the 15-cycle variant's 2-byte packet breaks the 8-byte rule of the fetch body (L1711-1716, digest Q6)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, f8e4m3, f8e4m3, "A, B, C", "A, B", "C")
    assert "Fetch output packet must be 8-byte aligned, got 2 bytes." in str(err.value)
    assert err.value.level == "Packet" and err.value.axis == "C" and "fetch" in str(err.value.call)
    # the padded packet reads past the data (L1841): the padding is masked to 0, the data is the tensor
    ctx = new_ctx()
    x = dt.random_values(f8e4m3, (3, 5, 2), RNG)
    t = dm(ctx, ax, x, f8e4m3, "A, B, C", axes="A B C")
    s = ctx.main.begin(t.view()).fetch(f8e4m3, ax.m["1"], ax.m["[A, B, C] # 32"])
    v, k = slice0(s)
    assert k.all() and np.all(v[0, 30:].astype(np.float32) == 0)
    assert np.array_equal(stream_logical(s, axes="A B C"), x)


def test_cluster_and_slice_sizes_L1707_L1709() -> None:
    ax = AxisSet(A=8)
    m = ax.m
    with pytest.raises(HardwareLimitError) as err:
        F.plan(RNGD, i8, i8, m["1"], m["1"], m["1 # 256"], m["A"], m["1"], m["A"])
    assert "Cluster size must be 2, got 1" in str(err.value) and err.value.level == "Cluster"
    with pytest.raises(HardwareLimitError) as err:
        F.plan(RNGD, i8, i8, m["1"], m["1 # 2"], m["A"], m["A"], m["1"], m["A"])
    assert "Slice size must be 256, got 8" in str(err.value)
    assert err.value.level == "Slice" and err.value.axis == "A"


def test_insufficient_input_and_incompatible_shapes_L1639_L1683() -> None:
    ax = AxisSet(N=2048)
    with pytest.raises(InsufficientInputError) as err:
        plan(ax, i8, i8, "N % 512", "N / 512", "N % 512")
    assert err.value.axis == "N" and err.value.level == "Time" and "fetch sequencer" in str(err.value.call)
    ax = AxisSet(A=15)
    with pytest.raises(IncompatibleShapesError) as err2:
        plan(ax, i32, i32, "A % 5, A / 5", "A / 3", "[A % 3] # 4")
    assert err2.value.axis == "A" and err2.value.level in ("Time", "Packet")


def test_entry_limit_L1630() -> None:
    ax = AxisSet(A=2, B=2, C=2, D=2, E=2, F=2, G=2, H=2, J=2, K=8)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, i8, i8, "A, B, C, D, E, F, G, H, J, K", "J, H, G, F, E, D, C, B, A", "K")
    assert "entries" in str(err.value) and err.value.level == "Time"


def test_sequencer_reads_only_its_slice_L1725() -> None:
    # each slice reads its own DM: data spread over 256 slices comes back per slice
    ax = AxisSet(A=2048)
    ctx = new_ctx()
    x = dt.random_values(i32, (2048,), RNG)
    t = dm(ctx, ax, x, i32, "A % 8", slice_="A / 8 # 256")
    s = ctx.main.begin(t.view()).fetch(i32, ax.m["1"], ax.m["A % 8"])
    assert np.array_equal(stream_logical(s), x)
    assert s.layout.slice == ax.m["A / 8 # 256"]  # Slice passes through unchanged (L1723-1725)


# ------------------------------------------------------------------------------------------------ masking


def test_masking_pads_to_zero_L1887_L1896() -> None:
    ax = AxisSet(A=63)
    cfg = plan(ax, i8, i8, "A", "1", "A # 64")
    assert cfg.mask is not None and cfg.mask.hi == (63,)
    ctx = new_ctx()
    x = dt.random_values(i8, (63,), RNG)
    t = dm(ctx, ax, x, i8, "A # 64")
    s = ctx.main.begin(t.view()).fetch(i8, ax.m["1"], ax.m["A # 64"])
    v, k = slice0(s)
    assert k[0, 63] and v[0, 63] == 0  # "the 64th element is masked to zero"
    assert np.array_equal(v[0, :63], x)


def _masking_case(case: int) -> tuple[AxisSet, Any, str, str, str, Any]:
    if case in (1, 2):
        ax = AxisSet(A=32, B=90)
        bp = ax.m["# 2 + B + # 4"]  # noqa: F841 - used through the escape {bp}
        time = "A, {bp} / 32" if case == 1 else "{bp} / 32, A"
        return ax, i8, "A, B # 96", time, "{bp} % 32", bp
    ax = AxisSet(A=32, B=97)
    bq = ax.m["B + # 31"]  # noqa: F841
    return ax, f32, "A, B # 128", "A, {bq} / 16, 1", "{bq} % 16", bq


@pytest.mark.parametrize(
    "case,line,config,last_dim,lo,hi",
    [
        (1, 1903, "[32 : 96, 3 : 32, 32 : 1] : 32 @ -2", 1, (2, 0, 0), (32, 32, 28)),
        (2, 1912, "[3 : 32, 32 : 96, 32 : 1] : 32 @ -2", 0, (2, 0, 0), (32, 32, 28)),
        (3, 1922, "[32 : 128, 8 : 16, 16 : 1] : 16", 1, (0,) * 8, (16, 16, 16, 16, 16, 16, 1, 0)),
    ],
)
def test_masking_cases_L1903_L1935(case: int, line: int, config: str, last_dim: int, lo: tuple[int, ...],
                                   hi: tuple[int, ...]) -> None:
    ax, d, element, time, packet, bp = _masking_case(case)
    m = ax.m
    scope = {"bp": bp, "bq": bp}
    tm = _parse(ax, time, scope)
    pk = _parse(ax, packet, scope)
    cfg = F.plan(RNGD, d, d, m["1"], m["1 # 2"], m["1 # 256"], m[element], tm, pk)
    assert str(cfg.sequencer) == config
    assert cfg.mask is not None and cfg.mask.case == case and cfg.mask.last_dim == last_dim
    assert cfg.mask.lo == lo and cfg.mask.hi == hi and cfg.mask.pad_value == 0
    assert cfg.time.size == (96 if case < 3 else 256)  # "Cycles: Time::SIZE" (L1910, L1919, L1930)
    # the data: every valid element arrives, the masked padding is 0 and known
    ctx = new_ctx()
    b = 90 if case < 3 else 97
    x = dt.random_values(d, (32, b), RNG)
    t = dm(ctx, ax, x, d, element, axes="A B")
    s = ctx.main.begin(t.view()).fetch(d, tm, pk)
    assert np.array_equal(stream_logical(s, axes="A B"), x)
    v, k = slice0(s)
    mask = cfg.mask.positions(tm.size, pk.size)
    assert k[mask].all() and np.all(v[mask].astype(np.float64) == 0)
    assert int(mask.sum()) == 32 * ((96 - 90) if case < 3 else 31)  # 2 + 4 per row; 31 per row in case 3


def _parse(ax: AxisSet, text: str, scope: dict[str, Any]) -> Any:
    from visa.mapping.core import Mapping

    return Mapping.parse(text, ax, scope)


def test_sub_context_has_no_masking_padding_is_poison_L1870() -> None:
    ax = AxisSet(A=63)
    ctx = new_ctx()
    t = dm(ctx, ax, dt.random_values(i8, (63,), RNG), i8, "A # 64")
    s = ctx.sub.begin(t.view()).fetch(i8, ax.m["1"], ax.m["A # 64"])
    _, k = slice0(s)
    assert k[0, :63].all() and not k[0, 63]
    assert s.reports[-1].config.startswith("fetch[sub]") and "masking" not in s.reports[-1].config


def test_unmaskable_padding_stays_poison() -> None:
    # padding of a Time axis is not the innermost packet axis' padding: the masking stage cannot reach it
    ax = AxisSet(A=3, B=8)
    ctx = new_ctx()
    t = dm(ctx, ax, dt.random_values(i8, (3, 8), RNG), i8, "A # 4, B")
    s = ctx.main.begin(t.view()).fetch(i8, ax.m["A # 4"], ax.m["B"])
    v, k = slice0(s)
    assert k[:3].all() and not k[3].any()
    # other slices and the second cluster hold no data: poison
    assert not s.data.known[0, 1].any() and not s.data.known[0, 0, 1].any()


# ------------------------------------------------------------------------------------------------ table, cast


def test_table_indexing_L1940_L1954() -> None:
    ax = AxisSet(A=8)
    ctx = new_ctx()
    table = F.LookupTable.from_function(i8, i8, lambda x: np.clip(2 * x.astype(np.int64), -128, 127))
    t = dm(ctx, ax, np.arange(8), i8, "A")
    s = ctx.main.begin(t.view()).fetch_with_table(i8, ax.m["1"], ax.m["A"], table)
    assert stream_logical(s).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert "table indexing" in s.reports[-1].config
    # main context only (L1870)
    with pytest.raises(HardwareLimitError) as err:
        ctx.sub.begin(t.view()).fetch_with_table(i8, ax.m["1"], ax.m["A"], table)
    assert "sub context" in str(err.value.call)
    # the table is indexed by the tensor's type
    other = F.LookupTable.from_function(i16, i16, lambda x: x)
    with pytest.raises(DtypeError):
        ctx.main.begin(t.view()).fetch_with_table(i16, ax.m["1"], ax.m["A"], other)


RNGD_CASTS = sorted(RNGD.fetch.casts)
RNGD_S_ONLY = sorted(RNGD_S.fetch.casts - RNGD.fetch.casts)


@pytest.mark.parametrize("pair", RNGD_CASTS + RNGD_S_ONLY, ids=lambda p: f"{p[0]}->{p[1]}")
def test_cast_table_L1962_L1979(pair: tuple[str, str]) -> None:
    src, dst = dt.scalar(pair[0]), dt.scalar(pair[1])
    ax = AxisSet(A=16)
    hw = RNGD_S if pair in RNGD_S_ONLY else RNGD
    ctx = new_ctx(hw)
    lo, hi = (max(src.min, dst.min), min(src.max, dst.max) + 1) if src.kind == "int" else (None, None)
    x = dt.random_values(src, (16,), RNG, low=lo, high=hi)
    t = dm(ctx, ax, x, src, "A")
    s = ctx.main.begin(t.view()).fetch(dst, ax.m["1"], ax.m["A"])
    want = dt.convert(x, src, dst)
    got = stream_logical(s)
    assert np.array_equal(got, want, equal_nan=True)
    cfg = s.carried.fetch
    # one fetch's output fits a 32-byte flit (L1996)
    assert cfg.fetch_size * dst.size_bits <= 32 * src.size_bits
    assert s.reports[-1].latency in RNGD.fetch.cast_latency_cycles  # type conversion takes 1-2 cycles (L2135)


@pytest.mark.parametrize("pair", RNGD_S_ONLY, ids=lambda p: f"{p[0]}->{p[1]}")
def test_rngd_s_casts_refused_on_rngd_L1973_L1979(pair: tuple[str, str]) -> None:
    ax = AxisSet(A=16)
    with pytest.raises(UnsupportedOnProfileError) as err:
        plan(ax, dt.scalar(pair[0]), dt.scalar(pair[1]), "A", "1", "A")
    assert "RNGD" in str(err.value) and "RNGD-S" in str(err.value)


def test_cast_not_in_table_is_refused_L1704() -> None:
    ax = AxisSet(A=8)
    with pytest.raises(DtypeError) as err:
        plan(ax, i8, f32, "A", "1", "A")
    assert "cannot cast i8 to f32" in str(err.value) and "type casting" in str(err.value.call)


def test_cast_values_L1984_L1993() -> None:
    ax = AxisSet(A=8)
    ctx = new_ctx()
    t = dm(ctx, ax, np.arange(8), i8, "A")
    s = ctx.main.begin(t.view()).fetch(i32, ax.m["1"], ax.m["A"])
    assert s.dtype is i32 and stream_logical(s).tolist() == list(range(8))


def test_matrix_cast_example_L1731_L1743() -> None:
    ax = AxisSet(A=512, B=32)
    ctx = new_ctx()
    x = dt.random_values(i8, (512, 32), RNG)
    t = dm(ctx, ax, x, i8, "A, B")
    s = ctx.main.begin(t.view()).fetch(i32, ax.m["A"], ax.m["B"])
    assert np.array_equal(stream_logical(s), x.astype(np.int32))
    cfg = s.carried.fetch
    assert cfg.output_packet_bytes == 128 and cfg.time.size == 512  # 512 rows of 32 i32 (128 bytes)
    assert cfg.fetch_size == 8  # 16 bytes of i8 would cast to 64 bytes (L2014-2017)


@pytest.mark.parametrize(
    "context,src,elements,fetch_size",
    [("main", i4, 16, 4), ("main", i8, 8, 8), ("sub", i4, 16, 4), ("sub", i8, 8, 8), ("sub", bf16, 8, 8)],
)
def test_cast_output_limit_L1996_L2021(context: str, src: Any, elements: int, fetch_size: int) -> None:
    ax = AxisSet(A=elements)
    cfg = plan(ax, src, i32 if src.kind == "int" else f32, "A", "1", "A", context=context)
    assert cfg.fetch_size == fetch_size  # i4->i32: 4 bytes make 32; i8->i32: 8 make 32 (L2001-2020)


def test_sub_context_fetch_size_must_divide_L1759() -> None:
    # the sub context fetches 8 bytes at a time: 4-byte runs cannot be read there
    ax = AxisSet(A=4, B=8, C=2)
    cfg = plan(ax, i8, i8, "B, C, A", "C", "B, A", context="main")
    assert (cfg.contiguous_sram_access_size, cfg.fetch_size, cfg.fetches_per_packet) == (4, 4, 8)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, i8, i8, "B, C, A", "C", "B, A", context="sub")
    assert "sub context" in str(err.value.call) and err.value.level == "Packet"


def test_discrete_i4_reads_are_refused_L1633() -> None:
    ax = AxisSet(A=16, B=2)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, i4, i4, "A, B", "B", "A")  # one i4 every byte: no whole-byte fetch
    assert err.value.level == "Packet" and err.value.axis == "A"


# ------------------------------------------------------------------------------------------------ zero points


def test_zero_point_L2025_L2035() -> None:
    ax = AxisSet(A=8)
    ctx = new_ctx()
    t = dm(ctx, ax, np.arange(8), i8, "A")
    s = ctx.main.begin(t.view()).fetch_with_zero_point(i32, ax.m["1"], ax.m["A"], 10)
    assert stream_logical(s).tolist() == list(range(-10, -2))
    # the sub context has this stage (L1870)
    s2 = ctx.sub.begin(t.view()).fetch_with_zero_point(i32, ax.m["1"], ax.m["A"], 10)
    assert stream_logical(s2).tolist() == list(range(-10, -2))


def test_interleaved_zero_points_L2038_L2049() -> None:
    ax = AxisSet(A=8, I=2)
    ctx = new_ctx()
    a = dm(ctx, ax, np.arange(8), i8, "A", 0)
    b = dm(ctx, ax, np.arange(8), i8, "A", 64)
    begin = ctx.main.begin_interleaved(ax.m["I"], a.view(), b.view())
    assert begin.layout.time == ax.m["I"] and begin.layout.packet == ax.m["A"]
    s = begin.fetch_with_zero_points(i32, ax.m["I"], ax.m["A"], (100, -100))
    got = stream_logical(s, axes="I A")
    assert got[0].tolist() == list(range(-100, -92)) and got[1].tolist() == list(range(100, 108))


def test_zero_point_rules_L2032_L2117() -> None:
    ax = AxisSet(A=8, I=2)
    with pytest.raises(DtypeError) as err:
        plan(ax, i8, i32, "A", "1", "A", zero_points=(200,))  # not an i8
    assert "zero-point" in str(err.value.call)
    with pytest.raises(DtypeError):
        plan(AxisSet(A=64), i4, i5, "A", "1", "A", zero_points=(100,))  # does not fit i5 (L2117)
    with pytest.raises(LayoutError) as err2:
        plan(ax, i8, i32, "A", "1", "A", zero_points=(1, 2))  # two zero points need two tensors
    assert err2.value.level == "Time"
    with pytest.raises(UnsupportedFeatureError):
        plan(AxisSet(A=8), bf16, f32, "A", "1", "A", zero_points=(1,))


def test_zero_point_overflow_is_refused() -> None:
    ax = AxisSet(A=64)
    ctx = new_ctx()
    t = dm(ctx, ax, np.full(64, -8), i4, "A")
    with pytest.raises(DtypeError) as err:
        ctx.main.begin(t.view()).fetch_with_zero_point(i5, ax.m["1"], ax.m["A"], 15)  # -8 - 15 < -16
    assert "zero-point" in str(err.value.call)


# ------------------------------------------------------------------------------------------------ interleave


def test_interleave_order_L1855_L1868() -> None:
    ax = AxisSet(A=64, B=32, I=2)  # the manual's A = 512, smaller: the order is the same
    ctx = new_ctx()
    x = dt.random_values(i8, (2, 64, 32), RNG)
    lhs = dm(ctx, ax, x[0], i8, "A, B", 0)
    rhs = dm(ctx, ax, x[1], i8, "A, B", 1 << 16)
    s = ctx.main.begin_interleaved(ax.m["I"], lhs.view(), rhs.view()).fetch(i8, ax.m["A, I"], ax.m["B"])
    v, _ = slice0(s)
    assert np.array_equal(v[0], x[0, 0]) and np.array_equal(v[1], x[1, 0]) and np.array_equal(v[2], x[0, 1])
    assert np.array_equal(stream_logical(s, axes="I A B"), x)
    assert F.cycles(s.carried.fetch) == 128 and "interleaved along" in s.reports[-1].config


def test_interleave_rules_L1843_L1852() -> None:
    ax = AxisSet(A=8, B=32, I=2, J=3)
    ctx = new_ctx()
    a = dm(ctx, ax, dt.random_values(i8, (8, 32), RNG), i8, "A, B", 0)
    b = dm(ctx, ax, dt.random_values(i8, (8, 32), RNG), i8, "A, B", 4096)
    c = dm(ctx, ax, dt.random_values(i8, (8, 32), RNG), i8, "B, A", 8192, axes="A B")
    with pytest.raises(LayoutError) as err:
        ctx.main.begin_interleaved(ax.m["J"], a.view(), b.view())  # at most two tensors (L1850)
    assert err.value.axis == "J" and err.value.level == "Time"
    with pytest.raises(LayoutError):
        ctx.main.begin_interleaved(ax.m["I"], a.view(), c.view())  # identical mappings (L1845)
    with pytest.raises(LayoutError) as err2:
        ctx.main.begin_interleaved(ax.m["I"], a.view(), b.view()).fetch(i8, ax.m["A"], ax.m["I, B"])
    assert err2.value.axis == "I"


# ------------------------------------------------------------------------------------------------ memory


def test_fetch_refuses_a_stale_tensor() -> None:
    ax = AxisSet(A=8)
    ctx = new_ctx()
    t = dm(ctx, ax, np.arange(8), i8, "A", 0)
    dm(ctx, ax, np.arange(8), i8, "A", 4)  # overwrites bytes 4..7 of t
    with pytest.raises(StaleTensorError):
        ctx.main.begin(t.view()).fetch(i8, ax.m["1"], ax.m["A"])


def test_overfetch_past_the_end_of_dm_is_padding_L1841() -> None:
    ax = AxisSet(A=8)
    ctx = new_ctx()
    top = RNGD.dm.slice_bytes - 8
    t = dm(ctx, ax, np.arange(8), i8, "A", top)
    s = ctx.main.begin(t.view()).fetch(i8, ax.m["1"], ax.m["A # 32"])  # reads 24 bytes past the slice
    v, k = slice0(s)
    assert v[0, :8].tolist() == list(range(8)) and k[0].all()  # masked to zero, no address error


def test_begin_tensor_layout_L1701() -> None:
    ax = AxisSet(A=8, B=4)
    ctx = new_ctx()
    t = dm(ctx, ax, dt.random_values(f16, (8, 4), RNG), f16, "A, B")
    b = ctx.main.begin(t.view())
    assert b.layout.time == ax.m["1"] and b.layout.packet == ax.m["A, B"] and b.dtype is f16
    with pytest.raises(VisaError):
        ctx.main.begin(t)  # type: ignore[arg-type]  # a view, not the tensor
    b.fetch(f16, ax.m["A"], ax.m["B"])
    with pytest.raises(TypestateError):
        b.fetch(f16, ax.m["A"], ax.m["B"])  # a stream value flows through one engine


def test_cycles_and_report_L2060() -> None:
    ax = AxisSet(A=64, B=16)
    ctx = new_ctx()
    t = dm(ctx, ax, dt.random_values(bf16, (64, 16), RNG), bf16, "A, B")
    s = ctx.main.begin(t.view()).fetch(f32, ax.m["A"], ax.m["B"])
    cfg = s.carried.fetch
    # 32-byte bf16 packets, but one fetch may give at most 32 bytes of f32: 16-byte fetches, 2 per packet
    assert (cfg.fetch_size, cfg.fetches_per_packet, F.cycles(cfg)) == (16, 2, 128)
    rep = s.reports[-1]
    assert rep.cycles == 128 and rep.latency == max(RNGD.fetch.cast_latency_cycles)
    assert "sequencer [64 : 16, 16 : 1] : 16" in rep.config and "fetch_size = 16 B" in rep.config


def test_lookup_table_shape_is_checked() -> None:
    with pytest.raises(DtypeError):
        F.LookupTable(i8, i8, np.zeros(10, dtype=np.int8))
    with pytest.raises(UnsupportedFeatureError):
        F.LookupTable(i32, i32, np.zeros(1, dtype=np.int32))
    t = F.LookupTable.from_function(i4, f8e5m2, lambda x: x.astype(np.float32))
    assert t.lookup(np.array([-8, 7], dtype=np.int8)).astype(np.float32).tolist() == [-8.0, 7.0]
    assert repr(t) == "LookupTable[i4, f8e5m2]"
    _ = i9  # i9 is a fetch output type, never a table index here


def test_tail_padding_fetch_sizes_L7795_L7867() -> None:
    # The manual's table fetches 24-byte steps with "fetch_size = 24 bytes" (L7864); RNGD fetch sizes are
    # 1, 2, 4, 8, 16, 32 (L1758, L2099): read literally, a 24-byte packet takes three 8-byte fetches ...
    ax = AxisSet(A=65, B=2)
    literal = plan(ax, f8e4m3, f8e4m3, "B, A # 72", "B, [A # 72] / 24", "[A # 72] % 24")
    assert (literal.fetch_size, literal.fetches_per_packet, F.cycles(literal)) == (8, 3, 18)
    # ... and padded to 32 bytes (the "padding packets" optimisation, L1812-1842) it is the table's 6 cycles
    padded = plan(ax, f8e4m3, f8e4m3, "B, A # 72", "B, [A # 72] / 24", "[A # 72] % 24 # 32")
    assert (padded.fetch_size, F.cycles(padded)) == (32, 6)
    for p, step, cycles in ((80, 16, 10), (88, 8, 22), (96, 32, 6)):
        c = plan(ax, f8e4m3, f8e4m3, "B, A # 72", f"B, [A # {p}] / {step}", f"[A # {p}] % {step}")
        assert (c.fetch_size, F.cycles(c)) == (step, cycles)


# ------------------------------------------------------------------------------------------------ pad values


def test_pad_value_goes_through_the_table_L1869_L1898_L1936() -> None:
    """Masking comes first (L1869–1870): the padding of ``A # 8`` takes the pad value and is looked up like every
    element, so the padding lanes hold ``table[pad]``, known (issue 27 item 5)."""
    ax = AxisSet(A=6)
    ctx = new_ctx()
    table = F.LookupTable.from_function(i8, i8, lambda x: np.clip(2 * x.astype(np.int64) + 1, -128, 127))
    t = dm(ctx, ax, np.arange(6), i8, "A")
    s = ctx.main.begin(t.view()).fetch_with_table(i8, ax.m["1"], ax.m["A # 8"], table, pad_value=F.PadValue.Custom(3))
    v, k = slice0(s)
    assert v[0].tolist() == [1, 3, 5, 7, 9, 11, 7, 7] and k[0].all()


def test_pad_value_has_the_zero_point_subtracted_L2022_L1898() -> None:
    """A pad value equal to the zero point becomes 0 after the subtraction: the padding of an asymmetric-quantised
    tensor contributes nothing to a sum."""
    ax = AxisSet(A=6)
    ctx = new_ctx()
    t = dm(ctx, ax, np.arange(6), i8, "A")
    s = ctx.main.begin(t.view()).fetch_with_zero_point(i32, ax.m["1"], ax.m["A # 8"], 10,
                                                       pad_value=F.PadValue.Custom(10))
    v, k = slice0(s)
    assert v[0].tolist() == [-10, -9, -8, -7, -6, -5, 0, 0] and k[0].all()
    # the sub context subtracts zero points but has no masking stage (L1870): no pad value there
    with pytest.raises(HardwareLimitError, match="no masking stage"):
        ctx.sub.begin(t.view()).fetch_with_zero_point(i32, ax.m["1"], ax.m["A # 8"], 10,
                                                      pad_value=F.PadValue.Custom(10))


def test_repeated_zero_point_fetches_of_the_same_objects_subtract_their_own_zero_point() -> None:
    """L2022–2035: passes over the same view and mapping objects with zero points 3, 3, 5, 3.0 and −2 (the
    fetch's remembered plan is keyed on the zero point's value, a Python int) each subtract their own; the
    float is refused every time, after passes remembered with the int it equals."""
    ctx = Context(RNGD)
    m = AxisSet(C=2, S=256, E=64).m
    x = np.random.default_rng(7).integers(-100, 100, size=(2, 256, 64)).astype(np.int8)
    a = place_dm(ctx, x, i8, m["1"], m["C"], m["S"], m["E"], 64, axes="C S E")
    view, time, packet = a.view(), m["E / 32"], m["E % 32"]
    for z in (3, 3, 5, 3.0, -2):
        if isinstance(z, float):
            with pytest.raises(WrongTypeError, match="zero_point must be an int"):
                ctx.main.begin(view).fetch_with_zero_point(i8, time, packet, z)
            continue
        s = ctx.main.begin(view).fetch_with_zero_point(i8, time, packet, z)
        got = np.asarray(s.data.values)[0].reshape(2, 256, 64)
        assert np.array_equal(got, (x.astype(np.int16) - z).astype(np.int8))
        assert np.asarray(s.data.known).all()
