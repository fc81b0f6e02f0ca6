"""AllReduce across chips (manual "Chip/Cluster Reduce", L7382–7610) as a reusable kernel.

The three primitives are the manual's (L7603–7610): a ChipShuffle by DMA (``view.chip_shuffle(p).to_dm(…)``:
destination chip c receives chip p[c]'s data, L7541) and tensor addition by an interleaved fetch and a Vector
Engine add.  :func:`all_reduce` takes a DM tensor laid out over the launch's n chips (its Chip level an axis of
size n) and returns, on every chip, the elementwise sum over the chips:

- ``"butterfly"`` (default): in round k chip c receives its partner c XOR 2^k's running sum and adds it —
  log2 n shuffles and adds (n a power of two, L7602).  Both partners add the same two values and IEEE addition
  commutes, so every chip ends with bitwise the same sum, floats included (tensor-parallel replicas stay equal).
- ``"ring"``: the rotations T_r = ChipShuffle(rotation r)(X) of L7538–7573, added in turn — n − 1 shuffles
  and adds; the shuffles do not wait for the adds, so they run back to back on the tensor DMA.  For floats the
  chips add in different orders, so their sums may differ in the last bit; x must be i32 or f32 (each T_r is
  interleaved with the f32 running sum, and an interleaved fetch takes one dtype, L1845).

:func:`cluster_all_reduce` is the same across the two clusters of each chip (the "Cluster" row of L7073–7076,
reduced by "DMA + Vector"): one cluster swap by DMA between the clusters' DMs (``view.cluster_swap().to_dm(…)``,
each cluster's DMA engines writing the other's partial) and one interleaved add, after which both clusters hold
the sum.  A kernel that split a contraction axis over the clusters (the inter-slice reduce stays inside one
cluster, L6733–6734) finishes its reduction with it.

i32 adds wrap (``AddFxp``, L4826): exact.  Float tensors (bf16 or f32) are fetched as f32 (the fetch's cast,
L1960), added with ``ClipBinaryOpF32.Add`` and committed as f32; the last add casts to ``out_dtype`` (bf16 by
default for a bf16 input) — the error bound is :func:`visa.kernels.bounds.all_reduce`.
"""

from __future__ import annotations

from typing import Any

from visa import dtypes as dt
from visa.context import Context
from visa.engines.dma.shuffle import rotation
from visa.engines.vector import ClipBinaryOpF32, FxpBinaryOp
from visa.errors import DtypeError, LayoutError
from visa.kernels.memory import Arena, pair_axis
from visa.mapping import AxisSet
from visa.tensors.handles import DmTensor

__all__ = ["all_reduce", "add_pair", "cluster_all_reduce", "pair_add_axes", "rounds"]

Dm = DmTensor[Any, Any, Any, Any, Any]


def rounds(n: int, algorithm: str = "butterfly") -> int:
    """Shuffle-and-add rounds of an AllReduce over ``n`` chips: log2 n (butterfly) or n − 1 (ring)."""
    return (n.bit_length() - 1) if algorithm == "butterfly" else n - 1


def pair_add_axes(mm: Any, element: Any, pair: str) -> tuple[Any, Any, Any, Any]:
    """The mappings of an interleaved pairwise add of two tensors whose Element level is ``element``, fetched
    interleaved along ``pair`` (an axis of size 2, L1843–1852): ``(packet, time, tile, split)`` — the fetch's
    packet and Time, then the unzip's tile and split (L4826).  One 32-byte flit of 8 lanes is fetched a time
    step (L3544): an Element wider than 8 puts the rest of it in Time, with the pair innermost, so that a group
    of the unzip is one packet in the Vector Engine's 1 KiB register-file cache (L5154–5249).
    ``mm`` is the axis set's mapping factory."""
    if element.size <= 8:
        return element, mm[pair], mm["1 # 2"], mm["1"]
    rest = f"[{element}] / 8"
    return mm[f"[{element}] % 8"], mm[f"{rest}, {pair}"], mm[f"{rest}, 1 # 2"], mm[rest]


def _padded(element: Any) -> str:
    """The text of ``element`` padded to whole flits of 8 lanes (``D # 16`` for a ``D`` of 12)."""
    text = element.text if len(element.items()) == 1 else f"[{element.text}]"
    return f"{text} # {-(-element.size // 8) * 8}"


def add_pair(ctx: Context, ax: AxisSet, arena: Arena, a: Dm, b: Dm, out_dtype: Any = None) -> Dm:
    """``a + b`` elementwise (L7610): ``a`` and ``b`` fetched interleaved along an axis of size 2 (L1843–1852),
    unzipped and added in the Vector Engine — i32 by ``AddFxp`` (wrapping, L4826), floats in f32 by
    ``ClipBinaryOpF32.Add``; the result has ``a``'s layout in a new DM allocation, i32 or f32, or cast to
    ``out_dtype`` (bf16) before the commit (one rounding, L6756)."""
    mm, pair = ax.m, pair_axis(ax)
    element = a.levels["Element"]
    if element.size > 8 and element.size % 8:
        raise LayoutError(f"x's Element {element!r} holds {element.size} elements: the pairwise add fetches them "
                          "8 lanes a 32-byte flit (L3544), so more than 8 must be whole flits, a multiple of 8 "
                          "(an Element of at most 8 is one flit)", call="visa.kernels.collectives.add_pair",
                          level="Element", mapping=repr(element), axis=", ".join(sorted(element.axes)) or None,
                          fix=f"pad x's Element to a multiple of 8 elements: m[\"{_padded(element)}\"]")
    integer = a.dtype is dt.i32
    fetch = dt.i32 if integer else dt.f32
    packet, time, tile, split = pair_add_axes(mm, element, pair)
    s: Any = (ctx.main.begin_interleaved(mm[pair], a.view(), b.view())
              .fetch(fetch, time, packet).collect(time, packet)
              .vector_init()
              .vector_intra_slice_unzip(pair, tile, split))
    s = s.vector_fxp_zip(FxpBinaryOp.AddFxp) if integer else s.vector_clip_zip(ClipBinaryOpF32.Add)
    s = s.vector_final()
    width = 4
    if out_dtype is not None and out_dtype is not fetch:
        s = s.cast(out_dtype, mm[f"[{packet}] # 16"])
        width = out_dtype.size_bits // 8
    out: Dm = s.commit(element, arena.take_dm(width * element.size))
    return out


def all_reduce(ctx: Context, ax: AxisSet, arena: Arena, x: Dm, *, algorithm: str = "butterfly",
               out_dtype: Any = None) -> Dm:
    """The sum over the chips of ``x`` (a DM tensor whose Chip level spans the launch's n chips), on every chip,
    in ``x``'s layout (L7503–7602).  ``algorithm``: ``"butterfly"`` (log2 n rounds, bitwise equal results on
    every chip) or ``"ring"`` (n − 1 rotations).  ``out_dtype``: the dtype of the result for a float ``x``
    (default: ``x``'s own, bf16 stays bf16; pass ``dt.f32`` to keep the f32 sum); an i32 ``x`` stays i32.
    Each round is a DM → DM ChipShuffle DMA on the tensor DMA queue, then an add on the main context."""
    lv = x.levels
    n = lv["Chip"].size
    call = "visa.kernels.all_reduce"
    if algorithm not in ("butterfly", "ring"):
        raise LayoutError(f"unknown AllReduce algorithm {algorithm!r}", call=call, level="Chip",
                          mapping=repr(lv["Chip"]), fix='pass algorithm="butterfly" or algorithm="ring"')
    if algorithm == "butterfly" and n & (n - 1):
        raise LayoutError(f"a butterfly pairs chips c and c XOR 2^k: {n} chips is not a power of two (L7602)",
                          call=call, level="Chip", mapping=repr(lv["Chip"]),
                          fix='use algorithm="ring", or a power-of-two chip count')
    if algorithm == "ring" and x.dtype not in (dt.i32, dt.f32):
        raise DtypeError(f"the ring adds each rotation of x to the f32 running sum, and an interleaved fetch needs "
                         f"one dtype (L1845); x is {x.dtype.name}", call=call, level="Element",
                         mapping=repr(lv["Element"]), fix='use algorithm="butterfly", or an f32 or i32 x')
    final = None if x.dtype is dt.i32 else (out_dtype or x.dtype)
    total = rounds(n, algorithm)
    if total == 0:
        return x
    acc = x
    for r in range(total):
        perm = [c ^ (1 << r) for c in range(n)] if algorithm == "butterfly" else list(rotation(n, r + 1))
        src = acc if algorithm == "butterfly" else x
        t: Dm = src.view().chip_shuffle(perm).to_dm(
            lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma,
            arena.take_dm(src.dtype.size_bits // 8 * lv["Element"].size))
        acc = add_pair(ctx, ax, arena, acc, t, final if r == total - 1 else None)
    return acc


def cluster_all_reduce(ctx: Context, ax: AxisSet, arena: Arena, x: Dm, *, out_dtype: Any = None) -> Dm:
    """The sum of ``x`` over the two clusters of each chip, held by both clusters, in ``x``'s layout (the
    "Cluster" row of manual L7073–7076: reduced by DMA + Vector; the AllReduce of L7503–7602 with the cluster
    swap as its shuffle).  ``x`` is a DM tensor whose Cluster level spans the chip's 2 clusters (the cluster
    swap's rule, :func:`visa.engines.dma.shuffle.check_cluster_swap`, refuses any other).

    Two operations: the cluster swap, one DM → DM tensor DMA (``x.view().cluster_swap().to_dm(…)``; cross-cluster
    transfers, L2386–2388) on the tensor DMA queue, both directions at once — every DMN sends its cluster's
    partial and receives the other's, so it costs what the same move without the swap costs
    (:mod:`visa.engines.dma.shuffle`) — and :func:`add_pair` on the main context, one pass over both clusters
    (L7610).  i32 sums wrap (``AddFxp``, L4826); floats are added in f32 (``out_dtype`` as for
    :func:`all_reduce`) and, a + b being b + a, both clusters hold bitwise the same sum.  A caller that wants the
    reduced axis gone relabels the result's Cluster (``.relabel(Cluster=m["1 # 2"])``: cluster 0's copy)."""
    lv = x.levels
    if not lv["Cluster"].axes:
        raise LayoutError("x's Cluster holds no axis: both clusters hold the same data (or one holds padding), so "
                          "there is nothing to reduce across them (manual L7073–7076)",
                          call="visa.kernels.cluster_all_reduce", level="Cluster", mapping=repr(lv["Cluster"]),
                          fix='lay the axis to reduce out over the clusters (Cluster m["H"] with H of size 2)')
    final = None if x.dtype is dt.i32 else (out_dtype or x.dtype)
    swapped: Dm = x.view().cluster_swap().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma,
                                                 arena.take_dm(x.dtype.size_bits // 8 * lv["Element"].size))
    return add_pair(ctx, ax, arena, x, swapped, final)
