"""The reference's newer surface, the small pieces (design API.md §8, issue 26): ``visa.f4e2m1``, the device
scalar types, mapping inspection (property-tested against brute force), ``ctx.memory()``, and the reference's
tightened checks (the unzip's register-file cache, InterTranspose's blocking flits, a register-file store after a
compute stage, an asymmetric slice of an inner digit).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import (
    RNGD,
    AxisSet,
    Context,
    HostTensor,
    LookupTable,
    SwitchConfig,
    device,
    f4e2m1,
    f8e4m3,
    i32,
    launch,
)
from visa import dtypes as dt
from visa.engines import switch as switch_engine
from visa.engines.vector.plan import plan_unzip
from visa.errors import DtypeError, HardwareLimitError, LayoutError, TypestateError
from visa.testing import place_dm

RNG = np.random.default_rng(263)


# -- f4e2m1 ---------------------------------------------------------------------------------------------------
def test_f4e2m1_values_rounding_and_packing() -> None:
    assert (f4e2m1.bits, f4e2m1.size_bits, f4e2m1.max, f4e2m1.has_inf, f4e2m1.has_nan) == (4, 4, 6.0, False, False)
    every = dt.from_bits(f4e2m1, np.arange(16)).astype(float)
    assert np.array_equal(every, np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(float))
    assert dt.to_bytes(f4e2m1, [0.5, -6.0]).tolist() == [0x01 | (0x0F << 4)]  # two a byte, element 0 low
    ax = AxisSet(A=8)
    t = HostTensor.from_numpy(np.array([0.25, 0.75, 2.5, 3.5, 5.0, -0.5, 1.0, -1.75]), f4e2m1, ax.m["A"])
    assert t.numpy().astype(float).tolist() == [0.0, 1.0, 2.0, 4.0, 4.0, -0.5, 1.0, -2.0]  # ties to even
    with pytest.raises(DtypeError, match="overflows f4e2m1"):
        HostTensor.from_numpy(np.full(8, 7.0), f4e2m1, ax.m["A"])  # 7 rounds to 8 > 6 (not a silent 6)
    with pytest.raises(DtypeError, match="NaN"):
        HostTensor.from_numpy(np.full(8, np.nan), f4e2m1, ax.m["A"], overflow="saturate")
    assert HostTensor.from_numpy(np.full(8, 99.0), f4e2m1, ax.m["A"], overflow="saturate").numpy()[0] == 6
    with pytest.raises(DtypeError, match="no NaN"):
        dt.convert(np.array([1.0], np.float32), dt.f32, f4e2m1, overflow="nan")


def test_f4e2m1_moves_by_dma_and_widens_through_a_fetch_table() -> None:
    """A kernel: f4e2m1 HBM → DM (packed), fetched through the baked f4e2m1 → f8e4m3 table (the reference's
    lookup), committed and compared with numpy's exact widening."""
    ax = AxisSet(A=4096)
    x = HostTensor.rand(f4e2m1, ax.m["A"], RNG)
    table = LookupTable.from_function(f4e2m1, f8e4m3, lambda v: v.astype(np.float64))
    ctx = Context.acquire()
    xh = x.to_hbm(ax.m["1"], ax.m["A"], ctx.pdma, 0)

    @device(chip=1)
    def widen(ctx: Context, xh: object) -> object:
        dm = xh.to_dm(ax.m["1 # 2"], ax.m["A / 16 # 256"], ax.m["A % 16"], ctx.tdma, 0)  # type: ignore[attr-defined]
        s = (ctx.main.begin(dm.view()).fetch_with_table(f8e4m3, ax.m["A % 16 / 8"], ax.m["A % 8"], table)
             .collect(ax.m["A % 16 / 8"], ax.m["A % 8 # 32"]).commit(ax.m["A % 16"], 1024))
        return s.to_hbm(ax.m["A"], ctx.tdma, 1 << 20)

    y = launch(widen, ctx, xh)
    assert np.array_equal(y.logical().astype(float), x.numpy().astype(float))  # type: ignore[attr-defined]


def test_device_scalar_types() -> None:
    assert list(dt.DEVICE_SCALARS) == ["bool_", "i32", "u32", "i64", "u64"]
    assert (dt.u32.min, dt.u32.max, dt.u64.max, dt.i64.min) == (0, 2**32 - 1, 2**64 - 1, -(2**63))
    with pytest.raises(DtypeError):
        dt.scalar(dt.u32)  # a scalar type, not a tensor element type (L2525)


# -- mapping inspection ---------------------------------------------------------------------------------------
def _leading_run(mp: object) -> int:
    """Brute force: how many positions from position 0 hold an index before the first padding position."""
    valid = np.asarray(mp.validity())  # type: ignore[attr-defined]
    bad = np.flatnonzero(~valid)
    return int(bad[0]) if bad.size else int(valid.size)


@settings(max_examples=60, deadline=None)
@given(st.permutations(["A", "B # 4", "C / 2", "C % 2", "1 # 2", "A # 5"]).map(lambda p: p[:3]))
def test_inspection_agrees_with_brute_force(items: list[str]) -> None:
    """``has_no_padding`` and ``innermost_writable_size`` against every position; ``remove_axis`` keeps the
    other digits: each index it holds is the original's with the axis at 0."""
    if sum(i.startswith("A") for i in items) > 1:
        items = [i for i in items if i != "A # 5"]
    ax = AxisSet(A=3, B=2, C=4)
    mp = ax.m[", ".join(items)]
    assert mp.has_no_padding() == bool(np.asarray(mp.validity()).all())
    assert mp.innermost_writable_size() == _leading_run(mp)
    for a in sorted(mp.axes):
        rest = mp.remove_axis(a)
        assert rest.axes == mp.axes - {a}
        digits = math.prod(d.size for d in mp.canon if getattr(getattr(d, "atom", None), "name", None) == a)
        assert rest.size * digits == mp.size
        ev = rest.evaluate()
        for p in np.flatnonzero(np.asarray(ev.valid))[:16]:
            idx = {k: int(np.asarray(ev.coord(k))[p]) for k in rest.axes}
            assert mp.position_of({**idx, a: 0}) is not None


def test_inspection_examples() -> None:
    ax = AxisSet(A=4, B=6, X=2)
    assert ax.m["A, X, B"].remove_axis("X") == ax.m["A, B"]
    assert ax.m["A / 2, B, A % 2"].remove_axis("A") == ax.m["B"]
    assert ax.m["A, B"].remove_axis("X") == ax.m["A, B"]
    assert ax.m["X"].is_broadcast("A B") and not ax.m["A, X"].is_broadcast("A B")
    assert ax.m["1"].is_broadcast() and not ax.m["1 # 2"].is_broadcast()
    assert ax.m["A, B # 8"].innermost_writable_size() == 6 and ax.m["A # 8, B"].innermost_writable_size() == 24
    assert ax.m["A, 1 # 2"].innermost_writable_size() == 1
    with pytest.raises(LayoutError, match="shares a digit"):
        ax.m["[A, B] % 8"].remove_axis("A")


def test_memory_report() -> None:
    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    ctx.num_chips = 1
    d = place_dm(ctx, np.arange(2048), i32, ax.m["1"], ax.m["1 # 2"], ax.m["A / 8 # 256"], ax.m["A % 8"], 4096)
    u = ctx.memory()[0, "dm"]
    assert (u.capacity, u.live, u.free, u.largest_free, u.tensors) == (RNGD.dm.slice_bytes, 32, RNGD.dm.slice_bytes
                                                                       - 32, RNGD.dm.slice_bytes - 4128, 1)
    assert "largest free span" in str(ctx.memory())
    del d
    assert ctx.memory()[0, "dm"].live == 0


# -- the reference's tightened checks ----------------------------------------------------------------------------
def test_unzip_group_is_bounded_by_the_register_file_cache() -> None:
    ax = AxisSet(I=2, T=64, P=8)
    with pytest.raises(HardwareLimitError, match="512 lanes") as err:  # group 0 (64 × 8 lanes) waits whole
        plan_unzip(RNGD, "I", ax.m["I, T"], ax.m["P"], ax.m["1 # 2, T"], ax.m["T"])
    assert err.value.axis == "I" and "innermost" in (err.value.fix or "")
    plan_unzip(RNGD, "I", ax.m["T, I"], ax.m["P"], ax.m["T, 1 # 2"], ax.m["T"])  # one packet a group: fine
    assert RNGD.vector.unzip_cache_bytes == 1024


def test_intertranspose_blocking_flits() -> None:
    """The reference's fixtures: slice1 2 × time0 1 × 9 flits = 18, and 2 × 3 × 3 = 18, are refused."""
    ax = AxisSet(S=128, W=2, T=2, P=144, Q=48, U=6)
    from visa import bf16

    with pytest.raises(HardwareLimitError, match="18 consecutive blocking flits"):
        switch_engine.plan(RNGD, bf16, ax.m["1 # 128, W"], ax.m["T"],
                           ax.m["P"], ax.m["1 # 128, T"], ax.m["W"], SwitchConfig.InterTranspose(
                               slice1=2, slice0=1, time0=1))
    with pytest.raises(HardwareLimitError, match="18 consecutive"):
        switch_engine.plan(RNGD, bf16, ax.m["1 # 128, W"], ax.m["U"], ax.m["Q"], ax.m["1 # 128, U / 3"],
                           ax.m["U % 3, W"], SwitchConfig.InterTranspose(slice1=2, slice0=1, time0=3))
    assert RNGD.switch.intertranspose_blocking_flits == 16


def test_a_register_file_store_after_a_compute_stage_is_refused() -> None:
    ax = AxisSet(S=256, E=8)
    ctx = Context.acquire()
    d = place_dm(ctx, np.zeros((256, 8), np.int32), i32, ax.m["1"], ax.m["1 # 2"], ax.m["S"], ax.m["E"], 0)
    from visa import BranchMode, FxpBinaryOp

    v = (ctx.main.begin(d.view()).fetch(i32, ax.m["1"], ax.m["E"]).collect(ax.m["1"], ax.m["E"]).vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, 1).vector_final())
    with pytest.raises(TypestateError, match="discard the computation"):
        v.to_vrf(ax.m["E"], 0)  # type: ignore[attr-defined]
