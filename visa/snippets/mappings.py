"""Snippets for axes and mappings (the V1xxx family: manual "Mapping Expressions", L582–1016), and for
:mod:`visa.tune`'s parameter grids."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["MAPPINGS"]

_AXES = "from visa import axes, m\n\naxes(A=12, B=4)"
_SET = "from visa import AxisSet"
_SKEW = "from visa import AxisSet\n\nax = AxisSet(A=4, B=8)"
_SKEWED = 'ax.skew("B\'", "B - A")   # B\' = B - A, a derived axis of B\'s size (L986-1003)'

_GRID = "from visa.tune import grid"

#: site key → the failing and the fixed program.
MAPPINGS: dict[str, Snippet] = {
    "axes.AxisSet.size UnknownAxisError: axis is not declared": module(
        "from visa import axes, m", 'axes(A=8)\nsize = m["A, B"].size', 'axes(A=8, B=4)\nsize = m["A, B"].size'),
    "syntax._size_error MappingSyntaxError: has size which does": module(
        _AXES, 'tile = m["A % 5"]   # 5 does not divide 12', 'tile = m["A % 4"]'),
    "syntax._Parser.err MappingSyntaxError": module(
        _AXES, 'padded = m["A # 8"]   # padding to 8 is smaller than A = 12', 'padded = m["A # 16"]'),
    "syntax.parse MappingSyntaxError: mapping text must be": module(
        _AXES, "both = m[12]", 'both = m["A, B"]'),
    "core.Mapping.stride MappingSyntaxError: stride size must divide": module(
        _AXES, 'outer = m["A"].stride(5)', 'outer = m["A"].stride(4)'),
    "core.Mapping.modulo MappingSyntaxError: modulo size must divide": module(
        _AXES, 'inner = m["A"].modulo(5)', 'inner = m["A"].modulo(4)'),
    "core.Mapping.pad MappingSyntaxError: padding to is smaller": module(
        _AXES, 'padded = m["A"].pad(8)', 'padded = m["A"].pad(16)'),
    "core.Mapping.resize MappingSyntaxError: resize to is outside": module(
        _AXES, 'head = m["A"].resize(20)', 'head = m["A"].resize(8)'),
    "core.pair_of MappingSyntaxError: pair_of needs at least": module(
        "from visa import axes, m\nfrom visa.mapping import pair_of\n\naxes(A=4)",
        "pair = pair_of()", 'pair = pair_of(m["A"])'),
    "core._parse_cached.resolve UnknownAxisError: escape": module(
        _AXES, 'rows = m["{Tile}, B"]   # Tile is not defined yet', 'Tile = m["A"]\nrows = m["{Tile}, B"]'),
    "core.module_mapping UnknownAxisError: module declares no axes": module(
        "from visa import axes, m", 'a = m["A"]', 'axes(A=8)\na = m["A"]'),
    "axes.AxisSet._declare_one AxisDeclarationError: is not an axis": module(
        _SET, 'ax = AxisSet(**{"1A": 8})', "ax = AxisSet(A1=8)"),
    "axes.AxisSet._declare_one AxisDeclarationError: axis needs an integer": module(
        _SET, 'ax = AxisSet(A="8")', "ax = AxisSet(A=8)"),
    "axes.AxisSet._declare_one AxisDeclarationError: axis must have a": module(
        _SET, "ax = AxisSet(A=0)", "ax = AxisSet(A=1)"),
    "axes.AxisSet._declare_one AxisDeclarationError: axis is already declared": module(
        _SET, "ax = AxisSet(A=8)\nax.declare(A=4)", "ax = AxisSet(A=8)\nax.declare(B=4)"),
    "axes.AxisSet._declare_one AxisDeclarationError: axis has size more": module(
        _SET, "ax = AxisSet(A=1 << 49)   # past 2**48", "ax = AxisSet(A=1 << 48)"),
    "core.Mapping.pad MappingSyntaxError: padding to is more": module(
        _AXES, 'padded = m["A"].pad(1 << 49)', 'padded = m["A"].pad(1 << 48)'),
    "axes.AxisSet.skew MappingSyntaxError: the coefficient in is": module(
        _SKEW, 'ax.skew("B\'", "B - 1000000000000000*A")', 'ax.skew("B\'", "B - 8*A")'),
    "syntax._Parser.primary UnsupportedFeatureError: indirect sequencing is a": module(
        _AXES, 'rows = m["indirect"]   # the manual defines no indirect mapping (L1004)',
        'rows = m["A"]   # gather rows with a DMA instead (x.gather(...), L1684-1688)'),
    "axes.AxisSet.skew AxisDeclarationError: is not an axis": module(_SKEW, 'ax.skew("1B", "B - A")', _SKEWED),
    "axes.AxisSet.skew AxisDeclarationError: axis is already declared": module(
        _SKEW, 'ax.skew("B", "B - A")', _SKEWED),
    "axes.AxisSet.skew MappingSyntaxError: cannot read in the": module(_SKEW, 'ax.skew("B\'", "B - A / 2")', _SKEWED),
    "axes.AxisSet.skew MappingSyntaxError: the skew must start": module(_SKEW, 'ax.skew("B\'", "-A + B")', _SKEWED),
    "axes.AxisSet.skew UnknownAxisError": module(_SKEW, 'ax.skew("B\'", "B - C")', _SKEWED),
    # visa.tune's parameter spaces
    "space._axes VisaError: parameter name is not": module(
        _GRID, 'points = grid({"k tile": [256, 512]})', 'points = grid({"k_tile": [256, 512]})'),
    "space._axes VisaError: parameter is not a": module(
        _GRID, 'points = grid({"k_tile": 256})', 'points = grid({"k_tile": [256]})'),
    "space._axes VisaError: parameter has no values": module(
        _GRID, 'points = grid({"k_tile": []})', 'points = grid({"k_tile": [256]})'),
    "space.grid VisaError: samples a sample holds": module(
        _GRID, 'points = grid({"k_tile": [256, 512]}, samples=0)', 'points = grid({"k_tile": [256, 512]}, samples=1)'),
}
