"""ChipShuffle and the cluster swap: a DMA whose source chips (clusters) are permuted (manual "Chip/Cluster
Reduce", L7445–7470, L7538–7573, L7607–7608).

``ChipShuffle(p0, …, pN−1)`` moves data between chips through HBM: destination chip ``c`` receives what chip
``p[c]`` held (L7455–7459, L7541).  Here the shuffle is *staged on the source*: the tensor a source holds in
its layout is replaced by the one whose chip ``c`` holds what chip ``p[c]`` held, and that tensor is moved to
the destination's layout by the ordinary DMA plan (:func:`visa.engines.dma.plan.plan`), in the same DMA as any
layout change.  The cluster swap is the same with the two clusters of every chip exchanged.

Three pure functions, as for every engine:

* :func:`check_permutation` / :func:`check_cluster_swap` are the rules (shared with the mypy plugin): the
  permutation must have one entry per chip and be a permutation of them, and a kernel on one chip (a tensor
  with one cluster) has nothing to exchange.
* :func:`execute` runs the DMA plan with the source endpoint re-addressed (:class:`ShuffledEndpoint`): the
  sequencer reads chip ``p[c]`` where the unshuffled plan reads chip ``c`` (cluster ``1 − k`` for ``k``).  When
  one source loop steps over the clusters and the others stay inside one cluster (the plans split DM by DMN pair,
  so in practice always), each destination cluster is one plain copy from its source cluster instead.
* :func:`cycles` costs it with the DMA model (:func:`visa.engines.dma.cost.cycles`): the plan is split into
  one part per source chip, addressed at the chip it really reads; the chips' DMA engines run their parts in
  parallel, each paying the ~500-cycle startup per command (L2472) and PCIe at 30 B/cycle for every byte that
  crosses chips (L2389, L2843–2847).  A cluster swap costs what the same move without the swap costs: the two
  clusters' DMNs are symmetric (L2866–2893), so the swap changes no bank, channel or link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from visa import fastpaths
from visa.engines.cache import cached
from visa.engines.dma.config import DmaCost, DmaLoop, DmaPlan
from visa.engines.dma.cost import _PATHS as COST_PATHS
from visa.engines.dma.cost import cycles as dma_cycles
from visa.errors import LayoutError
from visa.hw import HardwareProfile
from visa.memory.images import BoolArray, ByteArray, IntArray
from visa.memory.transfer import AddressSpace, Endpoint, address_space
from visa.memory.transfer import copy as copy_bytes

__all__ = ["ShufflePlan", "check_permutation", "check_cluster_swap", "rotation", "ShuffledEndpoint", "execute",
           "cycles", "chip_parts", "pcie_bytes"]


def rotation(n: int, r: int) -> tuple[int, ...]:
    """The rotation by ``r`` chips, ``p[c] = (c + r) mod n``: ChipShuffle(1,2,3,0) is ``rotation(4, 1)``
    (manual L7538–7573)."""
    return tuple((c + r) % n for c in range(n))


def check_permutation(perm: Sequence[object], chips: int, *, call: str = "chip_shuffle",
                      mapping: str | None = None, axis: str | None = None) -> tuple[int, ...]:
    """The rules of ``ChipShuffle(p)`` (L7445–7470): ``chips`` > 1 (a one-chip kernel has no other chip), one
    entry per chip, and every chip exactly once.  Returns the permutation as a tuple; raises
    :class:`~visa.errors.LayoutError` naming the chip at fault."""
    if chips <= 1:
        raise LayoutError("a chip shuffle moves data between chips, and this tensor (the kernel) has one chip "
                          "(manual L7445–7470)", call=call, level="Chip", mapping=mapping, axis=axis,
                          fix="run the kernel on several chips (@device(chip=N)) with the tensor's Chip over N, "
                              "or drop the shuffle")
    values = list(perm)
    if len(values) != chips:
        raise LayoutError(f"the permutation {values} has {len(values)} entries, but the tensor has {chips} chips: "
                          "destination chip c receives chip p[c] (manual L7541)", call=call, level="Chip",
                          mapping=mapping, axis=axis, fix=f"give one source chip per destination chip, e.g. "
                                               f"{list(rotation(chips, 1))}")
    out: list[int] = []
    for c, p in enumerate(values):
        if isinstance(p, bool) or not isinstance(p, int | np.integer) or not 0 <= int(p) < chips:
            raise LayoutError(f"p[{c}] = {p!r} is not a chip of the tensor (0..{chips - 1}; manual L7541)",
                              call=call, level="Chip", mapping=mapping, axis=axis,
                              fix=f"use chip numbers 0..{chips - 1}")
        out.append(int(p))
    seen: dict[int, int] = {}
    for c, p in enumerate(out):
        if p in seen:
            missing = sorted(set(range(chips)) - set(out))
            raise LayoutError(f"{out} is not a permutation: chip {p} is the source of destination chips {seen[p]} "
                              f"and {c}, and chip {missing[0]} of none (manual L7541)", call=call, level="Chip",
                              mapping=mapping, axis=axis, fix="name every chip exactly once")
        seen[p] = c
    return tuple(out)


def check_cluster_swap(hw: HardwareProfile, clusters: int, *, medium: str, call: str = "cluster_swap",
                       mapping: str | None = None, axis: str | None = None, held: int | None = None) -> tuple[int, ...]:
    """The rules of the cluster swap: a DM tensor whose Cluster level spans the chip's clusters (HBM has no
    clusters, L1064), each holding part of it (``held``: how many do).  Returns the cluster permutation (cluster 0
    ↔ cluster 1)."""
    if medium != "dm":
        raise LayoutError(f"a cluster swap exchanges the clusters of a DM tensor; an {medium.upper()} tensor has no "
                          "Cluster level (manual L1064, L1085)", call=call, level="Cluster", mapping=mapping,
                          axis=axis, fix="move the tensor to DM first, or swap a DM view")
    if clusters != hw.dm.clusters_per_chip or clusters < 2:
        raise LayoutError(f"a cluster swap needs the tensor's Cluster over the chip's {hw.dm.clusters_per_chip} "
                          f"clusters, but its Cluster has size {clusters} (manual L1080–1081)", call=call,
                          level="Cluster", mapping=mapping, axis=axis,
                          fix=f'lay the tensor out with a Cluster of size {hw.dm.clusters_per_chip} (e.g. m["X # 2"])')
    if held is not None and held < clusters:  # (issue 23: the move read the padding cluster as data, late)
        raise LayoutError(f"a cluster swap reads each cluster's bytes as the other's, but the tensor's Cluster holds "
                          f"data in {held} of the chip's {clusters} clusters: the swap would read its padding cluster "
                          "(poison, L150–155) as data", call=call, level="Cluster", mapping=mapping, axis=axis,
                          fix='to move a one-cluster tensor to the other cluster, give the move that Cluster (e.g. '
                              'm["# 1 + 1"]) without a swap')
    return tuple(range(clusters - 1, -1, -1))


@dataclass(frozen=True, eq=False)
class ShufflePlan:
    """A shuffled DMA: the layout-change plan ``dma`` and the permutations of the source's chips and clusters
    (``chips[c]`` is the chip that source chip ``c``'s bytes are read from; ``clusters`` likewise, or ``()``)."""

    dma: DmaPlan
    chips: tuple[int, ...]
    clusters: tuple[int, ...]
    #: a staged chip or cluster slice (design API.md §8): the byte offset destination chip ``c`` (cluster ``k``)
    #: reads its source at, within each unit — the entry of the sliced digit it keeps (empty: none)
    chip_offsets: tuple[int, ...] = ()
    cluster_offsets: tuple[int, ...] = ()

    def __str__(self) -> str:
        parts = []
        if self.chips and self.chips != tuple(range(len(self.chips))):
            parts.append(f"ChipShuffle{self.chips}")
        if self.clusters:
            parts.append("ClusterSwap")
        if self.chip_offsets:
            parts.append(f"ChipSlice(offsets {list(self.chip_offsets)} B)")
        if self.cluster_offsets:
            parts.append(f"ClusterSlice(offsets {list(self.cluster_offsets)} B)")
        return " + ".join(parts + [str(self.dma)])


class ShuffledEndpoint:
    """A source endpoint read through the shuffle: chip ``c`` reads chip ``chips[c]`` and, on DM, cluster ``k``
    reads cluster ``clusters[k]`` (the bytes of unit ``k · S + s`` come from unit ``clusters[k] · S + s``)."""

    def __init__(self, inner: Endpoint, chips: tuple[int, ...], clusters: tuple[int, ...], slices_per_cluster: int,
                 chip_offsets: tuple[int, ...] = (), cluster_offsets: tuple[int, ...] = ()) -> None:
        self.inner = inner
        self.space: AddressSpace = inner.space
        self._chips = chips
        self._clusters = clusters
        self._span = slices_per_cluster * inner.space.backed_bytes  # one cluster's bytes in the image
        self._chip_off = chip_offsets
        self._cluster_off = cluster_offsets

    def _chip(self, chip: int) -> int:
        return self._chips[chip] if 0 <= chip < len(self._chips) else chip

    def _off(self, chip: int) -> int:
        """The byte offset chip ``chip`` reads at (a staged chip slice), 0 without one."""
        return self._chip_off[chip] if 0 <= chip < len(self._chip_off) else 0

    def _real(self, real: IntArray) -> IntArray:
        if not self._clusters and not self._cluster_off:
            return real
        k, rest = np.divmod(real, self._span)
        n = max(len(self._clusters), len(self._cluster_off))
        perm = np.asarray(self._clusters or tuple(range(n)), dtype=np.int64)
        off = np.asarray(self._cluster_off or (0,) * n, dtype=np.int64)
        ok = (real >= 0) & (k < n)
        kk = np.clip(k, 0, n - 1)
        return np.where(ok, perm[kk] * self._span + rest + off[kk], real)

    def _shift(self, lo: int, hi: int) -> int | None:
        """How far the bytes ``[lo, hi)`` move (whole clusters, and a cluster slice's offset), or None if they span
        two clusters."""
        if not self._clusters and not self._cluster_off:
            return 0
        k_lo, k_hi = lo // self._span, (hi - 1) // self._span
        n = max(len(self._clusters), len(self._cluster_off))
        if k_lo != k_hi or not 0 <= k_lo < n:
            return None  # spans both clusters: the copy gathers byte by byte (:meth:`gather`)
        moved = (self._clusters[k_lo] - k_lo) * self._span if self._clusters else 0
        return moved + (self._cluster_off[k_lo] if self._cluster_off else 0)

    def contiguous(self, chip: int, lo: int, hi: int, write: bool = True, span: tuple[int, int] | None = None
                   ) -> tuple[ByteArray, int] | None:
        off = self._off(chip)
        if off and span is not None:
            span = (span[0] + off, span[1] + off)
        got = self.inner.contiguous(self._chip(chip), lo + off, hi + off, write, span)
        shift = self._shift(lo, hi)
        if got is None or shift is None:
            return None
        data, at = got
        return data, at + shift

    def replica_labels(self, chip: int, units: IntArray, unit_lo: int, unit_hi: int) -> IntArray | None:
        """The replica labels of the (flat) ``units`` as read through the shuffle (the inner endpoint's, of the
        units they read; ``dma.replica-sources``, :mod:`visa.memory.fast_replica_sources`); None with offsets."""
        labels_of = getattr(self.inner, "replica_labels", None)
        if labels_of is None or any(self._chip_off) or any(self._cluster_off):
            return None
        per = self._span // self.space.backed_bytes
        k, s = np.divmod(units, per)
        if self._clusters:
            if bool((k >= len(self._clusters)).any()):
                return None
            k = np.asarray(self._clusters, dtype=np.int64)[k]
        out: IntArray | None = labels_of(self._chip(chip), k * per + s, unit_lo, unit_hi)
        return out

    def known(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> BoolArray | None:
        if self._cluster_off and self._shift(lo, hi) is None:
            return self.gather(chip, np.arange(lo, hi, dtype=np.int64))[1]  # (rare: the copy then gathers)
        shift = self._shift(lo, hi) or 0
        off = self._off(chip) + (self._cluster_off[lo // self._span] if self._cluster_off else 0)
        return self.inner.known(self._chip(chip), lo + shift + self._off(chip), hi + shift + self._off(chip),
                                unit_lo + off, unit_hi + off)

    def gather(self, chip: int, real: IntArray) -> tuple[ByteArray, BoolArray]:
        return self.inner.gather(self._chip(chip), self._real(real) + self._off(chip))

    def mark_written(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        del chip, lo, hi, unit_lo, unit_hi  # a source is never written

    def mask_for_write(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[BoolArray, int]:
        del chip, lo, hi, unit_lo, unit_hi  # a source is never written: nothing to hand out
        return np.zeros(0, bool), 0

    def settle(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        del chip, lo, hi, unit_lo, unit_hi  # a source is never written


BY_CLUSTER = fastpaths.register("dma.shuffle-by-cluster", "a cluster swap copies cluster by cluster (a plain strided "
                                "copy each) instead of reading every byte through remapped addresses")


def execute(sp: ShufflePlan, src: Endpoint, dst: Endpoint) -> None:
    """Run the shuffled DMA over the images: the plan's fused sequencer (L2505–2541) reading through
    :class:`ShuffledEndpoint`."""
    p = sp.dma
    loops = [(lp.size, lp.src, lp.dst) for lp in p.all_loops()]
    split = _cluster_loop(sp, loops, src.space) if BY_CLUSTER.on and not sp.cluster_offsets else None
    if split is not None:  # each cluster's bytes come from one other cluster: a plain copy per cluster, shifted
        k, span = split
        rest = loops[:k] + loops[k + 1:]
        plain = ShuffledEndpoint(src, sp.chips, (), p.hw.dm.slices_per_cluster, sp.chip_offsets)
        for c, real in enumerate(sp.clusters):
            copy_bytes(rest, (p.base[0] + real * span, p.base[1] + c * loops[k][2]), plain, dst)
        return
    shuffled = ShuffledEndpoint(src, sp.chips, sp.clusters, p.hw.dm.slices_per_cluster, sp.chip_offsets,
                                sp.cluster_offsets)
    copy_bytes(loops, p.base, shuffled, dst)


def _cluster_loop(sp: ShufflePlan, loops: Sequence[tuple[int, int, int]], space: AddressSpace
                  ) -> tuple[int, int] | None:
    """The index of the source loop that steps from cluster to cluster of a cluster swap, and the clusters' span
    in the address space, when every other loop stays inside one cluster from a base in cluster 0 (then cluster
    ``c`` of the destination reads exactly the bytes the loop's index ``clusters[c]`` reads); else ``None``."""
    if not sp.clusters or space.medium != "dm":
        return None
    span = sp.dma.hw.dm.slices_per_cluster * space.unit_bytes
    hits = [k for k, (n, s, _) in enumerate(loops) if s == span and n == len(sp.clusters)]
    if len(hits) != 1:
        return None
    k = hits[0]
    lo = hi = sp.dma.base[0] % space.chip_bytes
    for j, (n, s, _) in enumerate(loops):
        if j != k and s % space.chip_bytes:  # chip loops leave the offset in the chip unchanged
            lo, hi = lo + min(0, (n - 1) * s), hi + max(0, (n - 1) * s)
    return (k, span) if 0 <= lo and hi < span else None


def chip_parts(sp: ShufflePlan) -> list[tuple[int, int, DmaPlan]]:
    """The shuffled DMA as one plan per source chip: ``(source chip c, the chip it really reads, the plan)``,
    the plan's source base moved to the chip read, its loops over source chips removed."""
    p = sp.dma
    space = address_space(p.hw, p.src.medium)
    cb = space.chip_bytes

    def is_chip(lp: DmaLoop) -> bool:
        return lp.src != 0 and lp.src % cb == 0

    groups = (p.spatial, p.commands, p.loops[:-1])
    chip_loops = [lp for g in groups for lp in g if is_chip(lp)]
    rest = [tuple(lp for lp in g if not is_chip(lp)) for g in groups]
    out: list[tuple[int, int, DmaPlan]] = []
    for combo in np.ndindex(*(lp.size for lp in chip_loops)):
        sb = p.base[0] + sum(i * lp.src for i, lp in zip(combo, chip_loops, strict=True))
        db = p.base[1] + sum(i * lp.dst for i, lp in zip(combo, chip_loops, strict=True))
        chip, off = divmod(sb, cb)
        real = sp.chips[chip] if 0 <= chip < len(sp.chips) else chip
        off += sp.chip_offsets[chip] if 0 <= chip < len(sp.chip_offsets) else 0  # a staged chip slice's entry
        part = replace(p, spatial=rest[0], commands=rest[1], loops=(*rest[2], p.loops[-1]),
                       base=(real * cb + off, db))
        out.append((chip, real, part))
    return out


def _crossing(real: int, part: DmaPlan) -> int:
    """Bytes of one chip's part that land on another chip than the one they are read from (L2389)."""
    dcb = address_space(part.hw, part.dst.medium).chip_bytes
    loops = [lp for lp in part.all_loops()[:-1] if lp.dst != 0 and lp.dst % dcb == 0]
    combos = list(np.ndindex(*(lp.size for lp in loops))) or [()]
    per = part.nbytes // len(combos)
    total = 0
    for combo in combos:
        dchip = (part.base[1] + sum(i * lp.dst for i, lp in zip(combo, loops, strict=True))) // dcb
        total += per if dchip != real else 0
    return total


@cached(256)
def pcie_bytes(sp: ShufflePlan) -> int:
    """Bytes that cross chips over PCIe (L2389, L2843–2847), over every chip's part.  (A pure function of the
    plan: remembered under its exact key, as :func:`cycles`.)"""
    return sum(_crossing(real, part) for _, real, part in chip_parts(sp))


@cached(256, paths=COST_PATHS)
def cycles(sp: ShufflePlan) -> DmaCost:
    """The shuffled DMA's cycles (see the module docstring): the slowest chip's part.  Each part is costed by
    the DMA model (:func:`visa.engines.dma.cost.cycles`) with its bytes read from the chip it really reads, and
    lasts at least the startup plus its bytes that cross chips over the chip's PCIe link at 30 B/cycle
    (L2472, L2843–2847): the link is the chip's, shared by its DMA engines.  A pure function of the plan
    (:func:`visa.engines.cache.cached`: its exact key, and which of the cost model's fast paths are on): a
    repeated move is not split into parts and costed again (each part a new plan, keyed field by field by the
    cost model's own cache)."""
    rate = sp.dma.hw.dma.pcie_bytes_per_cycle
    startup = sp.dma.hw.dma.startup_cycles
    costs: list[DmaCost] = []
    for _, real, part in chip_parts(sp):
        c = dma_cycles(part)
        link = -(-_crossing(real, part) // rate)
        costs.append(replace(c, total=max(c.total, startup + link), pcie=max(c.pcie, link)))
    if not costs:
        return dma_cycles(sp.dma)
    worst = max(costs, key=lambda c: c.total)
    return DmaCost(total=worst.total, startup=worst.startup, issue=max(c.issue for c in costs),
                   dm=max(c.dm for c in costs), hbm=max(c.hbm for c in costs), pcie=max(c.pcie for c in costs),
                   engines=sum(c.engines for c in costs), commands=worst.commands,
                   packets=sum(c.packets for c in costs), nbytes=sum(c.nbytes for c in costs),
                   channels=_channels(costs), why=tuple(dict.fromkeys(w for c in costs for w in c.why)))


def _channels(costs: list[DmaCost]) -> tuple[tuple[int, float], ...]:
    """The HBM channels of every chip's part together (each part's channels are its chips', L2980)."""
    out: dict[int, float] = {}
    for c in costs:
        for ch, busy in c.channels:
            out[ch] = out.get(ch, 0.0) + busy
    return tuple(sorted(out.items()))
