"""Tests of the hardware profiles (visa/hw): immutability, provenance, and the manual's own arithmetic.

Each test names the manual lines (``Lnnnn`` in shared/seeds/002_bc6a636c23286756.txt) it checks.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from visa.hw import (
    DTYPE_NAMES,
    PROFILES,
    RNGD,
    RNGD_S,
    FrozenMap,
    HardwareProfile,
    UnknownProfileError,
    profile,
)

HW_DIR = Path(__file__).resolve().parent.parent / "visa" / "hw"


def _tables(obj: object, path: str = "") -> Iterator[tuple[str, object]]:
    """Every dataclass (table) inside a profile, the profile itself included, with its dotted path."""
    yield path, obj
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        values = value if isinstance(value, tuple) else (value,)
        for i, v in enumerate(values):
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                suffix = f"[{i}]" if isinstance(value, tuple) else ""
                yield from _tables(v, f"{path}{f.name}{suffix}.")


def _numbers(value: object) -> Iterator[float]:
    """Every number inside a leaf value (tuples, sets and maps opened; booleans and strings skipped)."""
    if isinstance(value, bool) or isinstance(value, str):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, FrozenMap):
        for k, v in value.items():
            yield from _numbers(k)
            yield from _numbers(v)
    elif isinstance(value, tuple | frozenset):
        for v in value:
            yield from _numbers(v)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, FrozenMap):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, tuple | frozenset):
        for v in value:
            yield from _strings(v)


# ------------------------------------------------------------------------------------------------ data shape


@pytest.mark.parametrize("hw", [RNGD, RNGD_S], ids=lambda hw: hw.name)
def test_profile_is_immutable(hw: HardwareProfile) -> None:
    """A profile is one frozen table (design ARCHITECTURE.md "Hardware as data"): nothing can be assigned."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.dm.slice_bytes = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.hbm.address_map[0].bits = (1,)  # type: ignore[misc]
    with pytest.raises(TypeError):
        hw.vector.alu_pools["Fp"] = ()  # type: ignore[index]
    with pytest.raises(AttributeError):
        hw.vector.alu_pools._data = {}
    with pytest.raises(AttributeError):
        hw.fetch.casts.add(("i8", "i4"))  # type: ignore[attr-defined]
    # Every collection in every table is a tuple, frozenset or FrozenMap, never a list, set or dict.
    for path, leaf in hw.walk():
        assert not isinstance(leaf, list | set | dict), path


@pytest.mark.parametrize("hw", [RNGD, RNGD_S], ids=lambda hw: hw.name)
def test_profile_is_hashable_and_picklable(hw: HardwareProfile) -> None:
    """Profiles key caches of planned configurations (design ARCHITECTURE.md principle 4)."""
    assert hash(hw) == hash(dataclasses.replace(hw))
    cache = {hw: "plan"}
    assert cache[dataclasses.replace(hw)] == "plan"
    assert pickle.loads(pickle.dumps(hw)) == hw
    assert RNGD != RNGD_S and hash(RNGD) != hash(RNGD_S)


def test_every_field_cites_the_manual() -> None:
    """Each field carries metadata["lines"] naming manual lines."""
    for path, table in _tables(RNGD):
        for f in dataclasses.fields(table):  # type: ignore[arg-type]
            lines = f.metadata.get("lines")
            assert isinstance(lines, str) and lines.startswith("L"), f"{path}{f.name} has no manual lines"
    assert RNGD.cite("dm.rows_per_bank") == "L2870"
    assert RNGD.cite("vector.alu_pools").startswith("L4736")
    with pytest.raises(KeyError):
        RNGD.cite("dm.no_such_field")
    with pytest.raises(KeyError):
        RNGD.cite("dm.slice_bytes.deeper")


@pytest.mark.parametrize("hw", [RNGD, RNGD_S], ids=lambda hw: hw.name)
def test_every_number_is_positive(hw: HardwareProfile) -> None:
    """Counts, capacities, bandwidths, alignments and cycle constants are all > 0; only bit positions and
    hardware codes (TRF reg_types, L4142–4147) may be 0."""
    for path, table in _tables(hw):
        for f in dataclasses.fields(table):  # type: ignore[arg-type]
            floor = 0 if f.metadata.get("bit_positions") or f.metadata.get("codes") else 1
            for n in _numbers(getattr(table, f.name)):
                assert n >= floor, f"{path}{f.name} holds {n}"


@pytest.mark.parametrize("hw", [RNGD, RNGD_S], ids=lambda hw: hw.name)
def test_dtypes_are_the_manuals_names(hw: HardwareProfile) -> None:
    """Cast tables and dtype sets use the manual's dtype names only (L1962–1979, L2525, L3782, L6774–6779)."""
    for path, leaf in hw.walk():
        if path in {
            "fetch.casts",
            "cast.casts",
            "contraction.input_dtypes",
            "vector.input_dtypes",
            "dma.dtypes",
        }:
            assert set(_strings(leaf)) <= set(DTYPE_NAMES), path
    assert set(hw.contraction.output_dtypes) | set(hw.contraction.output_dtypes.values()) <= set(DTYPE_NAMES)
    assert set(hw.contraction.max_tree_depth) == hw.contraction.input_dtypes
    assert hw.fetch.zero_point_dtype in DTYPE_NAMES


def test_hw_imports_nothing_else_from_visa() -> None:
    """visa/hw is the bottom layer (design ARCHITECTURE.md "Layers"): it imports only visa.hw modules."""
    for source in sorted(HW_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name == "visa" or name.startswith("visa."):
                    assert name.startswith("visa.hw"), f"{source.name} imports {name}"


# ------------------------------------------------------------------------------------------------ memories


def test_dm_capacity_per_chip() -> None:
    """2 clusters × 256 slices × 512 KB = 256 MB per chip (L1075, L138, L2863)."""
    dm = RNGD.dm
    assert dm.clusters_per_chip * dm.slices_per_cluster * dm.slice_bytes == dm.chip_bytes == 256 * 2**20
    assert dm.slices_per_chip == 512


def test_dm_slice_geometry() -> None:
    """16 banks × 4096 rows × 8 B = 512 KB per slice (L2869–2874); 16 × 8 B = 128 B/cycle (L2874)."""
    dm = RNGD.dm
    assert dm.banks_per_slice * dm.rows_per_bank * dm.bytes_per_bank_row == dm.slice_bytes == 512 * 2**10
    assert dm.banks_per_slice * dm.bytes_per_bank_row == dm.slice_bytes_per_cycle == 128
    assert dm.slice_bytes <= dm.slice_address_space_bytes  # the 4 MB slice_stride (L2541)


def test_dm_dmn_geometry() -> None:
    """8 DMNs × 32 slices = 256 slices per cluster (L2867–2868, L2872); 16 DMNs per chip."""
    dm = RNGD.dm
    assert dm.dmns_per_cluster * dm.slices_per_dmn == dm.slices_per_cluster == 256
    assert dm.dmns_per_chip == 16


def test_dm_slice_address_bits() -> None:
    """Bits 0–2 byte, 3–6 bank, 7–18 row (L2877–2879): contiguous, and sized by the geometry."""
    dm = RNGD.dm
    assert dm.byte_bits + dm.bank_bits + dm.row_bits == tuple(range(19))
    assert 2 ** len(dm.byte_bits) == dm.bytes_per_bank_row
    assert 2 ** len(dm.bank_bits) == dm.banks_per_slice
    assert 2 ** len(dm.row_bits) == dm.rows_per_bank
    assert 2 ** (len(dm.byte_bits) + len(dm.bank_bits) + len(dm.row_bits)) == dm.slice_bytes
    # 128 consecutive bytes cover all 16 banks (L2874); bank = (addr >> 3) & 0xF.
    assert [dm.bank_of(a) for a in range(0, 128, 8)] == list(range(16))
    assert dm.bank_of(128) == 0 and dm.bank_of(0x1238) == (0x1238 >> 3) & 0xF


def test_bank_starvation_limit() -> None:
    """(256 B / 128 B) × 64 × 32 slices = 4096 cycles, the NoC timeout (L2938–2939); 30 + 20 + 1 is safe and
    64 is not (L2919–2923, L2856)."""
    dm, dma = RNGD.dm, RNGD.dma
    assert dma.bytes_per_cycle // dm.dmn_bytes_per_cycle * dm.bank_starvation_limit * dm.slices_per_dmn == (
        dm.noc_timeout_cycles
    )
    assert not dm.starves_dma(30 + 20 + 1)
    assert not dm.starves_dma(63)
    assert dm.starves_dma(64)
    assert dm.dma_request_banks == dm.banks_per_slice  # a DMA request touches 16 banks at once (L2929)


def test_dm_bandwidth() -> None:
    """128 B/cycle per DMN; two DMNs alternated give 256 B/cycle (L2603, L2884–2893)."""
    dm = RNGD.dm
    assert dm.interleaved_bytes_per_cycle == 2 * dm.dmn_bytes_per_cycle == RNGD.dma.bytes_per_cycle


def test_hbm_geometry() -> None:
    """2 stacks × 16 channels × 3 slices × 4 bank groups × 4 banks × 16K rows × 2 KB = 48 GB (L2949–2958)."""
    hbm = RNGD.hbm
    assert hbm.geometry_bytes == hbm.chip_bytes == 48 * 2**30
    assert hbm.channels == 32
    # 36 address bits (0–35, L2960–2972): 48 GB needs more than 35 and fits in 36.
    assert 2 ** (hbm.address_bits - 1) < hbm.chip_bytes <= 2**hbm.address_bits


def test_hbm_address_map() -> None:
    """Each of bits 0–35 has one main component (L2962–2972); the byte component spans 11 bits = 2 KB rows,
    and stack and channel bits match the stack and channel counts (L2974–2977)."""
    hbm = RNGD.hbm
    bits = [b for f in hbm.address_map for b in f.bits]
    assert sorted(bits) == list(range(hbm.address_bits))

    def width(component: str) -> int:
        return sum(len(f.bits) for f in hbm.address_map if f.component == component)

    assert 2 ** width("byte") == hbm.bytes_per_row
    assert 2 ** width("stack") == hbm.stacks
    assert 2 ** width("channel") == hbm.channels_per_stack
    assert 2 ** width("bank_group") == hbm.bank_groups_per_slice
    assert 2 ** width("bank") == hbm.banks_per_bank_group
    assert width("slice") == 2  # two bits for three slices (L2975)
    assert tuple(b for f in hbm.address_map if f.component == "stack" for b in f.bits) == hbm.stack_bits
    assert tuple(b for f in hbm.address_map if f.component == "channel" for b in f.bits) == hbm.channel_bits
    assert hbm.channel_xor_bits == tuple(range(13, 29))  # channel = XOR of bits 9–12 and 13–28 (L2977)
    assert {9, 13, 21, 25} - set(hbm.channel_bits + hbm.channel_xor_bits) == set()


def test_hbm_bandwidth() -> None:
    """64 B × 0.75 GHz = 48 GB/s per channel; × 32 channels ≈ 1.5 TB/s = 0.75 read + 0.75 write (L2602,
    L2980); a 256-byte unit takes 4 channel cycles (L2980)."""
    hbm, clocks = RNGD.hbm, RNGD.clocks
    assert hbm.channel_bytes_per_cycle * clocks.hbm_controller_hz == hbm.channel_bytes_per_s
    assert math.isclose(hbm.channel_bytes_per_s * hbm.channels, hbm.bytes_per_s, rel_tol=0.03)
    assert hbm.read_bytes_per_s + hbm.write_bytes_per_s == hbm.bytes_per_s
    assert hbm.access_unit_bytes // hbm.channel_bytes_per_cycle == hbm.access_unit_channel_cycles
    assert 2 ** hbm.stack_bits[0] == hbm.access_unit_bytes  # bits 0–7 are the 256-byte unit (L2983)
    # 40–50 ns at 1.5 GHz = 60–75 cycles (L2987).
    assert tuple(ns * clocks.dram_timing_hz // 10**9 for ns in hbm.row_switch_ns) == hbm.row_switch_cycles
    assert sorted(hbm.tccd_cycles.values()) == [2, 3, 4]  # L2999–3001


def test_trf_capacity() -> None:
    """8 KB × 8 MAC rows per slice (L139, L1089); a Row is 128 lines × 2 columns × 32 B (L4116–4118); the
    halves are 64 lines (L4118, L4151–4154)."""
    trf = RNGD.trf
    assert trf.rows * trf.row_bytes == trf.slice_bytes == 64 * 2**10
    assert trf.bank_lines_full * trf.bank_cols * trf.bank_line_bytes == trf.row_bytes
    assert trf.bank_lines_half * trf.bank_cols * trf.bank_line_bytes == trf.half_row_bytes
    assert (trf.mode_bytes("Full"), trf.mode_bytes("FirstHalf"), trf.mode_bytes("SecondHalf")) == (
        8192,
        4096,
        4096,
    )
    with pytest.raises(ValueError, match="Quarter"):
        trf.mode_bytes("Quarter")
    assert trf.rows == RNGD.contraction.rows and trf.valid_row_counts == RNGD.contraction.valid_row_counts


def test_trf_address_fields() -> None:
    """bank row 3 bits, row in bank 7/6, bank col 1, offset 6 (5-bit slots, 64 × 5 = 320 bits per line)
    (L4130–4140); reg_types: slots × elements = 64 slots per line (L4142–4147); cache 2048 B (L4183–4189)."""
    trf = RNGD.trf
    bits = trf.address_field_bits
    assert 2 ** bits["bank_row"] == trf.rows
    assert 2 ** bits["row_in_bank_full"] == trf.bank_lines_full
    assert 2 ** bits["row_in_bank_half"] == trf.bank_lines_half
    assert 2 ** bits["bank_col"] == trf.bank_cols
    assert 2 ** bits["offset"] == trf.slots_per_line
    assert trf.slots_per_line * trf.slot_bits == 320 == trf.bank_line_bytes * 10
    for reg_type, slots in trf.reg_type_slots.items():
        assert slots * trf.reg_type_elements_per_line[reg_type] == trf.slots_per_line
    assert trf.rows * trf.cache_entries_per_row * trf.cache_entry_bytes == trf.cache_bytes == 2048
    assert max(trf.reg_read_sizes) == RNGD.contraction.mac_width_bytes == trf.wide_read_alignment_bytes
    assert trf.sequencer.max_entries == 8 and trf.sequencer.max_entry_size == 65536  # L4173–4174


def test_vrf_capacity() -> None:
    """8 KB per slice; 256 slices give 2 MB per cluster (L140, L1090, L7916–7917)."""
    assert RNGD.vrf.slice_bytes * RNGD.dm.slices_per_cluster == RNGD.vrf.cluster_bytes == 2 * 2**20


# ------------------------------------------------------------------------------------------------ engines


def test_sequencer_limits() -> None:
    """≤ 8 entries of size ≤ 65,536; base packets of 1–32 bytes (L1630–1632, L2118)."""
    seq = RNGD.sequencer
    assert (seq.max_entries, seq.max_entry_size) == (8, 65536)
    assert seq.packet_sizes_bytes == RNGD.fetch.main_fetch_sizes == (1, 2, 4, 8, 16, 32)


def test_fetch_sizes_and_cast_limit() -> None:
    """Main fetch sizes 1–32 B, sub 4 (i4→i32) or 8 B (L1757–1759); a fetch's cast output ≤ 32 B, one flit
    (L1996–2020); output packets 8-byte aligned (L1713, L1723)."""
    fetch, flit = RNGD.fetch, RNGD.collect.flit_bytes
    assert fetch.cast_output_max_bytes == flit == max(fetch.main_fetch_sizes)
    assert set(fetch.sub_fetch_sizes) <= set(fetch.main_fetch_sizes)
    assert fetch.sub_fetch_size_default == 8 and fetch.sub_fetch_size_by_cast[("i4", "i32")] == 4
    assert fetch.sub_fetch_size_by_cast[("i4", "i32")] * (32 // 4) <= fetch.cast_output_max_bytes
    assert fetch.sub_fetch_size_default * (32 // 8) <= fetch.cast_output_max_bytes  # i8 → i32
    assert fetch.align_bytes == 8 and fetch.align_bytes in fetch.main_fetch_sizes
    assert fetch.max_interleaved == 2  # L1850
    assert fetch.sub_adapter_stages == ("zero_point_subtraction",)  # L1870
    assert (
        set(fetch.sub_adapter_stages) <= set(fetch.main_adapter_stages)
        and len(fetch.main_adapter_stages) == 5
    )


def test_fetch_masking_limits() -> None:
    """Right-masking counts 0–255 for 4-bit types and 0–31 for f32 (L1902): both are 128 bytes of elements,
    and the 8- and 16-bit limits follow the same rule; case 3 has 8 per-index counts (L1925–1926)."""
    fetch = RNGD.fetch
    assert fetch.mask_right_count_max[4] == 255 and fetch.mask_right_count_max[32] == 31
    for bits, count in fetch.mask_right_count_max.items():
        assert (count + 1) * bits == fetch.mask_packet_max_bytes * 8
    assert fetch.mask_case3_counts == 8


def test_rngd_fetch_casts() -> None:
    """RNGD fetch casts: i4→{i5,i32}, i8→{i9,i32}, i16→i32, f8e4m3/f8e5m2/bf16/f16→f32, f32→bf16
    (L1962–1972)."""
    expected = {
        ("i4", "i5"), ("i4", "i32"), ("i8", "i9"), ("i8", "i32"), ("i16", "i32"), ("f8e4m3", "f32"),
        ("f8e5m2", "f32"), ("bf16", "f32"), ("f16", "f32"), ("f32", "bf16"),
    }  # fmt: skip
    assert RNGD.fetch.casts == expected
    for s, d in expected:
        assert RNGD.supports_fetch_cast(s, d) and RNGD.fetch_cast_refusal(s, d) is None
    assert RNGD.supports_fetch_cast("i8", "i8")  # no cast
    assert not RNGD.supports_fetch_cast("i32", "i8")  # narrowing is the Cast Engine's (L6774–6779)
    assert RNGD.fetch_cast_targets("i4") == {"i5", "i32"}


def test_rngd_s_differs_only_by_its_extra_fetch_casts() -> None:
    """RNGD-S adds i4→i9, i16→i9, f8e4m3→bf16, f8e5m2→bf16 (L1973–1979); the manual states no other
    difference, so every other field equals RNGD's."""
    extra = {("i4", "i9"), ("i16", "i9"), ("f8e4m3", "bf16"), ("f8e5m2", "bf16")}
    assert RNGD_S.fetch.casts - RNGD.fetch.casts == extra
    assert RNGD.fetch.casts <= RNGD_S.fetch.casts
    assert set(RNGD.differences(RNGD_S)) == {"name", "fetch.casts"}
    assert RNGD_S.name == "RNGD-S"
    assert dataclasses.replace(RNGD_S, name="RNGD", fetch=RNGD.fetch) == RNGD
    for s, d in extra:
        assert RNGD_S.supports_fetch_cast(s, d) and not RNGD.supports_fetch_cast(s, d)


def test_cast_refusal_names_the_profile() -> None:
    """An engine refuses an RNGD-S-only cast on RNGD with a message naming the profile (ARCHITECTURE.md
    principle 5; L1973–1979)."""
    msg = RNGD.fetch_cast_refusal("f8e4m3", "bf16")
    assert msg is not None
    assert (
        "RNGD " in msg
        and "f8e4m3" in msg
        and "bf16" in msg
        and "L1962" in msg
        and "RNGD-S supports it" in msg
    )
    assert RNGD_S.fetch_cast_refusal("f8e4m3", "bf16") is None
    unknown = RNGD_S.fetch_cast_refusal("i32", "i4")
    assert unknown is not None and "RNGD-S" in unknown and "supports it" not in unknown
    assert RNGD.cast_refusal("f32", "bf16") is None
    refusal = RNGD.cast_refusal("f32", "i8")
    assert refusal is not None and "RNGD" in refusal and "L6774" in refusal


def test_cast_engine_table() -> None:
    """Cast Engine lowers i32 → i4, i8, i16 and f32 → f8e5m2, f8e4m3, f16, bf16; packets are one flit
    (L6774–6784)."""
    assert RNGD.cast.casts == {
        ("i32", "i4"), ("i32", "i8"), ("i32", "i16"),
        ("f32", "f8e5m2"), ("f32", "f8e4m3"), ("f32", "f16"), ("f32", "bf16"),
    }  # fmt: skip
    assert {s for s, _ in RNGD.cast.casts} == RNGD.vector.input_dtypes  # it lowers what VE computes in
    assert RNGD.cast.packet_bytes == RNGD.collect.flit_bytes


def test_switch_and_collect() -> None:
    """A ring of 256 slices (L3057); two 32-byte switch engines, 64 bytes in dual channel (L2125–2127,
    L2140); custom rings are powers of two up to 256 (L3364)."""
    sw, co = RNGD.switch, RNGD.collect
    assert sw.ring_slices == RNGD.dm.slices_per_cluster
    assert sw.width_bytes == co.flit_bytes and sw.dual_channel_width_bytes == 2 * sw.width_bytes
    assert co.dual_channel_flit_bytes == sw.dual_channel_width_bytes
    assert sw.engines == len(RNGD.scheduling.contexts)
    assert sw.max_ring_size == sw.ring_slices and sw.max_ring_size & (sw.max_ring_size - 1) == 0


def test_contraction_accumulator() -> None:
    """1024 slots = 8 rows × 32 columns × 4 registers (L4409); Interleaved ≤ 128 = 1024 / 8 and
    Sequential ≤ 32 = 1024 / 32 (L4536–4538)."""
    c = RNGD.contraction
    assert (
        c.accumulator_rows * c.accumulator_columns * c.accumulator_registers_per_column == c.accumulator_slots
    )
    assert c.accumulator_slots == 1024
    assert c.interleaved_inner_max == c.accumulator_slots // c.accumulator_rows == 128
    assert c.sequential_inner_max == c.accumulator_slots // c.accumulator_columns == 32
    assert c.resize_columns == c.accumulator_columns == c.depth0_max_outputs
    assert c.output_bus_elements * 4 == RNGD.collect.flit_bytes  # 8 × 32-bit per beat (L4436)


def test_contraction_trees() -> None:
    """Tree depth i4 7 (128), i8/f8 6 (64), bf16 5 (32) (L4388): each fills the 64-byte mac_width (L3921);
    outputs widen to i32/f32 (L4391); i5/i9 ride the i4/i8 datapaths (L4383)."""
    c = RNGD.contraction
    bits = {"i4": 4, "i8": 8, "f8e4m3": 8, "f8e5m2": 8, "bf16": 16}
    for dtype, width in bits.items():
        assert c.reduced_elements(dtype) * width == c.mac_width_bytes * 8, dtype
    assert (c.max_tree_depth["i5"], c.max_tree_depth["i9"]) == (7, 6)
    assert c.datapath_bits == (c.reduced_elements("i4") * 5 // 2, c.reduced_elements("i4") * 5)
    assert "f32" not in c.input_dtypes  # L4533
    assert set(c.output_dtypes.values()) == {"i32", "f32"}
    assert (
        c.mac_width_bytes == 2 * RNGD.collect.flit_bytes
        and c.flit_buffer_bytes == 3 * RNGD.collect.flit_bytes
    )
    assert max(c.collect_flits) * RNGD.collect.flit_bytes == c.flit_buffer_bytes  # L3928
    assert c.default_collect_flits in c.collect_flits


def test_vector_engine() -> None:
    """ALU pools Logic 5, Fxp 4, Fp 5, Clip 3 (L4736–4745); Way8 = 8 × 32-bit = one flit (L4551, L4731);
    4-bit ExecutionId (L4795); intra-slice reduce: 4-way, depth 2, 8 slots (L5386–5388)."""
    ve = RNGD.vector
    assert {pool: len(alus) for pool, alus in ve.alu_pools.items()} == {
        "Logic": 5,
        "Fxp": 4,
        "Fp": 5,
        "Clip": 3,
    }
    assert ve.alu_pool_of("FxpAdd") == "Fxp" and ve.alu_pool_of("FpMul1") == "Fp"
    with pytest.raises(KeyError):
        ve.alu_pool_of("FpDiv")
    assert ve.way8_lanes * 4 == RNGD.collect.flit_bytes and ve.way4_lanes * 2 == ve.way8_lanes
    assert ve.input_dtypes == {"i32", "f32"}
    assert 2**ve.execution_id_bits == 16
    assert ve.intra_reduce_tree_width == ve.way4_lanes and 2**ve.intra_reduce_tree_depth == ve.way4_lanes
    assert ve.intra_reduce_slots == 8
    assert set(ve.stage_lanes) == set(ve.stage_dtypes) == set(ve.stages)
    assert {ve.stage_lanes[s] for s in ("Fp", "IntraSliceReduce", "FpDiv")} == {ve.way4_lanes}
    assert "Mul" in ve.inter_reduce_ops["f32"] and "Mul" not in ve.inter_reduce_ops["i32"]  # L6611–6625
    assert ve.vcg_packet_dims + ve.vcg_gate_dims == 4 and ve.vcg_max_valid_count == ve.way8_lanes


def test_transpose_engine() -> None:
    """Per width: elements per packet 16/8/8/8, output alignment 64/32/16/8, max in_rows 16/8/4/2
    (L6880–6883): in_rows × width ≤ 8 bytes, every output row is 32 bytes (L6885); buffers 2 × 16 columns
    (L6859)."""
    t = RNGD.transpose
    assert set(t.elements_per_packet) == set(t.output_alignment) == set(t.max_in_rows) == {4, 8, 16, 32}
    for bits in t.elements_per_packet:
        assert t.output_alignment[bits] * bits == t.packet_bytes * 8
        assert t.max_in_rows[bits] * bits == 64
        assert t.elements_per_packet[bits] * bits <= t.packet_bytes * 8
        assert all(cols % t.elements_per_packet[bits] == 0 for cols in t.valid_in_cols[bits])
    assert t.buffers == 2 and t.buffer_cols == 16 and t.packet_bytes == RNGD.collect.flit_bytes


def test_commit_engine() -> None:
    """Input is one 32-byte flit; commit_in 8/16/24/32; main commit sizes 8/16/24/32, sub 8 (L2192–2193,
    L2247–2248, L2330); strides in 8-byte units (L2338); a 256-bit slice bitmap (L2316)."""
    cm = RNGD.commit
    assert cm.in_packet_bytes == RNGD.collect.flit_bytes == max(cm.commit_in_sizes)
    assert set(cm.sub_commit_sizes) <= set(cm.main_commit_sizes) <= set(cm.commit_in_sizes)
    assert all(size % cm.stride_granularity_bytes == 0 for size in cm.commit_in_sizes)
    assert cm.slice_bitmap_bits == RNGD.dm.slices_per_cluster
    assert cm.main_adapter_stages == ("truncating",) and "generate" in cm.sub_adapter_stages  # L2332–2336


def test_dma_engine() -> None:
    """8 engines per chip, one per pair of DMNs (L2404, L2831); 256 B/cycle = 256 GB/s at 1 GHz and 8 of them
    ≈ "2 TB/s" (L2596, L2636, L2751); packets ≤ 4096 B in 256-byte requests (L2428–2429, L2469)."""
    dma, dm = RNGD.dma, RNGD.dm
    assert dma.engines_per_chip * dma.dmns_per_engine == dm.dmns_per_chip
    assert dma.bytes_per_cycle * RNGD.clocks.core_hz == 256 * 10**9
    aggregate = dma.engines_per_chip * dma.bytes_per_cycle * RNGD.clocks.core_hz
    assert math.isclose(aggregate, 2 * 10**12, rel_tol=0.03)
    assert dma.max_packet_bytes == 4096 and dma.max_packet_bytes % dma.request_bytes == 0
    assert (dma.requests(4095), dma.requests(4096), dma.requests(1), dma.requests(2800)) == (16, 16, 1, 11)
    assert dma.request_bytes == RNGD.hbm.access_unit_bytes
    assert (dma.write_address_align["DM"], dma.packet_align["DM"], dma.read_address_align["DM"]) == (8, 8, 1)
    aligns = {*dma.write_address_align.values(), *dma.read_address_align.values(), *dma.packet_align.values()}
    assert aligns <= {1, dma.hbm_to_dm_align}
    assert set(dma.media) == set(dma.read_address_align) == set(dma.write_address_align)
    assert set(dma.media) == set(dma.packet_align)
    assert dma.startup_cycles == 500 and dma.pcie_bytes_per_cycle == 30
    assert dma.hbm_to_dm_align == dm.bytes_per_bank_row  # 8-byte SRAM banks (L2414, L2874)


def test_scheduling_and_chips() -> None:
    """Main, sub and DMA run in parallel; main one op at a time (L7057–7064); DM arbitration puts DMA last
    (L2899–2904); the chip count is the kernel's (@device(chip=N)), bounded by max_chips (L129, L1075)."""
    s = RNGD.scheduling
    assert s.resources == (*s.contexts, "dma") and s.main_ops_at_once == 1
    assert s.dm_priority[-1] == "dma" and s.dm_priority[0] == "main_fetch"
    assert s.pipeline[0] == "fetch" and s.pipeline[-1] == "commit" and len(s.pipeline) == 8
    assert not any(f.name == "num_chips" for f in dataclasses.fields(HardwareProfile))
    assert RNGD.max_chips == 8


# ------------------------------------------------------------------------------------------------ lookup


def test_profile_lookup() -> None:
    """``profile(name)`` finds RNGD and RNGD-S by any spelling; PROFILES lists both; unknown names fail."""
    assert dict(PROFILES) == {"RNGD": RNGD, "RNGD-S": RNGD_S}
    assert profile("RNGD") is RNGD and profile("rngd-s") is RNGD_S and profile("RNGD_S") is RNGD_S
    assert profile(RNGD_S) is RNGD_S
    with pytest.raises(UnknownProfileError, match="known profiles: RNGD, RNGD-S"):
        profile("RNGD-X")
    assert str(RNGD_S) == "RNGD-S"


def test_frozen_map() -> None:
    """FrozenMap: an immutable, hashable mapping equal to the dict it holds."""
    m = FrozenMap({"a": 1, "b": (2, 3)})
    assert m == {"a": 1, "b": (2, 3)} and m == FrozenMap([("b", (2, 3)), ("a", 1)])
    assert hash(m) == hash(FrozenMap({"b": (2, 3), "a": 1}))
    assert "a" in m and list(m) == ["a", "b"] and len(m) == 2
    assert pickle.loads(pickle.dumps(m)) == m
    assert m != FrozenMap({"a": 1}) and (m == 3) is False
    with pytest.raises(TypeError):
        m["c"] = 4  # type: ignore[index]
    with pytest.raises(AttributeError):
        del m._data
