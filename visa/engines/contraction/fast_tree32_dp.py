"""The 32-product tree's first depth by the CPU's bf16 pair dot product: the fast path
``contraction.float-tree32-bf16dp`` beside the loops of ``contraction.float-tree32-wide``
(:mod:`visa.engines.contraction.fast_tree32_wide`, the weight groups of the GEMM example's slices) and
``contraction.float-tree32`` (:mod:`visa.engines.contraction.fast_tree32`, one weight block per position, here
groups of one), whose bits it computes.

The tree adds the products of adjacent pairs first (L4386–4388): ``d_i = fl(x_2i·w_2i + x_2i+1·w_2i+1)``.  Where both
operands are bf16, each product has at most 16 significant bits and is exact in f32, so ``d_i`` is the exact sum of
two exact products rounded once to nearest even — what ``VDPBF16PS`` (AVX512_BF16) computes per f32 lane from two
bf16 pairs, ``acc + x_2i+1·w_2i+1 + x_2i·w_2i`` each step rounded to nearest even (started from ``acc = -0``, which
adds nothing to any sum, a zero of either sign included), with bf16 denormal inputs read as zero and denormal
outputs flushed to zero.  So the instruction gives the tree's first depth bit for bit when no input is a denormal,
infinity or NaN, no product overflows and no pair sum lies in the denormal range: checked on the operands'
exponents before each call (:func:`exponent_range`, :func:`fits`), else the f32 loop runs.  The tree's later depths
and the accumulator's sums are the f32 loop's additions in its order (vector adds, IEEE rounding, no flush).  One
instruction multiplies and adds 32 products, where the f32 loop spends 32 multiplications and 16 additions: the
GEMM example's 2^28 products 6.0 → 2.6 ms on one thread (2-core AMD EPYC VM).

The operands are the bf16 bits laid out as the instruction reads them: the activation ``(blocks, s, m, 32)`` bf16
is ``(blocks, s, m, 16)`` uint32 pairs as it is (a little-endian view), the weights ``(groups, s, 16, g·n)`` uint32
(``g·n`` a multiple of :data:`LANES`; ``g = 1``: one block per position), each lane the pair ``(w_2i, w_2i+1)`` of
one column (:func:`layout`) — no widening to f32.  Only where the CPU has the instruction (``avx512bf16``, asked of
LLVM's host feature list) and numba is installed.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Array

__all__ = ["DP", "LANES", "kernel", "layout", "exponent_range", "fits"]

DP = fastpaths.register("contraction.float-tree32-bf16dp", "the 32-product tree's first depth (pair sums of exact "
                        "bf16 products, rounded once) by the CPU's VDPBF16PS, where no input, product or pair sum "
                        "leaves f32's normal range")

Kernel = Callable[[Array, Array, Array, Array, Array], None]
Exponents = Callable[[Array, Array], None]

#: f32 lanes of one instruction: the loop takes ``g · n`` columns in runs of 16 (a multiple of 16 only).
LANES = 16

#: Biased exponents: the least sum of two nonzero operands' exponents whose products' pair sums stay normal (each
#: product a multiple of 2^(ex + ew - 254 - 14), at least 2^-126 when nonzero), and the greatest whose products
#: stay below 2^128 (each below 2^(ex + ew - 252)).
MIN_EXPONENTS, MAX_EXPONENTS = 142, 380


def _dp_steps(a: Array, ai: Array, w: Array, wi: Array, out: Array) -> None:  # pragma: no cover - numba
    """The loop numba compiles: ``a`` (·, s, m, 16) uint32 activation pairs, ``ai`` (b), ``w`` (groups, s, 16,
    g·n) uint32 weight pairs (:func:`layout`), ``wi`` (b), ``out`` (b, m, n) f32; every aligned run of ``g``
    positions has one activation block and the weight blocks of one group in order (as
    :func:`~visa.engines.contraction.fast_tree32_wide.full_runs` checks).  ``tree16`` (compiled in by
    :func:`_compile`) computes 16 columns of one row's step: the 16 pair sums, the tree's later depths, the
    accumulator's store (first step) or addition."""
    nb, ns, nm, nn = out.shape[0], a.shape[1], a.shape[2], out.shape[2]
    width = w.shape[3]
    g = width // nn
    tmp = np.empty(nm * width, dtype=np.float32)
    flat = w.reshape(-1)
    for b0 in range(0, nb, g):
        ab, grp = ai[b0], wi[b0] // g
        for s in range(ns):
            base = (grp * ns + s) * 16 * width
            for m in range(nm):
                x = a[ab, s, m]
                xs = (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13], x[14],
                      x[15])
                for c in range(0, width, 16):
                    tree16(flat, base + c, width, tmp, m * width + c, s == 0, xs)  # type: ignore[name-defined]  # noqa: F821
        for q in range(g):
            for m in range(nm):
                for n in range(nn):
                    out[b0 + q, m, n] = tmp[m * width + q * nn + n]


def _tree16(numba: Any) -> Any:
    """The intrinsic ``tree16(w, w_at, width, acc, acc_at, first, xs)``: for the 16 f32 lanes ``acc[acc_at …]``,
    ``d_i = VDPBF16PS(-0, w[w_at + i·width …], xs[i])`` for the 16 pairs ``i`` (the 16 columns' pairs of weights
    in the row ``w_at + i·width`` of the flat ``w``, the activation's pair ``xs[i]`` broadcast), the tree's later
    depths ``(d_0 + d_1) + (d_2 + d_3)`` … as f32 vector adds, stored into ``acc`` (``first``) or added to it."""
    ir: Any = importlib.import_module("llvmlite.ir")
    cgutils: Any = importlib.import_module("numba.core.cgutils")

    def typer(typingctx: Any, w: Any, w_at: Any, width: Any, acc: Any, acc_at: Any, first: Any, xs: Any) -> Any:
        sig = numba.types.void(w, w_at, width, acc, acc_at, first, xs)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            w_, w_at_, width_, acc_, acc_at_, first_, xs_ = args
            i32, f32 = ir.IntType(32), ir.FloatType()
            vi, vf = ir.VectorType(i32, 16), ir.VectorType(f32, 16)
            wptr = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=w_).data
            aptr = cgutils.create_struct_proxy(signature.args[3])(context, builder, value=acc_).data
            dp = ir.InlineAsm(ir.FunctionType(vf, [vi, vi, vf]), "vdpbf16ps $2, $1, $0", "=v,v,v,0")
            minus_zero = ir.Constant(vf, [ir.Constant(f32, -0.0)] * 16)
            lanes = ir.Constant(vi, [0] * 16)
            sums = []
            for i in range(16):
                at = builder.add(w_at_, builder.mul(width_, ir.Constant(w_at_.type, i)))
                row = builder.load(builder.bitcast(builder.gep(wptr, [at]), vi.as_pointer()), align=4)
                x = builder.insert_element(ir.Constant(vi, ir.Undefined), builder.extract_value(xs_, i),
                                           ir.Constant(i32, 0))
                sums.append(builder.call(dp, [row, builder.shuffle_vector(x, ir.Constant(vi, ir.Undefined), lanes),
                                              minus_zero]))
            while len(sums) > 1:  # (the tree's later depths: adjacent pairs)
                sums = [builder.fadd(sums[2 * i], sums[2 * i + 1]) for i in range(len(sums) // 2)]
            dst = builder.bitcast(builder.gep(aptr, [acc_at_]), vf.as_pointer())
            with builder.if_else(first_) as (then, otherwise):
                with then:
                    builder.store(sums[0], dst, align=4)
                with otherwise:
                    builder.store(builder.fadd(builder.load(dst, align=4), sums[0]), dst, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return numba.extending.intrinsic(typer)


@cache
def _compiled() -> tuple[Kernel, Exponents] | None:
    """The compiled loop and :func:`_exponents`, or None: numba missing, or the CPU without AVX512_BF16."""
    try:
        numba = importlib.import_module("numba")
        importlib.import_module("numba.extending")
        llvm = importlib.import_module("llvmlite.binding")
    except ImportError:
        return None
    config = numba.config
    if (getattr(config, "DISABLE_JIT", False) or getattr(config, "CPU_NAME", None)
            or getattr(config, "CPU_FEATURES", None) or not getattr(config, "ENABLE_AVX", True)):
        # numba then compiles for another target than the host's (or not at all): the instruction may not be
        # there to assemble, and LLVM exits the process rather than raise (found by a review)
        return None
    features = llvm.get_host_cpu_features()
    asm_parser = getattr(llvm, "initialize_native_asmparser", None)
    if not (features.get("avx512f") and features.get("avx512bf16")) or asm_parser is None:
        return None
    asm_parser()  # (the inline instruction is assembled: without the parser LLVM aborts the process)
    u32, f32 = numba.uint32, numba.float32
    signature = numba.void(u32[:, :, :, ::1], numba.int64[::1], u32[:, :, :, ::1], numba.int64[::1],
                           f32[:, :, ::1])
    options = {"nogil": True, "fastmath": False, "boundscheck": False}
    func = types.FunctionType(_dp_steps.__code__, {**_dp_steps.__globals__, "tree16": _tree16(numba)},
                              _dp_steps.__name__, _dp_steps.__defaults__, _dp_steps.__closure__)
    exps_signature = numba.void(numba.uint16[::1], numba.int64[::1])
    try:
        compiled: Kernel = numba.njit(signature, cache=True, **options)(func)
        exps: Exponents = numba.njit(exps_signature, cache=True, **options)(_exponents)
    except RuntimeError:  # (no writable cache directory: compiled each process)
        compiled = numba.njit(signature, cache=False, **options)(func)
        exps = numba.njit(exps_signature, cache=False, **options)(_exponents)
    except numba.core.errors.NumbaError:  # (a numba or llvmlite that cannot build the intrinsic: the f32 loop)
        return None
    return compiled, exps


def kernel() -> Kernel | None:
    """The compiled loop when this path is on and the CPU and numba have it, else None."""
    compiled = _compiled() if DP.on else None
    return compiled[0] if compiled is not None else None


def layout(bits: Array, g: int) -> Array:
    """The weights' bf16 bits ``bits`` (blocks, s, n, 32) uint16 as ``(blocks / g, s, 16, g · n)`` uint32 pairs (one
    C-ordered copy): group ``k`` holds blocks ``k·g … k·g + g - 1`` side by side, lane ``(i, q·n + c)`` the pair
    ``(w_2i, w_2i+1)`` of column ``c`` of block ``k·g + q`` (the low half the first, as the instruction reads)."""
    nb, ns, nn, nj = bits.shape
    pairs = np.ascontiguousarray(bits).view(np.uint32)  # (each pair of adjacent j one word: moved as one)
    view = pairs.reshape(nb // g, g, ns, nn, nj // 2).transpose(0, 2, 4, 1, 3)
    return np.ascontiguousarray(view).reshape(nb // g, ns, nj // 2, g * nn)


def _exponents(bits: Array, out: Array) -> None:  # pragma: no cover - compiled by numba
    """``out`` = (least biased exponent of the nonzero values, greatest, whether one is a denormal, an infinity or a
    NaN) of the bf16 bits ``bits`` (uint16, flat): one vectorised pass."""
    lo: Any = 255
    hi: Any = 0
    bad: Any = 0
    for k in range(bits.size):
        v = np.int32(bits[k])
        e = (v >> 7) & 0xFF
        bad |= (e == 255) | ((e == 0) & ((v & 0x7F) != 0))
        hi = max(hi, e)
        lo = min(lo, e if e != 0 else 255)
    out[0], out[1], out[2] = lo, hi, bad


def exponent_range(bits: Array) -> tuple[int, int] | None:
    """The least and greatest biased exponent of the nonzero bf16 values ``bits`` (uint16, any shape, C-ordered;
    ``(255, 0)`` when all are zero), or None when one is a denormal, an infinity or a NaN."""
    compiled = _compiled()
    flat = np.ascontiguousarray(bits).reshape(-1)
    if compiled is not None:
        res = np.empty(3, dtype=np.int64)
        compiled[1](flat, res)
        return None if res[2] else (int(res[0]), int(res[1]))
    exp = (flat >> np.uint16(7)) & np.uint16(0xFF)  # (numpy's: the same answer)
    if flat.size and (int(exp.max()) == 255 or bool(np.any((exp == 0) & ((flat & np.uint16(0x7F)) != 0)))):
        return None
    nonzero = exp[exp != 0]
    return (int(nonzero.min()), int(nonzero.max())) if nonzero.size else (255, 0)


def fits(a: tuple[int, int] | None, w: tuple[int, int] | None) -> bool:
    """Do operands of these exponent ranges (:func:`exponent_range`) give the tree's first depth exactly by the
    instruction: every product exact and finite, every nonzero pair sum normal (module docstring)?"""
    if a is None or w is None:
        return False
    if a[0] > a[1] or w[0] > w[1]:  # (all zeros on one side: every product a zero)
        return True
    return a[0] + w[0] >= MIN_EXPONENTS and a[1] + w[1] <= MAX_EXPONENTS
