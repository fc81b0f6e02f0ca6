"""The memories of one device: per chip, HBM (sparse), DM, TRF and VRF byte images, plus the registry.

Sizes come from the hardware profile (manual L134–140, L1074–1093, L2862–2874).  The TRF image gives each row
twice its byte capacity so that the widened i5 and i9 (whose images take 8 and 16 bits, docs/manual-notes.md
"dtypes") fit at their counted size; capacity rules still count ``size_bits``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.hw import HardwareProfile
from visa.memory.images import DenseImage, PagedImage
from visa.memory.registry import Registry

if TYPE_CHECKING:
    from visa.memory.usage import MemoryReport

__all__ = ["ChipMemory", "DeviceMemory", "TRF_PAGE_BYTES"]

#: The page of the TRF image's written-state (:mod:`visa.memory.pages`): a register load writes a few hundred bytes
#: of every row (the reference's ``matmul_16384``: bytes 0–511 of 4,096 rows), which whole 4 KiB pages would leave
#: partial, each load and each read then settling 16 MB of byte mask; pages of 256 bytes keep such loads whole
#: pages (a state each, no mask).  The known bytes are the same at any page size (issue 24).
TRF_PAGE_BYTES = 256


class ChipMemory:
    """One chip's HBM, DM (clusters × slices × bytes), TRF (× rows) and VRF images, created on first use (the
    memories of manual L134–140)."""

    __slots__ = ("hw", "chip", "_hbm", "_dm", "_trf", "_vrf", "_spm")

    def __init__(self, hw: HardwareProfile, chip: int) -> None:
        self.hw = hw
        self.chip = chip
        self._hbm: PagedImage | None = None
        self._dm: DenseImage | None = None
        self._trf: DenseImage | None = None
        self._vrf: DenseImage | None = None
        self._spm: DenseImage | None = None

    @property
    def hbm(self) -> PagedImage:
        """The chip's HBM: 48 GB, sparse (L137, L2949)."""
        if self._hbm is None:
            self._hbm = PagedImage(self.hw.hbm.chip_bytes, f"HBM of chip {self.chip}")
        return self._hbm

    @property
    def dm(self) -> DenseImage:
        """The chip's DM: clusters × slices × 512 KB (L138, L1088)."""
        if self._dm is None:
            d = self.hw.dm
            self._dm = DenseImage((d.clusters_per_chip, d.slices_per_cluster, d.slice_bytes),
                                  f"DM slice of chip {self.chip}")
        return self._dm

    @property
    def trf(self) -> DenseImage:
        """The chip's TRFs: clusters × slices × rows × twice the 8 KB of a row (L139, L1089; module docstring)."""
        if self._trf is None:
            d, t = self.hw.dm, self.hw.trf
            self._trf = DenseImage((d.clusters_per_chip, d.slices_per_cluster, t.rows, 2 * t.row_bytes),
                                   f"TRF row of chip {self.chip}", page_bytes=TRF_PAGE_BYTES)
        return self._trf

    @property
    def vrf(self) -> DenseImage:
        """The chip's VRFs: clusters × slices × 8 KB (L140, L1090)."""
        if self._vrf is None:
            d = self.hw.dm
            self._vrf = DenseImage((d.clusters_per_chip, d.slices_per_cluster, self.hw.vrf.slice_bytes),
                                   f"VRF of chip {self.chip}")
        return self._vrf


    @property
    def spm(self) -> DenseImage:
        """The chip's SPMs: clusters × PEs per cluster × 4 KiB (L2942–2947; the capacity and the per-PE unit are the
        reference's, design API.md §8)."""
        if self._spm is None:
            d, s = self.hw.dm, self.hw.spm
            self._spm = DenseImage((d.clusters_per_chip, d.slices_per_cluster // s.slices_per_pe, s.pe_bytes),
                                   f"SPM of chip {self.chip}")
        return self._spm


class DeviceMemory:
    """All chips of a device (created on first use) and the registry of live tensors (manual L150–155)."""

    __slots__ = ("hw", "chips", "registry", "operand_registers")

    def __init__(self, hw: HardwareProfile) -> None:
        self.hw = hw
        self.chips: dict[int, ChipMemory] = {}
        self.registry = Registry()
        #: The Vector Engine's carried operand register of each Tensor Unit context (``"main"``, ``"sub"``) as the
        #: last pass that wrote it left it: ``(dtype name, values, known)``, ``(Chip, Cluster, Slice, Way8 lane)``
        #: (L8708–8721); the next pass's ``OperandRead`` before its own write sees it.
        self.operand_registers: dict[str, tuple[str, Any, Any]] = {}

    def __call__(self, chips: int = 1) -> MemoryReport:
        """``ctx.memory()`` (design API.md §8): per chip and memory, capacity, live and free bytes and the largest
        free span (:mod:`visa.memory.usage`), over chips ``0 .. chips - 1`` and every chip a live tensor holds."""
        from visa.memory.usage import usage

        return usage(self.hw, self.registry, chips)

    def chip(self, index: int) -> ChipMemory:
        """The memories of chip ``index``."""
        got = self.chips.get(index)
        if got is None:
            got = ChipMemory(self.hw, index)
            self.chips[index] = got
        return got
