"""``visa.kernels`` against numpy: Gemm (several shapes), RMSNorm, softmax, SwiGLU, add, attention; refusals.

Float tolerances are the derived bounds of :mod:`visa.kernels.bounds` (each function's docstring states its
derivation), never tuned.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from visa import RNGD, AxisSet, Context, HardwareLimitError, HbmTensor, HostTensor, LayoutError, bf16, device, launch
from visa.kernels import Arena, Attention, Gemm, Rows, bounds

F64 = npt.NDArray[np.float64]
RNG = np.random.default_rng(2024)


def host(ax: AxisSet, text: str, scale: float = 1.0) -> HostTensor[Any, Any]:
    """A random bf16 host tensor over ``text`` (values of HostTensor.rand, times ``scale``)."""
    t = HostTensor.rand(bf16, ax.m[text], RNG)
    if scale == 1.0:
        return t
    return HostTensor.from_numpy(t.numpy(axes=text.replace(",", " ")).astype(np.float32) * scale, bf16, ax.m[text],
                                 axes=text.replace(",", " "))


def values(t: HostTensor[Any, Any], axes: str) -> F64:
    return np.asarray(t.numpy(axes=axes), dtype=np.float64)


def run_gemm(ax: AxisSet, gemm: Gemm, x: HostTensor[Any, Any], w: HostTensor[Any, Any], *, w_layout: str = "N, K",
             axes: str = "M N", **options: Any) -> tuple[Context, int, F64]:
    """``gemm`` of x (``M, K``) and w (laid out ``w_layout`` in HBM) in a new context with ``options``: the context,
    the index of its first kernel operation, and the result's values."""
    ctx = Context.acquire()
    xh = x.to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0)
    wh = w.to_hbm(ax.m["1"], ax.m[w_layout], ctx.pdma, 1 << 28)
    first = len(ctx.schedule.ops)

    @device(chip=1)
    def kernel(ctx: Context, a: HbmTensor[Any, Any, Any], b: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        return gemm(ctx, Arena(), a, b, **options)

    return ctx, first, values(launch(kernel, ctx, xh, wh).to_host(ax.m["M, N"], ctx.pdma), axes)


# ------------------------------------------------------------------------------------------------- Gemm


@pytest.mark.parametrize(("m", "n", "k"), [(8, 256, 1024), (1, 8192, 512), (32, 512, 1536), (4, 16384, 64),
                                           (16, 96, 2048), (64, 256, 1024), (96, 64, 512),
                                           (1, 960, 576), (32, 64, 768)])  # K tiles of 288 and 384 (SmolLM2)
def test_gemm_shapes(m: int, n: int, k: int) -> None:
    ax = AxisSet(M=m, N=n, K=k)
    gemm = Gemm(ax)

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        return gemm(ctx, Arena(), x, w)

    ctx = Context.acquire()
    x, w = host(ax, "M, K"), host(ax, "N, K")
    out = launch(kernel, ctx, x.to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0),
                 w.to_hbm(ax.m["1"], ax.m["N, K"], ctx.pdma, 1 << 28)).to_host(ax.m["M, N"], ctx.pdma)
    xv = values(x, "M K") if m > 1 else values(x, "K")[None, :]  # an axis of size 1 leaves the mapping
    wv = values(w, "N K")
    got = values(out, "M N") if m > 1 else values(out, "N")[None, :]
    want = xv @ wv.T
    assert np.all(np.abs(got - want) <= bounds.gemm(xv, wv, gemm.k_tiles))
    # schedule: one TRF load per (N, K) tile, shared by the M tiles; every one after the first is loaded by the
    # sub context (double buffering); one contraction per (N, K, M) tile
    loads = [op for op in ctx.schedule.ops if op.name.endswith("to_trf")]
    assert len(loads) == gemm.k_tiles * gemm.n_tiles
    assert len([op for op in ctx.schedule.ops if "reducer" in op.name]) == len(loads) * gemm.m_tiles
    assert [op.track for op in loads] == ["main"] + ["sub"] * (len(loads) - 1)


def test_gemm_single_vs_double_buffer_makespan() -> None:
    """The same GEMM with every TRF load on main (single) and with sub loads (double): same bits.  By hand, with
    T loads: T·(L_main + C) against L_main + T·C while a sub load and its hand-off to main fit in a contraction
    (L_sub + H ≤ C); a sub load fetches 8 bytes a cycle to main's 32 (L1758–1759), so when it does not fit (and
    the weights' DMA leaves nothing to overlap) each sub load costs at most L_sub + H − L_main more."""
    ax = AxisSet(M=32, N=8192, K=2048)
    gemm = Gemm(ax)
    x, w = host(ax, "M, K"), host(ax, "N, K")
    results, spans, loads, passes = [], [], [], []
    for double in (False, True):
        ctx, first, out = run_gemm(ax, gemm, x, w, double_buffer=double)
        results.append(out)
        tu = [op for op in ctx.schedule.ops[first:] if op.track in ("main", "sub")]
        spans.append(max(op.end for op in tu) - min(op.start for op in tu))
        loads.append([op for op in tu if op.name.endswith("to_trf")])
        passes.append([op for op in tu if "reducer" in op.name])
    assert np.array_equal(results[0], results[1])
    h = RNGD.timing.context_handoff_cycles
    l_main, l_sub, c = loads[0][1].cycles, loads[1][1].cycles, passes[1][0].cycles
    assert loads[1][1].track == "sub" and l_sub > l_main  # the sub context's 8-byte fetches
    if l_sub + h <= c:
        assert spans[1] <= spans[0]
    else:
        assert spans[1] <= spans[0] + (len(loads[1]) - 1) * (l_sub + h - l_main)


@pytest.mark.parametrize(("m", "n", "k"), [(8, 256, 2048), (4, 16384, 64), (64, 128, 1024)])
def test_gemm_streams_tiles_from_hbm(m: int, n: int, k: int) -> None:
    """``stream=True`` moves one tile of x and w per step from HBM into two alternating DM buffers: the same
    bits as the resident mode, one DMA pair per (N, K) tile, and the DMA of tile t + 1 is issued before
    contraction t ends (it waits only for the tdma track, so it overlaps the Tensor Unit)."""
    ax = AxisSet(M=m, N=n, K=k)
    gemm = Gemm(ax)
    x, w = host(ax, "M, K"), host(ax, "N, K")
    got = []
    for stream in (False, True):
        ctx, first, out = run_gemm(ax, gemm, x, w, stream=stream)
        got.append(out)
        ops = ctx.schedule.ops[first:]
        dmas = [op for op in ops if op.track == "tdma" and op.name.startswith("hbm.to_dm")]
        tiles = gemm.k_tiles * gemm.n_tiles
        x_resident = 2 * m * k <= ctx.hw.dm.slice_bytes // 8  # x moved once, broadcast (a GEMV's x)
        assert len(dmas) == ((tiles + (1 if x_resident else tiles * gemm.m_tiles)) if stream else 2)
        if stream and tiles > 1:
            contractions = [op for op in ops if "reducer" in op.name]
            assert dmas[2].start < contractions[0].end  # tile 1's DMA overlaps contraction 0
        if stream and x_resident:
            # w's DMA of step t + 1 is issued before step t's TRF load (program order, L7046–7055), so it starts
            # no later than that load: the next tile moves while the Tensor Unit works on this one
            loads = [op for op in ops if op.name.endswith("to_trf")]
            assert len(loads) == tiles
            assert all(w_next.start <= load.start for w_next, load in zip(dmas[2:], loads, strict=False))
    assert np.array_equal(got[0], got[1])


def test_gemm_streams_k_tile_major_weights_as_contiguous_tiles() -> None:
    """``w_tiles=True``: w stored ``m["K / 512, N, K % 512"]`` streams each 8192 × 512 tile (8 MiB) as one
    contiguous run: the same bits as the row-major w, and each tile's DMA as the contiguous tile of
    tests/engines/test_dma.py (4 engines, 8192 requests each).  A K tile of the row-major w (1 KiB runs 4 KiB
    apart) opens a DRAM row for most of its 256-byte units, but a queue window of 64 requests spreads them over
    many banks of each channel, whose switches overlap each other's transfers (L2981, L2989–2993): it is no
    slower, both tiles bound by the engines' requests."""
    ax = AxisSet(M=1, N=8192, K=2048)
    x, w = host(ax, "M, K"), host(ax, "N, K")
    got, tiles = [], []
    for layout, w_tiles in (("N, K", False), ("K / 512, N, K % 512", True)):
        ctx, first, out = run_gemm(ax, Gemm(ax, w_tiles=w_tiles), x, w, w_layout=layout, axes="N", stream=True)
        got.append(out)
        dmas = [op for op in ctx.schedule.ops[first:] if op.track == "tdma" and op.name.startswith("hbm.to_dm")]
        tiles.append([op.end - op.start for op in dmas[1:]])  # after x's one broadcast DMA
    assert np.array_equal(got[0], got[1])
    assert len(tiles[1]) == 4 and len(set(tiles[1])) == 1
    ideal = 32768 / 32 * 16 / 3  # 8 MiB over 32 channels (L2980)
    assert 500 + 8192 <= tiles[1][0] < 500 + 2.5 * ideal
    assert all(t <= r for t, r in zip(tiles[1], tiles[0], strict=True))
    assert tiles[1][0] == 500 + 8192  # the engines' 8192 requests each


def test_gemm_with_a_last_narrower_n_tile_L7987() -> None:
    """N past one N tile and no multiple of it (the LM head's V = 128,256, L7987; issue 27 item 8 — it was refused
    with "pad to a multiple of 32", which it is): the whole tiles and the last, narrower one (96 columns here) run
    as two GEMMs into one output, against numpy within the GEMM's bound."""
    ax = AxisSet(M=4, N=8192 + 96, K=64)
    gemm = Gemm(ax)
    assert [(p.sn, start) for p, start, _ in gemm.parts] == [(8192, 0), (96, 8192)]
    x, w = host(ax, "M, K"), host(ax, "N, K")
    ctx, first, got = run_gemm(ax, gemm, x, w)
    xv, wv = values(x, "M K"), values(w, "N K")
    assert np.all(np.abs(got - xv @ wv.T) <= bounds.gemm(xv, wv, 1))
    # both parts' columns land in the one [M, N] output: two HBM → HBM DMAs into its column tiles
    placed = [op for op in ctx.schedule.ops[first:] if op.name.startswith("to_hbm_view")]
    assert len(placed) == 2
    with pytest.raises(LayoutError, match="K-tile-major"):
        Gemm(AxisSet(M=1, N=8192 + 96, K=1024), w_tiles=True)


def test_gemm_streams_views_with_padded_rows() -> None:
    """Issue 25: streamed GEMMs over HBM views whose rows have gaps between them — a prefill's q|k heads read out
    of the Q|K|V output (``m["R12 / 12, R12 % 12 # 15, Dk"]``, 64 tokens: 24 M tiles) as x, and one KV head's V^T
    in the cache of three (``m["Dv, S # 3·S"]``, 2 K tiles of 512) as w: such an x has no (M, K) tiles to stream and
    stays resident, and w's tiles keep the view's row pitch (L829).  The same bits as the resident mode, within
    :func:`visa.kernels.bounds.gemm`."""
    t, heads, d, s, h = 64, 12, 64, 1024, 3
    ax = AxisSet(T=t, QKV=(heads + 3) * d, R12=heads * t, Dr=d, Dk=d, M=32, Dv=d, S=s, H=h)
    m = ax.m
    qkv, swap = host(ax, "T, QKV"), host(ax, "Dr, Dk")
    x2, v = host(ax, "M, S"), host(ax, "Dv, H, S")
    rows, mix = Gemm(ax, "R12", "Dr", "Dk"), Gemm(ax, "M", "Dv", "S")
    assert mix.k_tiles == 2
    results: list[list[F64]] = []
    for stream in (False, True):
        ctx = Context.acquire()
        qkv_h = qkv.to_hbm(m["1"], m["T, QKV"], ctx.pdma, 0)
        swap_h = swap.to_hbm(m["1"], m["Dr, Dk"], ctx.pdma, 1 << 24)
        x2_h = x2.to_hbm(m["1"], m["M, S"], ctx.pdma, 2 << 24)
        v_h = v.to_hbm(m["1"], m["Dv, H, S"], ctx.pdma, 3 << 24)

        @device(chip=1)
        def kernel(ctx: Context, a: Any, b: Any, c: Any, e: Any, stream: bool = stream) -> Any:
            qk = a.view().tile(m["QKV"], heads * d, m[f"T, QKV = {heads * d} # {(heads + 3) * d}"], 0)
            x = qk.relabel(m[f"R12 / {heads}, R12 % {heads} # {heads + 3}, Dk"])
            head = e.view().tile(m["H"], 1, m[f"Dv, S # {h * s}"], 1)  # KV head 1's V^T
            arena = Arena()  # (one arena: the two outputs at different HBM addresses)
            return rows(ctx, arena, x, b, stream=stream), mix(ctx, arena, c, head, stream=stream)

        got = launch(kernel, ctx, qkv_h, swap_h, x2_h, v_h)
        results.append([values(got[0].to_host(m["R12, Dr"], ctx.pdma), "R12 Dr"),
                        values(got[1].to_host(m["M, Dv"], ctx.pdma), "M Dv")])
    xq = values(qkv, "T QKV")[:, :heads * d].reshape(t * heads, d)
    xm, wv = values(x2, "M S"), values(v, "Dv H S")[:, 1, :]
    for (x, w, k_tiles), got, resident in zip(((xq, values(swap, "Dr Dk"), 1), (xm, wv, 2)), results[1],
                                              results[0], strict=True):
        assert np.array_equal(got, resident)
        assert np.all(np.abs(got - x @ w.T) <= bounds.gemm(x, w, k_tiles))


def test_streamed_gemm_reads_other_layouts_or_refuses_them() -> None:
    """Issue 25 (the i25f review): the streamed mode decides that x or w is plain ``[M, K]`` / ``[N, K]`` by its
    layout, not its size. An x of the same size in another order (``K / 512, M, K % 512``) stays resident and gives
    the resident mode's bits; a w still carrying a head axis (``N, H, K``: the head not tiled out) is refused by
    the tile's stride check rather than streamed over head 0."""
    ax = AxisSet(M=64, N=64, K=1024, H=3)
    m = ax.m
    x, w, wh = host(ax, "M, K"), host(ax, "N, K"), host(ax, "N, H, K")
    gemm = Gemm(ax)
    got: list[F64] = []
    for stream in (False, True):
        ctx = Context.acquire()
        x_h = x.to_hbm(m["1"], m["K / 512, M, K % 512"], ctx.pdma, 0)
        w_h = w.to_hbm(m["1"], m["N, K"], ctx.pdma, 1 << 24)

        @device(chip=1)
        def kernel(ctx: Context, a: Any, b: Any, stream: bool = stream) -> Any:
            return gemm(ctx, Arena(), a, b, stream=stream)

        got.append(values(launch(kernel, ctx, x_h, w_h).to_host(m["M, N"], ctx.pdma), "M N"))
    xv, wv = values(x, "M K"), values(w, "N K")
    assert np.array_equal(got[1], got[0])
    assert np.all(np.abs(got[1] - xv @ wv.T) <= bounds.gemm(xv, wv, 2))
    ctx = Context.acquire()
    x_h = x.to_hbm(m["1"], m["M, K"], ctx.pdma, 0)
    wh_h = wh.to_hbm(m["1"], m["N, H, K"], ctx.pdma, 1 << 24)

    @device(chip=1)
    def whole(ctx: Context, a: Any, b: Any) -> Any:
        return gemm(ctx, Arena(), a, b, stream=True)

    with pytest.raises(LayoutError, match="stride"):
        launch(whole, ctx, x_h, wh_h)


@pytest.mark.parametrize(("length", "k_tile"), [(512, 768), (1024, 1024)])
def test_attention_mix_with_whole_row_k_tiles(length: int, k_tile: int) -> None:
    """Issue 25: a decode step's all-heads attention over a cache of 512 or 1024 positions of 3 KV heads — the
    second GEMM's K (3·S = 1536, 3072) in K tiles of 768 or 1024, each a whole TRF Row (L1089), so they load
    without double buffering (no half is free, L4151–4154) rather than being refused.  Within
    :func:`visa.kernels.bounds.attention`."""
    ax = AxisSet(Q=9, S=3 * length, Dk=64, Dv=64)
    att = Attention(ax, mix_k_tile=k_tile)
    assert att.mix.k_tiles == 3 * length // k_tile and not att.mix_double_buffer
    q, k, vt = host(ax, "Q, Dk"), host(ax, "S, Dk"), host(ax, "Dv, S")

    @device(chip=1)
    def kernel(ctx: Context, qh: HbmTensor[Any, Any, Any], kh: HbmTensor[Any, Any, Any],
               vh: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        out: HbmTensor[Any, Any, Any] = att(ctx, Arena(), qh, kh, vh)
        return out

    ctx = Context.acquire()
    out = launch(kernel, ctx, q.to_hbm(ax.m["1"], ax.m["Q, Dk"], ctx.pdma, 0),
                 k.to_hbm(ax.m["1"], ax.m["S, Dk"], ctx.pdma, 1 << 26),
                 vt.to_hbm(ax.m["1"], ax.m["Dv, S"], ctx.pdma, 2 << 26)).to_host(ax.m["Q, Dv"], ctx.pdma)
    qv, kv, v = values(q, "Q Dk"), values(k, "S Dk"), values(vt, "Dv S").T
    want, bound = bounds.attention(qv, kv, v, 1 / 8)  # (its γ counts the default K tiles of 512: more)
    assert np.all(np.abs(values(out, "Q Dv") - want) <= bound)


def test_gemm_refusals() -> None:
    with pytest.raises(HardwareLimitError) as e1:
        Gemm(AxisSet(M=48, N=256, K=512))  # M is tiled by 32 (the accumulator's 128 outputs per Row, L4434)
    assert e1.value.axis == "M" and e1.value.level == "Time" and e1.value.fix
    with pytest.raises(LayoutError) as e2:
        Gemm(AxisSet(M=8, N=100, K=512))
    assert e2.value.axis == "N" and e2.value.level == "Slice"
    with pytest.raises(LayoutError) as e3:
        Gemm(AxisSet(M=8, N=256, K=600))  # no whole 64-byte packets of bf16 (L4388)
    assert e3.value.axis == "K" and e3.value.level == "Packet"
    assert [Gemm.k_tile_of(k) for k in (64, 512, 576, 768, 1536, 2048)] == [512, 512, 288, 384, 512, 512]


# -------------------------------------------------------------------------------------------------- Rows


def run_rows(ax: AxisSet, build: Any, *inputs: tuple[str, HostTensor[Any, Any]]) -> F64:
    """Launch ``build(ctx, arena, *hbm)`` (returns HBM ``[T, D]``) and read the result back as float64."""
    ctx = Context.acquire()
    hbm = [t.to_hbm(ax.m["1"], ax.m[text], ctx.pdma, k << 26) for k, (text, t) in enumerate(inputs)]

    @device(chip=1)
    def kernel(ctx: Context, *args: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        result: HbmTensor[Any, Any, Any] = build(ctx, Arena(), *args)
        return result

    return values(launch(kernel, ctx, *hbm).to_host(ax.m["T, D"], ctx.pdma), "T D")


@pytest.mark.parametrize(("t", "d"), [(64, 256), (256, 64), (3, 1024)])
def test_rms_norm(t: int, d: int) -> None:
    """Bound: :func:`visa.kernels.bounds.rms_norm`."""
    ax = AxisSet(T=t, D=d)
    rows = Rows(ax, "T", "D")
    eps = 1e-5
    x, g = host(ax, "T, D"), host(ax, "D")

    def build(ctx: Context, arena: Arena, xh: Any, gh: Any) -> Any:
        return rows.store(ctx, arena, rows.rms_norm(ctx, arena, rows.load(ctx, arena, xh),
                                                    rows.load_broadcast(ctx, arena, gh), eps=eps))

    got = run_rows(ax, build, ("T, D", x), ("D", g))
    xv, gv = values(x, "T D"), values(g, "D")
    want = xv / np.sqrt((xv**2).mean(axis=-1, keepdims=True) + eps) * gv
    assert np.all(np.abs(got - want) <= bounds.rms_norm(want, d))


@pytest.mark.parametrize(("t", "d", "scale"), [(64, 256, 1.0), (8, 1024, 0.125)])
def test_softmax(t: int, d: int, scale: float) -> None:
    """Bound: :func:`visa.kernels.bounds.softmax` (the input scaling rounds once more, inside its first term)."""
    ax = AxisSet(T=t, D=d)
    rows = Rows(ax, "T", "D")
    x = host(ax, "T, D", 4.0)

    def build(ctx: Context, arena: Arena, xh: Any) -> Any:
        return rows.store(ctx, arena, rows.softmax(ctx, arena, rows.load(ctx, arena, xh), scale=scale))

    got = run_rows(ax, build, ("T, D", x))
    z = scale * values(x, "T D")
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    spread = float(np.max(z.max(axis=-1, keepdims=True) - z))
    assert np.all(np.abs(got - want) <= bounds.softmax(want, d, spread))
    assert np.allclose(got.sum(axis=-1), 1.0, atol=d * 2.0**-8)  # each of D entries within b of its value


def test_swiglu() -> None:
    """Bound: :func:`visa.kernels.bounds.swiglu`."""
    ax = AxisSet(T=32, D=512)
    rows = Rows(ax, "T", "D")
    gate, up = host(ax, "T, D", 3.0), host(ax, "T, D")

    def build(ctx: Context, arena: Arena, gh: Any, uh: Any) -> Any:
        return rows.store(ctx, arena, rows.swiglu(ctx, arena, rows.load(ctx, arena, gh), rows.load(ctx, arena, uh)))

    got = run_rows(ax, build, ("T, D", gate), ("T, D", up))
    g, u = values(gate, "T D"), values(up, "T D")
    want = g / (1 + np.exp(-g)) * u
    assert np.all(np.abs(got - want) <= bounds.swiglu(want))


def test_add() -> None:
    """Bound: :func:`visa.kernels.bounds.add`; bf16 magnitudes 2^24 apart make the f32 sum round."""
    ax = AxisSet(T=16, D=128)
    rows = Rows(ax, "T", "D")
    a, c = host(ax, "T, D", 2.0**12), host(ax, "T, D", 2.0**-12)

    def build(ctx: Context, arena: Arena, ah: Any, ch: Any) -> Any:
        return rows.store(ctx, arena, rows.add(ctx, arena, rows.load(ctx, arena, ah), rows.load(ctx, arena, ch)))

    got = run_rows(ax, build, ("T, D", a), ("T, D", c))
    want = values(a, "T D") + values(c, "T D")
    assert np.all(np.abs(got - want) <= bounds.add(want))


def test_mul() -> None:
    """Bound: :func:`visa.kernels.bounds.mul` (the product of two bf16 is exact in f32; one rounding to bf16)."""
    ax = AxisSet(T=40, D=64)
    rows = Rows(ax, "T", "D")
    a, c = host(ax, "T, D", 3.0), host(ax, "T, D")

    def build(ctx: Context, arena: Arena, ah: Any, ch: Any) -> Any:
        return rows.store(ctx, arena, rows.mul(ctx, arena, rows.load(ctx, arena, ah), rows.load(ctx, arena, ch)))

    got = run_rows(ax, build, ("T, D", a), ("T, D", c))
    want = values(a, "T D") * values(c, "T D")
    assert np.all(np.abs(got - want) <= bounds.mul(want))


def test_rows_refusals() -> None:
    with pytest.raises(HardwareLimitError) as e1:
        Rows(AxisSet(T=300, D=64), "T", "D")
    assert e1.value.axis == "T" and e1.value.level == "Slice"
    with pytest.raises(LayoutError) as e2:
        Rows(AxisSet(T=8, D=60), "T", "D")
    assert e2.value.axis == "D" and e2.value.level == "Element"
    with pytest.raises(LayoutError):
        rows = Rows(AxisSet(T=8, D=64), "T", "D")
        rows.softmax(Context.acquire(), Arena(), None, scale=-1.0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- attention


def test_attention_single_head() -> None:
    """Bound: :func:`visa.kernels.bounds.attention`."""
    ax = AxisSet(Q=4, S=256, Dk=128, Dv=128)
    att = Attention(ax)
    q, k, vt = host(ax, "Q, Dk"), host(ax, "S, Dk"), host(ax, "Dv, S")

    @device(chip=1)
    def kernel(ctx: Context, qh: HbmTensor[Any, Any, Any], kh: HbmTensor[Any, Any, Any],
               vh: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        return att(ctx, Arena(), qh, kh, vh)

    ctx = Context.acquire()
    out = launch(kernel, ctx, q.to_hbm(ax.m["1"], ax.m["Q, Dk"], ctx.pdma, 0),
                 k.to_hbm(ax.m["1"], ax.m["S, Dk"], ctx.pdma, 1 << 26),
                 vt.to_hbm(ax.m["1"], ax.m["Dv, S"], ctx.pdma, 2 << 26)).to_host(ax.m["Q, Dv"], ctx.pdma)
    qv, kv, v = values(q, "Q Dk"), values(k, "S Dk"), values(vt, "Dv S").T
    want, bound = bounds.attention(qv, kv, v, 1 / math.sqrt(128))
    got = values(out, "Q Dv")
    assert np.all(np.abs(got - want) <= bound)


def test_kernels_free_their_scratch() -> None:
    """A chain of kernels on 256 × 1024 rows: the gain (4 KiB of f32 per slice) stays in the VRF while softmax
    and SwiGLU take their operands (SwiGLU 4 KiB more) and give them back (``Arena.scratch``); without that the
    8 KiB VRF (L1090) runs out.  A reused address never changes an earlier result (the registry would raise a
    stale read)."""
    ax = AxisSet(T=256, D=1024)
    rows = Rows(ax, "T", "D")
    x, g = host(ax, "T, D"), host(ax, "D")

    def build(ctx: Context, arena: Arena, xh: Any, gh: Any) -> Any:
        xd = rows.load(ctx, arena, xh)
        gain = rows.load_broadcast(ctx, arena, gh)
        y = xd
        for _ in range(2):
            y = rows.swiglu(ctx, arena, rows.softmax(ctx, arena, rows.rms_norm(ctx, arena, y, gain, eps=1e-6)), y)
        assert arena.vrf == 4 * 1024  # only the gain is left
        return rows.store(ctx, arena, y)

    got = run_rows(ax, build, ("T, D", x), ("D", g))
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("filled", [1, 37, 64])
def test_attention_with_additive_mask(filled: int) -> None:
    """A cache of 64 positions of which ``filled`` hold keys: the mask (0, then −inf) drops the rest, and the
    result is the attention over the filled part (bound of :func:`visa.kernels.bounds.attention` on it: the
    dropped positions get probability exactly 0).  The unfilled cache rows hold large values, which would
    dominate if the mask leaked."""
    ax = AxisSet(Q=4, S=64, Dk=64, Dv=32)
    att = Attention(ax)
    q, vt = host(ax, "Q, Dk"), host(ax, "Dv, S")
    keys = values(host(ax, "S, Dk"), "S Dk")
    keys[filled:] = 1000.0
    k = HostTensor.from_numpy(keys.astype(np.float32), bf16, ax.m["S, Dk"], axes="S Dk")
    mask_values = np.where(np.arange(64) < filled, 0.0, -np.inf).astype(np.float32)
    mask = HostTensor.from_numpy(mask_values, bf16, ax.m["S"])

    @device(chip=1)
    def kernel(ctx: Context, qh: HbmTensor[Any, Any, Any], kh: HbmTensor[Any, Any, Any],
               vh: HbmTensor[Any, Any, Any], mh: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        return att(ctx, Arena(), qh, kh, vh, mh)

    ctx = Context.acquire()
    out = launch(kernel, ctx, q.to_hbm(ax.m["1"], ax.m["Q, Dk"], ctx.pdma, 0),
                 k.to_hbm(ax.m["1"], ax.m["S, Dk"], ctx.pdma, 1 << 26),
                 vt.to_hbm(ax.m["1"], ax.m["Dv, S"], ctx.pdma, 2 << 26),
                 mask.to_hbm(ax.m["1"], ax.m["S"], ctx.pdma, 3 << 26)).to_host(ax.m["Q, Dv"], ctx.pdma)
    qv, v = values(q, "Q Dk"), values(vt, "Dv S").T
    want, bound = bounds.attention(qv, keys[:filled], v[:filled], 1 / math.sqrt(64))
    got = values(out, "Q Dv")
    assert np.all(np.abs(got - want) <= bound)
