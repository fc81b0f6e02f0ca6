"""The manual's constructs, each with its status in visa and the tests that check it: ``docs/coverage.md``.

A *construct* is a heading of the manual (``visa.manual.SUBSECTIONS``) that states something a kernel writer can
use or a rule the hardware imposes.  The book's front matter (installation, licence, …) is no construct; the
sub-headings that only hold examples, performance remarks or architecture prose (``Examples``, ``Performance``,
``Overview``, …, :data:`FOLD`) fold into the construct before them, whose line range they extend.

A construct's **tests** are the test functions of ``tests/`` whose name, decorators or body cite a manual line
(``L1234``, ``L1234–1260``, ``L1234_L1260``) inside its range, plus those :data:`TESTS` names for a construct its
tests cite by another line.  Its **status**:

- ``working`` — implemented, and at least one test checks it;
- ``partial`` / ``missing`` — :data:`STATUS`, with the reason (and the issue that owns it, where one does);
- ``manual TODO`` — the manual leaves it unwritten (a TODO or a work-in-progress note);
- ``prose`` — :data:`PROSE`: explanation with no rule of its own (what it explains is covered by the constructs
  around it); not counted.

A construct with no test that is in none of these tables is reported as ``untested`` (``--check`` fails on one).

``python tools/coverage.py`` rewrites the page; ``--check`` fails when the page is stale (a construct or a status
differs: the test lists may lag behind tests added later), a named test does not exist, or a construct is
untested (``tests/test_coverage.py`` runs it).
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from visa.manual import CHAPTERS, SUBSECTIONS  # noqa: E402

PAGE = ROOT / "docs" / "coverage.md"

#: The book's front matter: no construct.
META = frozenset(
    {"Installation", "Build and Test", "Development Tools", "Book Organization", "License", "Further Reading"}
)
#: Sub-headings that fold into the construct before them (examples, performance notes, architecture prose).
FOLD = frozenset(
    {
        "Example",
        "Examples",
        "Performance",
        "Overview",
        "Architecture",
        "Conceptual Operation",
        "Purpose",
        "Structure",
        "Operation",
        "Quick Reference",
        "Specifications",
        "Mechanism",
        "Problem Setup",
        "Step-by-Step Execution",
        "Hardware Mapping",
        "Case Studies",
        "Why Switching Constraints Exist",
        "Why Limitations Arise",
        "When to Use Tiling",
        "When Split Reduce Is Not Optimal",
        "Best Practices",
        "Comparison to Alternatives",
        "Performance Considerations",
        "Throughput",
        "Pipeline Latency",
        "Interaction With Other Pipelines",
        "Supported Operations",
        "Constraints and Limitations",
    }
)

#: Constructs whose text states no rule of its own (by first line).
PROSE: dict[int, str] = {
    98: "the tensor as a function of its index: the notion every mapping test uses",
    109: "tensor contraction in general: the Contraction Engine's constructs below",
    142: "the type-level hierarchy, introduced; Memory and Stream below",
    540: "layout and performance, an introduction to mappings",
    552: "a picture of one layout",
    557: "a picture of one layout",
    572: "why mappings are declared: the Mapping Expressions constructs",
    985: "a heading (Skewed Axis follows)",
    1424: "a heading (the configuration examples follow)",
    1810: "a heading (Padding Packets, Interleaving Tensors follow)",
    1871: "how sequencer and adapter divide the work: the adapter stages below",
    2132: "a pointer to Memory Performance",
    2134: "adapter latencies in words (cast latency: Type Casting)",
    2143: "a pointer to the Fetch/Switch interaction",
    2341: "advice on commit bandwidth",
    2347: "truncation costs nothing (no figure)",
    2405: "a heading (Parameters follow)",
    2505: "a heading (the two syntaxes follow)",
    2811: "a summary of the bandwidths of Memory Performance",
    3483: "a heading (the constraint kinds follow)",
    3530: "rings in parallel: the cycle formula (Cycle Estimation)",
    3538: "communication cost in words",
    3674: "einsum in general: the case studies below",
    3709: "a heading (the three mappings follow)",
    4086: "a diagram of the SRAM → TRF path",
    4633: "a heading of the intra-slice block",
    5390: "a heading (the operator tables follow)",
    5498: "a heading (Accumulator Slot Limit follows)",
    6210: "a heading (Counter Structure follows)",
    6442: "the VCG's expressiveness explained (the formula's constructs test it)",
    6583: "a heading of the inter-slice block",
    7355: "split reduce's bandwidth in words",
    7368: "a heading (Hardware Constraints follow)",
    7603: "a heading (the methods follow)",
    8420: "a comparison table of prefill and decode",
    8448: "the MoE structure in words",
    8461: "the MoE processing steps in words (their TCP implementation below)",
    8515: "the design philosophy of the TCP implementation",
}

#: Constructs the manual leaves unwritten (by first line).
TODO: dict[int, str] = {
    526: '"work in progress" (examples/tiled_gemm.py and visa.kernels.Gemm tile GEMMs anyway)',
    530: '"work in progress" (visa.kernels.Attention runs attention anyway)',
    1004: '"TODO: Document indirect sequencing" (refused, naming L1004; gathers use the IndirectLoop, L1684)',
    7122: '"Warning: Describe how tiles are laid out"',
    7125: '"Warning: Explain constraints for choosing tile sizes"',
}

#: Constructs implemented in part, or not at all: (status, what is left and why).
STATUS: dict[int, tuple[str, str]] = {
    3335: (
        "partial",
        "custom topologies run; the bitmap write's preemption of DMA and sub context has no figure "
        "(L3336) and is not costed",
    ),
    3533: ("partial", "as Configuration Overhead: no figure, not costed"),
    4193: (
        "partial",
        "the TRF cache's misses are counted (L4177–4199); the read-over-write priority that stalls a "
        "concurrent StoTRF is not scheduled (no figure)",
    ),
    7369: (
        "partial",
        "four-way interleaving (I = 4, L7312) is refused: at most two tensors interleave (L1850); a "
        "tree of pairs does it",
    ),
}

#: Tests that check a construct but cite other lines (by the construct's first line): ``file::function``.
TESTS: dict[int, tuple[str, ...]] = {
    587: ("tests/mapping/test_manual_mappings.py::test_symbol_maps_linearly_L634",),
    596: ("tests/mapping/test_manual_mappings.py::test_symbol_maps_linearly_L634",),
    1226: ("tests/mapping/test_sequencer.py::test_read_and_write_configs_are_identical_L1403",),
    1426: ("tests/mapping/test_sequencer.py::test_manual_configurations",),  # its case of L1440
    1461: ("tests/mapping/test_sequencer.py::test_manual_configurations",),  # L1474
    1497: ("tests/mapping/test_sequencer.py::test_manual_configurations",),  # L1510
    2320: ("tests/engines/test_commit.py::test_strides_are_multiples_of_8_bytes_L2338",),
    2350: ("tests/test_schedule.py::test_a_bank_hammering_pass_occupies_the_dma_engines_with_a_warning",),
    2407: ("tests/engines/test_dma.py::test_d1_hbm_to_dm_l1184",),
    2413: ("tests/engines/test_dma.py::test_d1_hbm_to_dm_l1184",),
    2826: (
        "tests/engines/test_dma.py::test_more_than_eight_loops_become_commands_l1630",  # 500 per command
        "tests/engines/test_collective.py::test_shuffle_cycles_startup_plus_pcie_l2472_l2845",
    ),
    2942: (
        "tests/engines/test_gather_spm.py::test_spm_round_trip_and_gather_with_spm_indices",
        "tests/engines/test_gather_spm.py::test_spm_placement_rules",  # 4 KiB per PE (API.md §7)
        "tests/engines/test_device_scalars.py::test_a_guard_from_spm_costs_a_register_read_and_from_hbm_a_dma_read",
    ),
    2507: ("tests/engines/test_heterogeneous.py::test_each_dmn_moves_its_part_with_its_own_stream_L2482_L2504",),
    3059: ("tests/engines/test_switch.py::test_switch_config_spelling",),
    3332: ("tests/engines/test_switch.py::test_sw8_custom_permutation_ring_256_cycles_4096_L3342_L3380",),
    3503: (
        "tests/engines/test_switch.py::test_sw11_order_violation_is_refused_L3459_L3470",
        "tests/engines/test_switch.py::test_sw12_innermost_violation_is_refused_L3471_L3482",
    ),
    3620: ("tests/engines/test_collect.py::test_normalisation_L3560_L3618",),  # its case of L3566
    3712: ("tests/engines/test_contraction.py::test_al1_batched_matmul_L3816_L3873",),  # K in Time, N on Rows
    3720: ("tests/engines/test_contraction.py::test_al4_time_broadcast_L4010_L4033",),  # V in Time
    3929: ("tests/engines/test_contraction.py::test_al2_collect_flits_2_rows_broadcast_L3961_L3985",),
    4112: ("tests/engines/test_collect.py::test_to_trf_row_and_element_L4210_L4218",),
    4560: ("tests/engines/vector/test_vector_stages.py::test_t1_relu_after_contraction_l4590",),
    4625: (
        "tests/engines/vector/test_vector_inter.py::test_t48_inter_first_then_intra_l6698",
        "tests/engines/vector/test_vector_inter.py::test_t49_intra_first_then_inter_l6716",
    ),
    4631: ("tests/engines/vector/test_vector_stages.py::test_t3_staged_pipeline_l4657",),
    4720: ("tests/engines/vector/test_vector_stages.py::test_t3_staged_pipeline_l4657",),
    5278: ("tests/engines/vector/test_vector_intra.py::test_t21_reduce_in_time_addsat_l5405",),
    5391: (
        "tests/engines/vector/test_vector_intra.py::test_t21_reduce_in_time_addsat_l5405",
        "tests/engines/vector/test_vector_intra.py::test_t23_reduce_time_and_packet_max_l5453",
    ),
    5598: (
        "tests/engines/vector/test_vector_intra.py::test_t21_reduce_in_time_addsat_l5405",
        "tests/engines/vector/test_vector_intra.py::test_t22_reduce_in_packet_tree_l5429",
    ),
    6168: ("tests/engines/vector/test_vector_intra.py::test_t38_sequencer_counters_l6217",),
    6180: (
        "tests/engines/vector/test_vector_intra.py::test_t39_dim_indices_l6240",
        "tests/engines/vector/test_vector_intra.py::test_t42_full_hcw_heatmap_l6357",
    ),
    6197: ("tests/engines/vector/test_vector_intra.py::test_t38_sequencer_counters_l6217",),
    6548: ("tests/engines/vector/test_vector_intra.py::test_t44_two_counters_on_packet_dim_l6508",),
    6626: ("tests/engines/vector/test_vector_inter.py::test_e19_inter_rules_l6732",),
    6758: ("tests/engines/test_cast.py::test_t50_single_flit_i32_to_i8_L6786_L6802",),
    6864: ("tests/engines/test_transpose.py::test_manual_examples",),
    7099: ("tests/kernels/test_tiled_gemm.py::test_tiled_gemm_double_buffered_L7089_L7150",),
    8628: ("tests/kernels/test_moe.py::test_routing_exact_against_numpy_l8540_l8663",),
    8632: ("tests/kernels/test_moe.py::test_routing_exact_against_numpy_l8540_l8663",),
    8636: ("tests/kernels/test_moe.py::test_wide_routing_exact_against_numpy_l8459",),
    8646: ("tests/kernels/test_moe.py::test_routing_exact_against_numpy_l8540_l8663",),
    8650: ("tests/kernels/test_moe.py::test_routing_at_e_128_k_8_l8459_l8460",),
}

_CITE = re.compile(r"L(\d{2,4})(?:\s*[–_-]\s*L?(\d{2,4}))?", re.IGNORECASE)


def constructs() -> list[tuple[int, int, str, str]]:
    """``(first line, last line, title, chapter)`` of every construct, in the manual's order."""
    heads = sorted(SUBSECTIONS)
    chapters = sorted(CHAPTERS)
    chapter_starts = [s for s, _ in chapters]
    kept: list[tuple[int, str]] = []
    for start, title in heads:
        if title in META or (title in FOLD and kept):
            continue
        kept.append((start, title))
    last_line = 8720
    out = []
    for k, (start, title) in enumerate(kept):
        end = kept[k + 1][0] - 1 if k + 1 < len(kept) else last_line
        c = bisect.bisect_right(chapter_starts, start) - 1
        out.append((start, end, title, chapters[c][1] if c >= 0 else ""))
    return out


def citing_tests() -> dict[str, set[tuple[int, int]]]:
    """Every test function (``file::name``) and the manual line ranges it cites."""
    out: dict[str, set[tuple[int, int]]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        lines = text.split("\n")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
                continue
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            body = "\n".join(lines[first - 1 : node.end_lineno])
            spans = set()
            for m in _CITE.finditer(body):
                a = int(m.group(1))
                b = int(m.group(2) or a)
                spans.add((a, b if a <= b <= a + 120 else a))  # (a wider span names a chapter, not a rule)
            out[f"{path.relative_to(ROOT)}::{node.name}"] = spans
    return out


def table() -> tuple[str, Counter[str], list[str]]:
    """The page's text, the status counts and the problems (untested constructs, unknown tests)."""
    tests = citing_tests()
    problems = [
        f"{name} (named in TESTS) is no test function"
        for names in TESTS.values()
        for name in names
        if name not in tests
    ]
    rows: list[tuple[str, str, str, str, str]] = []
    counts: Counter[str] = Counter()
    for start, end, title, chapter in constructs():
        cited = sorted(n for n, spans in tests.items() if any(a <= end and b >= start for a, b in spans))
        named = [n for n in TESTS.get(start, ()) if n not in cited]
        found = cited + named
        if start in PROSE:
            status, note = "prose", PROSE[start]
        elif start in TODO:
            status, note = "manual TODO", TODO[start]
        elif start in STATUS:
            status, note = STATUS[start]
        elif found:
            status, note = "working", ""
        else:
            status, note = "untested", ""
            problems.append(f"L{start} {title}: no test cites L{start}–{end}")
        if status != "prose":
            counts[status] += 1
        shown = ", ".join(f"`{n.split('::')[1]}`" for n in found[:3]) + (
            f" (+{len(found) - 3})" if len(found) > 3 else ""
        )
        rows.append((chapter, f"{title}", f"L{start}–{end}", status, (note + ("; " if note and shown else "") + shown)))
    total = sum(counts.values())
    lines = [
        "# The manual's constructs: status and tests",
        "",
        "<!-- generated by `python tools/coverage.py`; do not edit -->",
        "",
        "Every construct of the manual (a heading that states something a kernel writer can use or a rule the "
        "hardware imposes; the rules of the count are `tools/coverage.py`'s docstring), its status in visa and "
        "the tests that check it (test functions citing a line of its range).",
        "",
        f"**{total} constructs: "
        + ", ".join(f"{counts[s]} {s}" for s in ("working", "partial", "missing", "manual TODO") if counts[s])
        + "** — counted by the rules of `tools/coverage.py`.  Issue 27 started from an audit's 186 working, 22 "
        "partial and 8 missing of 216, counted by other rules (its list is not in the repository), so the "
        "numbers do not compare one to one; the items issue 27 names are working now (docs/manual-notes.md, "
        '"issue 27").',
        "",
    ]
    current = None
    for chapter, title, span, status, note in rows:
        if chapter != current:
            lines += ["", f"## {chapter}", "", "| construct | lines | status | tests / notes |", "|---|---|---|---|"]
            current = chapter
        lines.append(f"| {title} | {span} | {status} | {note} |")
    return "\n".join(lines) + "\n", counts, problems


def skeleton(text: str) -> list[str]:
    """The page without its test lists: the constructs, their lines and statuses, the count.  A test added
    elsewhere that cites a construct's line changes only the list, so the page is stale only when a status is."""
    return [line.rsplit(" | ", 1)[0] if line.startswith("| ") else line for line in text.splitlines()]


def main() -> int:
    text, counts, problems = table()
    if "--check" in sys.argv[1:]:
        stale = not PAGE.exists() or skeleton(PAGE.read_text()) != skeleton(text)
        for p in problems:
            print(p)
        if stale:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python tools/coverage.py")
        return 1 if problems or stale else 0
    PAGE.write_text(text)
    print(f"{PAGE.relative_to(ROOT)}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for p in problems:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
