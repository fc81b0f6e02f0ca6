"""Q4_1 weights kept 4-bit in HBM, dequantised on the device into the bf16 layout a :class:`~visa.kernels.Gemm`
contracts from (issue 25, "better": a quarter of the weight bytes read from HBM; docs/manual-notes.md, "Issue 25:
Q4_1 weights dequantised on the device").

A Q4_1 matrix ``w[N, K]`` (llama.cpp's blocks of 32 along K, each with an f16 scale ``d`` and minimum ``m``:
``w = d · q + m``, ``q`` an unsigned nibble 0…15) lives in HBM as two tensors:

- ``q``: the nibbles as :data:`visa.dtypes.i4` laid out ``m["N, K"]`` (packed two per byte, element k of a row at
  nibble k — the host reorders the file's nibbles, which put element j and j + 16 of a block in one byte, so the
  fetch reads each row's elements in order: 0.5 byte a weight);
- ``dm``: the scales and minimums as f16 ``m["S2, N, B"]`` (``S2 = 2``: d then m; ``B = K / 32``; 4 bytes a block,
  as the file stores them: 0.125 byte a weight).

:meth:`Q4Dequant.__call__` runs, per K tile of the Gemm:

1. one tensor DMA of the tile's nibbles HBM → DM, each of the Gemm's slices its 32 rows (L2424–2427; the DMA
   moves bytes, the i4 elements two a byte);
2. the sub context loads the tile's scales and minimums from DM into the VRF as f32 by the fetch's f16 → f32 cast
   (L1962–1972, L5063–5081), ``[N % 32, B]`` each: an operand the Vector Engine re-lays out by logical index,
   broadcast over the 32 elements of a block (L5063–5081, the ``vrf_add`` example);
3. one main-context pass: the fetch casts i4 → i32 (sign-extending, L1962–1972; 4-byte fetches, L1759),
   ``vector_logic(BitAnd, 15)`` takes back the unsigned nibble (the Logic cluster, Way8, L4803–4815),
   ``vector_fxp_to_fp(31)`` converts it to f32 exactly (L4837–4841), ``vector_split`` narrows to Way4
   (L4842–4864), ``MulF(Mul0)`` by d and ``AddF`` of m (the Float cluster, two ALUs, L4889–4897) — two f32
   roundings, the same two numpy makes in gguf's ``d * q + m`` — ``vector_concat`` widens back, and the Cast
   Engine rounds f32 → bf16 (RNE, L6774–6779) as the host's ``astype(bfloat16)`` does; the commit writes the
   Gemm's resident layout (:meth:`Gemm.load_w`'s), which the contraction then reads in place.

The result is bit for bit the host's dequantisation rounded to bf16.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from visa import dtypes as dt
from visa.context import Context
from visa.engines.vector import BranchMode, FpBinaryOp, FpMulAlu, LogicBinaryOpI32
from visa.errors import LayoutError
from visa.kernels.gemm import Gemm
from visa.kernels.memory import Arena
from visa.mapping import AxisSet
from visa.tensors.handles import DmTensor, HbmTensor, HostTensor

__all__ = ["Q4Dequant", "Q4_BLOCK"]

Dm = DmTensor[Any, Any, Any, Any, Any]
Hbm = HbmTensor[Any, Any, Any]

#: Weights per Q4_1 block (one scale and one minimum each).
Q4_BLOCK = 32


class Q4Dequant:
    """The device dequantisation of a Q4_1 ``w[N, K]`` for the :class:`~visa.kernels.Gemm` ``gemm`` (its N, its K
    and K tile): :meth:`__call__` turns the HBM nibbles and scales (module docstring) into the DM tensor in the
    Gemm's resident layout, passed to the Gemm as its ``w``.  ``chip``: the Chip level, as the Gemm's.  The Gemm's
    N is one N tile (at most 8192 rows, 32 a slice: L1081; a wider one's DMA refuses its Slice mapping)."""

    def __init__(self, gemm: Gemm, *, chip: str = "1") -> None:
        self.gemm = gemm
        n, kt = gemm.sn, gemm.k_tiles
        # the K tile the Gemm contracts: its k_tile, or the whole K when that is shorter (one tile, L4151–4154)
        self.k_tile = tile = gemm.k_tile if kt > 1 else gemm.sk
        if kt > 1 and tile // Q4_BLOCK % 4:
            raise LayoutError(f"a K tile of {tile} holds {tile // Q4_BLOCK} Q4_1 blocks: its scales and minimums "
                              f"(f16, {2 * (tile // Q4_BLOCK)} bytes a row) are no whole 8-byte DMA packets "
                              "(manual L2424–2427)", call="visa.kernels.Q4Dequant", level="Element",
                              mapping=f'm["{gemm.k}"]', axis=gemm.k,
                              fix="build the Gemm with a k_tile that is a multiple of 128 (4 blocks), e.g. "
                                  f"k_tile=512, or the whole {gemm.k} as one tile when it is at most 1024")
        # N as slices QS of 32 rows QR (no axis shared by the Slice and the inner levels: a VRF operand's gather
        # is then planned by parts, vector.gather-by-parts); K as tiles QT of QTB blocks of QE = 32
        sizes: dict[str, int] = {"QS": n // 32, "QR": 32, "QK": gemm.sk, "QB": gemm.sk // Q4_BLOCK, "QE": Q4_BLOCK,
                                 "S2": 2, "QTB": tile // Q4_BLOCK}
        if kt > 1:
            sizes["QT"] = kt
        if gemm.ax.size("C") > 1 if "C" in gemm.ax else False:
            sizes["C"] = gemm.ax.size("C")
        self.ax = ax = AxisSet(**sizes)
        m = ax.m
        self.chip = m[chip]
        self.cluster = m["1 # 2"]
        self.slice = m["QS" + (" # 256" if n < 8192 else "")]
        t = "QT, " if kt > 1 else ""
        # per slice: its 32 rows of every K tile, K tile-major (the Gemm's resident layout, Gemm._w_el)
        self.q_el = m[f"{t}QR, QTB, QE"]
        self.dm_el = m[f"S2, {t}QR, QTB"]
        self.tiles = kt
        self.tile_q = m["QR, QTB, QE"]
        self.tile_s = m["QR, QTB"]
        self.time8 = m["QR, QTB, QE / 8"]
        self.packet8 = m["QE % 8"]
        self.time4 = m["QR, QTB, QE / 4"]
        self.packet4 = m["QE % 4"]
        self.s_time = m["[QR, QTB] / 8"]
        self.s_packet = m["[QR, QTB] % 8"]
        self.cast_el = m["QE % 8 # 16"]
        self.q_hbm = m["QS, QR, QK"]
        self.dm_hbm = m["S2, QS, QR, QB"]

    @property
    def q_bytes(self) -> int:
        """HBM bytes of the nibbles (two a byte)."""
        return self.gemm.sn * self.gemm.sk // 2

    @property
    def s_bytes(self) -> int:
        """HBM bytes of the scales and minimums (f16, two a block)."""
        return 2 * 2 * self.gemm.sn * (self.gemm.sk // Q4_BLOCK)

    def upload(self, ctx: Context, w: Any, q_addr: int, s_addr: int) -> tuple[Hbm, Hbm]:
        """Write the Q4_1 weight ``w`` (``.q`` nibbles 0…15 ``[N, K]``, ``.d`` and ``.m`` f16 ``[N, K / 32]``:
        :class:`visa.models.loader.Q4Weight`) to HBM at ``q_addr`` (i4, each nibble's bits: 8…15 read as the
        i4 values −8…−1) and ``s_addr`` (f16 ``[S2, N, B]``) by host DMAs (L44–47); the two HBM tensors (a
        value outside 0…15 or a shape other than the Gemm's ``[N, K]`` is refused by the host tensor)."""
        q = np.asarray(w.q, np.int8)
        signed = np.where(q > 7, q - 16, q).astype(np.int8).reshape(q.shape[0] // 32, 32, q.shape[1])
        scales = np.stack([np.asarray(w.d, np.float16), np.asarray(w.m, np.float16)]).astype(np.float32)
        scales = scales.reshape(2, q.shape[0] // 32, 32, -1)

        def host(a: Any, dtype: Any, mapping: Any, names: str) -> Any:  # (an axis of size 1 is no axis)
            kept = [n for n in names.split() if self.ax.size(n) > 1]
            return HostTensor.from_numpy(a.reshape([self.ax.size(n) for n in kept]), dtype, mapping, axes=kept)

        q_hbm: Hbm = host(signed, dt.i4, self.q_hbm, "QS QR QK").to_hbm(self.chip, self.q_hbm, ctx.pdma, q_addr)
        s_hbm: Hbm = host(scales, dt.f16, self.dm_hbm, "S2 QS QR QB").to_hbm(self.chip, self.dm_hbm, ctx.pdma, s_addr)
        return q_hbm, s_hbm

    @property
    def q_dm_bytes(self) -> int:
        """DM bytes a slice holds of the nibbles (32 rows of K, two a byte)."""
        return self.k_tile * 32 * self.gemm.k_tiles // 2

    @property
    def out_dm_bytes(self) -> int:
        """DM bytes a slice holds of the dequantised weights (bf16, 32 rows of K)."""
        return 2 * self.k_tile * 32 * self.gemm.k_tiles

    @property
    def s_dm_bytes(self) -> int:
        """DM bytes a slice holds of the scales and minimums (f16, 32 rows of K / 32 blocks, two each)."""
        return 2 * 2 * 32 * (self.k_tile // Q4_BLOCK) * self.gemm.k_tiles

    def load(self, ctx: Context, q: Hbm, scales: Hbm, q_at: int, s_at: int) -> tuple[Dm, Dm]:
        """Step 1 (module docstring): the tensor DMAs of ``q`` and ``scales`` from HBM into the Gemm's slices of DM
        at ``q_at`` (:attr:`q_dm_bytes` a slice) and ``s_at`` (:attr:`s_dm_bytes`).  Issued ahead of :meth:`run`
        (a prefetch while other work runs on the main context), they overlap it (L7046–7055)."""
        m = self.ax.m
        t = "QT, " if self.tiles > 1 else ""
        qv = q.view()
        if qv.element != self.q_hbm:
            qv = qv.relabel(self.q_hbm)
        q_dm: Dm = qv.relabel(m[f"QS, QR, {t}QTB, QE"]).to_dm(self.cluster, self.slice, self.q_el, ctx.tdma, q_at)
        s_dm: Dm = scales.view().relabel(m[f"S2, QS, QR, {t}QTB"]).to_dm(self.cluster, self.slice, self.dm_el,
                                                                          ctx.tdma, s_at)
        return q_dm, s_dm

    def __call__(self, ctx: Context, arena: Arena, q: Hbm, scales: Hbm) -> Dm:
        """``q`` (i4 ``m["N, K"]``) and ``scales`` (f16 ``m["S2, N, B"]``) from HBM to the bf16 DM tensor in the
        Gemm's resident layout (allocated from ``arena`` before its scratch: it outlives the call): :meth:`load`
        into scratch DM, then :meth:`run`."""
        out_at = arena.take_dm(self.out_dm_bytes)
        with arena.scratch():
            loaded = self.load(ctx, q, scales, arena.take_dm(self.q_dm_bytes), arena.take_dm(self.s_dm_bytes))
            return self.run(ctx, arena, loaded, out_at)

    def run(self, ctx: Context, arena: Arena, loaded: tuple[Dm, Dm], out_at: int | None = None,
            then: Callable[[], None] | None = None) -> Dm:
        """Steps 2 and 3 (module docstring) on the DM nibbles and scales :meth:`load` moved: the bf16 DM tensor
        in the Gemm's resident layout at ``out_at`` (default: taken from ``arena`` first; the VRF operands are
        scratch).  ``then`` is called once the first K tile's VRF loads are issued, before its pass: work issued
        there (the next weight's :meth:`load`) queues behind them, not ahead (operations issue in program order,
        L7046–7055)."""
        g, m = self.gemm, self.ax.m
        if out_at is None:
            out_at = arena.take_dm(self.out_dm_bytes)
        q_dm, s_dm = loaded
        out = DmTensor(ctx, dt.bf16, self.chip, self.cluster, self.slice, self.q_el, out_at,
                       call="visa.kernels.Q4Dequant")
        for kt in range(self.tiles):
            with arena.scratch():
                d_vrf, m_vrf = (self._to_vrf(ctx, arena, s_dm, which, kt) for which in (0, 1))
                if then is not None and kt == 0:
                    then()
                src = q_dm.view()
                dst = out.view()
                if self.tiles > 1:
                    src = src.tile(m["QT"], 1, self.tile_q, kt)
                    dst = dst.tile(m["QT"], 1, self.tile_q, kt)
                (ctx.main.begin(src)
                 .fetch(dt.i32, self.time8, self.packet8)
                 .collect(self.time8, self.packet8)
                 .vector_init()
                 .vector_intra_slice_branch(BranchMode.Unconditional)
                 .vector_logic(LogicBinaryOpI32.BitAnd, 15)
                 .vector_fxp_to_fp(31)
                 .vector_split(self.time4, self.packet4)
                 .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), d_vrf)
                 .vector_fp_binary(FpBinaryOp.AddF, m_vrf)
                 .vector_concat(self.time8, self.packet8)
                 .vector_final()
                 .cast(dt.bf16, self.cast_el)
                 .commit_view(dst))
        res: Dm = out.relabel(Cluster=g.cluster, Slice=g.slice, Element=g._w_el())
        return res

    def _to_vrf(self, ctx: Context, arena: Arena, s_dm: Dm, which: int, kt: int) -> Any:
        """Row ``which`` of the scales (0: d, 1: m) of K tile ``kt`` into the VRF as f32 ``[N % 32, B]`` by the
        sub context (the fetch's f16 → f32 cast, L1962–1972; L5063–5081)."""
        m = self.ax.m
        t = "QT, " if self.tiles > 1 else ""
        v = s_dm.view().tile(m["S2"], 1, m[f"{t}QR, QTB"], which)
        if self.tiles > 1:
            v = v.tile(m["QT"], 1, self.tile_s, kt)
        return (ctx.sub.begin(v)
                .fetch(dt.f32, self.s_time, self.s_packet)
                .collect(self.s_time, self.s_packet)
                .to_vrf(self.tile_s, arena.take_vrf(4 * self.tile_s.size)))
