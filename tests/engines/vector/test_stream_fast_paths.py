"""The elementwise streaming fast paths (issue 15, docs/manual-notes.md "Elementwise streaming cost") pinned
against the general paths they replace: the known-mask AND without a pass (``known_and``), the strided form of a
gather index (``strided_index``, ``gather_view``) and the ops computed in the split shape (``apply`` with a
split :class:`Resolved`), the VRF row read as a nest, and the poison rules through all of them (an element is
known only where every input it reads is, L1071–1093; a VRF element never loaded is refused, L5256)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import AxisSet, Context, fastpaths, i32
from visa.engines.vector import BranchMode, ClipBinaryOpI32, FxpBinaryOp, Stash
from visa.engines.vector.elementwise import Resolved, apply
from visa.engines.vector.relayout import Gather, apply_gather, gather_view, plan_gather, strided_index
from visa.errors import PoisonError
from visa.memory.known import copy_known, is_everywhere, known_and, known_everywhere
from visa.stream.vector.base import op_fn
from visa.testing import place_vrf

from .helpers import collect, layout, logical, rand_i32

RNG = np.random.default_rng(15)

# ------------------------------------------------------------------------------------------ known_and

SHAPE = (2, 3, 4)


@st.composite
def _parts(draw: st.DrawFn) -> list[np.ndarray | bool]:
    out: list[np.ndarray | bool] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["true", "false", "everywhere", "array", "row"]))
        if kind in ("true", "false"):
            out.append(kind == "true")
        elif kind == "everywhere":
            out.append(known_everywhere(SHAPE))
        else:
            shape = SHAPE if kind == "array" else (1, SHAPE[1], 1)
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
            out.append(np.array(bits, dtype=bool).reshape(shape))
    return out


@settings(max_examples=80, deadline=None)
@given(_parts())
def test_known_and_is_the_elementwise_and(parts: list[np.ndarray | bool]) -> None:
    """``known_and`` equals the AND of its parts broadcast (all True for none), and never hands out a mask one
    may write into a part through."""
    want = np.ones(SHAPE, dtype=bool)
    for p in parts:
        want = want & np.broadcast_to(p, SHAPE)
    got = known_and(parts, SHAPE)
    assert got.shape == SHAPE
    assert np.array_equal(got, want)
    arrays = [p for p in parts if isinstance(p, np.ndarray) and not is_everywhere(p)]
    if len(arrays) == 1 and all(p is not False for p in parts):
        assert not got.flags.writeable  # a view of the one part: read-only
    if not arrays and all(p is not False for p in parts):
        assert is_everywhere(got)  # no memory, no pass


def test_copy_known_keeps_a_broadcast_and_copies_an_array() -> None:
    every = known_everywhere((4, 4))
    assert copy_known(every) is every
    arr = np.array([True, False])
    out = copy_known(arr)
    assert out is not arr and np.array_equal(out, arr)


# ------------------------------------------------------------------------------------------ strided gathers


@st.composite
def _digit_index(draw: st.DrawFn) -> np.ndarray:
    """An index that is a mixed-radix affine function of its position: each axis split into digits."""
    ndim = draw(st.integers(1, 3))
    sizes, steps = [], []
    axis_sizes = []
    for _ in range(ndim):
        n_digits = draw(st.integers(1, 3))
        ds = [draw(st.integers(1, 4)) for _ in range(n_digits)]
        sizes += ds
        steps += [draw(st.integers(0, 12)) for _ in range(n_digits)]
        axis_sizes.append(int(np.prod(ds)))
    index = np.full((), draw(st.integers(0, 5)), dtype=np.int64)
    for n, s in zip(sizes, steps, strict=True):
        index = index[..., None] + np.arange(n, dtype=np.int64) * s
    return index.reshape(axis_sizes)


def _rebuild(form: tuple[tuple[int, ...], tuple[int, ...], int], shape: tuple[int, ...]) -> np.ndarray:
    split, strides, offset = form
    out = np.full((), offset, dtype=np.int64)
    for n, s in zip(split, strides, strict=True):
        out = out[..., None] + np.arange(n, dtype=np.int64) * s
    return out.reshape(shape)


@settings(max_examples=120, deadline=None)
@given(_digit_index())
def test_strided_index_finds_every_digit_structure(index: np.ndarray) -> None:
    """An index built from digits is recognised, and the form found rebuilds it exactly."""
    form = strided_index(index)
    assert form is not None
    assert np.array_equal(_rebuild(form, index.shape), index)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=24), st.integers(1, 3))
def test_strided_index_is_sound(values: list[int], rows: int) -> None:
    """Any index: either no form, or a form that rebuilds it exactly (never a wrong view)."""
    n = len(values) - len(values) % rows or len(values)
    index = np.array(values[:n], dtype=np.int64).reshape(rows if n % rows == 0 else 1, -1)
    form = strided_index(index)
    if form is not None:
        assert np.array_equal(_rebuild(form, index.shape), index)


def test_gather_view_equals_the_index_gather() -> None:
    """The strided view reads what the index reads, values and known (poison included), for a vector read once
    per row (a broadcast digit) and for a permuted element order."""
    needs("vector.gather-view")
    ax = AxisSet(S=4, T=3, E=16)
    m = ax.m
    stream = (m["1"], m["1"], m["S"], m["T, E / 8"], m["E % 8"])
    for element in (m["E"], m["E % 2, E / 2"]):
        g = plan_gather((m["1"], m["1"], m["S"], element), stream, "test", "VRF operand")
        assert g.strided is not None
        values = rand_i32(RNG, (1, 1, 4, 16))
        known = RNG.random((1, 1, 4, 16)) < 0.8
        view = gather_view(g, values, known)
        assert view is not None
        v, k, split = view
        want_v, want_k = apply_gather(g, values, known)
        assert np.array_equal(np.broadcast_to(v, split).reshape(want_v.shape), want_v)
        assert np.array_equal(np.broadcast_to(k, split).reshape(want_k.shape), want_k)
        assert not v.flags.writeable
        every = gather_view(g, values, known_everywhere(values.shape))
        assert every is not None and is_everywhere(every[1])


def test_gather_view_refuses_a_source_of_another_size() -> None:
    g = Gather(np.arange(8, dtype=np.int64), np.ones(8, dtype=bool), ((8,), (1,), 0))
    assert gather_view(g, np.zeros(4, np.int32), np.ones(4, bool)) is None


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["AddFxp", "SubFxp", "MulInt", "Max", "AbsMax"]), st.sampled_from([(0, 1), (1, 0)]),
       st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_apply_in_the_split_shape_equals_the_stream_shape(name: str, args: tuple[int, int], stream_every: bool,
                                                           operand_every: bool, seed: int) -> None:
    """``apply`` with a split operand (the stream reshaped to the digits) gives the values and known-mask of the
    same operand expanded to the stream's shape: wrapping, saturation and poison propagation unchanged."""
    rng = np.random.default_rng(seed)
    op = getattr(ClipBinaryOpI32 if name in ("Max", "AbsMax") else FxpBinaryOp, name)
    fn = op_fn(op)
    shape = (1, 2, 2, 6, 8)
    split = (1, 2, 2, 3, 2, 8)
    stream = rand_i32(rng, shape)
    sk = known_everywhere(shape) if stream_every else rng.random(shape) < 0.7
    src = rand_i32(rng, 2 * 2 * 2 * 8)
    strides = (0, 32, 16, 0, 8, 1)  # the operand read once per row of 2 time steps, broadcast over 3 of them
    from numpy.lib.stride_tricks import as_strided

    ov = as_strided(src, split, tuple(s * 4 for s in strides), writeable=False)
    ok_src = np.ones(src.size, bool) if operand_every else rng.random(src.size) < 0.8
    ok = known_everywhere(split) if operand_every else as_strided(ok_src, split, strides, writeable=False)
    fast = apply(fn, args, stream, sk, [([Resolved(ov, ok, split)], None)], None, 3)
    full = Resolved(ov, ok, split).expand(shape)
    slow = apply(fn, args, stream, np.array(sk), [([full], None)], None, 3)
    assert fast[0].shape == shape and fast[1].shape == shape
    assert np.array_equal(fast[0], slow[0])
    assert np.array_equal(fast[1], slow[1])


# ------------------------------------------------------------------------------------------ through a stream


def test_vrf_vector_read_once_per_row_matches_numpy() -> None:
    """``y[s, t, e] = x[s, t, e] · w[e]`` (``MulInt`` wraps), ``w`` in every slice's VRF: the view path, exact."""
    ctx = Context.acquire()
    ax = AxisSet(S=512, T=3, E=16)
    m = ax.m
    lay = layout(ax, i32, "1", "S / 256", "S % 256", "T, E / 8", "E % 8")
    x = rand_i32(RNG, (512, 3, 16))
    w = rand_i32(RNG, 16)
    vrf = place_vrf(ctx, np.broadcast_to(w, (512, 16)), i32, m["1"], m["S / 256"], m["S % 256"], m["E"], 0, "S E")
    out = (collect(ctx, lay, x, "S T E").vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.MulInt, vrf).vector_final())
    assert np.array_equal(logical(out, "S T E"), x * w)


def test_vrf_row_with_an_element_never_loaded_is_refused_l5256() -> None:
    """The view path refuses an operand element never loaded, counting each stream position that reads it."""
    from visa.tensors.handles import VrfTensor

    ctx = Context.acquire()
    ax = AxisSet(S=512, T=3, E=16)
    m = ax.m
    lay = layout(ax, i32, "1", "S / 256", "S % 256", "T, E / 8", "E % 8")
    hm = AxisSet(S=512, F=8).m  # elements 0..7 of every slice's row
    place_vrf(ctx, rand_i32(RNG, (512, 8)), i32, hm["1"], hm["S / 256"], hm["S % 256"], hm["F"], 0, "S F")
    vrf = VrfTensor(ctx, i32, m["1"], m["S / 256"], m["S % 256"], m["E"], 0)  # E 8..15 were never written
    b = collect(ctx, lay, rand_i32(RNG, (512, 3, 16)), "S T E").vector_init().vector_intra_slice_branch(
        BranchMode.Unconditional)
    with pytest.raises(PoisonError, match=f"{512 * 3 * 8} element"):
        b.vector_fxp(FxpBinaryOp.AddFxp, vrf)


def test_stash_read_back_through_the_view_l4983() -> None:
    """The stash read as an operand (the identity gather, a view of the saved data): ``x + x``, exact."""
    ctx = Context.acquire()
    ax = AxisSet(A=8192)
    lay = layout(ax, i32, "1", "A / 4096", "A % 4096 / 16", "A % 16 / 8", "A % 8")
    x = rand_i32(RNG, 8192)
    out = (collect(ctx, lay, x).vector_init().vector_intra_slice_branch(BranchMode.Unconditional).vector_stash()
           .vector_fxp(FxpBinaryOp.AddFxp, Stash).vector_final())
    assert np.array_equal(logical(out), x + x)


# ------------------------------------------------------------------------------------------ conversions


def _fxp_model(v: float, iw: int) -> int:
    """Round half away from zero, then saturate to i32 (L4948–4952), exactly."""
    from fractions import Fraction

    q = Fraction(v) * 2 ** (31 - iw)
    r = (abs(q) + Fraction(1, 2)).__floor__() * (1 if q >= 0 else -1)
    return max(-(2**31), min(2**31 - 1, r))


def test_fp_to_fxp_rounds_exactly_at_the_edges_of_the_in_place_sum() -> None:
    """``fp_to_fxp`` rounds as ``trunc(d ± 0.5)`` in binary64 (docs/manual-notes.md): the cases where that sum could
    round — just below and above every half, tiny magnitudes around 2**-30, the saturation bounds — against the
    exact model, for several integer widths."""
    from visa.engines.vector import arith

    halves = np.array([k + 0.5 for k in range(-4, 4)] + [2.0**-1, 2.0**-30, 2.0**-29, 2.0**-31, 2.0**-60,
                                                          2.0**31, 2.0**31 - 128, 2.0**30 + 0.5, 8388607.5],
                      dtype=np.float32)
    xs = np.concatenate([halves, np.nextafter(halves, np.float32(np.inf)), np.nextafter(halves, np.float32(-np.inf))])
    xs = np.concatenate([xs, -xs, np.array([0.0, -0.0, 1e-45, -1e-45, 3.4028235e38], np.float32)])
    for iw in (31, 30, 16, 1, 0):
        got = arith.fp_to_fxp(xs, iw)
        want = [_fxp_model(float(v), iw) for v in xs]
        assert got.tolist() == want, iw


# ------------------------------------------------------------------------------------------ branch operands


def _reference_apply(fn, args_mode, stream, stream_known, operands, exec_id, group_bit):  # type: ignore[no-untyped-def]
    """The per-group computation as it was written before the fast paths: each operand entry over the whole stream,
    its result copied where its group matches and no earlier entry took the element (L5052–5062)."""
    def run(ops):  # type: ignore[no-untyped-def]
        slots = [stream, *(o.values for o in ops)]
        knowns = [stream_known, *(o.known for o in ops)]
        k = np.ones(stream.shape, bool)
        for a in sorted(set(args_mode)):
            k = k & np.broadcast_to(knowns[a], stream.shape)
        return np.broadcast_to(np.asarray(fn(*(slots[a] for a in args_mode))), stream.shape), k

    result, known = stream.copy(), np.array(np.broadcast_to(stream_known, stream.shape))
    group = np.zeros(stream.shape, np.uint8) if exec_id is None else (exec_id.astype(np.int64) >> group_bit) & 1
    taken = np.zeros(stream.shape, bool)
    for ops, gid in operands:
        sel = ~taken if gid is None else (~taken & (group == gid.value))
        if not sel.any():
            continue
        v, k = run(ops)
        result[sel] = v[sel]
        known[sel] = k[sel]
        taken |= sel
    return result, known


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["AddFxp", "SubFxp", "MulInt", "Max"]), st.sampled_from([(0, 1), (1, 0)]),
       st.lists(st.tuples(st.sampled_from([None, 0, 1]), st.booleans()), min_size=1, max_size=3),
       st.sampled_from(["none", "ids", "one group"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_branch_operands_equal_the_per_group_computation(name: str, args: tuple[int, int],
                                                         entries: list[tuple[int | None, bool]], ids: str,
                                                         stream_every: bool, seed: int) -> None:
    """``apply`` with branch operands (``VeBranchOperand`` groups; constants take the one-pass table path, a VRF-like
    array operand the masked one) equals the per-group reference: first match wins, unmatched elements pass
    through, poison propagates from the stream and the operand read."""
    from visa.engines.vector import GroupId

    rng = np.random.default_rng(seed)
    op = getattr(ClipBinaryOpI32 if name == "Max" else FxpBinaryOp, name)
    fn = op_fn(op)
    shape = (1, 2, 3, 4, 8)
    stream = rand_i32(rng, shape)
    sk = known_everywhere(shape) if stream_every else rng.random(shape) < 0.7
    exec_id = None if ids == "none" else rng.integers(0, 16, shape).astype(np.uint8)
    if ids == "one group":
        assert exec_id is not None
        exec_id &= np.uint8(7)  # every element in group 0
    operands = []
    for gid, constant in entries:
        if constant:
            r = Resolved(np.asarray(int(rand_i32(rng, 1)[0]), np.int32), True)
        else:
            r = Resolved(rand_i32(rng, shape), rng.random(shape) < 0.8)
        operands.append(([r], None if gid is None else (GroupId.Zero if gid == 0 else GroupId.One)))
    if len(operands) == 1 and operands[0][1] is None:
        operands.append(([Resolved(np.asarray(3, np.int32), True)], GroupId.One))  # (the branch path)
    got = apply(fn, args, stream, sk, operands, exec_id, 3)
    want = _reference_apply(fn, args, stream, sk, operands, exec_id, 3)
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(np.broadcast_to(got[1], shape), want[1])


# ------------------------------------------------------------------------------------------ deferred ops


@pytest.mark.parametrize("family, name", [(f, n) for f, ops in __import__(
    "visa.engines.vector.arith", fromlist=["UFUNC"]).UFUNC.items() for n in ops])
def test_ufunc_forms_equal_the_operators(family: str, name: str) -> None:
    """Each operator left as a ufunc (``arith.UFUNC``, computed into DM by the commit) is bit for bit its arithmetic
    (``arith.BINARY``): wrapping i32, binary32 with NaN, infinities, signed zeros and subnormals."""
    from visa.engines.vector import arith

    from .helpers import F32_EXTREMES, I32_EXTREMES, rand_f32

    rng = np.random.default_rng(3)
    f32_family = family in ("FpBinaryOp", "FpDivBinaryOp", "ClipBinaryOpF32")
    if f32_family:
        base = np.concatenate([F32_EXTREMES, rand_f32(rng, 200)])
    else:
        base = np.concatenate([I32_EXTREMES.astype(np.int32), rand_i32(rng, 200)])
    a, b = np.meshgrid(base, base)
    want = np.asarray(arith.BINARY[family](name, a, b))
    with np.errstate(all="ignore"):
        got = arith.UFUNC[family][name](a, b)
    assert got.dtype == want.dtype
    view = np.uint32 if f32_family else np.int32
    assert np.array_equal(got.view(view), want.view(view))


def _add_kernel(x: np.ndarray, op: object, constant: object, poison: bool = False):  # type: ignore[no-untyped-def]
    """``x op constant`` over ``n`` i32 (512 slices) from HBM back to HBM, and the DM image after it."""
    from visa import HbmTensor, HostTensor, device, launch

    n = x.size
    ax = AxisSet(A=n)
    m = ax.m
    per = n // 512

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor) -> HbmTensor:  # type: ignore[type-arg]
        dm = x.to_dm(m[f"A / {n // 2}"], m[f"A % {n // 2} / {per}"], m[f"A % {per}"], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(i32, m[f"A % {per} / 8"], m["A % 8"])
             .collect(m[f"A % {per} / 8"], m["A % 8"]).vector_init()
             .vector_intra_slice_branch(BranchMode.Unconditional))
        s = s.vector_clip(op, constant) if isinstance(op, ClipBinaryOpI32) else s.vector_fxp(op, constant)
        out = s.vector_final().commit(m[f"A % {per}"], 1 << 16)
        return out.to_hbm(m["A"], ctx.tdma, 1 << 28)

    ctx = Context.acquire()
    hbm = HostTensor.from_numpy(x, i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    if poison:  # the last slice's elements never written in HBM: their stream is poison
        hbm = HostTensor.from_numpy(x[: n - per], i32, AxisSet(A=n - per).m["A"]).to_hbm(
            m["1"], AxisSet(A=n - per).m["A"], ctx.pdma, 1 << 20)
        hbm = type(hbm)(ctx, i32, m["1"], m["A"], 1 << 20)
    out = launch(kernel, ctx, hbm)
    dm = ctx.memory.chip(0).dm
    return out, np.array(dm.data), np.array(dm.written)


@pytest.mark.parametrize("op, constant, poison", [(FxpBinaryOp.AddFxp, 1, False), (FxpBinaryOp.MulInt, -3, False),
                                                  (ClipBinaryOpI32.Max, 0, False), (FxpBinaryOp.SubFxp, 7, True)])
def test_commit_of_a_deferred_op_writes_what_the_general_path_writes(op: object, constant: int,
                                                                      poison: bool, monkeypatch: pytest.MonkeyPatch,
                                                                      reference: Callable[..., None]) -> None:
    """The op computed into DM by the commit (``DeferredData``) leaves the DM image — bytes and written-mask —
    exactly as computing it and committing the values does; with poison in the stream the general path runs
    (poison leaves its bytes unwritten, L1071–1093)."""
    needs("commit.fused", "vector.deferred-ufunc", "vector.gather-view")
    calls = _spy_fused_commit(monkeypatch)
    x = rand_i32(RNG, 8192)
    out, data, written = _add_kernel(x, op, constant, poison)
    assert calls == [not poison]
    reference("vector.deferred-ufunc")
    calls.clear()
    out2, data2, written2 = _add_kernel(x, op, constant, poison)
    assert calls == []
    assert np.array_equal(written, written2)
    assert np.array_equal(data[written], data2[written2])
    if not poison:
        fn = op_fn(op)  # type: ignore[arg-type]
        assert np.array_equal(out.to_host(AxisSet(A=8192).m["A"], out.ctx.pdma).numpy(), fn(x, np.int32(constant)))
    del out2


def test_group_constants_that_compare_equal_but_differ_in_bits() -> None:
    """0.0 for group 0 and -0.0 for group 1 are different operands (-0.0 + -0.0 is -0.0, -0.0 + 0.0 is 0.0):
    the one-pass constant path tells them apart by their bits."""
    from visa.engines.vector import FpBinaryOp, GroupId

    fn = op_fn(FpBinaryOp.AddF)
    shape = (1, 1, 1, 2, 4)
    stream = np.full(shape, -0.0, np.float32)
    ids = np.zeros(shape, np.uint8)
    ids[..., 1, :] = 8  # group bit (bit 3) set at time step 1
    operands = [([Resolved(np.asarray(0.0, np.float32), True)], GroupId.Zero),
                ([Resolved(np.asarray(-0.0, np.float32), True)], GroupId.One)]
    got, _ = apply(fn, (0, 1), stream, known_everywhere(shape), operands, ids, 3)
    assert not np.signbit(got[..., 0, :]).any() and np.signbit(got[..., 1, :]).all()


def _mul_kernel(x: np.ndarray, w: np.ndarray):  # type: ignore[no-untyped-def]
    """``x[s, t, e] · w[e]`` (``MulInt``) with ``w`` in every slice's VRF, HBM to HBM; and the DM image after it."""
    from visa import HbmTensor, HostTensor, device, launch

    s_, t_, e_ = x.shape
    ax = AxisSet(S=s_, T=t_, E=e_)
    m = ax.m

    @device(chip=1)
    def kernel(ctx: Context, xh: HbmTensor, wh: HbmTensor) -> HbmTensor:  # type: ignore[type-arg]
        cluster, slice_ = m["S / 256"], m["S % 256"]
        x_dm = xh.to_dm(cluster, slice_, m["T, E"], ctx.tdma, 0)
        w_dm = wh.to_dm(cluster, slice_, m["E"], ctx.tdma, 1 << 16)
        w_vrf = (ctx.sub.begin(w_dm.view()).fetch(i32, m["E / 8"], m["E % 8"])
                 .collect(m["E / 8"], m["E % 8"]).to_vrf(m["E"], 0))
        out = (ctx.main.begin(x_dm.view()).fetch(i32, m["T, E / 8"], m["E % 8"]).collect(m["T, E / 8"], m["E % 8"])
               .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
               .vector_fxp(FxpBinaryOp.MulInt, w_vrf).vector_final().commit(m["T, E"], 1 << 17))
        return out.to_hbm(m["S, T, E"], ctx.tdma, 1 << 28)

    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, i32, m["S, T, E"]).to_hbm(m["1"], m["S, T, E"], ctx.pdma, 0)
    wh = HostTensor.from_numpy(w, i32, m["E"]).to_hbm(m["1"], m["E"], ctx.pdma, 1 << 27)
    out = launch(kernel, ctx, xh, wh).to_host(m["S, T, E"], ctx.pdma).numpy()
    dm = ctx.memory.chip(0).dm
    return out, np.array(dm.data), np.array(dm.written)


def test_commit_of_a_deferred_vrf_op_writes_what_the_general_path_writes(monkeypatch: pytest.MonkeyPatch,
                                                                        reference: Callable[..., None]) -> None:
    """An op over a VRF operand's strided view (split shape) computed into DM by the commit: the same DM image
    and the same result as the general path, exact against numpy."""
    needs("commit.fused", "vector.deferred-ufunc", "vector.gather-view")
    calls = _spy_fused_commit(monkeypatch)
    x, w = rand_i32(RNG, (512, 3, 16)), rand_i32(RNG, 16)
    out, data, written = _mul_kernel(x, w)
    assert calls == [True]
    assert np.array_equal(out, x * w)
    reference("vector.deferred-ufunc")
    out2, data2, written2 = _mul_kernel(x, w)
    assert np.array_equal(out2, out)
    assert np.array_equal(written, written2)
    assert np.array_equal(data[written], data2[written2])


def test_deferred_commit_on_two_chips(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two chips: each chip's values computed into its own DM (``DeferredData.into`` per chip), exact."""
    from visa import HostTensor, device, launch

    needs("commit.fused", "vector.deferred-ufunc", "vector.gather-view")
    calls = _spy_fused_commit(monkeypatch)
    n = 1 << 14
    m = AxisSet(A=n).m
    per = n // 1024

    @device(chip=2)
    def kernel(ctx, x):  # type: ignore[no-untyped-def]
        dm = x.to_dm(m[f"A % {n // 2} / {n // 4}"], m[f"A % {n // 4} / {per}"], m[f"A % {per}"], ctx.tdma, 0)
        out = (ctx.main.begin(dm.view()).fetch(i32, m[f"A % {per} / 8"], m["A % 8"])
               .collect(m[f"A % {per} / 8"], m["A % 8"]).vector_init()
               .vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, 5)
               .vector_final().commit(m[f"A % {per}"], 1 << 16))
        return out.to_hbm(m[f"A % {n // 2}"], ctx.tdma, 1 << 28)

    ctx = Context.acquire()
    x = rand_i32(RNG, n)
    xh = HostTensor.from_numpy(x, i32, m["A"]).to_hbm(m[f"A / {n // 2}"], m[f"A % {n // 2}"], ctx.pdma, 0)
    got = launch(kernel, ctx, xh).to_host(m["A"], ctx.pdma).numpy()
    assert calls == [True]
    assert np.array_equal(got, x + np.int32(5))


# ------------------------------------------------------------------------------------------ cast


def _cast_kernel(x: np.ndarray, poison: bool):  # type: ignore[no-untyped-def]
    """f32 from HBM, cast to bf16 (one flit of 16 lanes, 8 converted, L6780–6784), committed; the DM image after."""
    from visa import HbmTensor, HostTensor, bf16, device, f32, launch

    n = x.size
    m = AxisSet(A=n).m
    per = n // 512

    @device(chip=1)
    def kernel(ctx: Context, xh: HbmTensor) -> object:  # type: ignore[type-arg]
        dm = xh.to_dm(m[f"A / {n // 2}"], m[f"A % {n // 2} / {per}"], m[f"A % {per}"], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(f32, m[f"A % {per} / 8"], m["A % 8"])
             .collect(m[f"A % {per} / 8"], m["A % 8"]).cast(bf16, m["A % 8 # 16"]))
        if poison:
            s.data.known = np.array(s.data.known)  # a mask that is not a broadcast: the general path
            s.data.known[0, 0, 0, 0, 3] = False
        return s.commit(m[f"A % {per}"], 1 << 17)

    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, f32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    launch(kernel, ctx, xh)
    dm = ctx.memory.chip(0).dm
    return np.array(dm.data), np.array(dm.written)


@pytest.mark.parametrize("poison", [False, True])
def test_cast_lanes_commit_as_the_padded_stream(poison: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Cast Engine's output kept as its converted lanes (``PaddedLanes``) commits the bytes and written-mask
    the padded stream commits; its padded values are the converted lanes then zeros, the padding unknown."""
    from visa.engines.deferred import PaddedLanes

    from .helpers import rand_f32

    x = rand_f32(RNG, 8192)
    data, written = _cast_kernel(x, poison)
    with fastpaths.disabled("commit.cast-lanes"):  # the commit reads data.values
        data2, written2 = _cast_kernel(x, poison)
    assert np.array_equal(written, written2)
    assert np.array_equal(data[written], data2[written2])
    lanes = np.arange(24, dtype=np.float32).reshape(1, 3, 8)
    p = PaddedLanes(lanes, 16, np.broadcast_to(np.arange(16) < 8, (1, 3, 16)))
    assert np.array_equal(p.first(8), lanes) and np.shares_memory(p.first(8), lanes)
    assert np.array_equal(p.values[..., :8], lanes) and not p.values[..., 8:].any()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["AddFxpSat", "SubFxpSat"]), st.booleans(), st.integers(-(2**31), 2**31 - 1),
       st.integers(0, 2**32 - 1))
def test_saturating_ops_in_place_equal_the_int64_formula(name: str, constant_first: bool, c: int, seed: int) -> None:
    """The saturating add and subtract (L4827) computed in one int64 array in place: equal to clamping the exact
    int64 result, with the constant on either side (``Mode10``) and at the extremes."""
    from visa.engines.vector import arith

    from .helpers import I32_EXTREMES

    x = np.concatenate([I32_EXTREMES.astype(np.int32), rand_i32(np.random.default_rng(seed), 50)])
    k = np.asarray(c, np.int32)
    a, b = (k, x) if constant_first else (x, k)
    exact = a.astype(np.int64) + b.astype(np.int64) if name == "AddFxpSat" else a.astype(np.int64) - b.astype(np.int64)
    want = np.clip(exact, -(2**31), 2**31 - 1).astype(np.int32)
    assert np.array_equal(arith.fxp(name, a, b), want)
    if name == "AddFxpSat":
        assert np.array_equal(arith.clip_i32(name, a, b), want)


def _spy_fused_commit(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record what each call of the commit's fused path (``commit._execute_deferred``) returned: True where the
    op was computed straight into DM."""
    import visa.engines.commit as commit_engine

    calls: list[bool] = []
    real = commit_engine._execute_deferred

    def spy(*a: object) -> bool:
        calls.append(real(*a))  # type: ignore[arg-type]
        return calls[-1]

    monkeypatch.setattr(commit_engine, "_execute_deferred", spy)
    return calls
