"""The DMA's configuration types: the two ends of a move, the fused sequencer and its cost (manual
"DMA Command Syntax", L2505–2541)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from visa import dtypes as dt
from visa.hw import HardwareProfile
from visa.mapping import IDENTITY, Mapping
from visa.mapping.sequencer import Entry, SequencerConfig
from visa.memory.layout import LEVELS

__all__ = ["Side", "DmaLoop", "DmaPlan", "DmaCost", "MEDIA", "TABLE", "NAMES", "LEVELS"]

MEDIA = ("host", "hbm", "dm")
TABLE = {"host": "HBM", "hbm": "HBM", "dm": "DM"}  # columns of the alignment table (L2426); host as HBM
NAMES = {"host": "host", "hbm": "HBM", "dm": "DM"}


@dataclass(frozen=True)
class Side:
    """One end of a DMA (manual ``In``/``Out`` and ``b_in``/``b_out``, L2407–2423): the medium, the level
    mappings (``Element`` for the host; ``Chip, Element`` for HBM; ``Chip, Cluster, Slice, Element`` for DM)
    and the bit address of element 0 in each chip (HBM) or slice (DM).  ``name`` names the tensor in errors."""

    medium: str
    levels: tuple[tuple[str, Mapping], ...]
    bit_address: int = 0
    name: str = field(default="", compare=False)

    @classmethod
    def of(cls, medium: str, levels: dict[str, Mapping], address: int = 0, *, name: str = "") -> Side:
        """A side from a dict of level mappings and a byte address."""
        order = LEVELS.get(medium, tuple(levels))
        return cls(medium, tuple((k, levels[k]) for k in order if k in levels), 8 * address, name)

    def level(self, name: str) -> Mapping:
        """The mapping of one level."""
        for k, mp in self.levels:
            if k == name:
                return mp
        raise KeyError(name)

    @property
    def mappings(self) -> dict[str, Mapping]:
        """The level mappings as a dict (what :func:`~visa.memory.layout.check_placement` takes)."""
        return dict(self.levels)

    def label(self) -> str:
        """The tensor's name, or its medium and layout."""
        if self.name:
            return self.name
        inner = ", ".join(repr(mp) for _, mp in self.levels)
        return f"{NAMES.get(self.medium, self.medium)}[{inner}] @ {self.bit_address // 8}"


@dataclass(frozen=True)
class DmaLoop:
    """One loop of the fused DMA sequencer (``(limit, source_stride, dest_stride)``, L2510), strides in bytes.
    ``axes`` names the tensor axes the loop walks (for messages)."""

    size: int
    src: int
    dst: int
    axes: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.size} : ({self.src}, {self.dst})"


def _text(loops: Sequence[DmaLoop]) -> str:
    return "[" + ", ".join(str(lp) for lp in loops) + "]"


@dataclass(frozen=True, eq=False)
class DmaPlan:
    """A DMA's hardware configuration (manual ``DmaSequencer``, L2505–2541).

    ``read``/``write`` are the two sequencers of the stream ``(time, packet)`` in elements, as the manual
    prints them (bases in elements of each side's address space).  The fused sequencer is in bytes: the
    loops in ``spatial`` are spread over DMA engines (each engine's base moves by their strides), the loops in
    ``commands`` are run as separate commands by each engine, and ``loops`` is one command's sequencer, its
    last loop the packet (``stride0`` bytes, strides ``(1, 1)``).  ``base`` is the pair of byte bases.
    """

    hw: HardwareProfile
    call: str
    dtype: type[dt.Scalar]
    src: Side
    dst: Side
    time: Mapping
    packet: Mapping
    read: SequencerConfig
    write: SequencerConfig
    spatial: tuple[DmaLoop, ...]
    commands: tuple[DmaLoop, ...]
    loops: tuple[DmaLoop, ...]
    base: tuple[int, int]
    explicit: bool

    @property
    def stride0(self) -> int:
        """Bytes per packet (L2511, L2590)."""
        return self.loops[-1].size

    @property
    def engines(self) -> int:
        """DMA engines working in parallel."""
        return math.prod(lp.size for lp in self.spatial)

    @property
    def command_count(self) -> int:
        """Commands each engine runs in sequence (each pays the startup)."""
        return math.prod(lp.size for lp in self.commands)

    @property
    def packets(self) -> int:
        """Packets of one command."""
        return math.prod(lp.size for lp in self.loops[:-1])

    @property
    def nbytes(self) -> int:
        """Bytes moved in all."""
        return self.engines * self.command_count * self.packets * self.stride0

    def all_loops(self) -> tuple[DmaLoop, ...]:
        """Every loop, outermost first: engines, commands, then one command's sequencer."""
        return self.spatial + self.commands + self.loops

    @classmethod
    def from_loops(cls, hw: HardwareProfile, dtype: type[dt.Scalar], media: tuple[str, str],
                   loops: Sequence[tuple[int, int, int]], base: tuple[int, int] = (0, 0), *,
                   spatial: Sequence[tuple[int, int, int]] = (), commands: Sequence[tuple[int, int, int]] = (),
                   call: str = "dma") -> DmaPlan:
        """A plan given directly as the manual writes a ``DmaSequencer`` (byte loops, last the packet, and
        bases in the DMA address spaces), for costing the manual's own configurations; no rules are checked."""
        def mk(seq: Sequence[tuple[int, int, int]]) -> tuple[DmaLoop, ...]:
            return tuple(DmaLoop(n, a, b) for n, a, b in seq)

        body = mk(loops)
        bits = dtype.size_bits
        read = SequencerConfig(tuple(Entry(lp.size, lp.src * 8 // bits) for lp in body), 1, base[0] * 8 // bits)
        write = SequencerConfig(tuple(Entry(lp.size, lp.dst * 8 // bits) for lp in body), 1, base[1] * 8 // bits)
        return cls(hw, call, dtype, Side(media[0], ()), Side(media[1], ()), IDENTITY, IDENTITY, read, write,
                   mk(spatial), mk(commands), body, base, True)

    def __str__(self) -> str:
        head = ""
        if self.spatial:
            head += f"engines {_text(self.spatial)} "
        if self.commands:
            head += f"commands {_text(self.commands)} "
        return f"{head}{_text(self.loops)} @ ({self.base[0]}, {self.base[1]}), stride0 {self.stride0}"


@dataclass(frozen=True)
class DmaCost:
    """What a DMA costs (manual L2465–2504, L2809–2847): ``total`` cycles and the parts that bound it.

    ``channels`` holds the busy cycles of every HBM channel it uses (``(chip · channels + channel, cycles)``):
    the schedule reserves them, so that DMAs running at once share the channels (L2602, L2980).  ``why`` names
    each rule of the manual that made this layout slower than its bytes at full bandwidth (docs/cost-model.md,
    "Layout rules")."""

    total: int
    startup: int
    issue: int
    dm: int
    hbm: int
    pcie: int
    engines: int
    commands: int
    packets: int
    nbytes: int
    channels: tuple[tuple[int, float], ...] = ()
    why: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = (f"{self.total} cycles = startup {self.startup} + max(requests {self.issue}, DM {self.dm}, "
                f"HBM {self.hbm}, PCIe {self.pcie}) over {self.engines} engine(s) × {self.commands} command(s)")
        return text + (f"; slower by: {'; '.join(self.why)}" if self.why else "")

