"""A fourth set of held-out kernels (issue 24, "fast on anyone's kernel"), modelled on what the Rust reference's own
examples exercise that the suite did not (studied for behaviour; written anew for visa), each checked against
numpy and timed at its first launch and its best repeat in the same run.

- **Masked attention softmax, 64 × 8 heads × 8 rows × 1024 keys, bf16** (8 MiB of scores): a key-padding mask
  (i32 0/1 per batch and head, shared by the head's rows) turned into ExecutionIds on the device (``BitXor 1``,
  ``LeftShift 3``: group One where masked) and written to the branch log (L4802, L8090–8099); three passes read
  the log (``BranchMode.Vrf``), set masked scores to −inf (``BitAnd 0``, ``BitOr`` −inf's bits), and compute the
  row max, Σ exp(s − max) and exp(s − max) / Σ (L4878–4918, L5278–5573), rounded to bf16 by the Cast Engine.
  Within a derived bound of numpy's float64 softmax; masked keys exactly 0.  This one found a crash: a branch
  log broadcast along the rows (one id per key) was read in the operand's split shape (docs/manual-notes.md).
- **Switch Engine broadcast with a moved axis, 2 MiB bf16 → 8 MiB** (``CustomBroadcast { ring_size: 4 }``,
  L3381–3458): the slice axis ``Q`` of ``[P, Q]`` moves to Time and a new broadcast axis ``Y`` takes its place,
  so each output slice reads the four slices of its ring over four time steps.  Exact against numpy's transpose
  and broadcast.
- **Paged-KV gather, 32 of 256 blocks × 8 heads × 16 × 128 bf16** (1 MiB moved; the block table an i32 HBM
  tensor, IndirectLoop L1684–1688): the rows the table names into DM (``[NB, PB]`` over the slices, ``[K, HD]``
  in each), then back to HBM as ``[NB, K, PB, HD]``.  Exact against ``pool[table]``.  This one was
  pathologically slow: the schedule's footprint of the gathered rows was located and merged position by position
  at every launch (now kept, docs/manual-notes.md).
- **Dynamic per-token int8 quantisation, 4096 tokens × 1024 bf16** (a cast chain): one pass finds each token's
  127 / max |x| (``BitAnd`` of the sign bit, L4803–4820; an f32 ``Max`` reduce, L5397–5402; ``DivF`` with the
  operand first, ``Mode10``, L5094–5101), the sub context loads it into the VRF, and a second pass computes
  ``x · s`` (``MulF``), ``FpToFxp`` (round half away from zero, L4948–4952), clips to ±127 (``ClipBinaryOpI32``,
  L4953–4963) and narrows to i8 (the Cast Engine, L6774–6779).  Every step is one f32 rounding or exact, so the
  int8 values and the f32 scales equal numpy's bit for bit.
- **RMSNorm with a shared gain, 512 slices × 8 tokens × 1024 bf16**: Σ x² by the stash (``vector_stash``, then
  ``MulF`` by it, L5230–5249) and an f32 ``Add`` reduce, ``/ H`` on the divider, ``+ eps``, ``Sqrt`` and
  ``1 / ·`` (``DivF`` ``Mode10``) into the VRF; then ``x · r · γ`` with γ ``[H]`` moved once into every slice and
  read from the VRF by every token of the slice (an operand broadcast along the outer Time digit, L5063–5081),
  rounded to bf16.  Within a derived bound of numpy's float64 RMSNorm.
"""

from __future__ import annotations

import time
from typing import Any

import ml_dtypes
import numpy as np

from benchmarks.common import best_of, line
from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, f32, i8, i32, launch
from visa.engines.switch import SwitchConfig
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    IntraSliceReduceOpF32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    Stash,
    VeBranchOperand,
)

#: −inf's bits read as an f32 operand of the Logic cluster (L4803–4820).
NEG_INF_BITS = float(np.array([0xFF800000], np.uint32).view(np.float32)[0])
#: Every bit but the sign: ``BitAnd`` with it is |x| (L4803–4820).
ABS_BITS = float(np.array([0x7FFFFFFF], np.uint32).view(np.float32)[0])

# --- masked softmax -----------------------------------------------------------------------------------------
SOFTMAX = AxisSet(B=64, H=8, Q=8, T=1024)


def softmax_kernel(ax: AxisSet) -> Any:
    """The masked softmax over ``T`` of scores ``[B, H, Q, T]`` bf16 with a key mask ``[B, H, T]`` i32 (1 keeps a
    key): two clusters × 256 slices hold ``(B, H)``, each slice ``Q`` rows of ``T`` keys (``B · H = 512``)."""
    m = ax.m
    nb, q, t = ax.size("B"), ax.size("Q"), ax.size("T")

    @device(chip=1)
    def masked_softmax(ctx: Context, s: HbmTensor[Any, Any, Any], mask: HbmTensor[Any, Any, Any]
                       ) -> HbmTensor[Any, Any, Any]:
        """softmax(where(mask, s, −inf)) over T, in f32 on the Vector Engine, rounded to bf16."""
        cl, sl = m[f"B / {nb // 2}"], m[f"B % {nb // 2}, H"]
        sd = s.to_dm(cl, sl, m["Q, T"], ctx.tdma, 0)
        md = mask.to_dm(cl, sl, m["T"], ctx.tdma, 2 * q * t)
        ids = (ctx.main.begin(md.view()).fetch(i32, m["T / 8"], m["T % 8"]).collect(m["T / 8"], m["T % 8"])
               .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
               .vector_logic(LogicBinaryOpI32.BitXor, 1)      # 1 where masked
               .vector_fxp(FxpBinaryOp.LeftShift, 3)           # ExecutionId 8: group One (bit 3)
               .vector_final().commit(m["T"], 2 * q * t + 4 * t))
        log = (ctx.sub.begin(ids.view()).fetch(i32, m["T / 8"], m["T % 8"]).collect(m["T / 8"], m["T % 8"])
               .to_vrf(m["T"], 0))
        rows = 2 * q * t + 8 * t

        def masked() -> Any:
            return (ctx.main.begin(sd.view()).fetch(f32, m["Q, T / 8"], m["T % 8"]).collect(m["Q, T / 8"], m["T % 8"])
                    .vector_init().vector_intra_slice_branch(BranchMode.Vrf(log))
                    .vector_logic(LogicBinaryOpF32.BitAnd, VeBranchOperand.group(0.0, GroupId.One))
                    .vector_logic(LogicBinaryOpF32.BitOr, VeBranchOperand.group(NEG_INF_BITS, GroupId.One))
                    .vector_split(m["Q, T / 4"], m["T % 4"]))

        def row_to_vrf(stream: Any, k: int) -> Any:
            out = stream.vector_pad_way8(m["1 # 8"]).vector_final().commit(m["Q, 1 # 2"], rows + k * 8 * q)
            return (ctx.sub.begin(out.view()).fetch(f32, m[f"Q / {min(q, 4)}"], m[f"Q % {min(q, 4)}, 1 # 2"])
                    .collect(m[f"Q / {min(q, 4)}"], m[f"Q % {min(q, 4)}, 1 # 2"])
                    .to_vrf(m["Q, 1 # 2"], 4 * t + k * 8 * q))

        row_max = row_to_vrf(masked().vector_intra_slice_reduce("T", m["Q"], m["1 # 4"], IntraSliceReduceOpF32.Max),
                             0)
        row_sum = row_to_vrf(masked().vector_fp_binary(FpBinaryOp.SubF, row_max).vector_fp_unary(FpUnaryOp.Exp)
                             .vector_intra_slice_reduce("T", m["Q"], m["1 # 4"], IntraSliceReduceOpF32.Add), 1)
        out = (masked().vector_fp_binary(FpBinaryOp.SubF, row_max).vector_fp_unary(FpUnaryOp.Exp)
               .vector_fp_div(FpDivBinaryOp.DivF, row_sum).vector_concat(m["Q, T / 8"], m["T % 8"]).vector_final()
               .cast(bf16, m["T % 8 # 16"]).commit(m["Q, T"], rows + 16 * q))
        res: HbmTensor[Any, Any, Any] = out.to_hbm(m["B, H, Q, T"], ctx.tdma, 1 << 28)
        return res

    return masked_softmax


def softmax_inputs(ax: AxisSet, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores (bf16, scaled as attention logits are) and a key-padding mask keeping 1..T keys of each (B, H)."""
    b, h, q, t = (ax.size(a) for a in "BHQT")
    s = (rng.standard_normal((b, h, q, t)) * 3).astype(ml_dtypes.bfloat16)
    keep = rng.integers(1, t + 1, size=(b, h))
    keep[0, 0], keep[0, 1] = 1, t  # a row with one key (its softmax is exactly 1) and a row with every key
    mask = (np.arange(t)[None, None, :] < keep[..., None]).astype(np.int32)
    return s, mask


def softmax_check(got: np.ndarray, s: np.ndarray, mask: np.ndarray) -> None:
    """Masked keys exactly 0; every other value within the bound: the f32 pipeline's relative error is at most
    (|s − max| + 1 (exp) + 1 (the subtraction) + T (the sum, every term positive) + 1 (the division)) · 2⁻²⁴,
    to first order, doubled for the second-order terms; then one rounding to bf16 (2⁻⁸ of the result)."""
    x = s.astype(np.float64)
    keep = np.broadcast_to(mask[:, :, None, :] == 1, x.shape)
    ref = np.where(keep, x, -np.inf)
    dev = ref.max(axis=-1, keepdims=True) - ref
    ref = np.exp(-dev)
    ref /= ref.sum(axis=-1, keepdims=True)
    g = np.asarray(got, dtype=np.float64)
    assert np.all(g[~keep] == 0.0), "a masked key's probability is not 0"
    t = s.shape[-1]
    bound = 2.0 ** -8 * np.abs(g) + 2 * (np.where(keep, dev, 0) + t + 3) * 2.0 ** -24 * ref
    assert np.all(np.abs(g - ref)[keep] <= bound[keep]), "softmax outside the derived bound"


def numpy_softmax(s: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """numpy's same computation in f32, rounded to bf16."""
    x = np.where(mask[:, :, None, :] == 1, s.astype(np.float32), np.float32(-np.inf))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: np.ndarray = (e / e.sum(axis=-1, keepdims=True)).astype(ml_dtypes.bfloat16)
    return out


# --- Switch Engine broadcast with a moved axis --------------------------------------------------------------
SPREAD = AxisSet(C=2, P=64, Q=4, Y=4, B=128, V=16)


def spread_kernel(ax: AxisSet) -> Any:
    """``[C, P, Q, B, V]`` bf16 → ``[C, P, Y, B, Q, V]``: slices ``(P, Q)`` become ``(P, Y)``, ``Q`` moving to Time
    behind ``B`` and ``Y`` broadcast (CustomBroadcast ring 4, L3381–3458)."""
    m = ax.m
    per = ax.size("B") * ax.size("V") * 2

    @device(chip=1)
    def spread(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        """Each output slice (p, y) receives the ring's four input slices (p, 0..3), one after the other."""
        dm = x.to_dm(m["C"], m["P, Q"], m["B, V"], ctx.tdma, 0)
        out = (ctx.main.begin(dm.view()).fetch(bf16, m["B"], m["V"])
               .switch(m["P, Y"], m["B, Q"], SwitchConfig.CustomBroadcast(ring_size=4))
               .collect(m["B, Q"], m["V"]).commit(m["B, Q, V"], per))
        res: HbmTensor[Any, Any, Any] = out.to_hbm(m["C, P, Y, B, Q, V"], ctx.tdma, 1 << 28)
        return res

    return spread


def numpy_spread(x: np.ndarray) -> np.ndarray:
    """numpy's same movement: ``out[c, p, y, b, q, v] = x[c, p, q, b, v]``."""
    c, p, q, b, v = x.shape
    out = np.empty((c, p, 4, b, q, v), dtype=x.dtype)
    out[...] = x.transpose(0, 1, 3, 2, 4)[:, :, None]
    return out


# --- paged-KV gather ----------------------------------------------------------------------------------------
PAGED = AxisSet(Pool=256, K=8, PB=16, HD=128, NB=32)


def gather_kernel(ax: AxisSet) -> Any:
    """The ``NB`` blocks a block table names out of a pool ``[Pool, K, PB, HD]``: ``[NB, PB]`` over both clusters'
    slices (``NB · PB = 512``), ``[K, HD]`` in each; back to HBM as ``[NB, K, PB, HD]``."""
    m = ax.m
    half = ax.size("NB") // 2

    @device(chip=1)
    def paged_gather(ctx: Context, pool: HbmTensor[Any, Any, Any], table: HbmTensor[Any, Any, Any]
                     ) -> HbmTensor[Any, Any, Any]:
        """out[n, k, p, d] = pool[table[n], k, p, d] (IndirectLoop, L1684–1688)."""
        dm = pool.view().gather(m["Pool"], table).to_dm(m[f"NB / {half}"], m[f"NB % {half}, PB"], m["K, HD"],
                                                        ctx.tdma, 0)
        res: HbmTensor[Any, Any, Any] = dm.to_hbm(m["NB, K, PB, HD"], ctx.tdma, 1 << 28)
        return res

    return paged_gather


# --- dynamic per-token int8 quantisation --------------------------------------------------------------------
QUANT = AxisSet(N=4096, H=1024)


def quant_kernel(ax: AxisSet) -> Any:
    """``[N, H]`` bf16 → i8 ``[N, H]`` and the f32 scales ``127 / max |x|`` ``[N]``: ``N / 512`` tokens a slice."""
    m = ax.m
    n = ax.size("N")
    r = n // 512
    q = min(r, 4)
    tok = m[f"N % {r}"]

    @device(chip=1)
    def quantize(ctx: Context, x: HbmTensor[Any, Any, Any]) -> tuple[HbmTensor[Any, Any, Any],
                                                                    HbmTensor[Any, Any, Any]]:
        """q = clip(round(x · s), ±127), s = 127 / max |x| per token."""
        xd = x.to_dm(m[f"N / {n // 2}"], m[f"N % {n // 2} / {r}"], m[f"N % {r}, H"], ctx.tdma, 0)

        def rows() -> Any:
            return (ctx.main.begin(xd.view()).fetch(f32, m[f"N % {r}, H / 8"], m["H % 8"])
                    .collect(m[f"N % {r}, H / 8"], m["H % 8"]).vector_init()
                    .vector_intra_slice_branch(BranchMode.Unconditional))

        scale = (rows().vector_logic(LogicBinaryOpF32.BitAnd, ABS_BITS)
                 .vector_split(m[f"N % {r}, H / 4"], m["H % 4"])
                 .vector_intra_slice_reduce("H", tok, m["1 # 4"], IntraSliceReduceOpF32.Max)
                 .vector_fp_div_with_mode(FpDivBinaryOp.DivF, BinaryArgMode.Mode10, 127.0)
                 .vector_pad_way8(m["1 # 8"]).vector_final().commit(m[f"N % {r}, 1 # 2"], 1 << 15))
        s_vrf = (ctx.sub.begin(scale.view()).fetch(f32, m[f"N % {r} / {q}"], m[f"N % {q}, 1 # 2"])
                 .collect(m[f"N % {r} / {q}"], m[f"N % {q}, 1 # 2"]).to_vrf(m[f"N % {r}, 1 # 2"], 0))
        out = (rows().vector_split(m[f"N % {r}, H / 4"], m["H % 4"])
               .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), s_vrf)
               .vector_concat(m[f"N % {r}, H / 8"], m["H % 8"])
               .vector_fp_to_fxp(31)
               .vector_clip(ClipBinaryOpI32.Max, -127).vector_clip(ClipBinaryOpI32.Min, 127)
               .vector_final().cast(i8, m["H % 8 # 32"]).commit(m[f"N % {r}, H"], 1 << 16))
        return out.to_hbm(m["N, H"], ctx.tdma, 1 << 28), scale.to_hbm(m["N"], ctx.tdma, 1 << 29)

    return quantize


def quant_inputs(ax: AxisSet, rng: np.random.Generator) -> np.ndarray:
    """Tokens of very different magnitudes (bf16), one whose values are all equal (each ``x · s`` is ±127)."""
    n, h = ax.size("N"), ax.size("H")
    x = (rng.standard_normal((n, h)) * rng.exponential(2.0, (n, 1))).astype(ml_dtypes.bfloat16)
    x[1] = -3.5
    return x


def numpy_quant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy's same computation: f32 scales, the f32 product, rounded half away from zero, clipped, to int8."""
    xf = x.astype(np.float32)
    s = np.float32(127.0) / np.abs(xf).max(axis=1)
    y = (xf * s[:, None]).astype(np.float64)  # (the f32 product; in binary64 y ± 0.5 is exact, in f32 it is not)
    r = np.trunc(y + np.copysign(0.5, y))
    return np.clip(r, -127, 127).astype(np.int8), s


# --- RMSNorm with a gain shared by a slice's tokens ----------------------------------------------------------
RMS = AxisSet(Ns=512, Nr=8, H=1024)
EPS = 1e-5


def rms_kernel(ax: AxisSet) -> Any:
    """``[Ns, Nr, H]`` bf16 and a gain ``[H]`` bf16 → ``x / sqrt(mean(x²) + eps) · γ`` bf16: slice ``Ns``, its ``Nr``
    tokens along Time (``Nr`` a multiple of 4)."""
    m = ax.m
    h = ax.size("H")
    cl, sl = m["Ns / 256"], m["Ns % 256"]

    @device(chip=1)
    def rms_norm(ctx: Context, x: HbmTensor[Any, Any, Any], g: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        """Two statistics passes (Σx², then 1 / sqrt(Σx² / H + eps)) and the scaling pass."""
        xd = x.to_dm(cl, sl, m["Nr, H"], ctx.tdma, 0)
        gd = g.to_dm(cl, sl, m["H"], ctx.tdma, 2 * ax.size("Nr") * h)  # (γ lacks Nr: one copy a slice)
        g_vrf = (ctx.sub.begin(gd.view()).fetch(f32, m["H / 8"], m["H % 8"]).collect(m["H / 8"], m["H % 8"])
                 .to_vrf(m["H"], 0))
        stats = 2 * ax.size("Nr") * h + 2 * h

        def rows() -> Any:
            return (ctx.main.begin(xd.view()).fetch(f32, m["Nr, H / 8"], m["H % 8"]).collect(m["Nr, H / 8"], m["H % 8"])
                    .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
                    .vector_split(m["Nr, H / 4"], m["H % 4"]))

        ms = (rows().vector_stash().vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
              .vector_intra_slice_reduce("H", m["Nr"], m["1 # 4"], IntraSliceReduceOpF32.Add)
              .vector_fp_div(FpDivBinaryOp.DivF, float(h))
              .vector_pad_way8(m["1 # 8"]).vector_final().commit(m["Nr, 1 # 2"], stats))
        inv = (ctx.main.begin(ms.view()).fetch(f32, m["Nr / 4"], m["Nr % 4, 1 # 2"])
               .collect(m["Nr / 4"], m["Nr % 4, 1 # 2"]).vector_init()
               .vector_intra_slice_branch(BranchMode.Unconditional)
               .vector_split(m["Nr / 4, Nr % 4 / 2"], m["Nr % 2, 1 # 2"])
               .vector_fp_binary(FpBinaryOp.AddF, EPS).vector_fp_unary(FpUnaryOp.Sqrt)
               .vector_fp_div_with_mode(FpDivBinaryOp.DivF, BinaryArgMode.Mode10, 1.0)
               .vector_concat(m["Nr / 4"], m["Nr % 4, 1 # 2"]).vector_final()
               .commit(m["Nr, 1 # 2"], stats + 8 * ax.size("Nr")))
        inv_vrf = (ctx.sub.begin(inv.view()).fetch(f32, m["Nr / 4"], m["Nr % 4, 1 # 2"])
                   .collect(m["Nr / 4"], m["Nr % 4, 1 # 2"]).to_vrf(m["Nr, 1 # 2"], 4 * h))
        out = (rows().vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), inv_vrf)
               .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), g_vrf)
               .vector_concat(m["Nr, H / 8"], m["H % 8"]).vector_final()
               .cast(bf16, m["H % 8 # 16"]).commit(m["Nr, H"], stats + 16 * ax.size("Nr")))
        res: HbmTensor[Any, Any, Any] = out.to_hbm(m["Ns, Nr, H"], ctx.tdma, 1 << 28)
        return res

    return rms_norm


def rms_inputs(ax: AxisSet, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of very different magnitudes and a gain near 1 (bf16)."""
    ns, nr, h = (ax.size(a) for a in ("Ns", "Nr", "H"))
    x = (rng.standard_normal((ns, nr, h)) * rng.exponential(2.0, (ns, nr, 1))).astype(ml_dtypes.bfloat16)
    g = (1 + 0.1 * rng.standard_normal(h)).astype(ml_dtypes.bfloat16)
    return x, g


def rms_check(got: np.ndarray, x: np.ndarray, g: np.ndarray) -> None:
    """Within the bound: Σx² over H positive terms (γ_H), the division, the addition, the square root (half of its
    argument's relative error, plus one rounding), the reciprocal and two products: (H/2 + 6) · 2⁻²⁴ relative to
    first order, doubled; then one rounding to bf16 (2⁻⁸ of the result)."""
    xf = x.astype(np.float64)
    h = x.shape[-1]
    ref = xf / np.sqrt((xf ** 2).mean(axis=-1, keepdims=True) + np.float64(np.float32(EPS))) * g.astype(np.float64)
    out = np.asarray(got, dtype=np.float64)
    bound = 2.0 ** -8 * np.abs(out) + 2 * (h / 2 + 6) * 2.0 ** -24 * np.abs(ref)
    assert np.all(np.abs(out - ref) <= bound), "RMSNorm outside the derived bound"


def numpy_rms(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """numpy's same computation in f32, rounded to bf16."""
    xf = x.astype(np.float32)
    r = np.float32(1) / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + np.float32(EPS))
    out: np.ndarray = (xf * r * g.astype(np.float32)).astype(ml_dtypes.bfloat16)
    return out


# --- timing -------------------------------------------------------------------------------------------------


def _first_and_repeat(name: str, fn: Any, theirs: float, check: Any) -> list[str]:
    """The first launch (checked) and the best repeat, each against numpy's time in the same run."""
    start = time.perf_counter()
    out = fn()
    first = time.perf_counter() - start
    check(out)
    return [line(f"{name}, first launch", first, theirs, width=64),
            line(f"{name}, repeat launch", best_of(fn, 3), theirs, width=64)]


def bench_softmax() -> list[str]:
    """The masked softmax, within the derived bound."""
    ax, m = SOFTMAX, SOFTMAX.m
    s, mask = softmax_inputs(ax, np.random.default_rng(40))
    ctx = Context.acquire()
    sh = HostTensor.from_numpy(s, bf16, m["B, H, Q, T"], axes="B H Q T").to_hbm(m["1"], m["B, H, Q, T"], ctx.pdma, 0)
    mh = HostTensor.from_numpy(mask, i32, m["B, H, T"], axes="B H T").to_hbm(m["1"], m["B, H, T"], ctx.pdma, 1 << 26)
    kernel = softmax_kernel(ax)

    def check(out: Any) -> None:
        softmax_check(out.to_host(m["B, H, Q, T"], ctx.pdma).numpy(axes="B H Q T"), s, mask)

    return _first_and_repeat("held-out: masked softmax 4M bf16 (branch log, Vrf)", lambda: launch(kernel, ctx, sh, mh),
                             best_of(lambda: numpy_softmax(s, mask), 5), check)


def bench_spread() -> list[str]:
    """The Switch Engine broadcast, exact."""
    ax, m = SPREAD, SPREAD.m
    ctx = Context.acquire()
    xs = HostTensor.rand(bf16, m["C, P, Q, B, V"], np.random.default_rng(41))
    xh = xs.to_hbm(m["1"], m["C, P, Q, B, V"], ctx.pdma, 0)
    want = numpy_spread(xs.numpy(axes="C P Q B V"))
    x = xs.numpy(axes="C P Q B V")
    kernel = spread_kernel(ax)

    def check(out: Any) -> None:
        got = np.asarray(out.to_host(m["C, P, Y, B, Q, V"], ctx.pdma).numpy(axes="C P Y B Q V"))
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), "the switch broadcast differs"

    return _first_and_repeat("held-out: switch broadcast 2→8 MiB bf16 (ring 4, moved axis)",
                             lambda: launch(kernel, ctx, xh), best_of(lambda: numpy_spread(x), 5), check)


def bench_gather() -> list[str]:
    """The paged-KV gather, exact."""
    ax, m = PAGED, PAGED.m
    rng = np.random.default_rng(42)
    ctx = Context.acquire()
    ps = HostTensor.rand(bf16, m["Pool, K, PB, HD"], rng)
    ids = rng.permutation(ax.size("Pool"))[:ax.size("NB")].astype(np.int32)
    ph = ps.to_hbm(m["1"], m["Pool, K, PB, HD"], ctx.pdma, 0)
    th = HostTensor.from_numpy(ids, i32, m["NB"]).to_hbm(m["1"], m["NB"], ctx.pdma, 1 << 26)
    pool = ps.numpy(axes="Pool K PB HD")
    kernel = gather_kernel(ax)

    def check(out: Any) -> None:
        got = np.asarray(out.to_host(m["NB, K, PB, HD"], ctx.pdma).numpy(axes="NB K PB HD"))
        assert np.array_equal(got.view(np.uint16), pool[ids].view(np.uint16)), "the gathered blocks differ"

    def numpy_gather() -> np.ndarray:  # the same movement: the rows out of the pool, then a copy of them
        out = np.empty((ax.size("NB"), *pool.shape[1:]), dtype=pool.dtype)
        out[...] = pool[ids]
        return out

    return _first_and_repeat("held-out: paged-KV gather 32 of 256 blocks (1 MiB bf16)",
                             lambda: launch(kernel, ctx, ph, th), best_of(numpy_gather, 7), check)


def bench_quant() -> list[str]:
    """The int8 quantisation, exact (values and scales)."""
    ax, m = QUANT, QUANT.m
    x = quant_inputs(ax, np.random.default_rng(43))
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, m["N, H"], axes="N H").to_hbm(m["1"], m["N, H"], ctx.pdma, 0)
    want_q, want_s = numpy_quant(x)
    kernel = quant_kernel(ax)

    def check(out: Any) -> None:
        q, s = (np.asarray(t.to_host(m[e], ctx.pdma).numpy(axes=a)) for t, e, a in ((out[0], "N, H", "N H"),
                                                                                    (out[1], "N", "N")))
        assert np.array_equal(s.view(np.uint32), want_s.view(np.uint32)), "the scales differ"
        assert np.array_equal(q, want_q), "the int8 values differ"

    return _first_and_repeat("held-out: per-token int8 quantisation 4M bf16 (cast chain)",
                             lambda: launch(kernel, ctx, xh), best_of(lambda: numpy_quant(x), 5), check)


def bench_rms() -> list[str]:
    """The RMSNorm, within the derived bound."""
    ax, m = RMS, RMS.m
    x, g = rms_inputs(ax, np.random.default_rng(44))
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, m["Ns, Nr, H"], axes="Ns Nr H").to_hbm(m["1"], m["Ns, Nr, H"], ctx.pdma, 0)
    gh = HostTensor.from_numpy(g, bf16, m["H"]).to_hbm(m["1"], m["H"], ctx.pdma, 1 << 26)
    kernel = rms_kernel(ax)

    def check(out: Any) -> None:
        rms_check(out.to_host(m["Ns, Nr, H"], ctx.pdma).numpy(axes="Ns Nr H"), x, g)

    return _first_and_repeat("held-out: RMSNorm 4M bf16, a gain shared by 8 tokens",
                             lambda: launch(kernel, ctx, xh, gh), best_of(lambda: numpy_rms(x, g), 5), check)


def run() -> list[str]:
    return [*bench_softmax(), *bench_spread(), *bench_gather(), *bench_quant(), *bench_rms()]


if __name__ == "__main__":
    print("\n".join(run()))
