"""Snippets for launching kernels and moving whole tensors: aliasing arguments, the returned tensor's type, a
bound output (``launch(..., out=)``), per-DMN DMA streams (the heterogeneous aggregate DMA, L2482–2504), tiles of
a view (L824–832)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["LAUNCHES"]

_TWO = """from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m

axes(A=2048)


@device(chip=1)
def add(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]], y: HbmTensor[i32, m["1"], m["A"]]) -> None:
    pass


ctx = Context.acquire()
x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
y = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, {address})   # 8 KiB each
launch(add, ctx, x, y)
"""

_RETURNS = """from visa import Context, HbmTensor, HostTensor, axes, device, {dtype}, i32, launch, m

axes(A=2048)


@device(chip=1)
def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[{dtype}, m["1"], m["A"]]:
    return x.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 20)


ctx = Context.acquire()
launch(copy, ctx, HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0))
"""

# a kernel whose result goes into an HBM tensor made before the launch (the reference's ``.output``)
_BOUND = """from typing import Any

from visa import Context, HbmTensor, HostTensor, axes, device, f32, i32, launch, m

axes(A=2048)


@device(chip=1)
def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> Any:
    {body}


ctx = Context.acquire()
x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
{out}
y = launch(copy, ctx, x, out=out)
"""
_COPY = 'return x.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 20)'
_OUT = 'out = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 1 << 24)'


def _bound(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    lines = {"body": _COPY, "out": _OUT}
    return Snippet(_BOUND.format(**(lines | failing)), _BOUND.format(**(lines | (fixed or {}))))


# 64 rows of 8 over the 64 slices of two DMNs (32 slices each, L2868); DMN 1 moves half-rows (L2482-2504)
_DMN = """import numpy as np
from visa import Context, HostTensor, axes, i32, m

axes(S=64, D=8)
ctx = Context.acquire()
hbm = HostTensor.from_numpy(np.arange(512).reshape(64, 8), i32, m["S, D"]).to_hbm(m["1"], m["S, D"], ctx.pdma, 0)
streams = {0: (m["S"], m["D"]), 1: (m["S, D / 4"], m["D % 4"])}"""
_TO_DM = 'dm = hbm.to_dm(m["1 # 2"], m["S # 256"], m["D"], ctx.tdma, 0, stream={streams})'

_VIEW = ("from visa import Context, HostTensor, axes, i32, m\n\naxes(A=8)\nctx = Context.acquire()\n"
         'x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)')

#: site key → the failing and the fixed program.
LAUNCHES: dict[str, Snippet] = {
    "context.check_arguments_apart AllocationError: arguments and share bytes": Snippet(
        _TWO.format(address="4096"), _TWO.format(address="8192")),
    "context._check_value DtypeError: is but is annotated": Snippet(
        _RETURNS.format(dtype="f32"), _RETURNS.format(dtype="f32").replace("HbmTensor[f32", "HbmTensor[i32")),
    "bound.check_out TypestateError: was freed or is": _bound(
        {"out": 'out = HbmTensor.from_addr(ctx, i32, m["1"], m["A"], 1 << 24)   # a handle, no allocation'}),
    "bound.check_bound TypestateError: returned not an hbmtensor": _bound(
        {"body": 'return x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)'},
        {"body": 'dm = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)\n'
                 '    return dm.to_hbm(m["A"], ctx.tdma, 1 << 20)'}),
    "bound.check_bound DtypeError: 's result holds the": _bound(
        {"out": _OUT.replace("zeros(i32", "zeros(f32")}),
    "bound.check_bound LayoutError: 's result has the": _bound(
        {"out": _OUT.replace('m["A"], ctx.pdma', 'm["A % 8, A / 8"], ctx.pdma') + "   # laid out transposed"},
        {"body": _COPY.replace('m["A"], ctx.tdma', 'm["A % 8, A / 8"], ctx.tdma'),
         "out": _OUT.replace('m["A"], ctx.pdma', 'm["A % 8, A / 8"], ctx.pdma')}),
    "moves._heterogeneous LayoutError: a heterogeneous dma gives": module(
        _DMN, 'copy = hbm.to_hbm(m["1"], m["S, D"], ctx.tdma, 1 << 20, stream=streams)   # HBM → HBM: no DMN',
        'copy = hbm.to_hbm(m["1"], m["S, D"], ctx.tdma, 1 << 20, stream=streams[0])'),
    "moves._heterogeneous LayoutError: the dm side occupies": module(
        _DMN, _TO_DM.format(streams="{0: streams[0]}") + "   # the 64 slices are on DMNs 0 and 1",
        _TO_DM.format(streams="streams")),
    "layout.tile_offset LayoutError: the view does not": module(
        _VIEW, 'y = x.relabel(Element=m["A / 2 # 8"])   # holds A = 0, 2, 4, 6\n'
        't = y.view().tile(m["A"], 2, m["A = 2"], 1)', 't = x.view().tile(m["A"], 2, m["A = 2"], 1)'),
    "layout.check_every_position LayoutError: tile position holds a": module(
        _VIEW, 't = x.view().tile(m["A"], 4, m["A / 2"], 0)   # every other element is not a tile of 4',
        't = x.view().tile(m["A"], 4, m["A = 4"], 0)'),
}

