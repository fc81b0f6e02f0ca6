"""Fast path of DMA planning (issue 24), beside :mod:`visa.engines.dma.plan`, whose ``plan`` it stands for;
``tests/engines/test_fast_plan.py`` checks it against a plan derived afresh with the path switched off.

``dma.plan-rebase``: a kernel moves the same layout from and to many addresses (every tile of a GEMM, every
weight tile of a layer), and the reference derives each plan again (its stream, sequencers, packet and engines:
about 10 ms).  Of a plan, only the bases depend on the addresses: the loops, the packet and the engines follow
from the mappings, and the address rules (an element's first bit, whole bytes, the DMA's 8-byte alignments,
L2424–2427) look at the address modulo a few bytes — and, for a packet that carries padding before or after
the data, at the distance to the ends of the unit.  So a plan derived for the same sides at an address with the
same remainder modulo :func:`period`, as far from the ends as the tensor's extent (:func:`_home`), is moved to
the new addresses — the two sides and the sequencers' bases shifted — after the destination's placement rules
are checked at its own address.  Plans with a given
stream (``stream=``) and host transfers (their staging side) are left to the reference.

``dma.plan-rebase-one-side``: a side within its extent of an end of its unit (a tensor at address 0, as the ring
AllReduce's ``X``, shuffled to three destinations) is not moved; the other side still is, when it can be.  The
plan is derived with that side at its own address — every choice that depends on it (its remainder, its distance
to the ends) is the reference's own — and the other side at its home, where its choices are those at its own
address as above; moved, only the other side's base changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.cache import MISS, PLANS, exact_key
from visa.engines.dma.config import DmaPlan, Side
from visa.errors import VisaError
from visa.hw import HardwareProfile
from visa.memory.layout import check_placement, element_bytes
from visa.memory.transfer import address_space

__all__ = ["ONE_SIDE", "REBASE", "period", "plan"]

REBASE = fastpaths.register("dma.plan-rebase", "a DMA plan derived once per layout and address remainder, moved "
                                               "to other addresses instead of derived again")


ONE_SIDE = fastpaths.register("dma.plan-rebase-one-side", "with dma.plan-rebase, a side too near an end of its "
                              "unit to be moved stays at its own address while the other side is moved (a chip "
                              "shuffle of one tensor at DM address 0 to several destinations: one derivation)")


def period(hw: HardwareProfile) -> int:
    """Addresses that agree modulo this many bytes share a plan: the DMA's request (``hw.dma.request_bytes``,
    L2469), rounded to a multiple of every address and packet alignment the DMA's rules check (L2424–2427)."""
    d = hw.dma
    aligns = [*d.read_address_align.values(), *d.write_address_align.values(), *d.packet_align.values()]
    return math.lcm(d.request_bytes, d.hbm_to_dm_align, *aligns)


def _home(hw: HardwareProfile, dtype: type[dt.Scalar], side: Side, every: int) -> Side | None:
    """The side at its address's remainder modulo ``every`` bytes, raised by a margin (and without its name, which
    only messages use); None when the side lies too near either end of its unit for a plan to be moved.

    A plan may reach past its tensor's first and last byte — a padded packet carries the padding before or after
    the data (L1818–1840) and reads as many bytes of the source — and the reference refuses a packet that would
    leave the unit's address space, so the stream it picks depends on the distance to either end.  Within the
    tensor's own extent (its Element's bytes) of either end no plan is moved; elsewhere the home address keeps at
    least that distance too, and both make the same choices."""
    element = side.levels[-1][1]
    extent = element_bytes(dtype, element.size)
    margin = -(-extent // every) * every
    unit = address_space(hw, side.medium).backed_bytes
    byte = side.bit_address // 8
    home = byte % every + margin
    if byte < margin or byte + extent + margin > unit or home + extent + margin > unit:
        return None
    return replace(side, bit_address=8 * home, name="")


def _moved(p: DmaPlan, src: Side, dst: Side) -> DmaPlan:
    """``p`` (derived for ``_home(src)``, ``_home(dst)``) at the sides' own addresses."""
    bits = p.dtype.size_bits
    d_src, d_dst = src.bit_address - p.src.bit_address, dst.bit_address - p.dst.bit_address
    return replace(p, src=src, dst=dst,
                   read=replace(p.read, base=p.read.base + d_src // bits),
                   write=replace(p.write, base=p.write.base + d_dst // bits),
                   base=(p.base[0] + d_src // 8, p.base[1] + d_dst // 8))


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, call: str, own_padding: bool,
         derive: Callable[..., DmaPlan]) -> DmaPlan | None:
    """The plan of ``derive(hw, dtype, src, dst, None, call, own_padding)`` by moving the plan of the sides at their
    home addresses (derived and kept by ``derive``'s cache), or None when this path does not apply."""
    if not REBASE.on or not {src.medium, dst.medium} <= {"hbm", "dm"}:
        return None  # (host transfers stage a side; other media are refused by the reference)
    if src.bit_address % 8 or dst.bit_address % 8:
        return None  # (a sub-byte start: the reference says what is wrong)
    key = (exact_key(hw), dtype, exact_key(src), src.name, exact_key(dst), dst.name, call, own_padding,
           ONE_SIDE.on)  # (a plan moved one side only is not the answer with dma.plan-rebase-one-side off)
    done = _MOVED.get(key)
    if done is not MISS:  # moved here before (a later launch of the same kernel): the same plan object
        got: DmaPlan = done
        return got
    every = period(hw)
    home_src, home_dst = _home(hw, dtype, src, every), _home(hw, dtype, dst, every)
    if home_src is None or home_dst is None:
        if not ONE_SIDE.on or (home_src is None and home_dst is None):
            return None  # near an end of its unit: the reference derives it there
        # (dma.plan-rebase-one-side: the side near an end stays where it is, the other is moved)
        home_src = replace(src, name="") if home_src is None else home_src
        home_dst = replace(dst, name="") if home_dst is None else home_dst
    if home_src.bit_address == src.bit_address and home_dst.bit_address == dst.bit_address:
        return None  # already at home: the reference's own cache
    try:
        check_placement(hw, dst.medium, dtype, dst.mappings, dst.bit_address // 8, num_chips=None,
                        name=dst.label(), call=call)
        home = derive(hw, dtype, home_src, home_dst, None, call, own_padding)
    except VisaError:
        return None  # a refusal: the reference raises it, naming the tensors at their own addresses
    moved = _moved(home, src, dst)
    _MOVED.put(key, moved)
    return moved


#: Plans already moved, by their exact arguments (mappings by their exact keys, :mod:`visa.engines.cache`; the
#: sides' names too, which the plan carries into messages): at most 4,096, under the plan caches' bytes
#: (:data:`visa.engines.cache.PLANS`).
_MOVED = PLANS.store(4096)
