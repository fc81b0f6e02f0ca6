"""Single-head scaled dot-product attention over a given cache: ``softmax(q Kᵀ / √d_k) V``.

:class:`Attention` composes the library's own kernels: :class:`~visa.kernels.Gemm` for the scores
``q[Q, Dk] · K[S, Dk]ᵀ`` (the K cache in its natural ``m["S, Dk"]`` layout is already the N-major weight the
GEMM reads), :meth:`~visa.kernels.Rows.softmax` over S with the scale ``1/√d_k`` (max-subtracted), and
:class:`~visa.kernels.Gemm` again for ``P[Q, S] · V`` — which reads V N-major, so the V cache is kept
transposed, ``m["Dv, S"]`` (a layout choice of the cache, as the manual's decode keeps the caches in HBM in the
layouts its kernels read, L8286–8297).  The intermediate scores and probabilities go through HBM in bf16
(rounded once each, as a bf16 kernel chain does).
"""

from __future__ import annotations

import math
from typing import Any

from visa.context import Context
from visa.kernels.gemm import HALF_K, Gemm
from visa.kernels.memory import Arena
from visa.kernels.rows import Rows
from visa.mapping import AxisSet
from visa.tensors.handles import DmTensor, HbmTensor, HbmTensorView, VrfTensor

__all__ = ["Attention"]

Hbm = HbmTensor[Any, Any, Any]
HbmIn = HbmTensor[Any, Any, Any] | HbmTensorView[Any, Any, Any]  # a tensor, or a view of one (tile, relabel)
Vrf = VrfTensor[Any, Any, Any, Any, Any]
Dm = DmTensor[Any, Any, Any, Any, Any]


class Attention:
    """``out[Q, Dv] = softmax(q[Q, Dk] · k[S, Dk]ᵀ / √|Dk|) · v[S, Dv]`` for the named axes of ``ax``.

    Shapes are those of the parts: ``Q`` at most 32 queries or a multiple of 32 up to 256 (one row per slice),
    ``S`` a multiple of 32 (a GEMM's N, then its K), ``Dk`` and ``Dv`` multiples of 32.  An additive ``mask``
    over S (bf16 in HBM, ``m["S"]``: 0 to keep a position, −inf to drop it) is added to the scores before the
    softmax (:meth:`Rows.add`; ``s + 0`` is exact and ``exp(−inf) = 0``), e.g. for a cache only partly filled;
    or a mask over ``[Q, S]`` already in DM in the softmax's row layout (:meth:`Rows.load` of ``Rows(ax, q, s)``),
    which many calls share (a model's causal mask, moved into DM once for all its layers);
    or a branch ``log`` masks them in the softmax passes (the manual's causal mask by the branch log,
    L8090–8100).  ``chip``: the Chip level of the parts (:class:`Gemm`), one head per chip with ``chip="C"``.
    ``scale`` (default ``1/√|Dk|``): the factor of the scores; ``scale=1.0`` when q already carries it (a model
    whose query weights were scaled by ``2⁻³`` for d_k = 64, exactly, saves the scaling pass).  ``mix_k_tile``: the
    K tile of the second GEMM (over S; :class:`Gemm`'s ``k_tile``, default its own choice); a tile wider than a TRF
    half (> 512) loads without double buffering (L4151–4158), as no half is then free to load the next one into.
    """

    def __init__(self, ax: AxisSet, q: str = "Q", s: str = "S", dk: str = "Dk", dv: str = "Dv", *,
                 chip: str = "1", scale: float | None = None, mix_k_tile: int | None = None) -> None:
        self.scores = Gemm(ax, m=q, n=s, k=dk, chip=chip)
        self.softmax = Rows(ax, q, s, chip=chip)
        self.mix = Gemm(ax, m=q, n=dv, k=s, chip=chip, k_tile=mix_k_tile)
        # the second GEMM loads its later K tiles into the other TRF half only when a tile fits a half (L4151–4154):
        # a whole-Row K tile (a long cache's S, ``mix_k_tile`` > 512) runs without double buffering
        self.mix_double_buffer = self.mix.k_tile <= HALF_K
        self.scale = 1.0 / math.sqrt(ax.size(dk)) if scale is None else scale
        self.ax, self.q, self.s = ax, q, s

    def __call__(self, ctx: Context, arena: Arena, q: HbmIn, k: HbmIn, v_t: HbmIn, mask: HbmIn | Dm | None = None,
                 *, log: Vrf | None = None, out_dm: bool = False) -> Any:
        """``q`` ``m["Q, Dk"]``, ``k`` ``m["S, Dk"]``, ``v_t`` ``m["Dv, S"]`` (all bf16 in HBM) → ``m["Q, Dv"]``.

        ``log``: a branch log over ``[Q, S]`` (:meth:`Rows.branch_log`, :class:`~visa.kernels.CausalMask`) —
        the positions it marks :data:`~visa.kernels.rows.MASKED_ID` are −inf in every softmax pass (L8090–8100).
        ``out_dm``: when the second GEMM runs resident, its output stays in DM (:class:`Gemm`'s ``out_dm``, the
        layout its contractions commit: ``Dv`` over slices by 32) for the next kernel's one DMA DM → DM; else (and
        by default) the result is in HBM."""
        # a GEMM that runs resident hands its rows over in DM: the scores by one DMA DM → DM into the softmax's
        # rows, the probabilities by one into the second GEMM's layout (no store to HBM and load back, L2659–2681)
        resident = self.resident(ctx)
        scores = self.scores(ctx, arena, q, k, out_dm=resident[0])
        rows = self.softmax
        s_dm = rows.load(ctx, arena, scores)
        if isinstance(mask, DmTensor):  # rows of the mask in DM already
            s_dm = rows.add(ctx, arena, s_dm, mask)
        elif mask is not None:
            s_dm = rows.add(ctx, arena, s_dm, rows.load(ctx, arena, mask))  # the mask is broadcast over Q
        probs_dm = rows.softmax(ctx, arena, s_dm, scale=self.scale, log=log)
        probs = probs_dm if resident[1] else self.softmax.store(ctx, arena, probs_dm)
        return self.mix(ctx, arena, probs, v_t, double_buffer=self.mix_double_buffer, out_dm=out_dm and resident[1])

    def resident(self, ctx: Context) -> tuple[bool, bool]:
        """Whether the scores GEMM and the second GEMM run resident (x and w whole in DM, :class:`Gemm`'s
        default when they take at most half a slice's DM, L138): the scores then stay in DM for the softmax and
        the probabilities in DM for the second GEMM."""
        half = ctx.hw.dm.slice_bytes // 2
        return tuple(not g.parts and g.resident_bytes() <= half for g in (self.scores, self.mix))  # type: ignore[return-value]
