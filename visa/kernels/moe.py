"""Mixture-of-Experts on the TCP (manual L8432–8721): branchless TopK, the blockwise indices, the whole block.

:class:`MoeRouting` derives, from the sizes of four axes of an :class:`~visa.mapping.AxisSet` (tokens ``T``,
experts ``E``, selected experts ``K`` and the block ``Bt``), the passes of the manual's "MoE Implementation on
TCP":

- **Branchless TopK** (L8540–8595): the bf16 scores' bits read as i16 (``view().bitcast(i16)``, L8589) are
  packed ``(bits << 16) | index`` with the comparison trick (XOR ``0x7fff0000`` on negatives, L8555); an
  all-to-all compare against the VRF and a saturating reduce give each expert's rank (L8563–8575); the ranks
  are the branch log of a ``vector_filter`` that keeps ranks ``0..K−1`` and packs them (FilterCompaction,
  L8580–8584); the packed Element ``m["T, K"]`` receives exactly the kept values.  Unpacking is ``& 0xffff``
  (index) and ``& 0xffff0000`` read as f32 (the score: the bf16 bits in the upper half *are* the f32 of the
  same value, L8588–8589).
- **Expert mask and cumsum** (L8627–8644, L8708–8721): ``mask[t, e] = rank < K`` (the one-hot of the TopK
  indices summed over K); the carried operand ``OperandRead(1, 2)`` / ``WriteOperand(0, 1)`` with the static
  branch logger (0 first, 1 inside, 2 last) gives ``cumsum(mask)`` over the tokens; its last row is ``Count``.
- **Blocks** (L8635–8641): ``Num_Blocks = (Count + B − 1) >> log2 B``; ``End = cumsum(Num_Blocks)`` over the
  experts by the carried operand again (one expert per time step); ``Start·B = (End − Num_Blocks) << log2 B``.
- **Expert_IDs** (L8645–8660): ``Expert_IDs[g] = #{e : End[e] ≤ g}`` by an all-to-all compare of ``End``
  against ``Block_Range`` and a reduce over the experts — ``E`` for the empty trailing blocks.
- **Scatter_Idx** (L8661–8663): ``Start[e]·B + cumsum[t, e] − 1`` over every (t, e), packed by the same
  filter as the TopK (ranks ``< K``), so that its (t, k) order is the TopK indices' order.

:class:`TokenRows` does the per-token float work one token per slice (the routing softmax over K, the
combine's weighted sum) and :class:`MoeBlock` composes the whole block: router GEMM, routing, dispatch scatter,
per-block guarded expert GEMMs with gathered weights, combine gather, weighted sum.

Everything runs in one slice (the routing tensors are small: ``T × E`` i32); the Element layouts are named in
each method.  The constant tables the manual lists as inputs (``Index_expert``, ``Block_Range`` and the static
branch loggers, L8541, L8622, L8712) come from :meth:`MoeRouting.constants`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.context import Context
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    InputCmp,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpI32,
    OperandRead,
    ValidBranchIds,
    VeBranchOperand,
    WriteOperand,
)
from visa.errors import HardwareLimitError, LayoutError
from visa.kernels.memory import Arena
from visa.kernels.moe_wide import FLIP, HIGH, LOW, Dm, HbmIn, Vrf, WideRouting  # (the packing's constants)
from visa.mapping import AxisSet
from visa.tensors.handles import HbmTensor

__all__ = ["MoeBlock", "MoeRouting", "Routing", "TokenRows", "grid_size", "logger"]



def grid_size(tokens: int, experts: int, k: int, block: int) -> int:
    """The worst-case number of blocks the compiler allocates (L8617–8620): ``Σ_e ceil(Count_e / B)`` is at most
    ``(T·K + n·(B − 1)) / B`` with ``n = min(E, T·K)`` non-empty experts — the manual's ``(T·K − E)/B + E``
    when every expert has a token."""
    n = min(experts, tokens * k)
    return (tokens * k + n * (block - 1)) // block


@dataclass
class Routing:
    """The routing results in DM (one slice): each field names its Element."""

    packed: Dm  #: ``m["T, K"]`` i32: the kept ``(score bits << 16) | index``, in expert order
    rank: Dm  #: ``m["T, E_i, 1 # 2"]`` i32: each expert's rank per token (0 = highest score)
    indices: Dm  #: ``m["T, K"]`` i32: TopK_Indices
    scores: Dm  #: ``m["T, K"]`` f32: TopK_Scores (exactly the bf16 scores)
    mask: Dm  #: ``m["T, E"]`` i32: 1 where the expert is among the token's K
    cumsum: Dm  #: ``m["T, E"]`` i32: cumsum of the mask over the tokens (Token_Rank at the kept positions)
    blocks: Dm  #: ``m["E, 1 # 8"]`` i32: Num_Blocks per expert
    end: Dm  #: ``m["E, 1 # 8"]`` i32: ``cumsum(Num_Blocks)``, the block after each expert's last
    expert_ids: Dm  #: ``m["G, 1 # 2"]`` i32: the expert of each block (``E`` for an empty block)
    scatter_idx: Dm  #: ``m["T, K"]`` i32: the row of ``x_blocked`` each (token, k) goes to
    block_count: Dm  #: ``m["G, 1 # 2"]`` i32: the tokens of each block (0 for an empty block)


class MoeRouting:
    """Branchless TopK and the blockwise indices for the axes ``t`` (tokens), ``e`` (experts), ``k`` (selected)
    and ``b`` (rows per block) of ``ax``; declares ``g`` (the worst-case grid, :func:`grid_size`) and the
    helper axes ``{e}_i``, ``{e}_j`` (the compare's two expert axes) and ``{g}_r`` (blocks × rows) when absent.

    Shapes: ``E`` is 4 or 8 (a token's scores are one 32-byte packet of i32, packed by FilterCompaction within
    it, L3544, L8580–8584; the ranks are reduced over four-lane packets, L4842–4871); ``1 ≤ K ≤ E`` (odd K is
    padded to an even count in the ``[T, K]`` Elements); ``B`` a power of two up to 32 (``ceil(Count / B)`` is a
    shift; a block is one GEMM M tile); ``T ≥ 2``.
    """

    def __init__(self, ax: AxisSet, t: str = "T", e: str = "E", k: str = "K", b: str = "Bt", g: str = "G") -> None:
        call = f"visa.kernels.MoeRouting({t!r}, {e!r}, {k!r}, {b!r})"
        st, se, sk, sb = ax.size(t), ax.size(e), ax.size(k), ax.size(b)
        # E past one packet (the manual's "typically 128", L8459), or a block that is no power of two: the wide
        # routing (visa.kernels.moe_wide: tokens on slices, compaction across packets, blocks by compare)
        wide = se > 8 or (se % 8 == 0 and sb & (sb - 1) != 0 and sb <= 32)
        if se not in (4, 8) and not wide:
            raise LayoutError(f"{e} = {se}: a token's expert scores are one packet, packed by FilterCompaction "
                              "within it (L8580–8584), so E fits one 32-byte flit of i32 (L3544), and the ranks are "
                              "reduced over four-lane packets (L4842–4871): E is 4 or 8", call=call,
                              level="Packet", mapping=f'm["{e}"]', axis=e,
                              fix=f"pad {e} to 4 or 8 with experts whose router scores are very negative (never "
                                  "selected), or route hierarchically over groups of 8")
        if st < 2:
            raise LayoutError(f"{t} = {st}: an axis of size 1 sets no index, so the token vectors (the branch "
                              "logger, L8712) would be one i32, below the 8-byte DMA word (L2424–2427)", call=call,
                              level="Element", mapping=f'm["{t}"]', axis=t,
                              fix="route at least two tokens (pad a single decode token with a dummy one)")
        if not 1 <= sk <= se:
            raise LayoutError(f"{k} = {sk} must be between 1 and {e} = {se}", call=call, level="Element",
                              mapping=f'm["{k}"]', axis=k, fix=f"select at most {se} experts")
        if (sb & (sb - 1) and not wide) or sb > 32:
            raise HardwareLimitError(f"{b} = {sb}: the block is at most 32 rows (one GEMM M tile, L4434), a power of "
                                     f"two when {e} is 4 (ceil(Count / B) is a shift)", call=call, level="Time",
                                     mapping=f'm["{b}"]', axis=b, fix=f"choose {b} in 1, 2, 4, 8, 16, 32")
        self.grid = grid_size(st, se, sk, sb)
        self.ei, self.ej, self.gr, self.te = f"{e}_i", f"{e}_j", f"{g}_r", f"{t}{e}_"
        need = {g: self.grid, self.ei: se, self.ej: se, self.gr: self.grid * sb, self.te: st * se}
        for name, size in need.items():
            if name not in ax:
                ax.declare(**{name: size})
            elif ax.size(name) != size:
                raise LayoutError(f"axis {name} has size {ax.size(name)}, the routing needs {size}", call=call,
                                  level="Element", mapping=f'm["{name}"]', axis=name,
                                  fix=f"leave {name} undeclared or declare it with size {size}")
        self.ax, self.t, self.e, self.k, self.b, self.g = ax, t, e, k, b, g
        self.st, self.se, self.sk, self.sb = st, se, sk, sb
        self.shift = sb.bit_length() - 1
        # the (token, k) Element: K padded to an even count, as a commit writes whole 8-byte words (L2236)
        self.tk = f"{t}, {k}" if sk % 2 == 0 else f"{t}, {k} # {sk + 1}"
        m = ax.m
        self.chip, self.cluster, self.slice = m["1"], m["1 # 2"], m["1 # 256"]
        self.wide: WideRouting | None = WideRouting(self) if wide else None

    # -- constants ---------------------------------------------------------------------------------------
    def constants(self) -> dict[str, npt.NDArray[Any]]:
        """The static tables (i32) the manual lists as inputs: ``index`` = Index_expert (L8541), ``blocks`` =
        Block_Range (L8622), and the static branch loggers of the two cumsums, over the tokens and over the
        experts (0 first, 1 inside, 2 last, L8712–8718); the wide routing's own tables when E > 8."""
        if self.wide is not None:
            return self.wide.constants()
        return {"index": np.arange(self.se, dtype=np.int32), "block_range": np.arange(self.grid, dtype=np.int32),
                "log_t": logger(self.st), "log_e": logger(self.se)}

    def constant_text(self) -> dict[str, str]:
        """Each constant's Element text (for ``HostTensor.from_numpy`` and ``to_hbm``)."""
        if self.wide is not None:
            return self.wide.constant_text()
        return {"index": self.e, "block_range": self._even(self.g), "log_t": self._even(self.t), "log_e": self.e}

    def _even(self, axis: str) -> str:
        """A vector over ``axis`` padded to an even count of i32 (DMA packets are whole 8 bytes, L2424–2427)."""
        size = self.ax.size(axis)
        return axis if size % 2 == 0 else f"{axis} # {size + 1}"

    # -- helpers -----------------------------------------------------------------------------------------
    def _dm(self, ctx: Context, arena: Arena, src: HbmIn, element: str) -> Dm:
        nbytes = self.ax.m[element].size * src.dtype.size_bits // 8
        return src.to_dm(self.cluster, self.slice, self.ax.m[element], ctx.tdma, arena.take_dm(nbytes))

    def _vrf(self, ctx: Context, arena: Arena, dm: Any, time: str, packet: str, element: str) -> Vrf:
        """The sub context loads a DM tensor into the slice's VRF (Fetch → Collect → to_vrf, L278–285)."""
        m = self.ax.m
        out: Vrf = (ctx.sub.begin(dm.view()).fetch(dt.i32, m[time], m[packet]).collect(m[time], m[packet])
                    .to_vrf(m[element], arena.take_vrf(4 * m[element].size)))
        return out

    def _commit(self, s: Any, arena: Arena, element: str) -> Dm:
        el = self.ax.m[element]
        out: Dm = s.vector_final().commit(el, arena.take_dm(4 * el.size))
        return out

    # -- the passes --------------------------------------------------------------------------------------
    def __call__(self, ctx: Context, arena: Arena, scores: HbmIn, consts: Mapping[str, HbmIn]) -> Routing:
        """Route ``scores`` (bf16 ``m["T, E"]`` in HBM, or a view of the router GEMM's padded output) with the
        constant tables of :meth:`constants` (in HBM, keyed as there).  Returns every stage in DM."""
        if self.wide is not None:
            return self.wide(ctx, arena, scores, consts)
        m, t, e, ei, ej, g = self.ax.m, self.t, self.e, self.ei, self.ej, self.g
        pe, pj = self._packet(e), self._packet(ej)  # an expert axis in the packet: one 32-byte flit (L3544)
        tk = self.tk
        s_dm = self._dm(ctx, arena, scores, f"{t}, {e}")
        index = self._vrf(ctx, arena, self._dm(ctx, arena, consts["index"], e), "1", pe, pe)
        log_t_dm = self._dm(ctx, arena, consts["log_t"], self._even(t))
        log_e_dm = self._dm(ctx, arena, consts["log_e"], e)
        range_dm = self._dm(ctx, arena, consts["block_range"], self._even(g))

        # 2.1 bit packing with the comparison trick (L8547–8555): the Branch stage's Comparison sets the group
        # bit (bit 3) of the negative scores, whose packed value the XOR flips
        negative = BranchMode.Comparison([InputCmp.I32.False_(), InputCmp.I32.False_(), InputCmp.I32.False_(),
                                          InputCmp.I32.Less(0)])

        def pack(flip: bool) -> Dm:
            s = (ctx.main.begin(s_dm.view().bitcast(dt.i16)).fetch(dt.i32, m[t], m[pe]).collect(m[t], m[pe])
                 .vector_init().vector_intra_slice_branch(negative)
                 .vector_logic(LogicBinaryOpI32.LeftShift, 16).vector_logic(LogicBinaryOpI32.BitOr, index))
            if flip:
                s = s.vector_logic(LogicBinaryOpI32.BitXor, VeBranchOperand.group(FLIP, GroupId.One))
            return self._commit(s, arena, f"{t}, {e}")

        packed, cmp = pack(False), pack(True)
        # 2.2 parallel ranking (L8563–8575): rank[t, i] = #{j : cmp[t, j] > cmp[t, i]}; the stream is cmp[t, j]
        # broadcast over i, the VRF holds cmp[t, i]; (cmp_i − cmp_j) saturated, its sign bit, summed over j
        cmp_i = self._vrf(ctx, arena, cmp.relabel(Element=m[f"{t}, {ei}"]), t, self._packet(ei),
                          f"{t}, {self._packet(ei)}")
        diff = (ctx.main.begin(cmp.relabel(Element=m[f"{t}, {ej}"]).view()).fetch(dt.i32, m[f"{t}, {ei}"], m[pj])
                .collect(m[f"{t}, {ei}"], m[pj]).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
                .vector_fxp_with_mode(FxpBinaryOp.SubFxpSat, BinaryArgMode.Mode10, cmp_i)
                .vector_fxp(FxpBinaryOp.LogicRightShift, 31))  # 1 where cmp_j > cmp_i
        rank = self._commit(self._way4(diff, f"{t}, {ei}", ej)
                            .vector_intra_slice_reduce(ej, m[f"{t}, {ei}"], m["1 # 4"], IntraSliceReduceOpI32.AddSat)
                            .vector_pad_way8(m["1 # 8"]), arena, f"{t}, {ei}, 1 # 2")
        # the ranks as the branch log of every pass over (t, e) that keeps the K best
        log = self._vrf(ctx, arena, rank.relabel(Element=m[f"{t}, {e}, 1 # 2"]), f"{t}, {e} / 4",
                        f"{e} % 4, 1 # 2", f"{t}, {e}, 1 # 2")
        keep = ValidBranchIds.of(*range(self.sk))

        def over_te(src: Dm, branch: Any = BranchMode.Unconditional) -> Any:
            return (ctx.main.begin(src.view()).fetch(dt.i32, m[t], m[pe]).collect(m[t], m[pe]).vector_init()
                    .vector_intra_slice_branch(branch))

        # 2.3 filtering (FilterCompaction, L8580–8584) and unpacking (L8586–8589)
        top = self._commit(over_te(packed, BranchMode.Vrf(log)).vector_filter(keep), arena, tk)
        indices = self._commit(self._over_tk(ctx, top).vector_logic(LogicBinaryOpI32.BitAnd, LOW), arena,
                               tk)
        score_bits = self._commit(self._over_tk(ctx, top).vector_logic(LogicBinaryOpI32.BitAnd, HIGH), arena,
                                  tk)
        scores_f32: Dm = score_bits.view().bitcast(dt.f32).as_tensor()  # the same bytes read as f32 (L8589)
        # 3.3 the expert mask (rank < K: the one-hot of the TopK indices summed over K) and its cumsum over the
        # tokens with the carried operand (L8627–8644, L8708–8721)
        rank_te = rank.relabel(Element=m[f"{t}, {e}, 1 # 2"])
        mask = self._commit(over_te(rank_te).vector_fxp(FxpBinaryOp.SubFxp, self.sk)
                            .vector_fxp(FxpBinaryOp.LogicRightShift, 31), arena, f"{t}, {e}")
        log_t = self._vec_vrf(ctx, arena, log_t_dm, t)
        cumsum = self._commit(over_te(mask, BranchMode.Vrf(log_t))
                              .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
                              .vector_write_operand(WriteOperand(branch=(0, 1))), arena, f"{t}, {e}")
        # blocks per expert, one expert per time step (lane 0 of a padded packet): Num_Blocks = ceil(Count / B)
        count = cumsum.view().tile(m[t], 1, m[e], self.st - 1)  # the last row of the cumsum: Count

        def over_e(src: Any, branch: Any = BranchMode.Unconditional) -> Any:
            return (ctx.main.begin(src).fetch(dt.i32, m[e], m["1 # 8"]).collect(m[e], m["1 # 8"]).vector_init()
                    .vector_intra_slice_branch(branch))

        blocks = self._commit(over_e(count).vector_fxp(FxpBinaryOp.AddFxp, self.sb - 1)
                              .vector_fxp(FxpBinaryOp.ArithRightShift, self.shift), arena, f"{e}, 1 # 8")
        # End = cumsum(Num_Blocks) over the experts (the carried operand again), then Start·B = (End − nb)·B
        log_e = self._vec_vrf(ctx, arena, log_e_dm, e)
        end = self._commit(over_e(blocks.view(), BranchMode.Vrf(log_e))
                           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
                           .vector_write_operand(WriteOperand(branch=(0, 1))), arena, f"{e}, 1 # 8")
        blocks_vrf = self._vrf(ctx, arena, blocks, e, "1 # 8", f"{e}, 1 # 8")
        start_b1 = self._commit(over_e(end.view()).vector_fxp(FxpBinaryOp.SubFxp, blocks_vrf)
                                .vector_fxp(FxpBinaryOp.LeftShift, self.shift)
                                .vector_clip(ClipBinaryOpI32.AddFxp, -1), arena, f"{e}, 1 # 8")  # Start·B − 1
        start_vrf = self._vrf(ctx, arena, start_b1, e, "1 # 8", f"{e}, 1 # 8")
        # Scatter_Idx = Start·B + Token_Rank − 1 (L8661–8663): dense over (t, e), packed by the TopK's filter
        # (its (t, k) order is the TopK indices' order)
        scatter_idx = self._commit(over_te(cumsum, BranchMode.Vrf(log)).vector_fxp(FxpBinaryOp.AddFxp, start_vrf)
                                   .vector_filter(keep), arena, tk)
        # the tokens of each block (the guard's count, L8616): the dense block index (Start·B + Token_Rank − 1)
        # >> log2 B where the expert is kept, 2³⁰ + … where not (the Comparison of the rank sets the group bit),
        # then #{(t, e) : block index = g} per block g (XOR with g is 0 exactly there)
        not_kept = BranchMode.Comparison([InputCmp.I32.False_(), InputCmp.I32.False_(), InputCmp.I32.False_(),
                                          InputCmp.I32.Greater(self.sk - 1)])
        cumsum_vrf = self._vrf(ctx, arena, cumsum, t, pe, f"{t}, {pe}")
        block_of = self._commit(
            over_te(rank_te, not_kept).vector_logic(LogicBinaryOpI32.BitAnd, 0)
            .vector_logic(LogicBinaryOpI32.BitOr, cumsum_vrf)
            .vector_logic(LogicBinaryOpI32.BitXor, VeBranchOperand.group(1 << 30, GroupId.One))
            .vector_fxp(FxpBinaryOp.AddFxp, start_vrf).vector_fxp(FxpBinaryOp.ArithRightShift, self.shift),
            arena, f"{t}, {e}")
        range_vrf = self._vec_vrf(ctx, arena, range_dm, g)
        te = self.te
        block_count = self._commit(
            ctx.main.begin(block_of.relabel(Element=m[te]).view())
            .fetch(dt.i32, m[f"{g}, {te} / 4"], m[f"{te} % 4 # 8"]).collect(m[f"{g}, {te} / 4"], m[f"{te} % 4 # 8"])
            .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
            .vector_logic(LogicBinaryOpI32.BitXor, range_vrf)  # 0 exactly where the block index is g
            .vector_fxp(FxpBinaryOp.SubFxp, 1).vector_fxp(FxpBinaryOp.LogicRightShift, 31)
            .vector_trim_way4(m[f"{te} % 4"])
            .vector_intra_slice_reduce(te, m[g], m["1 # 4"], IntraSliceReduceOpI32.AddSat)
            .vector_pad_way8(m["1 # 8"]), arena, f"{g}, 1 # 2")
        # Expert_IDs[g] = #{e : End[e] <= g} (L8645–8660): Block_Range[g] broadcast over the experts' lanes,
        # End[e] from the VRF; End − g − 1 = End + ~g is negative exactly where End <= g
        end_vrf = self._vrf(ctx, arena, end, e, "1 # 8", f"{e}, 1 # 8")
        below = (ctx.main.begin(range_dm.view()).fetch(dt.i32, m[g], m[pe]).collect(m[g], m[pe]).vector_init()
                 .vector_intra_slice_branch(BranchMode.Unconditional)
                 .vector_logic(LogicBinaryOpI32.BitXor, -1)  # ~g
                 .vector_fxp(FxpBinaryOp.AddFxp, end_vrf)  # End[e] − g − 1
                 .vector_fxp(FxpBinaryOp.LogicRightShift, 31))  # 1 where End[e] <= g
        expert_ids = self._commit(self._way4(below, g, e)
                                  .vector_intra_slice_reduce(e, m[g], m["1 # 4"], IntraSliceReduceOpI32.AddSat)
                                  .vector_pad_way8(m["1 # 8"]), arena, f"{g}, 1 # 2")
        return Routing(packed=top, rank=rank, indices=indices, scores=scores_f32, mask=mask, cumsum=cumsum,
                       blocks=blocks, end=end, expert_ids=expert_ids, scatter_idx=scatter_idx,
                       block_count=block_count)

    def _packet(self, axis: str) -> str:
        """An expert axis as a packet: padded to the flit's 8 lanes of i32 (L3544)."""
        return axis if self.se == 8 else f"{axis} # 8"

    def _way4(self, s: Any, time: str, axis: str) -> Any:
        """The i32 packet over an expert axis in Way4 packets for the reduce over it (L4842–4871): E = 8
        splits in two, E = 4 is the lower four lanes."""
        m = self.ax.m
        if self.se == 8:
            return s.vector_split(m[f"{time}, {axis} / 4"], m[f"{axis} % 4"])
        return s.vector_trim_way4(m[axis])

    def _vec_vrf(self, ctx: Context, arena: Arena, dm: Dm, axis: str) -> Vrf:
        """A vector over ``axis`` (one element per time step, lane 0 of a padded packet) into the VRF."""
        return self._vrf(ctx, arena, dm, axis, "1 # 8", f"{axis}, 1 # 8")

    def _over_tk(self, ctx: Context, src: Dm) -> Any:
        m, t, k = self.ax.m, self.t, self.k
        return (ctx.main.begin(src.view()).fetch(dt.i32, m[t], m[f"{k} # 8"]).collect(m[t], m[f"{k} # 8"])
                .vector_init().vector_intra_slice_branch(BranchMode.Unconditional))


def logger(n: int) -> npt.NDArray[Any]:
    """The static branch logger of a cumsum over n steps (L8712–8718): 0 first, 1 inside, 2 last."""
    ids = np.ones(n, np.int32)
    ids[0] = 0
    if n > 1:
        ids[-1] = 2
    return ids


class TokenRows:
    """The per-token float work of an MoE block, one token per slice (``Slice = m["T # 256"]``, L1081): the
    routing weights ``softmax`` over the K selected scores (L8590–8594) and the combine's weighted sum
    ``Σ_k w[t, k] · y[t, k, :]`` (L8697–8705).  K sits in the packet (one Way4 packet of f32, L4731; moved by
    DMAs in whole 8-byte words, L2424–2427: K is 2 or 4), so every reduction over K is one
    ``vector_intra_slice_reduce``; a per-token statistic reaches the next pass through the VRF (loaded by the sub
    context, L5063–5081)."""

    def __init__(self, ax: AxisSet, t: str = "T", k: str = "K", d: str = "D") -> None:
        call = f"visa.kernels.moe.TokenRows({t!r}, {k!r}, {d!r})"
        st, sk = ax.size(t), ax.size(k)
        if st > 256:
            raise HardwareLimitError(f"{t} = {st} tokens need more than the 256 slices of a cluster, one per slice "
                                     "(L1081)", call=call, level="Slice", mapping=f'm["{t}"]', axis=t,
                                     fix="split the tokens into tiles of at most 256")
        if sk not in (2, 4):
            raise LayoutError(f"{k} = {sk}: the K selected values of a token are one Way4 packet of f32 (L4731), "
                              "moved by DMAs in whole 8-byte words (L2424–2427): K is 2 or 4", call=call,
                              level="Packet", mapping=f'm["{k}"]', axis=k,
                              fix="select 2 or 4 experts per token (top-1: the weight is 1 and the combine a "
                                  "gather), or split K into groups of 4")
        m = ax.m
        self.ax, self.t, self.k, self.d = ax, t, k, d
        self.cluster, self.slice = m["1 # 2"], (m[f"{t} # 256"] if st < 256 else m[t])

    def spread(self, ctx: Context, arena: Arena, src: Dm | HbmIn) -> Dm:
        """A ``m["T, K"]`` tensor (e.g. the routing's TopK scores) moved to one token per slice (``m["K"]``)."""
        m = self.ax.m
        return src.to_dm(self.cluster, self.slice, m[self.k], ctx.tdma, arena.take_dm(4 * m[self.k].size))

    def _k(self, ctx: Context, src: Dm) -> Any:
        m, k = self.ax.m, self.k
        return (ctx.main.begin(src.view()).fetch(dt.f32, m["1"], m[f"{k} # 8"]).collect(m["1"], m[f"{k} # 8"])
                .vector_init().vector_intra_slice_branch(BranchMode.Unconditional).vector_trim_way4(m[f"{k} # 4"]))

    def _stat(self, ctx: Context, arena: Arena, s: Any, op: IntraSliceReduceOpF32) -> Vrf:
        m = self.ax.m
        out = (s.vector_intra_slice_reduce(self.k, m["1"], m["1 # 4"], op).vector_pad_way8(m["1 # 8"])
               .vector_final().commit(m["1 # 8"], arena.take_dm(32)))
        vrf: Vrf = (ctx.sub.begin(out.view()).fetch(dt.f32, m["1"], m["1 # 8"]).collect(m["1"], m["1 # 8"])
                    .to_vrf(m["1 # 8"], arena.take_vrf(32)))
        return vrf

    def softmax(self, ctx: Context, arena: Arena, scores: Dm) -> Dm:
        """``exp(s − max) / Σ exp(s − max)`` over K per token (f32 in, f32 out, ``m["K"]`` per slice): the max,
        the sum of exponentials and the quotient are three passes."""
        m = self.ax.m
        out_addr = arena.take_dm(32)
        with arena.scratch():
            mx = self._stat(ctx, arena, self._k(ctx, scores), IntraSliceReduceOpF32.Max)
            total = self._stat(ctx, arena, self._k(ctx, scores).vector_fp_binary(FpBinaryOp.SubF, mx)
                               .vector_fp_unary(FpUnaryOp.Exp), IntraSliceReduceOpF32.Add)
            s = (self._k(ctx, scores).vector_fp_binary(FpBinaryOp.SubF, mx).vector_fp_unary(FpUnaryOp.Exp)
                 .vector_fp_div(FpDivBinaryOp.DivF, total).vector_pad_way8(m[f"{self.k} # 8"]))
            out: Dm = s.vector_final().commit(m[self.k], out_addr)
        return out

    def to_vrf(self, ctx: Context, arena: Arena, w: Dm) -> Vrf:
        """The per-token weights (``m["K"]`` f32) into the VRF, for :meth:`weighted_sum`."""
        m = self.ax.m
        vrf: Vrf = (ctx.sub.begin(w.view()).fetch(dt.f32, m["1"], m[f"{self.k} # 8"])
                    .collect(m["1"], m[f"{self.k} # 8"]).to_vrf(m[f"{self.k} # 8"], arena.take_vrf(32)))
        return vrf

    def weighted_sum(self, ctx: Context, arena: Arena, y: Dm, w: Vrf) -> Dm:
        """``Σ_k w[k] · y[k, d]`` per token: ``y`` is the combine gather's ``m["K, D"]`` (bf16, fetched as f32,
        L1960) read with K in the packet and D on Time; one product and a K-term sum in f32 per output.  Returns
        f32 ``m["D, 1 # 8"]`` per slice (one flit per output; :meth:`store` writes the ``[T, D]`` tensor)."""
        m, k, d = self.ax.m, self.k, self.d
        out: Dm = (ctx.main.begin(y.view()).fetch(dt.f32, m[d], m[f"{k} # 8"]).collect(m[d], m[f"{k} # 8"])
                   .vector_init().vector_intra_slice_branch(BranchMode.Unconditional).vector_trim_way4(m[f"{k} # 4"])
                   .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), w)
                   .vector_intra_slice_reduce(k, m[d], m["1 # 4"], IntraSliceReduceOpF32.Add)
                   .vector_pad_way8(m["1 # 8"]).vector_final()
                   .commit(m[f"{d}, 1 # 8"], arena.take_dm(32 * m[d].size)))
        return out


class MoeBlock:
    """The whole MoE block of the manual (L8527–8721) for the axes ``t`` (tokens), ``d`` (model), ``f`` (expert
    hidden), ``e`` (experts), ``k`` (selected) and ``b`` (rows per block) of ``ax``: router GEMM,
    :class:`MoeRouting`, routing weights, dispatch scatter, per-block guarded expert MLP with gathered weights,
    combine gather and weighted sum.  Declares ``{e}_r`` (the router's 32 output columns, E of them scores) and
    ``One_`` (an axis of size 1: one block's expert id) besides :class:`MoeRouting`'s axes.

    Shapes: those of :class:`MoeRouting`, :class:`TokenRows` (K of 2 or 4) and :class:`~visa.kernels.Gemm`
    (``T ≤ 32`` or a multiple of 32; ``D`` and ``F`` multiples of 32).
    """

    def __init__(self, ax: AxisSet, t: str = "T", d: str = "D", f: str = "F", e: str = "E", k: str = "K",
                 b: str = "Bt", g: str = "G") -> None:
        from visa.kernels.gemm import Gemm

        self.routing = MoeRouting(ax, t, e, k, b, g)
        self.r, self.one = f"{e}_r", "One_"
        for name, size in ((self.r, 32 * -(-ax.size(e) // 32)), (self.one, 1)):
            if name not in ax:
                ax.declare(**{name: size})
        self.router = Gemm(ax, t, self.r, d)
        self.up, self.down = Gemm(ax, b, f, d), Gemm(ax, b, d, f)
        self.tokens = TokenRows(ax, t, k, d)
        self.ax, self.t, self.d, self.f, self.e, self.k, self.b, self.g = ax, t, d, f, e, k, b, g
        self.gr = self.routing.gr
        self.sizes = {name: ax.size(name) for name in (t, d, f, e, k, b)}

    def inputs_text(self) -> dict[str, str]:
        """The Element text of each HBM input, in the order :meth:`__call__` takes them (the constants last)."""
        t, d, f, e = self.t, self.d, self.f, self.e
        return {"x": f"{t}, {d}", "w_router": f"{self.r}, {d}", "w_up": f"{e}, {f}, {d}", "w_down": f"{e}, {d}, {f}",
                "x_blocked": f"{self.gr}, {d}", "y_blocked": f"{self.gr}, {d}", **self.routing.constant_text()}

    def block_rows(self, blocked: HbmTensor[Any, Any, Any], g: int) -> Any:
        """Block g's B rows of a ``[G·B, D]`` tensor, seen as ``m["Bt, D"]`` (a tile view, no copy)."""
        m, sb = self.ax.m, self.routing.sb
        return blocked.view().tile(m[self.gr], sb, m[f"{self.gr} = {sb}, {self.d}"], g * sb).relabel(
            m[f"{self.b}, {self.d}"])

    def __call__(self, ctx: Context, arena: Arena, x: Any, w_router: Any, w_up: Any, w_down: Any, x_blocked: Any,
                 y_blocked: Any, consts: Mapping[str, HbmIn]) -> dict[str, Any]:
        """Run the block on HBM inputs (``x`` bf16 ``[T, D]``; ``w_router`` ``[32, D]`` with zero rows beyond E;
        ``w_up`` ``[E, F, D]``; ``w_down`` ``[E, D, F]``; ``x_blocked`` and ``y_blocked`` ``[G·B, D]`` zeroed by
        the host, the worst-case grid the compiler allocates, L8617–8620; the constants of
        :meth:`MoeRouting.constants`).  Returns every intermediate: ``scores``, ``routing``, ``weights``,
        ``up{g}`` for each live block, ``y_restored``, ``moe_out`` (f32 ``[T, D]`` in HBM) and the schedule
        positions ``guards`` / ``blocks_end`` of the block loop."""
        m, t, d, e, k = self.ax.m, self.t, self.d, self.e, self.k
        st, sd, sk, se, sf = (self.sizes[n] for n in (t, d, k, e, self.f))
        out: dict[str, Any] = {}
        scores = out["scores"] = self.router(ctx, arena, x, w_router)
        routing = out["routing"] = self.routing(ctx, arena, scores.view().relabel(m[f"{t}, {e} # {m[self.r].size}"]),
                                                consts)
        weights = out["weights"] = self.tokens.softmax(ctx, arena, self.tokens.spread(ctx, arena, routing.scores))
        # dispatch (L8664–8672): x broadcast over K by a DMA, scattered to the rows Scatter_Idx[t, k]
        x_k = x.view().to_hbm(m["1"], m[f"{t}, {k}, {d}"], ctx.tdma, arena.take_hbm(2 * st * sk * sd))
        x_k.to_hbm_view(x_blocked.view().scatter(m[self.gr], routing.scatter_idx), ctx.tdma)
        out["guards"] = len(ctx.schedule.ops)
        for g in range(self.routing.grid):
            count = routing.block_count.view().tile(m[self.g], 1, m[f"{self.one}, 1 # 2"], g).as_tensor()
            if not ctx.main.when(count, lambda n: n > 0):
                continue  # an empty block: only the guard ran ("skip execution for empty Grids", L8616)
            eid = routing.expert_ids.view().tile(m[self.g], 1, m[f"{self.one}, 1 # 2"], g).as_tensor()
            wu = w_up.view().gather(m[e], eid).to_hbm(m["1"], m[f"{self.one}, {self.f}, {d}"], ctx.tdma,
                                                       arena.take_hbm(2 * sf * sd))
            wd = w_down.view().gather(m[e], eid).to_hbm(m["1"], m[f"{self.one}, {d}, {self.f}"], ctx.tdma,
                                                         arena.take_hbm(2 * sf * sd))
            up = out[f"up{g}"] = self.up(ctx, arena, self.block_rows(x_blocked, g),
                                         wu.view().relabel(m[f"{self.f}, {d}"]))
            y = self.down(ctx, arena, up, wd.view().relabel(m[f"{d}, {self.f}"]))
            y.to_hbm_view(self.block_rows(y_blocked, g), ctx.tdma)
        out["blocks_end"] = len(ctx.schedule.ops)
        # combine (L8690–8705): each (t, k)'s row back, one token per slice; the weighted sum over K
        y_restored = out["y_restored"] = y_blocked.view().gather(m[self.gr], routing.scatter_idx).to_dm(
            self.tokens.cluster, self.tokens.slice, m[f"{k}, {d}"], ctx.tdma, arena.take_dm(2 * sk * sd))
        summed = self.tokens.weighted_sum(ctx, arena, y_restored, self.tokens.to_vrf(ctx, arena, weights))
        out["moe_out"] = summed.to_hbm(m[f"{t}, {d}"], ctx.tdma, arena.take_hbm(4 * st * sd))
        return out
