"""The public kernels of :mod:`visa.kernels` at shapes and values other than the suite's own (issue 24's promise:
nothing a user does ends in a silent wrong number).

Each property draws small shapes — sizes 1 and 7, non-powers of two, a dimension not a multiple of the tile or
packet, lopsided (M = 1 with a wide N) — and values at the edges of the dtype (bf16's largest and subnormal
values, ±0, ±inf and NaN where the kernel claims float semantics; i32's ±2³¹ edges, i8's −128), then either

- the kernel runs, and its result equals numpy's: exactly for integer paths (i32 sums wrap, AddFxp L4826), within
  the derived bound of :mod:`visa.kernels.bounds` for float paths (the bound is a function of the dtype's unit
  roundoff ``u = 2⁻²⁴`` for f32, ``b = 2⁻⁸`` for bf16, and the reduction length ``n`` through
  ``γ_n = n·u/(1 − n·u)``: every rounding the kernel performs, never tuned); a special value (inf, NaN) must come
  out where float64 numpy over the same bf16 inputs puts one, and nowhere else; or
- the kernel refuses the shape with a :class:`~visa.errors.VisaError` whose diagnostic names the argument (an axis
  or a level with its mapping) and a fix — never a raw numpy or Python exception, never a silent wrong result.

Examples are few (a few seconds in all); ``VISA_HYPOTHESIS_RANDOM=1`` draws fresh ones.  The whole file runs with
``VISA_FASTPATHS=off`` as well (results must be identical with the fast paths on and off).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, HostTensor, bf16, device, f16, f32, i32, launch
from visa.errors import VisaError
from visa.kernels import Arena, Embedding, Gemm, Q4Dequant, Rows, all_reduce, bounds, cluster_all_reduce
from visa.kernels.collectives import rounds

F64 = npt.NDArray[np.float64]
# (no shrinking: each example is a launch; VISA_OTHER_SHAPES_EXAMPLES=50 explores further)
FEW = settings(max_examples=int(os.environ.get("VISA_OTHER_SHAPES_EXAMPLES", "6")), deadline=None,
               suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.reuse, Phase.generate])

BF16_MAX = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
BF16_TINY = 2.0**-133  # bf16's least subnormal
EDGE_BF16 = [0.0, -0.0, 1.0, -1.0, 0.5, -3.0, 2.0**-126, -(2.0**-126), BF16_TINY, 2.0**-130, 1e4, -1e4]


def _kept(ax: AxisSet, names: str) -> list[str]:
    """The axes of ``names`` of size > 1 (an axis of size 1 is no axis of a mapping)."""
    return [n for n in names.split() if ax.size(n) > 1]


def _mapping(ax: AxisSet, names: str) -> Any:
    kept = _kept(ax, names)
    return ax.m[", ".join(kept) if kept else "1"]


def to_host(ax: AxisSet, a: npt.ArrayLike, dtype: Any, names: str) -> HostTensor[Any, Any]:
    """``a`` (numpy dims ``names``) as a host tensor laid out ``m[names]``."""
    kept = _kept(ax, names)
    arr = np.asarray(a).reshape([ax.size(n) for n in kept])
    return HostTensor.from_numpy(arr, dtype, _mapping(ax, names), axes=kept)


def read(ax: AxisSet, t: Any, names: str) -> F64:
    """A device or host tensor's values as float64 (or int64), numpy dims ``names`` (sizes 1 restored)."""
    kept = _kept(ax, names)
    got = t.numpy(axes=kept) if isinstance(t, HostTensor) else t.logical(axes=kept)
    out: F64 = np.asarray(got).reshape([ax.size(n) for n in names.split()])
    return out


def bf16_values(draw: Any, shape: tuple[int, ...], edges: list[float], scale: float = 1.0) -> F64:
    """bf16-exact values of ``shape``: a random normal draw, with some entries replaced by ``edges``."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * scale
    if edges and a.size:
        picks = draw(st.lists(st.tuples(st.integers(0, a.size - 1), st.sampled_from(edges)), max_size=4))
        for i, v in picks:
            a.flat[i] = v
    return bounds.bf16_round(a)


def refused(err: VisaError) -> None:
    """A refusal is a visa diagnostic naming the argument (an axis, or a level and its mapping) and the fix."""
    assert err.fix, f"no fix in {err}"
    assert err.axis or (err.level and err.mapping), f"no argument named in {err}"
    _event(f"refused {err.code}")


def _event(text: str) -> None:
    """An outcome for ``--hypothesis-show-statistics`` (how many draws ran, how many each code refused)."""
    try:
        event(text)
    except Exception:  # noqa: BLE001  (outside a hypothesis test: nothing to record)
        pass


def run(build: Callable[..., Any], ctx: Context, *args: Any, chips: int = 1) -> Any:
    """Launch ``build(ctx, arena, *args)`` as a ``@device`` kernel on ``chips`` chips."""

    @device(chip=chips)
    def kernel(ctx: Context, *a: Any) -> Any:
        return build(ctx, Arena(), *a)

    out = launch(kernel, ctx, *args)
    _event("ran")
    return out


#: The least magnitude a rounding to bf16 (nearest even) takes to ±inf: halfway from its largest value to 2¹²⁸.
BF16_OVERFLOW = 2.0**127 * (2 - 2.0**-8)


def special_ok(got: F64, want: F64) -> F64:
    """Where ``want`` (float64 numpy, rounded to bf16: past :data:`BF16_OVERFLOW` it is ±inf) is NaN or ±inf,
    ``got`` is the same; the finite positions' mask returned."""
    want = np.where(np.abs(want) >= BF16_OVERFLOW, np.sign(want) * np.inf, want)
    nan, inf = np.isnan(want), np.isinf(want)
    assert np.array_equal(np.isnan(got), nan), ("NaN where numpy has none or none where it has one",
                                                np.argwhere(np.isnan(got) != nan)[:4].tolist())
    assert np.array_equal(got[inf], want[inf]), "±inf not where numpy has it"
    fin: F64 = ~(nan | inf)
    return fin


# ---------------------------------------------------------------------------------------------------- Gemm

# (mostly shapes the Gemm takes — tails of 7, 31, non-powers of two, K of 17 tiles of 32 — and some it refuses)
GEMM_M = st.sampled_from([1, 2, 7, 31, 32, 64, 96, 33])
GEMM_N = st.sampled_from([32, 96, 160, 288, 32, 40])
GEMM_K = st.sampled_from([32, 96, 160, 544, 576, 1024, 48])


def gemm_case(m: int, n: int, k: int, x: F64, w: F64, *, stream: bool | None = None, k_tile: int | None = None,
              special: bool = False, x_at: int = 0, dm_at: int = 0) -> bool:
    """``Gemm`` over ``x[M, K]`` and ``w[N, K]`` against ``x @ w.T`` (float64), or its refusal: whether it ran."""
    ax = AxisSet(M=m, N=n, K=k)
    try:
        gemm = Gemm(ax, k_tile=k_tile)
    except VisaError as err:
        refused(err)
        assert ((m > 32 and m % 32) or n % 32 or k % 32 or (k_tile is not None and (
            k_tile < 32 or k_tile > 1024 or k_tile % 32 or (k > k_tile and k % k_tile)))), err
        return False
    ctx = Context.acquire()
    try:  # (an address the PCIe DMA refuses — odd for bf16, L1071 — is a refusal too)
        xh = to_host(ax, x, bf16, "M K").to_hbm(ax.m["1"], _mapping(ax, "M K"), ctx.pdma, x_at)
        wh = to_host(ax, w, bf16, "N K").to_hbm(ax.m["1"], _mapping(ax, "N K"), ctx.pdma, 1 << 24)
        out = run(lambda c, a, xv, wv: gemm(c, Arena(dm=dm_at), xv.view().relabel(ax.m["M, K"]),
                                            wv.view().relabel(ax.m["N, K"]), stream=stream), ctx, xh, wh)
    except VisaError as err:
        refused(err)
        return False
    got = read(ax, out, "M N").astype(np.float64)
    with np.errstate(invalid="ignore"):  # (inf · 0 and inf − inf: NaN, as the device makes it)
        want = x @ w.T
        fin = special_ok(got, want) if special else np.ones(want.shape, bool)
        bad = np.abs(got - want) > bounds.gemm(x, w, gemm.k_tiles)
    assert not np.any(bad & fin), ("wrong", np.argwhere(bad & fin)[:4].tolist())
    return True


@pytest.mark.parametrize(("m", "n", "k", "k_tile", "stream"), [
    (7, 96, 544, None, None),  # K = 17 · 32: K tiles of 32
    (1, 288, 160, None, True),  # a GEMV over a narrow N, streamed
    (33, 32, 32, None, None), (48, 32, 64, None, None),  # M > 32 is refused unless a multiple of 32
    (64, 160, 576, None, True), (5, 64, 320, 64, True), (96, 32, 1024, None, False),
    (1, 8224, 32, None, None), (3, 8192 + 96, 64, None, None)])  # a ragged N: one whole N tile and a narrow one
def test_gemm_pinned_shapes(m: int, n: int, k: int, k_tile: int | None, stream: bool | None) -> None:
    rng = np.random.default_rng(m + n + k)
    x, w = bounds.bf16_round(rng.standard_normal((m, k))), bounds.bf16_round(rng.standard_normal((n, k)))
    assert gemm_case(m, n, k, x, w, stream=stream, k_tile=k_tile) == (m <= 32 or m % 32 == 0)


@FEW
@given(st.data(), GEMM_M, GEMM_N, GEMM_K, st.sampled_from([None, False, True]))
def test_gemm_other_shapes(data: Any, m: int, n: int, k: int, stream: bool | None) -> None:
    """Also at HBM addresses of x other than 0 (odd, 2: refused by the DMAs, L1071, L2424–2427; 4096 + 64 runs)
    and an arena whose DM starts elsewhere than 0."""
    x = bf16_values(data.draw, (m, k), EDGE_BF16)
    w = bf16_values(data.draw, (n, k), EDGE_BF16)
    gemm_case(m, n, k, x, w, stream=stream, x_at=data.draw(st.sampled_from([0, 0, 0, 4096 + 64, 2, 1])),
              dm_at=data.draw(st.sampled_from([0, 32, 40, 4096])))


@FEW
@given(st.data(), st.sampled_from([1, 3, 32]), st.sampled_from([32, 64]), st.sampled_from([32, 96, 1024]))
def test_gemm_special_values_propagate(data: Any, m: int, n: int, k: int) -> None:
    """inf and NaN inputs: the outputs float64 numpy makes inf or NaN are the same, the others within bound (the
    moderate values cannot overflow the f32 partials)."""
    edges = [np.inf, -np.inf, np.nan, 1e30, -1e30]
    x = bf16_values(data.draw, (m, k), edges)
    w = bf16_values(data.draw, (n, k), [np.inf, np.nan, 0.0])
    gemm_case(m, n, k, x, w, special=True)


@FEW
@given(st.data(), st.sampled_from([1, 5]), st.sampled_from([32, 64]), st.sampled_from([64, 256, 320]),
       st.sampled_from([32, 64, 96, 128, 160, 1024, 33, 16, 2048]))
def test_gemm_k_tile_choices(data: Any, m: int, n: int, k: int, k_tile: int) -> None:
    x = bf16_values(data.draw, (m, k), EDGE_BF16)
    w = bf16_values(data.draw, (n, k), EDGE_BF16)
    gemm_case(m, n, k, x, w, k_tile=k_tile)


# ---------------------------------------------------------------------------------------------------- Rows

ROWS_T = st.sampled_from([1, 2, 7, 33, 256, 3, 257])
ROWS_D = st.sampled_from([8, 24, 40, 136, 8, 7, 12])


def rows_case(t: int, d: int, op: str, inputs: list[F64], want_of: Callable[..., F64],
              bound_of: Callable[[F64], F64], special: bool = False, dtype: Any = bf16, **kw: Any) -> None:
    """``Rows.<op>`` over ``inputs`` (``[T, D]`` rows, or a ``[D]`` gain) held as ``dtype`` in HBM (bf16, f32 or
    f16: each pass fetches them as f32, L1960–1972) against ``want_of`` over the values as ``dtype`` holds them."""
    ax = AxisSet(T=t, D=d)
    try:
        rows = Rows(ax, "T", "D")
    except VisaError as err:
        refused(err)
        assert t > 256 or d % 8, err
        return
    ctx = Context.acquire()
    names = ["T D" if a.ndim == 2 else "D" for a in inputs]
    hosts = [to_host(ax, a, dtype, n) for a, n in zip(inputs, names, strict=True)]
    inputs = [read(ax, h, n).astype(np.float64) for h, n in zip(hosts, names, strict=True)]  # (as dtype holds them)
    hbm = [h.to_hbm(ax.m["1"], _mapping(ax, n), ctx.pdma, i << 24) for i, (h, n) in enumerate(zip(hosts, names,
                                                                                                   strict=True))]

    def build(c: Context, arena: Arena, *hs: Any) -> Any:
        dm = [rows.load(c, arena, h.view().relabel(ax.m["T, D"])) for h in hs[:2] if h.view().element.size == t * d]
        if op == "rms_norm":
            return rows.store(c, arena, rows.rms_norm(c, arena, dm[0], rows.load_broadcast(c, arena, hs[1]), **kw))
        if op == "rms_norm_streamed":  # the gain beside the row in DM (every row's slice), not in the VRF
            gain = hs[1].to_dm(rows.cluster, rows.slice, rows.element, c.tdma, arena.take_dm(2 * d))
            return rows.store(c, arena, rows.rms_norm_streamed(c, arena, dm[0], gain, **kw))
        fn = getattr(rows, op)
        return rows.store(c, arena, fn(c, arena, *dm, **kw))

    try:
        out = run(build, ctx, *hbm)
    except VisaError as err:
        refused(err)
        return
    got = read(ax, out, "T D").astype(np.float64)
    with np.errstate(all="ignore"):
        want = want_of(*inputs)
    with np.errstate(invalid="ignore"):
        fin = special_ok(got, want) if special else np.ones(want.shape, bool)
        bad = np.abs(got - want) > bound_of(want)
    assert not np.any(bad & fin), ("wrong", op, np.argwhere(bad & fin)[:4].tolist(),
                                   got[bad & fin][:4].tolist(), want[bad & fin][:4].tolist())


ROWS_DTYPE = st.sampled_from(["bf16", "bf16", "f32", "f16"])
DTYPES = {"bf16": bf16, "f32": f32, "f16": f16}


@FEW
@given(st.data(), ROWS_T, ROWS_D, st.sampled_from(["add", "mul"]), ROWS_DTYPE)
def test_rows_elementwise_other_shapes(data: Any, t: int, d: int, op: str, dtype: str) -> None:
    edges = EDGE_BF16 + [BF16_MAX, -BF16_MAX] if dtype != "f16" else EDGE_BF16  # (f16 has no 3·10³⁸)
    a, b = bf16_values(data.draw, (t, d), edges), bf16_values(data.draw, (t, d), edges)
    if dtype == "f32":  # values no bf16 holds: the f32 sum or product then rounds, within the same bound
        a = a + bf16_values(data.draw, (t, d), []) * 2.0**-12
    vt = DTYPES[dtype]
    if op == "add":
        rows_case(t, d, "add", [a, b], np.add, bounds.add, special=True, dtype=vt)
    else:
        rows_case(t, d, "mul", [a, b], np.multiply, bounds.mul, special=True, dtype=vt)


@FEW
@given(st.data(), ROWS_T, ROWS_D)
def test_rows_special_values(data: Any, t: int, d: int) -> None:
    """±inf and NaN through the f32 add and multiply: where float64 numpy has them (inf − inf, 0 · inf), and only
    there (bf16 has inf and NaN, and the Vector Engine's float ops are IEEE: L4889–4897)."""
    edges = [np.inf, -np.inf, np.nan, 0.0]
    a, b = bf16_values(data.draw, (t, d), edges), bf16_values(data.draw, (t, d), edges)
    rows_case(t, d, "add", [a, b], np.add, bounds.add, special=True)
    rows_case(t, d, "mul", [a, b], np.multiply, bounds.mul, special=True)


@FEW
@given(st.data(), ROWS_T, ROWS_D, ROWS_DTYPE, st.sampled_from(["rms_norm", "rms_norm_streamed"]))
def test_rms_norm_other_shapes(data: Any, t: int, d: int, dtype: str, op: str) -> None:
    eps = 1e-5
    x = bf16_values(data.draw, (t, d), EDGE_BF16)
    g = bf16_values(data.draw, (d,), EDGE_BF16)

    def want(xv: F64, gv: F64) -> F64:
        out: F64 = xv / np.sqrt((xv**2).mean(axis=-1, keepdims=True) + eps) * gv
        return out

    if op == "rms_norm_streamed" and dtype != "bf16":  # (the streamed gain is fetched interleaved with x: one dtype)
        dtype = "bf16"
    rows_case(t, d, op, [x, g], want, lambda w: bounds.rms_norm(w, d), eps=eps, dtype=DTYPES[dtype])


@FEW
@given(st.data(), ROWS_T, ROWS_D, st.sampled_from([1.0, 0.125, 3.0, 0.3]))
def test_softmax_other_shapes(data: Any, t: int, d: int, scale: float) -> None:
    x = bf16_values(data.draw, (t, d), [0.0, -0.0, 30.0, -30.0, BF16_TINY, -np.inf], scale=4.0)
    # a row of −inf has no softmax (the docstring's refusal-free precondition): keep one finite entry a row
    x[:, 0] = np.where(np.isinf(x[:, 0]), 0.0, x[:, 0])
    z = scale * x
    spread = float(np.max(np.where(np.isinf(z), 0.0, z.max(axis=-1, keepdims=True) - z))) if z.size else 0.0

    def want(xv: F64) -> F64:
        zz = scale * xv
        e = np.exp(zz - zz.max(axis=-1, keepdims=True))
        out: F64 = e / e.sum(axis=-1, keepdims=True)
        return out

    # a scale that is no power of two rounds z = scale·x in f32 (0.3 · 4032: a review's failing row)
    exact = float(np.float32(scale)) == scale and math.frexp(scale)[0] == 0.5
    peak = 0.0 if exact or not z.size else float(np.max(np.abs(np.where(np.isinf(z), 0.0, z))))
    rows_case(t, d, "softmax", [x], want, lambda w: bounds.softmax(w, d, spread, peak), special=True,
              scale=scale)


def test_softmax_with_an_inexact_scale_is_within_the_bound() -> None:
    """``scale=0.3`` over a row near 4032: the f32 scaling's rounding is in the bound (a review's failing row)."""
    x = np.array([[4032, 4032, 4032, 4032, 4032, 4048, 4032, 3984]], dtype=np.float64)
    z = 0.3 * x
    spread, peak = float((z.max() - z).max()), float(np.abs(z).max())
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    rows_case(1, 8, "softmax", [x], lambda xv: want, lambda w: bounds.softmax(w, 8, spread, peak), scale=0.3)


@FEW
@given(st.data(), ROWS_T, ROWS_D)
def test_swiglu_other_shapes(data: Any, t: int, d: int) -> None:
    g = bf16_values(data.draw, (t, d), EDGE_BF16 + [-80.0, 80.0], scale=3.0)
    u = bf16_values(data.draw, (t, d), EDGE_BF16)

    def want(gv: F64, uv: F64) -> F64:
        out: F64 = gv / (1 + np.exp(-gv)) * uv
        return out

    rows_case(t, d, "swiglu", [g, u], want, bounds.swiglu)


# ---------------------------------------------------------------------------------------------- collectives

I32_EDGES = [-(2**31), 2**31 - 1, -1, 0, 1, -(2**30)]


@FEW
@given(st.data(), st.sampled_from([1, 2, 3, 4]), st.sampled_from(["butterfly", "ring"]),
       st.sampled_from([1, 7, 8, 12, 40]), st.sampled_from([1, 3]), st.sampled_from(["i32", "f32", "bf16"]))
def test_all_reduce_other_shapes(data: Any, n: int, algorithm: str, d: int, s: int, dtype: str) -> None:
    """i32 exact (wrapping at ±2³¹, AddFxp L4826), floats within :func:`visa.kernels.bounds.all_reduce`, on chip
    counts 1–4 and elements that are not one flit."""
    ax = AxisSet(C=n, S=s, D=d)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if dtype == "i32":
        x: Any = rng.integers(-(2**31), 2**31, size=(n, s, d)).astype(np.int32)
        for _ in range(3):
            x.flat[data.draw(st.integers(0, x.size - 1))] = data.draw(st.sampled_from(I32_EDGES))
    else:
        x = bf16_values(data.draw, (n, s, d), EDGE_BF16)
    vt = {"i32": i32, "f32": f32, "bf16": bf16}[dtype]
    ctx = Context.acquire()
    xh = to_host(ax, x, vt, "C S D").to_hbm(_mapping(ax, "C"), _mapping(ax, "S D"), ctx.pdma, 0)

    def build(c: Context, arena: Arena, h: Any) -> Any:
        xd = h.to_dm(ax.m["1 # 2"], ax.m["S # 256"] if s > 1 else ax.m["1 # 256"], _mapping(ax, "D"), c.tdma,
                     arena.take_dm(4 * d))
        return all_reduce(c, ax, arena, xd, algorithm=algorithm)

    try:
        out = run(build, ctx, xh, chips=n)
    except VisaError as err:
        refused(err)
        return
    assert not (algorithm == "butterfly" and n & (n - 1)), f"a butterfly over {n} chips not refused"
    assert not (algorithm == "ring" and dtype == "bf16" and n > 1), "a bf16 ring not refused"
    got = read(ax, out, "C S D")
    if dtype == "i32":
        want = x.astype(np.int64).sum(axis=0).astype(np.int32)
        assert np.array_equal(got, np.broadcast_to(want, got.shape)), "i32 AllReduce not exact"
        return
    depth = rounds(n, algorithm)
    want, bound = bounds.all_reduce(x.astype(np.float64), depth, cast=dtype == "bf16")
    assert np.all(np.abs(got.astype(np.float64) - want) <= bound), "float AllReduce out of bound"


@FEW
@given(st.data(), st.sampled_from([1, 7, 8, 12, 40]), st.sampled_from([1, 5]))
def test_cluster_all_reduce_i32_edges(data: Any, d: int, s: int) -> None:
    ax = AxisSet(H=2, S=s, D=d)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(-(2**31), 2**31, size=(2, s, d)).astype(np.int32)
    for _ in range(3):
        x.flat[data.draw(st.integers(0, x.size - 1))] = data.draw(st.sampled_from(I32_EDGES))
    ctx = Context.acquire()
    xh = to_host(ax, x, i32, "H S D").to_hbm(ax.m["1"], _mapping(ax, "H S D"), ctx.pdma, 0)

    def build(c: Context, arena: Arena, h: Any) -> Any:
        xd = h.to_dm(ax.m["H"], ax.m["S # 256"] if s > 1 else ax.m["1 # 256"], _mapping(ax, "D"), c.tdma,
                     arena.take_dm(4 * d))
        return cluster_all_reduce(c, ax, arena, xd)

    try:
        out = run(build, ctx, xh)
    except VisaError as err:
        refused(err)
        return
    want = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(read(ax, out, "H S D"), np.broadcast_to(want, (2, s, d)))


# -------------------------------------------------------------------------------------------- Embedding


@FEW
@given(st.data(), st.sampled_from([1, 3, 7, 40]), st.sampled_from([1, 5, 8, 24]), st.sampled_from([1, 2, 9, 256, 257]),
       st.sampled_from(["bf16", "f32", "i32"]), st.booleans())
def test_embedding_other_shapes(data: Any, v: int, d: int, t: int, dtype: str, to_dm: bool) -> None:
    """``table[ids]`` exact for every dtype (a gather moves bytes), into HBM or into DM one token a slice; an id
    outside ``0 … V − 1`` (−1, V) is refused, naming it."""
    ax = AxisSet(V=v, D=d, T=t)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    vt = {"i32": i32, "f32": f32, "bf16": bf16}[dtype]
    table: Any = (rng.integers(-(2**31), 2**31, size=(v, d)).astype(np.int32) if dtype == "i32" else
                  bounds.bf16_round(rng.standard_normal((v, d))))
    ids = np.array(data.draw(st.lists(st.integers(0, v - 1), min_size=t, max_size=t)), np.int32)
    if data.draw(st.sampled_from([False, False, True])):  # one id out of range: −1 or V
        ids[data.draw(st.integers(0, t - 1))] = data.draw(st.sampled_from([-1, v]))
    ctx = Context.acquire()
    th = to_host(ax, table, vt, "V D").to_hbm(ax.m["1"], _mapping(ax, "V D"), ctx.pdma, 0)
    ih = to_host(ax, ids, i32, "T").to_hbm(ax.m["1"], _mapping(ax, "T"), ctx.pdma, 1 << 20)
    emb = Embedding(ax, "V", "D", rows="T")
    try:
        out = run(lambda c, a, tv, iv: emb(c, a, tv, iv) if to_dm else emb.to_hbm(c, a, tv, iv), ctx, th, ih)
    except VisaError as err:
        refused(err)
        return
    assert np.all((ids >= 0) & (ids < v)), f"ids {ids.tolist()} out of 0…{v - 1} not refused"
    assert t <= 256 or not to_dm, "more tokens than slices not refused"
    assert np.array_equal(read(ax, out, "T D"), table[ids].reshape(t, d))


# ---------------------------------------------------------------------------------------------- Q4Dequant


@FEW
@given(st.data(), st.sampled_from([32, 64, 32, 40]), st.sampled_from([32, 96, 576, 256, 1024, 48]),
       st.sampled_from([None, 96, 128]))
def test_q4_dequant_other_shapes(data: Any, n: int, k: int, k_tile: int | None) -> None:
    """The device dequantisation bit for bit ``bf16(f32(d)·q + f32(m))`` at every nibble 0…15 and f16 scales
    including ±0, subnormal and the largest, or a refusal."""
    from visa.models.loader import Q4Weight

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    f16_edges = [0.0, -0.0, 6.0e-8, 65504.0, -65504.0, 1.0, -2.5]
    try:
        ax = AxisSet(M=1, N=n, K=k)
        gemm = Gemm(ax, k_tile=k_tile)
        deq = Q4Dequant(gemm)
    except VisaError as err:
        refused(err)
        assert n % 32 or k % 32 or (k_tile is not None and k > k_tile and k % k_tile) or (
            gemm.k_tiles > 1 and gemm.k_tile % 128), err
        return
    blocks = k // 32
    q = rng.integers(0, 16, size=(n, k)).astype(np.int8)
    d = rng.choice(f16_edges + list(rng.standard_normal(8)), size=(n, blocks)).astype(np.float16)
    mn = rng.choice(f16_edges + list(rng.standard_normal(8)), size=(n, blocks)).astype(np.float16)
    w = Q4Weight(q, d, mn)
    ctx = Context.acquire()
    q_hbm, s_hbm = deq.upload(ctx, w, 0, 1 << 20)
    got: dict[str, Any] = {}

    def build(c: Context, arena: Arena, qh: Any, sh: Any) -> Any:
        got["w"] = deq(c, arena, qh, sh)
        return got["w"]

    try:
        run(build, ctx, q_hbm, s_hbm)
    except VisaError as err:
        refused(err)
        return
    with np.errstate(all="ignore"):
        ref = w.dequantize().astype(ml_dtypes.bfloat16)
    bits = np.asarray(got["w"].logical("N K")).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(bits, ref.view(np.uint16))


# ------------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("m", "n", "k", "k_tile"), [(0, 32, 32, None), (33, 32, 32, None), (1, 33, 32, None),
                                                      (1, 32, 33, None), (1, 32, 1056, 512), (1, 32, 64, 48),
                                                      (1, 32, 64, 0), (1, 32, 64, -32)])
def test_gemm_refusals_are_diagnostics(m: int, n: int, k: int, k_tile: int | None) -> None:
    """Every shape the Gemm cannot hold is a :class:`VisaError` naming the axis and the fix."""
    try:
        ax = AxisSet(M=m, N=n, K=k)
        Gemm(ax, k_tile=k_tile)
    except VisaError as err:
        refused(err) if err.fix else None
        return
    pytest.fail("not refused")


@pytest.mark.parametrize(("t", "d"), [(257, 8), (4, 7), (4, 0)])
def test_rows_refusals_are_diagnostics(t: int, d: int) -> None:
    with pytest.raises(VisaError):
        Rows(AxisSet(T=t, D=d), "T", "D")


def test_pair_add_of_an_element_past_one_flit_and_not_whole_flits_is_refused_naming_the_padding() -> None:
    """Regression (h40k): ``cluster_all_reduce`` (and ``all_reduce``) of an Element of 12 i32 raised the kernel's
    own mapping error (``m["[D] % 8"]``: "Modulo size must divide…") instead of naming x's Element: the pairwise
    add fetches 8 lanes a 32-byte flit (manual L3543–3544), so an Element past 8 must be whole flits; the fix it
    names (``m["D # 16"]``) runs and sums exactly."""
    ax = AxisSet(H=2, S=3, D=12)
    m = ax.m
    x = np.arange(72, dtype=np.int32).reshape(2, 3, 12) - 36
    for element, size in (("D", 12), ("D # 16", 16)):
        ctx = Context.acquire()
        xh = to_host(ax, x, i32, "H S D").to_hbm(m["1"], m["H, S, D"], ctx.pdma, 0)

        def build(c: Context, arena: Arena, h: Any, element: str = element, size: int = size) -> Any:
            xd = h.to_dm(m["H"], m["S # 256"], m[element], c.tdma, arena.take_dm(4 * size))
            return cluster_all_reduce(c, ax, arena, xd)

        if element == "D":
            with pytest.raises(VisaError) as err:
                run(build, ctx, xh)
            refused(err.value)
            assert err.value.axis == "D" and 'm["D # 16"]' in str(err.value.fix)
        else:
            assert np.array_equal(read(ax, run(build, ctx, xh), "H S D"), np.broadcast_to(x.sum(axis=0), (2, 3, 12)))


def test_gather_from_a_one_row_table_is_refused_naming_the_axis() -> None:
    """Regression (h40k): an Embedding over a vocabulary of 1 was refused with "must be whole axes … got m["V"]"
    (m["V"] looked whole: an axis of size 1 is no axis of a mapping) and named no axis; now the message says so
    and names V (IndirectLoop over the table's axis, L1684–1688)."""
    ax = AxisSet(V=1, D=8, T=2)
    ctx = Context.acquire()
    th = to_host(ax, np.ones((1, 8)), bf16, "V D").to_hbm(ax.m["1"], _mapping(ax, "V D"), ctx.pdma, 0)
    ih = to_host(ax, np.zeros(2, np.int32), i32, "T").to_hbm(ax.m["1"], _mapping(ax, "T"), ctx.pdma, 1 << 20)
    emb = Embedding(ax, "V", "D", rows="T")
    with pytest.raises(VisaError, match="size 1") as err:
        run(lambda c, a, tv, iv: emb.to_hbm(c, a, tv, iv), ctx, th, ih)
    refused(err.value)
    assert err.value.axis == "V"


# --------------------------------------------------------------------------------------------- i8 GEMM


@FEW
@given(st.data(), st.sampled_from([512, 1024, 0, 1000]), st.sampled_from([8, 16, 0, 12, -8]),
       st.sampled_from(["rand", "min", "max"]))
def test_i8_gemm_other_sizes_exact(data: Any, n: int, rows: int, fill: str) -> None:
    """``i8_gemm_kernels(n, rows)`` exact (i32 sums, AddSat never saturating: |C| ≤ 2¹⁴·n) at i8's −128 and 127,
    on the first row block; sizes it cannot tile (rows 0 or negative, n not a multiple) refused, naming I or K."""
    from visa import HbmTensor, i8
    from visa.kernels.gemm_i8 import i8_gemm_kernels

    try:
        kern = i8_gemm_kernels(n, rows)
    except VisaError as err:
        refused(err)
        assert rows < 8 or rows % 8 or n < 512 or n % 512 or n % (8 * rows), err
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(-128, 128, size=(kern.tile_i, n), dtype=np.int8)
    y = rng.integers(-128, 128, size=(n, kern.tile_j), dtype=np.int8)
    if fill != "rand":
        x[:] = -128
        y[:] = -128 if fill == "min" else 127
    full = AxisSet(I=kern.tile_i, J=kern.tile_j, K=n)
    ctx = Context.acquire()
    HostTensor.from_numpy(x, i8, full.m["I, K"]).to_hbm(full.m["1"], full.m["I, K"], ctx.pdma, 0)
    HostTensor.from_numpy(y, i8, full.m["J, K"], axes="K J").to_hbm(full.m["1"], full.m["J, K"], ctx.pdma, 1 << 22)
    m = kern.ax.m
    a_dm = launch(kern.a_to_dm, ctx, HbmTensor.from_addr(ctx, i8, m["1"], kern.a_layout, 0))
    b = HbmTensor.from_addr(ctx, i8, m["1"], kern.b_layout, 1 << 22)
    got = launch(kern.tile, ctx, a_dm, b, 1 << 23).logical(axes="I J")
    assert np.array_equal(got, x.astype(np.int64) @ y.astype(np.int64))


def test_i8_gemm_of_zero_rows_is_refused_not_a_zero_division() -> None:
    """Regression (h40k): ``i8_gemm_kernels(512, 0)`` raised ZeroDivisionError (``n % (8 · rows)``); rows of A per
    slice must be a positive multiple of 8 (the Time of the contraction, accumulating 8 Rows, L4434)."""
    from visa.kernels.gemm_i8 import i8_gemm_kernels

    for rows in (0, -8):
        with pytest.raises(VisaError, match="positive multiple of 8") as err:
            i8_gemm_kernels(512, rows)
        refused(err.value)
        assert err.value.axis == "I"


# --------------------------------------------------------------------------------- KV cache, masked softmax


@FEW
@given(st.data(), st.sampled_from([1, 2, 8, 40]), st.sampled_from([8, 16, 24]),
       st.sampled_from([-1, 0, 1, 7, 39, 40, 41]))
def test_kv_cache_append_any_position(data: Any, s: int, dk: int, position: int) -> None:
    """``KvCache.append`` writes row ``position`` of K and column ``position`` of Vᵀ and nothing else, bit for
    bit; a position outside ``0 … S − 1`` is refused (never a write elsewhere)."""
    from visa.kernels import KvCache

    ax = AxisSet(S=s, Dk=dk, Dv=dk, T=1)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    k0, v0 = bounds.bf16_round(rng.standard_normal((s, dk))), bounds.bf16_round(rng.standard_normal((dk, s)))
    kr, vr = bounds.bf16_round(rng.standard_normal(dk)), bounds.bf16_round(rng.standard_normal(dk))
    ctx = Context.acquire()
    kh = to_host(ax, k0, bf16, "S Dk").to_hbm(ax.m["1"], _mapping(ax, "S Dk"), ctx.pdma, 0)
    vh = to_host(ax, v0, bf16, "Dv S").to_hbm(ax.m["1"], _mapping(ax, "Dv S"), ctx.pdma, 1 << 20)
    krh = to_host(ax, kr, bf16, "Dk").to_hbm(ax.m["1"], _mapping(ax, "Dk"), ctx.pdma, 2 << 20)
    vrh = to_host(ax, vr, bf16, "Dv").to_hbm(ax.m["1"], _mapping(ax, "Dv"), ctx.pdma, 3 << 20)
    got: dict[str, Any] = {}

    def build(c: Context, arena: Arena, k: Any, v: Any, kn: Any, vn: Any) -> Any:
        got["k"], got["v"] = KvCache(ax, k, v, "S", "Dk", "Dv").append(c, kn, vn, position)
        return got["k"]

    try:
        run(build, ctx, kh, vh, krh, vrh)
    except VisaError as err:
        refused(err)
        return
    assert 0 <= position < s, f"position {position} of a cache of {s} not refused"
    k1, v1 = k0.copy(), v0.copy()
    k1[position], v1[:, position] = kr, vr
    assert np.array_equal(read(ax, got["k"], "S Dk"), k1)
    assert np.array_equal(read(ax, got["v"], "Dv S"), v1)


@FEW
@given(st.data(), st.sampled_from([1, 3, 8, 33]), st.sampled_from([8, 24, 40]))
def test_softmax_with_a_causal_branch_log(data: Any, t: int, d: int) -> None:
    """``Rows.softmax`` with a :class:`~visa.kernels.CausalMask` prefill log: position j > i has probability
    exactly 0, the others within :func:`visa.kernels.bounds.softmax` of the softmax over j ≤ i (L8090–8100)."""
    from visa.kernels import CausalMask

    ax = AxisSet(T=t, S=d, P=max(t, 2))
    x = bf16_values(data.draw, (t, d), [0.0, 20.0, -20.0], scale=3.0)
    table = CausalMask.table(t, d)
    mask = CausalMask(ax, "T", "S", "P")
    ctx = Context.acquire()
    xh = to_host(ax, x, bf16, "T S").to_hbm(ax.m["1"], _mapping(ax, "T S"), ctx.pdma, 0)
    th = to_host(ax, table, i32, "T S").to_hbm(ax.m["1"], _mapping(ax, "T S"), ctx.pdma, 1 << 20)

    def build(c: Context, arena: Arena, xv: Any, tv: Any) -> Any:
        rows = mask.rows
        log = mask.prefill_log(c, arena, tv)
        return rows.store(c, arena, rows.softmax(c, arena, rows.load(c, arena, xv), log=log))

    try:
        out = run(build, ctx, xh, th)
    except VisaError as err:
        refused(err)
        return
    got = read(ax, out, "T S").astype(np.float64)
    keep = table == 0
    z = np.where(keep, x, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    spread = float(np.max(np.where(keep, z.max(axis=-1, keepdims=True) - z, 0.0)))
    assert np.all(got[~keep] == 0.0)
    assert np.all(np.abs(got - want) <= bounds.softmax(want, d, spread))


@pytest.mark.parametrize(("k", "k_tile", "runs"), [(32, None, True), (96, None, True), (256, 128, True),
                                                    (576, None, False), (576, 576, True)])
def test_q4_dequant_of_a_k_shorter_than_the_tile(k: int, k_tile: int | None, runs: bool) -> None:
    """Regression (h40k): ``Q4Dequant`` of a Gemm whose K is shorter than its k_tile (K = 32 or 96: the Gemm's one
    K tile is the whole K) took the k_tile (512) as the tile and raised its own relabel error (V3135, "a
    relabelling keeps the size"); now it dequantises bit for bit and the Gemm over it is within
    :func:`visa.kernels.bounds.gemm`.  K tiles of 9 blocks (K = 576 by 288) are refused naming K and the k_tile
    (the scales' 8-byte DMA packets, L2424–2427)."""
    from visa.models.loader import Q4Weight

    n = 32
    ax = AxisSet(M=1, N=n, K=k)
    gemm = Gemm(ax, k_tile=k_tile)
    if not runs:
        with pytest.raises(VisaError, match="8-byte DMA packets") as err:
            Q4Dequant(gemm)
        refused(err.value)
        assert err.value.axis == "K"
        return
    deq = Q4Dequant(gemm)
    rng = np.random.default_rng(k)
    w = Q4Weight(rng.integers(0, 16, (n, k)).astype(np.int8), rng.standard_normal((n, k // 32)).astype(np.float16),
                 rng.standard_normal((n, k // 32)).astype(np.float16))
    xs = bounds.bf16_round(rng.standard_normal(k))
    ctx = Context.acquire()
    q_hbm, s_hbm = deq.upload(ctx, w, 0, 1 << 20)
    xh = to_host(ax, xs, bf16, "K").to_hbm(ax.m["1"], ax.m["K"], ctx.pdma, 2 << 20)
    got: dict[str, Any] = {}

    def build(c: Context, arena: Arena, qh: Any, sh: Any, xv: Any) -> Any:
        got["w"] = deq(c, arena, qh, sh)
        return gemm(c, arena, xv.view().relabel(ax.m["M, K"]), got["w"], double_buffer=False)

    out = run(build, ctx, q_hbm, s_hbm, xh)
    ref = w.dequantize().astype(ml_dtypes.bfloat16)
    assert np.array_equal(np.asarray(got["w"].logical("N K")).astype(ml_dtypes.bfloat16).view(np.uint16),
                          ref.view(np.uint16))
    wv = ref.astype(np.float64)
    y = read(ax, out, "M N").astype(np.float64)
    assert np.all(np.abs(y - xs[None, :] @ wv.T) <= bounds.gemm(xs[None, :], wv, gemm.k_tiles))


@pytest.mark.parametrize("which", ["x", "w"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "i8", "i32"])
def test_gemm_of_a_dtype_other_than_bf16_is_refused_naming_it(which: str, dtype: str) -> None:
    """Regression (h40k): an f32 x was moved into a DM buffer sized for bf16 and the GEMM then refused with "was
    overwritten by hbm.to_dm" (V5014), naming neither x nor its dtype; f16 and integer x were refused by the
    fetch's cast (L1962–1979) naming the kernel's inner packet.  Now each is refused at the call, naming the
    operand, its dtype and the fix (the GEMM contracts bf16, L7090–7150)."""
    from visa import i8

    vt = {"f32": f32, "f16": f16, "i8": i8, "i32": i32}[dtype]
    ax = AxisSet(M=4, N=32, K=64)
    gemm = Gemm(ax)
    ctx = Context.acquire()
    ones = {"x": np.ones((4, 64), np.int64), "w": np.ones((32, 64), np.int64)}
    xh = to_host(ax, ones["x"], vt if which == "x" else bf16, "M K").to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0)
    wh = to_host(ax, ones["w"], vt if which == "w" else bf16, "N K").to_hbm(ax.m["1"], ax.m["N, K"], ctx.pdma,
                                                                            1 << 24)
    with pytest.raises(VisaError, match=f"{which} is {dtype}") as err:
        run(lambda c, a, x, w: gemm(c, a, x, w), ctx, xh, wh)
    refused(err.value)


def test_rms_norm_of_a_row_whose_sum_of_squares_overflows_f32_is_the_f32_result() -> None:
    """A row holding bf16's 3·10³⁸: Σx² overflows f32 (the Vector Engine's float adds are f32, L4889–4897) and the
    row comes out zeros (rstd = 1/√inf = 0) — numpy's RMSNorm in float32 gives the same; float64's does not (the
    documented f32 semantics of :meth:`visa.kernels.Rows.rms_norm`, found by this file's draws)."""
    t, d, eps = 2, 16, 1e-5
    rng = np.random.default_rng(4)
    x = bounds.bf16_round(rng.standard_normal((t, d)))
    x[1, 3] = bounds.bf16_round(3.0e38)
    g = bounds.bf16_round(rng.standard_normal(d))

    def f32_rms(xv: F64, gv: F64) -> F64:
        with np.errstate(over="ignore"):
            x32 = xv.astype(np.float32)
            r = np.float32(1) / np.sqrt((x32 * x32).sum(axis=-1, keepdims=True) / np.float32(d) + np.float32(eps))
            out: F64 = (x32 * r * gv.astype(np.float32)).astype(np.float64)
        return out

    assert np.all(f32_rms(x, g)[1] == 0.0)
    rows_case(t, d, "rms_norm", [x, g], f32_rms, lambda w: bounds.rms_norm(w, d), eps=eps)


# ------------------------------------------------------------------------------- Attention, MoE token rows


@FEW
@given(st.data(), st.sampled_from([1, 3, 7, 32, 64, 33]), st.sampled_from([32, 64, 96, 40]),
       st.sampled_from([32, 64]), st.sampled_from([32, 96]))
def test_attention_other_shapes(data: Any, q: int, s: int, dk: int, dv: int) -> None:
    """``Attention`` within :func:`visa.kernels.bounds.attention` (the two GEMMs' and the softmax's roundings, the
    scores' error carried through the exponential) at Q of 1, 3, 7 and S not a power of two, or a refusal."""
    from visa.kernels import Attention

    ax = AxisSet(Q=q, S=s, Dk=dk, Dv=dv)
    qv, kv = bf16_values(data.draw, (q, dk), EDGE_BF16), bf16_values(data.draw, (s, dk), EDGE_BF16)
    vv = bf16_values(data.draw, (s, dv), EDGE_BF16)
    try:
        att = Attention(ax)
    except VisaError as err:
        refused(err)
        assert (q > 32 and q % 32) or s % 32, err
        return
    ctx = Context.acquire()
    qh = to_host(ax, qv, bf16, "Q Dk").to_hbm(ax.m["1"], _mapping(ax, "Q Dk"), ctx.pdma, 0)
    kh = to_host(ax, kv, bf16, "S Dk").to_hbm(ax.m["1"], _mapping(ax, "S Dk"), ctx.pdma, 1 << 22)
    vh = to_host(ax, vv.T, bf16, "Dv S").to_hbm(ax.m["1"], _mapping(ax, "Dv S"), ctx.pdma, 1 << 23)
    try:
        out = run(lambda c, a, x, y, z: att(c, a, x.view().relabel(ax.m["Q, Dk"]), y, z), ctx, qh, kh, vh)
    except VisaError as err:
        refused(err)
        return
    want, bound = bounds.attention(qv, kv, vv, att.scale)
    assert np.all(np.abs(read(ax, out, "Q Dv").astype(np.float64) - want) <= bound)


@FEW
@given(st.data(), st.sampled_from([1, 2, 7, 256, 257]), st.sampled_from([2, 4, 3]), st.sampled_from([8, 12, 24, 1]))
def test_moe_token_rows_other_shapes(data: Any, t: int, k: int, d: int) -> None:
    """``TokenRows.softmax`` over K (f32, one token a slice) within :func:`visa.kernels.bounds.softmax_rel` with a
    −inf score (an unselected expert), and ``weighted_sum`` within :func:`visa.kernels.bounds.weighted_sum`."""
    from visa.kernels.moe import TokenRows

    ax = AxisSet(T=t, K=k, D=d)
    m = ax.m
    try:
        rows = TokenRows(ax)
    except VisaError as err:
        refused(err)
        assert t > 256 or k not in (2, 4), err
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    s = (rng.standard_normal((t, k)) * 4).astype(np.float32).astype(np.float64)
    if t > 1:
        s[0, 0] = -np.inf
    y = bounds.bf16_round(rng.standard_normal((t, k, d)))
    ctx = Context.acquire()
    sh = to_host(ax, s, f32, "T K").to_hbm(m["1"], _mapping(ax, "T K"), ctx.pdma, 0)
    yh = to_host(ax, y, bf16, "T K D").to_hbm(m["1"], _mapping(ax, "T K D"), ctx.pdma, 1 << 20)
    got: dict[str, Any] = {}

    def build(c: Context, arena: Arena, sv: Any, yv: Any) -> Any:
        got["w"] = w = rows.softmax(c, arena, rows.spread(c, arena, sv.view().relabel(m["T, K"])))
        y_dm = yv.view().relabel(m["T, K, D"]).to_dm(rows.cluster, rows.slice, m["K, D"], c.tdma,
                                                     arena.take_dm(2 * k * d))
        return rows.weighted_sum(c, arena, y_dm, rows.to_vrf(c, arena, w))

    try:
        out = run(build, ctx, sh, yh)
    except VisaError as err:
        refused(err)
        return
    got_w = read(ax, got["w"], "T K").astype(np.float64)
    with np.errstate(invalid="ignore"):
        want_w = np.exp(s - s.max(axis=1, keepdims=True))
    want_w /= want_w.sum(axis=1, keepdims=True)
    spread = float(np.max(np.where(np.isfinite(s), s.max(axis=1, keepdims=True) - s, 0.0)))
    assert np.all(np.abs(got_w - want_w) <= bounds.softmax_rel(k, spread) * want_w + 2.0**-149)
    want = np.einsum("tkd,tk->td", y, got_w)
    assert np.all(np.abs(read(ax, out, "T D").astype(np.float64) - want) <= bounds.weighted_sum(y, got_w))


def test_attention_bound_of_scores_too_large_for_e_to_the_error_is_inf_not_an_overflow_error() -> None:
    """Regression (h40k): :func:`visa.kernels.bounds.attention` raised OverflowError (``math.exp(2δ)``) for
    scores of 10⁸ (q and k entries of −10⁴); the bound is then +inf (no bound), never a raw exception."""
    q, k = np.full((1, 64), -1e4), np.full((96, 64), -1e4)
    v = np.zeros((96, 32))
    want, bound = bounds.attention(q, k, v, 0.125)
    assert np.all(want == 0.0) and np.all(bound == np.inf)
