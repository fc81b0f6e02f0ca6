"""The fast paths of visa.dtypes give exactly the bits of the reference paths.

``random_values`` rounds down with a cast instead of searching the table of representable values
(``HostTensor.rand``, manual L52); ``convert`` between floats uses numpy's/ml_dtypes' cast, which rounds once to
nearest even and overflows to ±inf as the exact encoder does (NaN payloads aside, which take the exact path).
"""

from __future__ import annotations

import numpy as np
import pytest

from visa import dtypes as dt

SMALL_FLOATS = [dt.bf16, dt.f16, dt.f8e4m3, dt.f8e5m2]


def _by_table(f: type[dt.FloatScalar], u: np.ndarray, flo: float, fhi: float) -> np.ndarray:
    table = dt.representable_values(f)
    inside = table[(table >= flo) & (table < fhi)]
    idx = np.clip(np.searchsorted(inside, u, side="right") - 1, 0, inside.size - 1)
    return dt.as_storage(f, inside[idx])


@pytest.mark.parametrize("f", SMALL_FLOATS)
@pytest.mark.parametrize("low,high", [(None, None), (-1e-6, 1e-6), (-0.3, 0.7), (0.1, 0.2), (-3e-3, -1e-3),
                                      (-448.0, 448.0)])
def test_random_values_round_down_as_the_table_does(f: type[dt.FloatScalar], low: float | None,
                                                    high: float | None) -> None:
    flo, fhi = (-2.0, 2.0) if low is None else (low, high)
    if fhi > f.max:
        pytest.skip("outside the type's range")
    got = dt.random_values(f, (20000,), np.random.default_rng(3), low=low, high=high)
    u = np.random.default_rng(3).uniform(flo, fhi, size=(20000,))
    want = _by_table(f, u, flo, fhi)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f.bits_dtype), want.view(f.bits_dtype))


@pytest.mark.parametrize("src", [dt.f32, dt.bf16, dt.f16])
@pytest.mark.parametrize("dst", [dt.bf16, dt.f16, dt.f8e5m2, dt.f32])
def test_float_casts_round_as_the_exact_encoder(src: type[dt.FloatScalar], dst: type[dt.FloatScalar]) -> None:
    rng = np.random.default_rng(7)
    pats = np.concatenate([rng.integers(0, 1 << 32, 50000, dtype=np.uint64).astype(np.uint32),
                           (np.arange(1 << 16, dtype=np.uint32) << 16) | 0x8000,  # ties of bf16
                           np.arange(1 << 12, dtype=np.uint32)])  # subnormals
    x = pats.view(np.float32)
    x = x[~np.isnan(x)]
    with np.errstate(over="ignore"):
        vals = x.astype(src.storage)
    vals = vals[~np.isnan(vals.astype(np.float32))]
    got = dt.convert(vals, src, dst)
    want = dt._decode_bits_to_storage(dt._encode_float(vals.astype(np.float64), dst, "nearest_even", "inf"), dst)
    np.testing.assert_array_equal(got.view(dst.bits_dtype), want.view(dst.bits_dtype))
    nan = dt.convert(np.array([np.nan, -np.nan], dtype=src.storage), src, dst)  # canonical NaNs, sign kept
    assert nan.view(dst.bits_dtype).tolist() == [dst.nan_bits, dst.nan_bits | (1 << (dst.bits - 1))]
