"""Snippets for element values (the V2xxx family's :mod:`visa.dtypes` functions: conversions with their rounding
and overflow modes, storage arrays, bit patterns and byte images, random values; manual L2525, seeds 000, 003)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["VALUES"]

_HEAD = ("import numpy as np\nfrom visa import bf16, f4e2m1, f8e4m3, f32, i4, i8, i9, i32\n"
         "from visa.dtypes import as_storage, convert, from_bits, from_bytes, is_representable, random_values, "
         "representable_values, encode_nearest")


def _v(failing: str, fixed: str) -> Snippet:
    return module(_HEAD, failing, fixed)


_RNG = "np.random.default_rng(0)"

#: site key → the failing and the fixed program.
VALUES: dict[str, Snippet] = {
    "dtypes._int_overflow DtypeError: value is outside 's": _v(
        "y = convert(np.array([300]), i32, i8)", 'y = convert(np.array([300]), i32, i8, overflow="saturate")'),
    "dtypes.convert DtypeError: cannot convert nan or": _v(
        "y = convert(np.array([np.nan]), f32, i32)", 'y = convert(np.array([np.nan]), f32, i32, overflow="saturate")'),
    "dtypes._check_modes DtypeError: unknown rounding use 'nearest_even'": _v(
        'y = convert(np.array([1.5]), f32, i32, rounding="up")',
        'y = convert(np.array([1.5]), f32, i32, rounding="toward_zero")'),
    "dtypes._check_modes DtypeError: has no infinity e4m3fn": _v(
        'y = convert(np.array([1000.0]), f32, f8e4m3, overflow="inf")',
        'y = convert(np.array([1000.0]), f32, f8e4m3, overflow="saturate")'),
    "dtypes.as_storage DtypeError: values must be integers": _v("y = as_storage(i8, [1.5])", "y = as_storage(i8, [1])"),
    "dtypes.as_storage DtypeError: value is outside 's": _v(
        "y = as_storage(i4, [9])   # i4 holds -8..7", "y = as_storage(i4, [7])"),
    "dtypes.as_storage DtypeError: values must be numbers": _v(
        'y = as_storage(f32, ["1"])', "y = as_storage(f32, [1.0])"),
    "dtypes.as_storage DtypeError: value is not exactly": _v(
        "y = as_storage(bf16, [0.1])", "y = as_storage(bf16, [0.1015625])   # the bf16 nearest 0.1"),
    "dtypes.from_bits DtypeError: bit patterns must be": _v("y = from_bits(i8, [1.5])", "y = from_bits(i8, [1])"),
    "dtypes.from_bits DtypeError: a bit pattern must": _v("y = from_bits(i8, [256])", "y = from_bits(i8, [255])"),
    "dtypes.from_bytes DtypeError: a byte image must": _v(
        "y = from_bytes(i32, np.zeros(8, np.int32))", "y = from_bytes(i32, np.zeros(8, np.uint8))"),
    "dtypes.from_bytes DtypeError: bytes are not a": _v(
        "y = from_bytes(i32, np.zeros(6, np.uint8))", "y = from_bytes(i32, np.zeros(8, np.uint8))"),
    "dtypes.is_representable DtypeError: is_representable needs a number": _v(
        'ok = is_representable("1", f32)', "ok = is_representable(1.0, f32)"),
    "dtypes.representable_values DtypeError: has too many values": _v(
        "v = representable_values(f32)", "v = representable_values(bf16)"),
    "dtypes.random_values DtypeError: random range needs integer": _v(
        f"v = random_values(i8, 4, {_RNG}, low=0.5, high=5)", f"v = random_values(i8, 4, {_RNG}, low=0, high=5)"),
    "dtypes.random_values DtypeError: random range is empty": _v(
        f"v = random_values(i8, 4, {_RNG}, low=5, high=5)", f"v = random_values(i8, 4, {_RNG}, low=5, high=6)"),
    "dtypes.random_values DtypeError: no value lies in": _v(
        f"v = random_values(bf16, 4, {_RNG}, low=1.001, high=1.002)",
        f"v = random_values(bf16, 4, {_RNG}, low=1.0, high=1.01)"),
    "dtypes.Scalar._whole_bytes DtypeError: elements occupy bits not": module(
        "from visa import i4", "n = i4.nbytes(3)   # 12 bits", "n = i4.nbytes(4)"),
    "dtypes.Scalar.elements_per_bytes DtypeError: bytes do not hold": module(
        "from visa import i32", "n = i32.elements_per_bytes(6)", "n = i32.elements_per_bytes(8)"),
    "dtypes.scalar DtypeError: is not a visa": module(
        "from visa.dtypes import scalar", "d = scalar(int)", 'd = scalar("i32")'),
    "dtypes.Scalar._whole_bytes DtypeError: a length of elements": module(
        "from visa import i8", "n = i8.nbytes(-1)", "n = i8.nbytes(1)"),
    "dtypes.Scalar.elements_per_bytes DtypeError: a byte count must": module(
        "from visa import i32", "n = i32.elements_per_bytes(-8)", "n = i32.elements_per_bytes(8)"),
    "dtypes.as_storage DtypeError: integer values beyond 2": _v(
        "y = as_storage(f32, np.array([2**60]))   # an int64 past 2**53",
        "y = as_storage(f32, np.array([2.0**60]))   # the float it stands for"),
    "dtypes.from_bits DtypeError: image holds a value": _v(
        "y = from_bits(i9, [0x0100])   # an i9 image is sign-extended to 16 bits: -256 is 0xff00",
        "y = from_bits(i9, [0xff00])"),
    "dtypes.from_bytes DtypeError: elements need a -byte": _v(
        "y = from_bytes(i32, np.zeros(12, np.uint8), count=2)", "y = from_bytes(i32, np.zeros(12, np.uint8), count=3)"),
    "dtypes._encode_float DtypeError: value overflows largest finite": _v(
        'y = convert(np.array([1000.0]), f32, f8e4m3, overflow="error")',
        'y = convert(np.array([1000.0]), f32, f8e4m3, overflow="saturate")'),
    "dtypes._encode_float DtypeError: has no infinity": _v(
        'y = convert(np.array([np.inf]), f32, f8e4m3, overflow="error")',
        'y = convert(np.array([np.inf]), f32, f8e4m3, overflow="saturate")'),
    "dtypes._check_modes DtypeError: overflow does not apply": _v(
        'y = convert(np.array([300]), i32, i8, overflow="inf")',
        'y = convert(np.array([300]), i32, i8, overflow="wrap")'),
    "dtypes._check_modes DtypeError: has no infinity and": _v(
        'y = convert(np.array([9.0]), f32, f4e2m1, overflow="inf")',
        'y = convert(np.array([9.0]), f32, f4e2m1, overflow="saturate")'),
    "dtypes._check_modes DtypeError: has no nan e2m1": _v(
        'y = convert(np.array([9.0]), f32, f4e2m1, overflow="nan")',
        'y = convert(np.array([9.0]), f32, f4e2m1, overflow="saturate")'),
    "dtypes.convert DtypeError: nan has no pattern": _v(
        'y = convert(np.array([np.nan, 1.0]), f32, f4e2m1, overflow="saturate")',
        'y = convert(np.nan_to_num(np.array([np.nan, 1.0])), f32, f4e2m1, overflow="saturate")'),
    "dtypes.encode_nearest DtypeError: nan has no pattern": _v(
        'y = encode_nearest(f4e2m1, np.array([np.nan, 1.0]), "saturate")',
        'y = encode_nearest(f4e2m1, np.nan_to_num(np.array([np.nan, 1.0])), "saturate")'),
    "dtypes._representable_array DtypeError: is_representable needs numbers got": _v(
        'ok = is_representable(np.array(["1.5"]), f32)', "ok = is_representable(np.array([1.5]), f32)"),
}
