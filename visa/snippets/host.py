"""Snippets for element types and host tensors (the V2xxx family and the host side of V3xxx: manual "Element
Types", the DMA Engine's element formats, L2525)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["HOST"]

_HOST = "import numpy as np\nfrom visa import HostTensor, axes, f8e4m3, f32, i8, i32, m\n\naxes(A=4)"


def _host(failing: str, fixed: str) -> Snippet:
    return module(_HOST, failing, fixed)


_HBM = ("from visa import Context, HostTensor, axes, i32, m\n\naxes(A=8, R=2, C=4)\nctx = Context.acquire()\n"
        'x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)')
_RELABELLED = 'y = x.relabel(Element=m["R, C"])   # the 8 elements seen as 2 x 4'
_SCALAR = "from visa import Context, HbmScalar, i32, u32\n\nctx = Context.acquire()"
_THREE = "n = HbmScalar.from_host(ctx, 3, i32, 0)"

#: site key → the failing and the fixed program.
HOST: dict[str, Snippet] = {
    "dtypes.scalar DtypeError: unknown element type known": module(
        "from visa.dtypes import scalar", 'i8 = scalar("int8")', 'i8 = scalar("i8")'),
    "handles.to_storage DtypeError": _host(
        'x = HostTensor.from_numpy(np.array([0, 1, 2, 300]), i8, m["A"])   # 300 > 127',
        'x = HostTensor.from_numpy(np.array([0, 1, 2, 127]), i8, m["A"])'),
    "handles.host_range_check DtypeError: value does not fit": _host(
        'x = HostTensor.from_numpy(np.array([0.0, 1.0, 2.0, 1000.0]), f8e4m3, m["A"])   # f8e4m3 ends at 448',
        'x = HostTensor.from_numpy(np.array([0.0, 1.0, 2.0, 1000.0]), f8e4m3, m["A"], overflow="saturate")'),
    "handles.HostTensor.from_numpy DtypeError: the array holds values": _host(
        'x = HostTensor.from_numpy(np.zeros(4, complex), f32, m["A"])',
        'x = HostTensor.from_numpy(np.zeros(4, complex).real, f32, m["A"])'),
    "handles.HostTensor.from_numpy LayoutError: the array has shape": _host(
        'x = HostTensor.from_numpy(np.zeros(8, np.int32), i32, m["A"])   # A has 4 elements',
        'x = HostTensor.from_numpy(np.zeros(4, np.int32), i32, m["A"])'),
    "handles.logical_axes LayoutError: axes do not match": _host(
        'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"], axes="A B")',
        'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"], axes="A")'),
    "handles.check_host_size HardwareLimitError: holds bytes more than": module(
        "from visa import HostTensor, i32, m, axes", "axes(A=1 << 40)\nx = HostTensor.zeros(i32, m[\"A\"])",
        "axes(A=1 << 20)\nx = HostTensor.zeros(i32, m[\"A\"])"),
    "handles._logical PoisonError: element s of were": module(
        "from visa import Context, HbmTensor, HostTensor, axes, i32, m\n\naxes(A=8)\nctx = Context.acquire()",
        'hbm = HbmTensor(ctx, i32, m["1"], m["A"], 0)   # allocated, never written\n'
        'print(hbm.to_host(m["A"], ctx.pdma).numpy())',
        'hbm = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)\n'
        'print(hbm.to_host(m["A"], ctx.pdma).numpy())'),
    "handles.DeviceTensor.relabel LayoutError: has size but has": module(
        _HBM, 'y = x.relabel(Element=m["R, C # 8"])   # 16 positions for 8 elements', _RELABELLED),
    "handles.DeviceTensor.relabel LayoutError: has no level levels": module(
        _HBM, 'y = x.relabel(Slice=m["R, C"])   # an HBM tensor has Chip and Element', _RELABELLED),
    "scalar.HbmScalar.from_host AddressError: address is not a": module(
        _SCALAR, "n = HbmScalar.from_host(ctx, 3, i32, 2)", _THREE),
    "scalar.check_scalar_value DtypeError: is outside 's range": module(
        _SCALAR, "n = HbmScalar.from_host(ctx, -1, u32, 0)", "n = HbmScalar.from_host(ctx, -1, i32, 0)"),
    "scalar._Arith.__bool__ TypestateError: is a device value": module(
        _SCALAR, _THREE + "\nif n > 0:   # the host cannot read a device value\n    pass",
        _THREE + "\nif ctx.main.when(n > 0):   # a runtime guard on the device\n    pass"),
    "validate.wrong_type WrongTypeError: parameter must be got": _host(
        'x = HostTensor.from_numpy(np.zeros(4), m["A"], f32)   # the element type comes first',
        'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"])'),
    "validate.expect_mapping WrongTypeError: parameter must be a": _host(
        'x = HostTensor.from_numpy(np.zeros(4), f32, "A")', 'x = HostTensor.from_numpy(np.zeros(4), f32, m["A"])'),
}
