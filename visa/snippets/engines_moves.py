"""Snippets for the tensor DMA's planner (``visa/engines/dma/plan.py``; manual "DMA Engine", L2386–2530, and
the sequencer, L1219–1688), the SPM moves (``visa/engines/spm.py``, L2825–2947) and memset (``visa/engines/
memset.py``, design API.md §8): one move of a small tensor between host, HBM, DM and SPM."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["ENGINES_MOVES"]

_HEAD = ("import numpy as np\nfrom visa import Context, DmTensor, HostTensor, axes, i4, i8, i9, i32, m\n\n"
         "axes(A={a}, B=2, F=3)\nctx = Context.acquire()\n"
         'x = HostTensor.rand({dtype}, m["{host}"], np.random.default_rng(0)).to_hbm(m["1"], m["{host}"], ctx.pdma, 0)')


def _move(failing: str, fixed: str, a: int = 2048, dtype: str = "i32", host: str = "A",
          fixed_head: dict[str, object] | None = None) -> Snippet:
    """An HBM tensor ``x`` (from the host) moved by ``failing`` / ``fixed``."""
    head = {"a": a, "dtype": dtype, "host": host}
    one = module(_HEAD.format(**head), failing, fixed)
    if fixed_head is None:
        return one
    return Snippet(one.failing, module(_HEAD.format(**(head | fixed_head)), "", fixed).fixed)


_DM = '{x}.to_dm(m["1 # 2"], m["A / 8"], m["{element}"], ctx.tdma, 0)'
_ROWS = ("\nimport numpy as np\nfrom visa import Context, HostTensor, axes, i8, m\n\naxes(A={}, B=2){}\n"
         'ctx = Context.acquire()\nx = HostTensor.rand(i8, m["A, B"], np.random.default_rng(0))\n'
         'x.to_hbm(m["1"], m["A, B"], ctx.pdma, 0)\n')
_SPM = ("from visa import Context, DmTensor, axes, {dtype}, m\n\naxes(K=512)\nctx = Context.acquire()\n"
        'd = DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["K / 2"], m["K % 2"], 0)   # two elements a slice')
_NIBBLES = ("import numpy as np\nfrom visa import Context, HostTensor, axes, i4, m\n\naxes(B=16)\n"
            'ctx = Context.acquire()\n'
            'x = HostTensor.rand(i4, m["B"], np.random.default_rng(0)).to_hbm(m["1"], m["B"], ctx.pdma, 0)')
_NIBBLE_TILE = ('x.view().tile(m["B"], {n}, m["B = {n} # 16"], {start}).to_hbm(m["1"], m["B = {n} # 16"], ctx.tdma, '
                '1 << 20){note}')
_WINDOW = ("from visa import Context, DmTensor, axes, bf16, m\n\naxes(Y=4, K=2, W=30, Fw=3, X=32)\n"
           "ctx = Context.acquire()\n"
           'src = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["Y, K, X"], 0)   # rows of 32 pixels\n'
           'rows = src.view().relabel(m["Y, K, [$(W : 1, Fw : 1) # 32]"])   # pixel w + fw: a sliding window')
_ODD_ROWS = (
    "\nimport numpy as np\nfrom visa import Context, HostTensor, axes, i4, m\n\n"
    "axes(V=64, G=2)\nctx = Context.acquire()\n"
    'x = HostTensor.rand(i4, m["V, G"], np.random.default_rng(0)).to_hbm(m["1"], m["V, G # {0}"], ctx.pdma, 0)\n'
    'x.to_hbm(m["1"], m["V, G # 4"], ctx.tdma, 1 << 20)   # rows of two 4-bit values, {0} values apart, respaced\n')
_SPM4 = _SPM.replace('m["K % 2"], 0)', 'm["K % 2 # 4"], 0)')
_TO_SPM = 'd.to_spm(m["1 # 4"], m["{}"], ctx.tdma, 0)   # one PE of each cluster\'s four'
_FILL = ("from visa import Context, DmTensor, axes, {dtype}, m\n\naxes(S=256, D=8)\nctx = Context.acquire()\n"
         'd = DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["S"], m["D"], 0)')

#: site key → the failing and the fixed program.
ENGINES_MOVES: dict[str, Snippet] = {
    "plan._packet_elements HardwareLimitError: the dma moves whole": _move(
        'x.to_hbm(m["1"], m["F, A"], ctx.tdma, 1 << 20)   # transposed: one 4-bit element contiguous',
        'x.to_hbm(m["1"], m["F, A"], ctx.tdma, 1 << 20)', a=16, dtype="i4", host="A, F", fixed_head={"host": "F, A"}),
    "plan._fit_sizes HardwareLimitError: a dma loop of": Snippet(   # 65537 × 2 bytes: packets of 2 bytes at most
        _ROWS.format(65537, "   # a prime number of rows"), _ROWS.format(65536, "")),
    "plan._check_padding_writes LayoutError: the stream's padding positions": _move(
        'x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0, stream=(m["A / 8"], m["A % 8 # 16"]))',
        'x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0, stream=(m["A / 8"], m["A % 8"]))'),
    "plan._check_media DtypeError: is not a dma": _move(
        'x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0)',
        'x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0)', dtype="i9", fixed_head={"dtype": "i8"}),
    "spm._plan LayoutError: the destination names axis": module(
        _SPM.format(dtype="i32").replace("K=512", "K=512, J=2"), _TO_SPM.format("K, J"), _TO_SPM.format("K")),
    "spm._plan LayoutError: the destination does not": module(
        _SPM.format(dtype="i32").replace("K=512", "K=512, J=2").replace('m["K % 2"], 0)', 'm["K % 2, J"], 0)'),
        _TO_SPM.format("K"), _TO_SPM.format("K, J")),
    "spm._held_by LayoutError: the does not hold": module(
        _SPM.format(dtype="i32"), _TO_SPM.format("K % 256"), _TO_SPM.format("K")),
    "spm._plan UnsupportedFeatureError: packs two elements a": Snippet(
        module(_SPM4.format(dtype="i4"), _TO_SPM.format("K"), "").failing,
        module(_SPM4.format(dtype="i8"), "", _TO_SPM.format("K")).fixed),
    "memset.check_value DtypeError: is not a value": module(
        _FILL.format(dtype="i32"), "d.view().memset(1.5, ctx.sub)", "d.view().memset(7, ctx.sub)"),
    "memset.check_context TypestateError: a memset of an": module(
        _FILL.format(dtype="i32"), "d.view().memset(7, ctx.main)", "d.view().memset(7, ctx.sub)"),
    "memset.plan AddressError: bytes of the view": module(
        _FILL.format(dtype="i32"), 'd.view().tile(m["D"], 3, m["D = 3"], 0).memset(7, ctx.sub)   # 12 bytes a slice',
        'd.view().tile(m["D"], 2, m["D = 2"], 0).memset(7, ctx.sub)   # 8 bytes a slice'),
    "memset._runs AddressError: a run of the": module(
        _FILL.format(dtype="i4").replace('m["D"], 0)', 'm["D # 16"], 0)'),
        'd.view().tile(m["D"], 3, m["D = 3"], 0).memset(7, ctx.tdma)   # 1.5 bytes',
        "d.view().memset(7, ctx.tdma)   # every element: 8 bytes a slice"),
    "spm._plan DtypeError: is not a dma": Snippet(
        module(_SPM.format(dtype="i9"), _TO_SPM.format("K"), "").failing,
        module(_SPM.format(dtype="i8"), "", _TO_SPM.format("K")).fixed),
    "plan._bytes_of AddressError: element starts inside a": module(
        _NIBBLES, _NIBBLE_TILE.format(n=15, start=1, note="   # 4-bit element 1 starts mid-byte"),
        _NIBBLE_TILE.format(n=14, start=2, note="")),
    "plan._check_media UnsupportedFeatureError: lays out as a": module(
        _WINDOW, 'rows.to_hbm(m["Y, K, W, Fw"], ctx.tdma, 0)   # every window unrolled into HBM',
        'src.view().to_hbm(m["Y, K, X"], ctx.tdma, 0)   # the rows as they are (fetch the windows on chip)'),
    "plan._bytes_loop HardwareLimitError: one step of axis": Snippet(_ODD_ROWS.format(3), _ODD_ROWS.format(4)),
    "plan._attempt AddressError: the packet would read": _move(
        'x.to_dm(m["1 # 2"], m["A / 8"], m["# 2 + A % 8 # 16"], ctx.tdma, 0,\n'
        '        stream=(m["A / 8"], m["# 2 + A % 8 # 16"]))   # packets start with 2 elements of left padding',
        'x.to_dm(m["1 # 2"], m["A / 8"], m["# 2 + A % 8 # 16"], ctx.tdma, 0,\n'
        '        stream=(m["A / 8"], m["A % 8"]))   # packets of the elements only'),
    "plan._check_padding_writes LayoutError: the stream writes some": _move(
        'x.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 20, stream=(m["A / 4 = 511"], m["A % 8"]))   # 8 lanes, step 4',
        'x.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 20, stream=(m["A / 8"], m["A % 8"]))   # 8 lanes, step 8'),
}
