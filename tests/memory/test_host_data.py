"""Host data never becomes a silently wrong number (issue 16; docs/manual-notes.md, "hardening (issue 16)").

``HostTensor.from_numpy`` refuses a value its dtype cannot hold (out of range, an infinity where the type has
none — f8e4m3 is E4M3FN, seed 000 — and complex input) unless ``overflow=`` says how to convert; ``.values``,
``.numpy()`` and ``.logical()`` never return poison as a number, and their refusals name the tensor and the
operation that filled it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, f8e4m3, f8e5m2, f16, f32, i4, i8, i16, i32
from visa.errors import DtypeError, PoisonError, WrongTypeError

ax = AxisSet(A=4, P=6)
m = ax.m
FLOATS = [(bf16, 3.3895313892515355e38), (f16, 65504.0), (f8e4m3, 448.0), (f8e5m2, 57344.0),
          (f32, 3.4028234663852886e38)]


@pytest.mark.parametrize(("dtype", "value"), [(bf16, 1e39), (f16, 1e6), (f8e4m3, 1000.0), (f8e5m2, 1e6),
                                              (f32, 1e39), (f8e4m3, np.inf), (f8e4m3, -np.inf)])
def test_out_of_range_floats_are_refused_by_default(dtype: type, value: float) -> None:
    with pytest.raises(DtypeError) as err:
        HostTensor.from_numpy(np.array([value, 0, 0, 0]), dtype, m["A"])
    assert err.value.call == "HostTensor.from_numpy" and "overflow='saturate'" in (err.value.fix or "")
    assert repr(dtype) in str(err.value)


@pytest.mark.parametrize(("dtype", "top"), FLOATS)
def test_saturate_clamps_to_the_largest_finite_value(dtype: type, top: float) -> None:
    t = HostTensor.from_numpy(np.array([1e300, -1e300, np.inf, -np.inf]), dtype, m["A"], overflow="saturate")
    assert t.numpy().astype(np.float64).tolist() == [top, -top, top, -top]


def test_inf_and_nan_modes_are_what_the_plain_cast_gives() -> None:
    assert np.isinf(HostTensor.from_numpy(np.array([1e6, 0, 0, 0]), f16, m["A"], overflow="inf").numpy()[0])
    assert np.isnan(float(HostTensor.from_numpy(np.array([1e3, 0, 0, 0]), f8e4m3, m["A"], overflow="nan").numpy()[0]))
    with pytest.raises(DtypeError, match="no infinity"):
        HostTensor.from_numpy(np.array([1e3, 0, 0, 0]), f8e4m3, m["A"], overflow="inf")
    with pytest.raises(DtypeError, match="integer types"):
        HostTensor.from_numpy(np.array([1e3, 0, 0, 0]), f16, m["A"], overflow="wrap")


def test_nan_is_kept_and_values_within_range_round_to_nearest() -> None:
    t = HostTensor.from_numpy(np.array([np.nan, 448.5, 449.0, -0.1]), f8e4m3, m["A"])  # 448.5 rounds to 448
    got = t.numpy().astype(np.float64)
    assert np.isnan(got[0]) and got[1] == 448.0 and got[2] == 448.0 and got[3] == pytest.approx(-0.1015625)


def test_complex_input_is_refused() -> None:
    for dtype in (f32, bf16, i32):
        with pytest.raises(DtypeError, match="imaginary part"):
            HostTensor.from_numpy(np.array([1 + 2j, 0, 0, 0]), dtype, m["A"])
    with pytest.raises(DtypeError, match="imaginary part"):  # even with an overflow mode: no silent .real
        HostTensor.from_numpy(np.array([1 + 0j, 0, 0, 0]), f32, m["A"], overflow="saturate")


@pytest.mark.parametrize("dtype", [i4, i8, i16])
def test_integers_are_refused_out_of_range_or_wrapped_or_saturated_on_request(dtype: type) -> None:
    lo, hi = dtype.min, dtype.max  # type: ignore[attr-defined]
    data = np.array([hi + 1, lo - 1, 3 * (hi + 1) + 5, 0])
    with pytest.raises(DtypeError, match="outside"):
        HostTensor.from_numpy(data, dtype, m["A"])
    span = hi - lo + 1
    wrapped = [((int(v) - lo) % span) + lo for v in data]
    assert HostTensor.from_numpy(data, dtype, m["A"], overflow="wrap").numpy().tolist() == wrapped
    assert HostTensor.from_numpy(data, dtype, m["A"], overflow="saturate").numpy().tolist() == [hi, lo, hi, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=4, max_size=4),
       st.sampled_from([d for d, _ in FLOATS]))
def test_no_value_changes_kind_silently(values: list[float], dtype: type) -> None:
    """Against brute force: a finite value gives a finite one, ±inf stays ±inf (or is refused), NaN stays NaN."""
    arr = np.array(values)
    try:
        got = HostTensor.from_numpy(arr, dtype, m["A"]).numpy().astype(np.float64)
    except DtypeError:
        with np.errstate(over="ignore", invalid="ignore"):
            plain = arr.astype(dtype.storage).astype(np.float64)
        assert ((np.isfinite(arr) & ~np.isfinite(plain)) | (np.isinf(arr) & np.isnan(plain))).any()
        return
    assert (np.isnan(got) == np.isnan(arr)).all()
    assert (np.isinf(got) == np.isinf(arr)).all()
    finite = np.isfinite(arr)
    with np.errstate(over="ignore"):
        assert (got[finite] == arr[finite].astype(dtype.storage).astype(np.float64)).all()


def test_values_never_returns_poison_and_names_the_tensor_and_the_operation() -> None:
    ctx = Context.acquire()
    unwritten = HbmTensor.from_addr(ctx, i32, m["1"], m["A"], 1 << 20)  # nothing was ever written there
    back = unwritten.to_host(m["A"], ctx.pdma)
    for read in (lambda: back.values, lambda: back.numpy()):
        with pytest.raises(PoisonError) as err:
            read()
        text = str(err.value)
        assert 'HostTensor[i32, m["A"]]' in text and "hbm.to_host (ctx.pdma)" in text and "@ 1048576" in text
    with pytest.raises(PoisonError, match=r'HbmTensor\[i32, m\["1"\], m\["A"\]\] @ 1048576'):
        unwritten.logical()
    good = HostTensor.from_numpy(np.arange(4), i32, m["A # 6"])  # padding reads 0; it holds no index
    assert good.values.tolist() == [0, 1, 2, 3, 0, 0] and not good.values.flags.writeable
    raw, known = good.buffer()
    assert known.tolist() == [True] * 4 + [False] * 2


def test_from_numpy_names_wrong_types() -> None:
    with pytest.raises(WrongTypeError, match="parameter dtype must be a visa element type"):
        HostTensor.from_numpy(np.arange(4), np.int32, m["A"])  # type: ignore[arg-type]
    with pytest.raises(WrongTypeError, match="parameter mapping must be a mapping"):
        HostTensor.from_numpy(np.arange(4), i32, "A")  # type: ignore[arg-type]
    with pytest.raises(WrongTypeError, match="parameter overflow must be one of"):
        HostTensor.from_numpy(np.arange(4), i32, m["A"], overflow="clip")


def test_float16_input_saturates_to_the_types_range() -> None:
    """``overflow="saturate"`` clamps ±inf of a float16 array to ±max of f32 and bf16 (review of issue 15: the
    clip bounds were rounded to float16, which made them ±inf)."""
    ax = AxisSet(A=4)
    x = np.array([np.inf, -np.inf, 1.0, 0.0], dtype=np.float16)
    for dtype in (f32, bf16):
        got = HostTensor.from_numpy(x, dtype, ax.m["A"], overflow="saturate").numpy().astype(np.float64)
        assert got.tolist() == [float(dtype.max), -float(dtype.max), 1.0, 0.0]


@pytest.mark.parametrize("dtype", [bf16, f16, f8e4m3, f8e5m2, f32])
def test_an_array_of_the_types_storage_is_taken_bit_for_bit(dtype: type) -> None:
    """Every bit pattern of the type, passed as an array of its storage type (what ``HostTensor.rand`` makes):
    kept exactly (−0 and NaN payloads included); ``overflow='saturate'`` still clamps ±inf."""
    bits = np.arange(1 << min(16, 8 * np.dtype(dtype.storage).itemsize), dtype=np.int64)
    if np.dtype(dtype.storage).itemsize == 4:
        bits = np.concatenate([bits, np.array([0x7F800000, 0xFF800000, 0x80000000, 0x7F7FFFFF], np.int64)])
    pad = -bits.size % 24
    pattern = np.concatenate([bits, np.zeros(pad, np.int64)]).astype(dtype.bits_dtype)
    arr = pattern.view(dtype.storage)
    ax2 = AxisSet(A=arr.size)
    got = HostTensor.from_numpy(arr, dtype, ax2.m["A"]).buffer()[0].view(dtype.bits_dtype)
    np.testing.assert_array_equal(got, pattern)
    if dtype.has_inf:
        inf = np.array([np.inf, -np.inf], np.float64).astype(dtype.storage)
        out = HostTensor.from_numpy(inf, dtype, AxisSet(A=2).m["A"], overflow="saturate").numpy()
        assert np.asarray(out, np.float64).tolist() == [float(dtype.max), -float(dtype.max)]
