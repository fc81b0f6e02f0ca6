"""Exact arithmetic of every Vector Engine operator, vectorised with numpy (manual L4803–4972, L5390–5402, L6611).

All functions take and return storage arrays (``int32`` for i32, ``float32`` for f32) of any shape and are
pure.  Integer work is done in ``int64`` and then wrapped or saturated as the operator's name says; float work
is IEEE binary32 with round-to-nearest-even, one rounding per operation (``FmaF`` is fused: one rounding of the
exact a·b+c).  Where the manual gives no semantics the choice is documented here and in docs/manual-notes.md:

* shifts take the count as a non-negative amount and mean multiplication/division by 2**b (a count of 32
  or more shifts every bit out); a negative count is refused (:class:`~visa.errors.DtypeError`);
* ``ArithRightShiftRound`` rounds half up, ``(a + 2**(b-1)) >> b`` in 64 bits (the same rounding as
  ``MulFxp``'s Q31 ``((p >> 30) + 1) >> 1``);
* ``MaskMulF(a, b)`` is a zero-masking multiply: 0.0 when either factor is ±0 (even if the other is
  ±inf or NaN), else a·b; ``MaskFmaF(a, b, c)`` is ``c + MaskMulF(a, b)`` with one rounding;
* Clip ``AbsMin``/``AbsMax`` compare magnitudes exactly (|i32::MIN| = 2**31 is the largest) and return the
  second argument on ties; f32 ``Min``/``Max`` (Clip and reductions) return the non-NaN operand (numpy
  ``fmin``/``fmax``), and of two zeros ``max(+0, −0) = +0``, ``min(+0, −0) = −0`` (:func:`fmax32`);
* transcendental functions are computed in binary64 and rounded once to binary32 (the hardware's accuracy is
  not documented, L4874–4906).

>>> import numpy as np
>>> fxp("MulFxp", np.array([2**30, 3, -2**31], np.int32), np.array([2**30, 2**30, -2**31], np.int32)).tolist()
[536870912, 2, 2147483647]
>>> fp_to_fxp(np.array([2.5, -2.5, np.nan, -np.inf], np.float32), 31).tolist()
[3, -3, 2147483647, -2147483648]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.errors import DtypeError

__all__ = [
    "I32_MIN", "I32_MAX", "wrap32", "sat32", "logic_i32", "logic_f32", "fxp", "fxp_to_fp", "fp_to_fxp",
    "fp_unary", "fp_binary", "fp_ternary", "fma_f32", "clip_i32", "clip_f32", "reduce_identity",
    "combine", "BINARY", "CONVERSIONS", "UFUNC", "fmax32", "fmin32",
]

I32_MIN = -(2**31)
I32_MAX = 2**31 - 1
Arr = npt.NDArray[Any]


def wrap32(x: Arr) -> Arr:
    """Two's-complement wrap of int64 values to int32."""
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def sat32(x: Arr) -> Arr:
    """Saturate int64 values to the i32 range."""
    return np.clip(np.asarray(x, dtype=np.int64), I32_MIN, I32_MAX).astype(np.int32)


def _count(b: Arr, op: str) -> Arr:
    bb = np.asarray(b, dtype=np.int64)
    if bb.size and int(bb.min()) < 0:
        raise DtypeError(f"{op}: a shift count must be non-negative, got {int(bb.min())}", call=op,
                         fix="shift by 0..31 (a count of 32 or more shifts every bit out)")
    return np.minimum(bb, 63)


def _shl_wrap(a: Arr, b: Arr) -> Arr:
    cnt = _count(b, "LeftShift")
    u = np.asarray(a, dtype=np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    out = np.where(cnt >= 32, np.uint64(0), (u << np.minimum(cnt, 31).astype(np.uint64)) & np.uint64(0xFFFFFFFF))
    return out.astype(np.uint32).view(np.int32)


def _shr_logic(a: Arr, b: Arr, op: str) -> Arr:
    cnt = _count(b, op)
    u = np.asarray(a, dtype=np.int32).view(np.uint32).astype(np.uint64)
    out = np.where(cnt >= 32, np.uint64(0), u >> np.minimum(cnt, 31).astype(np.uint64))
    return out.astype(np.uint32).view(np.int32)


def _shr_arith(a: Arr, b: Arr, op: str) -> Arr:
    cnt = _count(b, op)
    out: Arr = (np.asarray(a, dtype=np.int64) >> np.minimum(cnt, 63)).astype(np.int32)
    return out


def _shr_round(a: Arr, b: Arr) -> Arr:
    cnt = _count(b, "ArithRightShiftRound")
    a64 = np.asarray(a, dtype=np.int64)
    c = np.minimum(cnt, 62)
    half = np.where(c > 0, np.left_shift(np.int64(1), np.maximum(c - 1, 0)), 0)
    out: Arr = ((a64 + half) >> c).astype(np.int32)
    return out


def _shl_sat(a: Arr, b: Arr) -> Arr:
    cnt = _count(b, "LeftShiftSat")
    a64 = np.asarray(a, dtype=np.int64)
    big = cnt >= 32
    prod = a64 << np.where(big, 0, cnt)
    res = np.where(big, np.sign(a64) * (2**40), prod)
    return sat32(res)


def _mul_fxp(a: Arr, b: Arr) -> Arr:
    p = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    return sat32(((p >> 30) + 1) >> 1)


def _i64(x: Arr) -> Arr:
    return np.asarray(x, dtype=np.int64)


def _ring(op: Callable[[Arr, Arr], Arr]) -> Callable[[Arr, Arr], Arr]:
    """``wrap32(op(a, b))`` for an op of the integers modulo 2^32 (add, subtract, multiply): wrapping the
    operands first gives the same bits (reduction mod 2^32 commutes with them), so the op runs on int32 directly
    — no int64 copies of the stream."""
    def run(a: Arr, b: Arr) -> Arr:
        with np.errstate(over="ignore"):
            out: Arr = np.asarray(op(np.asarray(a).astype(np.int32, copy=False),
                                     np.asarray(b).astype(np.int32, copy=False)), dtype=np.int32)
        return out
    return run


def _saturating(op: np.ufunc) -> Callable[[Arr, Arr], Arr]:
    """``sat32(op(a, b))`` computed in one int64 array, in place (the exact sum or difference of two i32 fits
    int64; then clamped to the i32 range, L4827)."""
    def run(a: Arr, b: Arr) -> Arr:
        x, y = np.asarray(a), np.asarray(b)
        acc = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype=np.int64)
        np.copyto(acc, x, casting="unsafe")  # (an i32 array or constant: exact in int64)
        op(acc, y.astype(np.int64), out=acc)
        np.clip(acc, I32_MIN, I32_MAX, out=acc)
        return acc.astype(np.int32)
    return run


_FXP: dict[str, Callable[[Arr, Arr], Arr]] = {
    "AddFxp": _ring(np.add),
    "AddFxpSat": _saturating(np.add),
    "SubFxp": _ring(np.subtract),
    "SubFxpSat": _saturating(np.subtract),
    "LeftShift": _shl_wrap,
    "LeftShiftSat": _shl_sat,
    "MulFxp": _mul_fxp,
    "MulInt": _ring(np.multiply),
    "LogicRightShift": lambda a, b: _shr_logic(a, b, "LogicRightShift"),
    "ArithRightShift": lambda a, b: _shr_arith(a, b, "ArithRightShift"),
    "ArithRightShiftRound": _shr_round,
}

_LOGIC_I32: dict[str, Callable[[Arr, Arr], Arr]] = {
    "BitAnd": lambda a, b: np.bitwise_and(np.asarray(a, np.int32), np.asarray(b, np.int32)),
    "BitOr": lambda a, b: np.bitwise_or(np.asarray(a, np.int32), np.asarray(b, np.int32)),
    "BitXor": lambda a, b: np.bitwise_xor(np.asarray(a, np.int32), np.asarray(b, np.int32)),
    "LeftShift": _shl_wrap,
    "LogicRightShift": lambda a, b: _shr_logic(a, b, "LogicRightShift"),
    "ArithRightShift": lambda a, b: _shr_arith(a, b, "ArithRightShift"),
}


def fxp(name: str, a: Arr, b: Arr) -> Arr:
    """``FxpBinaryOp`` ``name`` on i32 arrays (manual table L4823–4836; semantics in the module docstring)."""
    return _FXP[name](a, b)


def logic_i32(name: str, a: Arr, b: Arr) -> Arr:
    """``LogicBinaryOpI32`` ``name`` (L4806–4815)."""
    return _LOGIC_I32[name](a, b)


def _bits(x: Arr) -> Arr:
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32)


def logic_f32(name: str, a: Arr, b: Arr) -> Arr:
    """``LogicBinaryOpF32`` ``name``: the bitwise operator on the IEEE bit patterns (L4816–4820)."""
    ops: dict[str, np.ufunc] = {"BitAnd": np.bitwise_and, "BitOr": np.bitwise_or, "BitXor": np.bitwise_xor}
    fn = ops[name]
    ua, ub = np.broadcast_arrays(_bits(a), _bits(b))
    return np.asarray(fn(ua, ub), dtype=np.uint32).view(np.float32)


def fxp_to_fp(x: Arr, int_width: int) -> Arr:
    """``vector_fxp_to_fp(int_width)``: signed fixed point with ``31 - int_width`` fraction bits to f32, RNE.

    ``int_width = 31`` is a plain integer conversion (L4837–4841).  One rounding: the int → f32 conversion
    is RNE and the scaling by a power of two is exact (the result is never subnormal).
    """
    f = np.asarray(x, dtype=np.int32).astype(np.float32)
    if int_width != 31:
        np.multiply(f, np.float32(2.0 ** -(31 - int_width)), out=f)
    return f


def round_half_away(x: Arr) -> Arr:
    """Round binary64 values to the nearest integer, ties away from zero (exact for every input)."""
    r = np.trunc(x)
    frac = x - r
    out: Arr = r + np.where(np.abs(frac) >= 0.5, np.sign(x), 0.0)
    return out


def fp_to_fxp(x: Arr, int_width: int) -> Arr:
    """``vector_fp_to_fxp(int_width)``: f32 to signed fixed point with ``31 - int_width`` fraction bits.

    Rounds half away from zero and saturates; +inf → MAX, -inf → MIN, NaN → MAX when its sign bit is
    clear and MIN when set (L4948–4952).
    """
    f = np.asarray(x, dtype=np.float32)
    d = f.astype(np.float64)
    if int_width != 31:
        d *= 2.0 ** (31 - int_width)  # exact: a power of two, far inside binary64's range
    # Saturate first, then round half away from zero as trunc(d + ±0.5), in place (NaN stays NaN throughout).
    # The addition is exact wherever it matters: d has at most 24 significant bits, so for |d| >= 2**-30 the sum
    # spans at most 53 bits; a smaller |d| gives a sum in [0.5, 0.5 + 2**-29], whose trunc is 0 either way; the
    # clip bounds ±(2**31 - 1), -2**31 plus ±0.5 are exact.  (tests pin it against round_half_away.)
    np.clip(d, I32_MIN, I32_MAX, out=d)
    d += np.copysign(0.5, d)
    np.trunc(d, out=d)
    nan = np.isnan(d)
    if nan.any():
        d[nan] = np.where(np.signbit(f[nan]), I32_MIN, I32_MAX)
    return d.astype(np.int32)


#: The conversion stages (L4837–4841, L4948–4952): the function of ``(values, int_width)`` and the output dtype.
CONVERSIONS: dict[str, tuple[Callable[[Arr, int], Arr], str]] = {"FxpToFp": (fxp_to_fp, "f32"),
                                                                 "FpToFxp": (fp_to_fxp, "i32")}

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: Arr) -> Arr:
    with np.errstate(over="ignore"):
        out: Arr = 1.0 / (1.0 + np.exp(-x))
    return out


_UNARY: dict[str, Callable[[Arr], Arr]] = {
    "Exp": np.exp,
    "NegExp": lambda x: np.exp(-x),
    "Sqrt": np.sqrt,
    "Tanh": np.tanh,
    "Sigmoid": _sigmoid,
    "Erf": lambda x: np.asarray(_erf(x), dtype=np.float64),
    "Log": np.log,
    "Sin": np.sin,
    "Cos": np.cos,
}


def fp_unary(name: str, x: Arr) -> Arr:
    """``FpUnaryOp`` ``name`` (L4878–4888): computed in binary64, rounded once to binary32."""
    with np.errstate(all="ignore"):
        return np.asarray(_UNARY[name](np.asarray(x, dtype=np.float32).astype(np.float64)), dtype=np.float32)


def _mask_mul(a: Arr, b: Arr) -> Arr:
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    with np.errstate(all="ignore"):
        prod = a32 * b32
    return np.where((a32 == 0) | (b32 == 0), np.float32(0.0), prod).astype(np.float32)


def fp_binary(name: str, a: Arr, b: Arr) -> Arr:
    """``FpBinaryOp`` ``name`` (``AddF``, ``SubF``, ``MulF``, ``MaskMulF``, ``DivF``; L4889–4897)."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    with np.errstate(all="ignore"):
        if name == "AddF":
            return np.asarray(a32 + b32, np.float32)
        if name == "SubF":
            return np.asarray(a32 - b32, np.float32)
        if name == "MulF":
            return np.asarray(a32 * b32, np.float32)
        if name == "DivF":
            return np.asarray(a32 / b32, np.float32)
        if name == "MaskMulF":
            return _mask_mul(a32, b32)
    raise KeyError(name)


def fma_f32(a: Arr, b: Arr, c: Arr) -> Arr:
    """Fused multiply-add in binary32: ``a·b + c`` rounded once (round-to-odd in binary64, then RNE).

    a·b is exact in binary64 (24 + 24 bits); the sum is computed exactly as ``s + e`` (TwoSum), ``s`` is
    made odd when the sum was inexact, and the final RNE to binary32 is then the correctly rounded result
    (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums", 2008).
    """
    a64 = np.asarray(a, np.float32).astype(np.float64)
    b64 = np.asarray(b, np.float32).astype(np.float64)
    c64 = np.asarray(c, np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        finite = np.isfinite(s) & np.isfinite(e)
        inexact = finite & (e != 0)
        bits = np.ascontiguousarray(s).view(np.uint64)
        even = (bits & np.uint64(1)) == 0
        toward = np.nextafter(s, np.where(e > 0, np.inf, -np.inf))
        s = np.where(inexact & even, toward, s)
        return np.asarray(s.astype(np.float32), np.float32)


def fp_ternary(name: str, a: Arr, b: Arr, c: Arr) -> Arr:
    """``FpTernaryOp`` ``FmaF`` (fused a·b + c) or ``MaskFmaF`` (c + MaskMulF(a, b), one rounding)."""
    if name == "FmaF":
        return fma_f32(a, b, c)
    if name == "MaskFmaF":
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        zero = (a32 == 0) | (b32 == 0)
        fused = fma_f32(np.where(zero, np.float32(0.0), a32), np.where(zero, np.float32(0.0), b32), c)
        return fused
    raise KeyError(name)


def _absmin_i32(a: Arr, b: Arr) -> Arr:
    a64, b64 = _i64(a), _i64(b)
    return np.where(np.abs(a64) < np.abs(b64), a64, b64).astype(np.int32)


def _absmax_i32(a: Arr, b: Arr) -> Arr:
    a64, b64 = _i64(a), _i64(b)
    return np.where(np.abs(a64) > np.abs(b64), a64, b64).astype(np.int32)


_CLIP_I32: dict[str, Callable[[Arr, Arr], Arr]] = {
    "Min": lambda a, b: np.minimum(np.asarray(a, np.int32), np.asarray(b, np.int32)),
    "Max": lambda a, b: np.maximum(np.asarray(a, np.int32), np.asarray(b, np.int32)),
    "AbsMin": _absmin_i32,
    "AbsMax": _absmax_i32,
    "AddFxp": _ring(np.add),
    "AddFxpSat": _saturating(np.add),
}


def clip_i32(name: str, a: Arr, b: Arr) -> Arr:
    """``ClipBinaryOpI32`` ``name`` (L4955–4963)."""
    return _CLIP_I32[name](a, b)


def clip_f32(name: str, a: Arr, b: Arr) -> Arr:
    """``ClipBinaryOpF32`` ``name`` (L4964–4972)."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    with np.errstate(all="ignore"):
        if name == "Min":
            return fmin32(a32, b32)
        if name == "Max":
            return fmax32(a32, b32)
        if name == "AbsMin":
            return np.asarray(np.where(np.abs(a32) < np.abs(b32), a32, b32), np.float32)
        if name == "AbsMax":
            return np.asarray(np.where(np.abs(a32) > np.abs(b32), a32, b32), np.float32)
        if name == "Add":
            return np.asarray(a32 + b32, np.float32)
    raise KeyError(name)


#: The operators whose arithmetic is exactly one numpy ufunc on the storage type (int32 operations wrap, float32
#: ones round once, IEEE): ``UFUNC[family][name](a, b)`` equals ``BINARY[family](name, a, b)`` for arrays of the
#: storage type (tests pin it), and it takes ``out=`` (:mod:`visa.engines.deferred`).
UFUNC: dict[str, dict[str, np.ufunc]] = {
    "FxpBinaryOp": {"AddFxp": np.add, "SubFxp": np.subtract, "MulInt": np.multiply},
    "ClipBinaryOpI32": {"Min": np.minimum, "Max": np.maximum, "AddFxp": np.add},
    "LogicBinaryOpI32": {"BitAnd": np.bitwise_and, "BitOr": np.bitwise_or, "BitXor": np.bitwise_xor},
    "FpBinaryOp": {"AddF": np.add, "SubF": np.subtract, "MulF": np.multiply, "DivF": np.divide},
    "FpDivBinaryOp": {"DivF": np.divide},
    "ClipBinaryOpF32": {"Add": np.add},  # (Min/Max: numpy's fmin/fmax leave the sign of a ±0 pair open: fmax32)
}

#: The arithmetic of each binary operator family (``VeOp.FAMILY``), called with the operator's base name.
BINARY: dict[str, Callable[[str, Arr, Arr], Arr]] = {
    "LogicBinaryOpI32": logic_i32, "LogicBinaryOpF32": logic_f32, "FxpBinaryOp": fxp, "FpBinaryOp": fp_binary,
    "FpDivBinaryOp": fp_binary, "ClipBinaryOpI32": clip_i32, "ClipBinaryOpF32": clip_f32,
}


def fmax32(a: Arr, b: Arr) -> Arr:
    """f32 ``max`` of ``ClipBinaryOpF32::Max`` (L4964–4972) and the Max reductions (L5390–5402), as the reference's
    ``f32::max`` (the non-NaN operand, numpy's ``fmax``; spec digest 3, "f32 min
    and max"), with the sign of a pair of zeros decided: ``max(+0, −0) = +0`` (IEEE 754-2019 ``maximumNumber``).
    Neither the manual nor Rust fixes it, and numpy's ``fmax`` returns either sign depending on its inner loop
    (a lane's position in the array), so the reference and a fast path over another layout disagreed.

    >>> fmax32(np.float32([0.0, -0.0, -0.0]), np.float32([-0.0, 0.0, -0.0])).view(np.uint32).tolist()
    [0, 0, 2147483648]
    """
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    with np.errstate(all="ignore"):
        return _pair_zeros(np.asarray(np.fmax(a32, b32), np.float32), a32, b32, np.bitwise_and)


def fmin32(a: Arr, b: Arr) -> Arr:
    """f32 ``min`` as :func:`fmax32`: the non-NaN operand, and ``min(+0, −0) = −0``.

    >>> fmin32(np.float32([0.0, -0.0, 0.0]), np.float32([-0.0, 0.0, 0.0])).view(np.uint32).tolist()
    [2147483648, 2147483648, 0]
    """
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    with np.errstate(all="ignore"):
        return _pair_zeros(np.asarray(np.fmin(a32, b32), np.float32), a32, b32, np.bitwise_or)


def _pair_zeros(out: Arr, a: Arr, b: Arr, join: np.ufunc) -> Arr:
    """``out`` with every lane where both operands are zeros set to their sign bits joined (AND: +0 unless both
    are −0; OR: −0 unless both are +0); the other lanes are one operand exactly, whatever numpy's loop."""
    small, large = (a, b) if np.size(a) <= np.size(b) else (b, a)
    zeros = small == 0  # (the smaller operand first: a clip by a nonzero constant has no pair of zeros)
    if not zeros.any():
        return out
    both = (large == 0) & zeros
    if not both.any():
        return out
    bits = join(np.broadcast_to(a, out.shape).view(np.uint32), np.broadcast_to(b, out.shape).view(np.uint32))
    return np.asarray(np.where(both, bits.view(np.float32), out), np.float32)


def _reduce_zeros(out: Arr, x: Arr, *, positive: bool) -> Arr:
    """An f32 ``Max`` (``positive``) or ``Min`` reduction ``out`` of ``x`` over its last axis with the sign of a
    zero result decided as :func:`fmax32` / :func:`fmin32` decide it pair by pair, whatever the order: a zero
    maximum is +0 if any member is +0, a zero minimum −0 if any member is −0."""
    zero = out == 0
    if not zero.any():
        return out
    sign = np.signbit(x)
    member = (x == 0) & (~sign if positive else sign)
    hit = member.any(axis=-1)
    signed = np.where(hit, np.float32(0.0 if positive else -0.0), np.float32(-0.0 if positive else 0.0))
    return np.asarray(np.where(zero, signed, out), np.float32)


# ------------------------------------------------------------------------------------------- reductions


def reduce_identity(op: str, dtype: str) -> int | float:
    """The identity element of a reduction (L5390–5402): 0 / MIN / MAX, 0.0 / -inf / +inf, 1.0 for Mul."""
    table: dict[tuple[str, str], int | float] = {
        ("AddSat", "i32"): 0, ("Add", "i32"): 0, ("Max", "i32"): I32_MIN, ("Min", "i32"): I32_MAX,
        ("Add", "f32"): 0.0, ("Max", "f32"): -math.inf, ("Min", "f32"): math.inf, ("Mul", "f32"): 1.0,
    }
    return table[(op, dtype)]


def combine(op: str, dtype: str, a: Arr, b: Arr) -> Arr:
    """One step of a reduction: ``op(a, b)`` with the operator's arithmetic (wrap, saturate, f32 RNE)."""
    if dtype == "i32":
        if op == "AddSat":
            return sat32(_i64(a) + _i64(b))
        if op == "Add":
            return wrap32(_i64(a) + _i64(b))
        if op == "Max":
            return np.maximum(np.asarray(a, np.int32), np.asarray(b, np.int32))
        if op == "Min":
            return np.minimum(np.asarray(a, np.int32), np.asarray(b, np.int32))
    else:
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        with np.errstate(all="ignore"):
            if op == "Add":
                return np.asarray(a32 + b32, np.float32)
            if op == "Mul":
                return np.asarray(a32 * b32, np.float32)
            if op == "Max":
                return fmax32(a32, b32)
            if op == "Min":
                return fmin32(a32, b32)
    raise KeyError((op, dtype))


#: Reductions of at most this many steps saturate step by step (a pass over the rows a step); longer ones sum
#: in int64 and replay only the rows whose partial sums leave the i32 range.
_STEPWISE = 16


def sequential_reduce(op: str, dtype: str, x: Arr, axis: int = -1) -> Arr:
    """Reduce ``x`` along ``axis`` in index order, starting from the identity: ``op(…op(op(id, x0), x1)…)``.

    f32 ``Max``/``Min`` are :func:`fmax32`/:func:`fmin32` (maximumNumber, minimumNumber: the non-NaN operand), so a
    reduction whose every member is NaN gives the identity (−inf for Max, +inf for Min, L5398–5402), as one
    with identity padding does (L5554–5560); numpy's ``fmax.reduce`` alone starts from the first member and gave
    NaN (found by a review; docs/manual-notes.md).

    Vectorised: order-free operators reduce directly; f32 ``Add``/``Mul`` use numpy's sequential
    ``accumulate``; i32 ``AddSat`` saturates step by step over all rows at once when there are few steps (an
    inter-slice ring), else sums in int64 and replays step by step only where a partial sum leaves the i32 range
    (saturation then depends on the order).
    """
    x = np.moveaxis(np.asarray(x), axis, -1)
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], reduce_identity(op, dtype), dtype=x.dtype)
    if dtype == "i32":
        if op == "Max":
            return np.asarray(np.max(x, axis=-1), np.int32)
        if op == "Min":
            return np.asarray(np.min(x, axis=-1), np.int32)
        if op == "Add":
            return wrap32(np.asarray(np.sum(x, axis=-1, dtype=np.int64)))
        if x.shape[-1] <= _STEPWISE:  # a short ring: saturate step by step over every row at once
            acc = x[..., 0].astype(np.int64)
            for k in range(1, x.shape[-1]):
                acc += x[..., k]
                np.clip(acc, I32_MIN, I32_MAX, out=acc)
            return acc.astype(np.int32)
        partial = np.cumsum(x, axis=-1, dtype=np.int64)
        over = np.any((partial > I32_MAX) | (partial < I32_MIN), axis=-1)
        out = np.array(sat32(partial[..., -1]), dtype=np.int32).reshape(partial.shape[:-1])
        if np.any(over):
            rows = x[over]
            acc = np.zeros(rows.shape[:-1], dtype=np.int64)
            for k in range(rows.shape[-1]):  # rare: only rows whose partial sums saturate
                acc = np.clip(acc + rows[..., k], I32_MIN, I32_MAX)
            out[over] = acc.astype(np.int32)
        return out
    with np.errstate(all="ignore"):
        if op in ("Max", "Min"):  # from the identity: every member NaN gives it (−inf, +inf), as fmax32 pair by pair
            ufunc = np.fmax if op == "Max" else np.fmin
            red = ufunc(ufunc.reduce(x, axis=-1), np.float32(reduce_identity(op, dtype)))
            return _reduce_zeros(np.asarray(red, np.float32), x, positive=op == "Max")
        if op == "Add":
            acc = np.add.accumulate(x, axis=-1, dtype=np.float32)[..., -1]
            return np.asarray(acc + np.float32(0.0), np.float32)
        if op == "Mul":
            return np.asarray(np.multiply.accumulate(x, axis=-1, dtype=np.float32)[..., -1], np.float32)
    raise KeyError((op, dtype))


def tree4(op: str, dtype: str, lanes: Arr) -> Arr:
    """The intra-slice reducer's 2-level tree over the last axis of size 4: ``op(op(a, b), op(c, d))`` (L5363)."""
    a, b, c, d = lanes[..., 0], lanes[..., 1], lanes[..., 2], lanes[..., 3]
    return combine(op, dtype, combine(op, dtype, a, b), combine(op, dtype, c, d))
