"""The fast paths of visa.dtypes give exactly the bits of the reference paths.

``random_values`` rounds down with a cast instead of searching the table of representable values
(``HostTensor.rand``, manual L52); ``convert`` between floats uses numpy's/ml_dtypes' cast, which rounds once to
nearest even and overflows to ±inf as the exact encoder does (NaN payloads aside, which take the exact path).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

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


# ----------------------------------------------------------------------------------------------------------
# random_values against the cast-and-step implementation it replaced (issue 15): the same bits and the same
# generator state after the call, for every float type and every range


def _reference_round_down(f: type[dt.FloatScalar], u: np.ndarray, lowest: float) -> np.ndarray:
    """The round-down of visa.dtypes before issue 15: cast to ``f`` (a neighbour of ``u``), step the upper
    neighbour down by one pattern, fold -0 into +0, raise to ``lowest``."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = u.astype(f.storage)
    bits = v.view(f.bits_dtype)
    up = np.flatnonzero(v.astype(np.float64).reshape(-1) > u.reshape(-1))
    flat = bits.reshape(-1)
    b = flat[up].astype(np.int64)
    above = v.reshape(-1)[up].astype(np.float64)
    sign = 1 << (f.bits - 1)
    flat[up] = np.where(above > 0, b - 1, np.where(above < 0, b + 1, sign | 1)).astype(f.bits_dtype)
    flat[flat == sign] = 0
    low = int(dt._encode_float(np.array([lowest]), f, "nearest_even", "nan")[0])
    np.copyto(bits, np.asarray(low, dtype=f.bits_dtype), where=u < lowest)
    return bits.view(f.storage)


def _reference_random_values(f: type[dt.FloatScalar], shape: int | tuple[int, ...], rng: np.random.Generator,
                             low: float | None = None, high: float | None = None) -> np.ndarray:
    """The float path of ``random_values`` before issue 15 (its range checks raise the same errors)."""
    flo = -2.0 if low is None else float(low)
    fhi = 2.0 if high is None else float(high)
    if not (np.isfinite(flo) and np.isfinite(fhi)) or not f.min <= flo < fhi <= f.max:
        raise dt.DtypeError("outside")
    u = rng.uniform(flo, fhi, size=shape)
    if f.bits <= 16:
        table = dt.representable_values(f)
        inside = table[(table >= flo) & (table < fhi)]
        if inside.size == 0:
            raise dt.DtypeError("empty")
        return _reference_round_down(f, u, float(inside[0]))
    v = u.astype(np.float32)
    v = np.where(v >= fhi, np.nextafter(v, np.float32(-np.inf)), v)
    v = np.where(v < flo, np.nextafter(v, np.float32(np.inf)), v)
    return (v + np.float32(0.0)).astype(np.float32)


FLOATS = [d for d in dt.SCALARS.values() if issubclass(d, dt.FloatScalar)]


def _same_as_reference(f: type[dt.FloatScalar], shape: int | tuple[int, ...], seed: int, low: float | None,
                       high: float | None) -> None:
    rng_new, rng_ref = np.random.default_rng(seed), np.random.default_rng(seed)
    try:
        want = _reference_random_values(f, shape, rng_ref, low, high)
    except dt.DtypeError:
        with pytest.raises(dt.DtypeError):
            dt.random_values(f, shape, rng_new, low=low, high=high)
        return
    got = dt.random_values(f, shape, rng_new, low=low, high=high)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f.bits_dtype), want.view(f.bits_dtype))
    assert rng_new.bit_generator.state == rng_ref.bit_generator.state  # the same draws consumed


@st.composite
def _ranges(draw: st.DrawFn) -> tuple[type[dt.FloatScalar], float, float]:
    """A float type and a range [low, high) of the kinds that exercise the round-down: anywhere, straddling
    0, a few float64 or format steps wide, at the format's extremes, among its subnormals, on its values."""
    f = draw(st.sampled_from(FLOATS))
    big, sn, ss = f.max, f.smallest_normal, f.smallest_subnormal
    scale = draw(st.sampled_from([big, 4.0, 1.0, 4 * sn, 2 * sn, sn, 8 * ss, ss]))
    point = st.floats(-scale, scale, allow_nan=False)
    if f.bits <= 16:  # exact values of the format and their float64 neighbours
        table = dt.representable_values(f)
        near = table[(table >= -scale) & (table <= scale)]
        point = st.one_of(point, st.sampled_from(near.tolist()).flatmap(
            lambda v: st.sampled_from([v, float(np.nextafter(v, -np.inf)), float(np.nextafter(v, np.inf))])))
    low = draw(point)
    kind = draw(st.sampled_from(["any", "ulps", "straddle"]))
    if kind == "ulps":  # a few float64 steps, or a few of the format's smallest steps, above low
        step = draw(st.sampled_from([abs(float(np.spacing(low))), ss, abs(low) * 2.0 ** -f.mantissa_bits]))
        high = low + step * draw(st.integers(1, 4))
    elif kind == "straddle":
        low, high = -abs(low), draw(st.floats(0.0, scale, allow_nan=False))
    else:
        high = draw(point)
    low, high = max(-big, min(low, high)), min(big, max(low, high))
    assume(low < high)
    return f, low, high


@settings(max_examples=400, deadline=None)
@given(_ranges(), st.integers(0, 2**32 - 1), st.sampled_from([1, 7, 64, (3, 5)]))
def test_random_values_match_the_cast_and_step_reference(case: tuple[type[dt.FloatScalar], float, float],
                                                         seed: int, shape: int | tuple[int, ...]) -> None:
    f, low, high = case
    _same_as_reference(f, shape, seed, low, high)


@pytest.mark.parametrize("f", FLOATS)
def test_random_values_defaults_match_the_reference(f: type[dt.FloatScalar]) -> None:
    _same_as_reference(f, (2, 3, 4), 11, None, None)
    _same_as_reference(f, (), 12, None, None)
    _same_as_reference(f, 0, 13, None, None)


@pytest.mark.parametrize("f", [dt.bf16, dt.f8e4m3])
@pytest.mark.parametrize("low,high", [(None, None), (-0.3, 0.7), (-448.0, 448.0), (-0.02, 0.01), (1e-3, 3e-3)])
def test_random_values_a_million_draws_match_the_reference(f: type[dt.FloatScalar], low: float | None,
                                                           high: float | None) -> None:
    _same_as_reference(f, (1000, 1000), 2024, low, high)


@pytest.mark.parametrize("low,high", [(-2.0, 2.0), (-0.3, 0.7), (1e-300, 3e-300), (-3.4e38, 3.4e38),
                                      (-1e-6, -1e-7), (5.0, 5.000000000000001)])
def test_random_draws_are_those_of_rng_uniform(low: float, high: float) -> None:
    """random_values draws ``low + (high - low) * rng.random()`` in place of ``rng.uniform(low, high)``: the
    same doubles (numpy computes uniform so, without a fused multiply-add)."""
    u = np.random.default_rng(5).uniform(low, high, size=200_000)
    r = np.random.default_rng(5).random(size=200_000)
    np.multiply(r, high - low, out=r)
    np.add(r, low, out=r)
    np.testing.assert_array_equal(r.view(np.uint64), u.view(np.uint64))
