"""Address bookkeeping for kernels built by :mod:`visa.kernels`: a bump allocator per memory.

A kernel of this package places its DM tensors, its VRF operands and its HBM outputs at addresses an
:class:`Arena` hands out, so that kernels compose in one ``@device`` function without overlapping.  Capacity
is not checked here: the memories refuse a tensor that runs past them (the DM is 512 KiB per slice, L138; the
VRF 8 KiB per slice, L1090; an HBM address past the chip's HBM is refused by the DMA).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from visa.mapping import AxisSet, Mapping

__all__ = ["Arena", "Maps", "PAIR", "pair_axis"]

#: The interleave axis (size 2, L1843–1868) the kernels declare in their AxisSet to fetch two tensors together.
PAIR = "Pair_"


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


@dataclass
class Arena:
    """Next free byte of each memory: DM and VRF per slice, HBM per chip (manual L136–139).

    ``dm`` starts at 0 and grows; allocations are 32-byte aligned (a flit, L2424–2427; L1701).  HBM allocations
    are 4 KiB aligned from ``hbm`` (default 1 GiB, above the host-written inputs a caller places lower).
    """

    dm: int = 0
    vrf: int = 0
    hbm: int = 1 << 30
    flit: int = 32

    def take_dm(self, nbytes: int) -> int:
        """A DM address (per slice) for ``nbytes`` bytes."""
        addr = _align(self.dm, self.flit)
        self.dm = addr + nbytes
        return addr

    def take_vrf(self, nbytes: int) -> int:
        """A VRF address (per slice) for ``nbytes`` bytes."""
        addr = _align(self.vrf, self.flit)
        self.vrf = addr + nbytes
        return addr

    @contextmanager
    def scratch(self, *, dm: bool = True, vrf: bool = True) -> Iterator[Arena]:
        """Temporaries: the DM (and/or VRF) allocated inside the ``with`` block are free again after it.

        A kernel whose result leaves the block (an HBM tensor, or a DM tensor allocated before the block) uses
        this for its intermediate statistics, operands and tiles.  The simulator runs each operation when it is
        called, so a later tensor at a reused address never changes an earlier result.
        """
        marks = (self.dm, self.vrf)
        try:
            yield self
        finally:
            if dm:
                self.dm = marks[0]
            if vrf:
                self.vrf = marks[1]

    def take_hbm(self, nbytes: int) -> int:
        """An HBM address for ``nbytes`` bytes."""
        addr = _align(self.hbm, 4096)
        self.hbm = addr + nbytes
        return addr


def pair_axis(ax: AxisSet) -> str:
    """Declare :data:`PAIR` (size 2: at most two tensors are interleaved, L1850) in ``ax`` once; its name."""
    if PAIR not in ax:
        ax.declare(**{PAIR: 2})
    return PAIR


class Maps:
    """``maps["A, B"]``: ``ax.m["A, B"]`` parsed once per text for a kernel that asks the same mappings at every
    call (a GEMM of a decode step asks about twenty per call, 200 calls per step: issue 25's wall time).  The axis
    set may grow (:func:`pair_axis`); a text names the same mapping whenever it is asked."""

    __slots__ = ("ax", "_seen")

    def __init__(self, ax: AxisSet) -> None:
        self.ax = ax
        self._seen: dict[str, Mapping] = {}

    def __getitem__(self, text: str) -> Mapping:
        got = self._seen.get(text)
        if got is None:
            got = self._seen[text] = self.ax.m[text]
        return got
