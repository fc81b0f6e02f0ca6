"""Snippets for the gather and scatter DMAs (``visa/engines/dma/indirect.py``; IndirectLoop, manual L1684–1688,
design API.md §7–§8): rows of an HBM table picked by an index tensor."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_GATHER"]

_GATHER = '''
import numpy as np
from visa import Context, HostTensor, axes, i4, i16, i32, m

axes(V=64, D=64, T=16, E=4, F=3)
ctx = Context.acquire()
table = HostTensor.rand({dtype}, m["{table}"], np.random.default_rng(0)).to_hbm(m["1"], m["{table}"], ctx.pdma, 0)
ids = HostTensor.from_numpy({ids}, {ids_dtype}, m["{index}"]).to_hbm(m["1"], m["{index}"], ctx.pdma, 1 << 16)
{line}
'''
_LINE = ("# rows[t] = table[ids[t]]\n"
         'rows = table.view().gather(m["{axis}"], ids){prefix}.to_hbm(m["1"], m["{out}"], ctx.tdma, 1 << 20)')
_SCATTER = ('src = HostTensor.rand({dtype}, m["T, D"], np.random.default_rng(1))\n'
            'src = src.to_hbm(m["1"], m["T, D"], ctx.pdma, 1 << 18)\n'
            'src.to_hbm_view(table.view().scatter(m["V"], ids), ctx.tdma)   # table[ids[t]] = src[t]')
_ROWS_DM = '''
import numpy as np
from visa import Context, HostTensor, axes, i32, m

axes(V=64, G=2, T=16)
ctx = Context.acquire()
table = HostTensor.rand(i32, m["V, G"], np.random.default_rng(0)).to_hbm(m["1"], m["V, G # {0}"], ctx.pdma, 0)
ids = HostTensor.from_numpy(np.arange(16) * 4, i32, m["T"]).to_hbm(m["1"], m["T"], ctx.pdma, 1 << 16)
# slice t of the DM gets row ids[t] of the table (rows of 2 i32 stored {0} elements apart in HBM)
table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["G"], ctx.tdma, 0)
'''
_NIBBLE_ROWS = '''
import numpy as np
from visa import Context, HostTensor, axes, i4, i32, m

axes(V=64, G=2, T=16)
ctx = Context.acquire()
table = HostTensor.rand(i4, m["V, G"], np.random.default_rng(0)).to_hbm(m["1"], m["V, G # {0}"], ctx.pdma, 0)
ids = HostTensor.from_numpy(np.arange(16) * 4, i32, m["T"]).to_hbm(m["1"], m["T"], ctx.pdma, 1 << 16)
# rows of two 4-bit values stored {0} values apart
table.view().gather(m["V"], ids).to_hbm(m["1"], m["T, G"], ctx.tdma, 1 << 20)
'''
_CHIPS = '''
from visa import Context, HbmTensor, axes, device, i32, launch, m

axes(V=64, D=8, T=4)


@device(chip=4)
def kernel(ctx: Context) -> None:
    table = HbmTensor(ctx, i32, {table}, 0)   # {what}
    ids = HbmTensor(ctx, i32, m["1 # 4"], m["T"], 1 << 16)
    table.view().memset(7, ctx.tdma)
    ids.view().memset(3, ctx.tdma)   # every chip picks row 3
    table.view().gather(m["V"], ids).to_hbm(m["1 # 4"], m["T, D"], ctx.tdma, 1 << 20)


launch(kernel, Context.acquire())
'''
_BASE = {"dtype": "i32", "table": "V, D", "ids": "np.arange(16) * 4", "ids_dtype": "i32", "index": "T", "axis": "V",
         "prefix": "", "out": "T, D"}


def _gather(failing: dict[str, str], fixed: dict[str, str] | None = None, line: str = _LINE) -> Snippet:
    """Sixteen rows of a 64-row HBM table gathered by index (``failing``'s fields replaced, and ``fixed``'s)."""
    a, b = _BASE | failing, _BASE | (fixed or {})
    return Snippet(_GATHER.format(line=line.format(**a), **a), _GATHER.format(line=line.format(**b), **b))


#: site key → the failing and the fixed program.
ENGINES_GATHER: dict[str, Snippet] = {
    "indirect.check_indirect_types DtypeError: indices must be got": _gather({"ids_dtype": "i16"}),
    "indirect.region_axes LayoutError: the indexed region must": _gather({"axis": "V / 2"}),
    "indirect.check_indirect_types LayoutError: is not an axis": _gather({"axis": "E"}),
    "indirect.check_indirect_types LayoutError: the index axis is": _gather(
        {"index": "D", "ids": "np.arange(64)", "out": "D, D"}, {"ids": "np.arange(16) * 4"}),
    "indirect.check_indirect_types LayoutError: the names the indexed": _gather({"out": "V, D"}),
    "indirect.check_indirect_types LayoutError: the does not name": _gather({"out": "D"}),
    "indirect.check_indirect_types LayoutError: the names axis that": _gather({"out": "E, T, D"}),
    "indirect._steps LayoutError: does not hold index": _gather({"out": "T % 8, D"}),
    "indirect.check_indices AddressError: index is outside 0": _gather({"ids": "np.arange(16) * 5"}),
    "indirect.check_prefix AddressError: the valid length is": _gather(
        {"prefix": ".sparse_prefix(20)"}, {"prefix": ".sparse_prefix(12)"}),
    "indirect.check_indices AddressError: indices and both scatter": _gather(
        {"ids": "np.arange(16) % 8"}, {"ids": "np.arange(16)"}, line=_SCATTER),
    "indirect._check_steps AddressError: the dma need -byte": Snippet(_ROWS_DM.format(3), _ROWS_DM.format(4)),
    "indirect._steps AddressError: a step of starts": Snippet(_NIBBLE_ROWS.format(3), _NIBBLE_ROWS.format(4)),
    "indirect._fix_axes UnsupportedFeatureError: axis shares a digit": _gather(   # V % 2 and D in one digit
        {"table": "[V % 2, D] # 256, V / 2"}, {"table": "V % 2, D, V / 2"}),
    "indirect.check_indirect_types LayoutError: spreads the table over": Snippet(
        _CHIPS.format(table='m["V / 16"], m["V % 16, D"]', what="rows V spread over the chips"),
        _CHIPS.format(table='m["1 # 4"], m["V, D"]', what="each chip its own table of V rows")),
}
