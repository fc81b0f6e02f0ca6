"""Exact arithmetic of the Vector Engine's operators (manual L4803–4972, L5390–5402, L6611–6625).

Scalar test vectors are the spec digest's §12.1 (derived from the manual's tables and the reference crate);
property tests compare every operator with an independent exact model (Python integers, exact rationals,
binary64) over random i32 / f32 values that always include the extremes (MIN, MAX, ±0, NaN, ±inf,
subnormals).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.engines.vector import arith
from visa.errors import DtypeError

from .helpers import F32_EXTREMES, I32_EXTREMES, I32_MAX, I32_MIN, nearest_f32, same_f32

SETTINGS = settings(max_examples=80, deadline=None)


def a32(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64).astype(np.int32)


def f32(*v: float) -> np.ndarray:
    return np.array(v, dtype=np.float32)


# ---------------------------------------------------------------------------------- §12.1 test vectors


def test_add_sub_wrap_and_saturate_l4825() -> None:
    """AddFxp wraps, AddFxpSat saturates (L4825–4828): (MAX, 1) → MIN / MAX; (MIN, 1) sub → MAX / MIN."""
    assert arith.fxp("AddFxp", a32(I32_MAX), a32(1)).tolist() == [I32_MIN]
    assert arith.fxp("AddFxpSat", a32(I32_MAX), a32(1)).tolist() == [I32_MAX]
    assert arith.fxp("SubFxp", a32(I32_MIN), a32(1)).tolist() == [I32_MAX]
    assert arith.fxp("SubFxpSat", a32(I32_MIN), a32(1)).tolist() == [I32_MIN]


def test_mulint_wraps_l4832() -> None:
    assert arith.fxp("MulInt", a32(2**16), a32(2**16)).tolist() == [0]


def test_mulfxp_q31_rounded_l4831() -> None:
    """MulFxp is a rounded Q31 multiply (reference crate): 2^30·2^30 → 2^29, 3·2^30 → 2 (1.5 rounds up)."""
    got = arith.fxp("MulFxp", a32(2**30, -(2**30), 3, 1, I32_MIN), a32(2**30, 2**30, 2**30, 1, I32_MIN))
    assert got.tolist() == [2**29, -(2**29), 2, 0, I32_MAX]


def test_leftshiftsat_l4830() -> None:
    assert arith.fxp("LeftShiftSat", a32(2**29, -(2**29)), a32(2, 3)).tolist() == [I32_MAX, I32_MIN]


def test_right_shifts_l4833() -> None:
    assert arith.fxp("LogicRightShift", a32(-1, -16), a32(28, 2)).tolist() == [15, 1073741820]
    assert arith.fxp("ArithRightShift", a32(-1, -16), a32(28, 2)).tolist() == [-1, -4]
    assert arith.logic_i32("LogicRightShift", a32(-1), a32(28)).tolist() == [15]
    assert arith.logic_i32("ArithRightShift", a32(-16), a32(2)).tolist() == [-4]


def test_arith_right_shift_round_rounds_half_up_l4835() -> None:
    """Decision (manual silent, L4835): round half up, ``(a + 2^(b-1)) >> b``."""
    got = arith.fxp("ArithRightShiftRound", a32(5, 6, 7, -5, -6, -7, 1, -1, I32_MAX, I32_MIN), a32(1, 2, 1, 1, 2, 1, 0,
                                                                                                    1, 1, 31))
    assert got.tolist() == [3, 2, 4, -2, -1, -3, 1, 0, 2**30, -1]


def test_shift_counts_of_32_and_more_shift_every_bit_out() -> None:
    """Decision: a count ≥ 32 means ×/÷ 2^b (every bit shifted out); a negative count is refused."""
    assert arith.fxp("LeftShift", a32(1), a32(32)).tolist() == [0]
    assert arith.fxp("LogicRightShift", a32(-1), a32(40)).tolist() == [0]
    assert arith.fxp("ArithRightShift", a32(-5, 5), a32(33, 33)).tolist() == [-1, 0]
    assert arith.fxp("LeftShiftSat", a32(3, -3, 0), a32(40, 40, 40)).tolist() == [I32_MAX, I32_MIN, 0]
    with pytest.raises(DtypeError):
        arith.fxp("LeftShift", a32(1), a32(-1))


def test_fxp_to_fp_l4837() -> None:
    """int_width = integer bits: 65536 with iw 15 is 1.0; 2^30 with iw 0 is 0.5; 2^24+1 rounds to even."""
    assert arith.fxp_to_fp(a32(65536), 15).tolist() == [1.0]
    assert arith.fxp_to_fp(a32(2**30), 0).tolist() == [0.5]
    assert arith.fxp_to_fp(a32(16777217), 31).tolist() == [16777216.0]


def test_fp_to_fxp_l4948() -> None:
    """Round half away from zero, saturate; NaN → MAX (sign clear) / MIN (sign set)."""
    assert arith.fp_to_fxp(f32(2.5, -2.5, 0.5, 3e9, -np.inf), 31).tolist() == [3, -3, 1, I32_MAX, I32_MIN]
    assert arith.fp_to_fxp(f32(np.nan), 31).tolist() == [I32_MAX]
    neg_nan = np.array([0xFFC00000], dtype=np.uint32).view(np.float32)
    assert arith.fp_to_fxp(neg_nan, 31).tolist() == [I32_MIN]
    assert arith.fp_to_fxp(f32(0.25, 1.0), 0).tolist() == [2**29, I32_MAX]


def test_clip_absmin_absmax_ties_give_second_l4958() -> None:
    assert arith.clip_i32("AbsMax", a32(-3, -2), a32(2, 2)).tolist() == [-3, 2]
    assert arith.clip_i32("AbsMin", a32(-3, -2), a32(2, 2)).tolist() == [2, 2]
    # |MIN| = 2^31 is the largest magnitude (decision, Q20)
    assert arith.clip_i32("AbsMax", a32(I32_MIN), a32(I32_MAX)).tolist() == [I32_MIN]


def test_clip_f32_max_ignores_nan_l4966() -> None:
    assert arith.clip_f32("Max", f32(np.nan), f32(1.0)).tolist() == [1.0]
    assert arith.clip_f32("Min", f32(1.0), f32(np.nan)).tolist() == [1.0]


def test_fma_is_fused_l4900() -> None:
    """FmaF rounds once: (1 + 2^-23)·(1 - 2^-23) - 1 = -2^-46 exactly (a separate product would round to 0)."""
    a, b = np.float32(1 + 2**-23), np.float32(1 - 2**-23)
    assert arith.fma_f32(f32(a), f32(b), f32(-1.0)).tolist() == [-(2.0**-46)]
    assert float(np.float32(a * b) - np.float32(1.0)) == 0.0


def test_maskmul_zero_masks_inf_and_nan() -> None:
    """Decision (manual silent, L4894–4895): MaskMulF is a zero-masking multiply."""
    got = arith.fp_binary("MaskMulF", f32(0.0, np.inf, np.nan, 2.0), f32(np.inf, 0.0, 0.0, 3.0))
    assert got.tolist() == [0.0, 0.0, 0.0, 6.0]
    assert arith.fp_ternary("MaskFmaF", f32(0.0, 2.0), f32(np.inf, 3.0), f32(1.5, 1.0)).tolist() == [1.5, 7.0]


def test_reduce_tree_addsat_l5363() -> None:
    """One flit [MAX, 1, 0, 0]: sat(MAX+1) = MAX, then MAX."""
    assert arith.tree4("AddSat", "i32", a32(I32_MAX, 1, 0, 0).reshape(1, 4)).tolist() == [I32_MAX]


def test_sequential_addsat_depends_on_order() -> None:
    """AddSat saturates at each step: [MAX, 1, -1] → MAX - 1 in that order, [MAX, -1, 1] → MAX."""
    assert arith.sequential_reduce("AddSat", "i32", a32(I32_MAX, 1, -1)).tolist() == I32_MAX - 1
    assert arith.sequential_reduce("AddSat", "i32", a32(I32_MAX, -1, 1)).tolist() == I32_MAX


# ----------------------------------------------------------------------------------- exact models


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def sat(v: int) -> int:
    return max(I32_MIN, min(I32_MAX, v))


def model_fxp(name: str, a: int, b: int) -> int:
    if name == "AddFxp":
        return wrap(a + b)
    if name == "AddFxpSat":
        return sat(a + b)
    if name == "SubFxp":
        return wrap(a - b)
    if name == "SubFxpSat":
        return sat(a - b)
    if name == "LeftShift":
        return wrap(a * 2**b)
    if name == "LeftShiftSat":
        return sat(a * 2**b)
    if name == "MulFxp":
        return sat(math.floor(Fraction(a * b, 2**31) + Fraction(1, 2)))
    if name == "MulInt":
        return wrap(a * b)
    if name == "LogicRightShift":
        return wrap((a % 2**32) // 2**b)
    if name == "ArithRightShift":
        return a // 2**b
    if name == "ArithRightShiftRound":
        return math.floor(Fraction(a, 2**b) + Fraction(1, 2))
    raise KeyError(name)


i32s = st.one_of(st.integers(I32_MIN, I32_MAX), st.sampled_from([int(v) for v in I32_EXTREMES]))
shifts = st.integers(0, 40)


@pytest.mark.parametrize("name", ["AddFxp", "AddFxpSat", "SubFxp", "SubFxpSat", "MulFxp", "MulInt"])
@SETTINGS
@given(a=st.lists(i32s, min_size=1, max_size=16), b=i32s)
def test_fxp_arithmetic_matches_exact_model(name: str, a: list[int], b: int) -> None:
    got = arith.fxp(name, np.array(a, dtype=np.int64).astype(np.int32), np.int32(b))
    assert got.tolist() == [model_fxp(name, x, b) for x in a]


@pytest.mark.parametrize("name", ["LeftShift", "LeftShiftSat", "LogicRightShift", "ArithRightShift",
                                  "ArithRightShiftRound"])
@SETTINGS
@given(a=st.lists(i32s, min_size=1, max_size=16), b=shifts)
def test_fxp_shifts_match_exact_model(name: str, a: list[int], b: int) -> None:
    got = arith.fxp(name, np.array(a, dtype=np.int64).astype(np.int32), np.int32(b))
    assert got.tolist() == [model_fxp(name, x, b) for x in a]


@pytest.mark.parametrize("name", ["BitAnd", "BitOr", "BitXor", "LeftShift", "LogicRightShift",
                                  "ArithRightShift"])
@SETTINGS
@given(a=st.lists(i32s, min_size=1, max_size=16), b=st.integers(0, 31))
def test_logic_i32_matches_model(name: str, a: list[int], b: int) -> None:
    u = [x % 2**32 for x in a]
    bu = b % 2**32
    model = {"BitAnd": [wrap(x & bu) for x in u], "BitOr": [wrap(x | bu) for x in u],
             "BitXor": [wrap(x ^ bu) for x in u], "LeftShift": [model_fxp("LeftShift", x, b) for x in a],
             "LogicRightShift": [model_fxp("LogicRightShift", x, b) for x in a],
             "ArithRightShift": [model_fxp("ArithRightShift", x, b) for x in a]}[name]
    assert arith.logic_i32(name, np.array(a, dtype=np.int64).astype(np.int32), np.int32(b)).tolist() == model


f32s = st.one_of(st.floats(width=32, allow_nan=True, allow_infinity=True),
                 st.sampled_from([float(v) for v in F32_EXTREMES]))


@pytest.mark.parametrize("name", ["BitAnd", "BitOr", "BitXor"])
@SETTINGS
@given(a=st.lists(f32s, min_size=1, max_size=8), b=f32s)
def test_logic_f32_is_bitwise_on_patterns(name: str, a: list[float], b: float) -> None:
    ua = np.array(a, np.float32).view(np.uint32).astype(np.int64)
    ub = int(np.array([b], np.float32).view(np.uint32)[0])
    fn = {"BitAnd": lambda x: x & ub, "BitOr": lambda x: x | ub, "BitXor": lambda x: x ^ ub}[name]
    want = np.array([fn(int(x)) for x in ua], dtype=np.uint32).view(np.float32)
    assert same_f32(arith.logic_f32(name, np.array(a, np.float32), np.float32(b)), want)


@pytest.mark.parametrize("name", ["AddF", "SubF", "MulF", "DivF"])
@SETTINGS
@given(a=st.lists(f32s, min_size=1, max_size=8), b=f32s)
def test_fp_binary_correctly_rounded(name: str, a: list[float], b: float) -> None:
    """+, −, ×, ÷ in binary64 then rounded to binary32 are correctly rounded (53 ≥ 2·24 + 2)."""
    x, y = np.array(a, np.float32).astype(np.float64), np.float64(np.float32(b))
    with np.errstate(all="ignore"):
        want = {"AddF": x + y, "SubF": x - y, "MulF": x * y, "DivF": x / y}[name].astype(np.float32)
    assert same_f32(arith.fp_binary(name, np.array(a, np.float32), np.float32(b)), want)


@SETTINGS
@given(a=st.lists(f32s, min_size=1, max_size=6), b=f32s, c=f32s)
def test_fma_matches_exact_rational(a: list[float], b: float, c: float) -> None:
    got = arith.fma_f32(np.array(a, np.float32), np.float32(b), np.float32(c))
    for x, g in zip(np.array(a, np.float32), got, strict=True):
        xs, bs, cs = float(x), float(np.float32(b)), float(np.float32(c))
        if not all(math.isfinite(v) for v in (xs, bs, cs)):
            with np.errstate(all="ignore"):
                ref = np.float32(np.float64(xs) * np.float64(bs) + np.float64(cs))
            assert np.isnan(g) == np.isnan(ref) and (np.isnan(g) or g == ref)
            continue
        exact = Fraction(xs) * Fraction(bs) + Fraction(cs)
        want = nearest_f32(exact)
        if exact == 0:
            assert g == 0
        else:
            assert same_f32(np.array([g]), np.array([want])), (xs, bs, cs, g, want)


@SETTINGS
@given(x=st.lists(i32s, min_size=1, max_size=16), iw=st.integers(0, 31))
def test_fxp_to_fp_single_rounding(x: list[int], iw: int) -> None:
    got = arith.fxp_to_fp(np.array(x, dtype=np.int64).astype(np.int32), iw)
    want = [nearest_f32(Fraction(v, 2 ** (31 - iw))) for v in x]
    assert same_f32(got, np.array(want, np.float32))


@SETTINGS
@given(x=st.lists(f32s, min_size=1, max_size=16), iw=st.integers(0, 31))
def test_fp_to_fxp_round_half_away_saturate(x: list[float], iw: int) -> None:
    arr = np.array(x, np.float32)
    got = arith.fp_to_fxp(arr, iw).tolist()
    for v, g in zip(arr, got, strict=True):
        if np.isnan(v):
            assert g == (I32_MIN if np.signbit(v) else I32_MAX)
        elif np.isinf(v):
            assert g == (I32_MAX if v > 0 else I32_MIN)
        else:
            q = Fraction(float(v)) * 2 ** (31 - iw)
            r = math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1)
            assert g == sat(r)


@pytest.mark.parametrize("name", ["Min", "Max", "AbsMin", "AbsMax", "AddFxp", "AddFxpSat"])
@SETTINGS
@given(a=st.lists(i32s, min_size=1, max_size=16), b=i32s)
def test_clip_i32_model(name: str, a: list[int], b: int) -> None:
    model = {"Min": lambda x: min(x, b), "Max": lambda x: max(x, b),
             "AbsMin": lambda x: x if abs(x) < abs(b) else b, "AbsMax": lambda x: x if abs(x) > abs(b) else b,
             "AddFxp": lambda x: wrap(x + b), "AddFxpSat": lambda x: sat(x + b)}[name]
    got = arith.clip_i32(name, np.array(a, dtype=np.int64).astype(np.int32), np.int32(b))
    assert got.tolist() == [model(x) for x in a]


@pytest.mark.parametrize("name", ["Min", "Max", "AbsMin", "AbsMax", "Add"])
@SETTINGS
@given(a=st.lists(f32s, min_size=1, max_size=8), b=f32s)
def test_clip_f32_model(name: str, a: list[float], b: float) -> None:
    bb = np.float32(b)

    def model(x: np.float32) -> float:
        if name == "Min":
            return float(bb if np.isnan(x) else x if np.isnan(bb) else min(x, bb))
        if name == "Max":
            return float(bb if np.isnan(x) else x if np.isnan(bb) else max(x, bb))
        if name == "AbsMin":
            return float(x if abs(x) < abs(bb) else bb)
        if name == "AbsMax":
            return float(x if abs(x) > abs(bb) else bb)
        with np.errstate(all="ignore"):
            return float(np.float32(np.float64(x) + np.float64(bb)))

    arr = np.array(a, np.float32)
    got = arith.clip_f32(name, arr, bb)
    want = np.array([model(x) for x in arr], np.float32)
    if name in ("Min", "Max"):  # ±0 order is unspecified for min/max of equal zeros
        assert np.array_equal(got, want, equal_nan=True)
    else:
        assert same_f32(got, want)


UNARY = {"Exp": math.exp, "NegExp": lambda x: math.exp(-x), "Sqrt": math.sqrt, "Tanh": math.tanh,
         "Sigmoid": lambda x: 1 / (1 + math.exp(-x)), "Erf": math.erf, "Log": math.log, "Sin": math.sin,
         "Cos": math.cos}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(x=st.lists(st.floats(-80, 80, width=32), min_size=1, max_size=8))
def test_fp_unary_within_one_ulp(name: str, x: list[float]) -> None:
    """Transcendentals: binary64 then one rounding (the hardware's accuracy is undocumented, L4874–4906)."""
    arr = np.array(x, np.float32)
    got = arith.fp_unary(name, arr)
    for v, g in zip(arr, got, strict=True):
        try:
            ref = UNARY[name](float(v))
        except (ValueError, OverflowError):
            assert np.isnan(g) or np.isinf(g)
            continue
        want = np.float32(ref)
        assert g == want or abs(float(g) - ref) <= float(np.spacing(np.float32(abs(ref)))), (v, g, ref)


def test_fp_unary_special_values() -> None:
    got = arith.fp_unary("Sqrt", f32(-1.0, np.inf, -0.0))
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0
    assert arith.fp_unary("Exp", f32(-np.inf, np.inf, 100.0)).tolist() == [0.0, np.inf, np.inf]
    assert arith.fp_unary("Sigmoid", f32(-np.inf, np.inf, 0.0)).tolist() == [0.0, 1.0, 0.5]
    assert np.isnan(arith.fp_unary("Log", f32(np.nan))[0])
