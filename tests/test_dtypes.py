"""Tests of visa.dtypes: sizes, byte images, exact conversions, representability, random values.

Conversions are checked bit for bit against ml_dtypes / numpy (which round float32 sources once, correctly)
and against brute-force references built from the list of every value of a type; tests that come from the
manual cite its line, tests from the fp8 seed cite seed 000.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.dtypes import (
    ALIASES,
    SCALARS,
    DtypeError,
    FloatScalar,
    IntScalar,
    Scalar,
    as_storage,
    bf16,
    convert,
    f8e4m3,
    f8e5m2,
    f16,
    f32,
    from_bits,
    from_bytes,
    i4,
    i5,
    i8,
    i9,
    i16,
    i32,
    is_representable,
    random_values,
    representable_values,
    scalar,
    to_bits,
    to_bytes,
)
from visa.errors import VisaError

ALL = [i4, i5, i8, i9, i16, i32, bf16, f16, f32, f8e4m3, f8e5m2]
INTS: list[type[IntScalar]] = [i4, i5, i8, i9, i16, i32]
FLOATS: list[type[FloatScalar]] = [bf16, f16, f32, f8e4m3, f8e5m2]
SMALL_FLOATS: list[type[FloatScalar]] = [bf16, f16, f8e4m3, f8e5m2]
REFERENCE = {bf16: ml_dtypes.bfloat16, f16: np.float16, f32: np.float32,
             f8e4m3: ml_dtypes.float8_e4m3fn, f8e5m2: ml_dtypes.float8_e5m2}  # fmt: skip
RNG_SEED = 20240611


def bits_of(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Bit patterns of a float array of 1, 2 or 4 bytes per element."""
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def all_patterns(d: type[Scalar]) -> npt.NDArray[Any]:
    """Every bit pattern of an 8- or 16-bit float type, as values of its storage."""
    return np.arange(1 << d.bits, dtype=np.int64).astype(d.bits_dtype).view(d.storage)


def f32_sweep() -> npt.NDArray[np.float32]:
    """float32 values at every interesting place for the narrow float types.

    ±0, f32 subnormals, ±inf, NaNs with payloads, every value of each narrow type, the midpoints between
    neighbouring values and one f32 ulp either side of them, values at and beyond each max, and random
    bit patterns over the whole f32 range.
    """
    parts: list[npt.NDArray[np.float32]] = [
        np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 448, 464, 465, 480, 57344, 61440, 61441, 65504,
                  65519.99, 65520, 3.4e38, -3.4e38, 1e-45, -1e-45, 1.1754942e-38, 2.0**-149], np.float32),
        np.array([0x7FC00000, 0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x00000001, 0x807FFFFF, 0x7F7FFFFF],
                 np.uint32).view(np.float32),
    ]  # fmt: skip
    for d in SMALL_FLOATS:
        v = representable_values(d)
        mids = (v[:-1] + v[1:]) / 2  # exact in float64, and in float32 (at most 12 significant bits)
        extra = np.array([d.max, d.max * 1.0625, d.max * 1.125, d.max * 2, d.smallest_subnormal / 2,
                          d.smallest_subnormal / 4, d.smallest_subnormal * 0.75])  # fmt: skip
        for base in (v, mids, extra, -extra):
            with np.errstate(over="ignore"):
                b = base.astype(np.float32)
            parts += [b, np.nextafter(b, np.float32(np.inf)), np.nextafter(b, np.float32(-np.inf))]
    rng = np.random.default_rng(RNG_SEED)
    parts.append(rng.integers(0, 1 << 32, size=200_000, dtype=np.uint64).astype(np.uint32).view(np.float32))
    return np.concatenate(parts).astype(np.float32)


def assert_same_bits(got: npt.NDArray[Any], want: npt.NDArray[Any], dst: type[FloatScalar]) -> None:
    """Bit-exact equality, except that NaN must be dst's canonical quiet NaN with the reference's sign."""
    assert got.dtype == dst.storage
    g, w = bits_of(got).astype(np.int64), bits_of(np.asarray(want).astype(dst.storage)).astype(np.int64)
    sign = 1 << (dst.bits - 1)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(want.astype(np.float64))
    bad = np.nonzero(~nan & (g != w))[0]
    assert bad.size == 0, [(hex(int(g[i])), hex(int(w[i]))) for i in bad[:5]]
    assert np.array_equal(g[nan] & ~sign, np.full(int(nan.sum()), dst.nan_bits))


# ---------------------------------------------------------------------------------------------------------
# registry and attributes


def test_registry_has_the_manual_spellings() -> None:
    # manual L1962–1979 (fetch casts) and L2525 (DMA grammar, which spells f16 "fp16")
    assert list(SCALARS) == ["i4", "i5", "i8", "i9", "i16", "i32", "bf16", "f16", "f32", "f8e4m3", "f8e5m2", "f4e2m1"]
    for name, d in SCALARS.items():
        assert d.name == name and repr(d) == name and scalar(name) is d and scalar(d) is d
    assert scalar("fp16") is f16 and ALIASES["fp16"] is f16


def test_scalar_rejects_unknown_names_and_classes() -> None:
    for bad in ("u8", "int8", "", Scalar, IntScalar, int):
        with pytest.raises(DtypeError):
            scalar(bad)  # type: ignore[arg-type]
    assert issubclass(DtypeError, VisaError) and issubclass(DtypeError, ValueError)


def test_scalars_are_not_instantiated() -> None:
    with pytest.raises(TypeError, match="element type"):
        i32()


@pytest.mark.parametrize(
    "d, bits, size_bits, image_bits, lo, hi, storage",
    [
        (i4, 4, 4, 4, -8, 7, np.int8),
        (i5, 5, 4, 8, -16, 15, np.int8),  # i4 extended, counts as i4 (L4144, L4383)
        (i8, 8, 8, 8, -128, 127, np.int8),
        (i9, 9, 8, 16, -256, 255, np.int16),  # counts as i8 (L4383)
        (i16, 16, 16, 16, -(2**15), 2**15 - 1, np.int16),
        (i32, 32, 32, 32, -(2**31), 2**31 - 1, np.int32),
    ],
)
def test_int_attributes(d: type[IntScalar], bits: int, size_bits: int, image_bits: int, lo: int, hi: int,
                        storage: Any) -> None:  # fmt: skip
    assert (d.bits, d.size_bits, d.image_bits, d.min, d.max) == (bits, size_bits, image_bits, lo, hi)
    assert d.kind == "int" and d.signed and d.storage == np.dtype(storage)
    assert isinstance(d.min, int) and isinstance(d.max, int)


@pytest.mark.parametrize("d", FLOATS)
def test_float_attributes_match_ml_dtypes(d: type[FloatScalar]) -> None:
    info = cast(Any, ml_dtypes.finfo)(REFERENCE[d])
    assert d.kind == "float" and d.storage == np.dtype(REFERENCE[d]) and d.bits == info.bits
    assert d.max == float(info.max) and d.min == -d.max
    assert d.smallest_normal == float(info.smallest_normal)
    assert d.smallest_subnormal == float(info.smallest_subnormal)
    assert d.mantissa_bits == info.nmant and d.exponent_bits == info.nexp
    assert from_bits(d, [d.max_bits]).astype(np.float64)[0] == d.max
    assert np.isnan(from_bits(d, [d.nan_bits]).astype(np.float64)[0])
    if d.has_inf:
        assert from_bits(d, [d.inf_bits]).astype(np.float64)[0] == np.inf


def test_fp8_fields_from_seed_000() -> None:
    # seed 000, table 36.1: E4M3 bias 7, max 448; E5M2 bias 15, max 57344; E4M3FN: no inf, NaN = all ones
    assert (f8e4m3.exponent_bits, f8e4m3.mantissa_bits, f8e4m3.bias, f8e4m3.max) == (4, 3, 7, 448.0)
    assert (f8e5m2.exponent_bits, f8e5m2.mantissa_bits, f8e5m2.bias, f8e5m2.max) == (5, 2, 15, 57344.0)
    assert not f8e4m3.has_inf and f8e5m2.has_inf
    assert (f8e4m3.max_bits, f8e4m3.nan_bits) == (0x7E, 0x7F)  # "0x7e saturated maximum, 0x7f NaN"


# ---------------------------------------------------------------------------------------------------------
# sizes


def test_i4_is_half_a_byte() -> None:
    # manual L2229–2232: "64 i4 elements (32 bytes per packet)", "64 elements × 0.5 bytes = 32 bytes"
    assert i4.size_in_bytes_from_length(64) == 32 == i4.nbytes(64)
    assert i4.elements_per_bytes(32) == 64


@pytest.mark.parametrize("d, per_flit", [(i4, 64), (i5, 64), (i8, 32), (i9, 32), (f8e4m3, 32), (f8e5m2, 32),
                                         (bf16, 16), (f16, 16), (i16, 16), (f32, 8), (i32, 8)])  # fmt: skip
def test_elements_per_flit(d: type[Scalar], per_flit: int) -> None:
    # manual L6781–6786: Packet = [P # (32 / sizeof(D))]; L4383: 64 i4/i5, 32 i8/f8/i9, 16 bf16, 8 f32/i32
    assert d.elements_per_bytes(32) == per_flit
    assert d.size_in_bytes_from_length(per_flit) == 32


def test_trf_row_capacity() -> None:
    # manual L1089 (8 KB per Row) with L4140–4147: 128 rows × 2 bank columns × 64/32/16 elements per row
    for d, per_row in ((i4, 64), (i5, 64), (i8, 32), (i9, 32), (bf16, 16)):
        assert d.elements_per_bytes(8 * 1024) == 128 * 2 * per_row


def test_commit_truncation_sizes() -> None:
    # manual L2205–2232: commit_in_size of 8 i8, 4 f32, 8 bf16, 64 i4
    assert (i8.nbytes(8), f32.nbytes(4), bf16.nbytes(8), i4.nbytes(64)) == (8, 16, 16, 32)


def test_fetch_cast_sizes() -> None:
    # manual L2001–2017: i4→i32 with fetch_size 4 gives 32 bytes; fetch_size 8 gives 64; i8→i32 16 gives 64
    assert i32.nbytes(i4.elements_per_bytes(4)) == 32
    assert i32.nbytes(i4.elements_per_bytes(8)) == 64
    assert i32.nbytes(i8.elements_per_bytes(16)) == 64


def test_sizes_that_are_not_whole_bytes_raise() -> None:
    calls: list[Callable[[], int]] = [
        lambda: i4.nbytes(3),
        lambda: i5.size_in_bytes_from_length(1),
        lambda: i32.elements_per_bytes(6),
        lambda: i4.image_nbytes(5),
        lambda: i8.nbytes(-1),
        lambda: bf16.elements_per_bytes(-2),
    ]
    for call in calls:
        with pytest.raises(DtypeError):
            call()
    with pytest.raises(DtypeError, match="pad with `# 2`"):
        i4.nbytes(7)


def test_image_sizes() -> None:
    assert [d.image_nbytes(4) for d in ALL] == [2, 4, 4, 8, 8, 16, 8, 8, 16, 4, 4]
    assert [d.alignment for d in ALL] == [1, 1, 1, 1, 2, 4, 2, 2, 4, 1, 1]  # size_of::<D>(), manual L1071


# ---------------------------------------------------------------------------------------------------------
# byte images


def test_nibble_order() -> None:
    # the manual gives no nibble order (decision in docs/manual-notes.md): element 0 in the low nibble
    raw = to_bytes(i4, np.array([1, -2, 3, 4, -8, 7]))
    assert raw.dtype == np.uint8 and raw.tolist() == [0xE1, 0x43, 0x78]
    assert from_bytes(i4, raw, 6).tolist() == [1, -2, 3, 4, -8, 7]
    assert from_bytes(i4, raw).dtype == np.int8


def test_little_endian_images() -> None:
    assert to_bytes(i32, [0x12345678, -2]).tolist() == [0x78, 0x56, 0x34, 0x12, 0xFE, 0xFF, 0xFF, 0xFF]
    assert to_bytes(i16, [0x1234]).tolist() == [0x34, 0x12]
    assert to_bytes(i9, [-1, 255, -256]).tolist() == [0xFF, 0xFF, 0xFF, 0x00, 0x00, 0xFF]
    assert to_bytes(i5, [-16, 15, -1]).tolist() == [0xF0, 0x0F, 0xFF]
    assert to_bytes(f32, np.array([1.0], np.float32)).tolist() == [0, 0, 0x80, 0x3F]
    assert to_bytes(f16, np.array([1.0], np.float16)).tolist() == [0, 0x3C]
    assert to_bytes(f8e4m3, [-448.0, 1.0]).tolist() == [0xFE, 0x38]
    assert to_bytes(f8e5m2, [57344.0]).tolist() == [0x7B]


def test_image_errors() -> None:
    with pytest.raises(DtypeError):
        to_bytes(i4, [1, 2, 3])  # 1.5 bytes
    with pytest.raises(DtypeError):
        from_bytes(i32, np.zeros(5, np.uint8), 1)  # wrong length
    with pytest.raises(DtypeError):
        from_bytes(i32, np.zeros(6, np.uint8))  # not whole elements
    with pytest.raises(DtypeError):
        from_bytes(i8, np.zeros(4, np.int8), 4)  # not uint8
    with pytest.raises(DtypeError, match="sign extension"):
        from_bytes(i5, np.array([0x10], np.uint8), 1)  # 16 is not an i5
    with pytest.raises(DtypeError, match="sign extension"):
        from_bytes(i9, np.array([0x00, 0x01, 0x00, 0xFE], np.uint8))  # 256 and -512 are not i9
    with pytest.raises(DtypeError):
        from_bits(i4, [16])
    with pytest.raises(DtypeError):
        to_bytes(i8, [1.0])  # floats are not i8 values


@pytest.mark.parametrize("d", [i4, i5, i8, i9, i16, bf16, f16, f8e4m3, f8e5m2])
def test_every_bit_pattern_round_trips(d: type[Scalar]) -> None:
    bits = np.arange(1 << d.image_bits, dtype=np.int64)
    if d.kind == "int":  # images of i5 and i9 hold only sign extensions
        v = np.where(bits >= 1 << (d.image_bits - 1), bits - (1 << d.image_bits), bits)
        bits = bits[(v >= d.min) & (v <= d.max)]
        assert bits.size == 1 << d.bits
    values = from_bits(d, bits)
    raw = to_bytes(d, values)
    assert raw.size == d.image_nbytes(bits.size)
    back = from_bytes(d, raw, bits.size)
    assert np.array_equal(to_bits(d, back).astype(np.int64), bits)  # NaN payloads included


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.data())
def test_byte_images_round_trip(d: type[Scalar], data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 12)) * 2
    if d.kind == "int":
        vals = data.draw(st.lists(st.integers(int(d.min), int(d.max)), min_size=n, max_size=n))
        arr = as_storage(d, vals)
    else:
        pats = data.draw(st.lists(st.integers(0, (1 << d.bits) - 1), min_size=n, max_size=n))
        arr = from_bits(d, np.array(pats, np.int64))
    back = from_bytes(d, to_bytes(d, arr), n)
    assert back.dtype == d.storage
    assert np.array_equal(to_bits(d, back), to_bits(d, arr))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=0, max_size=16))
def test_f32_round_trip_keeps_nan_payloads(pats: list[int]) -> None:
    arr = np.array(pats, np.uint32).view(np.float32)
    back = from_bytes(f32, to_bytes(f32, arr), len(pats))
    assert back.view(np.uint32).tolist() == pats


def test_bf16_is_the_top_half_of_f32() -> None:
    # manual L8547 and L8589: a bf16 score in the upper 16 bits of a 32-bit word, recovered by ">> 16"
    v = representable_values(bf16).astype(np.float32)
    assert np.array_equal(to_bits(bf16, v), (to_bits(f32, v) >> 16).astype(np.uint16))


def test_e5m2_is_the_high_byte_of_f16() -> None:
    # seed 000: "E5M2 is the high byte of an fp16 value: the conversion to fp16 is a left shift of eight bits"
    pats = all_patterns(f8e5m2)
    finite = np.isfinite(pats.astype(np.float32))
    got = to_bits(f16, convert(pats[finite], f8e5m2, f16)).astype(np.int64)
    assert np.array_equal(got, bits_of(pats[finite]).astype(np.int64) << 8)


# ---------------------------------------------------------------------------------------------------------
# conversions: exact widenings


@pytest.mark.parametrize("src", SMALL_FLOATS)
def test_every_narrow_float_widens_to_f32_exactly(src: type[FloatScalar]) -> None:
    pats = all_patterns(src)
    assert_same_bits(convert(pats, src, f32), pats.astype(np.float32), f32)


@pytest.mark.parametrize("src", [f8e4m3, f8e5m2])
def test_fp8_to_bf16(src: type[FloatScalar]) -> None:
    # RNGD-S fetch casts f8e4m3→bf16, f8e5m2→bf16 (manual L1978–1979): exact
    pats = all_patterns(src)
    assert_same_bits(convert(pats, src, bf16), pats.astype(np.float32).astype(ml_dtypes.bfloat16), bf16)


@pytest.mark.parametrize(
    "src, dst",
    [(i4, i5), (i4, i32), (i8, i9), (i8, i32), (i16, i32),  # RNGD fetch casts, manual L1965–1967
     (i4, i9), (i4, i8), (i4, i16), (i8, i16), (i5, i9), (i9, i16)],  # RNGD-S L1976 and other widenings
)  # fmt: skip
def test_int_widenings_are_exact(src: type[IntScalar], dst: type[IntScalar]) -> None:
    v = np.arange(src.min, src.max + 1)
    out = convert(v, src, dst)
    assert out.dtype == dst.storage and np.array_equal(out, v)


def test_fetch_cast_example() -> None:
    # manual L1986–1988: i8 [0, 1, ..., 7] fetched as i32 [0, 1, ..., 7]
    out = convert(np.arange(8, dtype=np.int8), i8, i32)
    assert out.dtype == np.int32 and out.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]


def test_fetch_zero_point_example() -> None:
    # manual L2028–2029: i8 [0..7] with zero_point 10 gives i32 [-10, ..., -3]
    # L2117: the zero point fits the type
    assert is_representable(10, i8) and is_representable(10, i32)
    out = convert(np.arange(8, dtype=np.int8), i8, i32) - np.int32(10)
    assert out.dtype == np.int32 and out.tolist() == [-10, -9, -8, -7, -6, -5, -4, -3]
    # manual L2041–2043: zero points 100 and -100 for i8 inputs
    assert all(is_representable(z, d) for z in (100, -100) for d in (i8, i9, i32))
    # L2117: for i4→i5 the zero point must be an i5
    assert [is_representable(z, i5) for z in (-17, -16, 15, 16)] == [False, True, True, False]


# ---------------------------------------------------------------------------------------------------------
# conversions: float narrowing, bit-exact against ml_dtypes / numpy


@pytest.fixture(scope="module")
def sweep() -> npt.NDArray[np.float32]:
    return f32_sweep()


@pytest.mark.parametrize("dst", SMALL_FLOATS)
def test_f32_narrowing_default_mode(sweep: npt.NDArray[np.float32], dst: type[FloatScalar]) -> None:
    # cast engine precision lowering f32 → f8e5m2, f8e4m3, f16, bf16 (manual L6776–6779); fetch f32→bf16 L1972
    # default overflow: inf for IEEE types, NaN for E4M3FN (seed 000), round to nearest even
    with np.errstate(over="ignore", invalid="ignore"):
        want = sweep.astype(REFERENCE[dst])
    assert_same_bits(convert(sweep, f32, dst), want, dst)


@pytest.mark.parametrize("dst", SMALL_FLOATS)
def test_f32_narrowing_saturate(sweep: npt.NDArray[np.float32], dst: type[FloatScalar]) -> None:
    # saturate: beyond max (infinities included) clamps to ±max
    # (E4M3 "clamps to the maximum normal", seed 000)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.clip(sweep, np.float32(-dst.max), np.float32(dst.max)).astype(REFERENCE[dst])
    got = convert(sweep, f32, dst, overflow="saturate")
    assert_same_bits(got, want, dst)
    assert np.isfinite(got.astype(np.float32)[~np.isnan(sweep)]).all()


def test_e4m3_overflow_bytes_from_seed_000() -> None:
    # seed 000: "0x7e for the saturated maximum and 0x7f for NaN"; 1 selects saturate, 0 selects NaN
    x = np.array([1e6, -1e6, np.inf, -np.inf, 464.0, 464.0001, 480.0, -500.0], np.float32)
    sat = to_bits(f8e4m3, convert(x, f32, f8e4m3, overflow="saturate")).tolist()
    nan = to_bits(f8e4m3, convert(x, f32, f8e4m3, overflow="nan")).tolist()
    assert sat == [0x7E, 0xFE, 0x7E, 0xFE, 0x7E, 0x7E, 0x7E, 0xFE]
    assert nan == [0x7F, 0xFF, 0x7F, 0xFF, 0x7E, 0x7F, 0x7F, 0xFF]  # 464 is a tie, to even 448
    assert nan == to_bits(f8e4m3, convert(x, f32, f8e4m3)).tolist()  # NaN mode is the default
    with pytest.raises(DtypeError, match="no infinity"):
        convert(x, f32, f8e4m3, overflow="inf")
    with pytest.raises(DtypeError, match="overflows"):
        convert(x[:1], f32, f8e4m3, overflow="error")
    with pytest.raises(DtypeError, match="no infinity"):
        convert(x[2:3], f32, f8e4m3, overflow="error")


def test_e5m2_overflow_modes() -> None:
    # seed 000: E5M2 max 57344, f16→E5M2 rounds to nearest with an infinity clamp
    x = np.array([57344.0, 61439.0, 61440.0, 1e6, -np.inf, np.inf], np.float32)
    assert to_bits(f8e5m2, convert(x, f32, f8e5m2)).tolist() == [0x7B, 0x7B, 0x7C, 0x7C, 0xFC, 0x7C]
    assert to_bits(f8e5m2, convert(x, f32, f8e5m2, overflow="saturate")).tolist() == [0x7B] * 4 + [0xFB, 0x7B]
    assert to_bits(f8e5m2, convert(x, f32, f8e5m2, overflow="nan")).tolist() == [0x7B, 0x7B, 0x7E, 0x7E,
                                                                                  0xFC, 0x7C]  # fmt: skip
    assert to_bits(f8e5m2, convert(x[4:], f32, f8e5m2, overflow="error")).tolist() == [0xFC, 0x7C]
    with pytest.raises(DtypeError, match="overflows"):
        convert(x, f32, f8e5m2, overflow="error")


@pytest.mark.parametrize("src", [f16, bf16])
@pytest.mark.parametrize("dst", [f8e4m3, f8e5m2, f16, bf16])
def test_16_bit_narrowing_exhaustive(src: type[FloatScalar], dst: type[FloatScalar]) -> None:
    # every 16-bit pattern; the values are exact in float32, so ml_dtypes rounds them once
    pats = all_patterns(src)
    if src is dst:  # identity keeps every bit, NaN payloads included
        assert np.array_equal(bits_of(convert(pats, src, dst)), bits_of(pats))
        return
    with np.errstate(over="ignore", invalid="ignore"):
        want = pats.astype(np.float32).astype(REFERENCE[dst])
        assert_same_bits(convert(pats, src, dst), want, dst)
        if True:
            clipped = np.clip(pats.astype(np.float32), -dst.max, dst.max).astype(REFERENCE[dst])
            assert_same_bits(convert(pats, src, dst, overflow="saturate"), clipped, dst)


@pytest.mark.parametrize("src, dst", [(f8e4m3, f8e5m2), (f8e5m2, f8e4m3)])
def test_fp8_to_fp8_exhaustive(src: type[FloatScalar], dst: type[FloatScalar]) -> None:
    pats = all_patterns(src)
    with np.errstate(over="ignore", invalid="ignore"):
        want = pats.astype(np.float32).astype(REFERENCE[dst])
    assert_same_bits(convert(pats, src, dst), want, dst)


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=True, allow_infinity=True), st.sampled_from(SMALL_FLOATS))
def test_f32_narrowing_property(x: float, dst: type[FloatScalar]) -> None:
    a = np.array([x], np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        assert_same_bits(convert(a, f32, dst), a.astype(REFERENCE[dst]), dst)


def test_signed_zero_and_underflow() -> None:
    x = np.array([0.0, -0.0, -(2.0**-149), 2.0**-149], np.float32)  # the f32 subnormals underflow
    for d in SMALL_FLOATS:
        got = to_bits(d, convert(x, f32, d)).astype(np.int64)
        sign = 1 << (d.bits - 1)
        assert got.tolist() == [0, sign, sign, 0]


def test_nan_becomes_canonical_with_its_sign() -> None:
    # decision (docs/manual-notes.md): the manual gives no NaN payload rule; payloads survive only identity
    x = np.array([0x7F800001, 0xFFC00123, 0x7FFFFFFF], np.uint32).view(np.float32)
    for d in SMALL_FLOATS:
        sign = 1 << (d.bits - 1)
        assert to_bits(d, convert(x, f32, d)).tolist() == [d.nan_bits, d.nan_bits | sign, d.nan_bits]
    assert convert(x, f32, f32).view(np.uint32).tolist() == x.view(np.uint32).tolist()
    e5 = np.array([0x7D, 0xFF], np.uint8).view(ml_dtypes.float8_e5m2)
    assert convert(e5, f8e5m2, f32).view(np.uint32).tolist() == [0x7FC00000, 0xFFC00000]


# ---------------------------------------------------------------------------------------------------------
# conversions: rounding toward zero, checked against the list of every value


def toward_zero_reference(x: npt.NDArray[np.float64], dst: type[FloatScalar]) -> npt.NDArray[np.float64]:
    """The largest-magnitude value of dst not beyond |x| (x finite, within ±max)."""
    v = representable_values(dst)
    pos = v[v >= 0]
    idx = np.searchsorted(pos, np.abs(x), side="right") - 1
    out: npt.NDArray[np.float64] = np.copysign(pos[idx], x)
    return out


@pytest.mark.parametrize("dst", SMALL_FLOATS)
def test_toward_zero(sweep: npt.NDArray[np.float32], dst: type[FloatScalar]) -> None:
    x = sweep[np.isfinite(sweep) & (np.abs(sweep) <= dst.max)]
    got = convert(x, f32, dst, rounding="toward_zero").astype(np.float64)
    want = toward_zero_reference(x.astype(np.float64), dst)
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(x))


# ---------------------------------------------------------------------------------------------------------
# conversions: int → float, against exact integer references


def nearest_even_reference(n: int, dst: type[FloatScalar], saturate: bool = False) -> float:
    """Round the integer n to dst by exact integer arithmetic (ties to an even significand)."""
    if n == 0:
        return 0.0
    p = dst.mantissa_bits + 1
    a = abs(n)
    shift = max(a.bit_length() - p, 0)
    q, rem = divmod(a, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (rem > half or (rem == half and q & 1)):
        q += 1
    value = float(q << shift)
    if value > dst.max:
        value = dst.max if saturate else float("inf") if dst.has_inf else float("nan")
    return value if n > 0 else -value


def int_samples() -> npt.NDArray[np.int64]:
    rng = np.random.default_rng(RNG_SEED)
    edges = [0, 1, -1, 2**31 - 1, -(2**31), 2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**11 + 1, 2**8 + 1,
             65504, 65519, 65520, 65535, 448, 464, 465, 57344, 61439, 61440, 2**31 - 2**7]  # fmt: skip
    rand = [
        rng.integers(-(2**31), 2**31, 2000),
        rng.integers(-70000, 70000, 2000),
        rng.integers(-600, 600, 99),
    ]
    return np.concatenate([np.array(edges, np.int64), *rand])


@pytest.mark.parametrize("dst", FLOATS)
def test_i32_to_float(dst: type[FloatScalar]) -> None:
    # the integer path rounds once (ml_dtypes rounds int → bf16 through f32 twice, so it is not the reference)
    n = int_samples()
    with np.errstate(over="ignore"):
        got = convert(n.astype(np.int32), i32, dst).astype(np.float64)
    want = np.array([nearest_even_reference(int(v), dst) for v in n])
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(int(v), g, w) for v, g, w in zip(n[~same], got[~same], want[~same], strict=True)][:5]


def test_i32_to_bf16_rounds_once() -> None:
    # 2**24 + 2**16 + 1: nearest bf16 is 2**24 + 2**17; rounding through f32 first would tie down to 2**24
    got = convert(np.array([2**24 + 2**16 + 1], np.int32), i32, bf16).astype(np.float64)
    assert got.tolist() == [2**24 + 2**17]


@pytest.mark.parametrize("src", [i4, i5, i8, i9, i16])
def test_small_ints_to_float(src: type[IntScalar]) -> None:
    v = np.arange(src.min, src.max + 1)
    for dst in FLOATS:
        got = convert(v, src, dst, overflow="saturate").astype(np.float64)
        want = np.array([nearest_even_reference(int(n), dst, saturate=True) for n in v])
        assert np.array_equal(got, want)


# ---------------------------------------------------------------------------------------------------------
# conversions: int → int and float → int


@pytest.mark.parametrize("dst", INTS)
def test_int_narrowing_wrap_and_saturate(dst: type[IntScalar]) -> None:
    # cast engine i32 → i4, i8, i16 (manual L6778); RNGD-S fetch i16 → i9 (L1977)
    # wrap vs saturate as the vector engine's AddFxp / AddFxpSat (L4826–4827)
    edges = [2**31 - 1, -(2**31), 2**20, -(2**20) - 3]
    v = np.concatenate([np.arange(-(2**16), 2**16, 7), edges]).astype(np.int32)
    m = 1 << dst.bits
    wrapped = [((int(x) - dst.min) % m) + dst.min for x in v]
    assert convert(v, i32, dst, overflow="wrap").tolist() == wrapped
    assert convert(v, i32, dst, overflow="saturate").tolist() == np.clip(v, dst.min, dst.max).tolist()
    if dst is not i32:
        with pytest.raises(DtypeError, match="outside"):
            convert(v, i32, dst)  # the default refuses to guess


def test_i16_to_i9_examples() -> None:
    # RNGD-S fetch cast i16 → i9 (manual L1977)
    v = np.array([255, 256, -256, -257, 1000], np.int16)
    assert convert(v, i16, i9, overflow="wrap").tolist() == [255, -256, -256, 255, -24]
    assert convert(v, i16, i9, overflow="saturate").tolist() == [255, 255, -256, -256, 255]
    assert convert(v[[0, 2]], i16, i9).tolist() == [255, -256]


def test_float_to_int() -> None:
    # vector_fp_to_fxp (manual L4949) leaves rounding unspecified: both modes are offered
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.75, -2.75, 127.4, 127.6, -128.6, 1e10, -1e10], "f4")
    assert convert(x, f32, i8, overflow="saturate").tolist() == [0, 2, 2, 0, -2, -2, 3, -3, 127, 127, -128,
                                                                  127, -128]  # fmt: skip
    assert convert(x, f32, i8, rounding="toward_zero", overflow="saturate").tolist() == [
        0, 1, 2, 0, -1, -2, 2, -2, 127, 127, -128, 127, -128]  # fmt: skip
    assert convert(x[:10], f32, i8, overflow="wrap").tolist() == [0, 2, 2, 0, -2, -2, 3, -3, 127, -128]
    assert convert(np.array([1e10], np.float32), f32, i32, overflow="wrap").tolist() == [1410065408]
    big = np.array([-1e10, 2**40], np.float32)
    assert convert(big, f32, i32, overflow="wrap").tolist() == [-1410065408, 0]
    with pytest.raises(DtypeError):
        convert(x, f32, i8)


def test_float_to_int_specials() -> None:
    x = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32)
    assert convert(x, f32, i16, overflow="saturate").tolist() == [0, 2**15 - 1, -(2**15), 0]
    for mode in ("wrap", "error"):
        with pytest.raises(DtypeError, match="NaN or inf"):
            convert(x, f32, i16, overflow=mode)


@settings(max_examples=100, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.sampled_from(INTS))
def test_wrap_is_twos_complement(n: int, dst: type[IntScalar]) -> None:
    got = convert(np.array([n], np.int32), i32, dst, overflow="wrap")
    raw = to_bytes(i32, [n])  # the low bits of the little-endian image
    low = int.from_bytes(raw.tobytes(), "little") & ((1 << dst.bits) - 1)
    assert int(got[0]) == (low - (1 << dst.bits) if low >= 1 << (dst.bits - 1) else low)


# ---------------------------------------------------------------------------------------------------------
# argument checking


def test_mode_errors() -> None:
    v = np.array([1, 2], np.int32)
    with pytest.raises(DtypeError, match="does not apply"):
        convert(v, i32, i8, overflow="inf")
    with pytest.raises(DtypeError, match="does not apply"):
        convert(v, i32, f32, overflow="wrap")
    with pytest.raises(DtypeError, match="rounding"):
        convert(v, i32, f32, rounding="up")  # type: ignore[arg-type]
    with pytest.raises(DtypeError, match="not exactly representable as bf16"):
        convert(np.array([0.1], np.float32), bf16, f32)  # values must belong to src
    with pytest.raises(DtypeError, match="outside i8"):
        convert(np.array([200], np.int32), i8, i32)
    with pytest.raises(DtypeError, match="must be integers"):
        convert(np.array([1.0]), i8, i32)


def test_identity_and_shape() -> None:
    a = np.arange(12, dtype=np.int8).reshape(3, 4)
    out = convert(a, i8, i8)
    assert out.shape == (3, 4) and np.array_equal(out, a) and out is not a
    assert convert(a, i8, bf16).shape == (3, 4)
    assert convert(np.float32(1.5), f32, f8e4m3).shape == ()


def test_as_storage() -> None:
    assert as_storage(i4, [7, -8]).dtype == np.int8 and as_storage(i9, [255]).dtype == np.int16
    assert as_storage(bf16, [1.5, np.nan, -np.inf]).dtype == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(DtypeError):
        as_storage(f8e4m3, [np.inf])  # E4M3FN has no infinity
    with pytest.raises(DtypeError):
        as_storage(f16, [65520.0])
    with pytest.raises(DtypeError):
        as_storage(i32, ["1"])
    with pytest.raises(DtypeError):
        as_storage(f32, [2**60 + 1])


# ---------------------------------------------------------------------------------------------------------
# representability


def test_is_representable_scalars() -> None:
    assert is_representable(7, i4) and not is_representable(8, i4) and is_representable(-8, i4)
    assert is_representable(255, i9) and not is_representable(256, i9)
    assert is_representable(3.0, i8) and not is_representable(3.5, i8)
    assert not is_representable(float("nan"), i8)
    assert is_representable(2**31 - 1, i32) and not is_representable(2**31, i32)
    assert is_representable(2**24, f32) and not is_representable(2**24 + 1, f32)
    assert not is_representable(10**400, f32) and not is_representable(2**200, f32)
    assert is_representable(float("inf"), bf16) and not is_representable(float("inf"), f8e4m3)
    assert is_representable(float("nan"), f8e4m3) and is_representable(-0.0, f8e5m2)
    assert is_representable(np.int8(5), i4) and is_representable(np.float32(0.1), f32)
    assert is_representable(ml_dtypes.bfloat16(1.5), f8e4m3) and not is_representable(np.float32(0.1), bf16)
    for bad in (True, "1", None):
        with pytest.raises(DtypeError):
            is_representable(bad, i8)  # type: ignore[arg-type]


def test_is_representable_arrays() -> None:
    v = np.arange(-20, 20)
    assert is_representable(v, i5).tolist() == [-16 <= x <= 15 for x in range(-20, 20)]
    x = np.array([0.5, 0.1, 448.0, 480.0, np.nan, np.inf, 1e-9])
    assert is_representable(x, f8e4m3).tolist() == [True, False, True, False, True, False, False]
    assert is_representable(x, i8).tolist() == [False] * 7
    assert is_representable(np.array([2**60, 2**60 + 1], np.int64), f32).tolist() == [True, False]


@pytest.mark.parametrize("d", SMALL_FLOATS)
def test_every_value_is_representable(d: type[FloatScalar]) -> None:
    pats = all_patterns(d)
    assert is_representable(pats, d).all()
    v = representable_values(d)
    mids = (v[:-1] + v[1:]) / 2
    assert not is_representable(mids, d).any()


# ---------------------------------------------------------------------------------------------------------
# random values


@pytest.mark.parametrize("d", ALL)
def test_random_values(d: type[Scalar]) -> None:
    a = random_values(d, (16, 64), np.random.default_rng(RNG_SEED))
    b = random_values(d, (16, 64), np.random.default_rng(RNG_SEED))
    assert a.shape == (16, 64) and a.dtype == d.storage
    assert np.array_equal(to_bits(d, a), to_bits(d, b))  # deterministic for a seed
    assert is_representable(a, d).all()
    f = a.astype(np.float64)
    if d.kind == "int":
        assert f.min() >= d.min and f.max() <= d.max
        if d.bits <= 9:
            assert f.min() == d.min and f.max() == d.max  # the whole range by default
    else:
        assert np.isfinite(f).all() and f.min() >= -2 and f.max() < 2 and not np.signbit(f[f == 0]).any()
        assert len(np.unique(f)) > 10


def test_random_value_ranges() -> None:
    rng = np.random.default_rng(RNG_SEED)
    v = random_values(i8, 1000, rng, low=-3, high=3)
    assert set(v.tolist()) == {-3, -2, -1, 0, 1, 2}
    w = random_values(bf16, 1000, rng, low=1.0, high=1.0625).astype(np.float64)
    assert set(w.tolist()) <= {1.0, 1.0078125, 1.015625, 1.0234375, 1.03125, 1.0390625, 1.046875, 1.0546875}
    z = random_values(f32, 1000, rng, low=0.25, high=0.5)
    assert z.dtype == np.float32 and z.min() >= 0.25 and z.max() < 0.5
    e = random_values(f8e4m3, 500, rng, low=-448.0, high=448.0).astype(np.float64)
    assert e.min() >= -448 and e.max() < 448
    for d, lo, hi in ((i8, -200, 0), (i4, 3, 3), (f8e4m3, 0.0, 500.0), (bf16, 1.0, 1.0), (f32, 2.0, -2.0),
                      (f8e4m3, 0.51, 0.52), (i8, 0.5, 3)):  # fmt: skip
        with pytest.raises(DtypeError):
            random_values(d, 3, rng, low=lo, high=hi)
