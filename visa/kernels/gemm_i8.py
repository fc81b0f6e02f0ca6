"""An i8 GEMM whose contraction axis K is split over the slices *and the two clusters* of a chip (issue 15; the
16384³ benchmark ``benchmarks/bench_gemm16k.py`` runs it at full size).

``C[I, J] = Σ_K A[I, K] · B[K, J]``, A and B i8, C i32.  :func:`i8_gemm_kernels` builds, for a size ``n``, the
two ``@device`` kernels of one chip step: ``a_to_dm`` moves a row block of A (``8 · rows`` rows) to DM, and
``tile`` computes the ``8 · rows × 256`` tile of C over the whole of K and writes it to HBM.  K is read as two
axes, ``H`` (its half, size 2) and ``K`` (size n / 2): A row-major is ``m["I, H, K"]`` with the same bytes.

- **Clusters hold halves of K**: ``Cluster = m["H"]``; ``Slice = m["I / rows, J / 32, K / KS"]`` (8 × 8 × 4 =
  256 per cluster, ``KS = n / 8``).  Each slice holds ``rows`` rows of A and 32 columns of B over one K tile of
  KS (its TRF full: 8 Rows × 4 × KS bytes, L139, L1089); the same rows of C are computed in both clusters.
- **Tiles through DM and TRF**: the tensor DMA moves A's block to DM once (L2375–2384, broadcast to the 8 column
  groups) and, per tile, B's tile; the sub context loads it into the TRF (``to_trf``, L3792).
- **Contraction**: fetch A (Time ``I % rows``), collect 32-byte flits, align with the TRF tiling ``J / 8 % 4``
  innermost (the Stream Adapter's time broadcast, L3934–3945), 64 products per Row, accumulate ``K / 64``
  (Interleaved, 8 Rows = 8 columns of J per packet, L4482–4548).
- **Partials reduced across tiles**: the Vector Engine's inter-slice reduce adds a cluster's 4 K tiles over the
  slice ring (``m["…, 1 # 4"]``, AddSat; L4608–4623, L6636–6653, the manual's own ``1 # 4`` example L6720–6729);
  |partial| ≤ 2^14 · n/2 ≤ 2^27 at n = 16384, so it never saturates.  The commit writes each cluster's partial
  (``rows × 32`` i32) in the first slice of each group.  The reduce cannot cross clusters (L6733–6734): H stays
  in Cluster.
- **Partials reduced across clusters**: :func:`visa.kernels.collectives.cluster_all_reduce` — a cluster swap, one
  DM → DM tensor DMA between the clusters' DMs (cross-cluster transfers, L2386–2388; "DMA + Vector" for the
  Cluster level, L7073–7076), then an interleaved fetch of the two partials and a Vector Engine ``AddFxp``
  (L7610, L4826): both clusters hold C's tile.  The tensor DMA moves cluster 0's copy to HBM (the result's
  Cluster relabelled ``1 # 2``, metadata only).
- **C in HBM by column block**: ``m["J / 32, I, J % 32"]``, so that each slice's ``rows × 32`` i32 block is one
  contiguous run of HBM (16 KiB at rows = 128).  Row-major ``m["I, J"]`` would make each slice row a 128-byte
  run inside a 256-byte HBM unit, a read-modify-write each (L2985): 68,767 of a tile's ~120k cycles at n = 16384;
  a row block of 8 tiles at n = 2048 goes from 1,189,975 to 652,031 cycles.  The host reads a row block back as
  ``m["I, J"]`` (the PCIe DMA's host side lays it out).

Every operation records what it reads and writes, so the schedule orders the swap after the commit (RAW), the add
after the swap, the HBM write after the add, and the next tile's commit after the swap and the add have read the
partial (WAR).  DM per slice: A ``rows · KS``, B ``32 · KS``, three ``rows × 32`` i32 buffers (partial, swapped,
sum) — 368 KiB of 512 at rows = 128, n = 16384.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from visa import dtypes as dt
from visa.context import Context, device
from visa.engines.vector import InterSliceReduceOpI32
from visa.errors import LayoutError
from visa.kernels.collectives import cluster_all_reduce
from visa.kernels.memory import Arena
from visa.mapping import AxisSet
from visa.stream import AccumulationKind
from visa.tensors.handles import HbmTensor, TrfAddress

__all__ = ["I8GemmKernels", "i8_gemm_kernels", "TILE_J", "GROUPS"]

TILE_J = 256  # columns of C per step: 8 groups of 32 (a TRF of 8 Rows × 4 columns each, L139)
GROUPS = 8  # K tiles per step: 4 per cluster, reduced over the slice ring, then across the 2 clusters
COLUMN_GROUPS = TILE_J // 32


@dataclass(frozen=True)
class I8GemmKernels:
    """The two kernels of one step and their geometry: ``tile_i`` rows and ``tile_j`` columns of C per step,
    ``ks`` the K tile of a slice, ``ax`` the step's axes (I, J, H, K); ``a_layout``/``b_layout`` the HBM
    Element of A's row block and B's column block (``m["I, H, K"]``, ``m["J, H, K"]``)."""

    a_to_dm: Any
    tile: Any
    ax: AxisSet
    tile_i: int
    tile_j: int
    ks: int
    rows: int

    @property
    def a_layout(self) -> Any:
        """A's row block in HBM: row-major, K read as (H, K)."""
        return self.ax.m["I, H, K"]

    @property
    def b_layout(self) -> Any:
        """B's column block in HBM: J-major, K read as (H, K)."""
        return self.ax.m["J, H, K"]


def i8_gemm_kernels(n: int, rows: int = 128) -> I8GemmKernels:
    """The kernels of the ``n``³ i8 GEMM with ``rows`` rows of A per slice (module docstring).  ``n`` must be a
    multiple of ``8 · rows`` and of 256, with ``n / 8`` a multiple of 64 (one Row's 64 products) and at most
    2048 (a full TRF, L139)."""
    ks = n // GROUPS
    tile_i = COLUMN_GROUPS * rows
    # (rows first: a rows of 0 would make the tile of I empty, and n % tile_i a ZeroDivisionError)
    bad_rows = rows < 8 or rows % 8
    if bad_rows or n < 1 or n % tile_i or n % TILE_J or n % GROUPS or ks % 64 or 4 * ks > 8192:
        raise LayoutError(f"n = {n} with {rows} rows per slice: need n a multiple of {max(tile_i, 8)} and {TILE_J}, "
                          f"n / {GROUPS} a multiple of 64 and at most 2048, rows a positive multiple of 8",
                          call="i8_gemm_kernels", level="Slice",
                          mapping=f"I / {rows}" if bad_rows else f"K / {max(ks, 1)}", axis="I" if bad_rows else "K",
                          fix="choose n in 2048, 4096, …, 16384 (rows = 128), or smaller rows (8, 16, …)")
    ax = AxisSet(I=tile_i, J=TILE_J, H=2, K=n // 2)
    m = ax.m
    cluster, slice_ = m["H"], m[f"I / {rows}, J / 32, K / {ks}"]
    a_elem, b_elem = m[f"I % {rows}, K % {ks}"], m[f"J % 32, K % {ks}"]
    a_bytes, b_bytes = rows * ks, 32 * ks

    @device(chip=1)
    def a_to_dm(ctx: Context, a: HbmTensor[Any, Any, Any]) -> Any:
        return a.to_dm(cluster, slice_, a_elem, ctx.tdma, 0)

    @device(chip=1)
    def tile(ctx: Context, a_dm: Any, b: HbmTensor[Any, Any, Any], out_address: int) -> HbmTensor[Any, Any, Any]:
        arena = Arena(dm=a_bytes)
        b_dm = b.to_dm(cluster, slice_, b_elem, ctx.tdma, arena.take_dm(b_bytes))
        b_trf = (ctx.sub.begin(b_dm.view())
                 .fetch(dt.i8, m["J % 8, J / 8 % 4"], m[f"K % {ks}"])
                 .collect(m[f"J % 8, J / 8 % 4, K % {ks} / 32"], m["K % 32"])
                 .to_trf(m["J % 8"], m[f"J / 8 % 4, K % {ks}"], TrfAddress.Full))
        partial = (ctx.main.begin(a_dm.view())
                   .fetch(dt.i8, m[f"I % {rows}"], m[f"K % {ks}"])
                   .collect(m[f"I % {rows}, K % {ks} / 32"], m["K % 32"])
                   .align(m[f"I % {rows}, K % {ks} / 64, J / 8 % 4"], m["K % 64"], b_trf)
                   .contract(m["1"])
                   .accumulate(m[f"I % {rows}, J / 8 % 4"], m["J % 8"], AccumulationKind.Interleaved)
                   .vector_init()
                   .vector_inter_slice_reduce(m[f"I / {rows}, J / 32, 1 # 4"], m[f"I % {rows}, J / 8 % 4"],
                                              InterSliceReduceOpI32.AddSat)
                   .vector_final()
                   .commit(m[f"I % {rows}, J % 32"], arena.take_dm(4 * rows * 32)))
        total = cluster_all_reduce(ctx, ax, arena, partial).relabel(Cluster=m["1 # 2"])
        out: HbmTensor[Any, Any, Any] = total.to_hbm(m["J / 32, I, J % 32"], ctx.tdma, out_address)
        return out

    return I8GemmKernels(a_to_dm, tile, ax, tile_i, TILE_J, ks, rows)
