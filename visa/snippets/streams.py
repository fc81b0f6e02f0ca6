"""Snippets for one Tensor Unit pass over a DM tensor (:func:`visa.snippets.base.stream`): commit views, the
Vector Engine's stage types and lane layouts (manual "Vector Engine", L4551–5273)."""

from __future__ import annotations

from visa.snippets.base import VECTOR, Snippet, module, stream

__all__ = ["STREAMS"]

_VE = ("from visa.engines.vector import BranchMode, FpBinaryOp, FxpBinaryOp, LogicBinaryOpF32, LogicBinaryOpI32, "
       "Stash, ValidBranchIds\n")
_F32 = {"imports": _VE, "dtype": "f32", "fetch": '.fetch(f32, m["1"], m["A % 8"])'}
_I32 = {"imports": _VE}
_SPLIT = '\n .vector_split(m["A % 8 / 4"], m["A % 4"])'   # 8 lanes → two time steps of 4 (Way4)
_CONCAT = '\n .vector_concat(m["1"], m["A % 8"])'          # and back to 8 lanes
_ADD_F = "\n .vector_fp_binary(FpBinaryOp.AddF, 1.0)"
_ADD = "\n .vector_fxp(FxpBinaryOp.AddFxp, 1)"
_ADD_STASH = "\n .vector_fxp(FxpBinaryOp.AddFxp, Stash)"   # adds the value the stash took
_VIEW = 'DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], {slice_}, {element}, 4096).view()'


def _ve(ops: str) -> str:
    """The Vector Engine lines (init, branch, ``ops``, final) indented as the stream snippet's."""
    return VECTOR.format(ops=ops).replace("           ", " ")


def _vector(lines: dict[str, str], ops: str, fixed_ops: str) -> Snippet:
    return stream(lines | {"vector": _ve(ops)}, lines | {"vector": _ve(fixed_ops)})


def _commit_view(**view: str) -> str:
    fields = {"dtype": "i32", "slice_": 'm["A / 8"]', "element": 'm["A % 8"]'} | view
    return f".commit_view({_VIEW.format(**fields)})"


_CAST = {"imports": "from visa import bf16\n", "dtype": "f32", "fetch": '.fetch(f32, m["1"], m["A % 8"])',
         "vector": '\n .cast(bf16, m["A % 8 # 16"])', "commit": '.commit(m["A % 8 # 16"], 1 << 12)'}
_E = 'e = DmTensor(ctx, i32, m["1"], m["1 # 2"], {slice_}, {element}, 8192)   # a second tensor\n'


def _interleave(axis: str, slice_: str = 'm["A / 8"]', element: str = 'm["A % 8"]', time: str = "",
                packet: str = 'm["A % 8"]') -> dict[str, str]:
    """Two tensors fetched alternately along ``axis`` (L1843–1868), Time ``time`` (the axis by default)."""
    time = time or f'm["{axis}"]'
    return {"axes": ", I=2, J=3", "before": _E.format(slice_=slice_, element=element),
            "begin": f'ctx.main.begin_interleaved(m["{axis}"], d.view(), e.view())',
            "fetch": f".fetch(i32, {time}, {packet})", "collect": f".collect({time}, {packet})",
            "commit": f'.commit(m["{axis}, A % 8"], 1 << 12)'}


# two-group mode (L5154-5249): two interleaved tensors, unzipped by I into two groups and zipped back by an add
_PAIR = _interleave("I") | {"imports": _VE, "commit": '.commit(m["A % 8"], 1 << 12)'}
_ZIP = ('\n .vector_init()\n .vector_intra_slice_unzip("{axis}", m["1 # 2"], m["1"])'
        '\n .vector_fxp_zip(FxpBinaryOp.AddFxp){ops}\n .vector_final()')


def _two_group(ops: str, axis: str = "I") -> dict[str, str]:
    return _PAIR | {"vector": _ZIP.format(axis=axis, ops=ops)}


_VRF = ("from visa import VrfTensor\n" + _VE,
        'v = VrfTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)\n')
_CMP = "\n .vector_init()\n .vector_intra_slice_branch(BranchMode.Comparison([InputCmp.{}]))\n .vector_final()"

_ROWS = ("from visa import Context, DmTensor, axes, i8, m\n\naxes(A=65, B=2)\nctx = Context.acquire()\n"
         'd = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["1 # 256"], m["B, A # 96"], 0)   # rows of 65 bytes, 96 apart')
_ROW_PASS = ('(ctx.main.begin(d.view())\n .fetch(i8, m["B, [A # 96] / 32"], m["[A # 96] % 32"])\n'
             ' .collect(m["B, [A # 96] / 32"], m["[A # 96] % 32"])\n .commit(m["B, A # {}"], 1024))')
_BLOCKS = ("from visa import Context, DmTensor, axes, i8, m\n\naxes(A=15)\nctx = Context.acquire()\n"
           'buf = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A % 5, A / 5"], 0)')
_NIBBLES = ("from visa import Context, DmTensor, axes, i4, m\n\naxes(B=16)\nctx = Context.acquire()\n"
            'd = DmTensor(ctx, i4, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)')
_TILE = ('tile = d.view().tile(m["B"], {n}, m["B = {n} # 16"], {start}){note}\n'
         'ctx.main.begin(tile).fetch(i4, m["1"], m["B = {n} # 16"])')

_ROWS4 = {"imports": "from visa.engines.vector import BranchMode, IntraSliceReduceOpF32\n", "axes": ", R=4",
          "dtype": "f32", "element": 'm["R, A % 8"]', "fetch": '.fetch(f32, m["R"], m["A % 8"])',
          "collect": '.collect(m["R"], m["A % 8"])'}
_REDUCE = ('\n .vector_split(m["R, A % 8 / 4"], m["A % 4"])\n'
           ' .vector_intra_slice_reduce("R", {otime}, m["A % 4"], IntraSliceReduceOpF32.Add){note}'
           '\n .vector_concat(m["1"], m["A % 8"])')

# a sum over R of R × T rows: the reduce keeps one accumulator per Time step inside R (8 slots, L5278-5573)
_SLOTS = ('\n .vector_split(m["{order}, A % 8 / 4"], m["A % 4"])\n'
          ' .vector_intra_slice_reduce("R", m["T, A % 8 / 4"], m["A % 4"], IntraSliceReduceOpF32.Add)'
          '\n .vector_concat(m["T"], m["A % 8"])')


def _rows(order: str) -> dict[str, str]:
    """R × T rows of 8 f32 in the order ``order`` (``"R, T"`` or ``"T, R"``), summed over R."""
    return _ROWS4 | {"axes": ", R=4, T=16", "element": f'm["{order}, A % 8"]',
                     "fetch": f'.fetch(f32, m["{order}"], m["A % 8"])',
                     "collect": f'.collect(m["{order}"], m["A % 8"])',
                     "vector": _ve(_SLOTS.format(order=order)), "commit": '.commit(m["T, A % 8"], 1 << 12)'}


#: site key → the failing and the fixed program.
STREAMS: dict[str, Snippet] = {
    "commit.check_view LayoutError: the view holds but": stream(
        {"commit": _commit_view(dtype="i8", element='m["A % 8 # 32"]')}, {"commit": _commit_view()}),
    "commit.check_view LayoutError: the view's differs from": stream(
        {"commit": _commit_view(slice_='m["A % 256"]', element='m["A / 256"]')}, {"commit": _commit_view()}),
    "plan.plan_entry DtypeError: the vector engine works": stream(
        _I32 | {"dtype": "i8", "fetch": '.fetch(i8, m["1"], m["A % 8 # 32"])   # i8 into the Vector Engine',
                "collect": '.collect(m["1"], m["A % 8 # 32"])', "vector": _ve(_ADD)},
        _I32 | {"dtype": "i8", "fetch": '.fetch(i32, m["1"], m["A % 8"])   # widened to i32 by the fetch',
                "vector": _ve(_ADD)}),
    "plan.check_dtype DtypeError: the stage works on": _vector(_F32, _ADD, _SPLIT + _ADD_F + _CONCAT),
    "plan._mismatch LayoutError: expected got": _vector(
        _F32, '\n .vector_split(m["1"], m["A % 4"])' + _ADD_F + _CONCAT, _SPLIT + _ADD_F + _CONCAT),
    "plan.plan_trim LayoutError: the back lanes of": _vector(
        _F32, '\n .vector_trim_way4(m["A % 4"])' + _ADD_F + _CONCAT, _SPLIT + _ADD_F + _CONCAT),
    "common.refuse_in_sub_context TypestateError: the sub context has": stream(
        _CAST | {"begin": "ctx.sub.begin(d.view())   # the sub context has no Cast Engine"}, _CAST),
    "cast._plan HardwareLimitError: the holds elements bytes": stream(
        _CAST | {"vector": '\n .cast(bf16, m["A % 8"])   # 8 bf16 = 16 bytes: a flit is 32',
                 "commit": '.commit(m["A % 8"], 1 << 12)'}, _CAST),
    "cast._plan DtypeError": stream(_CAST | {"dtype": "i32", "fetch": '.fetch(i32, m["1"], m["A % 8"])'}, _CAST),
    "fetch._check_interleave_size LayoutError: the interleave axis must": stream(_interleave("J"), _interleave("I")),
    "fetch.plan_interleave LayoutError: interleaved tensors need identical": stream(
        _interleave("I", slice_='m["A % 256"]', element='m["A / 256"]'), _interleave("I")),
    "fetch._plan LayoutError: the interleave axis selects": stream(
        _interleave("I", time='m["1"]', packet='m["I, A % 8"]'), _interleave("I")),
    "plan.plan_enter TypestateError: is unavailable after a": stream(
        _two_group("\n .vector_filter(ValidBranchIds.of(0))"), _two_group("")),
    "plan.plan_stash TypestateError: vector_stash is unavailable in": stream(
        _two_group("\n .vector_stash()"), _two_group("")),
    "plan.plan_unzip LayoutError: the grouping axis is": stream(
        _two_group("", axis="J") | {"fetch": '.fetch(i32, m["I"], m["A % 8"])   # J is not in Time'},
        _two_group("")),
    "plan.check_vrf_operand DtypeError: the vrf operand is": stream(
        {"imports": _VRF[0], "before": _VRF[1].format(dtype="f32"),
         "vector": _ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)   # an f32 operand for an i32 add")},
        {"imports": _VRF[0], "before": _VRF[1].format(dtype="i32"),
         "vector": _ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "elementwise.plan_branch DtypeError: type mismatch comparison is": stream(
        {"imports": _VE.replace("BranchMode,", "BranchMode, InputCmp,"), "vector": _CMP.format("F32.Greater(0.5)")},
        {"imports": _VE.replace("BranchMode,", "BranchMode, InputCmp,"), "vector": _CMP.format("I32.Greater(0)")}),
    "plan.plan_stash TypestateError: a stash was already": _vector(
        _I32, "\n .vector_stash()" + _ADD + "\n .vector_stash()", "\n .vector_stash()" + _ADD),
    "plan.plan_stash_operand TypestateError: the stash operand needs": _vector(
        _I32, _ADD_STASH, "\n .vector_stash()" + _ADD_STASH),
    "plan.plan_filter LayoutError: executionids are 0 got": _vector(
        _I32, "\n .vector_filter(ValidBranchIds.of(16))", "\n .vector_filter(ValidBranchIds.of(0))"),
    "commit._check_addresses AddressError: the write of time": module(   # the manual's example, L7883-7897
        _ROWS, _ROW_PASS.format(88) + "   # 32-byte writes would pass the 88-byte rows", _ROW_PASS.format(96)),
    "sequencer._Ctx.incompatible IncompatibleShapesError: incompatible shapes no sequencer": module(   # L1660-1683
        _BLOCKS, 'stream = ctx.main.begin(buf.view()).fetch(i8, m["1"], m["[A % 3, A / 3] # 16"])',
        'stream = ctx.main.begin(buf.view()).fetch(i8, m["1"], m["[A % 5, A / 5] # 16"])'),
    "fetch.view_bit_base AddressError: the view starts at": module(
        _NIBBLES, _TILE.format(n=15, start=1, note="   # i4 element 1 starts mid-byte"),
        _TILE.format(n=14, start=2, note="")),
    "intra._plan LayoutError: otime must be time": stream(   # sum over R (L5278-5573)
        _ROWS4 | {"vector": _ve(_REDUCE.format(otime='m["R"]', note="   # OTime still names R"))},
        _ROWS4 | {"vector": _ve(_REDUCE.format(otime='m["A % 8 / 4"]', note=""))}),
    "intra._plan HardwareLimitError: accumulator slots required but": stream(
        _rows("R, T"), _rows("T, R")),   # R outermost: 16 T steps × 2 halves inside it; R innermost: none
    "plan.check_op DtypeError: on a stream takes": _vector(
        _I32, "\n .vector_logic(LogicBinaryOpF32.BitAnd, 1)", "\n .vector_logic(LogicBinaryOpI32.BitAnd, 1)"),
}
