"""``ctx.memory()``: how full each memory of each chip is (design API.md §8, a reference extension; manual
capacities L134–140, L1085–1093).

Every memory but HBM is addressed per unit — a DM, VRF or SPM tensor occupies the same byte range in every
slice (or PE) it is laid out over, a TRF tensor the same range of every row it uses (L1085–1093) — so a
memory's *capacity* is one unit's address space, its *live* bytes the union of the ranges the live tensors
hold there (the registry's regions, :mod:`visa.memory.registry`), its *free* bytes the rest, and its largest
free span the longest gap an allocation of that memory could still take.  HBM's unit is the chip.

>>> from visa.hw import RNGD
>>> from visa.memory.registry import Registry
>>> reg = Registry()
>>> keep = object.__new__(type("T", (), {"__slots__": ("__weakref__",)}))
>>> _ = reg.allocate(keep, "dm", frozenset({0}), 4096, 8192, "t")
>>> u = usage(RNGD, reg, 1)[0, "dm"]
>>> u.capacity, u.live, u.free, u.largest_free
(524288, 4096, 520192, 516096)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from visa.hw import HardwareProfile
from visa.memory.footprint import merge_intervals
from visa.memory.registry import Registry

__all__ = ["MemoryUsage", "MemoryReport", "usage", "unit_capacity", "MEMORY_UNITS"]

#: The unit each memory is addressed in (manual L1085–1093; SPM per PE, design API.md §8).
MEMORY_UNITS = {"hbm": "chip", "dm": "slice", "trf": "TRF row", "vrf": "slice", "spm": "PE"}


def unit_capacity(hw: HardwareProfile, memory: str) -> int:
    """Bytes of one unit's address space of ``memory`` (L137–140, L1088–1090; SPM: ``hw.spm.pe_bytes``)."""
    return {"hbm": hw.hbm.chip_bytes, "dm": hw.dm.slice_bytes, "trf": hw.trf.row_bytes,
            "vrf": hw.vrf.slice_bytes, "spm": hw.spm.pe_bytes}[memory]


@dataclass(frozen=True)
class MemoryUsage:
    """One memory of one chip: ``capacity`` bytes per ``unit``, ``live`` bytes held by live tensors, ``free``
    bytes, ``largest_free`` the longest free span, ``tensors`` the live tensors there."""

    chip: int
    memory: str
    unit: str
    capacity: int
    live: int
    free: int
    largest_free: int
    tensors: int

    def __str__(self) -> str:
        return (f"chip {self.chip} {self.memory.upper():>4}: {self.live} of {self.capacity} B per {self.unit} live "
                f"({self.tensors} tensor(s)), {self.free} B free, largest free span {self.largest_free} B")


@dataclass(frozen=True)
class MemoryReport:
    """``ctx.memory()``: a :class:`MemoryUsage` per (chip, memory); index it by ``(chip, "dm")``."""

    rows: tuple[MemoryUsage, ...]

    def __getitem__(self, key: tuple[int, str]) -> MemoryUsage:
        chip, memory = key
        for r in self.rows:
            if r.chip == chip and r.memory == memory:
                return r
        raise KeyError(key)

    def __iter__(self) -> Iterator[MemoryUsage]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self.rows)


def _row(chip: int, memory: str, capacity: int, spans: list[tuple[int, int]]) -> MemoryUsage:
    lo, hi = merge_intervals([a for a, _ in spans], [b for _, b in spans])
    lo, hi = np.clip(lo, 0, capacity), np.clip(hi, 0, capacity)
    live = int((hi - lo).sum())
    edges_lo = np.concatenate([[0], hi])
    edges_hi = np.concatenate([lo, [capacity]])
    gaps = edges_hi - edges_lo
    return MemoryUsage(chip, memory, MEMORY_UNITS[memory], capacity, live, capacity - live,
                       int(gaps.max()) if gaps.size else capacity, len(spans))


def usage(hw: HardwareProfile, registry: Registry, chips: int) -> MemoryReport:
    """The report over chips ``0 .. chips - 1`` (and any chip a live tensor occupies) and every memory."""
    regions = registry.live_regions()
    top = max([chips, *(max(r.chips) + 1 for r in regions if r.chips)])
    rows = []
    for chip in range(top):
        for memory in MEMORY_UNITS:
            spans = [(r.lo, r.hi) for r in regions if r.memory == memory and chip in r.chips]
            rows.append(_row(chip, memory, unit_capacity(hw, memory), spans))
    return MemoryReport(tuple(rows))
