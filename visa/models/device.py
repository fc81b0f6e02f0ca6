"""A Llama-architecture model on the simulated chip, built from :mod:`visa.kernels` (manual "Llama 3", L7982–8431).

One ``@device`` launch runs ``T`` tokens at positions ``p0 … p0 + T − 1`` through the whole model: the prefill of
a prompt (``T`` = 32 or 64, the prompt padded) or one decode step (``T`` = 1).  Per launch:

1. the embedding rows of the host's token ids are gathered by TensorDMA into DM (``x_0 = gather(input, w_emb)``,
   L7994–8005, L8241), one token per slice;
2. every block (L8006–8190 for prefill, L8241–8364 for decode): RMSNorm; Q, K and V in one :class:`Gemm` over
   the stacked ``[w_q; w_k; w_v]``; RoPE on Q and K; **the KV-cache append** of K_rope and V by in-place DMAs into
   the caches kept in HBM across launches (L8286–8297); attention (below); the output projection and the
   residual; RMSNorm, gate and up in one :class:`Gemm` over ``[w_gate; w_up]``, SwiGLU, down, residual — the
   residual stream stays in DM at two fixed addresses (:meth:`Rows.add` with ``address``); every norm's gain
   comes from one table moved into DM once per launch (:attr:`Weights.gains`), and a decode step's RoPE rotation
   and mask rows are moved once for all blocks; a decode step hands every activation from one kernel to the
   next in DM (:attr:`Step.in_dm`) except the rotated heads, which the K-cache append and the scores read from
   HBM;
3. the final RMSNorm and the LM head, tied to the embedding table (the same HBM tensor, read N-major by the
   :class:`Gemm`: 49,152 rows in six N tiles of 8,192), give the logits of every one of the T positions.

**RoPE** rotates adjacent pairs ``(2i, 2i + 1)`` of each head by ``p · base^(−2i/d)`` (llama.cpp's order of the
Q and K rows of a GGUF file).  Decode: the rotation of the position is gathered by the position index
(``t_rope = gather(position, w_rope)``, L8268) and Q and K — 12 heads of 64, adjacent in the Gemm's output — are
one :class:`Gemm` against it (the manual's einsum, L8270–8284).  Prefill, each token at its own position: ``x ∘ C
+ (x Pᵀ) ∘ S`` with the pair swap P (a :class:`Gemm`, exact) and the rows of the tables C (cos) and S (∓ sin)
gathered by the positions (the prefill example's form).

**Attention, grouped queries** (query head j reads KV head ``j // group``).  Decode: all query heads at once —
the scores of the 9 query heads against the keys of all 3 KV heads (``[9, 3·S]``, one :class:`Gemm`), plus an
additive mask that keeps (0), in row j, only KV head ``j // group``'s block and its positions ``≤ p`` (−inf
elsewhere: probability exactly 0), softmaxed, then one :class:`Gemm` with all the values: the masked blocks add
exact zeros, so each row is its own head's attention.  Prefill: per KV head, its ``group`` query heads' rows of
all T tokens (``3·T`` rows ``(t, g)``, read through a mapping of the Q/K output, no copy) against its keys, plus
the causal mask of ``s ≤ p0 + t`` (L8090–8100).  The mask's rows are gathered and moved into DM once per launch
(:class:`~visa.kernels.Attention`'s ``mask`` given in DM); each block adds them to its scores by one
:meth:`~visa.kernels.Rows.add` pass — the manual's ``scores_masked`` (L8096–8098: ``s + 0 = s`` exactly, ``s + (−inf)
= −inf``), the same bits as masking by a branch log in each of the softmax's three passes (the two Logic ops of
its Branch stage), at one Vector Engine pass per block instead of the Branch and Logic stages in three.  The
caches are ``m["H, S, Dk"]`` (K) and ``m["Dv, H, S"]`` (V transposed: the layout the second GEMM reads);
positions after the last written hold zeros from the host or stale rows of a padded prefill, and are masked.

**On several chips** (``Step(chips=n)``, ``Weights(chips=n)``; :mod:`visa.models.parallel`) the same body runs
in one ``@device(chip=n)`` launch with every kernel built with ``chip="C"``: ``c`` is then one chip's part (its
query and KV heads, its F/n), every chip holds its shard of each block and a copy of the rest, and the partial
sums of the output and down projections go through an :func:`~visa.kernels.all_reduce` before each residual add
(:meth:`Step.reduce`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.context import Context, device
from visa.errors import HardwareLimitError
from visa.kernels import Arena, Attention, Embedding, Gemm, Q4Dequant, Rows, all_reduce
from visa.kernels.cache import rope_matrix
from visa.kernels.gemm import HALF_K, ROW_K
from visa.mapping import AxisSet
from visa.models.loader import LlamaConfig, ModelFileError, Q4Weight
from visa.models.parallel import BLOCK_LAYOUTS, block_shards, chip_config
from visa.tensors.handles import DmTensor, HbmTensor, HostTensor

__all__ = ["STAGES", "Step", "Weights", "decode_table", "prefill_table", "rope_tables", "PREFILL_CHUNKS"]

Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]

#: The stages a probing launch returns per block (``"{b}.{stage}"``), with their logical axes after T.
STAGES = {"n": "D", "qkv": "QKV", "rot": "Q12 Dk", "attn": "HO", "o": "D", "x_attn": "D", "n2": "D", "gu": "F2",
          "act": "F", "down": "D", "out": "D"}

#: The host-built tables on every chip (:meth:`Weights.add_globals`): attribute, layout, type.
TABLES = (("rot", "P, Dr, Dk", dt.bf16), ("cos", "P, QK", dt.bf16), ("sin", "P, QK", dt.bf16),
          ("swap", "Dr, Dk", dt.bf16), ("decode_mask", "P, Hq, HS", dt.bf16), ("prefill_mask", "PG, S", dt.bf16))

#: The layouts of a block's K and V caches.
CACHE_LAYOUTS = ("H, S, Dk", "Dv, H, S")

#: Token counts of a prefill launch: a prompt is padded to the next of these (chunks of the last for longer ones).
PREFILL_CHUNKS = (32, 64)


def decode_table(c: LlamaConfig, length: int) -> F64:
    """The additive decode mask ``[P, heads, kv_heads·S]``: row ``(p, j)`` keeps (0) KV head ``j // group``'s
    positions ``s ≤ p`` and masks (−inf) the rest."""
    p = np.arange(length)[:, None, None, None]
    j = np.arange(c.heads)[None, :, None, None]
    h = np.arange(c.kv_heads)[None, None, :, None]
    s = np.arange(length)[None, None, None, :]
    keep = (h == j // c.group) & (s <= p)
    return np.where(keep, 0.0, -np.inf).reshape(length, c.heads, c.kv_heads * length)


def prefill_table(c: LlamaConfig, length: int) -> F64:
    """The additive causal mask ``[P·group, S]`` of a prefill: row ``(p, g)`` keeps (0) ``s ≤ p`` and masks (−inf)
    the rest (L8090–8096)."""
    keep = np.arange(length)[None, :] <= np.arange(length)[:, None]
    return np.repeat(np.where(keep, 0.0, -np.inf), c.group, axis=0)


def rope_tables(c: LlamaConfig, length: int) -> tuple[F64, F64, F64, F64]:
    """``(rot, cos, sin, swap)``: per position the ``[d, d]`` rotation of adjacent pairs (decode), the ``[d]`` rows
    C and S of ``x ∘ C + (x Pᵀ) ∘ S`` (prefill), and the pair swap P (``(x Pᵀ)[2i] = x[2i+1]``)."""
    d = c.head_dim
    rot = np.stack([rope_matrix(p, d, base=c.rope_base) for p in range(length)])
    inv = c.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    theta = np.arange(length, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.repeat(np.cos(theta), 2, axis=1)
    sin = np.repeat(np.sin(theta), 2, axis=1) * np.tile([-1.0, 1.0], d // 2)
    swap = np.zeros((d, d))
    swap[np.arange(d), np.arange(d) ^ 1] = 1.0
    return rot, cos, sin, swap


#: The parts of :func:`~visa.models.parallel.block_shards` that are norm gains (they go to :attr:`Weights.gains`,
#: one table moved into DM by one tensor DMA a launch, L44–47).
GAIN_PARTS = (0, 3)


def gain_rows(c: LlamaConfig) -> int:
    """Rows of the gains table: each block's attention and FFN norms (rows 2b, 2b + 1), then the final norm (one
    table, one tensor DMA into DM a launch, L44–47)."""
    return 2 * c.blocks + 1


def whole_k_tile(size: int) -> int | None:
    """The K tile of the model's GEMMs over a K of ``size``: all of it when it fits one TRF Row (``4 × K`` bf16 ≤
    8 KiB, L1089), else the largest multiple of 32 up to a Row that divides it (1536 → 768: two K tiles, not three
    of 512), else None (:meth:`Gemm.k_tile_of`'s default).  A tile wider than a TRF half leaves no half to load
    the next tile into meanwhile (L4151–4154): such a GEMM runs without double buffering
    (:meth:`Step.double_buffer`); on SmolLM2's down projection the tile and the split-reduce pass it saves cost
    more cycles than the overlap gave (3.37M → 3.17M cycles per decode step)."""
    if size <= ROW_K:
        return size
    return next((t for t in range(ROW_K, 0, -32) if size % t == 0), None)


def k_tiles(size: int) -> int:
    """K tiles of the model's GEMMs over a K of ``size`` (:func:`whole_k_tile`): what their bounds count."""
    return Gemm.k_tiles_of(size, whole_k_tile(size))


def q_scale(c: LlamaConfig) -> float:
    """The factor folded into w_q: the attention's ``1/√d`` when it is a power of two (d = 64: 2⁻³), so that the
    bf16 weights and every score carry exactly the bits they would with the scaling after the GEMM, and the
    softmax needs no scaling pass; else 1 (the softmax scales)."""
    half = math.log2(c.head_dim) / 2
    return 2.0 ** -half if half == int(half) else 1.0


class Weights:
    """The model's tensors in HBM (bf16), the KV caches and the host-built tables, placed by a bump allocator
    below the kernels' arena (which starts at 1 GiB of a chip's HBM).  On ``chips`` > 1 every tensor is laid out
    over ``m["C"]``: each chip holds its shard (:mod:`visa.models.parallel`) or its copy at the same address;
    :attr:`c` is then one chip's part of the model and :attr:`weight_bytes` one chip's weights."""

    rot: Hbm  # the tables (:data:`TABLES`), placed by :meth:`add_globals`
    cos: Hbm
    sin: Hbm
    swap: Hbm
    decode_mask: Hbm
    prefill_mask: Hbm

    def __init__(self, ctx: Context, c: LlamaConfig, length: int, chips: int = 1) -> None:
        self.ctx, self.full, self.length, self.n = ctx, c, length, chips
        self.c = c = chip_config(c, chips)
        self.ax = AxisSet(V=c.vocab, D=c.dim, QKV=(c.heads + 2 * c.kv_heads) * c.head_dim, HO=c.heads * c.head_dim,
                          F2=2 * c.ffn, F=c.ffn, H=c.kv_heads, S=length, Dk=c.head_dim, Dv=c.head_dim,
                          Dr=c.head_dim, P=length, Hq=c.heads, HS=c.kv_heads * length, PG=length * c.group,
                          Q12=c.heads + c.kv_heads, QK=(c.heads + c.kv_heads) * c.head_dim, G=gain_rows(c),
                          **({"C": chips} if chips > 1 else {}))
        self.chip = self.ax.m["C" if chips > 1 else "1"]
        self.q_scale = q_scale(c)
        self.next = 0
        need = self.fixed_bytes()
        if need > 1 << 30:  # refused before any host array is built (the tables grow as the square of length)
            raise HardwareLimitError(f"the model's weights, caches and tables take {need:,} bytes of HBM per chip, "
                                     "more than the 1 GiB below the kernels' arena", call="visa.models.Weights",
                                     level="HBM", mapping='m["S"]', axis="S", fix="use a shorter KV cache (length=)")
        self.weight_bytes = 0
        #: every RMSNorm's gain, one row each (:func:`gain_rows`): a launch moves them into DM by one DMA
        self.gains: Hbm = HbmTensor.from_addr(ctx, dt.bf16, self.chip, self.ax.m["G, D"],
                                              self._take(self._bytes("G, D"), "G, D"))
        self.blocks: list[dict[str, Any]] = []
        self.caches: list[tuple[Hbm, Hbm]] = []

    def _bytes(self, text: str, dtype: Any = dt.bf16) -> int:
        """Bytes of one chip's tensor laid out ``m[text]``, rounded up to the 4 KiB :meth:`_take` aligns to."""
        size = math.prod(self.ax.size(a.strip()) for a in text.split(","))
        return -(-size * int(dtype.size_bits) // 8 // 4096) * 4096

    def fixed_bytes(self) -> int:
        """HBM bytes per chip of what :meth:`add_globals` and :meth:`add_block` place: the embedding and final
        gain, the tables, and every block's weights and KV caches (each 4 KiB-aligned, as placed)."""
        glob = self._bytes("V, D") + self._bytes("G, D") + sum(self._bytes(t, d) for _, t, d in TABLES)
        block = sum(self._bytes(t) for i, t in enumerate((*BLOCK_LAYOUTS, *CACHE_LAYOUTS)) if i not in GAIN_PARTS)
        return glob + self.full.blocks * block

    def put(self, array: npt.ArrayLike, text: str, dtype: Any = dt.bf16, *, shards: bool = False) -> Hbm:
        """Write ``array`` (its numpy axes in the order of ``text``) to HBM laid out ``m[text]`` (a cache or a
        table; the weights go by :meth:`put_weights`): on every chip, or chip c's ``array[c]`` (``shards``)."""
        m, n = self.ax.m, self.n
        names = [a.strip() for a in text.split(",") if self.ax.size(a.strip()) > 1]  # (an axis of 1 is no axis)
        shape = [self.ax.size(a) for a in names]
        addr = self._take(int(np.prod(shape)) * dtype.size_bits // 8, text)  # (refused before any host array)
        arr = np.asarray(array, np.float32 if dtype is dt.bf16 else None)
        if n > 1:
            arr = arr.reshape([n, *shape]) if shards else np.broadcast_to(arr.reshape(shape), (n, *shape))
            host = HostTensor.from_numpy(arr, dtype, m[f"C, {text}"], axes=" ".join(["C", *names]))
        else:
            host = HostTensor.from_numpy(arr.reshape(shape), dtype, m[text], axes=" ".join(names))
        host.to_hbm(self.chip, m[text], self.ctx.pdma, addr)  # a host DMA; the handle it returns is dropped
        # the handle the kernels use is unregistered (L821): the model's fixed tensors sit below the arena, apart
        # from every temporary, so the live-tensor registry need not scan them at every write
        out: Hbm = HbmTensor.from_addr(self.ctx, dtype, self.chip, m[text], addr)
        return out

    def put_weights(self, parts: Sequence[tuple[npt.ArrayLike, str]]) -> list[Hbm]:
        """Write the bf16 weights ``parts`` (each an array ``[chips, …]``, chip c's shard, its axes after the first
        in the order of its text, laid out ``m[text]``) to consecutive 4 KiB-aligned HBM ranges by one host DMA of
        their bit patterns (as i16: the bytes are the same), and count one chip's in :attr:`weight_bytes`.

        One DMA of one buffer, not one per weight: HBM shares the buffer (copy on write) and keeps one
        written-state over it, all written, so the host holds each weight's bytes once (issue 25's peak memory);
        the values are those :meth:`put` writes (each float rounded to the nearest bf16, ties to even)."""
        n = self.n
        sizes = [np.size(a) // n for a, _ in parts]  # (a part may be a broadcast: nothing is allocated yet)
        spans = [-(-size // 2048) * 2048 for size in sizes]  # i16 elements of each part, 4 KiB-aligned
        addr, at, out = self._take(2 * sum(spans), "weights"), 0, []  # refused before any host buffer exists
        buffer = np.zeros((n, sum(spans)), np.int16)
        for (a, text), size, span in zip(parts, sizes, spans, strict=True):
            buffer[:, at:at + size] = np.asarray(a, np.float32).astype(ml_dtypes.bfloat16).view(np.int16).reshape(n, -1)
            out.append(HbmTensor.from_addr(self.ctx, dt.bf16, self.chip, self.ax.m[text], addr + 2 * at))
            self.weight_bytes += 2 * size
            at += span
        flat = AxisSet(W=buffer.shape[1], **({"C": n} if n > 1 else {})).m
        host: HostTensor[Any, Any] = HostTensor(dt.i16, flat["C, W" if n > 1 else "W"], buffer.reshape(-1),
                                                np.broadcast_to(np.True_, (buffer.size,)), owned=True)
        host.to_hbm(flat["C" if n > 1 else "1"], flat["W"], self.ctx.pdma, addr)
        return out

    def _take(self, nbytes: int, text: str) -> int:
        """The next 4 KiB-aligned HBM address for ``nbytes`` below the kernels' arena; refused (nothing taken)
        past it.  Callers take the address before they build any host array of the bytes."""
        addr = self.next
        end = -(-(addr + nbytes) // 4096) * 4096
        if end > 1 << 30:
            raise HardwareLimitError("the model's weights, caches and tables exceed the 1 GiB of HBM below the "
                                     "kernels' arena", call="visa.models.Weights", level="HBM", mapping=text,
                                     axis="-", fix="use a shorter KV cache (length=)")
        self.next = end
        return addr

    def add_block(self, w: dict[str, npt.NDArray[np.float32]]) -> None:
        """Upload one block's weights (GGUF names without the ``blk.i.`` prefix), stacked as the kernels read
        them (each chip its shard: :func:`~visa.models.parallel.block_shards`), and its zeroed KV caches."""
        names = ("w_qkv", "w_o", "w_gu", "w_down")
        parts = block_shards(w, self.full, self.n, self.q_scale)
        block: dict[str, Any] = dict(zip(names, self.put_weights([p for i, p in enumerate(parts)
                                                                   if i not in GAIN_PARTS]), strict=True))
        self._finish_block(block, parts[GAIN_PARTS[0]][0], parts[GAIN_PARTS[1]][0])

    def _finish_block(self, block: dict[str, Any], g_attn: npt.ArrayLike, g_ffn: npt.ArrayLike) -> None:
        """Add block ``block`` (its matrices uploaded) with its two norms' gains (rows 2b, 2b + 1 of
        :attr:`gains`) and its zeroed KV caches."""
        b = len(self.blocks)
        block.update(g_attn=self.put_gain(2 * b, g_attn), g_ffn=self.put_gain(2 * b + 1, g_ffn))
        self.blocks.append(block)
        c, s = self.c, self.length
        k, v = CACHE_LAYOUTS
        self.caches.append((self.put(np.zeros((c.kv_heads, s, c.head_dim)), k),
                            self.put(np.zeros((c.head_dim, c.kv_heads, s)), v)))

    def add_block_q4(self, norms: dict[str, npt.NDArray[np.float32]], w: dict[str, Q4Weight]) -> None:
        """Upload one block with its matrices kept Q4_1 (``weights="q4_1"``, one chip): each of the four stacked
        matrices of :meth:`add_block` as its i4 nibbles and f16 scales and minimums
        (:meth:`~visa.kernels.Q4Dequant.upload`; one chip: :class:`~visa.models.SmolLM2` refuses more), which a
        launch dequantises on the device before the GEMM;
        the norms' gains and the KV caches as :meth:`add_block`.  The factor :func:`q_scale` folded into w_q goes
        into its rows' f16 scales and minimums (a power of two: exact unless a value leaves f16's normal range,
        which is refused).  A scale or minimum that is NaN or infinite (a corrupt file: its block's 32 weights
        would all be NaN or infinite) is refused, naming the tensor, the row and the block."""
        b = len(self.blocks)
        for name, mat in w.items():
            for part, values in (("scale", mat.d), ("minimum", mat.m)):
                bad = np.argwhere(~np.isfinite(values))
                if len(bad):
                    r, j = (int(i) for i in bad[0])
                    raise ModelFileError(f"blk.{b}.{name}: the f16 {part} of row {r}'s Q4_1 block {j} (columns "
                                         f"{32 * j}–{32 * j + 31}) is {values[r, j]} ({len(bad)} such in the "
                                         "matrix): each weight of the block, d·q + m, would be NaN or infinite",
                                         call="visa.models.Weights", level="host", mapping="-", axis="-",
                                         fix="use an intact model file (its Q4_1 blocks' scales and minimums "
                                             "finite)")
        s = self.q_scale
        q = w["attn_q.weight"]
        if s != 1.0:
            d, mn = (np.asarray(v, np.float32) * np.float32(s) for v in (q.d, q.m))
            q = Q4Weight(q.q, d.astype(np.float16), mn.astype(np.float16))
            if not all(np.array_equal(np.asarray(a, np.float32), np.asarray(b_, np.float32) * np.float32(s))
                       for a, b_ in ((q.d, w["attn_q.weight"].d), (q.m, w["attn_q.weight"].m))):
                raise HardwareLimitError("w_q's scales times the attention's 1/√d leave f16's normal range: the "
                                         "folded factor would round", call="visa.models.Weights", level="HBM",
                                         mapping='m["QKV, D"]', axis="QKV", fix="use weights='bf16'")

        def stack(*parts: Q4Weight) -> Q4Weight:
            return Q4Weight(np.concatenate([p.q for p in parts]), np.concatenate([p.d for p in parts]),
                            np.concatenate([p.m for p in parts]))

        mats = {"w_qkv": stack(q, w["attn_k.weight"], w["attn_v.weight"]), "w_o": w["attn_output.weight"],
                "w_gu": stack(w["ffn_gate.weight"], w["ffn_up.weight"]), "w_down": w["ffn_down.weight"]}
        block: dict[str, Any] = {}
        for name, mat in mats.items():
            n, k = mat.q.shape
            deq = q4_dequant(n, k)
            q_at = self._take(deq.q_bytes, name)
            s_at = self._take(deq.s_bytes, name)
            block[name] = deq.upload(self.ctx, mat, q_at, s_at)
            self.weight_bytes += deq.q_bytes + deq.s_bytes
        self._finish_block(block, norms["attn_norm.weight"][None], norms["ffn_norm.weight"][None])

    def add_globals(self, emb: npt.NDArray[np.float32], g_out: npt.NDArray[np.float32]) -> None:
        """The embedding (also the LM head), the final norm's gain, the RoPE and mask tables (on every chip)."""
        c, s, n = self.c, self.length, self.n
        (self.emb,) = self.put_weights([(np.broadcast_to(emb, (n, *emb.shape)), "V, D")])
        self.g_out = self.put_gain(gain_rows(c) - 1, np.broadcast_to(g_out, (n, *g_out.shape)))
        rot, cos, sin, swap = rope_tables(c, s)
        heads = c.heads + c.kv_heads
        arrays: tuple[npt.NDArray[Any], ...] = (rot, np.tile(cos, (1, heads)), np.tile(sin, (1, heads)), swap,
                                                decode_table(c, s), prefill_table(c, s))
        for (name, text, dtype), array in zip(TABLES, arrays, strict=True):
            setattr(self, name, self.put(array, text, dtype))

    def put_gain(self, row: int, gain: npt.ArrayLike) -> Any:
        """Write a norm's gain ``[chips, D]`` (the same on every chip) as row ``row`` of :attr:`gains` (a host
        DMA over PCIe, ``ctx.pdma``, L44–47, bf16) and count it in :attr:`weight_bytes`; the row's view."""
        m, n, d = self.ax.m, self.n, self.c.dim
        arr = np.asarray(gain, np.float32).reshape(n, d)
        host = (HostTensor.from_numpy(arr, dt.bf16, m["C, D"], axes="C D") if n > 1 else
                HostTensor.from_numpy(arr[0], dt.bf16, m["D"], axes="D"))
        host.to_hbm(self.chip, m["D"], self.ctx.pdma, self.gains.address + 2 * d * row)
        self.weight_bytes += 2 * d
        return self.gains.view().tile(m["G"], 1, m["D"], row)

    def reserve(self, nbytes: int) -> int:
        """An HBM address for ``nbytes`` the host rewrites at every launch (token ids, positions)."""
        return self._take(nbytes, "ids")


def q4_dequant(n: int, k: int) -> Q4Dequant:
    """The device dequantisation of a Q4_1 ``w[n, k]`` for the model's GEMM over it (its K tile:
    :func:`whole_k_tile`); one chip."""
    ax = AxisSet(M=1, N=n, K=k)
    return Q4Dequant(Gemm(ax, "M", "N", "K", k_tile=whole_k_tile(k)))


@dataclass
class _Q4Plan:
    """A launch's Q4_1 matrices in the order it dequantises them (each the pair of HBM nibbles and scales), their
    dequantisations, the two DM slots their bytes alternate between, the next one's index, and the bytes already
    moved (index → the DM nibbles and scales)."""

    order: list[Any]
    deqs: list[Q4Dequant]
    slots: list[tuple[int, int]]
    next: int = 0
    loaded: dict[int, tuple[Any, Any]] = field(default_factory=dict)


@dataclass
class Step:
    """The kernels of a launch of ``t`` tokens (``t = 1``: a decode step; else a prefill chunk) against a cache of
    ``length`` positions, on ``chips`` chips (``c`` one chip's part of the model: :mod:`visa.models.parallel`)."""

    c: LlamaConfig
    t: int
    length: int
    chips: int = 1
    arena: Arena = field(default_factory=Arena)
    #: Cycles of the AllReduces (their shuffle DMAs and adds) of the last launch (0 on one chip).
    collective: int = 0
    #: The dequantisation of each GEMM's Q4_1 weights (``weights="q4_1"``), made at the first use.
    _deq: dict[int, Q4Dequant] = field(default_factory=dict)
    #: The launch's order of Q4_1 matrices and their DM slots (:meth:`plan_q4`); None with bf16 weights.
    _q4: _Q4Plan | None = None

    def __post_init__(self) -> None:
        c, t, s = self.c, self.t, self.length
        q12 = c.heads + c.kv_heads
        self.ax = ax = AxisSet(T=t, V=c.vocab, D=c.dim, QKV=(q12 + c.kv_heads) * c.head_dim, QK=q12 * c.head_dim,
                               Q12=q12, Hq=c.heads, H=c.kv_heads, Dk=c.head_dim, Dr=c.head_dim, Dv=c.head_dim,
                               HO=c.heads * c.head_dim, S=s, HS=c.kv_heads * s, P=s, PG=s * c.group,
                               F=c.ffn, F2=2 * c.ffn, Fh=c.ffn // 128, Fw=128, M3=c.group * t, R12=q12 * t, L=1,
                               G=gain_rows(c),
                               **({"C": self.chips} if self.chips > 1 else {}))
        self.m = ax.m
        chip = "C" if self.chips > 1 else "1"
        self.scale = 1.0 / math.sqrt(c.head_dim) / q_scale(c)  # what the softmax still scales by (1 when folded)
        self.rows_d = Rows(ax, "T", "D", chip=chip)
        whole = self.whole_k
        self.qkv = Gemm(ax, "T", "QKV", "D", chip=chip, k_tile=whole("D"))
        self.o_proj = Gemm(ax, "T", "D", "HO", chip=chip, k_tile=whole("HO"))
        self.gate_up = Gemm(ax, "T", "F2", "D", chip=chip, k_tile=whole("D"))
        self.down = Gemm(ax, "T", "D", "F", chip=chip, k_tile=whole("F"))
        self.lm_head = Gemm(ax, "T", "V", "D", chip=chip, k_tile=whole("D"))
        self.lm_last = Gemm(ax, "L", "V", "D", chip=chip, k_tile=whole("D"))  # one row's logits (generation)
        self.embed = Embedding(ax, "V", "D", rows="T", chip=chip)
        if t == 1:
            self.rows_f = Rows(ax, "Fh", "Fw", chip=chip)  # SwiGLU of [F] as 12 rows of 128 on 12 slices
            self.rope = Gemm(ax, "Q12", "Dr", "Dk", chip=chip)
            self.rope_row = Embedding(ax, "P", "Dr, Dk", rows="1", chip=chip)
            self.mask_row = Embedding(ax, "P", "Hq, HS", rows="1", chip=chip)
            self.mask_rows = Rows(ax, "Hq", "HS", chip=chip)
            self.attention = Attention(ax, q="Hq", s="HS", dk="Dk", dv="Dv", scale=self.scale, chip=chip,
                                       mix_k_tile=whole("HS"))
        else:
            self.rows_f = Rows(ax, "T", "F", chip=chip)
            self.rows_qk = Rows(ax, "T", "QK", chip=chip)
            self.swap = Gemm(ax, "R12", "Dr", "Dk", chip=chip)
            self.table_rows = Embedding(ax, "P", "QK", rows="T", chip=chip)
            self.mask_rows = Rows(ax, "M3", "S", chip=chip)
            self.attention = Attention(ax, q="M3", s="S", dk="Dk", dv="Dv", scale=self.scale, chip=chip)
            self.lm_last = Gemm(ax, "L", "V", "D", chip=chip, k_tile=whole("D"))  # one row's logits (``last``)

    def _dequant(self, gemm: Gemm) -> Q4Dequant:
        """The dequantisation of ``gemm``'s Q4_1 weights, made at the first use."""
        deq = self._deq.get(id(gemm))
        if deq is None:
            deq = self._deq[id(gemm)] = Q4Dequant(gemm)
        return deq

    def plan_q4(self, ctx: Context, arena: Arena, w: Weights) -> None:
        """Before a launch's blocks (``weights="q4_1"``): the order the launch dequantises the blocks' matrices in,
        and two DM slots (taken from ``arena`` for the launch) that their nibbles and scales alternate between, so
        that :meth:`weight` moves matrix j + 1's from HBM while matrix j is dequantised and contracted (a prefetch
        on the tensor DMA, L7046–7055); nothing with bf16 weights.  A 64-token prefill chunk takes no slots: its
        FFN tensors and two slots (61,440 bytes a slice) overflow a slice's 512 KB of DM (L1075, L1088), so each
        matrix is moved and dequantised where it is used (:meth:`weight`'s unplanned path)."""
        self._q4 = None
        if self.t > 32:
            return
        names = ((self.qkv, "w_qkv"), (self.o_proj, "w_o"), (self.gate_up, "w_gu"), (self.down, "w_down"))
        order = [(gemm, blk[name]) for blk in w.blocks for gemm, name in names]
        if not order or not isinstance(order[0][1], tuple):
            return
        deqs = [self._dequant(gemm) for gemm, _ in order]
        q_bytes, s_bytes = max(d.q_dm_bytes for d in deqs), max(d.s_dm_bytes for d in deqs)
        slots = [(arena.take_dm(q_bytes), arena.take_dm(s_bytes)) for _ in range(2)]
        self._q4 = _Q4Plan([pair for _, pair in order], deqs, slots)
        self._q4.loaded[0] = self._load(ctx, self._q4, 0)  # the first matrix's bytes move during the first norm

    def weight(self, ctx: Context, arena: Arena, gemm: Gemm, w: Any) -> Any:
        """The ``w`` a block's ``gemm`` reads: the bf16 HBM tensor itself, or (``weights="q4_1"``: ``w`` the pair
        of HBM nibbles and scales, :meth:`Weights.add_block_q4`) the bf16 DM tensor the device dequantises it
        into, in the Gemm's resident layout (:class:`~visa.kernels.Q4Dequant`, allocated from ``arena``); the
        next matrix's nibbles and scales are moved into DM meanwhile (:meth:`plan_q4`)."""
        if not isinstance(w, tuple):
            return w
        deq, plan = self._dequant(gemm), self._q4
        if plan is None or plan.next >= len(plan.order) or plan.order[plan.next] is not w:
            return deq(ctx, arena, *w)  # (outside the planned order: moved and dequantised here)
        j = plan.next
        loaded = plan.loaded.pop(j, None) or self._load(ctx, plan, j)
        plan.next = j + 1

        def prefetch() -> None:  # the next matrix's bytes into the other slot, during this one's pass
            if j + 1 < len(plan.order):
                plan.loaded[j + 1] = self._load(ctx, plan, j + 1)

        return deq.run(ctx, arena, loaded, then=prefetch)

    @staticmethod
    def _load(ctx: Context, plan: _Q4Plan, j: int) -> tuple[Any, Any]:
        """Matrix ``j``'s nibbles and scales moved into slot ``j % 2`` (:meth:`Q4Dequant.load`)."""
        (q, scales), (q_at, s_at) = plan.order[j], plan.slots[j % 2]
        return plan.deqs[j].load(ctx, q, scales, q_at, s_at)

    def whole_k(self, k: str) -> int | None:
        """The K tile of a GEMM over ``k`` (:func:`whole_k_tile`): all of it when it fits one TRF Row (``4 × K``
        bf16 ≤ 8 KiB, L1089; SmolLM2's 576 and a decode's 3·256 keys).  One K tile is one TRF load and one
        contraction committing straight to bf16: no f32 partials to add by split-reduce passes, fewer operations
        per GEMM (issue 25's wall time) and fewer cycles (3.81M → 3.37M per decode step); the double buffering a
        whole-Row tile gives up has nothing to overlap with a single K tile anyway."""
        return whole_k_tile(self.ax.size(k))

    @staticmethod
    def double_buffer(gemm: Gemm) -> bool:
        """Whether ``gemm`` loads its later K tiles by the sub context into the other TRF half: when it has more
        than one and each fits a half (L4151–4154)."""
        return gemm.k_tiles > 1 and gemm.k_tile <= HALF_K

    # ---------------------------------------------------------------------------------------------------------
    def body(self, ctx: Context, w: Weights, position: int, ids: Hbm, pos: Hbm, probe: bool,
             last: int | None = None) -> dict[str, Any]:
        """The launch's body (module docstring): the tokens ``ids`` at positions ``pos`` (from ``position``);
        returns the logits ``m["T, V"]``, the final normalised state ``h`` and, probing, each block's output.
        ``last``: the LM head of token ``last`` alone, the logits ``m["L, V"]`` (one row: what generation samples
        from; the head's 49,152 rows for one token rather than for all T)."""
        m, rd, arena = self.m, self.rows_d, self.arena
        out: dict[str, Any] = {}
        self.collective = 0
        with arena.scratch() as arena:
            x = self.embed(ctx, arena, w.emb, ids)  # x_0 = gather(input, w_emb), row t on slice t (L8241)
            # the residual stream alternates between x's address and one more
            addresses = (x.address, arena.take_dm(2 * self.c.dim))
            # every norm's gain into the rows' slices by one DMA (not one per norm): each norm reads its row into
            # the VRF from there
            g_dm = w.gains.to_dm(rd.cluster, rd.slice, m["G, D"], ctx.tdma, arena.take_dm(2 * self.ax.size("G") *
                                                                                           self.c.dim))
            gains = [g_dm.view().tile(m["G"], 1, m["D"], g) for g in range(self.ax.size("G"))]
            if self.t == 1:
                rope: Any = self.rope_row.to_hbm(ctx, arena, w.rot, pos)  # t_rope = gather(position, w_rope)
                rope = self.rope.load_w(ctx, arena, rope)  # into DM once: every block's RoPE GEMM reads it there
                row = self.mask_row.to_hbm(ctx, arena, w.decode_mask, pos)
                mask = self.mask_rows.load(ctx, arena, row)  # in DM for every block's scores
            else:
                rope = (self.table_rows.to_hbm(ctx, arena, w.cos, pos), self.table_rows.to_hbm(ctx, arena, w.sin, pos))
                g = self.c.group
                table = w.prefill_mask.view().tile(m["PG"], g * self.t, m[f"PG = {g * self.t}, S"], g * position)
                mask = self.mask_rows.load(ctx, arena, table.relabel(m["M3, S"]))
            self.plan_q4(ctx, arena, w)  # (Q4_1 weights: the slots their bytes are prefetched into)
            for b, (blk, cache) in enumerate(zip(w.blocks, w.caches, strict=True)):
                stages: dict[str, Any] | None = {} if probe else None
                with arena.scratch():
                    x = self.block(ctx, arena, x, w.swap, blk, cache, rope, mask, position, addresses[(b + 1) % 2],
                                   stages, gains=(gains[2 * b], gains[2 * b + 1]))
                if stages is not None:
                    stages["out"] = rd.store(ctx, arena, x)
                    out.update({f"{b}.{k}": v for k, v in stages.items()})
            h = self.norm(ctx, arena, x, gains[-1])
            out["h"] = h
            if last is None:
                out["logits"] = self.lm_head(ctx, arena, h, w.emb, stream=True)  # the LM head tied to token_embd
            else:
                h_last = h.view().tile(m["T"], 1, m["D"], last).relabel(m["L, D"])
                out["logits"] = self.lm_last(ctx, arena, h_last, w.emb, stream=True)
        return out

    def block(self, ctx: Context, arena: Arena, x: Any, swap: Hbm, blk: dict[str, Hbm], cache: tuple[Hbm, Hbm],
              rope: Any, mask: Any, position: int, out_address: int, stages: dict[str, Any] | None = None, *,
              gains: tuple[Any, Any]) -> Any:
        """One decoder block on the DM rows ``x``; its output at ``out_address``.  ``stages``, when given,
        receives every stage's output in HBM (:data:`STAGES`) for the checks; ``gains``: the two norms' gains in
        the rows' slices of DM (views of the launch's table, :attr:`Weights.gains`)."""
        m, rd, c, t = self.m, self.rows_d, self.c, self.t
        dm = self.in_dm
        n = self.norm(ctx, arena, x, gains[0], dm=dm)
        qkv = self.qkv(ctx, arena, n, self.weight(ctx, arena, self.qkv, blk["w_qkv"]), out_dm=dm)  # [T, q | k | v]
        qk_cols = (c.heads + c.kv_heads) * c.head_dim
        qkv_cols = qk_cols + c.kv_heads * c.head_dim
        v_dm: Any = None
        if dm:  # in DM as committed, 32 columns a slice: q|k's heads on the first slices, v's on the next
            qk: Any = qkv.relabel(Slice=m[f"[Q12, Dk / 32] + # {256 - qk_cols // 32}"], Element=m["Dk % 32"])
            v_dm = qkv.relabel(Slice=m[f"# {qk_cols // 32} + [H, Dv / 32] + # {256 - qkv_cols // 32}"],
                               Element=m["Dv % 32"])
            if stages is not None:
                qkv = qkv.to_hbm(m["T, QKV"], ctx.tdma, arena.take_hbm(2 * qkv_cols))
        else:
            qk = qkv.view().tile(m["QKV"], qk_cols, m[f"T, QKV = {qk_cols} # {qkv_cols}"], 0)
        # [T, Q12, Dk]: the rotated q and k heads
        rot = self.rotate(ctx, arena, qk, rope, swap).view().relabel(m["T, Q12, Dk"]).as_tensor()
        k_cache, v_cache = cache
        q12 = c.heads + c.kv_heads
        s = self.length
        # the KV-cache append: rows p0 … p0 + T − 1 of every KV head (L8286–8297), in place
        k_src = rot.view().tile(m["Q12"], c.kv_heads, m[f"T, Q12 = {c.kv_heads} # {q12}, Dk"], c.heads)
        k_dst = k_cache.view().tile(m["S"], t, m[f"H, S = {t} # {s}, Dk"], position)
        k_src.relabel(m[f"S = {t}, H # {q12}, Dk"]).to_hbm_view(k_dst, ctx.tdma)
        v_dst = v_cache.view().tile(m["S"], t, m[f"Dv, H, S = {t} # {s}"], position)
        if v_dm is not None:  # from DM, where the Q|K|V GEMM committed it
            v_dm.to_hbm_view(v_dst, ctx.tdma)
        else:
            v_src = qkv.view().tile(m["QKV"], c.kv_heads * c.head_dim,
                                    m[f"T, QKV = {c.kv_heads * c.head_dim} # {qkv_cols}"], qk_cols)
            v_src.relabel(m[f"S = {t}, H # {qkv_cols // c.head_dim}, Dv"]).to_hbm_view(v_dst, ctx.tdma)
        attn = self.attend(ctx, arena, rot, k_cache, v_cache, mask)  # [T, Hq, Dv] as [T, HO]
        w_o = self.weight(ctx, arena, self.o_proj, blk["w_o"])
        o = self.o_proj(ctx, arena, attn, w_o, out_dm=dm)  # on several chips each chip's partial sum
        x_attn = rd.add(ctx, arena, x, self.reduce(ctx, arena, rd.load(ctx, arena, o)))
        n2 = self.norm(ctx, arena, x_attn, gains[1], dm=dm)
        gu = self.gate_up(ctx, arena, n2, self.weight(ctx, arena, self.gate_up, blk["w_gu"]),
                          out_dm=dm)  # [T, gate | up]
        rf = self.rows_f
        f = c.ffn
        if dm:  # in DM as committed, 32 columns a slice: gate on the first F/32 slices, up on the next
            # (F = 128·Fh + Fw: the SwiGLU's rows; each relabelled half moves into them by one DMA DM → DM)
            cols = f // 32
            slices = (f"[Fh, Fw / 32] + # {256 - cols}", f"# {cols} + [Fh, Fw / 32] + # {256 - 2 * cols}")
            gate, up = (gu.relabel(Slice=m[text], Element=m["Fw % 32"]) for text in slices)
            if stages is not None:
                gu = gu.to_hbm(m["T, F2"], ctx.tdma, arena.take_hbm(4 * f))
        elif t == 1:  # [F] as rows of 128
            gate, up = (gu.view().tile(m["F2"], f, m[f"F2 = {f}"], at).relabel(m["Fh, Fw"]) for at in (0, f))
        else:
            gate, up = (gu.view().tile(m["F2"], f, m[f"T, F2 = {f} # {2 * f}"], at).relabel(m[f"T, F # {2 * f}"])
                        for at in (0, f))
        if dm:  # the rows of 128 on 12 slices, read as [T, F] by the down projection's one DMA DM → DM (its DM
            # temporaries go with the block's)
            act_dm = rf.swiglu(ctx, arena, rf.load(ctx, arena, gate), rf.load(ctx, arena, up))
            act = rf.store(ctx, arena, act_dm) if stages is not None else act_dm
            x_down: Any = act_dm.relabel(Slice=m["F / 128 # 256"], Element=m["F % 128"])
        else:
            with arena.scratch():  # SwiGLU's DM and VRF temporaries
                act = rf.store(ctx, arena, rf.swiglu(ctx, arena, rf.load(ctx, arena, gate), rf.load(ctx, arena, up)))
            x_down = act.view().relabel(m["T, F"])
        down = self.down(ctx, arena, x_down, self.weight(ctx, arena, self.down, blk["w_down"]),
                         double_buffer=self.double_buffer(self.down), out_dm=dm)
        if stages is not None:  # (in HBM: the rows and GEMM outputs kept in DM are stored for the checks)
            n, o, n2, down, attn = (
                v.to_hbm(m[text], ctx.tdma, arena.take_hbm(2 * self.ax.size(text.split(", ")[1]))) if dm else v
                for v, text in ((n, "T, D"), (o, "T, D"), (n2, "T, D"), (down, "T, D"), (attn, "T, HO")))
            stages.update(n=n, qkv=qkv, rot=rot, attn=attn, o=o, x_attn=rd.store(ctx, arena, x_attn), n2=n2, gu=gu,
                          act=act, down=down)
        return rd.add(ctx, arena, x_attn, self.reduce(ctx, arena, rd.load(ctx, arena, down)), address=out_address)

    def reduce(self, ctx: Context, arena: Arena, rows: Any) -> Any:
        """The sum over the chips of every chip's partial ``[T, D]`` rows (an :func:`~visa.kernels.all_reduce`,
        butterfly: the same bits on every chip; on one chip the rows themselves); its cycles join
        :attr:`collective`."""
        if self.chips == 1:
            return rows
        first = len(ctx.schedule.ops)
        out = all_reduce(ctx, self.ax, arena, rows)
        self.collective += sum(op.cycles for op in ctx.schedule.ops[first:])
        return out

    @property
    def in_dm(self) -> bool:
        """Whether a block's normalised rows feed the next GEMM from DM, and the output and down projections give
        their rows to the residual adds in DM (:meth:`Gemm.__call__`'s DM ``x`` and ``out_dm``): a decode step's,
        whose GEMMs run resident.  Each such hand-over is one DMA DM → DM instead of a store to HBM and a load
        back — 4 DMAs fewer per block (issue 25's wall time; the cycles change with the DMAs)."""
        return self.t == 1

    def norm(self, ctx: Context, arena: Arena, x: Any, gain: Any, *, dm: bool = False) -> Any:
        """RMSNorm of the DM rows ``x`` with ``gain`` (a view of a row of the gains in DM, in the rows' slices),
        into HBM (its DM and VRF temporaries freed); ``dm``: the DM rows themselves (the result stays allocated in
        ``arena``; the VRF is freed)."""
        rd = self.rows_d
        with arena.scratch(dm=not dm):
            y = rd.rms_norm(ctx, arena, x, rd.vector_to_vrf(ctx, arena, gain), eps=self.c.eps)
            return y if dm else rd.store(ctx, arena, y)

    def rotate(self, ctx: Context, arena: Arena, qk: Any, rope: Any, swap: Hbm) -> Hbm:
        """RoPE of the q and k heads ``[T, Q12, Dk]`` (module docstring)."""
        m = self.m
        if self.t == 1:
            if self.in_dm:  # (the Q|K|V GEMM's DM output read as [Q12, Dk]: one DMA DM → DM)
                out: Hbm = self.rope(ctx, arena, qk, rope)
                return out
            stride = self.ax.size("QKV") // self.c.head_dim
            out = self.rope(ctx, arena, qk.relabel(m[f"Q12 # {stride}, Dk"]), rope)
            return out
        cos, sin = rope
        rq = self.rows_qk
        q12 = self.c.heads + self.c.kv_heads
        stride = self.ax.size("QKV") // self.c.head_dim  # heads' worth of columns per token of the q|k|v output
        swapped = self.swap(ctx, arena, qk.relabel(m[f"R12 / {q12}, R12 % {q12} # {stride}, Dk"]), swap)
        a = rq.mul(ctx, arena, rq.load(ctx, arena, qk.relabel(m[f"T, QK # {self.ax.size('QKV')}"])),
                   rq.load(ctx, arena, cos.view().relabel(m["T, QK"])))
        b = rq.mul(ctx, arena, rq.load(ctx, arena, swapped.view().relabel(m["T, QK"])),
                   rq.load(ctx, arena, sin.view().relabel(m["T, QK"])))
        return rq.store(ctx, arena, rq.add(ctx, arena, a, b))

    def attend(self, ctx: Context, arena: Arena, rot: Hbm, k_cache: Hbm, v_cache: Hbm, mask: Any) -> Any:
        """Attention of every query head over the caches (module docstring), ``mask`` the launch's additive mask
        in DM; ``[T, HO]`` in HBM, or a decode step's (:attr:`in_dm`) in DM as the second GEMM committed it."""
        m, c, t, s = self.m, self.c, self.t, self.length
        q12 = c.heads + c.kv_heads
        if t == 1:
            q = rot.view().tile(m["Q12"], c.heads, m[f"Q12 = {c.heads}, Dk"], 0).relabel(m["Hq, Dk"])
            a = self.attention(ctx, arena, q, k_cache.view().relabel(m["HS, Dk"]),
                               v_cache.view().relabel(m["Dv, HS"]), mask, out_dm=self.in_dm)
            if isinstance(a, DmTensor):  # [Hq, Dv] over the slices of Dv / 32, read as [T, HO] (HO = Hq·Dv + dv)
                return a.relabel(Slice=m[f"HO % {c.head_dim} / 32 # 256"],
                                 Element=m[f"HO / {c.head_dim}, HO % 32"])
            return a.view().relabel(m["T, HO"]).as_tensor()
        g = c.group
        attn = HbmTensor(ctx, dt.bf16, m["C" if self.chips > 1 else "1"], m["T, Hq, Dv"],
                         arena.take_hbm(2 * t * c.heads * c.head_dim), call="visa.models.attention")
        for h in range(c.kv_heads):
            q = rot.view().tile(m["Q12"], g, m[f"T, Q12 = {g} # {q12}, Dk"], h * g).relabel(
                m[f"M3 / {g}, M3 % {g} # {q12}, Dk"])  # rows (t, g) of KV head h's query heads
            k = k_cache.view().tile(m["H"], 1, m["S, Dk"], h)
            v = v_cache.view().tile(m["H"], 1, m[f"Dv, S # {c.kv_heads * s}"], h)
            a = self.attention(ctx, arena, q, k, v, mask)
            a.view().relabel(m[f"T, Hq = {g}, Dv"]).to_hbm_view(
                attn.view().tile(m["Hq"], g, m[f"T, Hq = {g} # {c.heads}, Dv"], h * g), ctx.tdma)
        return attn.view().relabel(m["T, HO"]).as_tensor()


def launch_kernel(step: Step, ctx: Context, w: Weights, position: int, ids: Hbm, pos: Hbm,
                  probe: bool, last: int | None = None) -> dict[str, Any]:
    """Launch :meth:`Step.body` as a ``@device`` kernel on the step's chips."""
    from visa.context import launch

    @device(chip=step.chips)
    def llama_step(ctx: Context, ids: Hbm, pos: Hbm) -> dict[str, Any]:
        return step.body(ctx, w, position, ids, pos, probe, last)

    return launch(llama_step, ctx, ids, pos)

