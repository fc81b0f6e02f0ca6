"""``dtypes.int-convert`` (visa/fast_dtypes.py) against the reference integer conversion of
:func:`visa.dtypes.convert` (issue 24): every integer type pair and overflow mode gives the same values and
storage type with the path on and off, and the same refusal for a value out of range with ``overflow="error"``
(types, ranges and two's complement: L1962–1979; the Cast Engine's wrapping: docs/manual-notes.md
"Cast Engine"), through the Cast Engine and the Fetch Adapter's widening as well."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, fastpaths, i4, i5, i8, i9, i16, i32
from visa import dtypes as dt
from visa.engines import cast
from visa.engines.common import StreamData
from visa.errors import DtypeError

INTS = [i4, i5, i8, i9, i16, i32]


def _values(rng: np.random.Generator, src: type, n: int) -> np.ndarray:
    x = rng.integers(src.min, src.max, size=n, endpoint=True).astype(src.storage)
    ends = np.array([src.min, src.max, 0, -1, 1], dtype=np.int64)
    x[: min(n, ends.size)] = ends[: min(n, ends.size)]
    return x


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(INTS), st.sampled_from(INTS), st.sampled_from(["wrap", "saturate", "error"]),
       st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_integer_conversions_are_the_reference(src: type, dst: type, overflow: str, n: int, seed: int) -> None:
    x = _values(np.random.default_rng(seed), src, n)
    try:
        want = dt.convert(x, src, dst, overflow=overflow)
    except DtypeError as e:
        with pytest.raises(DtypeError) as err:
            with fastpaths.disabled("dtypes.int-convert"):
                dt.convert(x, src, dst, overflow=overflow)
        assert str(err.value) == str(e)
        return
    with fastpaths.disabled("dtypes.int-convert"):
        reference = dt.convert(x, src, dst, overflow=overflow)
    assert want.dtype == reference.dtype == dst.storage and np.array_equal(want, reference)


def test_out_of_range_with_error_is_the_references_refusal() -> None:
    x = np.array([1, 300, -2], dtype=np.int32)
    with pytest.raises(DtypeError, match="value 300 is outside i8's range"):
        dt.convert(x, i32, i8, overflow="error")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([i4, i8, i16]), st.integers(1, 40), st.integers(0, 2**32 - 1), st.booleans())
def test_the_cast_engines_narrowing_is_the_reference(dst: type, steps: int, seed: int, poison: bool) -> None:
    """The Cast Engine (L6756–6819) narrows i32 with wrapping: the same lanes, known-mask and padding."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-(2**31), 2**31, size=(1, 2, 3, steps, 8), dtype=np.int64).astype(np.int32)
    known = rng.random(values.shape) > 0.2 if poison else np.ones(values.shape, dtype=bool)
    m = AxisSet(L=8, T=steps).m
    plan = cast.plan(RNGD, i32, dst, m["L"], m[f"L # {256 // dst.size_bits}"], m["T"])

    def run() -> list[np.ndarray]:
        out = cast.execute(plan, StreamData(values, known))
        return [np.asarray(out.values).copy(), np.asarray(out.known).copy()]

    fast = run()
    with fastpaths.disabled("dtypes.int-convert"):
        reference = run()
    for got, want in zip(fast, reference, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    low = values.astype(np.int64) & ((1 << dst.bits) - 1)  # the low bits, two's complement
    signed = np.where(low >= 1 << (dst.bits - 1), low - (1 << dst.bits), low)
    assert np.array_equal(np.where(known, fast[0][..., :8], 0), np.where(known, signed, 0))


FLOATS = [dt.bf16, dt.f16, dt.f32, dt.f8e4m3, dt.f8e5m2]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FLOATS), st.sampled_from(FLOATS), st.integers(1, 300), st.integers(0, 2**32 - 1),
       st.sampled_from(["none", "nan", "inf", "huge"]))
def test_float_casts_are_the_reference(src: type, dst: type, n: int, seed: int, special: str) -> None:
    """``dtypes.float-nan-after``: every float pair gives the reference's bits, NaN (made canonical, sign kept),
    ±inf and values beyond the destination's range included."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, size=n)).astype(np.float32)
    if special == "nan":
        x[rng.integers(0, n)] = -np.nan
        x[rng.integers(0, n)] = np.nan
    elif special == "inf":
        x[rng.integers(0, n)] = -np.inf
    elif special == "huge":
        x[rng.integers(0, n)] = 1e30
    vals = dt.convert(x, dt.f32, src, overflow="saturate" if src is dt.f8e4m3 else None)

    def bits(a: np.ndarray) -> np.ndarray:
        return a.view(np.dtype(f"u{a.dtype.itemsize}"))

    try:
        want = dt.convert(vals, src, dst)
    except DtypeError as e:
        with pytest.raises(DtypeError) as err, fastpaths.disabled("dtypes.float-nan-after"):
            dt.convert(vals, src, dst)
        assert str(err.value) == str(e)
        return
    with fastpaths.disabled("dtypes.float-nan-after"):
        reference = dt.convert(vals, src, dst)
    assert want.dtype == reference.dtype == np.dtype(dst.storage) and np.array_equal(bits(want), bits(reference))


def test_a_bf16_nan_widens_to_the_canonical_f32_nan() -> None:
    """A bf16 NaN with a payload becomes f32 0x7fc00000 with its sign (the reference's canonical NaN)."""
    x = np.array([0x7F81, 0xFFC1, 0x3F80], dtype=np.uint16).view(dt.bf16.storage)
    got = dt.convert(x, dt.bf16, dt.f32).view(np.uint32).tolist()
    assert got == [0x7FC00000, 0xFFC00000, 0x3F800000]
