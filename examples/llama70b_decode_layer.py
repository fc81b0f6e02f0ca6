"""One Llama 3 70B decoder layer, decode step, at full size on one chip (manual "Decode Phase", L8225–8419;
issue 14), composed from :mod:`visa.kernels`, with the weights in HBM streamed through DM in tiles.

Full size (``LLAMA70B_FULL=1 visa run examples/llama70b_decode_layer.py``, or ``python
examples/llama70b_decode_layer.py --full``): D = 8192, 64 query heads and 8 KV heads of d_k = 128 (L7990),
F = 28672, bf16 weights in HBM (Q 8192×8192, K and V 1024×8192, O 8192×8192, gate, up 28672×8192, down
8192×28672: 856M weights, 1.71 GB), a KV cache of S = 256 positions per KV head.  It takes about 16 s on this
2-core machine idle (8.5 s writing the weights to HBM, 3.5 s the launch — the simulation — and 3.9 s the numpy
check: ``make bench``, 2026-11-29; several times that when the machine is loaded; README "Llama 3 70B decode
layer") and a peak RSS of 2.18 GiB with the
check (1.37× the weights' 1.59 GiB; 2.05 GiB, 1.29×, through setup and launch; ``VmHWM`` of its own process, issue
24; 4.8 GB before issue 24); the launch is 2,502,439 cycles, 44.5% of the memory-bound limit (1.71 GB at
the 1,536 B/cycle of the one HBM figure; 3,211,847 cycles before the timing model of issue 22, 71.1% of a limit
taken at the 750 B/cycle read half).  By
default (``visa run``, ``make run``, and the test ``tests/kernels/test_llama70b.py``) the same code runs at a
reduced size: D = 1024, 16 query heads, 2 KV heads of d_k = 64, F = 3584, S = 128.

The layer for one token at position s, each stage a kernel of :mod:`visa.kernels`:

1. ``x_norm = RMSNorm(x)`` (2.1, L8241–8246) — :meth:`Rows.rms_norm_streamed` (the gain read from DM beside
   the row: 8192 f32 gains do not fit the 8 KiB VRF, L1090);
2. ``Q, K_new, V_new = x_norm · w_q, w_k, w_v`` (2.2.1, L8247–8257) — :class:`Gemm` in stream mode: per (N, K)
   tile, w's tile moves HBM → DM into one of two alternating buffers while the other is contracted; K and V are
   one Gemm over the stack ``w_kv = [w_k; w_v]`` (below), K_new and V_new its two halves;
3. RoPE at position s (2.2.2, L8258–8284) — a :class:`Gemm` of the 64 (8) heads against the block-diagonal
   rotation of ``w_rope[s]`` (the manual's ``einsum`` over the pair axis: the same products, plus zeros);
4. KV-cache append (2.2.3, L8286–8297) — ``to_hbm_view`` of K_rope and V_new into position s − 1 of the caches
   (in-place DMAs);
5. attention (2.2.4, L8298–8317) — one :class:`Attention` per KV head, its G = 8 query heads the GEMMs' M rows
   (the manual's broadcast of G, L8302), Vᵀ of the head (the second GEMM reads V N-major) as ``I · Vᵀ`` by a
   :class:`Gemm` (exact: one nonzero product per output); the 8 outputs are DMAed into one ``[h_kv, G, d_v]``
   tensor, which is ``[1, h_q·d_k]`` for the output projection (a reshape, L8325);
6. output projection, residual (2.2.5–2.2.6, L8318–8328) — :class:`Gemm`, :meth:`Rows.add`;
7. RMSNorm, SwiGLU FFN, residual (2.3, L8329–8364) — the gate and up projections in 4 chunks of 7168 rows
   (a :class:`Gemm` takes N ≤ 8192 or a multiple of it; 28672 = 3.5 × 8192), :meth:`Rows.swiglu` per chunk,
   the chunks DMAed into one ``[F]`` activation, the down projection (K = 28672, 56 tiles of 512), residual.

Departures from the manual, with lines:

- **Elementwise kernels on a ``[rows, 128]`` view**: :class:`Rows` holds one row per slice and an f32 VRF
  operand of the row's width (8 KiB, L1090); the residual adds and SwiGLU read the ``[D]`` / ``[F]`` vectors
  as ``[D/128, 128]`` / ``[F/128, 128]`` (a relabelling: elementwise results do not depend on it).
- **The cache** is 256 positions (S = 128 reduced), filled with random keys and values, the new token at
  position s = S (its K and V appended at index s − 1).  Both caches are ``[h_kv, S, d]``, so an append is one
  contiguous run per head; the transposed V the second attention GEMM reads is made per step on the Tensor Unit
  (``I · Vᵀ``).  Kept transposed, the V append would be a strided in-place write, which today's in-place DMA
  gets wrong (it writes the tile's padding positions, docs/manual-notes.md), and an HBM → HBM transposing DMA
  of the whole cache costs 2.5M cycles (2-byte read-modify-writes, L2985), 20% of the layer.
- **The RoPE table row is built on the host** (L8268–8270, ``gather(position, w_rope)``): the rotation of
  ``w_rope[s]`` is an input; the embedding gather, final norm, LM head and sampling (steps 1, 3–5) are not
  part of the layer.
- **Weights are stored K-tile-major** (a layout choice; the manual fixes no weight layout): a ``[N, K]`` weight
  is ``m["K / 512, N, K % 512"]`` in HBM, so each ``N × 512`` tile a streamed :class:`Gemm` moves (512 = one
  TRF half of bf16, L4151–4154) is one contiguous run, and the Gemms are built with ``w_tiles=True``.  Row-major,
  a K tile is 1 KiB of every 2·K bytes: under the HBM address map (L2960–2977) each of its 256-byte units opens
  a DRAM row of its own, the bank-conflict pattern of the manual's Example 4 (L2682–2716; a row switch 40–50 ns,
  L2987), 37,023 cycles per 8192 × 512 tile; contiguous, a channel's 64-entry queue (L2981) serves each row's
  requests together (FR-FCFS, L2990–2993), 12,618.  The gate/up chunk ``c`` is the view
  ``m["D / 512, Fc # F, D % 512"]`` (its rows of one K tile adjacent, the next K tile F rows on).  Results are
  bit for bit those of the row-major layout (``run(tiles=False)``; ``tests/kernels/test_llama70b.py``).
- **K and V projections fused**: w_k and w_v are stored as one ``[2·h_kv·d_k, D]`` stack ``w_kv`` and contracted
  by one :class:`Gemm`.  A Gemm puts 32 output columns on a slice, so a 1024-row w_k alone fills 32 slices — one
  DMN, whose 128 B/cycle (L2603) bounds each 1 MiB tile at 8,692 cycles; the 2048-row stack fills a DMN pair,
  2 MiB per 8,692-cycle tile.  Each output column is its own sums, so K_new and V_new (tile views of the result)
  are bit for bit those of two Gemms.  (Q cannot join them: 8192 + 2048 rows exceed a Gemm's N of 8192.)
- **Weights are written to HBM in row chunks** (host → HBM DMAs): each chunk of 1024 rows as its K tiles'
  ``[1024, 512]`` pieces, rows ``[r0, r0 + 1024)`` of tile ``kt`` at ``2·512·(kt·N + r0)`` bytes from the
  weight's base, and read as one tensor through ``HbmTensor.from_addr`` (L821), so the host never holds a
  28672 × 8192 weight at once; the host check regenerates each chunk from its seed (the same rows the upload
  wrote, whatever their HBM order).

Check: every stage is compared with numpy (float64) applied to that stage's own inputs as the device produced
them, within the stage's derived bound (:mod:`visa.kernels.bounds`).  The cycles of the launch (first to last
device operation) are compared with the memory-bound limit, the weights' bytes ÷ the HBM bandwidth every cost reads
(``visa.hw.bandwidth(hw, "HBM")``: 32 channels × 48 B/cycle, L2980).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.hw import bandwidth
from visa.kernels import Arena, Attention, Gemm, Rows, bounds
from visa.kernels.cache import rope_matrix
from visa.tune.worker import peak_bytes

Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
EPS = 1e-5
CHUNK_ROWS = 1024  # rows of a weight per host → HBM DMA
K_TILE = 512  # columns of a weight's K tile (visa.kernels.Gemm's; 4 × 512 bf16 = one TRF half, L4151–4154)
ROUND_ROWS = 64  # rows of a chunk rounded to bf16 at once
CHECK_ELEMENTS = 1 << 22  # weights the host check holds in float64 at once (32 MiB; a chunk is up to 29M)
WEIGHT_BASE = 4 << 30  # HBM byte address of the first weight (the arena's outputs start at 1 GiB)


@dataclass(frozen=True)
class Size:
    """The layer's dimensions: model width, heads, head width, FFN width, FFN chunks, cache length."""

    d: int
    heads: int
    kv_heads: int
    dk: int
    f: int
    f_chunks: int
    s: int

    def axes(self) -> AxisSet:
        """Every axis the kernels name (heads × d_k flattened as HQ / HKV / HO; 128-wide row views)."""
        g = self.heads // self.kv_heads
        fc = self.f // self.f_chunks
        return AxisSet(T=1, D=self.d, HQ=self.heads * self.dk, HKV=self.kv_heads * self.dk,
                       HKV2=2 * self.kv_heads * self.dk, HO=self.heads * self.dk,
                       H=self.heads, Hkv=self.kv_heads, G=g, Dk=self.dk, Dr=self.dk, Dv=self.dk,
                       Dvi=self.dk, S=self.s,
                       F=self.f, Fk=self.f_chunks, Fc=fc, Dh=self.d // 128, Dl=128, Fh=fc // 128, Fl=128)

    @property
    def weights(self) -> int:
        """Number of weights of the layer's projections (the norms' gains are 2·D more)."""
        q, kv = self.heads * self.dk, self.kv_heads * self.dk
        return self.d * (q + 2 * kv) + q * self.d + 3 * self.f * self.d


FULL = Size(d=8192, heads=64, kv_heads=8, dk=128, f=28672, f_chunks=4, s=256)
REDUCED = Size(d=1024, heads=16, kv_heads=2, dk=64, f=3584, f_chunks=4, s=128)


class Layer:
    """The kernels of one layer for a :class:`Size` (each derives its mappings from the axis sizes)."""

    def __init__(self, size: Size, tiles: bool = True, k_tile: int = K_TILE) -> None:
        self.size, self.tiles, self.k_tile = size, tiles, k_tile
        self.ax = ax = size.axes()
        self.m = ax.m
        self.rows_d = Rows(ax, "T", "D")  # RMSNorm: the whole row in one slice
        self.rows_dd = Rows(ax, "Dh", "Dl")  # residual adds on the [D/128, 128] view
        self.rows_fc = Rows(ax, "Fh", "Fl")  # SwiGLU on a chunk's [Fc/128, 128] view
        # the weights are stored K-tile-major (``tiles``, the module docstring): each streamed tile is contiguous
        self.q_proj = Gemm(ax, "T", "HQ", "D", w_tiles=tiles, k_tile=k_tile)
        self.kv_proj = Gemm(ax, "T", "HKV2", "D", w_tiles=tiles, k_tile=k_tile)  # K and V fused: w_kv = [w_k; w_v]
        self.rope_q, self.rope_k = Gemm(ax, "H", "Dr", "Dk"), Gemm(ax, "Hkv", "Dr", "Dk")
        self.attention = Attention(ax, q="G", s="S", dk="Dr", dv="Dv")
        self.transpose = Gemm(ax, "Dv", "S", "Dvi")  # Vᵀ[Dv, S] = I[Dv, Dvi] · V[S, Dvi]ᵀ
        self.o_proj = Gemm(ax, "T", "D", "HO", w_tiles=tiles, k_tile=k_tile)
        self.gate_up = Gemm(ax, "T", "Fc", "D", w_tiles=tiles, k_tile=k_tile)
        self.down = Gemm(ax, "T", "D", "F", w_tiles=tiles, k_tile=k_tile)
        self.arena = Arena()

    def kernel(self, ctx: Context, x: Hbm, g_attn: Hbm, w_q: Hbm, w_kv: Hbm, rope: Hbm, k_cache: Hbm,
               v_cache: Hbm, eye: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm, w_up: Hbm, w_down: Hbm) -> dict[str, Hbm]:
        """The decode step (the module docstring's stages 1–7); returns every stage's HBM output."""
        m, sz = self.m, self.size
        out: dict[str, Hbm] = {}
        with self.arena.scratch() as arena:
            rd, rdd, rf = self.rows_d, self.rows_dd, self.rows_fc
            x_norm = rd.store(ctx, arena, rd.rms_norm_streamed(ctx, arena, rd.load(ctx, arena, x),
                                                               rd.load(ctx, arena, g_attn), eps=EPS))
            q = self.q_proj(ctx, arena, x_norm, w_q)
            # one GEMM over w_kv's 2·h_kv·d_k rows (twice the slices of one: twice the DMN bandwidth per tile, L2603);
            # K_new and V_new are its two halves (each output column its own sums: the bits of two GEMMs)
            kv = self.kv_proj(ctx, arena, x_norm, w_kv)
            hkv = sz.kv_heads * sz.dk
            k_new, v_new = (kv.view().tile(m["HKV2"], hkv, m[f"T, HKV2 = {hkv}"], i * hkv).relabel(m["T, HKV"])
                            .as_tensor() for i in range(2))
            q_rope = self.rope_q(ctx, arena, q.view().relabel(m["H, Dk"]), rope)  # reshape (noop, L8274)
            k_rope = self.rope_k(ctx, arena, k_new.view().relabel(m["Hkv, Dk"]), rope)
            # KV-cache append at position s − 1 (L8286–8297): in-place DMAs into the caches
            at = sz.s - 1
            k_rope.view().relabel(m["Hkv, S = 1, Dr"]).to_hbm_view(
                k_cache.view().tile(m["S"], 1, m[f"Hkv, S = 1 # {sz.s}, Dr"], at), ctx.tdma)
            v_new.view().relabel(m["Hkv, S = 1, Dvi"]).to_hbm_view(
                v_cache.view().tile(m["S"], 1, m[f"Hkv, S = 1 # {sz.s}, Dvi"], at), ctx.tdma)
            attn = HbmTensor(ctx, bf16, m["1"], m["Hkv, G, Dv"], arena.take_hbm(2 * sz.heads * sz.dk),
                             call="llama70b.attn")
            for h in range(sz.kv_heads):
                g = sz.heads // sz.kv_heads
                qh = q_rope.view().tile(m["H"], g, m[f"H = {g}, Dr"], h * g)
                kh = k_cache.view().tile(m["Hkv"], 1, m["S, Dr"], h)
                # Vᵀ for the second attention GEMM (it reads V N-major): I · Vᵀ on the Tensor Unit, exact
                vh = self.transpose(ctx, arena, eye, v_cache.view().tile(m["Hkv"], 1, m["S, Dvi"], h))
                a = self.attention(ctx, arena, qh.relabel(m["G, Dr"]), kh, vh)
                a.view().to_hbm_view(attn.view().tile(m["Hkv"], 1, m["G, Dv"], h), ctx.tdma)
            attn_out = self.o_proj(ctx, arena, attn.view().relabel(m["T, HO"]), w_o)  # [h_q·d_k] (L8325)
            x_attn = rdd.store(ctx, arena, rdd.add(ctx, arena, rdd.load(ctx, arena, x.view().relabel(m["Dh, Dl"])),
                                                   rdd.load(ctx, arena, attn_out.view().relabel(m["Dh, Dl"]))))
            h_ = rd.store(ctx, arena, rd.rms_norm_streamed(ctx, arena, rd.load(ctx, arena, x_attn.view().relabel(
                m["T, D"])), rd.load(ctx, arena, g_ffn), eps=EPS))
            act = HbmTensor(ctx, bf16, m["1"], m["Fk, Fc"], arena.take_hbm(2 * sz.f), call="llama70b.act")
            gates, ups = [], []
            # chunk c of gate/up: rows [c·Fc, (c+1)·Fc); stored tile-major, its rows of one K tile are adjacent and
            # the next K tile's are F rows on (the padding ``Fc # F``)
            kt = self.k_tile
            chunk = m[f"D / {kt}, Fc # {sz.f}, D % {kt}"] if self.tiles and sz.d > kt else m["Fc, D"]
            for c in range(sz.f_chunks):
                gate = self.gate_up(ctx, arena, h_, w_gate.view().tile(m["Fk"], 1, chunk, c))
                up = self.gate_up(ctx, arena, h_, w_up.view().tile(m["Fk"], 1, chunk, c))
                a_c = rf.store(ctx, arena, rf.swiglu(ctx, arena, rf.load(ctx, arena, gate.view().relabel(m["Fh, Fl"])),
                                                     rf.load(ctx, arena, up.view().relabel(m["Fh, Fl"]))))
                a_c.view().relabel(m["Fc"]).to_hbm_view(act.view().tile(m["Fk"], 1, m["Fc"], c), ctx.tdma)
                gates.append(gate)
                ups.append(up)
            ffn = self.down(ctx, arena, act.view().relabel(m["T, F"]), w_down)
            y = rdd.store(ctx, arena, rdd.add(ctx, arena, rdd.load(ctx, arena, x_attn),
                                              rdd.load(ctx, arena, ffn.view().relabel(m["Dh, Dl"]))))
            out.update(x_norm=x_norm, q=q, k_new=k_new, v_new=v_new, q_rope=q_rope, k_rope=k_rope, attn=attn,
                       attn_out=attn_out, x_attn=x_attn, h=h_, act=act, ffn=ffn, out=y)
            out.update({f"gate{c}": g for c, g in enumerate(gates)})
            out.update({f"up{c}": u for c, u in enumerate(ups)})
            return out




def to_bf16(array: npt.ArrayLike) -> F64:
    """``array`` rounded to bf16 (round to nearest even), as float64."""
    from ml_dtypes import bfloat16

    return np.asarray(np.asarray(array, np.float32).astype(bfloat16), np.float64)


class Weights:
    """Random weights (uniform, variance 1/cols: unit-variance outputs), generated in row chunks from a seed (so
    the host check can regenerate a chunk instead of keeping 1.7 GB of weights)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def chunks(self, key: int, rows: int, cols: int) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """(first row, bf16 values as float32) of each chunk of ``CHUNK_ROWS`` rows of weight ``key``: one buffer,
        refilled for every chunk (use a chunk before asking for the next), so that the host holds one chunk."""
        from ml_dtypes import bfloat16

        scale = np.float32(math.sqrt(12 / cols))  # uniform on ±√(3/cols): variance 1/cols
        buf = np.empty((min(CHUNK_ROWS, rows), cols), np.float32)
        for r0 in range(0, rows, CHUNK_ROWS):
            w = buf[:min(CHUNK_ROWS, rows - r0)]
            np.random.default_rng((self.seed, key, r0)).random(out=w, dtype=np.float32)
            w -= np.float32(0.5)
            w *= scale
            for b0 in range(0, w.shape[0], ROUND_ROWS):  # rounded to bf16 in place, a few rows at a time
                w[b0:b0 + ROUND_ROWS] = w[b0:b0 + ROUND_ROWS].astype(bfloat16)
            yield r0, w


def tile_major(text: str, k: str, cols: int, k_tile: int = K_TILE) -> str:
    """The K-tile-major layout of a ``[rows, K]`` weight whose row-major layout is ``text`` (K the last axis ``k``
    of ``cols`` columns): ``"HQ, D"`` → ``"D / 512, HQ, D % 512"``; a K of at most one tile is unchanged."""
    return f"{k} / {k_tile}, {text.rsplit(',', 1)[0]}, {k} % {k_tile}" if cols > k_tile else text


def upload(ctx: Context, weights: Weights, keys: tuple[int, ...], rows: int, cols: int, chip: Any, element: Any,
           address: int, tiles: bool = True, k_tile: int = K_TILE) -> Hbm:
    """Write the weights ``keys`` (each ``[rows, cols]``, stacked by rows: ``[w_k; w_v]`` for two keys) to HBM at
    ``address`` chunk by chunk (host → HBM DMAs), and return one handle over all of it (``HbmTensor.from_addr``,
    L821) laid out as ``element``.

    ``tiles`` (with ``cols > 512``): the host writes the stack K-tile-major, ``element`` being
    ``m["K / 512, rows…, K % 512"]``: its rows ``[r0, r0 + r)`` of K tile ``kt`` (a contiguous ``[r, 512]`` piece of
    a chunk) at ``address + 2·512·(kt·len(keys)·rows + r0)``, so each tile a :class:`Gemm` streams is one contiguous
    run.  Otherwise row-major: the chunk at ``address + 2·cols·r0``."""
    total = len(keys) * rows
    for part, key in enumerate(keys):
        for c0, chunk in weights.chunks(key, rows, cols):
            r, r0 = chunk.shape[0], part * rows + c0  # r0: the chunk's first row in the stack
            if tiles and cols > k_tile:
                pieces = chunk.reshape(r, cols // k_tile, k_tile).transpose(1, 0, 2)
                for kt, piece in enumerate(pieces):
                    cax = AxisSet(R=r, C=k_tile)
                    host = HostTensor.from_numpy(np.ascontiguousarray(piece), bf16, cax.m["R, C"], axes="R C")
                    host.to_hbm(cax.m["1"], cax.m["R, C"], ctx.pdma, address + 2 * k_tile * (kt * total + r0))
                continue
            cax = AxisSet(R=r, C=cols)
            host = HostTensor.from_numpy(chunk, bf16, cax.m["R, C"], axes="R C")
            host.to_hbm(cax.m["1"], cax.m["R, C"], ctx.pdma, address + 2 * r0 * cols)
    out: Hbm = HbmTensor.from_addr(ctx, bf16, chip, element, address)
    return out




def check(name: str, got: F64, want: F64, bound: F64) -> float:
    """Assert ``|got − want| ≤ bound`` elementwise; return the largest error."""
    err = np.abs(got - want)
    assert np.all(err <= bound), (name, float(np.max(err - bound)))
    return float(np.max(err))


def run(size: Size = REDUCED, seed: int = 8, tiles: bool = True,
        keep: dict[str, F64] | None = None, k_tile: int = K_TILE) -> dict[str, float]:
    """Build the layer at ``size``, run it in one launch on random weights, check every stage against numpy;
    return each stage's largest error, the launch's cycles, its memory-bound limit and the wall times.

    ``tiles``: the weights stored K-tile-major (the default; ``False``: row-major, the layout before).  ``keep``,
    when given, receives every stage's device output as read back (to compare two layouts bit for bit)."""
    t0 = time.perf_counter()
    layer = Layer(size, tiles, k_tile)
    m, sz = layer.m, size
    rng = np.random.default_rng(seed)
    weights = Weights(seed)
    ctx = Context.acquire()
    addr = iter(range(0, 1 << 30, 1 << 24))  # the small inputs, below the arena's 1 GiB

    def put(values: F64, text: str, axes: str) -> Hbm:
        host = HostTensor.from_numpy(np.asarray(values, np.float32), bf16, m[text], axes=axes)
        return host.to_hbm(m["1"], m[text], ctx.pdma, next(addr))

    x = to_bf16(rng.standard_normal(sz.d))
    g_attn, g_ffn = to_bf16(1 + 0.1 * rng.standard_normal(sz.d)), to_bf16(1 + 0.1 * rng.standard_normal(sz.d))
    rope = to_bf16(rope_matrix(sz.s - 1, sz.dk))
    k_cache = to_bf16(0.5 * rng.standard_normal((sz.kv_heads, sz.s, sz.dk)))
    v_cache = to_bf16(rng.standard_normal((sz.kv_heads, sz.s, sz.dk)))
    hq, hkv = sz.heads * sz.dk, sz.kv_heads * sz.dk
    # (seed keys — q 0, k 1, v 2, o 3, gate 4, up 5, down 6 — rows and columns of each, layout); k and v stacked
    shapes = {"q": ((0,), hq, sz.d, "HQ, D"), "kv": ((1, 2), hkv, sz.d, "HKV2, D"),
              "o": ((3,), sz.d, hq, "D, HO"), "gate": ((4,), sz.f, sz.d, "Fk, Fc, D"),
              "up": ((5,), sz.f, sz.d, "Fk, Fc, D"), "down": ((6,), sz.d, sz.f, "D, F")}
    base, hbm = WEIGHT_BASE, {}
    for name, (keys, rows, cols, text) in shapes.items():
        layout = tile_major(text, text.rsplit(", ", 1)[1], cols, k_tile) if tiles else text
        hbm[name] = upload(ctx, weights, keys, rows, cols, m["1"], m[layout], base, tiles, k_tile)
        base += -(-2 * len(keys) * rows * cols // 4096) * 4096
    args = (put(x, "T, D", "D"), put(g_attn, "D", "D"), hbm["q"], hbm["kv"], put(rope, "Dr, Dk", "Dr Dk"),
            put(k_cache, "Hkv, S, Dr", "Hkv S Dr"), put(v_cache, "Hkv, S, Dvi", "Hkv S Dvi"),
            put(np.eye(sz.dk), "Dv, Dvi", "Dv Dvi"),
            hbm["o"], put(g_ffn, "D", "D"), hbm["gate"], hbm["up"], hbm["down"])
    t1 = time.perf_counter()

    @device(chip=1)
    def decode_layer(ctx: Context, x: Hbm, g_attn: Hbm, w_q: Hbm, w_kv: Hbm, rope: Hbm, k_cache: Hbm,
                     v_cache: Hbm, eye: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm, w_up: Hbm, w_down: Hbm
                     ) -> dict[str, Hbm]:
        return layer.kernel(ctx, x, g_attn, w_q, w_kv, rope, k_cache, v_cache, eye, w_o, g_ffn, w_gate, w_up, w_down)

    first = len(ctx.schedule.ops)
    # spelled out: the plugin checks each argument
    outs = launch(decode_layer, ctx, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                  args[8], args[9], args[10], args[11], args[12])
    span = ctx.schedule.device_span(first)
    t2 = time.perf_counter()
    launch_peak = peak_mb()  # the setup's and the launch's: the check's own arrays come after

    def read(name: str, text: str, axes: str) -> F64:
        got = np.asarray(outs[name].to_host(m[text], ctx.pdma).numpy(axes=axes), np.float64)
        if keep is not None:
            keep[name] = got
        return got

    def gemv(key: int, rows: int, cols: int, vec: F64, k_tiles: int) -> tuple[F64, F64]:
        want, bound = np.zeros(rows), np.zeros(rows)
        step = max(1, CHECK_ELEMENTS // cols)  # rows of a chunk in float64 at once (each row its own sums)
        for c0, w32 in weights.chunks(key, rows, cols):
            for r0 in range(c0, c0 + w32.shape[0], step):
                w = w32[r0 - c0: r0 - c0 + step].astype(np.float64)
                want[r0:r0 + w.shape[0]] = w @ vec
                bound[r0:r0 + w.shape[0]] = bounds.gemm(vec[None, :], w, k_tiles)[0]
        return want, bound

    errors: dict[str, float] = {}
    x_norm = read("x_norm", "T, D", "D")
    want = x / np.sqrt(np.mean(x**2) + EPS) * g_attn
    errors["rms_norm (attn)"] = check("x_norm", x_norm, want, bounds.rms_norm(want, sz.d))
    kt = layer.q_proj.k_tiles
    q, k_new, v_new = read("q", "T, HQ", "HQ"), read("k_new", "T, HKV", "HKV"), read("v_new", "T, HKV", "HKV")
    for name, key, got in (("q", 0, q), ("k_new", 1, k_new), ("v_new", 2, v_new)):
        errors[name] = check(name, got, *gemv(key, got.shape[0], sz.d, x_norm, kt))
    q_rope, k_rope = read("q_rope", "H, Dr", "H Dr"), read("k_rope", "Hkv, Dr", "Hkv Dr")
    qh, kh = q.reshape(sz.heads, sz.dk), k_new.reshape(sz.kv_heads, sz.dk)
    errors["rope q"] = check("q_rope", q_rope, qh @ rope.T, bounds.gemm(qh, rope, 1))
    errors["rope k"] = check("k_rope", k_rope, kh @ rope.T, bounds.gemm(kh, rope, 1))
    k_cache[:, sz.s - 1], v_cache[:, sz.s - 1] = k_rope, v_new.reshape(sz.kv_heads, sz.dk)
    attn = read("attn", "Hkv, G, Dv", "Hkv G Dv")
    g = sz.heads // sz.kv_heads
    worst = 0.0
    for h in range(sz.kv_heads):
        want_a, bound_a = bounds.attention(q_rope[h * g:(h + 1) * g], k_cache[h], v_cache[h], 1 / math.sqrt(sz.dk))
        worst = max(worst, check(f"attention {h}", attn[h], want_a, bound_a))
    errors["attention"] = worst
    flat = attn.reshape(-1)
    attn_out = read("attn_out", "T, D", "D")
    errors["o_proj"] = check("attn_out", attn_out, *gemv(3, sz.d, hq, flat, layer.o_proj.k_tiles))
    x_attn = read("x_attn", "Dh, Dl", "Dh Dl").reshape(-1)
    errors["residual 1"] = check("x_attn", x_attn, x + attn_out, bounds.add(x + attn_out))
    h_ = read("h", "T, D", "D")
    want = x_attn / np.sqrt(np.mean(x_attn**2) + EPS) * g_ffn
    errors["rms_norm (ffn)"] = check("h", h_, want, bounds.rms_norm(want, sz.d))
    gate = np.concatenate([read(f"gate{c}", "T, Fc", "Fc") for c in range(sz.f_chunks)])
    up = np.concatenate([read(f"up{c}", "T, Fc", "Fc") for c in range(sz.f_chunks)])
    errors["gate"] = check("gate", gate, *gemv(4, sz.f, sz.d, h_, layer.gate_up.k_tiles))
    errors["up"] = check("up", up, *gemv(5, sz.f, sz.d, h_, layer.gate_up.k_tiles))
    act = read("act", "Fk, Fc", "Fk Fc").reshape(-1)
    want = gate / (1 + np.exp(-gate)) * up
    errors["swiglu"] = check("act", act, want, bounds.swiglu(want))
    ffn = read("ffn", "T, D", "D")
    errors["down"] = check("ffn", ffn, *gemv(6, sz.d, sz.f, act, layer.down.k_tiles))
    out = read("out", "Dh, Dl", "Dh Dl").reshape(-1)
    errors["residual 2"] = check("out", out, x_attn + ffn, bounds.add(x_attn + ffn))
    t3 = time.perf_counter()
    per_cycle = bandwidth(ctx.hw, "HBM")  # the one HBM figure: 1,536 B/cycle per chip (visa.hw.paths)
    cache_bytes = 2 * 2 * sz.kv_heads * sz.s * sz.dk
    errors["makespan"] = float(span)
    errors["memory bound"] = (2 * sz.weights + cache_bytes) / per_cycle
    errors["setup s"], errors["launch s"], errors["check s"] = t1 - t0, t2 - t1, t3 - t2
    errors["launch peak MB"], errors["peak MB"] = launch_peak, peak_mb()
    return errors


def peak_mb() -> float:
    """This process's peak resident set size so far, in MiB (:func:`visa.tune.worker.peak_bytes`: Linux's
    ``VmHWM``, its own address space's high-water mark; ``getrusage``'s ``ru_maxrss`` also counts the parent's
    peak in a child process); NaN where there is nothing to read it from."""
    peak = peak_bytes()
    return math.nan if peak is None else peak / 2**20


def full_requested() -> bool:
    """``LLAMA70B_FULL=1`` in the environment or ``--full`` on the command line."""
    return os.environ.get("LLAMA70B_FULL", "") not in ("", "0") or "--full" in sys.argv[1:]


def main() -> None:
    """Run the reduced size (or the full 70B size when asked), check every stage, print errors, cycles, times."""
    size = FULL if full_requested() else REDUCED
    print(f"    size: D = {size.d}, {size.heads} query / {size.kv_heads} KV heads of {size.dk}, F = {size.f}, "
          f"cache S = {size.s}, {size.weights / 1e6:.0f}M weights ({'full 70B' if size is FULL else 'reduced'})")
    result = run(size)
    for name, value in result.items():
        if name == "makespan":
            limit = result["memory bound"]
            print(f"    {'makespan':<18}{int(value):>12} cycles on the device; (weights + KV cache) ÷ HBM "
                  f"bandwidth = {limit:.0f} cycles: memory-roofline utilisation {limit / value:.1%}")
        elif name.endswith(" s"):
            print(f"    {name:<18}{value:>12.1f} s (wall)")
        elif name.endswith("peak MB"):
            when = "setup and launch" if name.startswith("launch") else "with the check"
            print(f"    {name:<18}{value:>12.0f} MiB (peak RSS, VmHWM; {when})")
        elif name != "memory bound":
            print(f"    {name:<18}{value:>12.2e} max |error| (within its derived bound)")


if __name__ == "__main__":
    main()
