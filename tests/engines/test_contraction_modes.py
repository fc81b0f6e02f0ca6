"""The Reducer's reduce-max mode and the mixed-type TRF operands (issue 27 items 3 and 6).

- reduce-max (L4393–4395, L4533, L4546): ``contract(m[...], ReduceOp.Max)``, Row 0 only, so its throughput is
  1/8 of reduce-add's: the same outputs take eight times the computation steps;
- mixed operands (L4142–4147): i4 weights against an i8 stream (``reg_type`` 1, i4 → i8), i8 weights against an
  f8 stream (``reg_type`` 2, i8 → f8), through a plain ``align``.

Inputs are placed directly (``make_stream``, ``place_trf``) as in ``test_contraction.py``; results are compared
with numpy (exactly for integer outputs and for maxima, which need no rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import ReduceOp
from visa import dtypes as dt
from visa.context import Context
from visa.engines import contraction as CE
from visa.engines.common import StreamLayout
from visa.engines.contraction import reference
from visa.errors import DtypeError, HardwareLimitError, VisaError
from visa.mapping import AxisSet
from visa.stream.stages import AccumulationKind, CollectTensor
from visa.tensors.handles import TrfAddress
from visa.testing import make_stream, place_trf, stream_logical

Interleaved = AccumulationKind.Interleaved


def _setup(sizes: dict[str, int], sdtype: Any, wdtype: Any, time: str, packet: str, xaxes: str, row: str,
           element: str, waxes: str, mode: TrfAddress = TrfAddress.Full, seed: int = 3) -> tuple[Any, ...]:
    ax = AxisSet(**sizes)
    m = ax.m
    rng = np.random.default_rng(seed)
    ctx = Context.acquire()
    x = dt.random_values(sdtype, tuple(sizes[a] for a in xaxes.split()), rng)
    w = dt.random_values(wdtype, tuple(sizes[a] for a in waxes.split()), rng)
    layout = StreamLayout(sdtype, m["1"], m["1 # 2"], m["1 # 256"], m[time], m[packet])
    stream = make_stream(ctx.main, CollectTensor, layout, x, axes=xaxes)
    trf = place_trf(ctx, w, wdtype, m["1"], m["1 # 2"], m["1 # 256"], m[row], m[element], mode, axes=waxes)
    return m, x.astype(np.float64), w.astype(np.float64), stream, trf


# ------------------------------------------------------------------------------------------------ reduce-max


@pytest.mark.parametrize("dtype", [dt.bf16, dt.i8])
def test_reduce_max_over_packet_and_time_L4393(dtype: Any) -> None:
    """out[m] = max_k x[m, k]·w[k]: the tree takes the maximum over the packet (depth 5 / 6) and the accumulator
    over the reduced Time axis K / n (L4393–4395, L4406–4434)."""
    n = 64 if dtype is dt.i8 else 32
    flit = n // 2
    m, x, w, stream, trf = _setup(dict(M=8, K=2 * n), dtype, dtype, f"K / {n}, M, K % {n} / {flit}",
                                  f"K % {flit}", "M K", "1", "K", "K")
    acc = (stream.align(m[f"K / {n}, M"], m[f"K % {n}"], trf).contract(m["1"], ReduceOp.Max)
           .accumulate(m["M"], m["1 # 8"], Interleaved))
    got = stream_logical(acc, axes="M")
    assert np.array_equal(got.astype(np.float64), (x * w[None, :]).max(axis=1))
    details = dict(acc.reports[-2].details)
    assert details["rows"] == 1 and "reduce_op = Max" in acc.reports[-2].config


def _max_number(p: np.ndarray) -> np.ndarray:
    """The maximum over the last axis as maximumNumber folds it: a number wins over NaN, +0 over −0; NaN (the one
    quiet NaN) only where every member is NaN — written out member by member."""
    out = np.empty(p.shape[:-1], np.float32)
    for i in np.ndindex(*p.shape[:-1]):
        best = np.float32(np.nan)
        for v in p[i]:
            if np.isnan(best) or (not np.isnan(v) and (v > best or (v == best == 0 and not np.signbit(v)))):
                best = v if not np.isnan(v) else best
        out[i] = best
    return np.where(np.isnan(out), np.float32(np.nan), out).astype(np.float32)


def test_reduce_max_of_nans_infinities_and_zeros_is_max_number_L4393() -> None:
    """Reduce-max of f32 products with NaN among them (a NaN operand, 0 × ∞) takes the largest number, as the
    Vector Engine's f32 Max does (Rust's ``f32::max``: spec digest 3); +0 wins over −0 whatever the order; a group
    whose every product is NaN gives the one quiet NaN 0x7fc00000 (the Reducer has no identity: its accumulator
    stores the first flit, L4408, L4415–4431).  A NaN in the tree's pairs or in one accumulated flit alone no
    longer makes the output NaN (numpy's ``max`` propagated it; docs/manual-notes.md, h40x)."""
    n, flit = 32, 16
    m = AxisSet(M=8, K=2 * n).m
    rng = np.random.default_rng(5)
    wv = np.where(rng.random(2 * n) < 0.5, -1.0, 1.0) * (1 + rng.integers(0, 8, 2 * n) / 8)
    wv[5] = 0.0
    xv = rng.standard_normal((8, 2 * n)).round(2)
    neg_nan = -np.float64(np.nan)
    xv[0, 3] = np.nan                       # one NaN among numbers
    xv[1, :] = neg_nan                      # every product NaN (a NaN of sign bit set: written as the quiet NaN)
    xv[2, :] = 0.0                          # ±0 products: +0
    xv[3, :] = -np.abs(xv[3, :]) - 1        # negative numbers and 0 × ∞ = NaN: the largest negative product
    xv[3, 5] = np.inf
    xv[4, :] = np.where(wv > 0, -0.0, 0.0)  # every product −0: −0 (−0 × +0 too)
    xv[4, 5] = -0.0
    xv[5, :n] = np.nan                      # the first flits NaN, the later ones numbers
    xv[6, n:] = np.nan                      # the first flits numbers, the later ones NaN
    xv[7, :] = -np.inf                      # −∞ × ±w: ±∞ and 0 × −∞ = NaN
    xb, wb = xv.astype(dt.bf16.storage), wv.astype(dt.bf16.storage)
    ctx = Context.acquire()
    layout = StreamLayout(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m[f"K / {n}, M, K % {n} / {flit}"],
                          m[f"K % {flit}"])
    stream = make_stream(ctx.main, CollectTensor, layout, xb, axes="M K")
    trf = place_trf(ctx, wb, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1"], m["K"], TrfAddress.Full, axes="K")
    acc = (stream.align(m[f"K / {n}, M"], m[f"K % {n}"], trf).contract(m["1"], ReduceOp.Max)
           .accumulate(m["M"], m["1 # 8"], Interleaved))
    got = np.asarray(stream_logical(acc, axes="M"), np.float32)
    with np.errstate(invalid="ignore"):
        products = xb.astype(np.float32) * wb.astype(np.float32)[None, :]
    want = _max_number(products)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)
    assert got.view(np.uint32)[1] == 0x7FC00000 and got[7] == np.inf
    assert got.view(np.uint32)[2] == 0 and got.view(np.uint32)[4] == 0x80000000
    assert not np.isnan(got[[0, 3, 5, 6]]).any()


def test_reduce_max_takes_eight_times_the_steps_of_reduce_add_L4533_L4546() -> None:
    """Reduce-add spreads N = 8 output channels over the 8 Rows; reduce-max uses Row 0 only, so N moves to Time
    (a time broadcast of the activation): the same 4 × 8 outputs take 8× the computation steps (L4533, L4546)."""
    sizes = dict(M=4, N=8, K=32)
    m, x, w, stream, trf = _setup(sizes, dt.bf16, dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    add = stream.align(m["M"], m["K"], trf).contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    m, x2, w2, stream2, trf2 = _setup(sizes, dt.bf16, dt.bf16, "M, K / 16", "K % 16", "M K", "1", "N, K", "N K")
    mx = (stream2.align(m["M, N"], m["K"], trf2).contract(m["1"], ReduceOp.Max)
          .accumulate(m["M, N"], m["1 # 8"], Interleaved))
    add_tree = next(r for r in add.reports if r.engine == "reducer.tree")
    max_tree = next(r for r in mx.reports if r.engine == "reducer.tree")
    assert max_tree.cycles == RNGD_DIVISOR * add_tree.cycles
    assert np.array_equal(stream_logical(mx, axes="M N").astype(np.float64),
                          (x2[:, None, :] * w2[None, :, :]).max(axis=2))


RNGD_DIVISOR = 8  # hw.contraction.reduce_max_throughput_divisor on RNGD (L4533, L4546)


def test_reduce_max_refuses_more_than_row_0_L4395() -> None:
    m, x, w, stream, trf = _setup(dict(M=4, N=8, K=32), dt.bf16, dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K",
                                  "N K")
    aligned = stream.align(m["M"], m["K"], trf)
    with pytest.raises(HardwareLimitError) as err:
        aligned.contract(m["1"], ReduceOp.Max)
    assert err.value.call == "contract" and err.value.level == "Row" and "Row 0" in str(err.value)
    assert err.value.fix and "Time" in err.value.fix
    with pytest.raises(VisaError):
        aligned.contract(m["1"], "Max")  # type: ignore[arg-type]
    assert CE.plan_contract(trf.ctx.hw, dt.bf16, m["K"], m["1"], "Max", m["1"]).reduce_op == "Max"


def test_the_reference_reducer_agrees_with_the_fused_products() -> None:
    """The step-by-step Reducer (reduce-max's arithmetic) computes reduce-add as the fused matrix products do."""
    m, x, w, stream, trf = _setup(dict(M=8, N=8, K=64), dt.i8, dt.i8, "K / 64, M, K % 64 / 32", "K % 32", "M K",
                                  "N", "K", "N K")
    acc = stream.align(m["K / 64, M"], m["K % 64"], trf).contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    fused = stream_logical(acc, axes="M N")
    assert np.array_equal(fused.astype(np.float64), x @ w.T)
    assert reference.step_addresses(acc.carried.contraction.align).tolist() == [0] * 8


# ------------------------------------------------------------------------------------------------ mixed operands


def test_i4_weights_against_an_i8_stream_reg_type_1_L4145() -> None:
    """Weight-only quantisation: i4 weights in the TRF, i8 activations streamed; products in i32, exact."""
    m, x, w, stream, trf = _setup(dict(M=8, N=8, K=128), dt.i8, dt.i4, "M, K / 32", "K % 32", "M K", "N", "K",
                                  "N K")
    aligned = stream.align(m["M, K / 64"], m["K % 64"], trf)
    plan: CE.AlignPlan = aligned.carried.contraction.align
    assert plan.reg_type == 1 and plan.weight_dtype is dt.i4 and "reg_type 1" in plan.describe()
    acc = aligned.contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    assert acc.dtype is dt.i32
    assert np.array_equal(stream_logical(acc, axes="M N").astype(np.float64), x @ w.T)


@pytest.mark.parametrize("f8", [dt.f8e4m3, dt.f8e5m2])
def test_i8_weights_against_an_f8_stream_reg_type_2_L4146(f8: Any) -> None:
    """i8 weights against an f8 stream: each product f8 · i8 is exact in f32 (at most 4 + 8 significant bits), the
    sum in f32; compared with numpy within the f32 accumulation's bound."""
    m, x, w, stream, trf = _setup(dict(M=8, N=8, K=64), f8, dt.i8, "M, K / 32", "K % 32", "M K", "N", "K", "N K")
    aligned = stream.align(m["M"], m["K"], trf)
    assert aligned.carried.contraction.align.reg_type == 2
    acc = aligned.contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    assert acc.dtype is dt.f32
    got = stream_logical(acc, axes="M N").astype(np.float64)
    want = x @ w.T
    bound = 64 * 2.0 ** -23 * (np.abs(x) @ np.abs(w).T) + 1e-30
    assert np.all(np.abs(got - want) <= bound)


def test_mixed_operands_refused_outside_the_reg_types_L4142() -> None:
    m, x, w, stream, trf = _setup(dict(M=8, N=8, K=32), dt.bf16, dt.i8, "M, K / 16", "K % 16", "M K", "N", "K",
                                  "N K")
    with pytest.raises(DtypeError) as err:
        stream.align(m["M"], m["K"], trf)
    text = str(err.value)
    assert "i4 weights with a i8 stream" in text and "L4142–4147" in text and err.value.level == "Element"


def test_widened_i4_weights_must_fit_the_address_mode_L4151() -> None:
    """4096 i4 weights fit a half TRF Row (2 KiB as i4) but take 4 KiB as reg_type 1 slots: fine in FirstHalf;
    8192 (4 KiB as i4, 8 KiB widened) do not fit FirstHalf's 4 KiB."""
    m, x, w, stream, trf = _setup(dict(M=2, N=8, K=8192), dt.i8, dt.i4, "M, K / 32", "K % 32", "M K", "N", "K",
                                  "N K", mode=TrfAddress.FirstHalf)
    with pytest.raises(HardwareLimitError) as err:
        stream.align(m["M, K / 64"], m["K % 64"], trf)
    assert "reg_type 1" in str(err.value) and "FirstHalf" in str(err.value)


def test_mixed_layout_is_checked_by_the_plan_alone() -> None:
    """The plan (which the mypy plugin calls) decides the mixed pair from the two dtypes."""
    ax = AxisSet(M=8, N=8, K=64)
    m = ax.m
    hw = Context.acquire().hw
    trf = CE.TrfOperand(dt.i4, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"], "Full", 0)
    plan = CE.plan_align(hw, dt.i8, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 32"], m["K % 32"], trf, m["M"],
                         m["K"])
    assert (plan.reg_type, plan.reg_read_bytes) == (1, 64)
    same = CE.plan_align(hw, dt.i8, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 32"], m["K % 32"],
                         CE.TrfOperand(dt.i8, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"], "Full", 0), m["M"],
                         m["K"])
    assert same.reg_type == 2 and same.weight_dtype is dt.i8
    assert isinstance(StreamLayout, type)
