"""The shape of a hardware profile: one frozen data table per chip, nested per engine and memory.

Seeds 001 and 004 describe a compiler that builds every chip of a product line from one per-chip data table
plus capability gates; this module is that table for the Tensor Contraction Processor (manual "Hello, TCP!"
L125–140, "Memory Performance" L2848–3009, and each engine chapter).  The values live in
:mod:`visa.hw.rngd`; this module only declares the fields.

Every field carries ``metadata["lines"]``: the manual lines (``Lnnnn`` in
``shared/seeds/002_bc6a636c23286756.txt``) that state the value.  Fields that hold bit positions (which may be
0) carry ``metadata["bit_positions"] = True``, fields keyed by hardware codes ``metadata["codes"] = True``;
every other number in a profile is positive.  Collections are
tuples, frozensets or :class:`FrozenMap`, so a whole profile is immutable and hashable and can key a cache.

Dtypes are named by the manual's strings (:data:`DTYPE_NAMES`) so that this package imports nothing else from
``visa``: it is the bottom layer (design ARCHITECTURE.md, "Layers").

>>> from visa.hw import RNGD, RNGD_S
>>> RNGD.dm.slice_bytes, RNGD.vector.alu_pools["Fp"][0], RNGD.cite("dm.rows_per_bank")
(524288, 'FpFma', 'L2870')
>>> RNGD.supports_fetch_cast("i4", "i9"), RNGD_S.supports_fetch_cast("i4", "i9")
(False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = [
    "DTYPE_NAMES",
    "BitField",
    "CastEngine",
    "Clocks",
    "CollectEngine",
    "CommitEngine",
    "ContractionEngine",
    "DataMemory",
    "DmaEngine",
    "FetchEngine",
    "FrozenMap",
    "HardwareProfile",
    "Hbm",
    "Scheduling",
    "Scratchpad",
    "SequencerLimits",
    "SwitchEngine",
    "TensorRegisterFile",
    "Timing",
    "TransposeEngine",
    "UnknownProfileError",
    "VectorEngine",
    "VectorRegisterFile",
    "src",
]

#: The scalar types the manual names (fetch casts L1962–1979, Cast Engine L6774–6779, DMA dtypes L2525,
#: contraction inputs L3782 and L4383).  Cast tables and dtype sets in a profile use exactly these strings.
DTYPE_NAMES: tuple[str, ...] = (
    "i4", "i5", "i8", "i9", "i16", "i32", "bf16", "f16", "f32", "f8e4m3", "f8e5m2",
    "f4e2m1",  # not in the manual: the reference's fp4 (furiosa-opt v0.6–v0.8; design API.md §8)
)  # fmt: skip

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """An immutable, hashable mapping (a ``dict`` that cannot change after construction).

    ``types.MappingProxyType`` is read-only but not hashable, which would make every profile unhashable; this
    class is both.  Equality is mapping equality, so ``FrozenMap({"a": 1}) == {"a": 1}``.

    >>> m = FrozenMap({"Fp": 5, "Clip": 3})
    >>> m["Fp"], len(m), hash(m) == hash(FrozenMap({"Clip": 3, "Fp": 5}))
    (5, 2, True)
    >>> m["Fp"] = 6
    Traceback (most recent call last):
    ...
    TypeError: 'FrozenMap' object does not support item assignment
    """

    __slots__ = ("_data", "_hash")
    _data: dict[K, V]
    _hash: int | None

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        data: dict[K, V] = dict(items.items()) if isinstance(items, Mapping) else dict(items)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._data.items())))
        assert self._hash is not None
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"'FrozenMap' object is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"'FrozenMap' object is immutable (cannot delete {name!r})")

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._data,))


def src(lines: str, *, bit_positions: bool = False, codes: bool = False, fitted: str = "") -> dict[str, object]:
    """Field metadata: the manual lines that state a value, whether it holds bit positions or hardware codes
    (such as the TRF ``reg_types`` 0–3), the only numbers in a profile that may be 0, and — for a value the manual
    does not state — the published figures it was ``fitted`` to (docs/cost-model.md, "Calibration")."""
    return {"lines": lines, "bit_positions": bit_positions, "codes": codes, "fitted": fitted}


class UnknownProfileError(LookupError):
    """:func:`visa.hw.profile` was given a name that is not a known hardware profile."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown hardware profile"


# ------------------------------------------------------------------------------------------------ clocks


@dataclass(frozen=True, kw_only=True)
class Clocks:
    """Clock frequencies the manual uses to convert between cycles and time (Memory Performance, L2596–2636,
    L2980, L2987–3009).  Engine cycles are core cycles; 256 B/cycle is 256 GB/s (L2636), hence 1 GHz."""

    core_hz: int = field(metadata=src("L2623, L2636, L2744"))
    hbm_controller_hz: int = field(metadata=src("L2980, L3009"))
    hbm_bursts_per_cycle: int = field(metadata=src("L3009"))
    dram_timing_hz: int = field(metadata=src("L2987, L2997"))


# ------------------------------------------------------------------------------------------------ memories


@dataclass(frozen=True, kw_only=True)
class BitField:
    """One row of an address bit map: which address bits hold a component (and what else they feed; manual
    L2877–2879, L2962–2972)."""

    component: str = field(metadata=src("L2877–2879, L2962–2972"))
    bits: tuple[int, ...] = field(metadata=src("L2877–2879, L2962–2972", bit_positions=True))
    also: str = field(default="", metadata=src("L2962–2974"))


@dataclass(frozen=True, kw_only=True)
class Hbm:
    """High-Bandwidth Memory per chip (manual "High-Bandwidth Memory (HBM)", L2948–3009; L137)."""

    stacks: int = field(metadata=src("L2952"))
    channels_per_stack: int = field(metadata=src("L2953"))
    slices_per_channel: int = field(metadata=src("L2954"))
    bank_groups_per_slice: int = field(metadata=src("L2955"))
    banks_per_bank_group: int = field(metadata=src("L2956"))
    rows_per_bank: int = field(metadata=src("L2957"))
    bytes_per_row: int = field(metadata=src("L2958"))
    chip_bytes: int = field(metadata=src("L137, L2949, L2976"))
    address_bits: int = field(metadata=src("L2960–2972"))
    address_map: tuple[BitField, ...] = field(metadata=src("L2960–2972"))
    stack_bits: tuple[int, ...] = field(metadata=src("L2964, L2988", bit_positions=True))
    channel_bits: tuple[int, ...] = field(metadata=src("L2965", bit_positions=True))
    channel_xor_bits: tuple[int, ...] = field(metadata=src("L2977", bit_positions=True))
    bytes_per_s: int = field(metadata=src("L137, L2602, L2980"))
    read_bytes_per_s: int = field(metadata=src("L2602, L2636"))
    write_bytes_per_s: int = field(metadata=src("L2602"))
    channel_bytes_per_cycle: int = field(metadata=src("L2980"))
    channel_bytes_per_s: int = field(metadata=src("L2819, L2980"))
    access_unit_bytes: int = field(metadata=src("L2980, L2983"))
    access_unit_channel_cycles: int = field(metadata=src("L2623, L2980"))
    channel_command_queue_entries: int = field(metadata=src("L2981"))
    unaligned_read_penalty: int = field(metadata=src("L2859, L2984"))
    unaligned_write_penalty: int = field(metadata=src("L2859, L2985"))
    bank_conflict_penalty: tuple[int, int] = field(metadata=src("L2860, L2987"))
    row_switch_ns: tuple[int, int] = field(metadata=src("L2987"))
    row_switch_cycles: tuple[int, int] = field(metadata=src("L2987"))
    tccd_cycles: FrozenMap[str, int] = field(metadata=src("L2997–3001"))

    @property
    def channels(self) -> int:
        """Channels per chip: 2 stacks × 16 = 32 (L2861, L2980)."""
        return self.stacks * self.channels_per_stack

    @property
    def geometry_bytes(self) -> int:
        """The product of the geometry table (L2952–2958); equals :attr:`chip_bytes` (48 GB)."""
        per_slice = self.bank_groups_per_slice * self.banks_per_bank_group * self.rows_per_bank
        return (
            self.stacks * self.channels_per_stack * self.slices_per_channel * per_slice * self.bytes_per_row
        )


@dataclass(frozen=True, kw_only=True)
class DataMemory:
    """Data Memory (DM), the on-chip SRAM: geometry, slice address bits, bandwidth and the bank-starvation
    rule (manual "Data Memory (DM)", L2862–2941; "Size Constraint", L1074–1093; L138)."""

    clusters_per_chip: int = field(metadata=src("L130, L1075, L1080, L2866"))
    dmns_per_cluster: int = field(metadata=src("L2867, L2872, L2831"))
    slices_per_dmn: int = field(metadata=src("L2868, L2872, L2895"))
    slices_per_cluster: int = field(metadata=src("L131, L1081, L2872"))
    banks_per_slice: int = field(metadata=src("L2869, L2874"))
    rows_per_bank: int = field(metadata=src("L2870"))
    bytes_per_bank_row: int = field(metadata=src("L2871, L2874"))
    slice_bytes: int = field(metadata=src("L138, L1075, L1088, L2874"))
    chip_bytes: int = field(metadata=src("L138, L1075, L2863"))
    byte_bits: tuple[int, ...] = field(metadata=src("L2877", bit_positions=True))
    bank_bits: tuple[int, ...] = field(metadata=src("L2878", bit_positions=True))
    row_bits: tuple[int, ...] = field(metadata=src("L2879", bit_positions=True))
    slice_address_space_bytes: int = field(metadata=src("L2541"))
    slice_bytes_per_cycle: int = field(metadata=src("L2874, L2933"))
    dmn_bytes_per_cycle: int = field(metadata=src("L2344, L2603, L2884, L2933"))
    interleaved_bytes_per_cycle: int = field(metadata=src("L2133, L2603, L2815, L3788"))
    slice_command_queue_entries: int = field(metadata=src("L2895, L2935"))
    dma_request_banks: int = field(metadata=src("L2908, L2929"))
    bank_starvation_limit: int = field(metadata=src("L2137, L2352, L2842, L2856, L2898, L2939"))
    noc_timeout_cycles: int = field(metadata=src("L2841, L2905, L2938–2940"))

    @property
    def dmns_per_chip(self) -> int:
        """DMNs per chip: 2 clusters × 8 = 16 (L2866–2867)."""
        return self.clusters_per_chip * self.dmns_per_cluster

    @property
    def slices_per_chip(self) -> int:
        """Slices per chip: 2 clusters × 256 = 512 (L130–131)."""
        return self.clusters_per_chip * self.slices_per_cluster

    def bank_of(self, address: int) -> int:
        """The bank an in-slice byte address falls in: bits 3–6 (L2878), i.e. ``(address >> 3) & 0xF``."""
        return (address >> self.bank_bits[0]) & ((1 << len(self.bank_bits)) - 1)

    def starves_dma(self, consecutive_same_bank_accesses: int) -> bool:
        """Whether a run of consecutive same-bank accesses breaks the bank-starvation rule while DMA is
        active.

        The limit is 64 and a run of 64 or more is a violation (the derivation at L2938–2939 gives "< 64";
        see docs/manual-notes.md, "hardware profile").  Counts are cumulative over concurrent commands
        (L2913).

        >>> from visa.hw import RNGD
        >>> RNGD.dm.starves_dma(30 + 20 + 1), RNGD.dm.starves_dma(64)
        (False, True)
        """
        return consecutive_same_bank_accesses >= self.bank_starvation_limit


@dataclass(frozen=True, kw_only=True)
class Scratchpad:
    """Scratchpad Memory (SPM), one per DMN (manual "Scratchpad Memory (SPM)", L2942–2947; a work in progress
    there: capacity, addressing and banks are not given, L2943; the capacity per PE is the reference's)."""

    dmn_bytes_per_cycle: int = field(metadata=src("L2945, L2947 (not L2604/L2824; see manual-notes)"))
    same_chip_only: bool = field(metadata=src("L2825"))
    #: the reference's figure (furiosa-opt v0.8: "4 KiB per PE", its SpmTensor; design API.md §8), since the
    #: manual leaves the capacity pending (L2943); docs/manual-notes.md "issue 26"
    pe_bytes: int = field(metadata=src("L2943 (pending there); 4 KiB per PE from furiosa-opt v0.8"))
    #: slices of one PE: the unit an SPM tensor's PE level counts (RNGD: 64 slices per PE, 4 PEs a cluster)
    slices_per_pe: int = field(metadata=src("L2343"))


@dataclass(frozen=True, kw_only=True)
class SequencerLimits:
    """Limits of a nested-loop sequencer (manual "Sequencer", "Configuration Failures", L1628–1637; shared by
    fetch L1749–1762, commit L2321 and L2338, and DMA L2423; the TRF sequencer, L4169–4175)."""

    max_entries: int = field(metadata=src("L1568, L1630, L4173, L7699"))
    max_entry_size: int = field(metadata=src("L1632, L4174 (not '< 65536' at L7699; see manual-notes)"))
    packet_sizes_bytes: tuple[int, ...] = field(metadata=src("L1632, L2118, L4104"))
    stride_bits: int = field(metadata=src("L4175"))


@dataclass(frozen=True, kw_only=True)
class TensorRegisterFile:
    """The Tensor Register File that holds Contraction Engine weights (manual "TRF Memory Layout",
    L4114–4158; "TRF Cache", L4177–4196; capacities L139 and L1089)."""

    rows: int = field(metadata=src("L132, L139, L1089, L4116, L4131"))
    valid_row_counts: tuple[int, ...] = field(metadata=src("L4160–4168, L4529"))
    row_bytes: int = field(metadata=src("L139, L1089 (not grown when rows < 8, L4148; see manual-notes)"))
    half_row_bytes: int = field(metadata=src("L4151–4154"))
    slice_bytes: int = field(metadata=src("L139"))
    bank_cols: int = field(metadata=src("L4116, L4131"))
    bank_lines_full: int = field(metadata=src("L4118, L4138"))
    bank_lines_half: int = field(metadata=src("L4118, L4138"))
    bank_line_bytes: int = field(metadata=src("L4118"))
    slot_bits: int = field(metadata=src("L4118, L4140"))
    slots_per_line: int = field(metadata=src("L4140"))
    address_field_bits: FrozenMap[str, int] = field(metadata=src("L4130–4140"))
    reg_type_names: FrozenMap[int, str] = field(metadata=src("L4142–4147", codes=True))
    reg_type_slots: FrozenMap[int, int] = field(metadata=src("L4142–4147", codes=True))
    reg_type_elements_per_line: FrozenMap[int, int] = field(metadata=src("L4142–4147", codes=True))
    #: The mixed operand pairs (stream type, TRF type) the Reducer multiplies and the TRF slot format they read
    #: the narrower weights with: i4 weights against an i8 stream (reg_type 1, 10-bit "i4→i8"), i8 weights against
    #: an f8 stream (reg_type 2, 10-bit "i8→f8"); issue 27 item 3.
    mixed_operands: FrozenMap[tuple[str, str], int] = field(metadata=src("L4142–4147", codes=True))
    address_modes: tuple[str, ...] = field(metadata=src("L4149–4157"))
    reg_read_sizes: tuple[int, ...] = field(metadata=src("L4104"))
    wide_read_alignment_bytes: int = field(metadata=src("L4110–4111"))
    sequencer: SequencerLimits = field(metadata=src("L4169–4175"))
    cache_entries_per_row: int = field(metadata=src("L4186"))
    cache_entry_bytes: int = field(metadata=src("L4187"))
    cache_bytes: int = field(metadata=src("L4189"))

    def mode_bytes(self, mode: str) -> int:
        """Per-Row capacity of a TRF address mode: Full = 8 KB, FirstHalf/SecondHalf = 4 KB (L4151–4154)."""
        if mode not in self.address_modes:
            raise ValueError(f"unknown TRF address mode {mode!r}; expected one of {self.address_modes}")
        return self.row_bytes if mode == "Full" else self.half_row_bytes


@dataclass(frozen=True, kw_only=True)
class VectorRegisterFile:
    """The Vector Register File that holds Vector Engine operands (L140, L1090, L7916–7917)."""

    slice_bytes: int = field(metadata=src("L140, L1090, L7916"))
    cluster_bytes: int = field(metadata=src("L7917"))


# ------------------------------------------------------------------------------------------------ engines


@dataclass(frozen=True, kw_only=True)
class FetchEngine:
    """Fetch Engine: sequencer sizes, adapter stages, casts and masking limits (manual "Fetch Engine",
    L1689–2144).  The cast table is the RNGD one (L1962–1972) or RNGD-S's superset (L1973–1979)."""

    main_fetch_sizes: tuple[int, ...] = field(metadata=src("L1757–1758, L1760"))
    sub_fetch_sizes: tuple[int, ...] = field(metadata=src("L1758–1759, L2018–2020"))
    sub_fetch_size_default: int = field(metadata=src("L1759, L2020"))
    sub_fetch_size_by_cast: FrozenMap[tuple[str, str], int] = field(metadata=src("L1759, L2019"))
    align_bytes: int = field(metadata=src("L1713–1715, L1723, L2114, L3037"))
    address_align_bytes: int = field(metadata=src("L1756"))
    #: a lifted fetch's per-unit base (design API.md §8): "8-byte alignment is required for certain" operations
    #: (L1756); the reference requires it of a lift's base step (furiosa-opt v0.7, docs/manual-notes.md "issue 26")
    lift_base_align_bytes: int = field(metadata=src("L1756 (8 bytes for a lifted base, furiosa-opt v0.7)"))
    cast_output_max_bytes: int = field(metadata=src("L1996–2017"))
    casts: frozenset[tuple[str, str]] = field(metadata=src("L1962–1972 (RNGD), L1973–1979 (RNGD-S)"))
    cast_latency_cycles: tuple[int, int] = field(metadata=src("L2135"))
    main_adapter_stages: tuple[str, ...] = field(metadata=src("L1693–1694, L1870"))
    sub_adapter_stages: tuple[str, ...] = field(metadata=src("L1870"))
    max_interleaved: int = field(metadata=src("L1850 (not the 4 inputs of L7312; see manual-notes)"))
    zero_point_dtype: str = field(metadata=src("L2032, L2046"))
    mask_right_count_max: FrozenMap[int, int] = field(metadata=src("L1902, L1924 (8/16-bit derived)"))
    mask_packet_max_bytes: int = field(metadata=src("L1902 (128, not the stated 256; see manual-notes)"))
    mask_case3_counts: int = field(metadata=src("L1925–1926"))


@dataclass(frozen=True, kw_only=True)
class SwitchEngine:
    """Switch Engine: the slice ring and its routers (manual "Switch Engine", L3054–3542; L2125–2127)."""

    ring_slices: int = field(metadata=src("L3057, L3487, L3501–3502"))
    engines: int = field(metadata=src("L2125"))
    width_bytes: int = field(metadata=src("L2125, L3527"))
    dual_channel_width_bytes: int = field(metadata=src("L2127, L2140, L3052"))
    router_buffer_packets: int = field(metadata=src("L3489"))
    #: consecutive flits an InterTranspose may send to one router before it delivers (its blocking flits:
    #: ``slice1 × time0 × flits per packet``).  The manual's routers hold "essentially one packet" (L3489); the
    #: reference refuses 18 (furiosa-opt v0.9 fixtures) without publishing its bound: visa takes 16, the largest
    #: power of two below (docs/manual-notes.md "issue 26")
    intertranspose_blocking_flits: int = field(metadata=src("L3489 (16: below the reference's refused 18)"))
    forwarding_ring_size: int = field(metadata=src("L3138"))
    max_ring_size: int = field(metadata=src("L3364"))
    topologies: tuple[str, ...] = field(metadata=src("L3058"))


@dataclass(frozen=True, kw_only=True)
class CollectEngine:
    """Collect Engine: normalises packets to flits (manual "Collect Engine", L3543–3669; L2121–2127)."""

    flit_bytes: int = field(metadata=src("L2122, L3011, L3544, L3561"))
    dual_channel_flit_bytes: int = field(metadata=src("L1997, L2127"))
    pads_with_zeros: bool = field(metadata=src("L2122–2123"))


@dataclass(frozen=True, kw_only=True)
class ContractionEngine:
    """Contraction Engine: Stream Adapter, the Reducer's trees and accumulator (manual "Contraction Engine",
    L3670–4548).  The TRF and its sequencer limits are in :class:`TensorRegisterFile`."""

    rows: int = field(metadata=src("L132, L3780, L4378, L4528"))
    valid_row_counts: tuple[int, ...] = field(metadata=src("L3780, L3953, L4529"))
    mac_width_bytes: int = field(metadata=src("L3921, L3952, L4099"))
    flit_buffer_bytes: int = field(metadata=src("L3928, L3951"))
    collect_flits: tuple[int, ...] = field(metadata=src("L3917–3920, L3950"))
    default_collect_flits: int = field(metadata=src("L3919"))
    default_feed_flits: int = field(metadata=src("L3754"))
    max_feed_flits: int = field(metadata=src("L3754–3755"))
    input_dtypes: frozenset[str] = field(metadata=src("L3782, L4390, L4533; i5/i9 from L4383"))
    output_dtypes: FrozenMap[str, str] = field(metadata=src("L3782, L4391, L4533"))
    max_tree_depth: FrozenMap[str, int] = field(metadata=src("L4388, L4531, L4543; i5/i9 from L4383"))
    datapath_bits: tuple[int, int] = field(metadata=src("L4383"))
    resize_columns: int = field(metadata=src("L4397"))
    depth0_max_outputs: int = field(metadata=src("L4532 (invalid, not truncated; see manual-notes)"))
    accumulator_slots: int = field(metadata=src("L4409, L4534"))
    accumulator_rows: int = field(metadata=src("L4409"))
    accumulator_columns: int = field(metadata=src("L4409"))
    accumulator_registers_per_column: int = field(metadata=src("L4409"))
    accumulation_kinds: tuple[str, ...] = field(metadata=src("L4433–4434"))
    interleaved_inner_max: int = field(metadata=src("L4434, L4536"))
    sequential_inner_max: int = field(metadata=src("L4434, L4538"))
    output_bus_elements: int = field(metadata=src("L4436, L4484"))
    reduce_max_rows: int = field(metadata=src("L4395, L4533"))
    reduce_max_throughput_divisor: int = field(metadata=src("L4533, L4546"))

    def reduced_elements(self, dtype: str) -> int:
        """Elements a Row's tree reduces at its maximum depth: 2**depth (L4388: i4 128, i8/f8 64, bf16 32)."""
        return 1 << self.max_tree_depth[dtype]

    def macs_per_slice_cycle(self, dtype: str) -> int:
        """Multiply-accumulates one slice's Contraction Engine performs per cycle at full rate: every Row
        multiplies a 64-byte operand pair at depth 0 (L4378–4388), i.e. ``rows × 2**depth`` (i8: 8 × 64 = 512).
        A dtype without a tree depth (not a contraction input) counts as the widest, i4."""
        depth = self.max_tree_depth.get(dtype, max(self.max_tree_depth.values()))
        return self.rows * (1 << depth)


@dataclass(frozen=True, kw_only=True)
class VectorEngine:
    """Vector Engine: lanes, stage table, ALU pools, reducers, VCG (manual "Vector Engine", L4549–6755)."""

    input_dtypes: frozenset[str] = field(metadata=src("L3040, L4551, L5254"))
    way8_lanes: int = field(metadata=src("L4551, L4731, L5272"))
    way4_lanes: int = field(metadata=src("L4731, L5273"))
    stages: tuple[str, ...] = field(metadata=src("L4733–4747"))
    stage_lanes: FrozenMap[str, int] = field(metadata=src("L4733–4747"))
    stage_dtypes: FrozenMap[str, frozenset[str]] = field(metadata=src("L4733–4747"))
    alu_pools: FrozenMap[str, tuple[str, ...]] = field(metadata=src("L4736–4745, L4805, L4823, L4877, L4955"))
    alu_latency_cycles: int = field(metadata=src("L5275–5277"))
    reduce_units: int = field(metadata=src("L4908, L5383–5388"))
    divide_units: int = field(metadata=src("L4915"))
    execution_id_bits: int = field(metadata=src("L4795, L5255"))
    branch_modes: tuple[str, ...] = field(metadata=src("L4796–4802"))
    branch_comparators: int = field(metadata=src("L4801"))
    stash_slots: int = field(metadata=src("L4983–4984, L5258"))
    branch_operands_max: int = field(metadata=src("L5061–5062 (5: the reference crate's MAX_BRANCHES)"))
    intra_reduce_tree_width: int = field(metadata=src("L5386"))
    intra_reduce_tree_depth: int = field(metadata=src("L5387"))
    intra_reduce_slots: int = field(metadata=src("L5381, L5388"))
    #: one unzip group waits in the VE register-file cache while the other streams in (the reference's bound,
    #: furiosa-opt v0.7: 1 KiB, 256 32-bit lanes; the manual's unzip, L5154–5249, gives no size)
    unzip_cache_bytes: int = field(metadata=src("L5154–5249 (size from furiosa-opt v0.7)"))
    intra_reduce_ops: FrozenMap[str, frozenset[str]] = field(metadata=src("L5390–5401"))
    inter_reduce_ops: FrozenMap[str, frozenset[str]] = field(metadata=src("L6611–6625"))
    inter_slice_cycles_per_slice: int = field(metadata=src("L4375, L6738–6749"))
    vcg_counters: int = field(metadata=src("L6213"))
    vcg_packet_dims: int = field(metadata=src("L6552"))
    vcg_gate_dims: int = field(metadata=src("L6553"))
    vcg_max_valid_count: int = field(metadata=src("L6176–6177"))

    def alu_pool_of(self, alu: str) -> str:
        """The stage pool an ALU belongs to, e.g. ``"FxpAdd"`` → ``"Fxp"`` (L4736–4745)."""
        for pool, alus in self.alu_pools.items():
            if alu in alus:
                return pool
        raise KeyError(alu)


@dataclass(frozen=True, kw_only=True)
class CastEngine:
    """Cast Engine: precision lowering of one 32-byte flit (manual "Cast Engine", L6756–6819)."""

    casts: frozenset[tuple[str, str]] = field(metadata=src("L6774–6779"))
    packet_bytes: int = field(metadata=src("L6781–6784"))
    flits_per_cycle: int = field(metadata=src("L6819"))


@dataclass(frozen=True, kw_only=True)
class TransposeEngine:
    """Transpose Engine: per-width buffer parameters, keyed by element bit width 4/8/16/32
    (manual "Transpose Engine", L6820–7041)."""

    elements_per_packet: FrozenMap[int, int] = field(metadata=src("L6860–6863, L6880–6883"))
    output_alignment: FrozenMap[int, int] = field(metadata=src("L6880–6883"))
    max_in_rows: FrozenMap[int, int] = field(metadata=src("L6880–6883"))
    valid_in_cols: FrozenMap[int, tuple[int, ...]] = field(metadata=src("L6880–6883"))
    buffers: int = field(metadata=src("L6859"))
    buffer_cols: int = field(metadata=src("L6859, L6887–6895"))
    packet_bytes: int = field(metadata=src("L6885"))
    input_sources: tuple[str, ...] = field(metadata=src("L6872–6875"))


@dataclass(frozen=True, kw_only=True)
class CommitEngine:
    """Commit Engine: truncation sizes, commit sizes per context, stride rule, slice bitmap
    (manual "Commit Engine", L2145–2354)."""

    in_packet_bytes: int = field(metadata=src("L2192, L2328"))
    commit_in_sizes: tuple[int, ...] = field(metadata=src("L2193, L2330"))
    main_commit_sizes: tuple[int, ...] = field(metadata=src("L2247, L2330"))
    sub_commit_sizes: tuple[int, ...] = field(metadata=src("L2248, L2330"))
    stride_granularity_bytes: int = field(metadata=src("L2338, L7699"))
    slice_bitmap_bits: int = field(metadata=src("L2316 (a bit per slice of a cluster; see manual-notes)"))
    main_adapter_stages: tuple[str, ...] = field(metadata=src("L2332–2336"))
    sub_adapter_stages: tuple[str, ...] = field(metadata=src("L2322–2326, L2332–2336"))
    generate_value_bits: int = field(metadata=src("L2326"))
    sub_follows_fetch_only: bool = field(metadata=src("L2337"))


@dataclass(frozen=True, kw_only=True)
class DmaEngine:
    """DMA Engine: engines, bandwidth, packet and request sizes, alignment per medium, startup, PCIe
    (manual "DMA Engine", L2355–2847)."""

    engines_per_chip: int = field(metadata=src("L2404, L2546, L2831 (one per pair of DMNs)"))
    dmns_per_engine: int = field(metadata=src("L2404, L2831"))
    bytes_per_cycle: int = field(metadata=src("L2596, L2636"))
    max_packet_bytes: int = field(metadata=src("L2428–2429, L2512, L2838"))
    request_bytes: int = field(metadata=src("L2469, L2982"))
    startup_cycles: int = field(metadata=src("L2467, L2566, L2827"))
    media: tuple[str, ...] = field(metadata=src("L2356, L2387, L2513"))
    read_address_align: FrozenMap[str, int] = field(metadata=src("L2426 (SPM as SRAM; see manual-notes)"))
    write_address_align: FrozenMap[str, int] = field(metadata=src("L2423–2426 (SPM as SRAM)"))
    packet_align: FrozenMap[str, int] = field(metadata=src("L2426, L2837 (SPM as SRAM)"))
    hbm_to_dm_align: int = field(metadata=src("L2426–2427, L2837"))
    pcie_bytes_per_cycle: int = field(metadata=src("L2389, L2605, L2845"))
    dtypes: frozenset[str] = field(metadata=src("L2525; f4e2m1 from furiosa-opt v0.8 (4-bit packed, as i4)"))
    handles: tuple[str, ...] = field(metadata=src("L44–47"))

    def requests(self, packet_bytes: int) -> int:
        """Internal 256-byte requests for one packet: ``ceil(n / 256)`` (L2469: 4095 bytes → 16)."""
        return -(-packet_bytes // self.request_bytes)


@dataclass(frozen=True, kw_only=True)
class Scheduling:
    """Execution contexts, schedulable resources, the Tensor Unit pipeline and DM arbitration
    (manual "Execution Contexts" L150–155 and L3046–3052, "Scheduling" L7042–7070, L2899–2904)."""

    contexts: tuple[str, ...] = field(metadata=src("L150–155, L3046–3052"))
    resources: tuple[str, ...] = field(metadata=src("L7057–7063"))
    main_ops_at_once: int = field(metadata=src("L7064"))
    pipeline: tuple[str, ...] = field(metadata=src("L131, L3016"))
    dm_priority: tuple[str, ...] = field(metadata=src("L2899–2904"))


@dataclass(frozen=True, kw_only=True)
class Timing:
    """What a command costs besides its engines' throughput: the per-command overheads of the Tensor Unit and the
    hand-off between contexts (design ARCHITECTURE.md principle 8; docs/cost-model.md).

    The manual states the DMA's ~500-cycle startup (``dma.startup_cycles``, L2467) and each engine's latency (tree
    depth L4543, type conversion L2135, one cycle per ALU L5275, …), but no Tensor Unit command overhead: it says
    only that a load through the full pipeline "has higher setup overhead" than the StoTRF/StoVRF short command
    that a completely contiguous load becomes (L4112–4114).  These fields are therefore fitted to the one set of
    makespans the reference publishes for a kernel written three ways (furiosa-opt, "Scheduling › Tuning ›
    Double buffering": 19,106 / 15,477 / 15,086 cycles); the fit is recorded in docs/manual-notes.md (issue 22).
    """

    full_command_cycles: int = field(metadata=src(
        "L4112–4114 (not stated)", fitted="furiosa-opt double buffering: rolled 19,106 and unrolled 15,086 cycles"))
    short_command_cycles: int = field(metadata=src(
        "L4112–4114 (not stated)", fitted="furiosa-opt double buffering: rolled − unrolled = 4,020 cycles"))
    context_handoff_cycles: int = field(metadata=src(
        "L7066–7070 (not stated)", fitted="furiosa-opt double buffering: pipelined − unrolled = 391 cycles"))


# ------------------------------------------------------------------------------------------------ profile


@dataclass(frozen=True, kw_only=True)
class HardwareProfile:
    """One chip of the Tensor Contraction Processor line as data (design ARCHITECTURE.md, "Hardware as data").

    Every count, capacity, bandwidth, alignment, cast table and cycle constant the manual gives, grouped per
    memory and engine, each field with its manual lines (:meth:`cite`).  The number of chips a kernel uses is
    not here: ``@device(chip=N)`` sets it (manual L1078–1084), bounded by :attr:`max_chips`.

    Capability gates (:meth:`supports_fetch_cast`, :meth:`supports_cast`) answer yes or no; the ``*_refusal``
    methods give the message an engine raises, naming the profile.
    """

    name: str = field(metadata=src("L127, L135, L1962, L1973"))
    max_chips: int = field(metadata=src("L129, L1075 (system-dependent; see manual-notes)"))
    clocks: Clocks = field(metadata=src("L2623, L2980, L2997"))
    hbm: Hbm = field(metadata=src("L2948–3009"))
    dm: DataMemory = field(metadata=src("L2862–2941"))
    spm: Scratchpad = field(metadata=src("L2942–2947"))
    trf: TensorRegisterFile = field(metadata=src("L4114–4196"))
    vrf: VectorRegisterFile = field(metadata=src("L140, L1090"))
    sequencer: SequencerLimits = field(metadata=src("L1628–1637"))
    fetch: FetchEngine = field(metadata=src("L1689–2144"))
    switch: SwitchEngine = field(metadata=src("L3054–3542"))
    collect: CollectEngine = field(metadata=src("L3543–3669"))
    contraction: ContractionEngine = field(metadata=src("L3670–4548"))
    vector: VectorEngine = field(metadata=src("L4549–6755"))
    cast: CastEngine = field(metadata=src("L6756–6819"))
    transpose: TransposeEngine = field(metadata=src("L6820–7041"))
    commit: CommitEngine = field(metadata=src("L2145–2354"))
    dma: DmaEngine = field(metadata=src("L2355–2847"))
    scheduling: Scheduling = field(metadata=src("L7042–7070"))
    timing: Timing = field(metadata=src("L4112–4114, L7042–7070 (fitted; docs/cost-model.md)"))

    def __str__(self) -> str:
        return self.name

    # -------------------------------------------------------------------------------------- capability gates

    def fetch_cast_targets(self, src_dtype: str) -> frozenset[str]:
        """Dtypes the Fetch Adapter can cast ``src_dtype`` to on this profile (the identity not included)."""
        return frozenset(d for s, d in self.fetch.casts if s == src_dtype)

    def supports_fetch_cast(self, src_dtype: str, dst_dtype: str) -> bool:
        """Whether ``fetch`` may turn ``src_dtype`` into ``dst_dtype`` (L1962–1979); no cast is always
        allowed."""
        return src_dtype == dst_dtype or (src_dtype, dst_dtype) in self.fetch.casts

    def fetch_cast_refusal(self, src_dtype: str, dst_dtype: str) -> str | None:
        """``None`` when the fetch cast is supported, else the message an engine raises (naming the profile).

        >>> from visa.hw import RNGD
        >>> print(RNGD.fetch_cast_refusal("i4", "i9"))
        fetch cannot cast i4 to i9 on RNGD (RNGD casts i4 to i32, i5; manual L1962–1979); RNGD-S supports it
        """
        if self.supports_fetch_cast(src_dtype, dst_dtype):
            return None
        targets = ", ".join(sorted(self.fetch_cast_targets(src_dtype))) or "nothing"
        msg = (
            f"fetch cannot cast {src_dtype} to {dst_dtype} on {self.name} "
            f"({self.name} casts {src_dtype} to {targets}; manual L1962–1979)"
        )
        others = [
            p.name
            for p in _known_profiles()
            if p.name != self.name and p.supports_fetch_cast(src_dtype, dst_dtype)
        ]
        if others:
            msg += f"; {', '.join(others)} {'supports' if len(others) == 1 else 'support'} it"
        return msg

    def supports_cast(self, src_dtype: str, dst_dtype: str) -> bool:
        """Whether the Cast Engine lowers ``src_dtype`` to ``dst_dtype`` (L6774–6779)."""
        return (src_dtype, dst_dtype) in self.cast.casts

    def cast_refusal(self, src_dtype: str, dst_dtype: str) -> str | None:
        """``None`` when the Cast Engine supports the pair, else the refusal message naming the profile."""
        if self.supports_cast(src_dtype, dst_dtype):
            return None
        targets = ", ".join(sorted(d for s, d in self.cast.casts if s == src_dtype)) or "nothing"
        return (
            f"cast cannot lower {src_dtype} to {dst_dtype} on {self.name} "
            f"({self.name} lowers {src_dtype} to {targets}; manual L6774–6779)"
        )

    # -------------------------------------------------------------------------------------- introspection

    def cite(self, path: str) -> str:
        """The manual lines of a field given by dotted path: ``cite("dm.rows_per_bank") == "L2870"``."""
        return str(self._field(path).metadata.get("lines", ""))

    def fitted(self, path: str) -> str:
        """For a value the manual does not state, the published figures it was fitted to (else ``""``):
        ``fitted("timing.context_handoff_cycles")`` names the reference's makespans (docs/cost-model.md)."""
        return str(self._field(path).metadata.get("fitted", ""))

    def _field(self, path: str) -> dataclasses.Field[Any]:
        obj: object = self
        found: dataclasses.Field[Any] | None = None
        for part in path.split("."):
            if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
                raise KeyError(f"{path!r}: {part!r} is not inside a profile table")
            fields = {f.name: f for f in dataclasses.fields(obj)}
            if part not in fields:
                raise KeyError(f"{path!r}: no field {part!r} in {type(obj).__name__}")
            found = fields[part]
            obj = getattr(obj, part)
        assert found is not None
        return found

    def walk(self) -> Iterator[tuple[str, object]]:
        """Every leaf value with its dotted path (nested tables expanded; tuples, sets, maps are leaves)."""
        yield from _walk(self, "")

    def differences(self, other: HardwareProfile) -> dict[str, tuple[object, object]]:
        """Leaves whose values differ between two profiles: ``{path: (self_value, other_value)}``."""
        mine, theirs = dict(self.walk()), dict(other.walk())
        return {
            k: (mine.get(k), theirs.get(k))
            for k in sorted(mine.keys() | theirs.keys())
            if mine.get(k) != theirs.get(k)
        }


def _walk(obj: object, prefix: str) -> Iterator[tuple[str, object]]:
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            yield from _walk(value, path + ".")
        else:
            yield path, value


def _known_profiles() -> tuple[HardwareProfile, ...]:
    from visa.hw.rngd import PROFILES  # imported late: rngd builds its tables from this module

    return tuple(PROFILES.values())
