"""DMAs to and from the Scratchpad Memory (SPM): ``dm.to_spm(Pe, Element, ctx.tdma, addr)`` and
``spm.to_dm(Cluster, Slice, Element, ctx.tdma, addr)`` (design API.md §8; the reference's ``SpmTensor``,
furiosa-opt v0.9 — a reference extension, docs/manual-notes.md "issue 26").

The manual gives SPM a bandwidth (128 B/cycle per DMN, L2945) and a rule (same-chip transfers only, L2825) and
leaves its capacity and addressing pending (L2943).  visa takes the reference's: 4 KiB per PE, a PE being 64
slices (L2343), so an ``SpmTensor<D, Chip, Cluster, Pe, Element>`` has a Pe level of 4 per cluster and an
Element of at most 4 KiB.  A move is the identity on the tensor (L1162–1197), as every DMA: the destination
holds exactly the indices the source holds, each element copied from the unit of the same chip that holds it.

* :func:`plan` (the rules; the mypy plugin calls it with the types): a DMA element type of whole bytes, the same
  Chip mapping on both sides (L2825), and the identity — every index one side holds, the other holds; it derives,
  per destination byte, the source byte it copies (unit and offset within the unit);
* :func:`execute` copies those bytes (and which were written) chip by chip;
* :func:`cycles`: one DMA command (startup, L2467) and the bytes the busiest PE's SPM takes, at the SPM's 128
  B/cycle (L2945); every DMN's SPM works in parallel (L2947: no inter-DMN contention).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visa import dtypes as dt
from visa.engines.cache import cached
from visa.errors import DtypeError, LayoutError, UnsupportedFeatureError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.memory.images import DenseImage, IntArray
from visa.memory.layout import LEVELS

__all__ = ["SpmPlan", "plan", "execute", "cycles"]


@dataclass(frozen=True, eq=False)
class SpmPlan:
    """A DM↔SPM move: per copied element, the source's flat unit and element position and the destination's,
    the element's bytes ``nb``, the chips, and the bytes the busiest destination unit receives."""

    hw: HardwareProfile
    dtype: type[dt.Scalar]
    src_medium: str
    dst_medium: str
    src_unit: IntArray
    src_pos: IntArray
    dst_unit: IntArray
    dst_pos: IntArray
    nb: int
    chips: tuple[int, ...]
    busiest: int

    def __str__(self) -> str:
        return (f"{self.src_medium.upper()} → {self.dst_medium.upper()} DMA: {self.src_unit.size} element(s) of "
                f"{self.dtype!r} per chip, {self.busiest} B into the busiest "
                f"{'PE' if self.dst_medium == 'spm' else 'slice'}")


def _units(hw: HardwareProfile, medium: str) -> int:
    """Units per cluster: slices for DM, PEs for SPM."""
    return hw.dm.slices_per_cluster // (hw.spm.slices_per_pe if medium == "spm" else 1)


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], src_medium: str, src: dict[str, Mapping], dst_medium: str,
         dst: dict[str, Mapping], call: str) -> SpmPlan:
    """Plan the move of the tensor ``src`` (levels of ``src_medium``) into ``dst`` (pure; raises the rule)."""
    return _plan(hw, dtype, src_medium, tuple(src[k] for k in LEVELS[src_medium]), dst_medium,
                 tuple(dst[k] for k in LEVELS[dst_medium]), call)


@cached(64)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], src_medium: str, src_maps: tuple[Mapping, ...],
          dst_medium: str, dst_maps: tuple[Mapping, ...], call: str) -> SpmPlan:
    src = dict(zip(LEVELS[src_medium], src_maps, strict=True))
    dst = dict(zip(LEVELS[dst_medium], dst_maps, strict=True))
    if dtype.name not in hw.dma.dtypes:
        raise DtypeError(f"{dtype!r} is not a DMA type (manual L2525)", call=call,
                         fix=f"use one of {', '.join(sorted(hw.dma.dtypes))}")
    if dtype.size_bits % 8:
        raise UnsupportedFeatureError(f"{dtype!r} packs two elements a byte; the SPM moves whole elements",
                                      call=call, level="Element", fix="move an 8-bit (or wider) type")
    if src["Chip"] != dst["Chip"]:
        raise LayoutError(f"SPM is restricted to same-chip transfers (manual L2825): the source's Chip "
                          f"{src['Chip']!r} and the destination's {dst['Chip']!r} differ", call=call, level="Chip",
                          mapping=repr(dst["Chip"]), fix="keep the source's Chip mapping")
    s_joint = pair_of(*src_maps[1:])
    d_joint = pair_of(*dst_maps[1:])
    s_units = _units(hw, src_medium)
    d_units = _units(hw, dst_medium)
    s_el, d_el = src["Element"].size, dst["Element"].size
    ev = d_joint.evaluate()
    d_pos = np.flatnonzero(ev.valid).astype(np.int64)
    coords = {a: ev.coord(a)[d_pos] for a in d_joint.axes | s_joint.axes}
    extra = sorted(d_joint.axes - s_joint.axes)
    if extra:
        raise LayoutError(f"the destination names axis {extra[0]}, which the source does not have: a move is the "
                          "identity on the tensor (manual L1162–1197)", call=call, level="Element", axis=extra[0],
                          mapping=repr(dst["Element"]), fix=f"drop {extra[0]} from the destination's mappings")
    s_pos = _held_by(s_joint, coords, d_pos.size, ("source", "destination"), src["Element"], call,
                     "move a source that holds every index of the destination (a tile holds part)")
    # the reverse: every index the source holds must reach the destination
    sev = s_joint.evaluate()
    sv = np.flatnonzero(sev.valid)
    missing = sorted(s_joint.axes - d_joint.axes)
    if missing and sv.size:
        raise LayoutError(f"the destination does not use axis {missing[0]} of the source: a move is the identity on "
                          "the tensor (manual L1162–1197)", call=call, level="Element", axis=missing[0],
                          mapping=repr(dst["Element"]), fix=f"put {missing[0]} in one of the destination's levels")
    _held_by(d_joint, {a: sev.coord(a)[sv] for a in s_joint.axes}, sv.size, ("destination", "source"),
             dst["Element"], call, "give the destination the whole extent of every axis")
    s_unit, s_e = np.divmod(s_pos, s_el)
    d_unit, d_e = np.divmod(d_pos, d_el)
    nb = dtype.size_bits // 8
    counts = np.bincount(d_unit, minlength=1) if d_unit.size else np.zeros(1, np.int64)
    chips = tuple(int(c) for c in np.flatnonzero(dst["Chip"].validity()))
    del s_units, d_units
    for a in (s_unit, s_e, d_unit, d_e):
        a.setflags(write=False)
    return SpmPlan(hw, dtype, src_medium, dst_medium, s_unit, s_e, d_unit, d_e, nb, chips,
                   int(counts.max()) * nb)


def _held_by(joint: Mapping, coords: dict[str, IntArray], n: int, sides: tuple[str, str], element: Mapping,
             call: str, fix: str) -> IntArray:
    """The positions of ``joint`` holding each of the ``n`` indices ``coords``; the first it lacks is refused."""
    pos, held = joint.locate(coords, (n,))
    if not held.all():
        k = int(np.argmin(held))
        where = ", ".join(f"{a}: {int(np.asarray(coords[a])[k])}" for a in sorted(coords))
        raise LayoutError(f"the {sides[0]} does not hold index {{{where}}} that the {sides[1]} holds", call=call,
                          level="Element", mapping=repr(element), axis=", ".join(sorted(coords)) or None, fix=fix)
    out: IntArray = np.broadcast_to(pos, (n,)).astype(np.int64)
    return out


def execute(p: SpmPlan, src: list[DenseImage], dst: list[DenseImage], src_address: int, dst_address: int) -> None:
    """Copy every element's bytes (and whether they were written) on every chip; ``src[c]``/``dst[c]`` are chip
    ``c``'s images and the addresses each side's element 0 in its unit."""
    byte = np.arange(p.nb, dtype=np.int64)
    for c in p.chips:
        s_img, d_img = src[c], dst[c]
        s_idx = ((p.src_unit * s_img.nbytes + src_address + p.src_pos * p.nb)[:, None] + byte).reshape(-1)
        d_idx = ((p.dst_unit * d_img.nbytes + dst_address + p.dst_pos * p.nb)[:, None] + byte).reshape(-1)
        values, known = s_img.flat_image().gather(s_idx)
        lo = dst_address + int(p.dst_pos.min()) * p.nb if p.dst_pos.size else dst_address
        hi = dst_address + (int(p.dst_pos.max()) + 1) * p.nb if p.dst_pos.size else dst_address
        d_img.flat_data(lo, hi)[d_idx] = values
        d_img.mask_for_write(slice(None), lo, hi)[d_idx] = known
        d_img.settle(slice(None), lo, hi)


def cycles(p: SpmPlan) -> int:
    """One DMA command's startup (L2467) and the busiest destination unit's bytes at the SPM's 128 B/cycle per
    DMN (L2945); the DMNs' SPMs work in parallel (L2947)."""
    return p.hw.dma.startup_cycles + -(-p.busiest // p.hw.spm.dmn_bytes_per_cycle)
