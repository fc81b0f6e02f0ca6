"""The titles of the manual's sections with their first lines, so that a citation ``L1639`` can name its
section ("Sequencer › Insufficient Input, L1639") for a reader who has the manual but not our line numbers.

The line numbers are those of the plain-text manual every docstring cites (``Lnnnn``); the titles are the
manual's own headings.  Generated once from the manual; a section is the span from its first line to the next.

>>> section(1645)
'Sequencer › Insufficient Input'
>>> cite("the buffer does not hold (L1639–1659)")
'the buffer does not hold (manual §Sequencer › Insufficient Input, L1639–1659)'
"""

from __future__ import annotations

import bisect
import re

__all__ = ["CHAPTERS", "SUBSECTIONS", "section", "cite"]

#: The manual's chapters and engine sections: (first line, title).
CHAPTERS: tuple[tuple[int, str], ...] = (
    (1, 'Introduction'),
    (13, 'Your First Program'),
    (96, 'Mathematical Background'),
    (123, 'Tensor Contraction Processor'),
    (156, 'Examples'),
    (538, 'Mapping Tensors'),
    (582, 'Mapping Expressions'),
    (1017, 'Equivalent Mapping'),
    (1029, 'Memory and Stream'),
    (1162, 'Tensor Functions'),
    (1198, 'Moving Tensors'),
    (1219, 'Sequencer'),
    (1689, 'Fetch Engine'),
    (1869, 'Fetch Adapter'),
    (2145, 'Commit Engine'),
    (2355, 'DMA Engine'),
    (2848, 'Memory Performance'),
    (3010, 'Computing Tensors'),
    (3054, 'Switch Engine'),
    (3543, 'Collect Engine'),
    (3670, 'Contraction Engine'),
    (3789, 'Aligner'),
    (3878, 'Stream Adapter'),
    (4035, 'TRF Sequencer'),
    (4297, 'Reducer'),
    (4549, 'Vector Engine'),
    (6756, 'Cast Engine'),
    (6820, 'Transpose Engine'),
    (7042, 'Scheduling'),
    (7071, 'Kernel Examples'),
    (7090, 'Tiling'),
    (7151, 'Split Reduce'),
    (7382, 'Chip/Cluster Reduce'),
    (7611, 'Fetch and Commit Engine'),
    (7982, 'Transformer Architecture'),
    (8432, 'Mixture of Experts'),
)

#: Headings inside those sections: (first line, title).
SUBSECTIONS: tuple[tuple[int, str], ...] = (
    (9, 'Installation'), (68, 'Build and Test'), (76, 'Development Tools'), (84, 'Book Organization'),
    (92, 'License'), (98, 'Tensor'), (109, 'Tensor Contraction'), (125, 'Processing Units'), (134, 'Memory'),
    (142, 'Tensor Mapping'), (150, 'Execution Contexts'), (158, 'Constant Addition'),
    (221, 'Elementwise Multiplication'), (301, 'Dot Product'), (378, 'GEMV'), (466, 'GEMM'), (526, 'Blocked GEMM'),
    (530, 'Flash Attention'), (534, 'Further Reading'), (540, 'Layout and Performance'), (552, 'H Major, W Minor'),
    (557, 'W Major, H Minor'), (572, 'The Declarative Approach'), (587, 'Axis Sizes'), (596, 'Mapping Interface'),
    (621, 'Constructors'), (833, 'Stride and Modulo'), (985, 'Advanced Constructors'), (986, 'Skewed Axis'),
    (1004, 'Indirect Sequencing'), (1006, 'Sliding (Linear Combination)'), (1033, 'HBM and SRAM'),
    (1070, 'Alignment Constraint'), (1074, 'Size Constraint'), (1094, 'Tensor Unit Stream'),
    (1152, 'Formal Definition'), (1226, 'Interface'), (1261, 'Examples'), (1336, 'Configuration'),
    (1424, 'Configuration Examples'), (1426, 'Rearranging Axes'), (1461, 'Splitting Axes'), (1497, 'Slicing Axes'),
    (1533, 'Broadcasting Axes'), (1567, 'Merging Entries'), (1628, 'Configuration Failures'),
    (1639, 'Insufficient Input'), (1660, 'Incompatible Shapes'), (1684, 'Indirect Access'), (1698, 'Interface'),
    (1727, 'Examples'), (1746, 'Fetch Sequencer'), (1749, 'Constraints'), (1810, 'Optimizations'),
    (1812, 'Padding Packets'), (1843, 'Interleaving Tensors'), (1871, 'Sequencer and Adapter Interaction'),
    (1877, 'Masking'), (1898, 'Masking Configuration'), (1903, 'Example (Padding case 1)'),
    (1912, 'Example (Padding case 2)'), (1922, 'Example (Padding case 3)'), (1936, 'Table Indexing'),
    (1955, 'Performance'), (1960, 'Type Casting'), (1995, 'Constraints'), (2022, 'Zero-Point Subtraction'),
    (2050, 'Batching'), (2113, 'Constraints'), (2119, 'Fetch Engine and Switch Engine Interaction'),
    (2131, 'Performance'), (2132, 'Memory Bandwidth'), (2134, 'Adapter Overhead'), (2136, 'Bank Starvation'),
    (2138, 'Dual Channel Mode Benefits'), (2143, 'Packet Alignment'), (2148, 'Interface'), (2167, 'Examples'),
    (2187, 'Adapter'), (2190, 'Truncating'), (2239, 'Commit Sequencer'), (2314, 'Slice Bitmap'),
    (2320, 'Hardware Constraint'), (2322, 'Sub-Context Operations'), (2327, 'Constraints'), (2339, 'Performance'),
    (2341, 'Write Bandwidth'), (2347, 'Adapter Stage Costs'), (2350, 'Bank Starvation Prevention'),
    (2359, 'Interface'), (2391, 'Examples'), (2392, 'Layout Transformation'), (2403, 'Architecture'),
    (2405, 'Single-Engine Operation'), (2407, 'Parameters'), (2413, 'Alignment Constraints'),
    (2415, 'Structural Requirements'), (2465, 'Performance'), (2473, 'Homogeneous Aggregate Operation'),
    (2492, 'Heterogeneous Aggregate Operation'), (2505, 'DMA Command Syntax'),
    (2507, 'Heterogeneous Syntax (Full Flexibility)'), (2519, 'Homogeneous Syntax (Common Case)'),
    (2542, 'Implementation Details'), (2555, 'Tensor Memory Mapping'), (2563, 'DMA Sequencer Internals'),
    (2595, 'Memory Bandwidth Limits'), (2606, 'Detailed Examples'), (2809, 'Performance'),
    (2811, 'Memory-Specific Bandwidth'), (2826, 'Startup Latency'), (2829, 'Parallelism Strategies'),
    (2834, 'Alignment Constraints'), (2840, 'Bank Starvation Prevention'), (2843, 'Inter-Chip Transfers'),
    (2862, 'Data Memory (DM)'), (2873, 'Address Space in a Slice'), (2881, 'Optimizing DMA Performance'),
    (2897, 'Bank Starvation'), (2919, 'Cumulative Bank Access Constraint'), (2942, 'Scratchpad Memory (SPM)'),
    (2948, 'High-Bandwidth Memory (HBM)'), (2959, 'Address Space in a Chip'), (2979, 'Peak Bandwidth'),
    (2982, 'Misaligned Access'), (2986, 'Bank Conflict'), (2991, 'Column-to-Column Delay'),
    (3046, 'Execution Contexts'), (3059, 'Interface'), (3090, 'Architecture'), (3092, 'Router Decision Process'),
    (3120, 'Forwarding'), (3139, 'Broadcast01'), (3160, 'Example'), (3205, 'Cycle Estimation'),
    (3210, 'Ring Structure'), (3218, 'Broadcast1'), (3235, 'Example'), (3255, 'Transpose'), (3264, 'Example'),
    (3285, 'InterTranspose'), (3304, 'Example'), (3332, 'Custom Topologies'), (3335, 'Configuration Overhead'),
    (3338, 'Supported Transformation Patterns'), (3416, 'Understanding the Bitmap Pattern'), (3483, 'Constraints'),
    (3485, 'Why Switching Constraints Exist'), (3496, 'Regular Topology Constraints'),
    (3503, 'Custom Topology Constraints'), (3520, 'Performance'), (3522, 'Cycle Estimation'),
    (3530, 'Parallelism Across Rings'), (3533, 'Custom Topology Overhead'), (3538, 'Communication Cost'),
    (3545, 'Interface'), (3560, 'Packet Normalization'), (3604, 'Pipeline Position'), (3619, 'Examples'),
    (3620, 'Single-flit packet (identity)'), (3636, 'Sub-flit packet (padding added)'),
    (3653, 'Multi-flit packet (outer absorbed into Time)'), (3674, 'Einsum'), (3684, 'Overview'),
    (3708, 'Case Studies'), (3709, 'Batched MatMul'), (3712, 'K contraction by Reducer'),
    (3720, 'V - vectorized mapping'), (3728, 'N x M - tiled mapping'), (3739, 'Filter-Stride 1'),
    (3746, 'Filter-Stride 2'), (3760, 'Dilation 2'), (3768, 'Filter-Stride 2, Dilation 2'), (3777, 'Constraints'),
    (3783, 'Performance'), (3799, 'Overview'), (3880, 'Interface'), (3900, 'Architecture'),
    (3901, 'Conceptual Operation'), (3912, 'Flit Buffer'), (3929, 'Rows Broadcast'), (3937, 'Time Broadcast'),
    (3947, 'Specifications'), (3955, 'Performance'), (3958, 'Examples'), (4010, 'Time Broadcast'),
    (4040, 'Interface'), (4074, 'Architecture'), (4075, 'Conceptual Operation'), (4086, 'SRAM'),
    (4098, 'TRF Read Mechanism'), (4112, 'SRAM-to-TRF (StoTRF)'), (4115, 'TRF Memory Layout'),
    (4149, 'Specifications'), (4150, 'TRF Address Modes'), (4160, 'Rows'), (4169, 'Sequencer Configuration'),
    (4178, 'Performance'), (4179, 'TRF Cache'), (4180, 'Purpose'), (4182, 'Structure'), (4190, 'Operation'),
    (4193, 'Bank Conflict Priority'), (4200, 'Examples'), (4201, 'Basic Weight Broadcasting (MatMul)'),
    (4299, 'Interface'), (4332, 'Examples'), (4333, 'Matrix Multiplication'), (4360, 'Full Tensor Reduction'),
    (4377, 'Architecture'), (4384, 'Spatial Reduction'), (4406, 'Temporal Reduction'), (4435, 'Interleaved Mode'),
    (4451, 'Example'), (4482, 'Sequential Mode'), (4493, 'Example'), (4528, 'Constraints'), (4541, 'Performance'),
    (4560, 'Interface'), (4583, 'Quick Reference'), (4589, 'Examples'), (4590, 'ReLU Activation'),
    (4608, 'Inter-Slice Reduce'), (4625, 'Ordering'), (4631, 'Constraints'), (4633, 'Intra-Slice Block'),
    (4637, 'Interface'), (4679, 'Architecture'), (4719, 'Quick Reference'), (4720, 'Entry and Transition'),
    (4729, 'Stages'), (4752, 'Examples'), (4792, 'Stage Details'), (5052, 'Operands'), (5063, 'VRF Input'),
    (5082, 'Argument Modes'), (5154, 'Two-Group Mode'), (5209, 'Float Pipeline with Zip'),
    (5229, 'Per-Group Preprocessing'), (5250, 'Constraints'), (5260, 'ALU Conflict Example'), (5270, 'Performance'),
    (5271, 'Throughput'), (5274, 'Pipeline Latency'), (5278, 'Intra-Slice Reduce'), (5284, 'Interface'),
    (5362, 'Mechanism'), (5363, 'Conceptual Operation'), (5383, 'Architectural Parameters'),
    (5390, 'Supported Operations'), (5391, 'Integer Operations (IntraSliceReduceOpI32)'), (5403, 'Examples'),
    (5404, 'Reduce in Time (i32 Saturating Add)'), (5427, 'Reduce in Packet Only (f32 Add)'), (5498, 'Constraints'),
    (5499, 'Accumulator Slot Limit'), (5544, 'Padding Strategy'), (5566, 'Performance'), (5567, 'Throughput'),
    (5569, 'Latency'), (5575, 'Overview'), (5584, 'Quick Reference'), (5598, 'Two Modes'),
    (5604, 'How R Should Be Distributed'), (5810, 'Time Only'), (5837, 'Non-Outer/Inner Ordering (Not Supported)'),
    (5943, 'Packet Only'), (6168, 'Data Model'), (6180, 'Valid Count Formula'), (6197, 'VCG Configuration'),
    (6210, 'Sequencer'), (6212, 'Counter Structure'), (6233, 'Original Dimensions'), (6250, 'Validity Decision'),
    (6442, 'What Patterns Are Expressible'), (6445, 'Why Limitations Arise'), (6460, 'Single-Axis Scenarios'),
    (6548, 'Multiple Axes'), (6556, 'Summary'), (6583, 'Inter-Slice Block'), (6586, 'Interface'),
    (6605, 'Quick Reference'), (6611, 'Operations'), (6612, 'Integer Operations (InterSliceReduceOpI32)'),
    (6626, 'Output Mapping Rule'), (6635, 'Examples'), (6636, 'Dummy Replacement'),
    (6654, 'Broadcast Into a New Slice Axis'), (6673, 'Promotion from Time into SliceOut'),
    (6713, 'Intra-Slice Then Inter-Slice Reduce with AddSat'), (6732, 'Constraints'), (6738, 'Performance'),
    (6750, 'Interaction With Other Pipelines'), (6758, 'Interface'), (6774, 'Precision Lowering'),
    (6780, 'Packet Transformation'), (6785, 'Examples'), (6786, 'Single-flit packet'), (6803, 'Padded input packet'),
    (6824, 'Interface'), (6840, 'Architecture'), (6841, 'Conceptual Operation'), (6857, 'Specifications'),
    (6858, 'Internal Buffer Architecture'), (6864, 'Input Bus Constraints'), (6876, 'Constraints'),
    (6887, 'Performance'), (6888, 'Double Buffering'), (6899, 'Cycle Calculation'), (6913, 'Examples'),
    (6946, 'Small Matrix Transpose'), (7045, 'Operation Order'), (7055, 'Memory Allocation'),
    (7057, 'Hardware Resources'), (7094, 'When to Use Tiling'), (7099, 'Basic Tiling Pattern'),
    (7122, 'Memory Layout'), (7125, 'Tile Size Selection'), (7132, 'Accumulation Strategy'),
    (7144, 'Performance Considerations'), (7153, 'When to Use Split Reduce'), (7196, 'Step-by-Step Execution'),
    (7240, 'Hardware Mapping'), (7248, 'Performance Analysis'), (7257, 'Problem Setup'), (7261, 'Execution Pattern'),
    (7276, 'Problem Setup'), (7280, 'Execution Pattern'), (7294, 'Problem Setup'), (7298, 'Execution Pattern'),
    (7314, 'Comparison with Other Reduction Methods'), (7335, 'Implementation Methods'),
    (7340, 'Two-Instance Optimization'), (7348, 'Performance Considerations'), (7349, 'Cycle Analysis'),
    (7355, 'Memory Bandwidth'), (7360, 'Comparison to Alternatives'), (7368, 'Constraints and Limitations'),
    (7369, 'Hardware Constraints'), (7373, 'When Split Reduce Is Not Optimal'), (7377, 'Best Practices'),
    (7387, 'ReduceScatter'), (7420, 'Initial State'), (7503, 'AllReduce'), (7532, 'Initial State (T0)'),
    (7603, 'Implementation Methods for Each Operation'), (7605, 'Asymmetric Slice'), (7607, 'Shuffle'),
    (7609, 'Tensor Addition'), (7984, 'Model Parameters'), (7992, 'Prefill Phase'), (8215, 'V)'),
    (8225, 'Decode Phase'), (8420, 'Prefill vs Decode Phase Comparison'), (8448, 'MoE Structure'),
    (8454, 'Model Parameters'), (8461, 'MoE Processing Steps'), (8515, 'MoE Implementation on TCP'),
    (8532, 'Blockunits'), (8628, 'Mask Generation (One-Hot)'), (8632, 'Histogram'), (8636, 'Block calculation'),
    (8641, 'Global offset Calculation'), (8646, 'Local Offset Calculation'), (8650, 'Expert ID expansion'),
    (8660, 'Address Synthesis'),
)

_CHAPTER_LINES = [k for k, _ in CHAPTERS]
_SUB_LINES = [k for k, _ in SUBSECTIONS]
#: The manual's last line.
LAST_LINE = 8720


def section(line: int) -> str | None:
    """The title of the manual's section holding ``line`` ("Chapter › Heading"), or ``None`` outside the manual."""
    if not 1 <= line <= LAST_LINE:
        return None
    c = bisect.bisect_right(_CHAPTER_LINES, line) - 1
    chapter_line, title = CHAPTERS[c]
    s = bisect.bisect_right(_SUB_LINES, line) - 1
    if s >= 0 and SUBSECTIONS[s][0] > chapter_line and SUBSECTIONS[s][1] != title:
        return f"{title} › {SUBSECTIONS[s][1]}"
    return title


_CITATION = re.compile(r"(?:\bmanual\s+)?(?<![\w§])L(\d{1,4})(?:\s*[–-]\s*L?(\d{1,4}))?\b")


def cite(text: str) -> str:
    """``text`` with each bare manual citation (``L1639–1659``, ``manual L1162``) given its section's title,
    so a reader can find it by the manual's headings: ``manual §Sequencer › Insufficient Input, L1639–1659``.

    A citation already preceded by a section name (``§Sequencer, L1639``) is left as it is.
    """

    def named(found: re.Match[str]) -> str:
        before = text[:found.start()]
        opened = max(before.rfind(c) for c in "([;|\n")
        if "§" in before[opened + 1:]:
            return found.group(0)
        first = int(found.group(1))
        title = section(first)
        if title is None:
            return found.group(0)
        span = f"L{first}" + (f"–{found.group(2)}" if found.group(2) else "")
        return f"manual §{title}, {span}"

    return _CITATION.sub(named, text)


def cite_markdown(text: str) -> str:
    """:func:`cite` over Markdown prose: fenced and indented code and inline code spans are left as they are."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            parts = line.split("`")
            line = "`".join(cite(p) if k % 2 == 0 else p for k, p in enumerate(parts))
        out.append(line)
    return "\n".join(out)


def page() -> str:
    """The Markdown page ``docs/manual.md``: how citations read and where each chapter of the manual starts."""
    lines = ["# Citing the manual", "",
             "<!-- generated by `python -m visa.catalogue --catalogue`; do not edit -->", "",
             "visa follows the Virtual ISA manual for FuriosaAI's RNGD. Docstrings, messages and these pages cite it",
             "by line (`L1639`, `L1639–1659`) in the plain-text manual; a message also names the section the line is",
             "in, by the manual's own headings: `manual §Sequencer › Insufficient Input, L1639–1659` is the heading",
             '"Insufficient Input" under "Sequencer". Search the manual for the heading to find the text.', "",
             "| chapter or section | first line | last line |", "|---|---|---|"]
    for k, (line, title) in enumerate(CHAPTERS):
        last = CHAPTERS[k + 1][0] - 1 if k + 1 < len(CHAPTERS) else LAST_LINE
        lines.append(f"| {title} | L{line} | L{last} |")
    return "\n".join(lines)
