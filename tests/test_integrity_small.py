"""The smaller integrity findings of issue 23 (finding 8): each a wrong answer or an unclear failure a few lines
of user code reached, now a clear refusal before anything changes, or a right answer."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import AxisSet, HostTensor
from visa import dtypes as dt
from visa.errors import DtypeError, WrongTypeError
from visa.kernels import bounds

# ---------------------------------------------------------------------------------------------------------
# visa.kernels.bounds is a bound for bf16-subnormal results too
# ---------------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=2.0**-140, max_value=2.0**-120), st.booleans())
def test_bounds_hold_for_bf16_subnormal_results(y: float, negative: bool) -> None:
    """Rounding a value below bf16's least normal (2**-126) to bf16 errs by up to half its spacing 2**-133, which
    ``b·|y|`` alone does not cover: every bound that ends in a bf16 rounding covers it."""
    y = -y if negative else y
    want = np.array([y])
    err = abs(float(np.array(y, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)) - y)
    for bound in (bounds.add(want), bounds.mul(want), bounds.swiglu(want), bounds.rms_norm(want, 8),
                  bounds.softmax(np.abs(want), 8, 0.0)):
        assert err <= float(bound[0]), (y, err, float(bound[0]))
    x, w = np.array([[y]]), np.array([[1.0]])
    assert err <= float(bounds.gemm(x, w, 1)[0, 0])
    _, ar = bounds.all_reduce(np.array([[y], [0.0]]), 1)
    assert err <= float(ar[0])


# ---------------------------------------------------------------------------------------------------------
# host data: a masked array's masked values, a long double beyond float64
# ---------------------------------------------------------------------------------------------------------


def test_a_masked_array_is_refused_not_read_with_its_masked_values() -> None:
    m = AxisSet(A=3).m
    with pytest.raises(WrongTypeError) as err:
        HostTensor.from_numpy(np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]), dt.i32, m["A"])
    assert err.value.call == "HostTensor.from_numpy" and "masked" in err.value.message and "filled" in err.value.fix
    unmasked = HostTensor.from_numpy(np.ma.masked_array([1, 2, 3]), dt.i32, m["A"])  # no value masked: its data
    assert np.array_equal(unmasked.numpy(), [1, 2, 3])


@pytest.mark.parametrize("dtype", [dt.f32, dt.bf16, dt.f16, dt.f8e5m2, dt.f8e4m3])
def test_a_long_double_beyond_float64_overflows_under_error(dtype: object) -> None:
    m = AxisSet(A=3).m
    big = np.array([1, 2, np.longdouble("1e400")], dtype=np.longdouble)
    if np.isinf(big[2]):  # a platform whose long double is float64: nothing to check
        pytest.skip("long double is float64 here")
    with pytest.raises(DtypeError) as err:
        HostTensor.from_numpy(big, dtype, m["A"])  # type: ignore[arg-type]
    assert "1e+400" in err.value.message and "infinity, which it does not have" not in err.value.message
    got = HostTensor.from_numpy(big, dtype, m["A"], overflow="saturate").numpy()  # type: ignore[arg-type]
    assert float(got[2]) == float(dtype.max)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------------------
# a commit starts on an 8-byte unit of DM (L7699, L2414)
# ---------------------------------------------------------------------------------------------------------


def _committable(ctx: object) -> tuple[object, object]:
    from visa import Context, i32

    assert isinstance(ctx, Context)
    m = AxisSet(A=2048).m
    dm = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0) \
        .to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    return m, ctx.main.begin(dm.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])


def test_a_commit_to_an_unaligned_dm_address_is_refused_l7699() -> None:
    from visa import Context
    from visa.errors import AddressError

    ctx = Context.acquire()
    m, s = _committable(ctx)
    before = len(ctx.schedule.ops)
    with pytest.raises(AddressError) as err:
        s.commit(m["A % 8"], (1 << 12) + 4)  # type: ignore[attr-defined]
    assert err.value.call == "commit" and "multiple of 8" in err.value.message and err.value.fix
    assert len(ctx.schedule.ops) == before
    out = s.commit(m["A % 8"], (1 << 12) + 8)  # type: ignore[attr-defined]  # (a refusal leaves the stream)
    assert np.array_equal(out.logical("A"), np.arange(2048))


# ---------------------------------------------------------------------------------------------------------
# a guard takes a truth value, not anything truthy
# ---------------------------------------------------------------------------------------------------------


def test_a_guard_refuses_a_predicate_that_gives_no_truth_value() -> None:
    from visa import Context

    ctx = Context.acquire()
    m = AxisSet(C=2).m
    one = HostTensor.from_numpy(np.array([3, 0], np.int32), dt.i32, m["C"], axes="C").to_hbm(
        m["1"], m["C"], ctx.pdma, 0)
    before = len(ctx.schedule.ops)
    for bad in (lambda n: n[0], lambda n: "yes", lambda n: None, lambda n: 1.0):
        with pytest.raises(WrongTypeError) as err:
            ctx.main.when(one, bad)
        assert err.value.call == "ctx.main.when" and "n > 0" in err.value.fix
    assert len(ctx.schedule.ops) == before
    assert ctx.main.when(one, lambda n: n[0] > 0) is True
    assert ctx.main.when(one, lambda n: bool(n[0] == 0)) is False


# ---------------------------------------------------------------------------------------------------------
# launch: arguments of this context only, and no two sharing bytes
# ---------------------------------------------------------------------------------------------------------


def test_launch_refuses_another_contexts_tensor_and_aliased_buffers() -> None:
    from visa import Context, device, i32, launch
    from visa.errors import AllocationError, VisaError

    ran: list[int] = []

    @device(chip=1)
    def kernel(ctx: Context, a: object, b: object) -> None:
        ran.append(1)

    m = AxisSet(A=64).m
    ctx, other = Context.acquire(), Context.acquire()

    def hbm(c: Context, address: int, element: str = "A") -> object:
        return HostTensor.from_numpy(np.arange(64, dtype=np.int32), i32, m["A"]).to_hbm(m["1"], m[element], c.pdma,
                                                                                       address)

    x, y = hbm(ctx, 0), hbm(ctx, 4096)
    with pytest.raises(VisaError) as err:
        launch(kernel, ctx, x, hbm(other, 0))
    assert "another context" in err.value.message and "launch" in (err.value.call or "")
    alias = x.relabel(Element=m["A"])  # type: ignore[attr-defined]  # the same bytes through another handle
    with pytest.raises(AllocationError) as err2:
        launch(kernel, ctx, x, alias)
    assert err2.value.call == "launch" and "share bytes" in err2.value.message
    with pytest.raises(AllocationError):
        launch(kernel, ctx, x.view().tile(m["A"], 32, m["A = 32 # 64"], 16), x)  # type: ignore[attr-defined]
    assert not ran
    launch(kernel, ctx, x, y)
    launch(kernel, ctx, x, x)  # the same handle twice: visibly one buffer
    launch(kernel, ctx, x.view().tile(m["A"], 32, m["A = 32 # 64"], 0),  # type: ignore[attr-defined]
           x.view().tile(m["A"], 32, m["A = 32 # 64"], 32))  # type: ignore[attr-defined]  # disjoint tiles
    assert len(ran) == 3


# ---------------------------------------------------------------------------------------------------------
# cluster_swap() of a one-cluster tensor: refused when staged, not poison when read
# ---------------------------------------------------------------------------------------------------------


def test_cluster_swap_of_a_one_cluster_tensor_is_refused_when_staged() -> None:
    from visa import Context, i32
    from visa.errors import LayoutError

    m = AxisSet(A=2048).m
    ctx = Context.acquire()
    dm = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0) \
        .to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    with pytest.raises(LayoutError) as err:
        dm.view().cluster_swap()
    e = err.value
    assert e.call == "cluster_swap" and e.level == "Cluster" and "1 of the chip's 2 clusters" in e.message
    assert "# 1 + 1" in e.fix
    moved = dm.to_dm(m["# 1 + 1"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 1 << 12)  # what the fix says
    assert np.array_equal(moved.logical("A"), np.arange(2048))


# ---------------------------------------------------------------------------------------------------------
# a legal size no memory holds: a refusal before allocating, not MemoryError
# ---------------------------------------------------------------------------------------------------------


def test_a_host_tensor_no_memory_holds_is_refused_before_allocating() -> None:
    from visa.errors import HardwareLimitError
    from visa.tensors.handles import HOST_BYTES

    m = AxisSet(A=1 << 40, B=2).m
    assert m["A"].size * 1 > HOST_BYTES
    for make in (lambda: HostTensor.zeros(dt.i8, m["A"]),
                 lambda: HostTensor.rand(dt.i8, m["A"], np.random.default_rng(0)),
                 lambda: HostTensor.from_numpy(np.zeros(2, np.int8), dt.i8, m["B, A"], axes="B A")):
        with pytest.raises(HardwareLimitError) as err:
            make()
        assert err.value.level == "Element" and "bytes of HBM" in err.value.message and err.value.fix
