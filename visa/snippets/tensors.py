"""Snippets for tensor handles beyond the one-chip kernel: host values and their conversions, views (relabel,
bitcast, tiles with a runtime start), gathers, scatters and in-place DMAs (manual L1684–1688, L8286–8297),
device scalars and runtime guards (the MoE blocks, L8596–8707), memsets."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["TENSORS"]

_HOST = "import numpy as np\nfrom visa import HostTensor, axes, f4e2m1, f8e4m3, f32, i32, m\n\naxes(A=4)"
_HELD = "import numpy as np\nfrom visa import axes, f32, i32, m\nfrom visa.testing import hold\n\naxes(A=4)"
_HBM = ("from visa import Context, HostTensor, axes, bf16, i32, m\n\naxes(A=8)\nctx = Context.acquire()\n"
        'x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)')

# a table of 8 rows, three row ids, and three rows to scatter (manual L1684-1688, the embedding of L7994-8005)
_TABLE = """import numpy as np
from visa import Context, HbmScalar, HbmTensor, HostTensor, axes, f32, i32, m

axes(V=8, D=8, T=3)
ctx = Context.acquire()
table = HostTensor.from_numpy(np.arange(64).reshape(8, 8), i32, m["V, D"]).to_hbm(m["1"], m["V, D"], ctx.pdma, 0)
ids = HostTensor.from_numpy(np.array([5, 0, 2]), i32, m["T"]).to_hbm(m["1"], m["T"], ctx.pdma, 1 << 20)
rows = HostTensor.zeros(i32, m["T, D"]).to_hbm(m["1"], m["T, D"], ctx.pdma, 2 << 20)"""
_GATHER = 'table.view().gather(m["V"], ids){prefix}.to_hbm_view(rows.view(), ctx.tdma)'
_SCATTER = 'rows.to_hbm_view(table.view().scatter(m["V"], ids), ctx.tdma)'
_F32_ROWS = 'f_rows = HostTensor.zeros(f32, m["T, D"]).to_hbm(m["1"], m["T, D"], ctx.pdma, 3 << 20)\n'
_SPM_N = "n = HbmScalar.from_host(ctx, 2, i32, 4 << 20).to_spm(ctx.sub)\n"
_OTHER_N = "other = Context.acquire()\nn = HbmScalar.from_host(other, 2, i32, 4 << 20).to_spm(other.sub)\n"

# four groups of eight per slice, and a tile of one group chosen by a device scalar (runtime_scalar_indexed_copy)
_GROUPS = """from visa import Context, DmTensor, HbmScalar, axes, i32, m

axes(S=64, G=4, W=8)
ctx = Context.acquire()
d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S # 256"], m["G, W"], 0)
d.view().memset(5, ctx.sub)"""
_TILE = 'group = d.view().tile(m["G"], 1, m["1 # 4, W"], start=s)'

_SCALAR = "from visa import Context, HbmScalar, i32\n\nctx = Context.acquire()"
_STAGED = "n = HbmScalar.from_host(ctx, 3, i32, 0).to_spm(ctx.sub)"
_COUNT = "from visa import Context, HbmTensor, HostTensor, axes, i32, m\n\naxes(A=4)\nctx = Context.acquire()"

_TWO_CHIPS = """from visa import Context, HbmScalar, device, i32, launch

ctx = Context.acquire()
n = HbmScalar.from_host(ctx, 3, i32, 0{chips})


@device(chip=2)
def kernel(ctx: Context) -> None:
    if ctx.main.when(n > 0):
        pass


launch(kernel, ctx)
"""

_WRITE = """from visa import Context, HbmScalar, device, i32, launch

ctx = Context.acquire()
n = HbmScalar.from_host(ctx, 3, i32, 0)


@device(chip=1)
def kernel(ctx: Context, n: HbmScalar[i32]) -> None:
    {body}


{after}launch(kernel, ctx, n)
"""

_SPM = """from visa import Context, DmTensor, HbmScalar, axes, i32, m

axes(P=1024)
ctx = Context.acquire()
d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["P"], 0)
d.view().memset(0, ctx.sub)"""

#: site key → the failing and the fixed program.
TENSORS: dict[str, Snippet] = {
    # host values
    "handles.to_storage DtypeError: complex values cannot be": module(
        _HELD, 'values, valid = hold(np.zeros(4, complex), f32, [m["A"]])',
        'values, valid = hold(np.zeros(4, complex).real, f32, [m["A"]])'),
    "handles.to_storage DtypeError: values must be numbers": module(
        _HELD, 'values, valid = hold(np.array(["1", "2", "3", "4"]), f32, [m["A"]])',
        'values, valid = hold(np.array(["1", "2", "3", "4"]).astype(float), f32, [m["A"]])'),
    "handles.host_range_check DtypeError: overflow 'wrap' applies to": module(
        _HOST, 'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"], overflow="wrap")',
        'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"], overflow="saturate")'),
    "handles.host_range_check DtypeError: has no infinity and": module(
        _HOST, 'x = HostTensor.from_numpy(np.zeros(4), f4e2m1, m["A"], overflow="inf")',
        'x = HostTensor.from_numpy(np.zeros(4), f4e2m1, m["A"], overflow="saturate")'),
    "handles.host_range_check DtypeError: has no infinity seed": module(
        _HOST, 'x = HostTensor.from_numpy(np.zeros(4), f8e4m3, m["A"], overflow="inf")',
        'x = HostTensor.from_numpy(np.zeros(4), f8e4m3, m["A"], overflow="nan")'),
    "handles.host_range_check DtypeError": module(
        _HOST, 'x = HostTensor.from_numpy(np.array([0.0, 1.0, 2.0, 100.0]), f4e2m1, m["A"])   # e2m1 ends at 6',
        'x = HostTensor.from_numpy(np.array([0.0, 1.0, 2.0, 100.0]) / 20, f4e2m1, m["A"])   # scaled'),
    "handles.host_range_check DtypeError: integer values beyond 2": module(
        _HOST, 'x = HostTensor.from_numpy(np.array([0, 1, 2, 2**60]), f32, m["A"])',
        'x = HostTensor.from_numpy(np.array([0, 1, 2, 2**60], dtype=np.float64), f32, m["A"])'),
    "handles.HostTensor.values PoisonError: position s of hold": module(
        "from visa import Context, HbmTensor, HostTensor, axes, i32, m\n\naxes(A=8)\nctx = Context.acquire()",
        'hbm = HbmTensor(ctx, i32, m["1"], m["A"], 0)   # allocated, never written\n'
        'values = hbm.to_host(m["A"], ctx.pdma).values',
        'hbm = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)\n'
        'values = hbm.to_host(m["A"], ctx.pdma).values'),
    # views
    "handles._logical LayoutError: the buffer does not": module(
        _HBM, 'y = x.relabel(Element=m["A / 2 # 8"])   # holds A = 0, 2, 4, 6 only\nvalues = y.logical()',
        'y = x.relabel(Element=m["A % 2, A / 2"])   # every A, in another order\nvalues = y.logical()'),
    "handles.TensorView.relabel LayoutError: element has size but": module(
        _HBM, 'y = x.view().relabel(m["A / 2"])', 'y = x.view().relabel(m["A % 2, A / 2"])'),
    "handles.check_bitcast DtypeError: a bitcast reads the": module(
        _HBM.replace("bf16, i32", "bf16, f32, i32"),
        "y = x.view().bitcast(bf16)   # 32-bit elements read as 16-bit ones",
        "y = x.view().bitcast(f32)   # the same 32 bits read as floats"),
    "handles.DeviceTensor.check_chips LayoutError: spans chips 0 but": module(
        "from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m\n\naxes(A=2048)\n"
        "ctx = Context.acquire()",
        'w = HostTensor.zeros(i32, m["A"]).to_hbm(m["1 # 2"], m["A"], ctx.pdma, 0)   # on chips 0 and 1\n\n\n'
        "@device(chip=1)\ndef kernel(ctx: Context) -> None:\n"
        '    dm = w.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)\n\n\nlaunch(kernel, ctx)',
        'w = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)\n\n\n'
        "@device(chip=1)\ndef kernel(ctx: Context) -> None:\n"
        '    dm = w.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)\n\n\nlaunch(kernel, ctx)'),
    # gathers, scatters, in-place DMAs
    "indirect.in_place DtypeError: holds but holds a": module(
        _TABLE, _F32_ROWS + _GATHER.format(prefix="").replace("rows.view()", "f_rows.view()"),
        _GATHER.format(prefix="")),
    "indirect.to_view DtypeError: holds but holds a": module(
        _TABLE, _F32_ROWS + _SCATTER.replace("rows.", "f_rows."), _SCATTER),
    "indirect.to_view TypestateError: writes an tensor but": module(
        _TABLE, 'dm = rows.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)\nrows.to_hbm_view(dm.view(), ctx.tdma)',
        'dm = rows.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)\nrows.to_dm_view(dm.view(), ctx.tdma)'),
    "indirect.to_view LayoutError: a scatter derives its": module(
        _TABLE, _SCATTER.replace("ctx.tdma)", 'ctx.tdma, stream=(m["T"], m["D"]))'), _SCATTER),
    "indirect.to_view TypestateError: is a staged source": module(
        _TABLE, 'rows.to_hbm_view(table.view().gather(m["V"], ids), ctx.tdma)   # a gather is read, not written',
        _GATHER.format(prefix="")),
    "indirect._prefix_value TypestateError: a gather's valid length": module(
        _TABLE, "n = HbmScalar.from_host(ctx, 2, i32, 4 << 20)\n" + _GATHER.format(prefix=".sparse_prefix(n)"),
        _SPM_N + _GATHER.format(prefix=".sparse_prefix(n)")),
    "indirect._prefix_value TypestateError: belongs to another context": module(
        _TABLE, _OTHER_N + _GATHER.format(prefix=".sparse_prefix(n)"),
        _SPM_N + _GATHER.format(prefix=".sparse_prefix(n)")),
    "indirect._values PoisonError: the indices": module(
        _TABLE, 'fresh = HbmTensor(ctx, i32, m["1"], m["T"], 5 << 20)   # allocated, never written\n'
        + _GATHER.format(prefix="").replace("ids)", "fresh)"), _GATHER.format(prefix="")),
    # a tile whose start is a device scalar
    "runtime_tile.runtime_tile TypestateError: a tile's runtime start": module(
        _GROUPS, "s = HbmScalar.from_host(ctx, 2, i32, 1 << 24)\n" + _TILE,
        "s = HbmScalar.from_host(ctx, 2, i32, 1 << 24).to_spm(ctx.sub)\n" + _TILE),
    "runtime_tile.runtime_tile TypestateError: belongs to another context": module(
        _GROUPS, "other = Context.acquire()\ns = HbmScalar.from_host(other, 2, i32, 1 << 24).to_spm(other.sub)\n"
        + _TILE, "s = HbmScalar.from_host(ctx, 2, i32, 1 << 24).to_spm(ctx.sub)\n" + _TILE),
    "runtime_tile.runtime_tile AddressError: the runtime start a": module(
        _GROUPS, "s = HbmScalar.from_host(ctx, 4, i32, 1 << 24).to_spm(ctx.sub)   # G has groups 0..3\n" + _TILE,
        "s = HbmScalar.from_host(ctx, 3, i32, 1 << 24).to_spm(ctx.sub)\n" + _TILE),
    "fill.memset TypestateError: ctx pdma moves host": module(
        _GROUPS.replace("d.view().memset(5, ctx.sub)", ""), "d.view().memset(5, ctx.pdma)",
        "d.view().memset(5, ctx.tdma)"),
    # device scalars and guards
    "scalar._Arith.__index__ TypestateError: is a device value": module(
        _SCALAR, "n = HbmScalar.from_host(ctx, 3, i32, 0)\nfor k in range(n):\n    pass",
        "n = HbmScalar.from_host(ctx, 3, i32, 0)\nfor k in range(n.read()):   # the host reads it\n    pass"),
    "scalar.scalar_value AddressError: divides by zero at": module(
        _SCALAR, _STAGED + "\nif ctx.main.when(n // 0 > 1):\n    pass",
        _STAGED + "\nif ctx.main.when(n // 2 > 1):\n    pass"),
    "scalar._spm_slot AddressError: spm address is not": module(
        _SCALAR, "n = HbmScalar.from_host(ctx, 3, i32, 0).to_spm(ctx.sub, address=4)",
        "n = HbmScalar.from_host(ctx, 3, i32, 0).to_spm(ctx.sub, address=8)"),
    "scalar._spm_slot AllocationError: no free 8-byte slot": module(
        _SPM, 'spm = d.to_spm(m["1 # 4"], m["P"], ctx.tdma, 0)   # 4 KiB: every byte of a PE\'s SPM\n' + _STAGED,
        'spm = d.to_spm(m["1 # 4"], m["P"], ctx.tdma, 0)\nspm.free()   # once nothing reads it\n' + _STAGED),
    "scalar.HbmScalar.to_spm TypestateError: belongs to another context": module(
        _SCALAR, "other = Context.acquire()\nn = HbmScalar.from_host(other, 3, i32, 0).to_spm(ctx.sub)",
        "other = Context.acquire()\nn = HbmScalar.from_host(other, 3, i32, 0).to_spm(other.sub)"),
    "scalar.DeviceScalar.check_chips LayoutError: is on chip s": Snippet(
        _TWO_CHIPS.format(chips=""), _TWO_CHIPS.format(chips=", chips=2")),
    "scalar.HbmScalar.write TypestateError: is written by the": Snippet(
        _WRITE.format(body="n.write(4)", after=""),
        _WRITE.format(body="if ctx.main.when(n > 0):\n        pass", after="n.write(4)   # between launches\n")),
    "guard._when_scalar TypestateError: belongs to another context": module(
        _SCALAR, "other = Context.acquire()\nn = HbmScalar.from_host(other, 3, i32, 0).to_spm(other.sub)\n"
        "if ctx.main.when(n > 1):\n    pass", _STAGED + "\nif ctx.main.when(n > 1):\n    pass"),
    "guard._when_scalar TypestateError: the guard's predicate gave": module(
        _SCALAR, _STAGED + "\nif ctx.main.when(n, lambda v: [v > 1, v > 2]):\n    pass",
        _STAGED + "\nif ctx.main.when(n, lambda v: v > 1 and v > 2):\n    pass"),
    "guard.when PoisonError: the guard": module(
        _COUNT, 'count = HbmTensor(ctx, i32, m["1"], m["1"], 0)   # allocated, never written\n'
        "if ctx.main.when(count, lambda n: n > 0):\n    pass",
        'count = HostTensor.zeros(i32, m["1"]).to_hbm(m["1"], m["1"], ctx.pdma, 0)\n'
        "if ctx.main.when(count, lambda n: n > 0):\n    pass"),
    "guard.when TypestateError: the guard's predicate gave": module(
        _COUNT, 'counts = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)\n'
        "if ctx.main.when(counts, lambda n: n > 0):\n    pass",
        'counts = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)\n'
        "if ctx.main.when(counts, lambda n: (n > 0).any()):\n    pass"),
    # placement in SPM
    "layout.check_placement HardwareLimitError: pe size must be": module(
        _SPM, 'spm = d.to_spm(m["1"], m["P"], ctx.tdma, 0)', 'spm = d.to_spm(m["1 # 4"], m["P"], ctx.tdma, 0)'),
}
