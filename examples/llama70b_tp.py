"""The Llama 3 70B decoder layer's decode step (manual "Decode Phase", L8225–8419) tensor-parallel over several
chips with the collectives of "Chip/Cluster Reduce" (L7382–7610; issue 14), composed from :mod:`visa.kernels`.

Megatron-style split over the chip axis ``C`` (n chips, ``@device(chip=n)``), every kernel built with
``chip="C"`` so each chip computes its own shard in the same launch:

1. RMSNorm of x on every chip (x and the gains are replicated: each chip holds a copy);
2. Q, K, V projections split by heads: chip c holds query heads ``[c·h_q/n, (c+1)·h_q/n)`` and their KV heads
   ``[c·h_kv/n, …)`` (rows of w_q, w_k, w_v); RoPE, the KV-cache append (each chip's cache holds its KV heads)
   and attention of those heads stay on the chip;
3. the output projection split by rows of its K (the columns of w_o that multiply the chip's heads): each chip
   holds a partial ``[D]`` sum; an :func:`~visa.kernels.all_reduce` (butterfly: log2 n ChipShuffle DMAs and
   Vector Engine adds, bitwise the same sum on every chip) gives every chip the output; residual;
4. RMSNorm, gate and up projections split by rows of F, SwiGLU of the chip's F/n columns, the down projection
   split by its K (the chip's F/n columns of w_down): a partial sum, AllReduce, residual.

Every chip ends with the same ``[D]`` layer output (checked bitwise), ready for the next layer.

Two layers in one launch (``run(n, layers=2)``, printed by ``main``; issue 27 item 8): the second layer's first
q/k/v weight tile is prefetched by the tensor DMA (``Gemm.prefetch``) right before the first layer's FFN
AllReduce is issued, so it loads while the AllReduce runs; the q/k/v Gemm's slices start at slice 128
(``Gemm(first_slice=128)``) so that its DMAs take another DMA engine than the AllReduce's rows in slices 0–7
(one engine per DMN pair, L2404, L2831).  Measured on 2 chips at the reduced size: 342,808 cycles against 349,976
without the prefetch (3,216 cycles of the prefetch under the AllReduce and residual; the rest of the tile's
6,644-cycle DMA under the layer's last passes); the bits are the same.

By default (``visa run``, ``make run``, the test ``tests/kernels/test_llama70b_tp.py``) the size is reduced
(D = 1024, 16 query heads and 4 KV heads of d_k = 64, F = 4096, cache S = 128), run on 2 and 4 chips, and
compared with the one-chip layer of ``examples/llama70b_decode_layer.py`` run at the same size (its ``run``).
Measured on this machine (``visa run``, about 5 s for all three) under the timing model of issue 22 (per-command
overheads and hand-offs, docs/cost-model.md): the one-chip layer 486,763 cycles, 2 chips 214,382 (2.27×), 4 chips
156,661 (3.11×).  The figures that follow were measured before it: the one-chip layer 412,829 cycles, 2 chips
174,988 (2.36×), 4 chips 126,783 (3.26×) (q, k, v in one Gemm; with q apart: 183,884 and 134,613; before k and v
shared a Gemm: 419,593, 190,648, 141,377).  One
AllReduce of the ``[1024]`` bf16 vector costs 604 cycles on 2 chips (a 569-cycle ChipShuffle DMA of the bf16
partial, a 35-cycle add) and 1,274 on 4 (a second round: a 637-cycle shuffle of the f32 sum, a 33-cycle add), so
the two per layer are under 2% of the makespan; the
speedup stops short of n because each chip's tensor DMA still streams its weight tiles at the DMA cost model's
rate and the per-head attention, norms and SwiGLU passes do not shrink with n (the memory-roofline utilisation
printed by ``main`` is per chip).  (Before the weights were uploaded ahead of the activations, the launch's
first operations waited for later weights still crossing PCIe, and 249,629 / 154,468 cycles were reported.)

Full size (``LLAMA70B_FULL=1 visa run examples/llama70b_tp.py``, or ``python examples/llama70b_tp.py --full``): D =
8192, 64 query / 8 KV heads of 128, F = 28672, a KV cache of 256 positions, on 4 chips (``LLAMA70B_CHIPS=2`` or
``--chips 2``: on 2; one chip count per process, as ``visa run`` keeps every context's device images for its report)
(a chip holds its n-th of the 856M bf16 weights: 214M, 428 MB on 4 chips; 428M, 856 MB on 2). Every chip's weight
shards are generated from a seed in chunks of 1024 rows (all chips' chunk at once, ``[n, 1024, cols]``), written
host → HBM on every chip (each chunk as its K tiles' ``[n, 1024, 512]`` pieces, below) and read as one tensor
through ``HbmTensor.from_addr`` (L821); the check regenerates each chunk, so the host never holds a weight.
Under the timing model of issue 22: 4 chips 769,112 cycles = 3.28× the one-chip layer's 2,526,223, per-chip
memory-bound limit 278,699 cycles at the one HBM figure, 1,536 B/cycle (36.2%); 115 s wall on a loaded machine, 6.13
GB. Measured before it on this machine (2 shared cores), one process per chip count, weights tile-major and stacked
(below): 4 chips (q, k, v in one Gemm) 28 s wall (weights to HBM 15.2 s, launch 9.5 s, check 3.1 s), peak RSS 6.38
GB, makespan 878,224 cycles = 3.66× the one-chip layer's 3,211,847, per-chip memory-bound limit 570,775 cycles
(65.0%; 960,255 with q apart from k, v, before the DMA plan spread 2½ DMNs over five engines); 2 chips 29 s wall
(15.0 s, 10.2 s, 3.5 s), peak RSS 5.24 GB, makespan 1,601,300 cycles = 2.01×, limit 1,141,550 (71.3%) (row-major,
before the DMA fixes of docs/manual-notes.md, "DMA cost vs HBM channels": 2,924,517 and 5,416,660; tile-major, q, k,
v separate: 1,019,525 and 1,762,947). On 2 chips a chip's F/n = 14336 rows of gate and up exceed a
:class:`~visa.kernels.Gemm`'s N of 8192 (and are no multiple of it), so they run in 2 chunks of 7168
(``Size.f_chunks``), as the one-chip example's 4 chunks of 28672.

Departures from the manual, with lines:

- **F = 4096, not 3.5·D**: a :class:`~visa.kernels.Gemm`'s K is at most 512 or a multiple of 512, and the down
  projection's K is F/n; 3584/4 = 896 is neither.  Llama 3 70B's own F = 28672 splits into 14336, 7168 or
  3584 per chip on 2, 4 or 8 chips, all multiples of 512.  And 4 KV heads (the one-chip example's reduced size
  has 2): Megatron splits the KV heads over the chips, so each of 4 chips holds one (70B's 8 split over 8).
- **Replicated activations carry the chip axis**: x, the gains, the RoPE rotation and the identity of the Vᵀ
  GEMM are ``[C, …]`` host arrays of n equal copies (``HbmTensor(…, m["C"], …)``), so every tensor of the layer
  has the one Chip level ``m["C"]``.
- **AllReduce in f32 of the bf16 partials**: each chip's partial leaves its GEMM rounded to bf16 (the GEMM's
  own output); the butterfly adds them in f32 and rounds the sum to bf16 once (``bounds.all_reduce``).  The
  shuffles are DM → DM DMAs over the chip-to-chip path (L2386–2389), not the HBM → HBM of L7607.
- **Weight shards stored K-tile-major**, as in the one-chip example (its docstring has the lines: Example 4's
  bank conflicts, L2682–2716, address map L2960–2977, queue and FR-FCFS L2981, L2990–2993): a chip's ``[rows, K]``
  shard is ``m["K / 512, rows…, K % 512"]`` (K > 512), every chip's rows ``[r0, r0 + 1024)`` of K tile ``kt`` at
  ``2·512·(kt·rows + r0)`` from the shard's base, the Gemms built with ``w_tiles=True`` and gate/up chunk ``c``
  the view ``m["D / 512, Fc # F/n, D % 512"]``; each streamed tile is one contiguous run.  Results are bit for bit
  the row-major layout's (``run(n, tiles=False)``, ``tests/kernels/test_llama70b_tp.py``).
- **q, k, v shards stacked**: each chip's w_q, w_k, w_v shards are one ``[w_q; w_k; w_v]`` stack ``w_qkv``
  (tile-major: a K tile's rows of all three adjacent), and one :class:`Gemm` contracts it whenever it fits one
  (at most 8192 rows: always here); Q, K_new, V_new are tile views of the result.  A tile of the stack spreads
  over the engines of the DMNs its slices fill (32 slices of 32 output columns per DMN, L2404; 128 B/cycle each,
  L2603): on 2 chips at full size 5120 rows, five DMNs; on 4 chips 2560 rows, 2½ DMNs on five engines of 16
  slices (docs/manual-notes.md, "DMA over partial DMN pairs": before that DMA plan, one engine read the 2½ DMNs
  one at a time and the fused layer measured 1,080,573 cycles, so q ran apart).  ``run(…, fuse_q=False)`` keeps
  q one Gemm over its rows of the stack and k, v one over theirs (``TpLayer.rows_of``), as the one-chip
  example's ``w_kv``.  Each output column is its own sums: the bits are those of three Gemms.
- As in the one-chip example: the elementwise kernels read ``[D]`` / ``[F/n]`` as rows of 128, the caches are
  ``[h_kv, S, d_k]`` with Vᵀ made by ``I · Vᵀ`` per step, the RoPE rotation of ``w_rope[s]`` is an input, and
  the embedding gather, final norm, LM head and sampling are not part of the layer (L8202–8224).

Check: every stage on every chip against numpy (float64) applied to that stage's inputs as the device produced
them, within the bound of :mod:`visa.kernels.bounds` (the AllReduce's f32 adds add γ_{log2 n}·Σ|partials|, then
one bf16 rounding).  Cycles: first to last device operation of the launch; the memory-bound limit per chip is
(its weights + its KV cache) ÷ the HBM bandwidth (each chip reads its own HBM; 1,536 B/cycle, L2980).
"""

from __future__ import annotations

import importlib.util
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.hw import bandwidth
from visa.kernels import Arena, Attention, Gemm, Rows, all_reduce, bounds
from visa.kernels.cache import rope_matrix
from visa.kernels.collectives import rounds
from visa.kernels.gemm import N_TILE, Prefetch

Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
EPS = 1e-5
CHIPS = (2, 4)
CHUNK_ROWS = 1024  # rows of every chip's weight shard per host → HBM DMA
K_TILE = 512  # columns of a weight's K tile (visa.kernels.Gemm's; 4 × 512 bf16 = one TRF half, L4151–4154)
WEIGHT_BASE = 4 << 30  # HBM byte address of the first weight on every chip (the arena's outputs start at 1 GiB)


@dataclass(frozen=True)
class Size:
    """The layer's dimensions: model width, heads, head width, FFN width, cache length."""

    d: int
    heads: int
    kv_heads: int
    dk: int
    f: int
    s: int

    def axes(self, n: int) -> AxisSet:
        """The axes of one chip's shard (local heads Hl, Hkvl; F/n columns Fl) and the chip axis C."""
        hl, hkvl, fl = self.heads // n, self.kv_heads // n, self.f // n
        fk = self.f_chunks(n)
        return AxisSet(C=n, T=1, D=self.d, HQl=hl * self.dk, HKVl=hkvl * self.dk,
                       HQKVl=(hl + 2 * hkvl) * self.dk, HKV2l=2 * hkvl * self.dk, HOl=hl * self.dk, Hl=hl,
                       Hkvl=hkvl, G=self.heads // self.kv_heads, Dk=self.dk, Dr=self.dk, Dv=self.dk, Dvi=self.dk,
                       S=self.s, Fl=fl, Fk=fk, Fc=fl // fk, Dh=self.d // 128, Dl=128, Fh=fl // fk // 128, Fw=128)

    def f_chunks(self, n: int) -> int:
        """Chunks of a chip's F/n rows of w_gate and w_up: the fewest that divide F/n into multiples of 128 of at
        most 8192 rows (a :class:`Gemm`'s N is at most 8192 or a multiple of it): 1, except 2 at 70B on 2 chips
        (14336 = 2 × 7168)."""
        fl = self.f // n
        return next(k for k in range(1, fl + 1) if fl % (128 * k) == 0 and fl // k <= 8192)

    @property
    def weights(self) -> int:
        """Weights of the layer's projections."""
        q, kv = self.heads * self.dk, self.kv_heads * self.dk
        return self.d * (q + 2 * kv) + q * self.d + 3 * self.f * self.d


SIZE = Size(d=1024, heads=16, kv_heads=4, dk=64, f=4096, s=128)
FULL = Size(d=8192, heads=64, kv_heads=8, dk=128, f=28672, s=256)
ONE_CHIP_FULL = 2_526_223  # examples/llama70b_decode_layer.py --full, its makespan (README; issue 22 timing model)
FULL_CHIPS = 4  # at full size one chip count per process (LLAMA70B_CHIPS=2 or --chips 2 for the other)


class TpLayer:
    """The kernels of one layer's shard on each of ``n`` chips (every kernel built with ``chip="C"``)."""

    def __init__(self, size: Size, n: int, tiles: bool = True, fuse_q: bool | None = None,
                 qkv_first_slice: int = 0) -> None:
        self.size, self.n, self.tiles = size, n, tiles
        self.ax = ax = size.axes(n)
        self.m = ax.m
        self.rows_d = Rows(ax, "T", "D", chip="C")
        self.rows_dd = Rows(ax, "Dh", "Dl", chip="C")
        self.rows_f = Rows(ax, "Fh", "Fw", chip="C")  # SwiGLU on a chunk's [Fc/128, 128] view
        # the weight shards are stored K-tile-major (``tiles``, the module docstring): each streamed tile contiguous
        # w_qkv = [w_q; w_k; w_v] of the chip's heads in one stack; one Gemm over it when it fits one (N ≤ N_TILE;
        # its tiles spread over the engines of the DMNs they fill, L2547), else one over q's rows, one over k's, v's
        self.fuse_q = ax.size("HQKVl") <= N_TILE if fuse_q is None else fuse_q
        # (qkv_first_slice: its slices away from the AllReduce's rows, so the next layer's prefetch of its first tile
        # runs on another DMA engine than the AllReduce's DMAs, L2404, L2831)
        self.qkv_proj = Gemm(ax, "T", "HQKVl", "D", chip="C", w_tiles=tiles, first_slice=qkv_first_slice)
        self.q_proj = Gemm(ax, "T", "HQl", "D", chip="C", w_tiles=tiles)
        self.kv_proj = Gemm(ax, "T", "HKV2l", "D", chip="C", w_tiles=tiles)
        self.rope_q, self.rope_k = Gemm(ax, "Hl", "Dr", "Dk", chip="C"), Gemm(ax, "Hkvl", "Dr", "Dk", chip="C")
        self.attention = Attention(ax, q="G", s="S", dk="Dr", dv="Dv", chip="C")
        self.transpose = Gemm(ax, "Dv", "S", "Dvi", chip="C")
        self.o_proj = Gemm(ax, "T", "D", "HOl", chip="C", w_tiles=tiles)
        self.gate_up = Gemm(ax, "T", "Fc", "D", chip="C", w_tiles=tiles)
        self.down = Gemm(ax, "T", "D", "Fl", chip="C", w_tiles=tiles)
        self.arena = Arena()

    def rows_of(self, w_qkv: Hbm, name: str, first: int) -> Any:
        """Rows ``[first, first + |name|)`` of the ``[w_q; w_k; w_v]`` stack as a view over axis ``name``: in the
        K-tile-major stack a K tile's rows are adjacent and the next K tile is the stack's rows on (``# HQKVl``)."""
        m, rows, total = self.m, self.ax.size(name), self.ax.size("HQKVl")
        if self.tiles and self.size.d > K_TILE:
            tile = m[f"D / {K_TILE}, HQKVl = {rows} # {total}, D % {K_TILE}"]
            return w_qkv.view().tile(m["HQKVl"], rows, tile, first).relabel(
                m[f"D / {K_TILE}, {name} # {total}, D % {K_TILE}"])
        return w_qkv.view().tile(m["HQKVl"], rows, m[f"HQKVl = {rows}, D"], first).relabel(m[f"{name}, D"])

    def reduce(self, ctx: Context, arena: Arena, partial: Hbm) -> Any:
        """AllReduce (butterfly) of the chips' partial ``[D]`` sums, as ``[D/128, 128]`` rows in DM (bf16)."""
        rdd = self.rows_dd
        return all_reduce(ctx, self.ax, arena, rdd.load(ctx, arena, partial.view().relabel(self.m["Dh, Dl"])))

    def kernel(self, ctx: Context, x: Hbm, g_attn: Hbm, w_qkv: Hbm, rope: Hbm, k_cache: Hbm,
               v_cache: Hbm, eye: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm, w_up: Hbm, w_down: Hbm, *,
               before_reduce: Callable[[Context], None] | None = None,
               prefetched: Prefetch | None = None) -> dict[str, Hbm]:
        """The decode step on every chip (the module docstring's stages 1–4); returns every stage's output.

        ``before_reduce`` runs right before the FFN's AllReduce is issued (a later layer's weight prefetch, so that
        its DMA overlaps the AllReduce); ``prefetched`` is this layer's first q/k/v weight tile, moved ahead."""
        m, sz = self.m, self.size
        hl, hkvl, g = sz.heads // self.n, sz.kv_heads // self.n, sz.heads // sz.kv_heads
        with self.arena.scratch() as arena:
            rd, rdd, rf = self.rows_d, self.rows_dd, self.rows_f
            x_norm = rd.store(ctx, arena, rd.rms_norm_streamed(ctx, arena, rd.load(ctx, arena, x),
                                                               rd.load(ctx, arena, g_attn), eps=EPS))
            # one GEMM over the chip's q, k and v rows (more slices per tile than each alone: more DMNs, L2603);
            # Q, K_new, V_new are its three row ranges (each output column its own sums: the bits of three GEMMs)
            hq_, hkv_ = hl * sz.dk, hkvl * sz.dk
            if self.fuse_q:
                qkv = self.qkv_proj(ctx, arena, x_norm, w_qkv, prefetched=prefetched)
                q, k_new, v_new = (qkv.view().tile(m["HQKVl"], rows, m[f"T, HQKVl = {rows}"], at0)
                                   .relabel(m[f"T, {name}"]).as_tensor()
                                   for rows, at0, name in ((hq_, 0, "HQl"), (hkv_, hq_, "HKVl"),
                                                           (hkv_, hq_ + hkv_, "HKVl")))
            else:
                q = self.q_proj(ctx, arena, x_norm, self.rows_of(w_qkv, "HQl", 0))
                kv = self.kv_proj(ctx, arena, x_norm, self.rows_of(w_qkv, "HKV2l", hq_))
                k_new, v_new = (kv.view().tile(m["HKV2l"], hkv_, m[f"T, HKV2l = {hkv_}"], i * hkv_)
                                .relabel(m["T, HKVl"]).as_tensor() for i in range(2))
            q_rope = self.rope_q(ctx, arena, q.view().relabel(m["Hl, Dk"]), rope)
            k_rope = self.rope_k(ctx, arena, k_new.view().relabel(m["Hkvl, Dk"]), rope)
            at = sz.s - 1  # the KV-cache append at s − 1 (L8286–8297), each chip its own heads
            k_rope.view().relabel(m["Hkvl, S = 1, Dr"]).to_hbm_view(
                k_cache.view().tile(m["S"], 1, m[f"Hkvl, S = 1 # {sz.s}, Dr"], at), ctx.tdma)
            v_new.view().relabel(m["Hkvl, S = 1, Dvi"]).to_hbm_view(
                v_cache.view().tile(m["S"], 1, m[f"Hkvl, S = 1 # {sz.s}, Dvi"], at), ctx.tdma)
            attn = HbmTensor(ctx, bf16, m["C"], m["Hkvl, G, Dv"], arena.take_hbm(2 * hl * sz.dk),
                             call="llama70b_tp.attn")
            for h in range(hkvl):
                qh = q_rope.view().tile(m["Hl"], g, m[f"Hl = {g}, Dr"], h * g)
                kh = k_cache.view().tile(m["Hkvl"], 1, m["S, Dr"], h)
                vh = self.transpose(ctx, arena, eye, v_cache.view().tile(m["Hkvl"], 1, m["S, Dvi"], h))
                a = self.attention(ctx, arena, qh.relabel(m["G, Dr"]), kh, vh)
                a.view().to_hbm_view(attn.view().tile(m["Hkvl"], 1, m["G, Dv"], h), ctx.tdma)
            o_part = self.o_proj(ctx, arena, attn.view().relabel(m["T, HOl"]), w_o)  # this chip's partial sum
            o_sum = self.reduce(ctx, arena, o_part)
            x_attn = rdd.store(ctx, arena, rdd.add(ctx, arena, rdd.load(ctx, arena, x.view().relabel(m["Dh, Dl"])),
                                                   o_sum))
            h_ = rd.store(ctx, arena, rd.rms_norm_streamed(ctx, arena, rd.load(ctx, arena, x_attn.view().relabel(
                m["T, D"])), rd.load(ctx, arena, g_ffn), eps=EPS))
            fk = self.ax.size("Fk")
            act = HbmTensor(ctx, bf16, m["C"], m["Fk, Fc"], arena.take_hbm(2 * sz.f // self.n),
                            call="llama70b_tp.act")
            chunks: dict[str, Hbm] = {}
            # chunk c: rows [c·Fc, (c+1)·Fc) of the chip's F/n; stored tile-major, its rows of one K tile are adjacent
            # and the next K tile's are F/n rows on (the padding ``Fc # F/n``)
            fl = sz.f // self.n
            chunk = m[f"D / {K_TILE}, Fc # {fl}, D % {K_TILE}"] if self.tiles and sz.d > K_TILE else m["Fc, D"]
            for c in range(fk):  # the chip's F/n rows of gate and up in Fk chunks of Fc rows (tile views)
                gate = self.gate_up(ctx, arena, h_, w_gate.view().tile(m["Fk"], 1, chunk, c))
                up = self.gate_up(ctx, arena, h_, w_up.view().tile(m["Fk"], 1, chunk, c))
                a_c = rf.store(ctx, arena, rf.swiglu(ctx, arena,
                                                     rf.load(ctx, arena, gate.view().relabel(m["Fh, Fw"])),
                                                     rf.load(ctx, arena, up.view().relabel(m["Fh, Fw"]))))
                a_c.view().relabel(m["Fc"]).to_hbm_view(act.view().tile(m["Fk"], 1, m["Fc"], c), ctx.tdma)
                chunks.update({f"gate{c}": gate, f"up{c}": up})
            f_part = self.down(ctx, arena, act.view().relabel(m["T, Fl"]), w_down)
            if before_reduce is not None:
                before_reduce(ctx)
            f_sum = self.reduce(ctx, arena, f_part)
            y = rdd.store(ctx, arena, rdd.add(ctx, arena, rdd.load(ctx, arena, x_attn), f_sum))
            return dict(x_norm=x_norm, q=q, k_new=k_new, v_new=v_new, q_rope=q_rope, k_rope=k_rope, attn=attn,
                        o_part=o_part, o_sum=rdd.store(ctx, arena, o_sum), x_attn=x_attn, h=h_, **chunks, act=act,
                        f_part=f_part, f_sum=rdd.store(ctx, arena, f_sum), out=y)




def to_bf16(array: npt.ArrayLike) -> F64:
    """``array`` rounded to bf16 (round to nearest even), as float64."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), np.float64)


class Weights:
    """Random weight shards (uniform, variance 1/K of the whole weight: unit-variance sums), generated from a seed
    in chunks of ``CHUNK_ROWS`` rows of every chip's shard at once, so neither the upload nor the host check ever
    holds a whole weight (at full size a chip's w_gate shard alone is 7168 × 8192)."""

    def __init__(self, seed: int, n: int) -> None:
        self.seed, self.n = seed, n

    def chunks(self, key: int, rows: int, cols: int, k: int) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """(first row, ``[n, rows', cols]`` bf16 values as float32): rows ``[r0, r0 + rows')`` of each chip's
        ``[rows, cols]`` shard of weight ``key``, whose whole contraction length is ``k``."""
        scale = np.float32(math.sqrt(12 / k))  # uniform on ±√(3/k): variance 1/k
        for r0 in range(0, rows, CHUNK_ROWS):
            r = min(CHUNK_ROWS, rows - r0)
            w = np.random.default_rng((self.seed, key, r0)).random((self.n, r, cols), dtype=np.float32)
            w -= np.float32(0.5)
            w *= scale
            yield r0, w.astype(ml_dtypes.bfloat16).astype(np.float32)

    def upload(self, ctx: Context, chip: Any, keys: tuple[tuple[int, int], ...], cols: int, k: int, element: Any,
               address: int, tiles: bool = True) -> Hbm:
        """Write every chip's ``[rows, cols]`` shard of weight ``key`` to its HBM at ``address``, chunk by chunk
        (host → HBM DMAs over ``m["C"]``), and return one handle over the shards (``HbmTensor.from_addr``, L821)
        laid out as ``element`` on every chip.  ``keys`` lists ``(key, rows)`` of the weights stacked by rows
        (``[w_q; w_k; w_v]``), each ``[rows, cols]`` per chip.

        ``tiles`` (with ``cols > 512``): K-tile-major, ``element`` being ``m["K / 512, rows…, K % 512"]``: every
        chip's stacked rows ``[r0, r0 + r)`` of K tile ``kt`` (a contiguous ``[n, r, 512]`` piece of a chunk) at
        ``address + 2·512·(kt·total + r0)``, ``total`` the stack's rows, so each tile a :class:`Gemm` streams is one
        contiguous run.  Otherwise row-major: the chunk at ``address + 2·cols·r0``."""
        total = sum(rows for _, rows in keys)
        first = 0  # the first row of the current weight in the stack
        for key, rows in keys:
            for c0, chunk in self.chunks(key, rows, cols, k):
                r, r0 = chunk.shape[1], first + c0
                if tiles and cols > K_TILE:
                    pieces = chunk.reshape(self.n, r, cols // K_TILE, K_TILE).transpose(2, 0, 1, 3)
                    for kt, piece in enumerate(pieces):
                        pax = AxisSet(C=self.n, R=r, K=K_TILE)
                        host = HostTensor.from_numpy(np.ascontiguousarray(piece), bf16, pax.m["C, R, K"],
                                                     axes="C R K")
                        host.to_hbm(pax.m["C"], pax.m["R, K"], ctx.pdma, address + 2 * K_TILE * (kt * total + r0))
                    continue
                cax = AxisSet(C=self.n, R=r, K=cols)
                host = HostTensor.from_numpy(chunk, bf16, cax.m["C, R, K"], axes="C R K")
                host.to_hbm(cax.m["C"], cax.m["R, K"], ctx.pdma, address + 2 * r0 * cols)
            first += rows
        out: Hbm = HbmTensor.from_addr(ctx, bf16, chip, element, address)
        return out

    def gemv(self, key: int, rows: int, cols: int, k: int, vec: F64, k_tiles: int) -> tuple[F64, F64]:
        """Every chip's shard of weight ``key`` times its ``vec[c]`` in float64, and the Gemm's bound:
        ``[n, rows]`` each, regenerated chunk by chunk."""
        want, bound = np.zeros((self.n, rows)), np.zeros((self.n, rows))
        for r0, chunk in self.chunks(key, rows, cols, k):
            for c in range(self.n):
                w = chunk[c].astype(np.float64)
                want[c, r0:r0 + w.shape[0]] = w @ vec[c]
                bound[c, r0:r0 + w.shape[0]] = bounds.gemm(vec[c][None, :], w, k_tiles)[0]
        return want, bound




def check(name: str, got: F64, want: F64, bound: F64) -> float:
    """Assert ``|got − want| ≤ bound`` elementwise; return the largest error."""
    err = np.abs(got - want)
    assert np.all(err <= bound), (name, float(np.max(err - bound)))
    return float(np.max(err))


def tile_major(text: str, k: str, cols: int) -> str:
    """The K-tile-major layout of a ``[rows, K]`` shard whose row-major layout is ``text`` (K the last axis ``k``
    of ``cols`` columns): ``"HQl, D"`` → ``"D / 512, HQl, D % 512"``; a K of at most 512 is one tile (unchanged)."""
    return f"{k} / {K_TILE}, {text.rsplit(',', 1)[0]}, {k} % {K_TILE}" if cols > K_TILE else text


def run(n: int, size: Size = SIZE, seed: int = 8, tiles: bool = True,
        keep: dict[str, F64] | None = None, fuse_q: bool | None = None, layers: int = 1,
        overlap: bool = True) -> dict[str, float]:
    """Run the layer on ``n`` chips on random weights, check every stage on every chip against numpy; return
    each stage's largest error, the launch's cycles and the per-chip memory-bound limit.

    ``tiles``: the weight shards stored K-tile-major (the default; ``False``: row-major, the layout before).
    ``keep``, when given, receives every stage's device output (to compare two layouts bit for bit).  ``fuse_q``
    forces q into the k/v Gemm (``True``) or out of it (``False``); default: when the stack fits one Gemm.

    ``layers=2`` runs a second layer on the first's output in the same launch (the same weights: a schedule
    study), its first q/k/v weight tile prefetched while the first layer's FFN AllReduce runs (``overlap``;
    issue 27 item 8): the first layer is checked stage by stage as before, the second's output is kept
    (``keep["out2"]``), and the result reports the prefetch's overlap with the AllReduce in cycles."""
    t0 = time.perf_counter()
    layer = TpLayer(size, n, tiles, fuse_q, 128 if layers == 2 else 0)
    m, sz = layer.m, size
    rng = np.random.default_rng(seed)
    weights = Weights(seed, n)
    ctx = Context.acquire()
    addr = iter(range(0, 1 << 30, 1 << 24))  # the small inputs, below the arena's 1 GiB
    hl, hkvl, fl, dk = sz.heads // n, sz.kv_heads // n, sz.f // n, sz.dk

    def put(values: F64, text: str, axes: str) -> Hbm:
        """Chip c's shard is ``values[c]`` (a ``[C, …]`` array), laid out ``m[text]`` in its HBM."""
        kept = [a for a in f"C {axes}".split() if layer.ax.size(a) > 1]  # a size-1 axis is no logical axis
        flat = np.asarray(values, np.float32).reshape([layer.ax.size(a) for a in kept])
        host = HostTensor.from_numpy(flat, bf16, m[f"C, {text}"], axes=" ".join(kept))
        return host.to_hbm(m["C"], m[text], ctx.pdma, next(addr))

    def rep(values: F64) -> F64:
        return np.broadcast_to(values, (n, *np.shape(values)))

    x = to_bf16(rng.standard_normal(sz.d))
    g_attn, g_ffn = to_bf16(1 + 0.1 * rng.standard_normal(sz.d)), to_bf16(1 + 0.1 * rng.standard_normal(sz.d))
    rope = to_bf16(rope_matrix(sz.s - 1, dk))
    k_cache = to_bf16(0.5 * rng.standard_normal((sz.kv_heads, sz.s, dk)))
    v_cache = to_bf16(rng.standard_normal((sz.kv_heads, sz.s, dk)))
    hq = sz.heads * dk
    # each chip's shard: Q, K, V, gate, up by rows (its heads, its F/n rows); O, down by columns (K = its heads'
    # columns, its F/n columns); (rows, cols, the whole weight's K, layout)
    shapes = {"q": (hl * dk, sz.d, sz.d, "HQl, D"), "k": (hkvl * dk, sz.d, sz.d, "HKVl, D"),
              "v": (hkvl * dk, sz.d, sz.d, "HKVl, D"), "o": (sz.d, hl * dk, hq, "D, HOl"),
              "gate": (fl, sz.d, sz.d, "Fk, Fc, D"), "up": (fl, sz.d, sz.d, "Fk, Fc, D"),
              "down": (sz.d, fl, sz.f, "D, Fl")}
    keys = {name: key for key, name in enumerate(shapes)}
    # in HBM q, k and v are one stack [w_q; w_k; w_v] per chip (one Gemm); (its weights, its layout)
    stacks = {"qkv": (("q", "k", "v"), "HQKVl, D"), "o": (("o",), "D, HOl"), "gate": (("gate",), "Fk, Fc, D"),
              "up": (("up",), "Fk, Fc, D"), "down": (("down",), "D, Fl")}
    base, hbm = WEIGHT_BASE, {}
    for name, (parts, text) in stacks.items():
        _, cols, k, _ = shapes[parts[0]]
        rows = sum(shapes[p][0] for p in parts)
        layout = tile_major(text, text.rsplit(", ", 1)[1], cols) if tiles else text
        hbm[name] = weights.upload(ctx, m["C"], tuple((keys[p], shapes[p][0]) for p in parts), cols, k, m[layout],
                                   base, tiles)
        base += -(-2 * rows * cols // 4096) * 4096
    args = (put(rep(x[None]), "T, D", "T D"), put(rep(g_attn), "D", "D"), hbm["qkv"],
            put(rep(rope), "Dr, Dk", "Dr Dk"), put(k_cache.reshape(n, hkvl, sz.s, dk), "Hkvl, S, Dr", "Hkvl S Dr"),
            put(v_cache.reshape(n, hkvl, sz.s, dk), "Hkvl, S, Dvi", "Hkvl S Dvi"),
            put(rep(np.eye(dk)), "Dv, Dvi", "Dv Dvi"), hbm["o"], put(rep(g_ffn), "D", "D"), hbm["gate"], hbm["up"],
            hbm["down"])
    t1 = time.perf_counter()

    seen: dict[str, Any] = {}

    @device(chip=n)
    def decode_layer_tp(ctx: Context, x: Hbm, g_attn: Hbm, w_qkv: Hbm, rope: Hbm, k_cache: Hbm,
                        v_cache: Hbm, eye: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm, w_up: Hbm, w_down: Hbm
                        ) -> dict[str, Hbm]:
        rest = (rope, k_cache, v_cache, eye, w_o, g_ffn, w_gate, w_up, w_down)
        if layers == 1:
            return layer.kernel(ctx, x, g_attn, w_qkv, *rest)
        slots = layer.qkv_proj.prefetch_slots(layer.arena)  # outside every layer's scratch: the tile survives

        def ahead(c: Context) -> None:  # the second layer's first q/k/v tile, issued before the AllReduce
            seen["prefetch"] = layer.qkv_proj.prefetch(c, w_qkv, slots)
            seen["prefetch_op"] = c.schedule.ops[-1]

        one = layer.kernel(ctx, x, g_attn, w_qkv, *rest, before_reduce=ahead if overlap else None)
        seen["first_end"] = len(ctx.schedule.ops)
        x2 = one["out"].relabel(Element=m["T, D"])  # the layer output, [D/128, 128] rows, read as [T, D]
        two = layer.kernel(ctx, x2, g_attn, w_qkv, *rest, prefetched=seen.get("prefetch"))
        return {**one, "out2": two["out"]}

    first = len(ctx.schedule.ops)
    outs = launch(decode_layer_tp, ctx, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                  args[8], args[9], args[10], args[11])
    span = ctx.schedule.device_span(first)
    t2 = time.perf_counter()

    def read(name: str, text: str, axes: str) -> F64:
        """Chip c's ``[axes]`` output as ``[C, axes]`` (size-1 axes restored)."""
        names = f"C {axes}".split()
        kept = " ".join(a for a in names if layer.ax.size(a) > 1)
        got = np.asarray(outs[name].logical(axes=kept), np.float64).reshape([layer.ax.size(a) for a in names])
        if keep is not None:
            keep[name] = got
        return got

    def gemv(name: str, vec: F64, k_tiles: int) -> Any:
        """Chip c's (want, bound) of weight ``name``'s shard times ``vec[c]``."""
        rows, cols, k, _ = shapes[name]
        want, bound = weights.gemv(keys[name], rows, cols, k, vec, k_tiles)
        return lambda c: (want[c], bound[c])

    err: dict[str, float] = {}

    def each(name: str, got: F64, fn: Any) -> None:
        err[name] = max(check(f"{name} chip {c}", got[c], *fn(c)) for c in range(n))

    x_norm = read("x_norm", "T, D", "T D")[:, 0]
    want = x / np.sqrt(np.mean(x**2) + EPS) * g_attn
    each("rms_norm (attn)", x_norm, lambda c: (want, bounds.rms_norm(want, sz.d)))
    kt = layer.q_proj.k_tiles
    q, k_new = read("q", "T, HQl", "T HQl")[:, 0], read("k_new", "T, HKVl", "T HKVl")[:, 0]
    v_new = read("v_new", "T, HKVl", "T HKVl")[:, 0]
    each("q", q, gemv("q", x_norm, kt))
    each("k_new", k_new, gemv("k", x_norm, kt))
    each("v_new", v_new, gemv("v", x_norm, kt))
    q_rope, k_rope = read("q_rope", "Hl, Dr", "Hl Dr"), read("k_rope", "Hkvl, Dr", "Hkvl Dr")
    qh, kh = q.reshape(n, hl, dk), k_new.reshape(n, hkvl, dk)
    each("rope q", q_rope, lambda c: (qh[c] @ rope.T, bounds.gemm(qh[c], rope, 1)))
    each("rope k", k_rope, lambda c: (kh[c] @ rope.T, bounds.gemm(kh[c], rope, 1)))
    k_cache[:, sz.s - 1], v_cache[:, sz.s - 1] = k_rope.reshape(-1, dk), v_new.reshape(-1, dk)
    attn = read("attn", "Hkvl, G, Dv", "Hkvl G Dv")
    g = sz.heads // sz.kv_heads
    worst = 0.0
    for c in range(n):
        for h in range(hkvl):
            hq = c * hl + h * g
            want_a, bound_a = bounds.attention(q_rope[c, h * g:(h + 1) * g], k_cache[c * hkvl + h],
                                               v_cache[c * hkvl + h], 1 / math.sqrt(dk))
            worst = max(worst, check(f"attention chip {c} head {hq // g}", attn[c, h], want_a, bound_a))
    err["attention"] = worst
    depth = rounds(n)
    flat = attn.reshape(n, -1)
    o_part = read("o_part", "T, D", "T D")[:, 0]
    each("o_proj partial", o_part, gemv("o", flat, layer.o_proj.k_tiles))
    o_sum = read("o_sum", "Dh, Dl", "Dh Dl").reshape(n, -1)
    each("all_reduce (attn)", o_sum, lambda c: bounds.all_reduce(o_part, depth))
    x_attn = read("x_attn", "Dh, Dl", "Dh Dl").reshape(n, -1)
    each("residual 1", x_attn, lambda c: (x + o_sum[c], bounds.add(x + o_sum[c])))
    h_ = read("h", "T, D", "T D")[:, 0]
    each("rms_norm (ffn)", h_, lambda c: (w := x_attn[c] / np.sqrt(np.mean(x_attn[c]**2) + EPS) * g_ffn,
                                          bounds.rms_norm(w, sz.d)))
    fk = layer.ax.size("Fk")
    gate = np.concatenate([read(f"gate{c}", "T, Fc", "T Fc")[:, 0] for c in range(fk)], axis=1)
    up = np.concatenate([read(f"up{c}", "T, Fc", "T Fc")[:, 0] for c in range(fk)], axis=1)
    each("gate", gate, gemv("gate", h_, layer.gate_up.k_tiles))
    each("up", up, gemv("up", h_, layer.gate_up.k_tiles))
    act = read("act", "Fk, Fc", "Fk Fc").reshape(n, -1)
    each("swiglu", act, lambda c: (w := gate[c] / (1 + np.exp(-gate[c])) * up[c], bounds.swiglu(w)))
    f_part = read("f_part", "T, D", "T D")[:, 0]
    each("down partial", f_part, gemv("down", act, layer.down.k_tiles))
    f_sum = read("f_sum", "Dh, Dl", "Dh Dl").reshape(n, -1)
    each("all_reduce (ffn)", f_sum, lambda c: bounds.all_reduce(f_part, depth))
    out = read("out", "Dh, Dl", "Dh Dl").reshape(n, -1)
    each("residual 2", out, lambda c: (x_attn[c] + f_sum[c], bounds.add(x_attn[c] + f_sum[c])))
    assert all(np.array_equal(out[0], out[c]) for c in range(n))  # every chip holds the same layer output
    if layers == 2:
        read("out2", "Dh, Dl", "Dh Dl")  # (kept: compared across overlap on and off)
        pf = seen.get("prefetch_op")
        if pf is not None:  # the prefetch against the AllReduce and residual issued after it, to the layer's end
            after = ctx.schedule.ops[pf.index + 1: seen["first_end"]]
            start, end = min(op.start for op in after), max(op.end for op in after)
            err["prefetch overlap"] = float(max(0, min(pf.end, end) - max(pf.start, start)))
    per_cycle = bandwidth(ctx.hw, "HBM")  # the one HBM figure: 1,536 B/cycle per chip (visa.hw.paths)
    err["makespan"] = float(span)
    err["memory bound"] = (2 * sz.weights + 2 * 2 * sz.kv_heads * sz.s * dk) / n / per_cycle
    err["setup s"], err["launch s"], err["check s"] = t1 - t0, t2 - t1, time.perf_counter() - t2
    err["peak MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return err


def one_chip_makespan(size: Size) -> float:
    """The one-chip layer of ``examples/llama70b_decode_layer.py`` at ``size``: its launch's cycles."""
    path = Path(__file__).resolve().parent / "llama70b_decode_layer.py"
    spec = importlib.util.spec_from_file_location("visa_example_llama70b_one_chip", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    one = mod.Size(d=size.d, heads=size.heads, kv_heads=size.kv_heads, dk=size.dk, f=size.f, f_chunks=4, s=size.s)
    return float(mod.run(one)["makespan"])


def full_requested() -> bool:
    """``LLAMA70B_FULL=1`` in the environment or ``--full`` on the command line."""
    return os.environ.get("LLAMA70B_FULL", "") not in ("", "0") or "--full" in sys.argv[1:]


def full_chips() -> int:
    """The chip count of a full-size run: ``LLAMA70B_CHIPS`` or ``--chips N``, else 4.  One per process: ``visa
    run`` keeps every acquired context (its device images) for its report, so a second full-size run in the same
    process would add its 1.71 GB of weights (and their written-masks) to the first's."""
    args = sys.argv[1:]
    if "--chips" in args and args.index("--chips") + 1 < len(args):
        return int(args[args.index("--chips") + 1])
    return int(os.environ.get("LLAMA70B_CHIPS", FULL_CHIPS))


NOT_ERRORS = ("makespan", "memory bound", "setup s", "launch s", "check s", "peak MB", "prefetch overlap")


def main() -> None:
    """Run the layer on 2 and 4 chips, check every stage, and compare the makespans with one chip (or, asked for
    the full 70B size, run it on :func:`full_chips` chips and print the wall times and peak memory too)."""
    full = full_requested()
    sz = FULL if full else SIZE
    print(f"    size: D = {sz.d}, {sz.heads} query / {sz.kv_heads} KV heads of {sz.dk}, F = {sz.f}, cache S = "
          f"{sz.s}, {sz.weights / 1e6:.1f}M weights ({'full 70B' if full else 'reduced'})")
    one = ONE_CHIP_FULL if full else one_chip_makespan(sz)
    print(f"    1 chip : {int(one):>8} cycles (examples/llama70b_decode_layer.py at this size"
          f"{', as measured in its README section' if full else ''})")
    for n in (full_chips(),) if full else CHIPS:
        result = run(n, sz)
        span, limit = result["makespan"], result["memory bound"]
        worst = max(v for k, v in result.items() if k not in NOT_ERRORS)
        print(f"    {n} chips: {int(span):>8} cycles, {one / span:.2f}× the one-chip layer; per-chip (weights + "
              f"KV cache) ÷ HBM bandwidth = {limit:.0f} cycles: memory-roofline utilisation "
              f"{limit / span:.1%}; {sum(k not in NOT_ERRORS for k in result)} stages within their bounds (max |error| "
              f"{worst:.2e})")
        if full:
            print(f"             wall: weights to HBM {result['setup s']:.1f} s, launch {result['launch s']:.1f} s, "
                  f"check {result['check s']:.1f} s; peak RSS {result['peak MB']:.0f} MB (ru_maxrss)")
    if not full:  # two layers: the second's first q/k/v tile loads during the first's FFN AllReduce
        two = {ov: run(2, sz, layers=2, overlap=ov) for ov in (True, False)}
        print(f"    2 chips, 2 layers: {int(two[True]['makespan']):>8} cycles with the next layer's first weight tile "
              f"prefetched during the AllReduce ({int(two[True]['prefetch overlap'])} cycles of overlap), "
              f"{int(two[False]['makespan'])} without")


if __name__ == "__main__":
    main()
