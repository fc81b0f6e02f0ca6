"""The Inter-Slice Block and its ordering with the intra-slice block (manual L4608–4630, L6583–6755;
digest §12 T2, T46–T49; errors E6, E7, E19) and the pass cost (L5270–5277, L5566–5573, L6738–6755)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, f32, i32
from visa.engines.vector import (
    BranchMode,
    FpUnaryOp,
    FxpBinaryOp,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
)
from visa.errors import DtypeError, LayoutError, TypestateError

from .helpers import collect, layout, logical, rand_f32, rand_i32, sat_sum

RNG = np.random.default_rng(3)


def t2_input(x: np.ndarray) -> tuple:
    """The manual's input: i32 [A / 8, R]; [1]; [A % 8], R = 4, A = 512, Cluster 1 # 2 (L4608–4623)."""
    ax = AxisSet(R=4, A=512)
    lay = layout(ax, i32, "1", "1 # 2", "A / 8, R", "1", "A % 8")
    return collect(Context.acquire(), lay, x, "A R").vector_init(), ax


def test_t2_inter_slice_dummy_l4608() -> None:
    """T2 (L4608–4623, L6636–6653): sat Σ_r at slice (a / 8)·4; the other three slices are dummies."""
    x = rand_i32(RNG, (512, 4))
    init, ax = t2_input(x)
    out = init.vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.AddSat).vector_final()
    assert np.array_equal(logical(out, "A"), sat_sum(x, 1))
    assert out.data.known[0, 0, 0::4].all() and not out.data.known[0, 0, 1::4].any()
    rep = out.reports[-1]
    assert dict(rep.details)["ring"] == 4 and rep.latency == 4  # one ring traversal of r = 4 slices


def test_t46_broadcast_into_new_axis_l6654() -> None:
    ax = AxisSet(W=64, R=4, X=4, P=8)
    x = rand_f32(RNG, (64, 4, 8), extremes=False)
    lay = layout(ax, f32, "1", "1 # 2", "W, R", "1", "P")
    out = (collect(Context.acquire(), lay, x, "W R P").vector_init()
           .vector_inter_slice_reduce(ax.m["W, X"], ax.m["1"], InterSliceReduceOpF32.Add).vector_final())
    want = ((x[:, 0] + x[:, 1]) + x[:, 2]) + x[:, 3]  # ring order, one rounding per step
    got = logical(out, "W X P")
    assert all(np.array_equal(got[:, k], want) for k in range(4))


def test_t47_promotion_from_time_l6673() -> None:
    ax = AxisSet(W=32, R=4, T0=2, T2=4, T1=2, P=8)
    x = rand_f32(RNG, (32, 4, 2, 4, 2, 8), extremes=False)
    lay = layout(ax, f32, "1", "1 # 2", "W, R", "T0, T2, T1", "P")
    out = (collect(Context.acquire(), lay, x, "W R T0 T2 T1 P").vector_init()
           .vector_inter_slice_reduce(ax.m["W, T2"], ax.m["T0, T1"], InterSliceReduceOpF32.Add).vector_final())
    want = ((x[:, 0] + x[:, 1]) + x[:, 2]) + x[:, 3]
    assert out.layout.slice == ax.m["W, T2"] and out.layout.time == ax.m["T0, T1"]
    assert np.array_equal(logical(out, "W T0 T2 T1 P"), want)


def test_t48_inter_first_then_intra_l6698() -> None:
    x = rand_i32(RNG, (512, 4))
    init, ax = t2_input(x)
    red = init.vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.AddSat)
    out = red.vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, 100).vector_final()
    assert np.array_equal(logical(out, "A"), (sat_sum(x, 1).astype(np.int64) + 100).astype(np.int32))
    b = t2_input(x)[0].vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.AddSat)
    again = b.vector_intra_slice_branch(BranchMode.Unconditional)
    with pytest.raises(TypestateError, match="only one switch"):
        again.vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.Add)


def test_t49_intra_first_then_inter_l6716() -> None:
    x = rand_i32(RNG, (512, 4))
    init, ax = t2_input(x)
    red = (init.vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, 100)
           .vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.AddSat))
    assert red.ve.order == "IntraFirst"
    out = red.vector_final()
    assert np.array_equal(logical(out, "A"), sat_sum((x.astype(np.int64) + 100).astype(np.int32), 1))
    init2, _ = t2_input(x)
    red2 = (init2.vector_intra_slice_branch(BranchMode.Unconditional)
            .vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.Add))
    with pytest.raises(TypestateError, match="only vector_filter and vector_final"):  # E7
        red2.vector_intra_slice_branch(BranchMode.Unconditional)


def test_e6_inter_from_way4_refused_l6603() -> None:
    ax = AxisSet(R=4, A=512)
    lay = layout(ax, f32, "1", "1 # 2", "A / 8, R", "1", "A % 8")
    b = collect(Context.acquire(), lay, rand_f32(RNG, (512, 4)), "A R").vector_init().vector_intra_slice_branch(
        BranchMode.Unconditional)
    n = b.vector_split(ax.m["A % 8 / 4"], ax.m["A % 4"]).vector_fp_unary(FpUnaryOp.Exp)
    with pytest.raises(TypestateError, match="Way"):
        _ = n.vector_inter_slice_reduce


def test_e19_inter_rules_l6732() -> None:
    x = rand_i32(RNG, (512, 4))
    init, ax = t2_input(x)
    with pytest.raises(DtypeError, match="Mul is not an inter-slice reduce of i32"):
        init.vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpF32.Mul)
    ax2 = AxisSet(R=4, A=1024)
    lay = layout(ax2, i32, "1", "R / 2", "A / 8, R % 2", "1", "A % 8")
    init2 = collect(Context.acquire(), lay, rand_i32(RNG, (1024, 4)), "A R").vector_init()
    with pytest.raises(LayoutError, match="inside one cluster") as err:
        init2.vector_inter_slice_reduce(ax2.m["A / 8, 1 # 2"], ax2.m["1"], InterSliceReduceOpI32.Add)
    assert err.value.axis == "R" and err.value.level == "Cluster"
    init3, _ = t2_input(x)
    with pytest.raises(LayoutError, match="do not hold every index") as err3:
        init3.vector_inter_slice_reduce(ax.m["A / 16, 1 # 8"], ax.m["1"], InterSliceReduceOpI32.Add)
    assert err3.value.axis == "A" and err3.value.level == "Slice"
    half = layout(ax, i32, "1", "1 # 2", "A / 8 % 32, R", "1", "A % 8")  # holds A < 256 only
    init6 = collect(Context.acquire(), half, x, "A R").vector_init()
    with pytest.raises(LayoutError, match="indices the input does not have") as err6:
        init6.vector_inter_slice_reduce(ax.m["A / 8, 1 # 4"], ax.m["1"], InterSliceReduceOpI32.Add)
    assert err6.value.axis == "A" and err6.value.level == "Slice"
    init5, _ = t2_input(x)
    with pytest.raises(LayoutError, match="Packet") as err5:  # A is partly in the Packet: it cannot be reduced
        init5.vector_inter_slice_reduce(ax.m["1 # 256"], ax.m["1"], InterSliceReduceOpI32.Add)
    assert err5.value.axis == "A"
    init4, _ = t2_input(x)
    with pytest.raises(LayoutError, match="nothing is reduced"):
        init4.vector_inter_slice_reduce(ax.m["A / 8, R"], ax.m["1"], InterSliceReduceOpI32.Add)


@pytest.mark.parametrize("op", ["Add", "AddSat", "Max", "Min", "fAdd", "fMax", "fMin", "fMul"])
@settings(max_examples=15, deadline=None)
@given(r=st.sampled_from([2, 4, 8]), seed=st.integers(0, 2**16))
def test_inter_matches_numpy(op: str, r: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ax = AxisSet(W=256 // r, R=r, P=8)
    dtype = f32 if op.startswith("f") else i32
    x = rand_f32(rng, (256 // r, r, 8)) if dtype is f32 else rand_i32(rng, (256 // r, r, 8))
    lay = layout(ax, dtype, "1", "1 # 2", "W, R", "1", "P")
    red = {"Add": InterSliceReduceOpI32.Add, "AddSat": InterSliceReduceOpI32.AddSat,
           "Max": InterSliceReduceOpI32.Max, "Min": InterSliceReduceOpI32.Min, "fAdd": InterSliceReduceOpF32.Add,
           "fMax": InterSliceReduceOpF32.Max, "fMin": InterSliceReduceOpF32.Min, "fMul": InterSliceReduceOpF32.Mul}[op]
    out = (collect(Context.acquire(), lay, x, "W R P").vector_init()
           .vector_inter_slice_reduce(ax.m[f"W, 1 # {r}"], ax.m["1"], red).vector_final())
    got = logical(out, "W P")
    if op == "Add":
        want = np.sum(x.astype(np.int64), axis=1).astype(np.int32)
    elif op == "AddSat":
        want = sat_sum(x, 1)
    elif op in ("Max", "Min"):
        want = getattr(np, op.lower())(x, axis=1)
    elif op == "fAdd":
        with np.errstate(all="ignore"):
            want = np.add.accumulate(x, axis=1, dtype=np.float32)[:, -1] + np.float32(0)
    elif op == "fMul":
        with np.errstate(all="ignore"):
            want = np.multiply.accumulate(x, axis=1, dtype=np.float32)[:, -1]
    else:
        want = (np.fmax if op == "fMax" else np.fmin).reduce(x, axis=1)
    assert np.array_equal(got, want, equal_nan=True)


# ----------------------------------------------------------------------------------------------- cost


def test_cost_split_doubles_the_way4_section_l5270() -> None:
    """After vector_split the Way4 section has twice the flits: cycles = 2·T (L4841, L5270–5273)."""
    ax = AxisSet(A=64)
    lay = layout(ax, f32, "1", "1", "1", "A / 8", "A % 8")
    b = collect(Context.acquire(), lay, rand_f32(RNG, 64, extremes=False), "A").vector_init()
    out = (b.vector_intra_slice_branch(BranchMode.Unconditional).vector_split(ax.m["A / 4"], ax.m["A % 4"])
           .vector_fp_unary(FpUnaryOp.Exp).vector_concat(ax.m["A / 8"], ax.m["A % 8"]).vector_final())
    rep = out.reports[-1]
    assert rep.cycles == 16 and rep.latency == 1 and rep.engine == "vector"
    lay2 = layout(ax, f32, "1", "1", "1", "A / 8", "A % 8")
    b2 = collect(Context.acquire(), lay2, rand_f32(RNG, 64, extremes=False), "A").vector_init()
    out2 = b2.vector_intra_slice_branch(BranchMode.Unconditional).vector_final()
    assert out2.reports[-1].cycles == 8 and out2.reports[-1].latency == 0
