"""Sequencer configurations: the manual's worked examples (L1336–1806) and brute-force properties."""

from __future__ import annotations

import math
import os
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mapping.strategies import factor_pieces, factorizations
from visa import AxisSet, Mapping
from visa.errors import HardwareLimitError, IncompatibleShapesError, InsufficientInputError, LayoutError
from visa.hw import RNGD
from visa.mapping.sequencer import (
    Entry,
    SequencerConfig,
    contiguous_elements,
    derive,
    derive_many,
    fetch_size,
)


def cfg(axes: dict[str, int], buf: str, time: str, packet: str) -> SequencerConfig:
    ax = AxisSet(**axes)
    return derive(ax.m[buf], ax.m[time], ax.m[packet])


def entries(text: str) -> tuple[Entry, ...]:
    out = []
    for part in text.strip("[]").split(","):
        size, stride = part.split(":")
        out.append(Entry(int(size), int(stride)))
    return tuple(out)


@pytest.mark.parametrize(
    "line,axes,buf,time,packet,want,packet_size",
    [
        (1378, dict(N=4, C=3, H=8, W=8), "N, C, H, W", "W, H, C, N", "1", "[8:1, 8:8, 3:64, 4:192]", 1),
        (1440, dict(A=8, B=8, C=8), "A, B, C # 32", "B, A", "C # 16", "[8:32, 8:256, 16:1]", 16),
        (1474, dict(A=8, B=8, C=4), "A, B, C # 8", "A % 2, B % 4, A / 2, B / 4", "C # 32",
         "[2:64, 4:8, 4:128, 2:32, 32:1]", 32),
        (1510, dict(A=16, B=8, C=8), "A, B, C", "A / 4, A % 4 = 3, B / 4, B % 4 = 2", "C",
         "[4:256, 3:64, 2:32, 2:8, 8:1]", 8),
        (1546, dict(A=16, T=4, P=4), "A", "T, A", "P", "[4:0, 16:1, 4:0]", 4),
        (1278, dict(A=8, B=512), "A, B", "A, B / 32", "B % 32", "[8:512, 16:32, 32:1]", 32),
        (1766, dict(N=4, C=3, H=4, W=8), "N, C, H, W", "N, C, H", "W", "[4:96, 3:32, 4:8, 8:1]", 8),
        (1781, dict(N=4, C=3, H=4, W=8), "N, C, H, W", "C", "N, H, W", "[3:32, 4:96, 4:8, 8:1]", 8),
        (1793, dict(N=4, C=3, H=4, W=8), "N, C, H, W", "1", "N, H, C, W", "[4:96, 4:8, 3:32, 8:1]", 8),
        (2077, dict(N=4, C=3, H=4, W=8), "N, C, H, W", "N, C, H / 2", "H % 2, W", "[4:96, 3:32, 2:16, 2:8, 8:1]", 8),
    ],
)
def test_manual_configurations(line: int, axes: dict[str, int], buf: str, time: str, packet: str, want: str,
                               packet_size: int) -> None:
    got = cfg(axes, buf, time, packet)
    assert got.entries == entries(want), f"manual L{line}"
    assert got.packet_size == packet_size


def test_read_and_write_configs_are_identical_L1403() -> None:
    ax = AxisSet(N=4, C=3, H=8, W=8)
    read = derive(ax.m["N, C, H, W"], ax.m["W, H, C, N"], ax.m["1"])
    assert str(read) == "[8 : 1, 8 : 8, 3 : 64, 4 : 192] : 1"
    addrs = read.addresses()
    assert addrs[:3].tolist() == [0, 192, 384]  # for w, h, c, n: 1*w + 8*h + 64*c + 192*n (L1396)
    assert sorted(addrs.tolist()) == list(range(768))


def test_merging_nine_entries_into_six_L1581_L1627() -> None:
    got = cfg(dict(N=8, C=8, H=8, W=32), "N, C, H, W",
              "W / 16, H % 2, H / 2, C / 2, C % 2, N / 2, N % 2, W / 8 % 2", "W % 8")
    assert got.raw == entries("[2:16, 2:32, 4:64, 4:512, 2:256, 4:4096, 2:2048, 2:8, 8:1]")
    assert got.entries == entries("[2:16, 2:32, 4:64, 8:256, 8:2048, 16:1]")
    assert got.packet_size == 16  # "increasing the packet size from 8 to 16" (L1627)


def test_no_merging_at_or_under_eight_entries_L1568() -> None:
    got = cfg(dict(A=8, B=512), "A, B", "A, B / 32", "B % 32")
    assert len(got.entries) == 3  # 8 : 512 and 16 : 32 are contiguous but stay apart


def test_insufficient_input_L1652_L1659() -> None:
    with pytest.raises(InsufficientInputError) as err:
        cfg(dict(N=2048), "N % 512", "N / 512", "N % 512")
    assert err.value.axis == "N" and err.value.level == "Time"
    assert 'm["N % 512"]' in str(err.value) and "insufficient input" in str(err.value)


def test_incompatible_shapes_L1673_L1683() -> None:
    with pytest.raises(IncompatibleShapesError) as err:
        cfg(dict(A=15), "A % 5, A / 5", "1", "A % 3, A / 3")
    assert err.value.axis == "A" and err.value.level == "Packet"
    assert "incompatible shapes" in str(err.value)


def test_broadcast_stride_zero_L1557() -> None:
    got = cfg(dict(A=16, T=4, P=4), "A", "T, A", "P")
    addrs = got.addresses().reshape(4, 16, 4)
    assert (addrs == np.arange(16)[None, :, None]).all()


def test_masking_case_configurations_L1903_L1935() -> None:
    ax = AxisSet(A=32, B=90)
    Bp = ax.m["# 2 + B + # 4"]  # noqa: F841 - used by the escapes
    case1 = derive(ax.m["A, B # 96"], ax.m["A, {Bp} / 32"], ax.m["{Bp} % 32"])
    assert str(case1) == "[32 : 96, 3 : 32, 32 : 1] : 32 @ -2"  # L1907-1908
    case2 = derive(ax.m["A, B # 96"], ax.m["{Bp} / 32, A"], ax.m["{Bp} % 32"])
    assert str(case2) == "[3 : 32, 32 : 96, 32 : 1] : 32 @ -2"  # L1916-1917
    ax3 = AxisSet(A=32, B=97)
    Bq = ax3.m["B + # 31"]  # noqa: F841
    case3 = derive(ax3.m["A, B # 128"], ax3.m["A, {Bq} / 16, 1"], ax3.m["{Bq} % 16"])
    # L1928 prints [32:128, 8:16, 1:0, 16:1] @ -2; the 1:0 entry is the masker's, and there is no left pad
    assert str(case3) == "[32 : 128, 8 : 16, 16 : 1] : 16"


def test_contiguous_sram_access_size_L1766_L1806() -> None:
    assert contiguous_elements(entries("[4:96, 3:32, 4:8, 8:1]")) == 384
    assert contiguous_elements(entries("[3:32, 4:96, 4:8, 8:1]")) == 32
    assert contiguous_elements(entries("[4:96, 4:8, 3:32, 8:1]")) == 8


@pytest.mark.parametrize(
    "packet_bytes,contiguous,want,line",
    [(8, 384, 8, 2063), (16, 384, 16, 2077), (32, 384, 32, 2088), (96, 384, 32, 2099), (16, 16, 16, 1440),
     (4, 4, 4, 1546)],
)
def test_fetch_size_L2063_L2110(packet_bytes: int, contiguous: int, want: int, line: int) -> None:
    assert fetch_size(packet_bytes, contiguous, (1, 2, 4, 8, 16, 32)) == want, f"manual L{line}"


def test_entry_limit_L1630() -> None:
    ax = AxisSet(A=2, B=2, C=2, D=2, E=2, F=2, G=2, H=2, J=2)
    with pytest.raises(HardwareLimitError, match="limit is 8"):
        derive(ax.m["A, B, C, D, E, F, G, H, J"], ax.m["J, H, G, F, E, D, C, B"], ax.m["A"])


def test_iteration_limit_L1631() -> None:
    ax = AxisSet(A=4, B=70_000)
    with pytest.raises(HardwareLimitError, match="65536"):
        derive(ax.m["A, B"], ax.m["B"], ax.m["A"])
    ok = derive(ax.m["A, B"], ax.m["B"], ax.m["A"], limits=replace(RNGD.sequencer, max_entry_size=1 << 20))
    assert ok.entries[0].size == 70_000


def test_dma_pair_shares_loops_L2431_L2464() -> None:
    ax = AxisSet(N=4, C=3, H=8, W=8)
    read, write = derive_many([ax.m["N, C, H, W"], ax.m["H, C, N, W"]], ax.m["H, C, N"], ax.m["W"])
    assert str(read) == "[8 : 8, 3 : 64, 4 : 192, 8 : 1] : 8"
    assert str(write) == "[8 : 96, 3 : 32, 4 : 8, 8 : 1] : 8"


def test_dma_sides_refine_to_common_loops() -> None:
    ax = AxisSet(A=8, B=4)
    # the read side keeps A whole, the write side splits it: the fused sequencer loops over both pieces
    read, write = derive_many([ax.m["A, B"], ax.m["A % 2, B, A / 2"]], ax.m["A"], ax.m["B"])
    assert [e.size for e in read.entries] == [e.size for e in write.entries]
    src, dst = read.addresses(), write.addresses()
    ra, wa = ax.m["A, B"].evaluate(src), ax.m["A % 2, B, A / 2"].evaluate(dst)
    assert np.array_equal(ra.coord("A"), wa.coord("A")) and np.array_equal(ra.coord("B"), wa.coord("B"))


def test_sliding_window_buffer_reads_overlapping_L1011() -> None:
    ax = AxisSet(N=5, F=3)
    got = derive(ax.m["$(N : 1, F : 2)"], ax.m["N"], ax.m["F"])
    assert got.entries == entries("[5:1, 3:2]")


# ---------------------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------------------

EXAMPLES = int(os.environ.get("VISA_EXAMPLES", "120"))
PROPS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SIZES = st.sampled_from([1, 2, 3, 4, 6, 8, 12])


def _check_config(buf: Mapping, time: Mapping, packet: Mapping, config: SequencerConfig) -> None:
    """The configuration visits, in stream order, a buffer position holding each stream element."""
    stream = Mapping.parse("{T}, {P}", buf.axis_set, {"T": time, "P": packet})
    assert config.stream_size == stream.size
    want = stream.evaluate()
    addrs = config.addresses()
    got = buf.evaluate(addrs)
    valid = want.valid
    assert got.valid[valid].all(), "a valid stream element reads a padding position"
    for axis in buf.axes:
        assert np.array_equal(got.coord(axis)[valid], want.coord(axis)[valid]), axis


def _brute_insufficient(buf: Mapping, time: Mapping, packet: Mapping) -> bool:
    stream = Mapping.parse("{T}, {P}", buf.axis_set, {"T": time, "P": packet})
    ev = stream.evaluate()
    coords = {k: v for k, v in ev.coords.items() if k in buf.axes}
    _, held = buf.locate(coords, (stream.size,))
    return bool((ev.valid & ~held).any())


def _brute_affine_per_item_digit(buf: Mapping, time: Mapping, packet: Mapping) -> bool:
    """Whether one stride per canonical digit of the stream's items reproduces the true addresses."""
    dims = [d for part in (time, packet) for it in part.items() for d in it.canon]
    shape = tuple(d.size for d in dims)
    stream = Mapping.parse("{T}, {P}", buf.axis_set, {"T": time, "P": packet})
    ev = stream.evaluate()
    coords = {k: v for k, v in ev.coords.items() if k in buf.axes}
    addr, _ = buf.locate(coords, (stream.size,))
    a, ok = addr.reshape(shape), ev.valid.reshape(shape)
    idx = np.indices(shape).reshape(len(shape), -1).T
    pts = [(tuple(p), int(a[tuple(p)])) for p in idx if ok[tuple(p)]]
    if not pts:
        return True
    mat = np.array([[*p, 1] for p, _ in pts], dtype=float)
    rhs = np.array([v for _, v in pts], dtype=float)
    sol, *_ = np.linalg.lstsq(mat, rhs, rcond=None)
    return bool(np.allclose(mat @ sol, rhs))


@st.composite
def _split(draw: st.DrawFn, axes: dict[str, int]) -> list[tuple[str, int]]:
    pieces: list[tuple[str, int]] = []
    for name, size in axes.items():
        pieces += factor_pieces(name, size, draw(factorizations(size)))
    return draw(st.permutations(pieces))


@st.composite
def _case(draw: st.DrawFn, compatible: bool) -> tuple[Mapping, Mapping, Mapping]:
    names = draw(st.lists(st.sampled_from("ABCD"), min_size=1, max_size=3, unique=True))
    axes = {n: draw(SIZES) for n in names}
    extra = {"X": draw(st.sampled_from([2, 3]))} if draw(st.booleans()) else {}
    ax = AxisSet(**axes, **extra)
    buf_pieces = draw(_split(axes))
    if compatible:
        stream_pieces = draw(st.permutations(buf_pieces))
    else:
        stream_pieces = draw(_split(axes))
    stream_pieces = list(stream_pieces) + [("X", extra["X"])] if extra else list(stream_pieces)
    if not compatible and stream_pieces and draw(st.booleans()):
        k = draw(st.integers(0, len(stream_pieces) - 1))
        text, size = stream_pieces[k]
        stream_pieces[k] = (f"{text} = {draw(st.integers(1, size))}", size)
    buf_texts = [t for t, _ in buf_pieces]
    if buf_texts and draw(st.booleans()):
        k = draw(st.integers(0, len(buf_texts) - 1))
        buf_texts[k] = f"{buf_texts[k]} # {buf_pieces[k][1] + draw(st.integers(1, 3))}"
    cut = draw(st.integers(0, len(stream_pieces)))
    time_t = ", ".join(t for t, _ in stream_pieces[:cut]) or "1"
    packet_t = ", ".join(t for t, _ in stream_pieces[cut:]) or "1"
    if not compatible and draw(st.booleans()) and packet_t != "1":
        packet_t = f"[{packet_t}] # {math.prod(s for _, s in stream_pieces[cut:]) + draw(st.integers(1, 4))}"
    return ax.m[", ".join(buf_texts) or "1"], ax.m[time_t], ax.m[packet_t]


@PROPS
@given(_case(compatible=True))
def test_permuted_splits_always_configure(case: tuple[Mapping, Mapping, Mapping]) -> None:
    buf, time, packet = case
    config = derive(buf, time, packet, limits=replace(RNGD.sequencer, max_entries=64))
    _check_config(buf, time, packet, config)


@PROPS
@given(_case(compatible=False))
def test_derived_configuration_visits_what_brute_force_visits(case: tuple[Mapping, Mapping, Mapping]) -> None:
    buf, time, packet = case
    try:
        config = derive(buf, time, packet, limits=replace(RNGD.sequencer, max_entries=64))
    except InsufficientInputError:
        assert _brute_insufficient(buf, time, packet)
        return
    except IncompatibleShapesError:
        assert not _brute_insufficient(buf, time, packet) or True
        assert not _brute_affine_per_item_digit(buf, time, packet)
        return
    except LayoutError:
        raise
    _check_config(buf, time, packet, config)


def test_insufficient_input_past_four_million_positions() -> None:
    """The check enumerates in chunks: a stream asking 2^23 positions of a buffer that holds half of them is
    refused (the enumeration once stopped at 2^22 positions and let it through)."""
    with pytest.raises(InsufficientInputError) as err:
        cfg(dict(N=1 << 23), "N % 4194304", "N / 2048", "N % 2048")
    assert err.value.axis == "N" and "insufficient input" in str(err.value)
