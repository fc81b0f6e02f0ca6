"""The RNGD and RNGD-S profiles: the manual's numbers for FuriosaAI's RNGD chip and its RNGD-S variant.

Each field's manual lines are in its ``metadata["lines"]`` (see :mod:`visa.hw.profile`, or
``RNGD.cite(path)``); comments here mark only derived values and the choices recorded in
``docs/manual-notes.md`` ("hardware profile").  RNGD-S is RNGD plus four fetch casts (manual L1973–1979),
the only difference the manual states.

>>> from visa.hw import RNGD, RNGD_S
>>> sorted(RNGD.differences(RNGD_S))
['fetch.casts', 'name']
"""

from __future__ import annotations

import dataclasses

from visa.hw.profile import (
    BitField,
    CastEngine,
    Clocks,
    CollectEngine,
    CommitEngine,
    ContractionEngine,
    DataMemory,
    DmaEngine,
    FetchEngine,
    FrozenMap,
    HardwareProfile,
    Hbm,
    Scheduling,
    Scratchpad,
    SequencerLimits,
    SwitchEngine,
    TensorRegisterFile,
    Timing,
    TransposeEngine,
    VectorEngine,
    VectorRegisterFile,
)

__all__ = ["PROFILES", "RNGD", "RNGD_FETCH_CASTS", "RNGD_S", "RNGD_S_EXTRA_FETCH_CASTS"]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
GB = 10**9  # bandwidths are decimal (48 GB/s = 0.75 GHz × 64 B, L2980)


def _pairs(table: dict[str, tuple[str, ...]]) -> frozenset[tuple[str, str]]:
    return frozenset((s, d) for s, ds in table.items() for d in ds)


#: Fetch Adapter casts on RNGD (manual L1962–1972).
RNGD_FETCH_CASTS: frozenset[tuple[str, str]] = _pairs(
    {
        "i4": ("i5", "i32"),
        "i8": ("i9", "i32"),
        "i16": ("i32",),
        "f8e4m3": ("f32",),
        "f8e5m2": ("f32",),
        "bf16": ("f32",),
        "f16": ("f32",),
        "f32": ("bf16",),
    }
)

#: The casts RNGD-S adds (manual L1973–1979).
RNGD_S_EXTRA_FETCH_CASTS: frozenset[tuple[str, str]] = _pairs(
    {"i4": ("i9",), "i16": ("i9",), "f8e4m3": ("bf16",), "f8e5m2": ("bf16",)}
)

_SEQUENCER = SequencerLimits(
    max_entries=8,
    max_entry_size=65536,  # "size <= 65,536" (L1632), not "< 65536" (L7699)
    packet_sizes_bytes=(1, 2, 4, 8, 16, 32),
    stride_bits=32,  # stated for the TRF sequencer (L4175); fetch/commit/DMA strides are unstated
)

_HBM = Hbm(
    stacks=2,
    channels_per_stack=16,
    slices_per_channel=3,
    bank_groups_per_slice=4,
    banks_per_bank_group=4,
    rows_per_bank=16 * KiB,
    bytes_per_row=2 * KiB,
    chip_bytes=48 * GiB,
    address_bits=36,
    address_map=(
        BitField(component="byte", bits=tuple(range(0, 8))),
        BitField(component="stack", bits=(8,)),
        BitField(component="channel", bits=(9, 10, 11, 12)),
        BitField(component="bank_group", bits=(13,), also="channel"),
        BitField(component="byte", bits=(14, 15, 16), also="channel"),
        BitField(component="bank", bits=(17, 18), also="channel"),
        BitField(component="bank_group", bits=(19,), also="channel"),
        BitField(component="slice", bits=(20,), also="channel"),
        BitField(component="row", bits=tuple(range(21, 34)), also="channel (bits 21–28)"),
        BitField(component="slice", bits=(34,), also="row"),
        BitField(component="row", bits=(35,)),
    ),
    stack_bits=(8,),
    channel_bits=(9, 10, 11, 12),
    channel_xor_bits=tuple(range(13, 29)),
    bytes_per_s=1500 * GB,
    read_bytes_per_s=750 * GB,
    write_bytes_per_s=750 * GB,
    channel_bytes_per_cycle=64,
    channel_bytes_per_s=48 * GB,
    access_unit_bytes=256,
    access_unit_channel_cycles=4,
    channel_command_queue_entries=64,
    unaligned_read_penalty=2,
    unaligned_write_penalty=50,  # "roughly 50×" (L2985)
    bank_conflict_penalty=(30, 40),
    row_switch_ns=(40, 50),
    row_switch_cycles=(60, 75),  # at dram_timing_hz (1.5 GHz)
    tccd_cycles=FrozenMap(
        {"same_slice_other_bank_group": 2, "other_slice": 3, "same_slice_same_bank_group": 4}
    ),
)

_DM = DataMemory(
    clusters_per_chip=2,
    dmns_per_cluster=8,  # the geometry table (L2867), not "2 DMNs per cluster" (L2857); see manual-notes
    slices_per_dmn=32,
    slices_per_cluster=256,
    banks_per_slice=16,
    rows_per_bank=4096,
    bytes_per_bank_row=8,
    slice_bytes=512 * KiB,
    chip_bytes=256 * MiB,
    byte_bits=(0, 1, 2),
    bank_bits=(3, 4, 5, 6),
    row_bits=tuple(range(7, 19)),
    slice_address_space_bytes=4 * MiB,  # the DMA "slice_stride" (L2541); only 512 KB of it is backed
    slice_bytes_per_cycle=128,
    dmn_bytes_per_cycle=128,
    interleaved_bytes_per_cycle=256,  # two DMNs alternated (L2884–2893): one DMA engine's DMN pair
    slice_command_queue_entries=2,
    dma_request_banks=16,
    bank_starvation_limit=64,  # a run of 64 or more is a violation; see manual-notes
    noc_timeout_cycles=4096,
)

_TRF = TensorRegisterFile(
    rows=8,
    valid_row_counts=(1, 2, 4, 8),
    row_bytes=8 * KiB,  # = 128 lines × 2 columns × 32 B (L4116–4118)
    half_row_bytes=4 * KiB,
    slice_bytes=64 * KiB,  # 8 KB × 8 MAC rows (L139)
    bank_cols=2,
    bank_lines_full=128,
    bank_lines_half=64,
    bank_line_bytes=32,
    slot_bits=5,
    slots_per_line=64,
    address_field_bits=FrozenMap(
        {"bank_row": 3, "row_in_bank_full": 7, "row_in_bank_half": 6, "bank_col": 1, "offset": 6}
    ),
    reg_type_names=FrozenMap(
        {0: "5-bit (i4 extended)", 1: "10-bit (i4->i8)", 2: "10-bit (i8->f8)", 3: "20-bit (bf16)"}
    ),
    reg_type_slots=FrozenMap({0: 1, 1: 2, 2: 2, 3: 4}),
    reg_type_elements_per_line=FrozenMap({0: 64, 1: 32, 2: 32, 3: 16}),
    mixed_operands=FrozenMap({("i8", "i4"): 1, ("f8e4m3", "i8"): 2, ("f8e5m2", "i8"): 2}),
    address_modes=("Full", "FirstHalf", "SecondHalf"),
    reg_read_sizes=(1, 2, 4, 8, 16, 32, 64),
    wide_read_alignment_bytes=64,
    sequencer=dataclasses.replace(_SEQUENCER, packet_sizes_bytes=(1, 2, 4, 8, 16, 32, 64)),
    cache_entries_per_row=8,
    cache_entry_bytes=32,
    cache_bytes=2048,
)

_FETCH = FetchEngine(
    main_fetch_sizes=(1, 2, 4, 8, 16, 32),  # not "8, 16, 24, or 32" (L7795, commit sizes); see manual-notes
    sub_fetch_sizes=(4, 8),
    sub_fetch_size_default=8,
    sub_fetch_size_by_cast=FrozenMap({("i4", "i32"): 4}),
    align_bytes=8,
    address_align_bytes=1,
    lift_base_align_bytes=8,
    cast_output_max_bytes=32,
    casts=RNGD_FETCH_CASTS,
    cast_latency_cycles=(1, 2),
    main_adapter_stages=("masking", "table_indexing", "type_casting", "zero_point_subtraction", "batching"),
    sub_adapter_stages=("zero_point_subtraction",),  # casts in the sub context: see manual-notes
    max_interleaved=2,
    zero_point_dtype="i8",
    # Right-masking count limit per element bit width: 4-bit 255 and f32 31 are stated (L1902); 8- and 16-bit
    # follow the same 128-byte rule the two stated limits share.
    mask_right_count_max=FrozenMap({4: 255, 8: 127, 16: 63, 32: 31}),
    mask_packet_max_bytes=128,  # what the stated limits imply; the text says 256 (L1902); see manual-notes
    mask_case3_counts=8,
)

_CONTRACTION = ContractionEngine(
    rows=8,
    valid_row_counts=(1, 2, 4, 8),
    mac_width_bytes=64,
    flit_buffer_bytes=96,
    collect_flits=(1, 2, 3),
    default_collect_flits=2,
    default_feed_flits=2,
    max_feed_flits=3,
    # i4, i8, f8, bf16 (L3782); the widened i5 and i9 that fetch casts produce (L1965–1966, L1976–1977) ride
    # the i4 and i8 datapaths (L4383).  See manual-notes.
    input_dtypes=frozenset({"i4", "i5", "i8", "i9", "f8e4m3", "f8e5m2", "bf16"}),
    output_dtypes=FrozenMap(
        {"i4": "i32", "i5": "i32", "i8": "i32", "i9": "i32", "f8e4m3": "f32", "f8e5m2": "f32", "bf16": "f32"}
    ),
    max_tree_depth=FrozenMap({"i4": 7, "i5": 7, "i8": 6, "i9": 6, "f8e4m3": 6, "f8e5m2": 6, "bf16": 5}),
    datapath_bits=(320, 640),
    resize_columns=32,
    depth0_max_outputs=32,  # more is invalid (L4532), not truncated (L4398, L4547); see manual-notes
    accumulator_slots=1024,
    accumulator_rows=8,
    accumulator_columns=32,
    accumulator_registers_per_column=4,
    accumulation_kinds=("Interleaved", "Sequential"),
    interleaved_inner_max=128,
    sequential_inner_max=32,
    output_bus_elements=8,
    reduce_max_rows=1,
    reduce_max_throughput_divisor=8,
)

_I32, _F32, _BOTH = frozenset({"i32"}), frozenset({"f32"}), frozenset({"i32", "f32"})

_VECTOR = VectorEngine(
    input_dtypes=_BOTH,
    way8_lanes=8,
    way4_lanes=4,
    stages=(
        "Branch",
        "Logic",
        "Fxp",
        "FxpToFp",
        "Narrow",
        "Fp",
        "IntraSliceReduce",
        "FpDiv",
        "Widen",
        "FpToFxp",
        "Clip",
        "Filter",
        "Output",
    ),
    # Lanes of each stage's output (Narrow outputs Way4, Widen Way8; L4739, L4743).
    stage_lanes=FrozenMap(
        {
            "Branch": 8,
            "Logic": 8,
            "Fxp": 8,
            "FxpToFp": 8,
            "Narrow": 4,
            "Fp": 4,
            "IntraSliceReduce": 4,
            "FpDiv": 4,
            "Widen": 8,
            "FpToFxp": 8,
            "Clip": 8,
            "Filter": 8,
            "Output": 8,
        }
    ),
    # Input dtypes per stage as the table states them (FxpToFp takes i32, FpToFxp f32), except Narrow and Widen:
    # the table says f32 (L4739, L4743) but the manual's examples narrow and widen i32 (L4859, L4933, L5414), so
    # both (docs/manual-notes.md, vector Q1).
    stage_dtypes=FrozenMap(
        {
            "Branch": _BOTH,
            "Logic": _BOTH,
            "Fxp": _I32,
            "FxpToFp": _I32,
            "Narrow": _BOTH,
            "Fp": _F32,
            "IntraSliceReduce": _BOTH,
            "FpDiv": _F32,
            "Widen": _BOTH,
            "FpToFxp": _F32,
            "Clip": _BOTH,
            "Filter": _BOTH,
            "Output": _BOTH,
        }
    ),
    alu_pools=FrozenMap(
        {
            "Logic": ("LogicAnd", "LogicOr", "LogicXor", "LogicLshift", "LogicRshift"),
            "Fxp": ("FxpAdd", "FxpLshift", "FxpMul", "FxpRshift"),
            "Fp": ("FpFma", "FpFpu", "FpExp", "FpMul0", "FpMul1"),
            "Clip": ("ClipAdd", "ClipMax", "ClipMin"),
        }
    ),
    alu_latency_cycles=1,
    reduce_units=1,
    divide_units=1,
    execution_id_bits=4,
    branch_modes=("Unconditional", "AxisToggle", "ValidCount", "Comparison", "Vrf"),
    branch_comparators=4,
    stash_slots=1,
    branch_operands_max=5,
    intra_reduce_tree_width=4,
    intra_reduce_tree_depth=2,
    intra_reduce_slots=8,
    unzip_cache_bytes=1024,
    intra_reduce_ops=FrozenMap(
        {"i32": frozenset({"AddSat", "Max", "Min"}), "f32": frozenset({"Add", "Max", "Min"})}
    ),
    inter_reduce_ops=FrozenMap(
        {"i32": frozenset({"Add", "AddSat", "Max", "Min"}), "f32": frozenset({"Add", "Max", "Min", "Mul"})}
    ),
    inter_slice_cycles_per_slice=1,  # 256 slices ≈ 256 cycles (L4375)
    vcg_counters=8,
    vcg_packet_dims=1,
    vcg_gate_dims=3,
    vcg_max_valid_count=8,
)

_TRANSPOSE = TransposeEngine(
    elements_per_packet=FrozenMap({4: 16, 8: 8, 16: 8, 32: 8}),
    output_alignment=FrozenMap({4: 64, 8: 32, 16: 16, 32: 8}),
    max_in_rows=FrozenMap({4: 16, 8: 8, 16: 4, 32: 2}),
    valid_in_cols=FrozenMap({4: (16, 32), 8: (8, 16, 32), 16: (8, 16, 32), 32: (8, 16, 32)}),
    buffers=2,
    buffer_cols=16,
    packet_bytes=32,
    input_sources=("contraction", "vector", "fetch"),
)

_COMMIT = CommitEngine(
    in_packet_bytes=32,
    commit_in_sizes=(8, 16, 24, 32),
    main_commit_sizes=(8, 16, 24, 32),
    sub_commit_sizes=(8,),
    stride_granularity_bytes=8,
    slice_bitmap_bits=256,  # one bit per slice of a cluster; "64 slices per PE" (L2343) is not modelled
    main_adapter_stages=("truncating",),
    sub_adapter_stages=("truncating", "valid_count_packing", "generate"),
    generate_value_bits=32,
    sub_follows_fetch_only=True,
)

_DMA = DmaEngine(
    engines_per_chip=8,
    dmns_per_engine=2,
    bytes_per_cycle=256,
    max_packet_bytes=4096,
    request_bytes=256,
    startup_cycles=500,
    media=("HBM", "DM", "SPM"),
    # The alignment table has an HBM and a "DM (SRAM)" column (L2426); SPM is SRAM too (L2945).
    read_address_align=FrozenMap({"HBM": 1, "DM": 1, "SPM": 1}),
    write_address_align=FrozenMap({"HBM": 1, "DM": 8, "SPM": 8}),
    packet_align=FrozenMap({"HBM": 1, "DM": 8, "SPM": 8}),
    hbm_to_dm_align=8,
    pcie_bytes_per_cycle=30,
    dtypes=frozenset({"i4", "i8", "f8e4m3", "f8e5m2", "i16", "f16", "bf16", "i32", "f32", "f4e2m1"}),
    handles=("tdma", "pdma"),
)

#: FuriosaAI RNGD (manual throughout; the "Count (RNGD)" and "Capacity (RNGD)" tables, L127–140).
RNGD = HardwareProfile(
    name="RNGD",
    max_chips=8,  # "system-dependent" (L129); the largest system the manual sizes is 8 chips (L1075)
    clocks=Clocks(
        core_hz=1_000_000_000,
        hbm_controller_hz=750_000_000,
        hbm_bursts_per_cycle=8,
        dram_timing_hz=1_500_000_000,
    ),
    hbm=_HBM,
    dm=_DM,
    # per DMN (L2945); see manual-notes.  4 KiB per PE is the reference's (issue 26)
    spm=Scratchpad(dmn_bytes_per_cycle=128, same_chip_only=True, pe_bytes=4096, slices_per_pe=64),
    trf=_TRF,
    vrf=VectorRegisterFile(slice_bytes=8 * KiB, cluster_bytes=2 * MiB),
    sequencer=_SEQUENCER,
    fetch=_FETCH,
    switch=SwitchEngine(
        ring_slices=256,
        engines=2,
        width_bytes=32,
        dual_channel_width_bytes=64,
        router_buffer_packets=1,
        intertranspose_blocking_flits=16,
        forwarding_ring_size=1,
        max_ring_size=256,
        topologies=("Forwarding", "Broadcast01", "Broadcast1", "Transpose", "InterTranspose", "Custom"),
    ),
    collect=CollectEngine(flit_bytes=32, dual_channel_flit_bytes=64, pads_with_zeros=True),
    contraction=_CONTRACTION,
    vector=_VECTOR,
    cast=CastEngine(
        casts=_pairs({"i32": ("i4", "i8", "i16"), "f32": ("f8e5m2", "f8e4m3", "f16", "bf16")}),
        packet_bytes=32,
        flits_per_cycle=1,  # "a pass-through stage that is never the pipeline bottleneck" (L6819)
    ),
    transpose=_TRANSPOSE,
    commit=_COMMIT,
    dma=_DMA,
    scheduling=Scheduling(
        contexts=("main", "sub"),
        resources=("main", "sub", "dma"),
        main_ops_at_once=1,
        pipeline=("fetch", "switch", "collect", "contraction", "vector", "cast", "transpose", "commit"),
        dm_priority=("main_fetch", "main_commit", "sub_fetch", "sub_commit", "dma"),
    ),
    # Not stated by the manual: fitted to the reference's double-buffering makespans (docs/manual-notes.md,
    # "Timing model (issue 22)"; the fit is re-checked by examples/double_buffer_study.py and its test).
    timing=Timing(full_command_cycles=577, short_command_cycles=11, context_handoff_cycles=36),
)

#: RNGD-S: RNGD with the additional fetch casts i4→i9, i16→i9, f8e4m3→bf16, f8e5m2→bf16 (manual L1973–1979).
RNGD_S = dataclasses.replace(
    RNGD,
    name="RNGD-S",
    fetch=dataclasses.replace(RNGD.fetch, casts=RNGD.fetch.casts | RNGD_S_EXTRA_FETCH_CASTS),
)

#: Every known profile by name.
PROFILES: FrozenMap[str, HardwareProfile] = FrozenMap({p.name: p for p in (RNGD, RNGD_S)})
