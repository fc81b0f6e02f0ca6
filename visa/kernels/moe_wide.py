"""MoE routing at the manual's sizes (L8459–8460: E "typically 128"; K = 1, 4, 8 of llama4, gpt-oss, qwen3): the
TopK and FilterCompaction across the packets of a token, ``Expert_IDs`` by compaction as the manual writes it
(L8645–8660), and any block size B (issue 27 item 4).  :class:`~visa.kernels.moe.MoeRouting` uses it when E is
more than one packet (E > 8; or any B that is not a power of two).

One token per slice (``Slice = m["T # 256"]``, L1081) for the per-token work — E = 128 experts are 16 packets of
i32, each token's rank table 128 × 128 compares — and one slice for the work over tokens and blocks:

- **Branchless TopK** (L8540–8595): packing ``(bits << 16) | index`` and the comparison trick (L8547–8555); ranks
  by the all-to-all compare (L8563–8575) over the 16 packets of a token, reduced over ``E_j``'s Time and lanes;
  ``keep = rank < K``.
- **FilterCompaction across packets** (:func:`filter_compact`; L8580–8584, L2324): a filter packs within a packet
  (one 32-byte flit, L3544), so the kept elements of 16 packets are compacted by their running count: the
  carried register (L8708–8721) sums ``keep`` one element per time step — the register survives from a zeroing
  pass into the counting pass (issue 27 item 5) — and output slot ``o`` takes the element whose count is
  ``o + 1``, by a compare against the slot index and a reduce over the elements: exact, in order.
- **Cumsum over tokens** (L8627–8644): the mask gathered into one slice ``[T, E]`` (a DMA), summed by the carried
  operand with the static branch logger (L8712–8718), 16 lane groups at once.
- **Blocks for any B** (L8617–8641): ``Num_Blocks[e] = #{g : g·B < Count[e]} = ceil(Count[e] / B)`` by a compare
  and a reduce (no shift: B need not be a power of two); ``End`` by the carried operand over the experts;
  ``Start·B`` by ``MulInt``.
- **Expert_IDs by compaction** (L8645–8660): the manual's ``Grid(e, i) = e if Num_Blocks[e] − i > 0 else −1`` over
  ``(e, i)``, ``i`` below the most blocks one expert can take (``ceil(T / B)``), compacted across its packets
  (:func:`filter_compact`, empty trailing blocks get E); the same compaction of ``min(B, Count[e] − i·B)`` gives
  each block's token count (the guard's, L8616).
- **Scatter_Idx** (L8661–8663): ``Start[e]·B + Token_Rank − 1`` over every expert of a token, compacted by the
  token's TopK selection (the same counts), so its ``k`` order is the TopK indices'.

The constants the manual lists as inputs (Index_expert L8541, Block_Range L8622, the static branch logger L8712)
and the compare tables come from :meth:`WideRouting.constants`.
"""

from __future__ import annotations

from collections.abc import Mapping as AbcMapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.context import Context
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpI32,
    FxpBinaryOp,
    GroupId,
    InputCmp,
    IntraSliceReduceOpI32,
    LogicBinaryOpI32,
    OperandRead,
    VeBranchOperand,
    WriteOperand,
)
from visa.errors import HardwareLimitError, LayoutError
from visa.kernels.memory import Arena
from visa.mapping import AxisSet
from visa.tensors.handles import DmTensor, HbmTensor, HbmTensorView, VrfTensor

if TYPE_CHECKING:
    from visa.kernels.moe import Routing

__all__ = ["WideRouting", "filter_compact", "wide_grid"]

Dm = DmTensor[Any, Any, Any, Any, Any]
Vrf = VrfTensor[Any, Any, Any, Any, Any]
HbmIn = HbmTensor[Any, Any, Any] | HbmTensorView[Any, Any, Any]

FLIP = 0x7FFF0000  # the comparison trick's XOR on negative packed values (L8555)
LOW = 0xFFFF  # the index half of a packed value (L8589)
HIGH = -0x10000  # 0xffff0000 as i32: the score half
FAR = 1 << 30  # a compare-table entry never below a count


def wide_grid(tokens: int, block: int) -> int:
    """The most blocks one expert can take: each token sends it at most one row (``ceil(T / B)``)."""
    return -(-tokens // block)


class _Passes:
    """The helpers every pass uses: the layout (its Cluster and Slice) and the memories."""

    def __init__(self, ax: AxisSet, slice_: str) -> None:
        self.ax = ax
        m = ax.m
        self.cluster, self.slice = m["1 # 2"], m[slice_]

    def dm(self, ctx: Context, arena: Arena, src: HbmIn, element: str) -> Dm:
        nbytes = self.ax.m[element].size * src.dtype.size_bits // 8
        return src.to_dm(self.cluster, self.slice, self.ax.m[element], ctx.tdma, arena.take_dm(nbytes))

    def vrf(self, ctx: Context, arena: Arena, dm: Any, axis: str) -> Vrf:
        """An i32 vector over ``axis`` (a multiple of 8) into the VRF, dense (L5063–5081): by the sub context when its
        8-byte fetches read it (dense in DM), else by the main context (one every other element, ``[axis, 1 # 2]``,
        L1757–1759)."""
        m = self.ax.m
        t, p = m[f"{axis} / 8"], m[f"{axis} % 8"]
        tu = ctx.sub if dm.levels["Element"].size == m[axis].size else ctx.main
        out: Vrf = (tu.begin(dm.view()).fetch(dt.i32, t, p).collect(t, p)
                    .to_vrf(m[axis], arena.take_vrf(4 * m[axis].size)))
        return out

    def stream(self, ctx: Context, src: Any, time: str, packet: str, branch: Any = BranchMode.Unconditional) -> Any:
        m = self.ax.m
        return (ctx.main.begin(src.view() if isinstance(src, DmTensor) else src).fetch(dt.i32, m[time], m[packet])
                .collect(m[time], m[packet]).vector_init().vector_intra_slice_branch(branch))

    def commit(self, s: Any, arena: Arena, element: str) -> Dm:
        el = self.ax.m[element]
        out: Dm = s.vector_final().commit(el, arena.take_dm(4 * el.size))
        return out

    def reduce(self, s: Any, time: str, axis: str, arena: Arena, element: str) -> Dm:
        """Sum ``s`` (Way8 over ``axis``'s Time digit and lanes) over ``axis`` into one i32 per ``time`` position,
        committed as ``element`` (``[time, 1 # 2]``)."""
        m = self.ax.m
        out = (s.vector_split(m[f"{time}, {axis} / 4"], m[f"{axis} % 4"])
               .vector_intra_slice_reduce(axis, m[time], m["1 # 4"], IntraSliceReduceOpI32.AddSat)
               .vector_pad_way8(m["1 # 8"]))
        return self.commit(out, arena, element)


def filter_compact(ctx: Context, arena: Arena, p: _Passes, keep: Dm, values: Dm, j: str, o: str, counts: Dm | None,
                   slots: Vrf, fill: int) -> tuple[Dm, Dm]:
    """FilterCompaction across packets (L8580–8584, L2324; issue 27 item 4): ``out[s] = values[j]`` for the j that
    is the ``s``-th element (in order) with ``keep[j] = 1``, ``fill`` for the slots past the kept ones.

    ``keep`` (0/1) and ``values`` (0 where not kept) are dense i32 DM vectors over ``j`` (a multiple of 8);
    ``slots`` the VRF table ``1, 2, …`` over ``o``.  The running count of ``keep`` is the carried register summed
    one element per time step (lane 0 of a padded packet) after a pass that zeroes it — the register survives into
    the counting pass (L8708–8721; issue 27 item 5); ``counts`` reuses one.  Returns ``(out [o, 1 # 2], counts
    [j, 1 # 2])``."""
    m = p.ax.m
    if counts is None:
        # zero the operand register of every lane, then sum keep into it, one element per step: inclusive counts
        p.stream(ctx, keep.view().tile(m[j], 8, m[f"{j} = 8"], 0), "1", f"{j} = 8").vector_logic(
            LogicBinaryOpI32.BitAnd, 0).vector_write_operand(WriteOperand(branch=0)).vector_final().commit(
            m[f"{j} = 8"], arena.take_dm(32))
        counts = p.commit(p.stream(ctx, keep, j, "1 # 8").vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0))
                          .vector_write_operand(WriteOperand(branch=0)), arena, f"{j}, 1 # 2")
    vals = p.vrf(ctx, arena, values, j)
    # slot s takes the element whose inclusive count is s + 1: (count XOR slot) == 0 there; the values of the
    # elements not kept are 0, so the one kept element of each count is summed alone
    hit = (p.stream(ctx, counts.relabel(Element=m[f"{j}, 1 # 2"]), f"{o}, {j} / 8", f"{j} % 8")
           .vector_logic(LogicBinaryOpI32.BitXor, slots)
           .vector_fxp(FxpBinaryOp.SubFxp, 1).vector_fxp(FxpBinaryOp.LogicRightShift, 31)  # 1 where equal
           .vector_fxp(FxpBinaryOp.MulInt, vals))  # the value there, 0 elsewhere (one ALU of each class, L4823)
    summed = p.reduce(hit, o, j, arena, f"{o}, 1 # 2")
    if fill == 0:
        return summed, counts
    # an empty slot sums nothing (0); a kept one its value: fill slots with no element by the count of kept ones
    out = p.commit(p.stream(ctx, summed.relabel(Element=m[f"{o}, 1 # 2"]), o, "1 # 8")
                   .vector_fxp(FxpBinaryOp.AddFxp, fill), arena, f"{o}, 1 # 2")
    return out, counts


class WideRouting:
    """Routing for ``E`` a multiple of 8 (more than one packet), ``1 ≤ K ≤ E``, any ``B ≤ 32``, ``2 ≤ T ≤ 256``
    (the module docstring).  Built by :class:`~visa.kernels.moe.MoeRouting`, which declares the axes."""

    def __init__(self, owner: Any) -> None:
        self.o = owner
        ax, t, e, k = owner.ax, owner.t, owner.e, owner.k
        st, se, sk, sb = owner.st, owner.se, owner.sk, owner.sb
        call = f"visa.kernels.MoeRouting({t!r}, {e!r}, {k!r}, {owner.b!r})"
        if st > 256:
            raise HardwareLimitError(f"{t} = {st} tokens need more than the 256 slices of a cluster, one per slice "
                                     "(L1081)", call=call, level="Slice", mapping=f'm["{t}"]', axis=t,
                                     fix="route the tokens in tiles of at most 256")
        if se % 8:
            raise LayoutError(f"{e} = {se}: a token's experts fill whole 32-byte packets of i32 (8 lanes, L3544)",
                              call=call, level="Packet", mapping=f'm["{e}"]', axis=e,
                              fix=f"pad {e} to a multiple of 8 with experts whose router scores are very negative")
        self.mb = wide_grid(st, sb)
        names = {"gj": (f"{owner.g}_j", se * self.mb), "ge": (f"{owner.g}_e", se), "gi": (f"{owner.g}_i", self.mb),
                 "g8": (f"{owner.g}_8", -(-owner.grid // 8) * 8), "k8": (f"{k}_8", -(-sk // 8) * 8)}
        for name, size in names.values():
            if name not in ax:
                ax.declare(**{name: size})
        self.gj, self.ge, self.gi, self.g8, self.k8 = (n for n, _ in names.values())
        self.rows = _Passes(ax, f"{t} # 256")  # one token per slice
        self.one = _Passes(ax, "1 # 256")  # everything in slice 0

    def constants(self) -> dict[str, npt.NDArray[Any]]:
        """The static tables (i32): Index_expert (L8541), ``e − E``, Block_Range (L8622) as ``g·B`` (padded with
        large values), ``i·B`` of the grid's ``(e, i)``, the slot tables ``1, 2, …`` of the TopK and of the blocks,
        the static branch loggers over the tokens and the experts (L8712–8718)."""
        from visa.kernels.moe import logger

        o = self.o
        g8 = o.ax.size(self.g8)
        gb = np.full(g8, FAR, np.int32)
        gb[: o.grid] = np.arange(o.grid) * o.sb
        return {"index": np.arange(o.se, dtype=np.int32), "eminus": np.arange(o.se, dtype=np.int32) - o.se,
                "gb": gb, "ib": np.tile(np.arange(self.mb, dtype=np.int32) * o.sb, o.se),
                "k_slots": np.arange(1, o.ax.size(self.k8) + 1, dtype=np.int32),
                "g_slots": np.arange(1, g8 + 1, dtype=np.int32), "log_t": logger(o.st), "log_e": logger(o.se)}

    def constant_text(self) -> dict[str, str]:
        """Each constant's Element text."""
        o = self.o
        return {"index": o.e, "eminus": o.e, "gb": self.g8, "ib": self.gj, "k_slots": self.k8,
                "g_slots": self.g8, "log_t": o._even(o.t), "log_e": o.e}

    def __call__(self, ctx: Context, arena: Arena, scores: HbmIn, consts: AbcMapping[str, HbmIn]) -> Routing:
        """Route ``scores`` (bf16 ``m["T, E"]`` in HBM) with the tables of :meth:`constants` (keyed as there).
        Each stage's VRF operands live in a scratch block of the VRF (8 KiB per slice, L1090)."""
        from visa.kernels.moe import Routing

        o, m = self.o, self.o.ax.m
        t, e, ei, ej = o.t, o.e, o.ei, o.ej
        gj, ge, gi, g8, k8 = self.gj, self.ge, self.gi, self.g8, self.k8
        rp, one = self.rows, self.one
        grid = f"[{ge}, {gi}]"
        # -- per token (one per slice): pack, rank, keep, the TopK by compaction ------------------------------
        s_dm = rp.dm(ctx, arena, scores, e)
        negative = BranchMode.Comparison([InputCmp.I32.False_(), InputCmp.I32.False_(), InputCmp.I32.False_(),
                                          InputCmp.I32.Less(0)])
        with arena.scratch(dm=False):
            index = rp.vrf(ctx, arena, rp.dm(ctx, arena, consts["index"], e), e)

            def pack(flip: bool) -> Dm:
                s = (ctx.main.begin(s_dm.view().bitcast(dt.i16)).fetch(dt.i32, m[f"{e} / 8"], m[f"{e} % 8"])
                     .collect(m[f"{e} / 8"], m[f"{e} % 8"]).vector_init().vector_intra_slice_branch(negative)
                     .vector_logic(LogicBinaryOpI32.LeftShift, 16).vector_logic(LogicBinaryOpI32.BitOr, index))
                if flip:
                    s = s.vector_logic(LogicBinaryOpI32.BitXor, VeBranchOperand.group(FLIP, GroupId.One))
                return rp.commit(s, arena, e)

            packed, cmp = pack(False), pack(True)
        with arena.scratch(dm=False):
            cmp_i = rp.vrf(ctx, arena, cmp.relabel(Element=m[ei]), ei)
            diff = (rp.stream(ctx, cmp.relabel(Element=m[ej]), f"{ei}, {ej} / 8", f"{ej} % 8")
                    .vector_fxp_with_mode(FxpBinaryOp.SubFxpSat, BinaryArgMode.Mode10, cmp_i)
                    .vector_fxp(FxpBinaryOp.LogicRightShift, 31))  # 1 where cmp_j > cmp_i (L8563–8575)
            rank = rp.reduce(diff, ei, ej, arena, f"{ei}, 1 # 2")
        rank_e = rank.relabel(Element=m[f"{e}, 1 # 2"])
        mask = rp.commit(rp.stream(ctx, rank_e, f"{e} / 8", f"{e} % 8").vector_fxp(FxpBinaryOp.SubFxp, o.sk)
                         .vector_fxp(FxpBinaryOp.LogicRightShift, 31), arena, e)  # rank < K
        with arena.scratch(dm=False):
            kept = rp.commit(rp.stream(ctx, packed, f"{e} / 8", f"{e} % 8").vector_fxp(
                FxpBinaryOp.MulInt, rp.vrf(ctx, arena, mask, e)), arena, e)  # the packed value where kept, else 0
        k_slots_dm = rp.dm(ctx, arena, consts["k_slots"], k8)
        with arena.scratch(dm=False):
            top, counts = filter_compact(ctx, arena, rp, mask, kept, e, k8, None, rp.vrf(ctx, arena, k_slots_dm, k8),
                                         0)
        top_k = top.relabel(Element=m[f"{k8}, 1 # 2"])
        indices = rp.commit(rp.stream(ctx, top_k, k8, "1 # 8").vector_logic(LogicBinaryOpI32.BitAnd, LOW),
                            arena, f"{k8}, 1 # 2")
        bits = rp.commit(rp.stream(ctx, top_k, k8, "1 # 8").vector_logic(LogicBinaryOpI32.BitAnd, HIGH),
                         arena, f"{k8}, 1 # 2")
        # -- over tokens (slice 0): the mask's cumsum, counts, blocks, End, Start·B ------------------------------
        mask_t = mask.view().to_dm(one.cluster, one.slice, m[f"{t}, {e}"], ctx.tdma, arena.take_dm(4 * o.st * o.se))
        with arena.scratch(dm=False):
            log_t = self._log_vrf(ctx, arena, consts["log_t"], t)
            cumsum = one.commit(one.stream(ctx, mask_t, f"{e} / 8, {t}", f"{e} % 8", BranchMode.Vrf(log_t))
                                .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
                                .vector_write_operand(WriteOperand(branch=(0, 1))), arena, f"{t}, {e}")
        count_dm = cumsum.view().tile(m[t], 1, m[e], o.st - 1).to_dm(  # Count: the cumsum's last row
            one.cluster, one.slice, m[e], ctx.tdma, arena.take_dm(4 * o.se))
        gb_dm = one.dm(ctx, arena, consts["gb"], g8)
        with arena.scratch(dm=False):
            below = (one.stream(ctx, gb_dm, f"{e}, {g8} / 8", f"{g8} % 8")
                     .vector_fxp(FxpBinaryOp.SubFxp, one.vrf(ctx, arena, count_dm, e))
                     .vector_fxp(FxpBinaryOp.LogicRightShift, 31))  # 1 where g·B < Count[e]
            blocks = one.reduce(below, e, g8, arena, f"{e}, 1 # 2")  # #{g : g·B < Count} = ceil(Count / B)
        with arena.scratch(dm=False):
            log_e = self._log_vrf(ctx, arena, consts["log_e"], e)
            end = one.commit(one.stream(ctx, blocks.relabel(Element=m[f"{e}, 1 # 2"]), e, "1 # 8",
                                        BranchMode.Vrf(log_e))
                             .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
                             .vector_write_operand(WriteOperand(branch=(0, 1))), arena, f"{e}, 1 # 2")
        with arena.scratch(dm=False):
            start_b = one.commit(one.stream(ctx, end.relabel(Element=m[f"{e}, 1 # 2"]), e, "1 # 8")
                                 .vector_fxp(FxpBinaryOp.SubFxp, self._vec_vrf(ctx, arena, blocks, e))
                                 .vector_fxp(FxpBinaryOp.MulInt, o.sb)
                                 .vector_clip(ClipBinaryOpI32.AddFxp, -1), arena, f"{e}, 1 # 2")  # Start·B − 1
        # -- Expert_IDs and the blocks' token counts: the manual's Grid(e, i), compacted (L8645–8660) -------------
        ib = one.dm(ctx, arena, consts["ib"], gj)
        eminus_dm = one.dm(ctx, arena, consts["eminus"], e)
        with arena.scratch(dm=False):
            rest = one.commit(one.stream(ctx, ib.relabel(Element=m[grid]), f"{grid} / 8", f"{grid} % 8")
                              .vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10,
                                                    one.vrf(ctx, arena, count_dm.relabel(Element=m[ge]), ge)),
                              arena, grid).relabel(Element=m[gj])  # Count[e] − i·B: block i of e exists where > 0
        grid_keep = one.commit(one.stream(ctx, rest, f"{gj} / 8", f"{gj} % 8")
                               .vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 0)
                               .vector_fxp(FxpBinaryOp.LogicRightShift, 31), arena, gj)
        with arena.scratch(dm=False):
            ids_val = one.commit(one.stream(ctx, grid_keep.relabel(Element=m[grid]), f"{grid} / 8", f"{grid} % 8")
                                 .vector_fxp(FxpBinaryOp.MulInt,
                                             one.vrf(ctx, arena, eminus_dm.relabel(Element=m[ge]), ge)),
                                 arena, grid).relabel(Element=m[gj])  # e − E where block (e, i) exists, else 0
        cnt_val = one.commit(one.stream(ctx, rest, f"{gj} / 8", f"{gj} % 8")
                             .vector_clip(ClipBinaryOpI32.Min, o.sb).vector_clip(ClipBinaryOpI32.Max, 0),
                             arena, gj)  # min(B, Count[e] − i·B) where the block exists, else 0
        g_slots_dm = one.dm(ctx, arena, consts["g_slots"], g8)
        with arena.scratch(dm=False):
            slots = one.vrf(ctx, arena, g_slots_dm, g8)
            expert_ids, grid_counts = filter_compact(ctx, arena, one, grid_keep, ids_val, gj, g8, None, slots, o.se)
        with arena.scratch(dm=False):
            block_count, _ = filter_compact(ctx, arena, one, grid_keep, cnt_val, gj, g8, grid_counts,
                                            one.vrf(ctx, arena, g_slots_dm, g8), 0)
        # -- Scatter_Idx per token: Start·B + Token_Rank − 1 over its experts, compacted by its TopK (L8661–8663) -
        cum_rows = cumsum.view().to_dm(rp.cluster, rp.slice, m[e], ctx.tdma, arena.take_dm(4 * o.se))
        start_rows = start_b.view().to_dm(rp.cluster, rp.slice, m[f"{e}, 1 # 2"], ctx.tdma, arena.take_dm(8 * o.se))
        with arena.scratch(dm=False):
            place = rp.commit(rp.stream(ctx, cum_rows, f"{e} / 8", f"{e} % 8")
                              .vector_fxp(FxpBinaryOp.AddFxp, rp.vrf(ctx, arena, start_rows.relabel(
                                  Element=m[f"{e}, 1 # 2"]), e))
                              .vector_fxp(FxpBinaryOp.MulInt, rp.vrf(ctx, arena, mask, e)), arena, e)
        with arena.scratch(dm=False):
            scatter, _ = filter_compact(ctx, arena, rp, mask, place, e, k8, counts, rp.vrf(ctx, arena, k_slots_dm, k8),
                                        0)
        return Routing(packed=self._k(top), rank=rank, indices=self._k(indices),
                       scores=self._k(bits).view().bitcast(dt.f32).as_tensor(), mask=mask, cumsum=cumsum,
                       blocks=blocks, end=end, expert_ids=self._g(expert_ids), scatter_idx=self._k(scatter),
                       block_count=self._g(block_count))

    def _k(self, t: Dm) -> Dm:
        """A ``[K8, 1 # 2]`` per-token result as ``[K, 1 # 2]`` (its first K slots)."""
        m = self.o.ax.m
        out: Dm = t.relabel(Element=m[f"{self.k8}, 1 # 2"]).view().tile(
            m[self.k8], self.o.sk, m[f"{self.k8} = {self.o.sk}, 1 # 2"], 0).relabel(m[f"{self.o.k}, 1 # 2"]).as_tensor()
        return out

    def _g(self, t: Dm) -> Dm:
        """A ``[G8, 1 # 2]`` slice-0 result as ``[G, 1 # 2]`` (its first G slots)."""
        m, o = self.o.ax.m, self.o
        out: Dm = t.relabel(Element=m[f"{self.g8}, 1 # 2"]).view().tile(
            m[self.g8], o.grid, m[f"{self.g8} = {o.grid}, 1 # 2"], 0).relabel(m[f"{o.g}, 1 # 2"]).as_tensor()
        return out

    def _vec_vrf(self, ctx: Context, arena: Arena, t: Dm, axis: str) -> Vrf:
        """A ``[axis, 1 # 2]`` vector into slice 0's VRF as ``[axis, 1 # 8]`` (one value per time step, lane 0): the
        operand of a pass over ``axis`` one step at a time."""
        m = self.o.ax.m
        vrf: Vrf = (ctx.sub.begin(t.relabel(Element=m[f"{axis}, 1 # 2"]).view()).fetch(dt.i32, m[axis], m["1 # 8"])
                    .collect(m[axis], m["1 # 8"]).to_vrf(m[f"{axis}, 1 # 8"], arena.take_vrf(32 * m[axis].size)))
        return vrf

    def _log_vrf(self, ctx: Context, arena: Arena, log: HbmIn, axis: str) -> Vrf:
        """A static branch logger over ``axis`` (one id per time step, lane 0) into slice 0's VRF."""
        o, m = self.o, self.o.ax.m
        dm = self.one.dm(ctx, arena, log, o._even(axis))
        vrf: Vrf = (ctx.sub.begin(dm.view()).fetch(dt.i32, m[axis], m["1 # 8"]).collect(m[axis], m["1 # 8"])
                    .to_vrf(m[f"{axis}, 1 # 8"], arena.take_vrf(32 * m[axis].size)))
        return vrf
