"""Fast path ``dma.cost-translated-parts`` (issue 24): the HBM load of a DMA whose engines' commands (its parts)
move the same transfers at places an aligned block apart, modelled on one part and renamed.

The reference (:func:`visa.engines.dma.cost.model`) gives :func:`~visa.memory.performance.hbm_load` the
transfers of every part, each part stretches of its own (no window spans two, no row stays open from one to the
next).  A tiled DMA's engines often move one shape each, whole aligned blocks apart (a 16 MiB ReLU's eight
engines, 2 MiB each): part ``e``'s units are part 0's plus ``d_e``, where either

* ``d_e`` is a multiple of ``2^k`` and part 0 lies in one aligned ``2^k``-byte block ``B``: as
  :mod:`visa.engines.dma.fast_relative` argues (L2960–2977), every unit's channel is part 0's XOR
  ``channel(B) ^ channel(B + d_e)``, and banks and rows are renamed one to one; or
* ``d_e`` sets only bits no unit of part 0 sets (a ring sum's engines 512 bytes apart, the units' bits 9 and 10
  clear): ``u + d_e = u ^ d_e``, and channel, bank and row are XORs of address bits (linear over the bits), so
  channel ``c`` becomes ``c ^ channel(d_e)`` and banks and rows are renamed one to one;

so each window of part ``e`` lasts as long as part 0's window it stands for.  So part 0 alone is modelled, and:

* each channel's busy cycles add the windows of every part in the reference's order (channel by channel, parts in
  order, a part's windows in order: ``HbmLoad.windows``, renamed part by part, summed by ``np.bincount`` as the
  reference sums them): the same floats;
* each channel's bus cycles add every transfer's in issue order (part 0's costs, repeated, on renamed channels);
* each part's own busy cycles per channel (``group_busy``) are part 0's, renamed;
* the counts (activations, transfers, read-modify-writes) are part 0's times the parts.

Anything else (parts of other shapes or factors, a move that is neither, parts on other
chips, a profile whose channel number is not an XOR of address bits) returns ``None``: the reference runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.hw import HardwareProfile
from visa.memory import performance as perf
from visa.memory.performance import HbmLoad

__all__ = ["SHIFTED", "TRANSLATED", "load", "shifted"]

TRANSLATED = fastpaths.register("dma.cost-translated-parts", "a DMA's HBM load modelled on one engine's command "
                                "when the others move the same transfers whole aligned blocks away, its windows "
                                "renamed and added in the reference's order, not modelled part by part")

SHIFTED = fastpaths.register("dma.cost-shifted-transfers", "the HBM transfers of a DMA's command that walks the "
                             "first command's loops a whole number of 256-byte units away on the same chip read off "
                             "the first command's (units moved, factors kept), not split packet by packet again")

#: one part's HBM transfers: (chips, unit addresses, cost factors, sample windows, split reads)
Transfers = tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], int]


def _moves(hw: HardwareProfile, parts: Sequence[Transfers]) -> list[int] | None:
    """Each part's move ``d_e`` from part 0 (0 for part 0), or None when the parts are not such translates."""
    h = hw.hbm
    if h.stacks != 1 << len(h.stack_bits) or h.channels & (h.channels - 1):
        return None
    chips, units, factor, seg, _ = parts[0]
    n = units.size
    if n == 0 or chips[0] != chips[-1] or not np.all(chips == chips[0]):
        return None
    lo, hi = int(units.min()), int(units.max())
    k = max((lo ^ hi).bit_length(), (h.access_unit_bytes - 1).bit_length())
    moves = [0]
    for t in parts[1:]:
        if t[1].size != n:
            return None
        d = int(t[1][0]) - int(units[0])
        if (d % (1 << k) or lo + d < 0) and (d < 0 or np.any(units & d)):
            return None
        moves.append(d)
    for t, d in zip(parts[1:], moves[1:], strict=True):
        # (a part made by ``shifted`` shares part 0's chips, factors and windows: the same arrays, equal without a
        # look at their values — integers, and factors 1 or the write penalty, never NaN)
        if not (_same(t[0], chips) and _same(t[2], factor) and _same(t[3], seg)
                and np.array_equal(t[1] - d, units)):
            return None
    return moves


def _same(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    return a is b or np.array_equal(a, b)


def load(hw: HardwareProfile, parts: Sequence[Transfers]) -> HbmLoad | None:
    """The reference's ``hbm_load`` of the parts' transfers (each part its windows' stretches, each part a group),
    or None (see the module)."""
    moves = _moves(hw, parts)
    if moves is None:
        return None
    chips, units, factor = parts[0][0], parts[0][1], parts[0][2]
    one = perf.hbm_load(hw, chips, units, factor, parts[0][3], keep_windows=True)
    assert one.windows is not None  # (asked for)
    block = int(units.min())
    base = int(chips[0]) * hw.hbm.channels
    xors = [int(v) for v in perf.hbm_channel(hw, np.array([block + d for d in moves], dtype=np.int64))]
    xors = [x ^ xors[0] for x in xors]
    w_ch, w_time = one.windows
    t_ch = chips * hw.hbm.channels + perf.hbm_channel(hw, units)
    cost = factor * perf.unit_cycles(hw)
    p = len(parts)
    w_all = np.concatenate([base + ((w_ch - base) ^ x) for x in xors])
    t_all = np.concatenate([base + ((t_ch - base) ^ x) for x in xors])
    nch = int(max(w_all.max(), t_all.max())) + 1
    busy = np.asarray(np.bincount(w_all, weights=np.tile(w_time, p), minlength=nch), dtype=np.float64)
    bus = np.asarray(np.bincount(t_all, weights=np.tile(cost, p), minlength=nch), dtype=np.float64)
    group_busy = np.zeros((p, nch))
    used = np.flatnonzero(one.busy)
    for e, x in enumerate(xors):
        group_busy[e, base + ((used - base) ^ x)] = one.busy[used]
    return HbmLoad(busy, bus, one.activations * p, one.transfers * p, one.rmw * p, group_busy)


def shifted(hw: HardwareProfile, chip_bytes: int, first: Transfers, lo: int, hi: int, move: int) -> Transfers | None:
    """Path ``dma.cost-shifted-transfers``: the reference's transfers (``cost._hbm_transfers``) of a command whose
    only HBM side's packets are those of the first command (``first``, its packets' addresses in ``[lo, hi]``) moved
    by ``move`` bytes, or None.

    The reference splits each chip-relative packet address into requests and 256-byte units (L2469, L2981–2985):
    a move by a whole number of units that keeps every packet on its chip (``lo`` and ``hi``, moved or not, on
    one chip: the addresses in between too) moves every request's first and last unit by the same amount and
    keeps which units a request crosses, how much of each it covers (the read-modify-write factor), the packet of
    each transfer and so the issue order and the split reads.  So the units are the first's plus ``move``, the
    rest the first's."""
    if move % hw.hbm.access_unit_bytes or lo < 0:
        return None
    chip = lo // chip_bytes
    if hi // chip_bytes != chip or (lo + move) // chip_bytes != chip or (hi + move) // chip_bytes != chip:
        return None
    chips, units, factor, seg, split = first
    return chips, units + move, factor, seg, split
