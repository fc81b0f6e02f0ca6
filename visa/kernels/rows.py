"""Row-wise kernels over a ``[rows, cols]`` activation: RMSNorm, softmax, SwiGLU (Vector Engine passes).

A :class:`Rows` is built from an :class:`~visa.mapping.AxisSet` and the names of its row and column axes; it
derives every mapping the passes need from their sizes, and refuses shapes the layout cannot hold.  The layout
is one row per slice (``Slice = m["T # 256"]``, manual L1081), the row's columns the DM Element (``m["D"]``,
bf16).  Each pass fetches the row as f32 (the fetch's bf16 → f32 cast, L1960), eight lanes per packet (whole
32-byte flits of data), split into two Way4 flits for the float stages (L4842–4864, L4731, L4907), and writes
f32 per-row statistics as one 32-byte flit per row (``m["1 # 8"]``).  A per-row statistic reaches the next pass
as a VRF operand, loaded by the sub context and broadcast over the row's columns (L5063–5081).

The operations are the engines' own (``plan``/``execute`` live in ``visa.engines``): this module only chooses
mappings, addresses and the order of passes.  Float results are f32-exact up to the documented roundings; the
tests derive their tolerances from them.
"""

from __future__ import annotations

from typing import Any

from visa import dtypes as dt
from visa.context import Context
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpUnaryOp,
    GroupId,
    IntraSliceReduceOpF32,
    LogicBinaryOpF32,
    Stash,
    VeBranchOperand,
)
from visa.errors import HardwareLimitError, LayoutError
from visa.kernels.memory import Arena, Maps, pair_axis
from visa.mapping import AxisSet, Mapping
from visa.tensors.handles import DmTensor, HbmTensor, HbmTensorView, VrfTensor

__all__ = ["Rows", "MASKED_ID", "NEG_INF_BITS"]

#: The ExecutionId of a masked element in a branch log (group One, bit 3: L4795, L5061–5062).
MASKED_ID = 8
#: −inf's bits (0xFF800000) as the f32 constant a Logic op ORs in (Logic works on the bit pattern, L4806–4813).
NEG_INF_BITS = -float("inf")

Dm = DmTensor[Any, Any, Any, Any, Any]
Vrf = VrfTensor[Any, Any, Any, Any, Any]
Hbm = HbmTensor[Any, Any, Any]
HbmIn = HbmTensor[Any, Any, Any] | HbmTensorView[Any, Any, Any]  # a tensor, or a view of one (tile, relabel)


class Rows:
    """Row-wise kernels for ``[rows, cols]`` tensors of the axis set ``ax`` (one row per slice).

    ``Rows(ax, "T", "D")`` needs ``|T| ≤ 256`` (one row per slice of a cluster, L1081) and ``|D|`` a multiple of
    8 (whole 32-byte flits of f32 after the cast's four-lane packets are padded, L1701, L4731).  ``chip``
    (default ``"1"``) names the Chip level the rows live on; the passes take it from the tensors they are given
    (an HBM tensor laid out over ``m["C"]`` runs on every chip of the launch at once).
    """

    def __init__(self, ax: AxisSet, rows: str, cols: str, *, chip: str = "1") -> None:
        self.ax, self.rows, self.cols = ax, rows, cols
        t, d = ax.size(rows), ax.size(cols)
        call = f"visa.kernels.Rows({rows!r}, {cols!r})"
        if t > 256:
            raise HardwareLimitError(f"{t} rows need more than the 256 slices of a cluster, one row per slice "
                                     "(manual L1081)", call=call, level="Slice", mapping=f'm["{rows}"]',
                                     axis=rows, fix="split the rows into tiles of at most 256")
        if d % 8:
            raise LayoutError(f"{cols} = {d} is not a multiple of 8: a row must fill whole 32-byte flits of f32 "
                              "(manual L1701, L4731)", call=call, level="Element", mapping=f'm["{cols}"]',
                              axis=cols, fix="pad the columns to a multiple of 8")
        m = ax.m
        self.maps = Maps(ax)  # (the mappings every pass asks, parsed once)
        self.t, self.d = t, d
        self.chip, self.cluster = m[chip], m["1 # 2"]  # every pass keeps its input's Chip level (L1079)
        self.slice: Mapping = m[f"{rows} # 256"] if t < 256 else m[rows]
        self.element: Mapping = m[cols]
        self.time4: Mapping = m[f"{cols} / 4"]
        self.packet4: Mapping = m[f"{cols} % 4"]
        self.time8: Mapping = m[f"{cols} / 8"]
        self.packet8: Mapping = m[f"{cols} % 8"]
        self.stat: Mapping = m["1 # 8"]

    # -- moving rows in and out ----------------------------------------------------------------------------
    def load(self, ctx: Context, arena: Arena, x: HbmIn | Dm) -> Dm:
        """HBM ``[rows, cols]`` → DM, one row per slice (or DM in another layout → DM, one DMA, L2659–2681)."""
        addr = arena.take_dm(self.d * x.dtype.size_bits // 8)
        return x.to_dm(self.cluster, self.slice, self.element, ctx.tdma, addr)

    def load_broadcast(self, ctx: Context, arena: Arena, g: HbmIn) -> Vrf:
        """A ``[cols]`` vector (e.g. RMSNorm's gain) into every row's slice, then into the VRF as f32."""
        dm = g.to_dm(self.cluster, self.slice, self.element, ctx.tdma, arena.take_dm(self.d * g.dtype.size_bits // 8))
        return self.vector_to_vrf(ctx, arena, dm.view())

    def vector_to_vrf(self, ctx: Context, arena: Arena, g: Any) -> Vrf:
        """A ``[cols]`` vector already in every row's slice of DM (a view: e.g. one row of a table of gains moved
        into DM once for many norms) into the VRF as f32, by the sub context (L5063–5081)."""
        m = self.maps
        return (ctx.sub.begin(g)
                .fetch(dt.f32, m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                .collect(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                .to_vrf(self.element, arena.take_vrf(4 * self.d)))

    def store(self, ctx: Context, arena: Arena, x: Dm) -> Hbm:
        """DM rows → a new HBM ``[rows, cols]`` tensor."""
        addr = arena.take_hbm(self.t * self.d * x.dtype.size_bits // 8)
        return x.to_hbm(self.maps[f"{self.rows}, {self.cols}"], ctx.tdma, addr)

    def to_vrf(self, ctx: Context, arena: Arena, stat: Dm) -> Vrf:
        """A per-row statistic (one f32 per slice) into the VRF through the sub context (L5063)."""
        return (ctx.sub.begin(stat.view())
                .fetch(dt.f32, self.maps["1"], self.stat)
                .collect(self.maps["1"], self.stat)
                .to_vrf(self.stat, arena.take_vrf(32)))

    # -- passes ------------------------------------------------------------------------------------------
    def branch_log(self, ctx: Context, arena: Arena, ids: Dm) -> Vrf:
        """The branch log (L4802, L8090–8099): an i32 ``[rows, cols]`` DM tensor of ExecutionIds in this layout
        (0 to keep an element, :data:`MASKED_ID` to mask it), loaded into the VRF by the sub context — the
        "Branch Logger" of an earlier pass.  ``4·cols`` bytes of VRF per slice (8 KiB, L1090)."""
        m = self.maps
        return (ctx.sub.begin(ids.view())
                .fetch(dt.i32, m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                .collect(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                .to_vrf(self.element, arena.take_vrf(4 * self.d)))

    def _row(self, ctx: Context, x: Dm, log: Vrf | None = None) -> Any:
        """Fetch a row as f32, eight lanes per packet, split into the Vector Engine's Way4 stages (``vector_split``,
        L4842–4864: the upper four lanes become the next time step, so the Way4 stream is the row's elements in
        order, four at a time — the stream a fetch of four lanes padded to eight and trimmed gave, from flits that
        carry data in all eight lanes: no copy to drop padding lanes).  With a branch ``log`` the Branch stage
        reads each element's ExecutionId from it (``BranchMode.Vrf``, L4802) and the elements of group One become
        −inf by two Logic ops on the group (bits AND 0, then OR −inf's bits; Logic runs in Way8, L4806, before the
        split to Way4): the manual's ``scores_masked`` (L8090–8099)."""
        s: Any = (ctx.main.begin(x.view())
                  .fetch(dt.f32, self.time8, self.packet8)
                  .collect(self.time8, self.packet8)
                  .vector_init())
        if log is None:
            s = s.vector_intra_slice_branch(BranchMode.Unconditional)
        else:
            s = (s.vector_intra_slice_branch(BranchMode.Vrf(log))
                 .vector_logic(LogicBinaryOpF32.BitAnd, VeBranchOperand.group(0.0, GroupId.One))
                 .vector_logic(LogicBinaryOpF32.BitOr, VeBranchOperand.group(NEG_INF_BITS, GroupId.One)))
        return s.vector_split(self.time4, self.packet4)

    def _reduce(self, ctx: Context, arena: Arena, s: Any, op: IntraSliceReduceOpF32, *,
                reciprocal: bool = False) -> Dm:
        """Reduce the row's columns (Time and lanes) to one f32 per row, committed as one flit; ``reciprocal``:
        ``1 / Σ`` by the FpDiv stage, which follows IntraSliceReduce in the same pass (L4907–4918, the stage
        order of L4700–4712) — the same division :meth:`finish_stat` does in a pass of its own."""
        r = s.vector_intra_slice_reduce(self.cols, self.maps["1"], self.maps["1 # 4"], op)
        if reciprocal:
            r = r.vector_fp_div_with_mode(FpDivBinaryOp.DivF, BinaryArgMode.Mode10, 1.0)  # 1 / v
        out: Dm = r.vector_pad_way8(self.stat).vector_final().commit(self.stat, arena.take_dm(32))
        return out

    def _rows_out(self, ctx: Context, arena: Arena, s: Any, address: int | None = None) -> Dm:
        """Widen four-lane packets to eight, cast to bf16 and commit the row (L6756) at ``address`` (default: a
        new DM allocation)."""
        m = self.maps
        out: Dm = (s.vector_concat(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                   .vector_final()
                   .cast(dt.bf16, m[f"{self.cols} % 8 # 16"])
                   .commit(self.element, arena.take_dm(2 * self.d) if address is None else address))
        return out

    def sum_of_squares(self, ctx: Context, arena: Arena, x: Dm) -> Dm:
        """Σ_cols x² per row (f32): stash the value, multiply by the stash (L4983), reduce."""
        s = self._row(ctx, x).vector_stash().vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
        return self._reduce(ctx, arena, s, IntraSliceReduceOpF32.Add)

    def row_max(self, ctx: Context, arena: Arena, x: Dm, log: Vrf | None = None) -> Dm:
        """max_cols x per row (f32); the elements a branch ``log`` masks count as −inf."""
        return self._reduce(ctx, arena, self._row(ctx, x, log), IntraSliceReduceOpF32.Max)

    def sum_exp(self, ctx: Context, arena: Arena, x: Dm, mx: Vrf, log: Vrf | None = None, *,
                reciprocal: bool = False) -> Dm:
        """Σ_cols exp(x − max) per row (f32), ``mx`` the row max in the VRF; masked elements add exp(−inf) = 0.
        ``reciprocal``: ``1 / Σ`` instead, in the same pass (:meth:`_reduce`)."""
        s = self._row(ctx, x, log).vector_fp_binary(FpBinaryOp.SubF, mx).vector_fp_unary(FpUnaryOp.Exp)
        return self._reduce(ctx, arena, s, IntraSliceReduceOpF32.Add, reciprocal=reciprocal)

    def finish_stat(self, ctx: Context, arena: Arena, stat: Dm, *, scale: float = 1.0, add: float = 0.0,
                    sqrt: bool = False, reciprocal: bool = False) -> Dm:
        """One flit per row: ``v ← v·scale + add``, then √, then 1/v (the FpDiv stage, L4914), as asked."""
        m = self.maps
        s: Any = (ctx.main.begin(stat.view()).fetch(dt.f32, m["1"], self.stat).collect(m["1"], self.stat)
                  .vector_init().vector_intra_slice_branch(BranchMode.Unconditional).vector_trim_way4(m["1 # 4"]))
        if scale != 1.0:
            s = s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), scale)
        if add != 0.0:
            s = s.vector_fp_binary(FpBinaryOp.AddF, add)
        if sqrt:
            s = s.vector_fp_unary(FpUnaryOp.Sqrt)
        if reciprocal:
            s = s.vector_fp_div_with_mode(FpDivBinaryOp.DivF, BinaryArgMode.Mode10, 1.0)  # 1 / v
        out: Dm = s.vector_pad_way8(self.stat).vector_final().commit(self.stat, arena.take_dm(32))
        return out

    # -- kernels -----------------------------------------------------------------------------------------
    def rms_norm(self, ctx: Context, arena: Arena, x: Dm, gain: Vrf, *, eps: float) -> Dm:
        """RMSNorm (Llama 3, L8240–8245): ``x / sqrt(mean(x²) + eps) · gain``, bf16 in and out, f32 inside.

        Three passes: Σx² per row; ``1 / sqrt(Σ/cols + eps)`` per row; ``x · rstd · gain`` (two multipliers,
        ``Mul0`` and ``Mul1``, L4890–4893), cast to bf16.  The gain (f32, ``4·cols`` bytes) and rstd (one flit)
        share the slice's 8 KiB VRF (L1090): ``cols ≤ 2040``; the VRF refuses more (an ``AddressError``).
        Σx² is an f32 sum: a row with ``|x| ≳ 2⁶³`` overflows it to inf, so rstd is 0 and the row comes out
        zeros — what an f32 RMSNorm computes (numpy's in float32, PyTorch's Llama RMSNorm), not float64's.
        """
        out = arena.take_dm(2 * self.d)
        with arena.scratch():
            rstd = self.finish_stat(ctx, arena, self.sum_of_squares(ctx, arena, x), scale=1.0 / self.d, add=eps,
                                    sqrt=True, reciprocal=True)
            r = self.to_vrf(ctx, arena, rstd)
            s = (self._row(ctx, x)
                 .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), r)
                 .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), gain))
            return self._rows_out(ctx, arena, s, out)

    def softmax(self, ctx: Context, arena: Arena, x: Dm, *, scale: float = 1.0, log: Vrf | None = None) -> Dm:
        """Row-wise softmax of ``scale · x`` with max subtraction: ``exp(x − max) / Σ exp(x − max)``.

        ``scale`` (e.g. 1/√d_k for attention scores) must be positive; it is applied to the bf16 scores as they
        are read.  Passes: the row max; Σ exp(x − max) and its reciprocal; ``exp(x − max) · (1/Σ)`` cast to
        bf16 (the reciprocal on the FpDiv stage of the sum's own pass, after its IntraSliceReduce, L4700–4712).  The
        exponential is recomputed rather than stored (the row is read three times, written once).
        A branch ``log`` (:meth:`branch_log`) masks elements in each of the three passes: they read as −inf,
        so their probability is exactly 0 (the causal mask by the branch log, L8090–8100).  Every row must keep
        at least one element (a row of −inf has no softmax: its max is −inf and −inf − (−inf) is NaN).
        """
        if scale <= 0:
            raise LayoutError(f"softmax scale must be positive, got {scale}", call="visa.kernels.Rows.softmax",
                              level="Element", mapping=repr(self.element), axis=self.cols,
                              fix="fold a negative factor into the scores")
        out = arena.take_dm(2 * self.d)
        with arena.scratch():
            src = x
            if scale != 1.0:
                src = self.scaled(ctx, arena, x, scale)
            mx = self.to_vrf(ctx, arena, self.row_max(ctx, arena, src, log))
            # Σ exp(x − max) and its reciprocal in one pass: FpDiv follows IntraSliceReduce (L4700–4712)
            inv = self.to_vrf(ctx, arena, self.sum_exp(ctx, arena, src, mx, log, reciprocal=True))
            s = (self._row(ctx, src, log)
                 .vector_fp_binary(FpBinaryOp.SubF, mx)
                 .vector_fp_unary(FpUnaryOp.Exp)
                 .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), inv))
            return self._rows_out(ctx, arena, s, out)

    def scaled(self, ctx: Context, arena: Arena, x: Dm, scale: float) -> Dm:
        """``scale · x`` in f32, written back as f32 rows (no bf16 rounding before the softmax)."""
        m = self.maps
        s = self._row(ctx, x).vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), scale)
        out: Dm = (s.vector_concat(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"]).vector_final()
                   .commit(self.element, arena.take_dm(4 * self.d)))
        return out

    def add(self, ctx: Context, arena: Arena, a: Dm, b: Dm, *, address: int | None = None) -> Dm:
        """``a + b`` (the residual connections, L8318–8322, L8352–8356; an additive mask, L8090–8100):
        interleaved fetch of the two rows along an axis of size 2 (L1843–1868), unzip, ``AddF`` in f32, cast to
        bf16 — one rounding.  ``address``: the DM address of the result (default: a new allocation), e.g. a
        residual stream kept at two fixed addresses across a model's layers."""
        return self._zip(ctx, arena, a, b, FpBinaryOp.AddF, address)

    def mul(self, ctx: Context, arena: Arena, a: Dm, b: Dm) -> Dm:
        """``a · b`` elementwise (e.g. RoPE's cos/sin tables, L8258–8284), as :meth:`add` with ``MulF``."""
        return self._zip(ctx, arena, a, b, FpBinaryOp.MulF(FpMulAlu.Mul0))

    def _zip(self, ctx: Context, arena: Arena, a: Dm, b: Dm, op: FpBinaryOp, address: int | None = None) -> Dm:
        """Two rows in one pass: interleaved fetch, unzip, the two groups combined by ``op``, cast to bf16."""
        m = self.maps
        pair = pair_axis(self.ax)
        s = (ctx.main.begin_interleaved(m[pair], a.view(), b.view())  # the pair innermost (unzip cache, issue 26)
             .fetch(dt.f32, m[f"{self.cols} / 8, {pair}"], self.packet8)
             .collect(m[f"{self.cols} / 8, {pair}"], self.packet8)
             .vector_init()
             .vector_intra_slice_unzip(pair, m[f"{self.cols} / 8, 1 # 2"], self.time8)
             .vector_split(self.time4, self.packet4)
             .vector_fp_zip(op))
        return self._rows_out(ctx, arena, s, address)

    def swiglu(self, ctx: Context, arena: Arena, gate: Dm, up: Dm) -> Dm:
        """SwiGLU's gating (Llama 3 FFN, L8329–8343): ``silu(gate) · up = gate · sigmoid(gate) · up``, bf16 out.

        Pass 1: ``gate · sigmoid(gate)`` (the stash keeps ``gate``, L4983) written as f32 rows and loaded into the
        VRF by the sub context; pass 2: ``up · silu`` with the VRF operand, cast to bf16.  The VRF holds
        ``4·cols`` bytes per slice of it: ``cols ≤ 2048`` (8 KiB, L1090).
        """
        m = self.maps
        out = arena.take_dm(2 * self.d)
        with arena.scratch():
            silu = (self._row(ctx, gate).vector_stash().vector_fp_unary(FpUnaryOp.Sigmoid)
                    .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
                    .vector_concat(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"]).vector_final()
                    .commit(self.element, arena.take_dm(4 * self.d)))
            silu_vrf = (ctx.sub.begin(silu.view())
                        .fetch(dt.f32, m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                        .collect(m[f"{self.cols} / 8"], m[f"{self.cols} % 8"])
                        .to_vrf(self.element, arena.take_vrf(4 * self.d)))
            s = self._row(ctx, up).vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), silu_vrf)
            return self._rows_out(ctx, arena, s, out)

    def rms_norm_streamed(self, ctx: Context, arena: Arena, x: Dm, gain: Dm, *, eps: float) -> Dm:
        """RMSNorm (L8240–8245) with the gain read from DM beside the row instead of held in the VRF, for rows of
        any width (Llama 3 70B's D = 8192 needs 32 KiB of f32 gain, more than the 8 KiB VRF, L1090).

        Σx² and ``rstd = 1 / sqrt(Σ/cols + eps)`` as :meth:`rms_norm`; then one pass fetches ``x`` and ``gain``
        (bf16, DM, one row per slice, e.g. from :meth:`load`) interleaved along an axis of size 2 (L1843–1868),
        multiplies them (``MulF``) and by the VRF's rstd (``Mul1``), and casts to bf16: the same two f32 products
        as :meth:`rms_norm` in the other order, so the same bound (:func:`visa.kernels.bounds.rms_norm`).
        """
        m = self.maps
        out = arena.take_dm(2 * self.d)
        with arena.scratch():
            rstd = self.finish_stat(ctx, arena, self.sum_of_squares(ctx, arena, x), scale=1.0 / self.d, add=eps,
                                    sqrt=True, reciprocal=True)
            r = self.to_vrf(ctx, arena, rstd)
            pair = pair_axis(self.ax)
            s = (ctx.main.begin_interleaved(m[pair], x.view(), gain.view())  # the pair innermost (issue 26)
                 .fetch(dt.f32, m[f"{self.cols} / 8, {pair}"], self.packet8)
                 .collect(m[f"{self.cols} / 8, {pair}"], self.packet8)
                 .vector_init()
                 .vector_intra_slice_unzip(pair, m[f"{self.cols} / 8, 1 # 2"], self.time8)
                 .vector_split(self.time4, self.packet4)
                 .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
                 .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), r))
            return self._rows_out(ctx, arena, s, out)
