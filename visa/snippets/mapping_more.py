"""Snippets for the rest of the mapping layer: index keys, ``map`` and ``maps`` of linear combinations, the size and
depth limits of built mappings, skews and ``remove_axis`` (manual "Mapping Expressions", L582–1016)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["MAPPING_MORE"]

_AB = "from visa import axes, m\n\naxes(A=12, B=4)"

# a skewed layout B' = B - A in HBM (L986-1003)
_SKEWED = """from visa import Context, HostTensor, axes, i32, m, skew

axes(A=4, B=8)
skew("B'", "B - A")
ctx = Context.acquire()
skewed = HostTensor.zeros(i32, m["A, B"]).to_hbm(m["1"], m["A, B' = 8"], ctx.pdma, 1 << 20)"""
_SKEWED_DM = """from visa import Context, DmTensor, axes, i32, m, skew

axes(A=4, B=8)
skew("B'", "B - A")
ctx = Context.acquire()"""
# nine axes in one slice's element: a fetch in another order than the buffer's needs a sequencer entry per axis
_NINE = """from visa import Context, DmTensor, axes, i32, m

axes(A=8, B=2, C=2, D=2, E=2, F=2, G=2, H=2, J=2)
ctx = Context.acquire()
d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["J, H, G, F, E, D, C, B, A"], 0)
d.view().memset(0, ctx.sub)"""

# one axis name declared twice with two sizes (a notebook cell run again with another size)
_TWICE = """from visa import AxisSet, Context, DmTensor, i32

old = AxisSet(A=2048).m
new = AxisSet(A=4096).m
ctx = Context.acquire()
d = DmTensor(ctx, i32, old["1"], old["1 # 2"], old["A / 8 # 256"], old["A % 8"], 0)
d.view().memset(0, ctx.sub)"""

#: site key → the failing and the fixed program.
MAPPING_MORE: dict[str, Snippet] = {
    "core._index_key MappingSyntaxError: is not an index": module(
        "from visa import axes, i, m\n\naxes(A=12)", 'at = i({"A // 2": 1})', 'at = i({"A / 2": 1})'),
    "core.Mapping.map RelationError: a linear combination maps": module(
        _AB, 'held = m["$(A : 4, B : 3)"].map(5)', 'held = m["$(A : 4, B : 3)"].maps(5)   # every index at 5'),
    "core.int_array RangeError: parameter holds a value": module(
        _AB, 'ev = m["A"].evaluate([1 << 64])', 'ev = m["A"].evaluate([11])'),
    "core._lin_options RelationError: maps would look at": module(
        "from visa import axes, m\n\naxes(A=1 << 17, B=1 << 17)",
        'held = m["$(A : 1, B : 1)"].maps(100_000)   # 2 x 100 001 term positions to search',
        'ev = m["A"].evaluate([100_000]), m["B"].evaluate([0])   # each term on its own'),
    "core._lin_options RelationError: position of the combination": module(
        "from visa import axes, m\n\naxes(A=257, B=257, C=1024)",
        'held = m["$(A : 1, B : 1, C : 1)"].maps(600)   # 257 x 257 ways to split 600 in three',
        'held = m["$(A : 1, B : 1, C : 1)"].maps(10)'),
    "syntax.check_node MappingSyntaxError: the mapping nests levels": module(
        "from visa import axes, m\nfrom visa.mapping import pair_of\n\naxes(A=1)",
        'rows = pair_of(*[m["A"]] * 200)   # 200 levels of pairs', 'rows = pair_of(*[m["A"]] * 100)'),
    "syntax.check_node MappingSyntaxError: the mapping has size": module(
        "from visa import axes, m\nfrom visa.mapping import pair_of\n\naxes(A=1 << 30, B=1 << 30)",
        'both = pair_of(m["A"], m["B"])   # 2**60 positions', 'both = pair_of(m["A / 1024"], m["B / 1024"])'),
    "axes.AxisSet.skew AxisDeclarationError: the skew shifts by": module(
        "from visa import AxisSet\n\nax = AxisSet(A=1 << 40, B=1 << 30)",
        'ax.skew("B\'", "B - 1048577*A")   # shifts by up to 2**60',
        'ax.skew("B\'", "B - A")   # the coefficient acts modulo B\'s size anyway'),
    "inspect.remove_axis LayoutError: shares a digit with": module(
        "from visa import axes, m, skew\n\naxes(A=4, B=8)\nskew(\"B'\", \"B - A\")",
        'rows = m["A, B\'"].remove_axis("A")   # B\' = B - A mixes A into each digit',
        'rows = m["A, B"].remove_axis("A")'),
    # the sequencer (manual §Sequencer, L1336-1423, L1630)
    "sequencer._skew_mismatch IncompatibleShapesError: one side holds the": module(
        _SKEWED, 'dm = skewed.to_dm(m["1 # 2"], m["1 # 256"], m["A, B"], ctx.tdma, 0)   # unskewed in DM',
        'dm = skewed.to_dm(m["1 # 2"], m["1 # 256"], m["A, B\' = 8"], ctx.tdma, 0)   # the same skew'),
    "sequencer._refuse_unset_skew IncompatibleShapesError: the buffer holds the": module(
        _SKEWED_DM, 'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["B\' = 8"], 0)   # B\' without A\n'
        'd.view().memset(0, ctx.sub)\nrows = ctx.main.begin(d.view()).fetch(i32, m["1"], m["B\' = 8"])',
        'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A, B\' = 8"], 0)   # A beside B\'\n'
        'd.view().memset(0, ctx.sub)\nrows = ctx.main.begin(d.view()).fetch(i32, m["A"], m["B\' = 8"])'),
    "sequencer._finish HardwareLimitError: the sequencer needs entries": module(
        _NINE, 'rows = ctx.main.begin(d.view()).fetch(i32, m["B, C, D, E, F, G, H, J"], m["A"])   # 9 entries',
        'rows = ctx.main.begin(d.view()).fetch(i32, m["J, H, G, F, E, D, C, B"], m["A"])   # merged into one'),
    "sequencer._dim_pieces LayoutError: axis has size in": module(
        _TWICE, 'rows = ctx.main.begin(d.view()).fetch(i32, new["1"], new["A % 8"])   # A of 4096, d\'s A of 2048',
        'rows = ctx.main.begin(d.view()).fetch(i32, old["1"], old["A % 8"])   # the axes d was laid out with'),
}
