"""Tests of the Transpose Engine (manual "Transpose Engine", L6820–7041; digest 3 §8, tests T52–T55, E21).

Each engine test builds its input with :func:`visa.testing.make_stream`, transposes, and checks (a) the
logical tensor is unchanged (a move is the identity on the tensor, L1162–1197), (b) the physical flits are
numpy's transpose of each ``[in_rows × in_cols]`` tile, trimmed and padded to 32 bytes, and (c) the cycles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa import fastpaths
from visa.context import Context
from visa.engines import transpose as T
from visa.engines.common import StreamData, StreamLayout
from visa.errors import HardwareLimitError, IncompatibleShapesError, TypestateError, VisaError
from visa.hw import RNGD
from visa.mapping import AxisSet
from visa.memory.known import known_everywhere
from visa.stream.stages import (
    AccumulationTensor,
    CastTensor,
    CollectTensor,
    FetchTensor,
    SwitchTensor,
    TransposeTensor,
    VectorFinalTensor,
)
from visa.testing import make_stream, stream_logical

ALL_DTYPES = [dt.i4, dt.i5, dt.i8, dt.i9, dt.i16, dt.i32, dt.bf16, dt.f16, dt.f32, dt.f8e4m3, dt.f8e5m2]
TE = RNGD.transpose


def _stream(ctx: Context, cls: type[Any], sizes: dict[str, int], dtype: type[dt.Scalar], time: str, packet: str,
            rng: np.random.Generator, slice_: str = "P", cluster: str = "1") -> tuple[Any, npt.NDArray[Any], Any]:
    m = AxisSet(**sizes).m
    layout = StreamLayout(dtype, m["1"], m[cluster], m[slice_], m[time], m[packet])
    arr = dt.random_values(dtype, tuple(sizes.values()), rng)
    names = [a for a, n in sizes.items() if n > 1]  # an axis of size 1 is not an axis of the tensor
    return make_stream(ctx.main, cls, layout, arr.reshape([sizes[a] for a in names]), axes=names), arr, m


def _logical(stream: Any, sizes: dict[str, int]) -> npt.NDArray[Any]:
    """The logical tensor of ``stream`` with every axis of ``sizes`` (size-1 axes restored)."""
    names = [a for a, n in sizes.items() if n > 1]
    return np.asarray(stream_logical(stream, axes=names)).reshape(tuple(sizes.values()))


def _tiles(cfg: T.TransposeConfig, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """numpy's reference: per slice and iteration, the [in_rows × in_cols] tile transposed and trimmed."""
    lead = values.shape[:3]
    x = values.reshape(*lead, cfg.iterations, cfg.in_rows, cfg.packets_per_col, cfg.in_packet)
    x = x[..., : cfg.elements_per_packet].reshape(*lead, cfg.iterations, cfg.in_rows, cfg.in_cols)
    return np.swapaxes(x, -1, -2)[..., : cfg.out_rows, :]


def _check_physical(cfg: T.TransposeConfig, stream: Any, out: Any) -> None:
    want_v, want_k = _tiles(cfg, stream.data.values), _tiles(cfg, stream.data.known)
    lead = out.data.values.shape[:3]
    got_v = out.data.values.reshape(*lead, cfg.iterations, cfg.out_rows, cfg.output_alignment)
    got_k = out.data.known.reshape(*lead, cfg.iterations, cfg.out_rows, cfg.output_alignment)
    assert np.array_equal(got_k[..., : cfg.in_rows], want_k)
    np.testing.assert_array_equal(np.where(want_k, got_v[..., : cfg.in_rows], 0), np.where(want_k, want_v, 0))
    assert not got_k[..., cfg.in_rows:].any(), "Align padding must be poison"


# ------------------------------------------------------------------------------ the manual's four examples

MANUAL = [
    # (lines, sizes, dtype, Time, Packet, OutTime, OutPacket, in_rows, ppc, in_cols, out_rows, n, double, cycles)
    ("L6913-6945 basic 8x8", dict(P=256, C=8, D=8, E=8), dt.i8, "C, D", "E # 32", "C, E", "D # 32",
     8, 1, 8, 8, 8, True, 72),
    ("L6946-6978 small, 6 rows trimmed", dict(P=64, A=4, B=2), dt.i8, "A", "B # 32", "B", "A # 32",
     4, 1, 8, 2, 1, True, 6),
    ("L6979-7010 in_cols=32 single buffering", dict(P=256, B=2, C=8, D=4, E=8), dt.i8, "B, C, D", "E # 32",
     "B, D, E", "C # 32", 8, 4, 32, 32, 2, False, 128),
    ("L7011-7040 bf16", dict(P=256, C=8, D=4, E=8), dt.bf16, "C, D", "E # 16", "C, E", "D # 16",
     4, 1, 8, 8, 8, True, 68),
]


@pytest.mark.parametrize("case", MANUAL, ids=[c[0] for c in MANUAL])
def test_manual_examples(case: tuple[Any, ...]) -> None:
    """T52–T55: the manual's worked transposes, their configuration, data and cycle counts."""
    _, sizes, dtype, ti, pi, to, po, in_rows, ppc, in_cols, out_rows, n, double, cyc = case
    ctx = Context.acquire()
    s, arr, m = _stream(ctx, CollectTensor, sizes, dtype, ti, pi, np.random.default_rng(6913))
    cfg = T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    assert (cfg.in_rows, cfg.packets_per_col, cfg.in_cols, cfg.out_rows, cfg.iterations) == (
        in_rows, ppc, in_cols, out_rows, n)
    assert cfg.elements_per_packet == TE.elements_per_packet[dtype.size_bits]
    assert cfg.output_alignment == TE.output_alignment[dtype.size_bits]
    assert cfg.double_buffered is double
    assert T.cycles(cfg) == cyc
    out = s.transpose(m[to], m[po])
    assert isinstance(out, TransposeTensor)
    assert out.layout.time == m[to] and out.layout.packet == m[po] and out.layout.slice == m["P"]
    assert [r.engine for r in out.reports] == ["transpose"] and out.reports[0].cycles == cyc
    np.testing.assert_array_equal(_logical(out, sizes), arr)
    _check_physical(cfg, s, out)


def test_small_transpose_scalar_vector_L6946() -> None:
    """Digest 3 §12.1: in[a] = [10a, 10a+1, pad…] gives out[0] = [0, 10, 20, 30, pad…], out[1] = [1, 11, 21, 31]."""
    ctx = Context.acquire()
    m = AxisSet(A=4, B=2).m
    layout = StreamLayout(dt.i8, m["1"], m["1"], m["1"], m["A"], m["B # 32"])
    arr = (10 * np.arange(4)[:, None] + np.arange(2)[None, :]).astype(np.int8)
    out = make_stream(ctx.main, CollectTensor, layout, arr, axes="A B").transpose(m["B"], m["A # 32"])
    assert out.data.values.shape == (1, 1, 1, 2, 32)
    assert out.data.values[0, 0, 0, :, :4].tolist() == [[0, 10, 20, 30], [1, 11, 21, 31]]
    assert out.data.known[0, 0, 0, :, :4].all() and not out.data.known[0, 0, 0, :, 4:].any()
    assert out.reports[0].cycles == 6


# ------------------------------------------------------------------------------ cycles (L6887-6912)


@pytest.mark.parametrize(("dtype", "ppc", "double"), [(dt.i8, 1, True), (dt.i8, 2, True), (dt.i8, 4, False),
                                                       (dt.i4, 1, True), (dt.i4, 2, False), (dt.f32, 2, True)])
def test_buffering_mode_L6887(dtype: type[dt.Scalar], ppc: int, double: bool) -> None:
    """Double buffering iff in_cols ≤ num_buffer_cols = 16 (L6887–6895); the two totals (L6905–6912)."""
    bits = dtype.size_bits
    epp, align, rows = TE.elements_per_packet[bits], TE.output_alignment[bits], TE.max_in_rows[bits]
    m = AxisSet(O=3, R=rows, Q=ppc, E=epp).m
    cfg = T.plan(RNGD, dtype, m["O, R, Q"], m[f"E # {256 // bits}"], m["O, Q, E"], m[f"R # {align}"])
    assert cfg.double_buffered is double and cfg.in_cols == ppc * epp
    i, o, n = rows * ppc, ppc * epp, 3
    want = i + (n - 1) * max(i, o) + o if double else n * (i + o)
    assert T.cycles(cfg) == want


# ------------------------------------------------------------------------------ refusals (E21, L6876-6886)


def _refused(sizes: dict[str, int], dtype: type[dt.Scalar], ti: str, pi: str, to: str, po: str) -> VisaError:
    m = AxisSet(**sizes).m
    with pytest.raises(VisaError) as err:
        T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    return err.value


def test_input_packet_must_be_32_bytes_L6885() -> None:
    e = _refused(dict(C=8, D=8, E=8), dt.i8, "C, D", "E # 16", "C, E", "D # 32")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Packet", "E") and "32-byte" in str(e) and "16 bytes" in str(e)


@pytest.mark.parametrize(("dtype", "packet"), [(dt.i8, "D # 16"), (dt.bf16, "D # 32"), (dt.i4, "D # 32")])
def test_output_alignment_L6880(dtype: type[dt.Scalar], packet: str) -> None:
    p_in = 256 // dtype.size_bits
    e = _refused(dict(C=8, D=2, E=8), dtype, "C, D", f"E # {p_in}", "C, E", packet)
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Packet", "D")
    assert f"output_alignment = {TE.output_alignment[dtype.size_bits]}" in str(e)


@pytest.mark.parametrize("dtype", [dt.i4, dt.i8, dt.bf16])  # 32-bit: epp = packet
def test_elements_per_packet_L6843(dtype: type[dt.Scalar]) -> None:
    """Unpack keeps the first elements_per_packet elements; data past them is refused, not dropped."""
    bits = dtype.size_bits
    epp = TE.elements_per_packet[bits]
    p_in = 256 // bits
    e = _refused(dict(C=2, D=2, E=epp + 1), dtype, "C, D", f"E # {p_in}", "C, E", f"D # {p_in}")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Packet", "E") and f"elements_per_packet = {epp}" in str(e)


@pytest.mark.parametrize("dtype", [dt.i4, dt.i8, dt.f16, dt.i32])
def test_max_in_rows_L6880(dtype: type[dt.Scalar]) -> None:
    bits = dtype.size_bits
    limit, p = TE.max_in_rows[bits], 256 // bits
    e = _refused(dict(C=2, D=2 * limit, E=4), dtype, "C, D", f"E # {p}", "C, E", f"D # {p}")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Time", "D") and f"maximum in_rows = {limit}" in str(e)
    # one row fewer than the limit's double is still refused; the limit itself passes
    m = AxisSet(C=2, D=limit, E=4).m
    assert T.plan(RNGD, dtype, m["C, D"], m[f"E # {p}"], m["C, E"], m[f"D # {p}"]).in_rows == limit


@pytest.mark.parametrize(("dtype", "ppc"), [(dt.i8, 3), (dt.i16, 8), (dt.i4, 4)])
def test_valid_in_cols_L6880(dtype: type[dt.Scalar], ppc: int) -> None:
    bits = dtype.size_bits
    epp, p = TE.elements_per_packet[bits], 256 // bits
    e = _refused(dict(C=2, D=2, Q=ppc, E=epp), dtype, "C, D, Q", f"E # {p}", "C, Q, E", f"D # {p}")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Time", "Q")
    assert f"in_cols = {ppc * epp}" in str(e) and ", ".join(map(str, TE.valid_in_cols[bits])) in str(e)


def test_whole_time_as_columns_is_in_cols_64_L6880() -> None:
    """Transposing the outer axis: in_rows = C, packets_per_col = D, so in_cols = 64, which no dtype allows."""
    e = _refused(dict(C=8, D=8, E=8), dt.i8, "C, D", "E # 32", "D, E", "C # 32")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Time", "D") and "in_cols = 64" in str(e)


def test_out_rows_at_most_in_cols_L6886() -> None:
    e = _refused(dict(C=8, D=8, E=8), dt.i8, "C, D", "E # 32", "C, E # 16", "D # 32")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Time", "E") and "out_rows = 16" in str(e) and "in_cols = 8" in str(e)


def test_trim_drops_only_padding_L6850() -> None:
    e = _refused(dict(A=4, B=4), dt.i8, "A", "B # 32", "B = 2", "A # 32")
    assert isinstance(e, HardwareLimitError)
    assert (e.level, e.axis) == ("Time", "B") and "Trim" in str(e)


@pytest.mark.parametrize(("to", "po"), [("E, C", "D # 32"), ("C, D", "E # 32"), ("C, E", "C # 32")])
def test_not_a_transpose(to: str, po: str) -> None:
    """An OutTime/OutPacket the four stages cannot produce (outer axes moved, no transpose, dropped rows)."""
    e = _refused(dict(C=8, D=8, E=8), dt.i8, "C, D", "E # 32", to, po)
    assert isinstance(e, IncompatibleShapesError)
    assert e.level in ("Time", "Packet") and e.axis


def test_trim_to_fewer_rows_and_partial_packets() -> None:
    """Trim keeps the first out_rows rows; a padded inner row axis (``B # 3``) is legal (L6850–6852)."""
    m = AxisSet(A=4, B=2).m
    cfg = T.plan(RNGD, dt.i8, m["A"], m["B # 32"], m["B # 3"], m["A # 32"])
    assert (cfg.out_rows, cfg.trimmed_rows, T.cycles(cfg)) == (3, 5, 7)


@pytest.mark.parametrize("out_time", ["C", "C # 16"])
def test_axis_cut_by_time_and_packet_is_padded_jointly_L6850(out_time: str) -> None:
    """Regression: C = 12 padded to 16 and cut as ``C # 16 / 8`` (Time) × ``C # 16 % 8`` (Packet), as a collect
    of a long packet makes.  Columns 12..15 of the second packet are padding (``C`` has no index 12), so Trim may
    drop them and an output of ``C # 16`` rows holds padding there; both were refused when the two levels' indices
    were added without deciding the padding on the joint mapping."""
    ctx = Context.acquire()
    sizes = dict(R=8, C=12)
    s, arr, m = _stream(ctx, CollectTensor, sizes, dt.i8, "R, C # 16 / 8", "C # 16 % 8 # 32",
                        np.random.default_rng(6850), slice_="1")
    cfg = T.plan(RNGD, dt.i8, m["R, C # 16 / 8"], m["C # 16 % 8 # 32"], m[out_time], m["R # 32"])
    assert (cfg.in_rows, cfg.packets_per_col, cfg.out_rows) == (8, 2, m[out_time].size)
    out = s.transpose(m[out_time], m["R # 32"])
    np.testing.assert_array_equal(_logical(out, sizes), arr)
    _check_physical(cfg, s, out)


# ------------------------------------------------------------------------------ pass-through and poison


def test_chip_cluster_slice_pass_through_and_poison_L6839() -> None:
    ctx = Context.acquire()
    rng = np.random.default_rng(1)
    s, arr, m = _stream(ctx, CastTensor, dict(S=5, O=2, R=3, E=5), dt.i16, "O, R # 4", "E # 16", rng,
                        slice_="S # 8", cluster="1 # 2")
    s.data.known[0, 0, 1, 0, 2] = False  # one poisoned input element
    out = s.transpose(m["O, E # 8"], m["R # 4 # 16"])
    assert out.layout.slice == m["S # 8"] and out.layout.cluster == m["1 # 2"]
    assert not out.data.known[0, 0, 1, 2, 0], "poison moves with its element"
    assert not out.data.known[..., 3].any(), "row R = 3 of `R # 4` is padding"
    cfg = T.plan(RNGD, dt.i16, m["O, R # 4"], m["E # 16"], m["O, E # 8"], m["R # 4 # 16"])
    _check_physical(cfg, s, out)


# ------------------------------------------------------------------------------ typestate (L6826, L6872-6875)


@pytest.mark.parametrize("cls", [FetchTensor, CollectTensor, AccumulationTensor, VectorFinalTensor, CastTensor])
def test_sources(cls: type[Any]) -> None:
    """Fetch, Collect, Contraction (Accumulation), Vector (final) and Cast streams feed the engine."""
    ctx = Context.acquire()
    s, arr, m = _stream(ctx, cls, dict(P=2, A=2, B=8), dt.i32, "A", "B", np.random.default_rng(2))
    out = s.transpose(m["B"], m["A # 8"])
    np.testing.assert_array_equal(_logical(out, dict(P=2, A=2, B=8)), arr)


def test_transpose_tensor_only_commits() -> None:
    ctx = Context.acquire()
    s, _, m = _stream(ctx, CollectTensor, dict(P=2, A=2, B=8), dt.i32, "A", "B", np.random.default_rng(3))
    out = s.transpose(m["B"], m["A # 8"])
    for name in ("transpose", "cast", "vector_init", "collect"):
        with pytest.raises(TypestateError):
            getattr(out, name)
    with pytest.raises(TypestateError):  # a stream value flows through one engine
        s.transpose(m["B"], m["A # 8"])
    sw, _, m2 = _stream(ctx, SwitchTensor, dict(P=2, A=2, B=8), dt.i32, "A", "B", np.random.default_rng(3))
    with pytest.raises(TypestateError):
        sw.transpose(m2["B"], m2["A # 8"])


def test_sub_context_refused_L2337() -> None:
    ctx = Context.acquire()
    m = AxisSet(P=2, A=2, B=8).m
    layout = StreamLayout(dt.i32, m["1"], m["1"], m["P"], m["A"], m["B"])
    s = make_stream(ctx.sub, CollectTensor, layout, np.zeros((2, 2, 8), dtype=np.int32), axes="P A B")
    with pytest.raises(TypestateError):
        s.transpose(m["B"], m["A # 8"])


# ------------------------------------------------------------------------------ properties


@st.composite
def _legal(draw: st.DrawFn) -> tuple[type[dt.Scalar], dict[str, int], str, str, str, str]:
    dtype = draw(st.sampled_from(ALL_DTYPES))
    bits = dtype.size_bits
    epp, align, p = TE.elements_per_packet[bits], TE.output_alignment[bits], TE.packet_bytes * 8 // bits
    rows = draw(st.integers(1, TE.max_in_rows[bits]))
    ppc = draw(st.sampled_from([c // epp for c in TE.valid_in_cols[bits]]))
    cols = draw(st.integers(1, epp))
    sizes = dict(S=draw(st.integers(1, 3)), O=draw(st.integers(1, 3)), R=rows, Q=ppc, E=cols)
    inner = f"Q, E # {epp}"
    if draw(st.booleans()) and cols < epp:
        inner = f"[{inner}] = {(ppc - 1) * epp + cols}"  # Trim the padded rows of the last packet
    return dtype, sizes, "O, R, Q", f"E # {p}", f"O, {inner}", f"R # {align}"


@settings(max_examples=100, deadline=None)
@given(case=_legal(), seed=st.integers(0, 2**16))
def test_property_transpose_is_numpy_transpose(case: tuple[Any, ...], seed: int) -> None:
    """For every dtype (4-bit included): the tensor is unchanged and each tile is numpy's transpose."""
    dtype, sizes, ti, pi, to, po = case
    ctx = Context.acquire()
    s, arr, m = _stream(ctx, CollectTensor, sizes, dtype, ti, pi, np.random.default_rng(seed), slice_="S")
    cfg = T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    # in_rows is fixed by OutPacket; with one row, `Q` packets per column or `Q` iterations give the same
    # flits, and plan takes the cheaper (docs/manual-notes.md)
    assert cfg.in_rows == sizes["R"] and (cfg.packets_per_col == sizes["Q"] or sizes["R"] == 1)
    out = s.transpose(m[to], m[po])
    got = _logical(out, sizes)
    np.testing.assert_array_equal(got, arr)
    _check_physical(cfg, s, out)
    n, i, o = cfg.iterations, cfg.input_flits_per_iter, cfg.out_rows
    assert T.cycles(cfg) == (i + (n - 1) * max(i, o) + o if cfg.in_cols <= TE.buffer_cols else n * (i + o))


def _commit_ready() -> bool:
    import inspect

    from visa.stream import commit

    return "not implemented yet" not in inspect.getsource(commit.commit)


def _committable(case: tuple[Any, ...]) -> bool:
    """Cases that can be committed: every DM type (i5 and i9 are stream and TRF types: they never reach DM,
    manual L2525, L6778)."""
    return case[0] not in (dt.i5, dt.i9)


@pytest.mark.skipif(not _commit_ready(), reason="the Commit Engine (issue 4) is not implemented yet")
@settings(max_examples=60, deadline=None)
@given(case=_legal().filter(_committable), seed=st.integers(0, 2**16))
def test_property_transpose_then_commit(case: tuple[Any, ...], seed: int) -> None:
    """transpose then commit gives numpy's transpose of the logical tile, for every dtype (4-bit included)."""
    _transpose_commit(case, seed)


def _transpose_commit(case: tuple[Any, ...], seed: int) -> None:
    dtype, sizes, ti, pi, to, po = case
    bits = dtype.size_bits
    ctx = Context.acquire()
    s, arr, m = _stream(ctx, CastTensor, sizes, dtype, ti, pi, np.random.default_rng(seed), slice_="S # 256",
                        cluster="1 # 2")
    rows = -(-sizes["R"] * bits // 64) * 64 // bits  # commit_in_size: 8, 16, 24 or 32 bytes (L2192–2193)
    dm = s.transpose(m[to], m[po]).commit(m[f"{to}, R # {rows}"], 0)
    # DM now holds, per slice, rows of the transposed tile: the tensor in the order S O Q E R
    names = [a for a in ("S", "O", "Q", "E", "R") if sizes[a] > 1]
    want = np.transpose(arr, [list(sizes).index(a) for a in ("S", "O", "Q", "E", "R")])
    np.testing.assert_array_equal(dm.logical(axes=names), want.reshape([sizes[a] for a in names]))


@pytest.mark.skipif(not _commit_ready(), reason="the Commit Engine (issue 4) is not implemented yet")
def test_transpose_then_commit_odd_4bit_rows() -> None:
    # R = 3 i4 per row: the last element shares its byte with the row's padding, which must not poison it
    _transpose_commit((dt.i4, dict(S=2, O=2, R=3, Q=2, E=5), "O, R, Q", "E # 64", "O, Q, E # 16", "R # 64"), 0)


@pytest.mark.skipif(not _commit_ready(), reason="the Commit Engine (issue 4) is not implemented yet")
def test_transpose_then_commit_one_element_tiles() -> None:
    # E = R = 1: two padding-only loops (Time `E # 8`, Packet `R # 8`) step through the Element's one merged
    # 64-position padding digit
    _transpose_commit((dt.i8, dict(S=1, O=2, R=1, Q=1, E=1), "O, R, Q", "E # 32", "O, Q, E # 8", "R # 32"), 0)


@settings(max_examples=40, deadline=None)
@given(case=_legal(), seed=st.integers(0, 2**16))
def test_execute_is_the_planned_index_map(case: tuple[Any, ...], seed: int) -> None:
    """``execute`` (views of each tile) moves every element where ``source_index`` (what plan checks) says."""
    dtype, sizes, ti, pi, to, po = case
    m = AxisSet(**sizes).m
    cfg = T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    rng = np.random.default_rng(seed)
    values = rng.integers(-100, 100, size=(1, 2, 3, cfg.in_time, cfg.in_packet)).astype(np.int16)
    known = rng.random(values.shape) < 0.9
    out = T.execute(cfg, StreamData(values, known))
    src, has = T.source_index(cfg)
    np.testing.assert_array_equal(out.known, known.reshape(1, 2, 3, -1)[..., src] & has)
    np.testing.assert_array_equal(np.where(out.known, out.values, 0),
                                  np.where(out.known, values.reshape(1, 2, 3, -1)[..., src], 0))


@settings(max_examples=40, deadline=None)
@given(case=_legal(), seed=st.integers(0, 2**16), everywhere=st.booleans())
def test_the_tile_views_are_the_reference(case: tuple[Any, ...], seed: int, everywhere: bool) -> None:
    """The fast path ``transpose.tiles`` (views of each tile, the all-known pattern) gives the values and the
    known-mask the reference (:func:`source_index` at every output element) gives."""
    dtype, sizes, ti, pi, to, po = case
    m = AxisSet(**sizes).m
    cfg = T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    rng = np.random.default_rng(seed)
    values = rng.integers(-100, 100, size=(1, 2, 1, cfg.in_time, cfg.in_packet)).astype(np.int16)
    known = known_everywhere(values.shape) if everywhere else rng.random(values.shape) < 0.9
    fast = T.execute(cfg, StreamData(values, known))
    with fastpaths.disabled("transpose.tiles"):
        ref = T.execute(cfg, StreamData(values, known))
    np.testing.assert_array_equal(np.asarray(fast.known), np.asarray(ref.known))
    np.testing.assert_array_equal(fast.values, ref.values)


@settings(max_examples=40, deadline=None)
@given(case=_legal(), seed=st.integers(0, 2**16), kind=st.sampled_from(["same", "broadcast", "last", "middle"]))
def test_known_rows_transposed_once_are_the_reference(case: tuple[Any, ...], seed: int, kind: str) -> None:
    """``transpose.known-rows``: a known-mask the same in every slice (rows equal, or broadcast over the slices)
    transposed once and broadcast gives the known-mask (and values) of the reference; a mask whose last or a middle
    slice differs is not taken for one (the same result either way)."""
    dtype, sizes, ti, pi, to, po = case
    m = AxisSet(**sizes).m
    cfg = T.plan(RNGD, dtype, m[ti], m[pi], m[to], m[po])
    rng = np.random.default_rng(seed)
    lead = (1, 2, 70)  # (more slices than a band of the comparison)
    values = rng.integers(-100, 100, size=(*lead, cfg.in_time, cfg.in_packet)).astype(np.int16)
    row = rng.random((cfg.in_time, cfg.in_packet)) < 0.7
    if kind == "broadcast":
        known = np.broadcast_to(row, values.shape)
    else:
        known = np.broadcast_to(row, values.shape).copy()
        if kind != "same" and row.size:
            at = (0, 1, 69) if kind == "last" else (0, 1, int(rng.integers(0, 69)))
            known[at].reshape(-1)[int(rng.integers(0, row.size))] ^= True
    fast = T.execute(cfg, StreamData(values, known))
    with fastpaths.disabled("transpose.known-rows"):
        tiles = T.execute(cfg, StreamData(values, known))
    with fastpaths.disabled("transpose.tiles"):
        ref = T.execute(cfg, StreamData(values, known))
    for got in (fast, tiles):
        np.testing.assert_array_equal(np.asarray(got.known), np.asarray(ref.known))
        np.testing.assert_array_equal(got.values, ref.values)
