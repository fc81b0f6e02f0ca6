"""Tests of the Cast Engine (manual "Cast Engine", L6756–6819; digest 3 §7, tests T50, T51, E20).

The manual gives neither rounding nor overflow; the engine rounds floats to nearest-even (overflow to ±inf, or NaN
for f8e4m3) and wraps integers (docs/manual-notes.md).  Those choices are tested bit-exactly against
``ml_dtypes``/numpy ``astype``, which make the same ones, on random bit patterns covering every exponent.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa.context import Context
from visa.engines import cast as C
from visa.engines.common import StreamLayout
from visa.errors import DtypeError, HardwareLimitError, LayoutError, TypestateError
from visa.hw import RNGD
from visa.mapping import AxisSet
from visa.stream.stages import AccumulationTensor, CastTensor, CollectTensor, VectorFinalTensor
from visa.testing import make_stream, stream_logical

FLOATS = [(dt.bf16, ml_dtypes.bfloat16), (dt.f16, np.float16), (dt.f8e4m3, ml_dtypes.float8_e4m3fn),
          (dt.f8e5m2, ml_dtypes.float8_e5m2)]
INTS = [(dt.i8, np.int8), (dt.i16, np.int16), (dt.i4, ml_dtypes.int4)]


def _stream(cls: type[Any], dtype: type[dt.Scalar], time: str, packet: str, arr: Any, axes: str,
            sizes: dict[str, int], tu: str = "main") -> Any:
    m = AxisSet(**sizes).m
    ctx = Context.acquire()
    layout = StreamLayout(dtype, m["1"], m["1"], m["1"], m[time], m[packet])
    return make_stream(getattr(ctx, tu), cls, layout, arr, axes=axes), m


def test_t50_single_flit_i32_to_i8_L6786_L6802() -> None:
    arr = np.arange(-16, 16, dtype=np.int32).reshape(4, 8) * 37
    s, m = _stream(CollectTensor, dt.i32, "B", "A", arr, "B A", dict(B=4, A=8))
    out = s.cast(dt.i8, m["A # 32"])
    assert isinstance(out, CastTensor) and out.layout.time == m["B"] and out.dtype is dt.i8
    np.testing.assert_array_equal(stream_logical(out, axes="B A"), arr.astype(np.int8))
    assert not out.data.known[..., 8:].any(), "the padding the engine adds is poison"
    report = out.reports[-1]
    assert report.engine == "cast" and report.cycles == 4


def test_t51_padded_input_packet_L6803_L6815() -> None:
    arr = np.array([1, -2, 300, -129], dtype=np.int32)
    s, m = _stream(CollectTensor, dt.i32, "1", "A # 8", arr, "A", dict(A=4))
    out = s.cast(dt.i8, m["A # 32"])
    assert stream_logical(out, axes="A").tolist() == [1, -2, 44, 127]   # i32 → i8 wraps (as numpy astype)


def test_f32_to_bf16_after_accumulation_L2180_L2184() -> None:
    arr = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    s, m = _stream(AccumulationTensor, dt.f32, "M", "N", arr, "M N", dict(M=16, N=8))
    out = s.cast(dt.bf16, m["N # 16"])
    got = stream_logical(out, axes="M N")
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16), arr.astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.mark.parametrize("dst, ref", FLOATS, ids=[d.name for d, _ in FLOATS])
def test_float_rounding_bit_exact_against_ml_dtypes(dst: type[dt.Scalar], ref: Any) -> None:
    """Round to nearest even, overflow to ±inf (NaN for f8e4m3), over random f32 bit patterns (NaN payloads of f16
    aside: the engine gives the canonical quiet NaN, numpy keeps the payload)."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**32, size=(64, 8), dtype=np.uint64).astype(np.uint32).view(np.float32)
    x[0, :8] = np.array([0.0, -0.0, np.inf, -np.inf, 448.0, 464.0, 65520.0, 3.4e38], dtype=np.float32)
    n = 32 // (dst.size_bits // 8)
    sizes = dict(T=64, P=8)
    s, m = _stream(VectorFinalTensor, dt.f32, "T", "P", x, "T P", sizes)
    out = s.cast(dst, m[f"P # {n}"])
    got = out.data.values.reshape(64, n)[:, :8]
    with np.errstate(all="ignore"):
        want = x.astype(ref)
    nan = np.isnan(x)
    np.testing.assert_array_equal(got.view(dst.bits_dtype)[~nan], want.view(dst.bits_dtype)[~nan])
    assert np.isnan(got[nan].astype(np.float32)).all()
    assert np.array_equal(np.signbit(got[nan].astype(np.float32)), np.signbit(x[nan]))


@pytest.mark.parametrize("dst, ref", INTS, ids=[d.name for d, _ in INTS])
def test_int_wrap_bit_exact_against_numpy(dst: type[dt.Scalar], ref: Any) -> None:
    x = np.random.default_rng(2).integers(-2**31, 2**31, size=(16, 8), dtype=np.int64).astype(np.int32)
    n = 256 // dst.size_bits
    s, m = _stream(CollectTensor, dt.i32, "T", "P", x, "T P", dict(T=16, P=8))
    out = s.cast(dst, m[f"P # {n}"])
    np.testing.assert_array_equal(stream_logical(out, axes="T P").astype(np.int64), x.astype(ref).astype(np.int64))


@settings(max_examples=60, deadline=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=8, max_size=8), which=st.sampled_from(range(4)))
def test_float_cast_property(bits: list[int], which: int) -> None:
    dst, ref = FLOATS[which]
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    cfg = C.plan(RNGD, dt.f32, dst, AxisSet(P=8).m["P"], AxisSet(P=8).m[f"P # {256 // dst.size_bits}"],
                 AxisSet().m["1"])
    from visa.engines.common import StreamData
    out = C.execute(cfg, StreamData(x.reshape(1, 1, 1, 1, 8), np.ones((1, 1, 1, 1, 8), bool)))
    got = out.values.reshape(-1)[:8]
    with np.errstate(all="ignore"):
        want = x.astype(ref)
    for g, w, v in zip(got, want, x, strict=True):
        if np.isnan(v):
            assert np.isnan(np.float32(g))
        else:
            assert np.asarray(g).view(dst.bits_dtype) == np.asarray(w).view(dst.bits_dtype)


def test_e20_refusals_L6776_L6784() -> None:
    m = AxisSet(A=8, B=4, C=16).m
    with pytest.raises(DtypeError) as err:        # f32 → i8 is not a Cast Engine pair
        C.plan(RNGD, dt.f32, dt.i8, m["A"], m["A # 32"], m["B"])
    assert "L6774" in str(err.value) and "RNGD" in str(err.value)
    with pytest.raises(DtypeError):
        C.plan(RNGD, dt.bf16, dt.f8e4m3, m["C"], m["C # 32"], m["B"])
    with pytest.raises(HardwareLimitError) as herr:   # input packet of 16 bytes
        C.plan(RNGD, dt.i32, dt.i8, m["B"], m["B # 32"], m["1"])
    assert herr.value.level == "Packet" and herr.value.axis == "B"
    with pytest.raises(HardwareLimitError) as herr:   # output packet of 16 bytes
        C.plan(RNGD, dt.i32, dt.i8, m["A"], m["A # 16"], m["1"])
    assert herr.value.level == "Packet"
    with pytest.raises(LayoutError) as lerr:          # OutPacket names other data than the input
        C.plan(RNGD, dt.f32, dt.bf16, m["A"], m["B # 16"], m["1"])
    assert lerr.value.level == "Packet"


def test_cast_on_the_sub_context_is_refused() -> None:
    arr = np.zeros(8, dtype=np.int32)
    s, m = _stream(CollectTensor, dt.i32, "1", "A", arr, "A", dict(A=8), tu="sub")
    with pytest.raises(TypestateError):
        s.cast(dt.i8, m["A # 32"])


def test_poisoned_inputs_stay_poisoned() -> None:
    arr = np.arange(8, dtype=np.float32)
    s, m = _stream(CollectTensor, dt.f32, "1", "A", arr, "A", dict(A=8))
    s.data.known[..., 3] = False
    s.data.values[..., 3] = np.nan
    out = s.cast(dt.f8e4m3, m["A # 32"])
    assert out.data.known.reshape(-1)[:8].tolist() == [True] * 3 + [False] + [True] * 4
