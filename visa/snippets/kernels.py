"""Snippets for kernels: launching, DMA placement, fetch / collect / commit, memory lifetimes, the Vector Engine
(the one-chip kernel of :mod:`visa.snippets.base`, one line changed)."""

from __future__ import annotations

from visa.snippets.base import VE, VECTOR, Snippet, kernel, module

__all__ = ["KERNELS"]

_DM = 'x.to_dm(m["1 # 2"], {slice_}, m["A % 8"], ctx.tdma, {address})'
_DM0 = 'dm0 = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)\n    '


def _dm(slice_: str = 'm["A / 8 # 256"]', address: str = "0", cluster: str = 'm["1 # 2"]') -> str:
    return _DM.format(slice_=slice_, address=address).replace('m["1 # 2"]', cluster)


def _vector(ops: str, fixed_ops: str) -> Snippet:
    return kernel({"imports": VE, "vector": VECTOR.format(ops=ops)},
                  {"imports": VE, "vector": VECTOR.format(ops=fixed_ops)})


def _pairs(element: str) -> dict[str, str]:
    """The stream in pairs of elements (each padded to a 32-byte flit), committed with Element ``element``."""
    return {"fetch": '.fetch(i32, m["A % 8 / 2"], m["A % 2 # 8"])',
            "collect": '.collect(m["A % 8 / 2"], m["A % 2 # 8"])', "commit": f".commit({element}, 1 << 12)"}


_HBM = ("from visa import Context, HostTensor, axes, i32, m\n\naxes(A=8, B=4)\nctx = Context.acquire()\n"
        'x = HostTensor.zeros(i32, m["A, B"]).to_hbm(m["1"], m["A, B"], ctx.pdma, 0)')
_ADD = "\n           .vector_fxp(FxpBinaryOp.AddFxp, {})"
# f32 arithmetic on the Float cluster needs Way4 packets (L4878-4897): split the 8 lanes into two time steps of 4
_FP = "from visa.engines.vector import BranchMode, FpBinaryOp\n"
_TO_FP, _TO_FXP = "\n           .vector_fxp_to_fp(31)", "\n           .vector_fp_to_fxp(31)"
_ADD_F = "\n           .vector_fp_binary(FpBinaryOp.AddF, 1.0)"
_SPLIT = '\n           .vector_split(m["A % 8 / 4"], m["A % 4"])'
_CONCAT = '\n           .vector_concat(m["1"], m["A % 8"])'

#: site key → the failing and the fixed program.
KERNELS: dict[str, Snippet] = {
    # launching
    "context.launch TypestateError: is not a device": kernel({"device": "# no @device"}),
    "context.device VisaError: a kernel runs on": kernel({"device": "@device(chip=0)"}),
    "context.launch HardwareLimitError: the kernel needs chips": kernel({"device": "@device(chip=16)"}),
    "context.check_argument_chips LayoutError: spans chip s the": kernel(
        {"to_device": 'x.to_hbm(m["1 # 2"], m["A"], ctx.pdma, 0)'}),
    "device.dma_device TypestateError: takes ctx the got": kernel(
        {"to_dm": 'x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.pdma, 0)   # HBM → DM is the tensor DMA'}),
    "context.launch TypestateError: cannot take these argument": kernel(
        {"to_device": 'x.to_hbm(m["1"], m["A"], ctx.pdma, 0), 1'}),
    "handles.DeviceTensor.check_context VisaError: belongs to another context": kernel(
        {"to_device": 'x.to_hbm(m["1"], m["A"], Context.acquire().pdma, 0)'}),
    "context._check_value LayoutError: has but is annotated": kernel(
        {"to_hbm": 'out.to_hbm(m["A # 4096"], ctx.tdma, 1 << 28)   # the annotation says m["A"]'}),
    # placement in DM and HBM
    "layout.check_placement HardwareLimitError: slice size must be": kernel({"to_dm": _dm(slice_='m["A / 8 # 512"]')}),
    "layout.check_placement HardwareLimitError: cluster size must be": kernel({"to_dm": _dm(cluster='m["1 # 3"]')}),
    "layout.check_placement AddressError: address is negative": kernel({"to_dm": _dm(address="-32")}),
    "layout.check_placement AddressError: address is not a": kernel({"to_dm": _dm(address="3")}),
    "layout.check_placement AddressError: bytes run past the": kernel(
        {"commit": '.commit(m["A % 8"], (1 << 19) - 16)'}),
    "commit.check_address AddressError: the commit would start": kernel({"commit": '.commit(m["A % 8"], 12)'}),
    "registry.refuse_overlap AllocationError: the result would occupy": kernel(
        {"commit": '.commit(m["A % 8"], 16)'}),
    "layout.tile_offset LayoutError: a tile of from": kernel(
        {"to_dm": _dm() + '\n    half = dm.view().tile(m["A % 8"], 4, m["A % 8 = 4"], 6)   # elements 6..9 of 8'},
        {"to_dm": _dm() + '\n    half = dm.view().tile(m["A % 8"], 4, m["A % 8 = 4"], 4)'}),
    "layout.check_placement HardwareLimitError: chip size must equal": kernel(
        {"before": 'copy = x.to_hbm(m["1 # 2"], m["A"], ctx.tdma, 1 << 20)   # two chips in a one-chip kernel\n    '},
        {"before": 'copy = x.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 20)\n    '}),
    "layout.check_placement HardwareLimitError: element holds bytes more": module(
        "from visa import Context, DmTensor, axes, i32, m\n\naxes(A=1 << 18)\nctx = Context.acquire()",
        'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0)   # 1 MiB in one slice\'s 512 KiB',
        'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 1024 # 256"], m["A % 1024"], 0)   # 4 KiB a slice'),
    "layout.check_placement HardwareLimitError: row size must be": module(
        "from visa import Context, TrfAddress, TrfTensor, axes, i32, m\n\naxes(A=16)\nctx = Context.acquire()",
        't = TrfTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["1"], TrfAddress.Full)   # 16 Rows',
        't = TrfTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A / 2"], m["A % 2"], TrfAddress.Full)'),
    # DMA
    "plan._check_holds LayoutError: does not hold every": kernel(
        {"to_hbm": 'out.to_hbm(m["A % 8"], ctx.tdma, 1 << 28)   # the HBM tensor must hold all of A'}),
    "plan._packet_elements HardwareLimitError: need packets of a": kernel(
        {"to_dm": 'x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 2, A % 8 / 2"], ctx.tdma, 0)   # 4-byte runs'}),
    "plan._check_alignment AddressError: -byte aligned addresses manual": kernel(
        {"to_dm": 'x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8 / 2, A % 2 # 3"], ctx.tdma, 0)   # 12-byte rows'}),
    "plan._check_axes LayoutError: does not use axis": module(
        _HBM, 'y = x.to_hbm(m["1"], m["A"], ctx.tdma, 4096)   # where does B go?',
        'y = x.to_hbm(m["1"], m["B, A"], ctx.tdma, 4096)   # a move may reorder the axes'),
    "plan._check_writes LayoutError: the stream walks that": module(
        _HBM.replace('m["A, B"]', 'm["A"]'), 'y = x.to_hbm(m["1"], m["A"], ctx.tdma, 4096, stream=(m["A, B"], m["1"]))',
        'y = x.to_hbm(m["1"], m["A"], ctx.tdma, 4096, stream=(m["A"], m["1"]))'),
    # fetch, collect, commit
    "sequencer._Ctx.insufficient InsufficientInputError: needs indices of that": kernel(
        {"fetch": '.fetch(i32, m["1"], m["A % 16"])   # each slice holds 8 elements of A, not 16'}),
    "fetch._plan HardwareLimitError: fetch output packet must": kernel(
        {"fetch": '.fetch(i32, m["A % 8"], m["1"])   # one 4-byte element per packet'}),
    "collect._plan HardwareLimitError: the collect engine outputs": kernel(
        {"collect": '.collect(m["1"], m["A % 4"])   # 16 bytes: a flit is 32'}),
    "collect._plan LayoutError: time2 must be the": kernel(
        {"fetch": '.fetch(i32, m["1"], m["A % 8 # 16"])   # a 64-byte packet is two flits'}),
    "stages.StreamTensor.take TypestateError: this was already consumed": kernel(
        {"fetch": '.fetch(i32, m["1"], m["A % 8"]))\n    fetched = out\n    fetched.collect(m["1"], m["A % 8"])'
                  '\n    out = (fetched'}),
    "commit._plan HardwareLimitError: the commit engine takes": kernel(
        {"fetch": '.fetch(i32, m["A % 8 / 4"], m["A % 4"])   # 16-byte packets, committed uncollected',
         "collect": ""}),
    "collect._plan LayoutError: packet2 is not the": kernel({"collect": '.collect(m["A % 8"], m["1 # 8"])'}),
    "commit._configure LayoutError: the write sequencer would": kernel({"commit": '.commit(m["1"], 1 << 12)'}),
    "commit._check_addresses LayoutError: the element holds but": kernel({"commit": '.commit(m["A % 16"], 1 << 12)'}),
    "commit._configure HardwareLimitError: commit_size gcd contiguous_sram_access_size b": kernel(
        _pairs('m["A % 2, A % 8 / 2"]'), _pairs('m["A % 8 / 2, A % 2"]')),
    "fetch._plan DtypeError": kernel(
        {"imports": "from visa import f32\n", "fetch": '.fetch(f32, m["1"], m["A % 8"])   # no i32 → f32 fetch cast'}),
    "commit._check_addresses HardwareLimitError: every commit sequencer stride": kernel(
        _pairs('m["A % 8 / 2, A % 2 # 3"]'), _pairs('m["A % 8 / 2, A % 2"]')),
    # memory lifetimes
    "registry.Registry.check_live StaleTensorError: was freed free its": kernel(
        {"before": _DM0 + "dm0.free()\n    ", "to_dm": "dm0"}, {"before": _DM0, "to_dm": "dm0"}),
    "registry.Registry.check_readable StaleTensorError: was overwritten by its": kernel(
        {"before": _DM0 + 'x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)   # over dm0\n    ',
         "to_dm": "dm0"}, {"before": _DM0, "to_dm": "dm0"}),
    # the Vector Engine
    "elementwise.check_constant DtypeError: an i32 operation takes": _vector(_ADD.format("1.5"), _ADD.format("1")),
    "elementwise.check_constant DtypeError: constant does not fit": _vector(_ADD.format("1 << 40"), _ADD.format("1")),
    "plan.claim ResourceError: is already in use": _vector(_ADD.format("1") * 2, _ADD.format("2")),
    "base.VeBase.__getattr__ TypestateError: is not available on": kernel(
        {"imports": _FP, "vector": VECTOR.format(ops=_TO_FP + _ADD_F + _TO_FXP)},   # f32 on 8 lanes
        {"imports": _FP, "vector": VECTOR.format(ops=_TO_FP + _SPLIT + _ADD_F + _CONCAT + _TO_FXP)}),
    "plan.plan_int_width DtypeError: int_width must be 0": _vector(
        "\n           .vector_fxp_to_fp(32)" + _TO_FXP, _TO_FP + _TO_FXP),
    "stages.StreamTensor.__getattr__ TypestateError: is not available on": kernel(
        {"imports": VE, "vector": "\n           .vector_init()\n"
                                  "           .vector_intra_slice_branch(BranchMode.Unconditional)"},
        {"imports": VE, "vector": VECTOR.format(ops="")}),
}
