"""Scalar element types of the Virtual ISA: bit widths, byte images, exact conversions, random values.

The manual names eleven element types; the reference's later releases add a twelfth, ``f4e2m1``.  Each is a
*class* here (``i4 i5 i8 i9 i16 i32 bf16 f16 f32 f8e4m3 f8e5m2 f4e2m1``), so one spelling serves as a type
argument in an annotation (``HbmTensor[i32, m["1"], m["A"]]``) and as a run-time value
(``HostTensor.rand(i32, ...)``, ``.fetch(i32, ...)``), as the Rust type parameters do.  The classes are never
instantiated; their class attributes describe the format.

Sources: the fetch adapter's casts (manual L1962–1979), the DMA element grammar (L2525), the cast engine's
precision lowering (L6774–6779), sizes in bytes (L1071, L1088–1093, L1711, L2229–2232), the widened register
formats (L4140–4147, L4383) and the fp8 formats (seed 000, table 36.1 and "fp8 datapath").

Sizes.  ``bits`` is the width of the value (i5 holds -16..15).  ``size_bits`` is what one element counts for
in every size rule of the manual (packets, flits, capacities): i4 and i5 count 4 bits, i8 and i9 count 8 bits,
because the compute datapath widens every slot by the same 5/4 (a 320-bit row holds 64 i4/i5 or 32 i8/i9
elements, L4383, L4140–4147) while capacities are stated in the 256-bit unit (8 KB per TRF Row = 128 rows × 2
columns × 32 bytes, L1089).  ``image_bits`` is the width of an element in the byte images of :func:`to_bytes`:
i5 and i9 never live in a byte-addressed memory (L2525, L6778), so their images are sign-extended one- and
two-byte integers.  See docs/manual-notes.md, section "dtypes".

>>> i32, i4.name, i4.bits, i5.size_bits, i9.image_bits
(i32, 'i4', 4, 4, 16)
>>> i4.nbytes(64), f8e4m3.max, scalar("fp16") is f16
(32, 448.0, True)
>>> to_bytes(i4, np.array([1, -2, 3, 4])).tolist()  # element 0 in the low nibble
[225, 67]
>>> convert(np.array([300.0, 500.0], np.float32), f32, f8e4m3, overflow="saturate").astype(float).tolist()
[288.0, 448.0]
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Self, TypeAlias, overload

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import fast_dtypes
from visa.errors import DtypeError

__all__ = [
    "Scalar",
    "IntScalar",
    "FloatScalar",
    "i4",
    "i5",
    "i8",
    "i9",
    "i16",
    "i32",
    "bf16",
    "f16",
    "f32",
    "f8e4m3",
    "f8e5m2",
    "f4e2m1",
    "bool_",
    "u32",
    "i64",
    "u64",
    "SCALARS",
    "DEVICE_SCALARS",
    "ALIASES",
    "scalar",
    "DtypeError",
    "Rounding",
    "Overflow",
    "as_storage",
    "to_bytes",
    "from_bytes",
    "to_bits",
    "from_bits",
    "convert",
    "is_representable",
    "representable_values",
    "random_values",
    "encode_nearest",
]

Rounding: TypeAlias = Literal["nearest_even", "toward_zero"]
"""How :func:`convert` rounds a value that the target type cannot hold exactly."""

Overflow: TypeAlias = Literal["wrap", "saturate", "error", "inf", "nan"]
"""What :func:`convert` does with a value beyond the target type's range (see :func:`convert`)."""


class _ScalarMeta(type):
    """Metaclass so that ``repr(i32)`` prints the manual's spelling, as error messages quote it."""

    def __repr__(cls) -> str:
        name = cls.__dict__.get("name")
        return name if isinstance(name, str) else cls.__name__


class Scalar(metaclass=_ScalarMeta):
    """Base of the element types; the subclasses are the manual's scalars (``D: Scalar``, manual L1700).

    The classes are used as values and as type arguments, never instantiated.  Class attributes:

    - ``name``: the manual's spelling (L1962–1979, L2525),
    - ``bits``: width of the value; ``size_bits``: bits counted by every size rule; ``image_bits``: bits
      one element takes in a :func:`to_bytes` image (module docstring, L4140–4147, L4383),
    - ``kind`` (``"int"`` or ``"float"``), ``signed``, ``storage`` (numpy dtype holding one value
      unpacked), ``bits_dtype`` (unsigned numpy dtype of a bit pattern),
    - ``min`` / ``max``: range of integers, or the largest finite magnitude of floats (``min == -max``),
    - ``alignment``: bytes an element's start address must be a multiple of (``size_of::<D>()``, L1071;
      1 for i4, whose pairs share a byte).
    """

    name: ClassVar[str]
    bits: ClassVar[int]
    size_bits: ClassVar[int]
    image_bits: ClassVar[int]
    kind: ClassVar[Literal["int", "float"]]
    signed: ClassVar[bool]
    storage: ClassVar[np.dtype[Any]]
    bits_dtype: ClassVar[np.dtype[Any]]
    min: ClassVar[float]
    max: ClassVar[float]
    alignment: ClassVar[int]

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        raise TypeError(
            f"{cls!r} is an element type, not a value; use numpy arrays of {cls!r}.storage "
            f"(e.g. visa.dtypes.as_storage({cls!r}, values))"
        )

    @classmethod
    def size_in_bytes_from_length(cls, n: int) -> int:
        """Bytes that ``n`` elements occupy in a packet, flit or memory (manual L1711, L2229–2232).

        Raises :class:`DtypeError` when they do not fill whole bytes (an odd count of i4 or i5).

        >>> i4.size_in_bytes_from_length(64), bf16.size_in_bytes_from_length(16)
        (32, 32)
        >>> i5.size_in_bytes_from_length(64), i9.size_in_bytes_from_length(32)
        (32, 32)
        """
        return cls._whole_bytes(n, cls.size_bits)

    @classmethod
    def _whole_bytes(cls, n: int, bits: int) -> int:
        """Bytes that ``n`` elements of ``bits`` bits fill; refused unless they fill whole bytes (L2229–2232)."""
        if n < 0:
            raise DtypeError(f"a length of {cls!r} elements must be >= 0, got {n}")
        total = n * bits
        if total % 8:
            k = 8 // math.gcd(8, bits)
            raise DtypeError(
                f"{n} {cls!r} elements occupy {total} bits, not whole bytes (manual L2229–2232: {bits}-bit "
                "elements)",
                fix=f"use a multiple of {k} elements, e.g. pad with `# {k}`",
            )
        return total // 8

    @classmethod
    def nbytes(cls, n: int) -> int:
        """Bytes that ``n`` elements occupy (``Element::SIZE * size_of::<D>()``, manual L1088–1093).

        The same as :meth:`size_in_bytes_from_length`.

        >>> i32.nbytes(8), i4.nbytes(8), f8e4m3.nbytes(3)
        (32, 4, 3)
        """
        return cls.size_in_bytes_from_length(n)

    @classmethod
    def elements_per_bytes(cls, b: int) -> int:
        """How many elements fill ``b`` bytes exactly (``32 / sizeof(D)`` per flit, manual L6781–6786).

        >>> [d.elements_per_bytes(32) for d in (i4, i8, bf16, f32)]
        [64, 32, 16, 8]
        """
        if b < 0:
            raise DtypeError(f"a byte count must be >= 0, got {b}")
        if (8 * b) % cls.size_bits:
            raise DtypeError(f"{b} bytes do not hold a whole number of {cls.size_bits}-bit {cls!r} elements")
        return (8 * b) // cls.size_bits

    @classmethod
    def image_nbytes(cls, n: int) -> int:
        """Length of the :func:`to_bytes` image of ``n`` elements.

        Equal to :meth:`nbytes` except for i5 (1 byte each) and i9 (2 bytes each), which are simulator
        representations of stream-only types (see the module docstring).

        >>> i4.image_nbytes(4), i5.image_nbytes(4), i9.image_nbytes(4)
        (2, 4, 8)
        """
        return cls._whole_bytes(n, cls.image_bits)


class IntScalar(Scalar):
    """A two's complement integer type (the manual's i4 … i32, L1962–1979); ``min``/``max`` are ints,
    ``-2**(bits-1)`` .. ``2**(bits-1)-1``."""

    kind: ClassVar[Literal["int", "float"]] = "int"
    signed: ClassVar[bool] = True
    min: ClassVar[int]
    max: ClassVar[int]


class FloatScalar(Scalar):
    """A binary floating point type: sign, ``exponent_bits``, ``mantissa_bits`` (stored fraction), ``bias``.

    ``has_inf`` tells whether the all-ones exponent with a zero fraction is an infinity (IEEE style) or the
    format is "finite and NaN" (E4M3FN, seed 000); ``has_nan`` is False for a finite-only format (E2M1, whose
    every pattern is a number: ``max_bits`` is then the all-ones magnitude).  ``max`` is the largest finite value,
    ``min == -max``;
    ``smallest_normal`` and ``smallest_subnormal`` are positive.  ``nan_bits`` is the canonical quiet NaN this
    module produces (sign added), ``max_bits`` the pattern of ``max``, ``inf_bits`` that of +inf (or -1).
    """

    kind: ClassVar[Literal["int", "float"]] = "float"
    signed: ClassVar[bool] = True
    exponent_bits: ClassVar[int]
    mantissa_bits: ClassVar[int]
    bias: ClassVar[int]
    has_inf: ClassVar[bool]
    has_nan: ClassVar[bool] = True
    smallest_normal: ClassVar[float]
    smallest_subnormal: ClassVar[float]
    nan_bits: ClassVar[int]
    max_bits: ClassVar[int]
    inf_bits: ClassVar[int]


def _int_attrs(cls: type[IntScalar], name: str, bits: int, size_bits: int, image_bits: int) -> None:
    cls.name = name
    cls.bits = bits
    cls.size_bits = size_bits
    cls.image_bits = image_bits
    cls.storage = np.dtype({8: np.int8, 16: np.int16, 32: np.int32}[max(8, image_bits)])
    cls.bits_dtype = np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32}[max(8, image_bits)])
    cls.min = -(1 << (bits - 1))
    cls.max = (1 << (bits - 1)) - 1
    cls.alignment = max(1, size_bits // 8)


def _float_attrs(
    cls: type[FloatScalar], name: str, storage: Any, exponent_bits: int, mantissa_bits: int, has_inf: bool,
    has_nan: bool = True,
) -> None:
    bits = 1 + exponent_bits + mantissa_bits
    cls.name = name
    cls.bits = cls.size_bits = cls.image_bits = bits
    cls.storage = np.dtype(storage)
    cls.bits_dtype = np.dtype({4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])
    cls.has_nan = has_nan
    cls.exponent_bits = exponent_bits
    cls.mantissa_bits = mantissa_bits
    cls.bias = (1 << (exponent_bits - 1)) - 1
    cls.has_inf = has_inf
    top = (1 << exponent_bits) - 1  # all-ones exponent field
    if has_inf:  # IEEE: the top exponent is inf/NaN; max = (2 - 2^-M) * 2^(top - 1 - bias)
        cls.max_bits = ((top - 1) << mantissa_bits) | ((1 << mantissa_bits) - 1)
        cls.inf_bits = top << mantissa_bits
        cls.nan_bits = (top << mantissa_bits) | (1 << (mantissa_bits - 1))
    elif has_nan:  # finite-and-NaN (E4M3FN): only the all-ones pattern is NaN, seed 000 table 36.1
        cls.max_bits = (top << mantissa_bits) | ((1 << mantissa_bits) - 2)
        cls.inf_bits = -1
        cls.nan_bits = (top << mantissa_bits) | ((1 << mantissa_bits) - 1)
    else:  # finite only (E2M1): every pattern is a number, the all-ones magnitude the largest
        cls.max_bits = (top << mantissa_bits) | ((1 << mantissa_bits) - 1)
        cls.inf_bits = cls.nan_bits = -1
    exp_field, frac = cls.max_bits >> mantissa_bits, cls.max_bits & ((1 << mantissa_bits) - 1)
    cls.max = math.ldexp(1.0 + frac / (1 << mantissa_bits), exp_field - cls.bias)
    cls.min = -cls.max
    cls.smallest_normal = math.ldexp(1.0, 1 - cls.bias)
    cls.smallest_subnormal = math.ldexp(1.0, 1 - cls.bias - mantissa_bits)
    cls.alignment = max(1, bits // 8)


class i4(IntScalar):
    """4-bit signed integer, -8..7; two elements share a byte, element 0 in the low nibble.

    Manual: DMA element type (L2525), fetch casts i4→i5 and i4→i32 (L1965), 0.5 bytes each (L2232).
    """


class i5(IntScalar):
    """5-bit signed integer, -16..15: the fetch adapter's widened i4 (manual L1965), "i4 extended" (L4144).

    Counts 4 bits in size rules (a flit holds 64, L4383); its byte image is one sign-extended byte.
    """


class i8(IntScalar):
    """8-bit signed integer, -128..127 (manual L2525; fetch casts i8→i9, i8→i32, L1966)."""


class i9(IntScalar):
    """9-bit signed integer, -256..255: the fetch adapter's widened i8 (manual L1966, L1976–1977).

    Counts 8 bits in size rules (a flit holds 32, L4383); its byte image is a sign-extended little-endian
    int16.
    """


class i16(IntScalar):
    """16-bit signed integer (manual L2525; fetch cast i16→i32, L1967)."""


class i32(IntScalar):
    """32-bit signed integer, the integer compute type (manual L2525, L3782, L4391)."""


class bf16(FloatScalar):
    """bfloat16: 1 sign, 8 exponent (bias 127), 7 fraction bits; the top half of an f32 (L8547, L8589)."""


class f16(FloatScalar):
    """IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits (manual L1968 "f16", L2525 "fp16")."""


class f32(FloatScalar):
    """IEEE binary32: 1 sign, 8 exponent (bias 127), 23 fraction bits (manual L2525, L4391)."""


class f8e4m3(FloatScalar):
    """fp8 E4M3FN: 4 exponent (bias 7), 3 fraction bits, no infinity, NaN = S.1111.111, max 448.

    Manual L1968, L6779; the format and its two overflow modes (saturate to ±448 or NaN) are from seed 000,
    table 36.1 and "fp8 datapath".
    """


class f8e5m2(FloatScalar):
    """fp8 E5M2: 5 exponent (bias 15), 2 fraction bits, IEEE inf and NaN, max 57344 (seed 000, table 36.1).

    The high byte of an f16 (seed 000).  Manual L1969, L6779.
    """


class f4e2m1(FloatScalar):
    """fp4 E2M1 (OCP MX): 2 exponent (bias 1), 1 fraction bit, no infinity and no NaN, max 6; two elements share
    a byte as for i4, element 0 in the low nibble.  Host data is ``ml_dtypes.float4_e2m1fn``.

    Not in the manual: a reference extension (furiosa-opt v0.6–v0.8 kernel arguments and baked lookup tables;
    design API.md §8, docs/manual-notes.md "issue 26").  A value beyond ±6 saturates or is refused; NaN has
    no pattern and is refused.
    """


class bool_(IntScalar):
    """A device scalar's boolean (``HbmScalar<bool>``, furiosa-opt v0.9; design API.md §8): one byte, 0 or 1.
    A scalar type only (no tensor of it moves by DMA, L2525)."""


class u32(IntScalar):
    """A device scalar's unsigned 32-bit integer, 0..2**32-1 (``HbmScalar<u32>``; design API.md §8)."""


class i64(IntScalar):
    """A device scalar's signed 64-bit integer (``HbmScalar<i64>``; design API.md §8)."""


class u64(IntScalar):
    """A device scalar's unsigned 64-bit integer (``HbmScalar<u64>``; design API.md §8)."""


def _scalar_only_attrs(cls: type[IntScalar], name: str, bits: int, signed: bool, storage: Any) -> None:
    cls.name = name
    cls.bits = bits
    cls.size_bits = cls.image_bits = max(8, bits)
    cls.storage = np.dtype(storage)
    cls.bits_dtype = np.dtype({8: np.uint8, 32: np.uint32, 64: np.uint64}[max(8, bits)])
    cls.signed = signed
    cls.min = -(1 << (bits - 1)) if signed else 0
    cls.max = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    cls.alignment = max(1, bits // 8)


_scalar_only_attrs(bool_, "bool_", 1, False, np.uint8)
_scalar_only_attrs(u32, "u32", 32, False, np.uint32)
_scalar_only_attrs(i64, "i64", 64, True, np.int64)
_scalar_only_attrs(u64, "u64", 64, False, np.uint64)

DEVICE_SCALARS: dict[str, type[Scalar]] = {}  # filled below: the types an HbmScalar holds (design API.md §8)

_int_attrs(i4, "i4", 4, 4, 4)
_int_attrs(i5, "i5", 5, 4, 8)
_int_attrs(i8, "i8", 8, 8, 8)
_int_attrs(i9, "i9", 9, 8, 16)
_int_attrs(i16, "i16", 16, 16, 16)
_int_attrs(i32, "i32", 32, 32, 32)
_float_attrs(bf16, "bf16", ml_dtypes.bfloat16, 8, 7, True)
_float_attrs(f16, "f16", np.float16, 5, 10, True)
_float_attrs(f32, "f32", np.float32, 8, 23, True)
_float_attrs(f8e4m3, "f8e4m3", ml_dtypes.float8_e4m3fn, 4, 3, False)
_float_attrs(f8e5m2, "f8e5m2", ml_dtypes.float8_e5m2, 5, 2, True)
_float_attrs(f4e2m1, "f4e2m1", ml_dtypes.float4_e2m1fn, 2, 1, False, has_nan=False)

SCALARS: dict[str, type[Scalar]] = {
    d.name: d for d in (i4, i5, i8, i9, i16, i32, bf16, f16, f32, f8e4m3, f8e5m2, f4e2m1)
}
"""Every element type by its manual spelling (L1962–1979, L2525)."""

DEVICE_SCALARS.update({d.name: d for d in (bool_, i32, u32, i64, u64)})
"""The types of a device scalar (``HbmScalar``, design API.md §8): ``bool_``, ``i32``, ``u32``, ``i64``, ``u64``.
``bool_``, ``u32``, ``i64`` and ``u64`` are scalar types only: no element of a tensor has them."""

ALIASES: dict[str, type[Scalar]] = {"fp16": f16}
"""Other spellings the manual uses: ``fp16`` in the DMA grammar (L2525)."""


def scalar(name_or_class: str | type[Scalar]) -> type[Scalar]:
    """The element type named ``name_or_class`` (a manual spelling or alias), or the class itself.

    >>> scalar("i8") is i8, scalar(bf16) is bf16, scalar("fp16")
    (True, True, f16)
    """
    if isinstance(name_or_class, type):
        if issubclass(name_or_class, Scalar) and name_or_class in SCALARS.values():
            return name_or_class
        raise DtypeError(f"{name_or_class!r} is not a visa element type; known: {', '.join(SCALARS)}")
    if isinstance(name_or_class, str):
        found = SCALARS.get(name_or_class) or ALIASES.get(name_or_class)
        if found is not None:
            return found
    raise DtypeError(f"unknown element type {name_or_class!r}; known: {', '.join(SCALARS)} (manual L2525)")


# ----------------------------------------------------------------------------------------------------------
# validation of values


def _as_int(d: type[Scalar]) -> type[IntScalar]:
    assert issubclass(d, IntScalar)
    return d


def _as_float(d: type[Scalar]) -> type[FloatScalar]:
    assert issubclass(d, FloatScalar)
    return d


_ML_FLOATS = {
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e5m2),
    np.dtype(ml_dtypes.float4_e2m1fn),
}


def _to_f64(arr: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Exact float64 copy (signalling NaNs raise no floating point warning)."""
    with np.errstate(invalid="ignore"):
        out: npt.NDArray[np.float64] = arr.astype(np.float64)
    return out


def _is_float_dtype(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f" or dt in _ML_FLOATS


def _float_representable(x: npt.NDArray[np.float64], d: type[FloatScalar]) -> npt.NDArray[np.bool_]:
    """Elementwise: is the float64 ``x`` exactly a value of ``d`` (NaN counts, inf only with ``has_inf``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        bits = _encode_float(x, d, "nearest_even", "nan")
        back = _decode_float(bits, d)
    ok: npt.NDArray[np.bool_] = (back == x) | (np.isnan(x) & np.isnan(back))
    if not d.has_nan:  # a finite-only format (f4e2m1) holds no NaN and no infinity
        ok &= np.isfinite(x)
    return ok


def as_storage(dtype: type[Scalar], values: npt.ArrayLike) -> npt.NDArray[Any]:
    """``values`` as an array of ``dtype.storage``, raising :class:`DtypeError` unless every value is exact
    (the manual's scalars, L1962–1979, hold values exactly; nothing is rounded silently).

    Integers must come as an integer array (or Python ints) inside ``dtype.min..dtype.max``; floats may come
    in any float or integer array whose values ``dtype`` holds exactly (NaN always, inf when ``has_inf``).
    An array already of ``dtype.storage`` is returned as is (floats keep their NaN payloads).

    >>> as_storage(i4, [7, -8]).dtype, as_storage(bf16, [1.5]).dtype
    (dtype('int8'), dtype(bfloat16))
    >>> try:
    ...     as_storage(i4, [8])
    ... except DtypeError as e:
    ...     print(e.describe())
    value 8 is outside i4's range -8..7
    """
    arr = np.asarray(values)
    if dtype.kind == "int":
        d = _as_int(dtype)
        if arr.dtype == d.storage and d.bits == 8 * arr.dtype.itemsize:
            return arr  # every value of the storage type is a value of the type (i8 in int8, i32 in int32)
        if arr.dtype.kind not in "iu":
            if arr.size == 0 and arr.dtype.kind == "f":
                return arr.astype(d.storage)
            raise DtypeError(f"{d!r} values must be integers, got an array of {arr.dtype}")
        if arr.size:
            lo, hi = arr.min(), arr.max()
            if lo < d.min or hi > d.max:
                bad = lo if lo < d.min else hi
                raise DtypeError(f"value {int(bad)} is outside {d!r}'s range {d.min}..{d.max}")
        return arr if arr.dtype == d.storage else arr.astype(d.storage)
    f = _as_float(dtype)
    if arr.dtype == f.storage:
        return arr
    if not (_is_float_dtype(arr.dtype) or arr.dtype.kind in "iu"):
        raise DtypeError(f"{f!r} values must be numbers, got an array of {arr.dtype}")
    if arr.dtype.kind in "iu" and arr.size and (arr.max() > 2**53 or arr.min() < -(2**53)):
        raise DtypeError(f"integer values beyond ±2**53 are not checked exactly as {f!r}; convert them")
    x = _to_f64(arr)
    ok = _float_representable(x, f)
    if not ok.all():
        bad = x[~ok].flat[0]
        raise DtypeError(
            f"value {float(bad)!r} is not exactly representable as {f!r}",
            fix=f"round it first with convert(values, f32, {f!r}) or pass the right source type",
        )
    return _decode_bits_to_storage(_encode_float(x, f, "nearest_even", "nan"), f)


# ----------------------------------------------------------------------------------------------------------
# bit patterns and byte images


def to_bits(dtype: type[Scalar], values: npt.ArrayLike) -> npt.NDArray[Any]:
    """The bit pattern of each value as an unsigned integer array of ``dtype.bits_dtype`` (fp8 layouts as
    seed 000 defines them; integers two's complement, manual L1962–1979).

    Integers give their two's complement in ``image_bits`` bits (i4: 0..15), floats their IEEE-style layout.

    >>> to_bits(i4, [-1, 7]).tolist(), to_bits(f8e4m3, [448.0, -1.0]).tolist()
    ([15, 7], [126, 184])
    """
    arr = as_storage(dtype, values)
    if dtype.kind == "int":
        if arr.dtype.itemsize * 8 == dtype.image_bits == dtype.bits_dtype.itemsize * 8:
            # the storage word is the image word: its two's complement bits are the pattern (one copy)
            return np.array(arr, dtype=arr.dtype, copy=True).view(dtype.bits_dtype)
        if arr.dtype.itemsize == 1 and dtype.bits_dtype.itemsize == 1:  # two's complement in a byte: mask it
            return np.bitwise_and(arr.view(np.uint8), (1 << dtype.image_bits) - 1, dtype=np.uint8)
        u = arr.astype(np.int64) & ((1 << dtype.image_bits) - 1)
        return u.astype(dtype.bits_dtype)
    return arr.view(dtype.bits_dtype).copy()


def from_bits(dtype: type[Scalar], bits: npt.ArrayLike) -> npt.NDArray[Any]:
    """Values of ``dtype`` (in ``dtype.storage``) from their bit patterns; inverse of :func:`to_bits` (seed 000,
    manual L1962–1979).

    Integers must be sign extensions in ``image_bits`` (for i5 and i9 the unused top bits must repeat the sign
    bit), else :class:`DtypeError`.

    >>> from_bits(i4, [15, 8]).tolist(), from_bits(bf16, [0x3FC0]).astype(float).tolist()
    ([-1, -8], [1.5])
    """
    b = np.asarray(bits)
    if b.dtype.kind not in "iu":
        raise DtypeError(f"bit patterns must be an integer array, got {b.dtype}")
    if (dtype.kind == "int" and b.dtype == dtype.bits_dtype and dtype.bits == dtype.image_bits == 8 * b.dtype.itemsize
            and np.dtype(dtype.storage).itemsize == b.dtype.itemsize):
        # every pattern of the full word is a two's complement value: reinterpret (one copy)
        return np.array(b, copy=True).view(dtype.storage)
    if dtype.kind == "int" and dtype.image_bits <= 8 and b.size and (b.dtype == np.uint8 or int(b.min()) >= 0):
        # narrow patterns (i4, i5, i8 in a wider storage): one lookup per pattern in a table of all 2^bits
        # (a pattern out of range or not a sign extension takes the general path below, which refuses it)
        values, valid = _pattern_table(dtype)
        if int(b.max()) < values.size and (dtype.bits == dtype.image_bits or bool(valid[b].all())):
            out: npt.NDArray[Any] = values[b]
            return out
    u = b.astype(np.int64)
    width = dtype.image_bits
    if u.size and (u.min() < 0 or u.max() >= (1 << width)):
        raise DtypeError(f"a {dtype!r} bit pattern must be in 0..{(1 << width) - 1}")
    if dtype.kind == "int":
        v = np.where(u >= (1 << (width - 1)), u - (1 << width), u)
        if v.size and (v.min() < dtype.min or v.max() > dtype.max):
            raise DtypeError(
                f"{dtype!r} image holds a value outside {dtype.min}..{dtype.max}: its top bits are not "
                f"a sign extension of the {dtype.bits}-bit value"
            )
        return v.astype(dtype.storage)
    return u.astype(dtype.bits_dtype).view(dtype.storage)


_PATTERNS: dict[type[Scalar], tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]] = {}


def _pattern_table(dtype: type[Scalar]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """Every ``image_bits``-bit pattern's two's complement value (in ``dtype.storage``) and whether it is a
    sign extension of a ``bits``-bit value (manual L1962–1979), computed once per type."""
    got = _PATTERNS.get(dtype)
    if got is None:
        width = dtype.image_bits
        u = np.arange(1 << width, dtype=np.int64)
        v = np.where(u >= (1 << (width - 1)), u - (1 << width), u)
        valid = (v >= dtype.min) & (v <= dtype.max)
        got = _PATTERNS[dtype] = (np.where(valid, v, 0).astype(dtype.storage), valid)
    return got


def to_bytes(dtype: type[Scalar], values: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """The little-endian byte image of ``values`` (flattened in C order) as a uint8 array.

    i4 packs two elements per byte, element ``2k`` in the low nibble and ``2k+1`` in the high nibble, so that
    element ``j`` occupies bits ``4j..4j+3`` of the little-endian image (the manual gives no nibble order; see
    docs/manual-notes.md).  An odd number of i4 elements raises :class:`DtypeError`.  i5 and i9 images are
    sign-extended one- and two-byte integers.  Floats keep their exact bit patterns, NaN payloads included.

    >>> to_bytes(i32, [1, -1]).tolist(), to_bytes(bf16, [1.0]).tolist()
    ([1, 0, 0, 0, 255, 255, 255, 255], [128, 63])
    """
    bits = to_bits(dtype, values).reshape(-1)
    nbytes = dtype.image_nbytes(bits.size)
    if dtype.image_bits == 4:
        b = bits.astype(np.uint8)
        return np.ascontiguousarray(b[0::2] | (b[1::2] << 4)).astype(np.uint8)
    if not bits.flags.c_contiguous or bits.dtype.byteorder == ">" or (
            bits.dtype.byteorder == "=" and np.little_endian is False):
        bits = np.ascontiguousarray(bits.astype(bits.dtype.newbyteorder("<")))
    out: npt.NDArray[np.uint8] = bits.view(np.uint8).reshape(-1)  # to_bits made a fresh array: no copy
    assert out.size == nbytes
    return out


def from_bytes(dtype: type[Scalar], raw: npt.ArrayLike, count: int | None = None) -> npt.NDArray[Any]:
    """Decode ``count`` elements from the byte image ``raw`` (uint8); inverse of :func:`to_bytes` (the byte
    layout of a DM or HBM element, manual L1071–1093; 4-bit packing per docs/manual-notes.md "dtypes").

    ``raw`` must be exactly ``dtype.image_nbytes(count)`` bytes long; ``count=None`` takes all of it.  Returns
    a 1-D array of ``dtype.storage``.

    >>> from_bytes(i4, np.array([0xE1, 0x43], np.uint8), 4).tolist()
    [1, -2, 3, 4]
    """
    r = np.asarray(raw)
    if r.dtype != np.uint8:
        raise DtypeError(f"a byte image must be a uint8 array, got {r.dtype}")
    r = r.reshape(-1)
    if count is None:
        if (8 * r.size) % dtype.image_bits:
            raise DtypeError(f"{r.size} bytes are not a whole number of {dtype!r} elements")
        count = (8 * r.size) // dtype.image_bits
    need = dtype.image_nbytes(count)
    if r.size != need:
        raise DtypeError(f"{count} {dtype!r} elements need a {need}-byte image, got {r.size} bytes")
    if dtype.image_bits == 4:
        bits = np.empty(count, np.uint8)
        bits[0::2] = r & 0x0F
        bits[1::2] = r >> 4
    else:
        le = dtype.bits_dtype.newbyteorder("<")
        if np.little_endian and r.flags.c_contiguous:
            bits = r.view(le).view(dtype.bits_dtype)  # from_bits copies
        else:
            bits = np.frombuffer(r.tobytes(), dtype=le).astype(dtype.bits_dtype)
    return from_bits(dtype, bits)


# ----------------------------------------------------------------------------------------------------------
# exact conversions


def _encode_float(
    x: npt.NDArray[np.float64], d: type[FloatScalar], rounding: Rounding, overflow: Overflow
) -> npt.NDArray[np.int64]:
    """Bit patterns of ``d`` for the float64 values ``x``, rounded once (exact: ``x`` is exact in float64).

    ``overflow`` is one of inf/nan/saturate/error (validated by the caller).
    """
    m_bits, bias = d.mantissa_bits, d.bias
    sign = np.signbit(x).astype(np.int64) << (d.exponent_bits + m_bits)
    a = np.abs(x)
    is_nan = np.isnan(a)
    is_inf = np.isinf(a)
    nonzero = ~is_nan & ~is_inf & (a != 0)
    af = np.where(nonzero, a, 1.0)
    _, e2 = np.frexp(af)  # af = f * 2**e2 with f in [0.5, 1): the leading bit has weight 2**(e2-1)
    emin = 1 - bias
    e = np.maximum(e2.astype(np.int64) - 1, emin)
    q = e - m_bits  # weight of the last fraction bit
    s = np.ldexp(af, (-q).astype(np.int32))  # exact: a power-of-two scaling of a float64
    r = np.rint(s) if rounding == "nearest_even" else np.trunc(s)  # rint rounds half to even
    with np.errstate(over="ignore"):
        value = np.ldexp(r, q.astype(np.int32))  # the rounded magnitude
    carry = r >= float(1 << (m_bits + 1))  # 1.111..1 rounded up to 10.000..0
    r = np.where(carry, r / 2, r)
    e = e + carry.astype(np.int64)
    ri = r.astype(np.int64)
    normal = ri >= (1 << m_bits)
    exp_field = np.where(normal, e + bias, 0)
    frac = np.where(normal, ri - (1 << m_bits), ri)
    mag = np.where(nonzero, (exp_field << m_bits) | frac, 0)
    over = nonzero & (value > d.max)
    nan_bits = d.nan_bits if d.has_nan else d.max_bits  # finite only: callers refuse NaN first (never chosen)
    special = {"inf": d.inf_bits, "nan": nan_bits, "saturate": d.max_bits, "error": nan_bits}[overflow]
    if overflow == "error" and over.any():
        bad = x[over].flat[0]
        raise DtypeError(
            f"value {float(bad)!r} overflows {d!r} (largest finite {d.max!r})",
            fix="pass overflow='saturate'" + (", 'nan' or 'inf'" if d.has_inf else " or 'nan'"),
        )
    mag = np.where(over, special, mag)
    if d.has_inf:
        inf_out = d.max_bits if overflow == "saturate" else d.inf_bits
    elif overflow == "saturate":
        inf_out = d.max_bits
    elif overflow == "error" and is_inf.any():
        raise DtypeError(f"{d!r} has no infinity", fix="pass overflow='saturate' or 'nan'")
    else:
        inf_out = nan_bits
    mag = np.where(is_inf, inf_out, mag)
    mag = np.where(is_nan, nan_bits, mag)
    out: npt.NDArray[np.int64] = sign | mag
    return out


def _decode_bits_to_storage(bits: npt.NDArray[np.int64], d: type[FloatScalar]) -> npt.NDArray[Any]:
    return bits.astype(d.bits_dtype).view(d.storage)


def _decode_float(bits: npt.NDArray[np.int64], d: type[FloatScalar]) -> npt.NDArray[np.float64]:
    """float64 values of ``d``'s bit patterns (exact; NaN for NaN patterns)."""
    return _to_f64(_decode_bits_to_storage(bits, d))


def _num(v: Any) -> str:
    """A numpy scalar as plain text for messages (``3`` or ``1e+10``, not ``np.float64(...)``)."""
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def _check_modes(dst: type[Scalar], rounding: str, overflow: str) -> None:
    if rounding not in ("nearest_even", "toward_zero"):
        raise DtypeError(f"unknown rounding {rounding!r}; use 'nearest_even' or 'toward_zero'")
    allowed = ("wrap", "saturate", "error") if dst.kind == "int" else ("inf", "nan", "saturate", "error")
    if overflow not in allowed:
        raise DtypeError(f"overflow={overflow!r} does not apply to {dst!r}; use one of {', '.join(allowed)}")
    if overflow == "inf" and not _as_float(dst).has_inf:
        if not _as_float(dst).has_nan:
            raise DtypeError(f"{dst!r} has no infinity and no NaN", fix="pass overflow='saturate' or 'error'")
        raise DtypeError(f"{dst!r} has no infinity (E4M3FN)", fix="pass overflow='nan' or 'saturate'")
    if overflow == "nan" and not _as_float(dst).has_nan:
        raise DtypeError(f"{dst!r} has no NaN (E2M1 is finite only)", fix="pass overflow='saturate' or 'error'")


def _int_overflow(
    v: npt.NDArray[np.float64] | npt.NDArray[np.int64], dst: type[IntScalar], overflow: Overflow
) -> npt.NDArray[Any]:
    """Integer-valued ``v`` (int64, or float64 holding integers) into ``dst`` by the overflow mode."""
    lo, hi = dst.min, dst.max
    if overflow == "saturate":
        return np.clip(v, lo, hi).astype(np.int64).astype(dst.storage)
    outside = (v < lo) | (v > hi)
    if overflow == "error":
        if outside.any():
            bad = v[outside].flat[0]
            raise DtypeError(
                f"value {_num(bad)} is outside {dst!r}'s range {lo}..{hi}",
                fix="pass overflow='wrap' or 'saturate'",
            )
        return v.astype(np.int64).astype(dst.storage)
    modulus = 1 << dst.bits  # wrap: keep the low `bits` bits, two's complement
    if v.dtype == np.int64:
        u = np.mod(v.astype(np.int64), modulus)
    else:
        u = np.mod(v, float(modulus)).astype(np.int64)  # exact: fmod of integer-valued floats
    return np.where(u > hi, u - modulus, u).astype(dst.storage)


def convert(
    values: npt.ArrayLike,
    src: type[Scalar],
    dst: type[Scalar],
    *,
    rounding: Rounding = "nearest_even",
    overflow: Overflow | None = None,
) -> npt.NDArray[Any]:
    """Convert ``values`` of type ``src`` to ``dst``, exactly as an IEEE-style cast with the stated modes.

    ``values`` must hold values of ``src`` (checked, :func:`as_storage`); the result is an array of
    ``dst.storage`` with the same shape.  ``src is dst`` returns the values unchanged (NaN payloads kept).

    Every conversion rounds once, from the exact source value:

    - ``rounding="nearest_even"`` rounds to the nearest value of ``dst``, ties to the even one (IEEE 754
      roundTiesToEven); ``"toward_zero"`` truncates the magnitude.  It applies to float→float, int→float and
      float→int; int→int is exact until it overflows.
    - ``overflow`` decides what happens to a value beyond ``dst``'s range:

      * integer ``dst``: ``"wrap"`` keeps the low ``dst.bits`` bits (two's complement, like the vector
        engine's wrapping ops, manual L4826), ``"saturate"`` clamps to ``dst.min..dst.max`` (L4827),
        ``"error"`` (the default) raises :class:`DtypeError`.  From floats, NaN gives 0 under
        ``"saturate"`` and ±inf clamp; ``"wrap"`` and ``"error"`` refuse NaN and inf.
      * float ``dst``: a finite value whose rounded magnitude exceeds ``dst.max`` becomes ±inf (``"inf"``, the
        default for types with infinities), NaN (``"nan"``, the default for f8e4m3, which has no infinity),
        ±``dst.max`` (``"saturate"``: E4M3 "clamps to the maximum normal", seed 000), or raises (``"error"``).
        An infinite input stays infinite when ``dst`` has infinities, except that ``"saturate"`` clamps it
        too; into f8e4m3 it becomes NaN or ±448.  So E4M3 saturate gives ±448 = S.1111.110 (0x7e) and E4M3
        NaN mode gives S.1111.111 (0x7f), the two overflow bytes of seed 000.

    - NaN becomes the canonical quiet NaN of ``dst`` with the sign kept (f32 0x7fc00000, f16 0x7e00, bf16
      0x7fc0, f8e5m2 0x7e, f8e4m3 0x7f); the hardware's NaN payload rule is not in the manual.

    >>> convert(np.array([1, 2, 200], np.int32), i32, i8, overflow="wrap").tolist()
    [1, 2, -56]
    >>> convert(np.array([1, 2, 200], np.int32), i32, i8, overflow="saturate").tolist()
    [1, 2, 127]
    >>> convert(np.array([1000.0], np.float32), f32, f8e4m3).view(np.uint8).tolist()  # NaN mode
    [127]
    >>> convert(np.array([2.5, -2.5, 3.5]), f32, i32, overflow="saturate").tolist()
    [2, -2, 4]
    """
    src = scalar(src)
    dst = scalar(dst)
    arr = as_storage(src, values)
    if overflow is None:
        overflow = "error" if dst.kind == "int" else (
            "inf" if _as_float(dst).has_inf else "nan" if _as_float(dst).has_nan else "saturate")
    _check_modes(dst, rounding, overflow)
    if src is dst:
        return arr.copy()
    if dst.kind == "int":
        d = _as_int(dst)
        if src.kind == "int":
            if fast_dtypes.INT_CONVERT.on:
                fast = fast_dtypes.int_convert(arr, src, d, overflow)
                if fast is not None:
                    return fast
            return _int_overflow(arr.astype(np.int64), d, overflow)
        x = _to_f64(arr)
        nan = np.isnan(x)
        if overflow in ("wrap", "error") and (nan.any() or np.isinf(x).any()):
            raise DtypeError(
                f"cannot convert NaN or inf to {d!r} with overflow={overflow!r}",
                fix="pass overflow='saturate' (NaN -> 0, ±inf -> the range ends)",
            )
        r = np.rint(x) if rounding == "nearest_even" else np.trunc(x)
        r = np.where(nan, 0.0, r)
        return _int_overflow(r, d, overflow)
    f = _as_float(dst)
    if src.kind == "float" and rounding == "nearest_even" and overflow == "inf" and f.has_inf:
        # numpy's and ml_dtypes' float casts round once to nearest even and overflow to ±inf: the same
        # bits as below, except for NaN payloads (made canonical below)
        if fast_dtypes.FLOAT_NAN_AFTER.on:
            cast = fast_dtypes.float_cast_without_nan(arr, f.storage)
            if cast is not None:
                return cast
        with np.errstate(over="ignore", invalid="ignore"):
            if not np.isnan(arr).any():
                out: npt.NDArray[Any] = arr.astype(f.storage)
                return out
    x = _to_f64(arr)  # exact for every source type (i32 < 2**53, floats widen exactly)
    if not f.has_nan and np.isnan(x).any():
        raise DtypeError(f"NaN has no {f!r} pattern (E2M1 is finite only)", fix="replace NaN before converting")
    return _decode_bits_to_storage(_encode_float(x, f, rounding, overflow), f)


def encode_nearest(dtype: type[FloatScalar], x: npt.NDArray[np.float64], overflow: Overflow) -> npt.NDArray[Any]:
    """float64 values rounded once to nearest (ties to even) into ``dtype.storage`` with the overflow mode of
    :func:`convert`: the exact path for a type whose numpy cast would not say when it overflows (ml_dtypes'
    E2M1 cast saturates silently and turns NaN into -0).  NaN into a finite-only type is refused (``f4e2m1``,
    design API.md §8)."""
    _check_modes(dtype, "nearest_even", overflow)
    if not dtype.has_nan and np.isnan(x).any():
        raise DtypeError(f"NaN has no {dtype!r} pattern (E2M1 is finite only)", fix="replace NaN first")
    return _decode_bits_to_storage(_encode_float(x, dtype, "nearest_even", overflow), dtype)


@overload
def is_representable(value: int | float | np.generic, dtype: type[Scalar]) -> bool: ...


@overload
def is_representable(value: npt.NDArray[Any], dtype: type[Scalar]) -> npt.NDArray[np.bool_]: ...


def is_representable(
    value: int | float | np.generic | npt.NDArray[Any], dtype: type[Scalar]
) -> bool | npt.NDArray[np.bool_]:
    """Whether ``value`` is exactly a value of ``dtype`` (elementwise for arrays).

    Integers: an integral value within ``dtype.min..dtype.max`` (e.g. a fetch zero-point must fit the target
    type, manual L2117).  Floats: exactly representable; NaN always, ±inf only if ``dtype.has_inf``.

    >>> is_representable(10, i8), is_representable(128, i8), is_representable(-16, i5)
    (True, False, True)
    >>> is_representable(0.1, f32), is_representable(448.0, f8e4m3), is_representable(float("inf"), f8e4m3)
    (False, True, False)
    """
    dtype = scalar(dtype)
    if isinstance(value, np.ndarray):
        return _representable_array(value, dtype)
    if isinstance(value, np.generic):
        return bool(_representable_array(np.asarray(value).reshape(1), dtype)[0])
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DtypeError(f"is_representable needs a number, got {value!r}")
    if isinstance(value, int):
        if dtype.kind == "int":
            return dtype.min <= value <= dtype.max
        try:
            fv = float(value)
        except OverflowError:
            return False
        if int(fv) != value:
            return False
        return bool(_float_representable(np.array([fv]), _as_float(dtype))[0])
    return bool(_representable_array(np.array([value], np.float64), dtype)[0])


def _representable_array(value: npt.NDArray[Any], dtype: type[Scalar]) -> npt.NDArray[np.bool_]:
    if value.dtype.kind in "iu":
        if dtype.kind == "int":
            return np.asarray((value >= dtype.min) & (value <= dtype.max))
        if value.size and (value.max() > 2**53 or value.min() < -(2**53)):
            out = np.array([is_representable(int(v), dtype) for v in value.flat], bool)
            return out.reshape(value.shape)
        x = _to_f64(value)
    elif _is_float_dtype(value.dtype):
        x = _to_f64(value)
    else:
        raise DtypeError(f"is_representable needs numbers, got an array of {value.dtype}")
    if dtype.kind == "int":
        with np.errstate(invalid="ignore"):
            return np.asarray(np.isfinite(x) & (x == np.trunc(x)) & (x >= dtype.min) & (x <= dtype.max))
    return _float_representable(x, _as_float(dtype))


# ----------------------------------------------------------------------------------------------------------
# value sets and random values

_VALUE_CACHE: dict[str, npt.NDArray[np.float64]] = {}


def representable_values(dtype: type[FloatScalar]) -> npt.NDArray[np.float64]:
    """Every finite value of a float type of at most 16 bits, sorted ascending, as float64 (one zero): the
    exhaustive domain the fp8 and 16-bit formats of seed 000 and manual L1967–1979 allow.

    >>> v = representable_values(f8e4m3); v.size, float(v[0]), float(v[-1])
    (253, -448.0, 448.0)
    """
    dtype = _as_float(scalar(dtype))
    if dtype.bits > 16:
        raise DtypeError(f"{dtype!r} has too many values to list")
    cached = _VALUE_CACHE.get(dtype.name)
    if cached is None:
        vals = _decode_float(np.arange(1 << dtype.bits, dtype=np.int64), dtype)
        cached = np.unique(vals[np.isfinite(vals)] + 0.0)  # + 0.0 folds -0 into +0
        _VALUE_CACHE[dtype.name] = cached
    return cached


def _round_down(f: type[FloatScalar], u: npt.NDArray[np.float64], lowest: float) -> npt.NDArray[Any]:
    """The largest value of ``f`` (at most 16 bits) not above each ``u``, but at least ``lowest`` (a value of
    ``f``), never -0, as ``f.storage``: the table lookup ``inside[searchsorted(inside, u) - 1]`` of
    :func:`random_values` without the search, built from the float64 bits (tests/test_dtypes_fast.py compares
    it with the table and with the cast-and-step it replaced).  ``|u| <= f.max``.

    Where ``|u|`` is at least ``f``'s smallest normal the result is a normal number: cut the float64 fraction to
    ``f.mantissa_bits`` bits toward zero (the floor of a positive); for a negative first add the cut-off bits'
    all-ones, so that its magnitude rounds up and an exact value stays (the floor of a negative); re-bias the
    exponent and put the sign on top (both formats are sign-magnitude; ``|u| <= f.max`` keeps the exponent
    below inf/NaN).  Below that the values of ``f`` are the multiples of its smallest subnormal ``s``: the result
    is ``floor(u / s)`` subnormal steps (``-2**mantissa_bits`` steps is the negative smallest normal, whose
    pattern is the same integer), zero and -0 give +0."""
    m = f.mantissa_bits
    cut = 52 - m  # fraction bits float64 has beyond f's
    flat_u = u.reshape(-1)
    b = flat_u.view(np.uint64)
    t = (b.view(np.int64) >> 63).view(np.uint64)  # all ones for a negative, else 0
    np.bitwise_and(t, (1 << cut) - 1, out=t)
    np.add(t, b, out=t)  # a negative's magnitude rounds up; the sign bit stays (|u| is finite)
    np.right_shift(t, cut, out=t)  # sign | 11-bit exponent | m-bit fraction
    np.subtract(t, (1023 - f.bias) << m, out=t)  # re-biased: f's exponent field, >= 1 for a normal result
    bits = t.astype(f.bits_dtype)  # drops float64's sign; f's sign bit is 0 (the field has exponent_bits bits)
    sign = (flat_u < 0).astype(f.bits_dtype)
    np.multiply(sign, 1 << (f.bits - 1), out=sign)  # (numpy's uint8 shift is slower than its multiply)
    np.bitwise_or(bits, sign, out=bits)
    small = flat_u < f.smallest_normal
    np.logical_and(small, flat_u > -f.smallest_normal, out=small)
    if small.any():
        where = np.flatnonzero(small)
        steps = np.floor(flat_u[where] * math.ldexp(1.0, f.bias - 1 + m))  # exact: a power-of-two scaling
        mag = np.abs(steps).astype(np.int64)  # -0 steps is 0
        bits[where] = np.where(steps < 0, mag | (1 << (f.bits - 1)), mag).astype(f.bits_dtype)
    # at least lowest: floor(u) < lowest ⇔ u < lowest.  A negative's pattern grows with its magnitude, so for a
    # negative lowest the patterns below it are the larger ones; a positive lowest has only positives around
    # (no value of f lies in [flo, lowest), so flo > 0 and u > 0), the patterns below it are the smaller ones
    low = np.asarray(lowest).astype(f.storage).view(f.bits_dtype)
    if lowest < 0:
        np.minimum(bits, low, out=bits)
    elif lowest > 0:
        np.maximum(bits, low, out=bits)
    else:  # +0: the negatives (a range starting in (-smallest_subnormal, 0)) become +0
        np.copyto(bits, low, where=flat_u < 0)
    out: npt.NDArray[Any] = bits.view(f.storage).reshape(u.shape)
    return out


def random_values(
    dtype: type[Scalar],
    shape: int | tuple[int, ...],
    rng: np.random.Generator,
    *,
    low: float | None = None,
    high: float | None = None,
) -> npt.NDArray[Any]:
    """Random finite values of ``dtype`` in ``[low, high)`` as ``dtype.storage`` (for ``HostTensor.rand``,
    manual L52, L192; the distribution is a simulator choice, docs/manual-notes.md "dtypes").

    Integers: uniform over ``[low, high)``; by default the whole range ``dtype.min..dtype.max`` inclusive.
    Floats: by default ``[-2, 2)`` so that kernels compare well; a uniform float64 ``low + (high - low) * r``
    (the doubles of ``rng.uniform``), never NaN, inf or -0.  Types of at most 16 bits: rounded down to a value
    of ``dtype``, at least the smallest value >= ``low`` (:func:`_round_down`); a draw that float64 rounding
    puts on ``high`` itself (numpy's uniform allows it) stays ``high`` when ``high`` is a value of ``dtype``.
    f32: rounded to nearest, then one step back inside ``[low, high)`` where the rounding left it.

    >>> v = random_values(f8e4m3, (4, 5), np.random.default_rng(0))
    >>> v.shape, v.dtype.name, bool(((v.astype(float) >= -2) & (v.astype(float) < 2)).all())
    ((4, 5), 'float8_e4m3fn', True)
    """
    dtype = scalar(dtype)
    if dtype.kind == "int":
        lo = dtype.min if low is None else low
        hi_incl = dtype.max if high is None else high - 1
        if int(lo) != lo or int(hi_incl) != hi_incl:
            raise DtypeError(f"{dtype!r} random range needs integer bounds, got low={low!r}, high={high!r}")
        lo_i, hi_i = int(lo), int(hi_incl)
        if lo_i < dtype.min or hi_i > dtype.max or lo_i > hi_i:
            raise DtypeError(
                f"random range [{lo_i}, {hi_i}] is empty or outside {dtype!r}'s range "
                f"{dtype.min}..{dtype.max}"
            )
        return rng.integers(lo_i, hi_i, size=shape, endpoint=True, dtype=np.int64).astype(dtype.storage)
    f = _as_float(dtype)
    flo = -2.0 if low is None else float(low)
    fhi = 2.0 if high is None else float(high)
    if not (math.isfinite(flo) and math.isfinite(fhi)) or not f.min <= flo < fhi <= f.max:
        raise DtypeError(f"random range [{flo}, {fhi}) is empty or outside {f!r}'s finite range ±{f.max}")
    # the doubles of rng.uniform(flo, fhi, size=shape), which computes flo + (fhi - flo) * rng.random() in
    # float64 (tests/test_dtypes_fast.py checks the two agree bit for bit), without its slower loop
    u = rng.random(size=shape)
    np.multiply(u, fhi - flo, out=u)
    np.add(u, flo, out=u)
    if f.bits <= 16:
        table = representable_values(f)
        first = int(np.searchsorted(table, flo, side="left"))  # the smallest value >= flo
        if first == table.size or table[first] >= fhi:
            raise DtypeError(f"no {f!r} value lies in [{flo}, {fhi})")
        return _round_down(f, u, float(table[first]))
    v = u.astype(np.float32)  # to nearest, then back inside [flo, fhi) by one step where it left
    above = v >= fhi
    if above.any():
        v[above] = np.nextafter(v[above], np.float32(-np.inf))
    below = v < flo  # after the step down, as the two passes of the reference
    if below.any():
        v[below] = np.nextafter(v[below], np.float32(np.inf))
    np.add(v, np.float32(0.0), out=v)  # -0 is +0
    return v
