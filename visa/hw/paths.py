"""One figure per data path: the bandwidths every cost and bound reads (design ARCHITECTURE.md principle 8).

Each path is a per-unit rate in bytes per core cycle, computed from the profile's stated fields, and a unit count
per chip.  The DMA cost model, the schedule's roofline, the memory-bound lines of the workloads and
docs/cost-model.md all read :func:`bandwidth` (or :func:`per_unit`), so that no two of them can disagree.

* ``HBM``: 32 channels (2 stacks × 16, L2952–2953), each 64 B per controller cycle at 0.75 GHz (L2980) = 48 B per
  core cycle: 1,536 B/cycle per chip, shared by reads and writes.  The manual rounds this to "1.5 TB/s" (L137,
  L2980) and splits it "0.75 TB/s read + 0.75 TB/s write" (L2602) for a copy that reads and writes the same
  bytes (L2633–2636); a read-only stream reaches the full channel rate (Example 5, L2741–2744).
* ``DMA``: 8 engines (L2404) × 256 B/cycle (L2596).  ``PCIe``: 30 B/cycle (L2845).
* ``DMN``: 16 DMNs per chip (L2866–2867) × 128 B/cycle (L2603, L2933).  ``SPM``: 128 B/cycle per DMN (L2945).
* ``fetch`` / ``commit``: the Tensor Unit's DM ports, per slice per cycle: the main context fetches up to 32 bytes
  (L1758; its switch channel is 32 bytes wide, L2125) and commits up to 32 (L2330); the sub context fetches 8
  (L1759) and commits 8 (L2330).  ``fetch (dual channel)``: a main pass that takes the sub context's channel too
  moves 64 bytes per cycle (L2125–2142).  ``register load``: the TRF/VRF load writes one 32-byte flit per cycle
  (L3544).

>>> from visa.hw import RNGD
>>> bandwidth(RNGD, "HBM"), per_unit(RNGD, "HBM"), bandwidth(RNGD, "DMA"), bandwidth(RNGD, "fetch")
(1536.0, 48.0, 2048.0, 16384.0)
>>> bandwidth(RNGD, "HBM", chips=4), per_unit(RNGD, "fetch (sub)"), per_unit(RNGD, "fetch (dual channel)")
(6144.0, 8.0, 64.0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from visa.hw.profile import HardwareProfile

__all__ = ["DataPath", "PATHS", "bandwidth", "per_unit", "units"]


@dataclass(frozen=True)
class DataPath:
    """A data path: its unit (``"channel"``, ``"engine"``, …), the unit's rate in bytes per core cycle and the
    units per chip, both read from the profile, the profile fields it reads and the manual lines that state them."""

    name: str
    unit: str
    rate: Callable[[HardwareProfile], float]
    count: Callable[[HardwareProfile], int]
    fields: tuple[str, ...]
    lines: str
    what: str


_SLICES = ("dm.clusters_per_chip", "dm.slices_per_cluster")


def _hbm_channel(hw: HardwareProfile) -> float:
    return hw.hbm.channel_bytes_per_cycle * hw.clocks.hbm_controller_hz / hw.clocks.core_hz


PATHS: dict[str, DataPath] = {p.name: p for p in (
    DataPath("HBM", "channel", _hbm_channel, lambda hw: hw.hbm.channels,
             ("hbm.channel_bytes_per_cycle", "clocks.hbm_controller_hz", "clocks.core_hz", "hbm.stacks",
              "hbm.channels_per_stack"), "L2952–2953, L2980",
             "HBM reads and writes together, every channel busy"),
    DataPath("DMA", "engine", lambda hw: float(hw.dma.bytes_per_cycle), lambda hw: hw.dma.engines_per_chip,
             ("dma.bytes_per_cycle", "dma.engines_per_chip"), "L2404, L2596", "bytes the DMA engines move"),
    DataPath("PCIe", "link", lambda hw: float(hw.dma.pcie_bytes_per_cycle), lambda hw: 1,
             ("dma.pcie_bytes_per_cycle",), "L2389, L2845", "host ↔ HBM and chip ↔ chip bytes"),
    DataPath("DMN", "DMN", lambda hw: float(hw.dm.dmn_bytes_per_cycle), lambda hw: hw.dm.dmns_per_chip,
             ("dm.dmn_bytes_per_cycle", "dm.clusters_per_chip", "dm.dmns_per_cluster"), "L2603, L2866–2867, L2933",
             "DMA bytes to and from DM"),
    DataPath("SPM", "DMN", lambda hw: float(hw.spm.dmn_bytes_per_cycle), lambda hw: hw.dm.dmns_per_chip,
             ("spm.dmn_bytes_per_cycle", "dm.clusters_per_chip", "dm.dmns_per_cluster"), "L2945, L2947",
             "DMA bytes to and from SPM (not modelled)"),
    DataPath("fetch", "slice", lambda hw: float(hw.switch.width_bytes), lambda hw: hw.dm.slices_per_chip,
             ("switch.width_bytes", *_SLICES), "L1758, L2125", "main-context fetch from DM"),
    DataPath("fetch (sub)", "slice", lambda hw: float(max(hw.fetch.sub_fetch_sizes)),
             lambda hw: hw.dm.slices_per_chip, ("fetch.sub_fetch_sizes", *_SLICES), "L1759, L3050",
             "sub-context fetch from DM"),
    DataPath("fetch (dual channel)", "slice", lambda hw: float(hw.switch.dual_channel_width_bytes),
             lambda hw: hw.dm.slices_per_chip, ("switch.dual_channel_width_bytes", *_SLICES), "L2125–2142",
             "a main-context fetch that also takes the sub context's switch channel"),
    DataPath("commit", "slice", lambda hw: float(max(hw.commit.main_commit_sizes)),
             lambda hw: hw.dm.slices_per_chip, ("commit.main_commit_sizes", *_SLICES), "L2330",
             "main-context commit to DM"),
    DataPath("commit (sub)", "slice", lambda hw: float(max(hw.commit.sub_commit_sizes)),
             lambda hw: hw.dm.slices_per_chip, ("commit.sub_commit_sizes", *_SLICES), "L2330",
             "sub-context commit to DM"),
    DataPath("register load", "slice", lambda hw: float(hw.collect.flit_bytes), lambda hw: hw.dm.slices_per_chip,
             ("collect.flit_bytes", *_SLICES), "L3544, L4049–4061", "TRF and VRF loads, one flit per cycle"),
)}


def _path(name: str) -> DataPath:
    try:
        return PATHS[name]
    except KeyError:
        raise KeyError(f"unknown data path {name!r}; known: {', '.join(PATHS)}") from None


def per_unit(hw: HardwareProfile, name: str) -> float:
    """Bytes per core cycle one unit of path ``name`` moves (one HBM channel, one DMA engine, one slice's port)."""
    return _path(name).rate(hw)


def units(hw: HardwareProfile, name: str) -> int:
    """Units of path ``name`` per chip (32 HBM channels, 8 DMA engines, 512 slices, …)."""
    return _path(name).count(hw)


def bandwidth(hw: HardwareProfile, name: str, chips: int = 1) -> float:
    """Bytes per core cycle path ``name`` moves on ``chips`` chips, every unit busy (module docstring)."""
    return per_unit(hw, name) * units(hw, name) * chips
