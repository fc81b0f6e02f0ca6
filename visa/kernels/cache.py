"""On-device table lookups, KV-cache appends and the causal mask of the Llama 3 chapter (manual L7982–8431).

- :class:`Embedding`: ``x_0 = gather(index: input, table: w_emb)`` "processed by TensorDMA" (L7994–8005, L8241):
  the table's rows picked by i32 ids, straight into DM in the :class:`~visa.kernels.Rows` layout (one row per
  slice), or into HBM.  The same class gathers any table by an index (the RoPE row ``t_rope = gather(index:
  position, table: w_rope)``, L8268; a row of the causal-mask table).
- :class:`KvCache`: one layer's caches in HBM — K as ``m["S, Dk"]``, V transposed as ``m["Dv, S"]`` (the
  layouts :class:`~visa.kernels.Attention` reads) — and the append ``kv_cache[s − 1] = K_rope, V_new``
  (L8286–8297) as two in-place tensor DMAs ("Concat on HBM using DMA is also possible", L8297): a row of the
  K cache and a column of the V cache.
- :class:`CausalMask`: ``attention_mask(i, j) = j ≤ i`` "written to the branch log" (L8090–8100): a table of
  ExecutionIds (0 keeps, :data:`~visa.kernels.rows.MASKED_ID` masks) in HBM, loaded for prefill whole (row i
  on slice i) and for decode as the row of the current position (gathered by the position index), then into
  the VRF by the sub context; :meth:`~visa.kernels.Rows.softmax` masks with it.

Only the tensor DMAs' own rules apply (gather and in-place DMA live in ``visa.tensors.indirect``); this module
chooses mappings and addresses.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.context import Context
from visa.kernels.memory import Arena
from visa.kernels.rows import MASKED_ID, Rows
from visa.mapping import AxisSet
from visa.tensors.handles import DmTensor, HbmTensor, HbmTensorView, VrfTensor

__all__ = ["Embedding", "KvCache", "CausalMask", "rope_matrix"]

Hbm = HbmTensor[Any, Any, Any]
HbmIn = HbmTensor[Any, Any, Any] | HbmTensorView[Any, Any, Any]
Dm = DmTensor[Any, Any, Any, Any, Any]
Vrf = VrfTensor[Any, Any, Any, Any, Any]


def _view(t: HbmIn) -> Any:
    return t.view() if isinstance(t, HbmTensor) else t


class Embedding:
    """Rows of an HBM table ``[vocab, cols…]`` picked by an i32 index tensor (a TensorDMA gather, L7994–8005).

    ``Embedding(ax, "V", "D", rows="T")``: ids over the axis ``T`` (or a single index, ``m["1"]``) pick rows of
    ``w_emb`` ``m["V, D"]``; :meth:`__call__` puts ``x_0[T, D]`` into DM one token per slice — the layout
    :class:`~visa.kernels.Rows` ``(ax, "T", "D")`` reads — and :meth:`to_hbm` into HBM as ``m["T, D"]``.
    ``cols`` may name several axes (``"Dr, Dk"``: a RoPE table's rows are matrices).  ``chip``: the Chip level of
    the table and the ids (``"C"``: every chip gathers from its own copy, as :class:`~visa.kernels.Gemm`'s).
    """

    def __init__(self, ax: AxisSet, vocab: str = "V", cols: str = "D", rows: str = "T", *, chip: str = "1") -> None:
        self.ax, self.vocab, self.cols, self.rows, self.chip = ax, vocab, cols, rows, chip
        self.row_elements = 1
        for a in cols.split(","):
            self.row_elements *= ax.size(a.strip())

    def __call__(self, ctx: Context, arena: Arena, table: HbmIn, ids: Any) -> Dm:
        """``table[ids[t]]`` → DM, row t on slice t (``Rows(ax, rows, cols)``'s layout; one column axis)."""
        rows = Rows(self.ax, self.rows, self.cols, chip=self.chip)
        addr = arena.take_dm(self.row_elements * table.dtype.size_bits // 8)
        out: Dm = _view(table).gather(self.ax.m[self.vocab], ids).to_dm(rows.cluster, rows.slice, rows.element,
                                                                       ctx.tdma, addr)
        return out

    def to_hbm(self, ctx: Context, arena: Arena, table: HbmIn, ids: Any) -> Hbm:
        """``table[ids[t]]`` → a new HBM tensor ``m["rows, cols"]`` (``m["cols"]`` for a single index)."""
        m = self.ax.m
        n = 1 if self.rows not in self.ax else self.ax.size(self.rows)
        addr = arena.take_hbm(n * self.row_elements * table.dtype.size_bits // 8)
        text = f"{self.rows}, {self.cols}" if self.rows in self.ax else self.cols
        out: Hbm = _view(table).gather(m[self.vocab], ids).to_hbm(m[self.chip], m[text], ctx.tdma, addr)
        return out


class KvCache:
    """One layer's KV cache in HBM: ``k`` ``m["S, Dk"]`` and ``v_t`` ``m["Dv, S"]`` (V transposed, the layout the
    attention's second GEMM reads), and the decode step's append at a position (L8286–8297).

    The caches are live HBM tensors the caller creates (written once, e.g. zeros from the host, so that no read
    sees poison); :meth:`append` writes ``K_rope`` (``m["T, Dk"]``, one token) as row ``position`` of ``k`` and
    ``V_new`` (``m["T, Dv"]``) as column ``position`` of ``v_t`` by in-place tensor DMAs, so the attention that
    follows reads the whole cache and waits for the appends on the schedule (their footprints overlap).
    """

    def __init__(self, ax: AxisSet, k: Hbm, v_t: Hbm, s: str = "S", dk: str = "Dk", dv: str = "Dv") -> None:
        self.ax, self.k, self.v_t, self.s, self.dk, self.dv = ax, k, v_t, s, dk, dv
        self.length = ax.size(s)

    def append(self, ctx: Context, k_row: Hbm | Dm, v_row: Hbm | Dm, position: int) -> tuple[Hbm, Hbm]:
        """``k[position] = k_row``, ``v_t[:, position] = v_row`` in place (two tensor DMAs on ``ctx.tdma``);
        returns the two caches (the same live tensors).  A position outside the cache is the tile's own
        refusal."""
        m, s = self.ax.m, self.s
        k_tile = self.k.view().tile(m[s], 1, m[f"{s} = 1, {self.dk}"], position)
        v_tile = self.v_t.view().tile(m[s], 1, m[f"{self.dv}, {s} = 1 # {self.length}"], position)
        self.k = k_row.to_hbm_view(k_tile, ctx.tdma)
        self.v_t = v_row.to_hbm_view(v_tile, ctx.tdma)
        return self.k, self.v_t


class CausalMask:
    """``attention_mask(i, j) = true if j ≤ i`` (L8090–8096) as a branch log (L8099–8100).

    :meth:`table` is the host's ``[positions, S]`` i32 table of ExecutionIds (0 where ``j ≤ i``,
    :data:`~visa.kernels.rows.MASKED_ID` where ``j > i``), written once to HBM like a weight.
    :meth:`prefill_log` loads rows ``0 … |q| − 1`` (query i on slice i) into the VRF; :meth:`decode_log` gathers
    the row of the current position (an i32 index tensor, the one the RoPE gather uses) and broadcasts it to the
    query rows' slices (the G query heads of a KV head share it), then into the VRF.  In decode the row masks
    the cache positions not yet written (the manual's cache has exactly ``s`` positions, L8298–8317; ours has a
    fixed length).
    """

    def __init__(self, ax: AxisSet, q: str = "T", s: str = "S", positions: str = "P") -> None:
        self.ax, self.q, self.s, self.positions = ax, q, s, positions
        self.rows = Rows(ax, q, s)

    @staticmethod
    def table(positions: int, length: int) -> npt.NDArray[np.int32]:
        """``ids[i, j] = 0 if j ≤ i else MASKED_ID`` (host side, numpy)."""
        keep = np.arange(length)[None, :] <= np.arange(positions)[:, None]
        return np.where(keep, 0, MASKED_ID).astype(np.int32)

    def prefill_log(self, ctx: Context, arena: Arena, table: HbmIn) -> Vrf:
        """Rows ``0 … |q| − 1`` of the table (``m["q, S"]`` in HBM, a tile of a longer table) → DM, query row i on
        slice i → the VRF (:meth:`Rows.branch_log`)."""
        return self.rows.branch_log(ctx, arena, self.rows.load(ctx, arena, table))

    def decode_log(self, ctx: Context, arena: Arena, table: HbmIn, position: Any) -> Vrf:
        """The table's row ``position`` (``table`` ``m["P, S"]``, ``position`` an i32 single index) gathered into
        HBM, broadcast to each query row's slice, → the VRF."""
        row = Embedding(self.ax, self.positions, self.s, rows="1").to_hbm(ctx, arena, table, position)
        dm = row.to_dm(self.rows.cluster, self.rows.slice, self.rows.element, ctx.tdma,
                       arena.take_dm(4 * self.rows.d))
        return self.rows.branch_log(ctx, arena, dm)


def rope_matrix(position: int, d: int, base: float = 500000.0) -> npt.NDArray[np.float64]:
    """The rotation of ``w_rope[position]`` (manual L8258–8284) as a ``[d_out, d_in]`` matrix: pairs (2i, 2i + 1)
    rotate by ``position · base^(−2i/d)`` (Llama 3's θ base 500000); the host builds the RoPE table from it.

    >>> np.round(rope_matrix(0, 4), 6).tolist() == np.eye(4).tolist()
    True
    """
    r = np.zeros((d, d))
    for i in range(d // 2):
        theta = position * base ** (-2 * i / d)
        c, s = math.cos(theta), math.sin(theta)
        r[2 * i, 2 * i], r[2 * i, 2 * i + 1] = c, -s
        r[2 * i + 1, 2 * i], r[2 * i + 1, 2 * i + 1] = s, c
    return r
