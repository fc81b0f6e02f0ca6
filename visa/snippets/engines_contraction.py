"""Snippets for the Contraction Engine (``visa/engines/contraction``, ``visa/stream/contraction.py``; manual
"Contraction Engine", L3670–4548): M rows of K activations against N rows of K weights in the TRF, aligned,
contracted and accumulated; and, for the rules a stream reaches only with sizes too big for a snippet, the
engine's own ``plan_align`` / ``plan_contract`` / ``plan_accumulate`` (what the mypy plugin calls)."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_CONTRACTION"]

_MATMUL = '''
from visa import AccumulationKind, Context, DmTensor, ReduceOp, TrfAddress, TrfTensor, axes, bf16, i8, m

axes(M=32, N=8, K=32, T=2, R=3)
ctx = Context.acquire()
x = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, K"], 0)   # M rows of K activations
w = TrfTensor(ctx, {wdtype}, m["1"], m["1 # 2"], {wslice}, m["{row}"], m["{welement}"], TrfAddress.{mode})   # weights
(ctx.main.begin(x.view())
 .fetch(bf16, m["M, K / 16"], m["K % 16"])
 .collect(m["M, K / 16"], m["K % 16"])
 .align(m["{otime}"], m["{opacket}"], w)
 .contract(m["1"]{op})
 .accumulate(m["{otime}"], m["{row}"], AccumulationKind.Interleaved))
'''
_LINES = {"wdtype": "bf16", "wslice": 'm["1 # 256"]', "row": "N", "welement": "K", "mode": "Full", "otime": "M",
          "opacket": "K", "op": ""}


def _matmul(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """out[m, n] = Σ_k x[m, k] · w[n, k] (``failing``'s fields replaced, and ``fixed``'s)."""
    return Snippet(_MATMUL.format(**(_LINES | failing)), _MATMUL.format(**(_LINES | (fixed or {}))))


_PLAN = '''
from visa import RNGD, axes, bf16, f32, i4, i8, m
from visa.engines import contraction as ce

axes({axes})
{setup}# {question} (the mypy plugin asks the same of a kernel's chain)
{call}
'''


def _plan(axes: str, question: str, call: str, fixed_call: str, setup: str = "") -> Snippet:
    """A rule asked of the engine's plan function directly (a stream reaching it needs sizes too big for a
    snippet, or a type the stream refuses first)."""
    fields = {"axes": axes, "question": question, "setup": setup}
    return Snippet(_PLAN.format(call=call, **fields), _PLAN.format(call=fixed_call, **fields))


_TRF = ('w = ce.TrfOperand(bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["{}"], "Full", 0)   # the weights\n')
_ALIGN = ('ce.plan_align(RNGD, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["{time}"], m["K % 16"], w,\n'
          '              m["{otime}"], m["K"])')
_WIDE = "may the TRF be read 64 bytes at a time with the weights' rows T padded so?"
_TILE = ('ce.plan_align(RNGD, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M"], m["K"], w, m["{}"], m["K # 32"])')
_SEQ = 'ce.plan_accumulate(RNGD, f32, m["N"], m["M, K / 16"], m["1"], m["{}"], m["1 # 8"], "Sequential")'
_W4 = ('w = ce.TrfOperand(i4, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"], "{}", 0)   # i4 weights, i8 slots\n')
_I8 = ('ce.plan_align(RNGD, i8, m["1"], m["1 # 2"], m["1 # 256"], m["K / 32"], m["K % 32"], w,\n'
       '              m["K / 64"], m["K % 64"])')
_ROWS = ('w = ce.TrfOperand(bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["T, K # {}"], "Full", 0)   # T rows\n')
_BY_T = 'ce.plan_align(RNGD, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M"], m["K"], w, m["M, T"], m["K # 32"])'
_AT = _ROWS.format(32).replace('"Full", 0)', '"Full", {})')   # the weights from byte {} of each row
_NINE = "A=2, B=2, C=2, D=2, E=2, F=2, G=2, H=2, I=2, N=8, K=32"

#: site key → the failing and the fixed program.
ENGINES_CONTRACTION: dict[str, Snippet] = {
    "aligner._plan LayoutError: the stream's differs from": _matmul({"wslice": 'm["# 1 + 1 + # 254"]'}),
    "aligner._plan HardwareLimitError: the trf tensor has": _matmul({"row": "R"}),
    "aligner._reg_type DtypeError: the stream is but": _matmul(
        {"wdtype": "i8", "mode": "SecondHalf"}),
    "aligner._plan LayoutError: the trf element holds": _matmul({"welement": "T, K"}, {"welement": "K"}),
    "aligner._stream_adapter LayoutError: outpacket is not what": _matmul({"opacket": "K % 16, K / 16"}),
    "reducer._plan_contract HardwareLimitError: reduce-max uses row 0": _matmul(
        {"op": ", ReduceOp.Max"}, {"op": ", ReduceOp.Add"}),
    "contraction.contract VisaError: the reduce operation must": _matmul({"op": ', "Add"'}, {"op": ", ReduceOp.Add"}),
    "aligner._limits HardwareLimitError: the trf sequencer needs": _plan(
        _NINE, "may nine tiling axes be walked against the TRF's order?",
        _ALIGN.format(time="K / 16", otime="I, H, G, F, E, D, C, B, A"),
        _ALIGN.format(time="K / 16", otime="A, B, C, D, E, F, G, H, I"),
        _TRF.format("A, B, C, D, E, F, G, H, I, K")),
    "aligner._limits AddressError: a -byte reg_read_size spans": Snippet(   # K padded to 36: 72-byte steps
        _PLAN.format(axes="M=2, N=8, K=32, T=2", question=_WIDE, setup=_TRF.format("T, K # 36"),
                     call=_ALIGN.format(time="M, K / 16", otime="M, T")),
        _PLAN.format(axes="M=2, N=8, K=32, T=2", question=_WIDE, setup=_TRF.format("T, K # 64"),
                     call=_ALIGN.format(time="M, K / 16", otime="M, T"))),
    "reducer._plan_contract DtypeError: the reducer multiplies only": _plan(
        "K=32", "may the Reducer multiply f32 operands?", 'ce.plan_contract(RNGD, f32, m["K"], m["1"])',
        'ce.plan_contract(RNGD, bf16, m["K"], m["1"])'),
    "reducer._plan_contract HardwareLimitError: tree depth leaves outputs": _plan(
        "K=64", "may the Reducer keep all 64 i8 products of a packet?", 'ce.plan_contract(RNGD, i8, m["K"], m["K"])',
        'ce.plan_contract(RNGD, i8, m["K"], m["K / 2"])'),
    "reducer._plan_contract HardwareLimitError: reducing products to needs": _plan(
        "K=64", "may the Reducer sum 64 bf16 products to one?", 'ce.plan_contract(RNGD, bf16, m["K"], m["1"])',
        'ce.plan_contract(RNGD, bf16, m["K % 32"], m["1"])'),
    "reducer._plan_accumulate HardwareLimitError: the axes inner to": _plan(
        "M=64, N=8, K=64", "may an Interleaved accumulation over K / 16 keep M and K % 16 / 4 inside it?",
        'ce.plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["K % 16 / 4"], m["M, K % 16 / 4"], m["N"],\n'
        '                   "Interleaved")',
        'ce.plan_accumulate(RNGD, f32, m["N"], m["M, K / 16"], m["K % 16 / 4"], m["M, K % 16 / 4"], m["N"],\n'
        '                   "Interleaved")'),
    "reducer._segments LayoutError: outtime's kept axis is": _plan(
        "M=32, N=8, K=64", "may the accumulation put K / 16 back after M?",
        'ce.plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["1"], m["M, K / 16"], m["N"], "Interleaved")',
        'ce.plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["1"], m["M"], m["N"], "Interleaved")'),
    "aligner._tiles LayoutError: outtime puts the tiling": _plan(
        "M=32, N=8, K=16, T=5", "may the weights' axis T be walked outside the activation's M?",
        _TILE.format("T, M"), _TILE.format("M, T"), _TRF.format("T, K")),
    "reducer._plan_accumulate LayoutError: accumulation outputs time with": _plan(
        "M=32, N=8, K=64", "may a Sequential accumulation over K / 16 output Time M (without the Rows N)?",
        _SEQ.format("M"), _SEQ.format("M, N")),
    "reducer.plan_accumulate LayoutError: unknown accumulation kind": _plan(
        "M=32, N=8, K=64", "may an accumulation be 'Diagonal'?",
        'ce.plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["1"], m["M"], m["N"], "Diagonal")',
        'ce.plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["1"], m["M"], m["N"], "Interleaved")'),
    "reducer._plan_contract LayoutError: unknown reduce operation the": _plan(
        "K=32", "may the Reducer take the minimum of a packet's products?",
        'ce.plan_contract(RNGD, bf16, m["K"], m["1"], reduce_op="Min")',
        'ce.plan_contract(RNGD, bf16, m["K"], m["1"], reduce_op="Max")'),
    "aligner._reg_type HardwareLimitError: the weights read with": Snippet(
        _PLAN.format(axes="N=8, K=8192", question="may 8192 i4 weights, read in i8 slots, sit in half a TRF row?",
                     setup=_W4.format("FirstHalf"), call=_I8),
        _PLAN.format(axes="N=8, K=8192", question="may 8192 i4 weights, read in i8 slots, sit in a whole TRF row?",
                     setup=_W4.format("Full"), call=_I8)),
    "aligner._limits HardwareLimitError: a trf sequencer entry": Snippet(
        _PLAN.format(axes="M=2, N=8, K=16, T=65537", question="may OutTime walk 65,537 weight rows T in one entry?",
                     setup=_ROWS.format(32), call=_BY_T),
        _PLAN.format(axes="M=2, N=8, K=16, T=65536", question="may OutTime walk 65,536 weight rows T in one entry?",
                     setup=_ROWS.format(32), call=_BY_T)),
    "aligner._limits HardwareLimitError: a trf sequencer stride": Snippet(
        _PLAN.format(axes="M=2, N=8, K=16, T=2", question="may OutTime step 2 GiB between two weight rows T?",
                     setup=_ROWS.format(1 << 30), call=_BY_T),
        _PLAN.format(axes="M=2, N=8, K=16, T=2", question="may OutTime step 64 bytes between two weight rows T?",
                     setup=_ROWS.format(32), call=_BY_T)),
    "aligner._limits AddressError: read of the trf": Snippet(
        _PLAN.format(axes="M=2, N=8, K=16, T=2", question="may the weights start 16 bytes into a TRF row?",
                     setup=_AT.format(16), call=_BY_T),
        _PLAN.format(axes="M=2, N=8, K=16, T=2", question="may the weights start 32 bytes into a TRF row?",
                     setup=_AT.format(32), call=_BY_T)),
    "aligner._plan LayoutError: the tiling axis of": _matmul({"otime": "M, M"}),   # M tiled again over M
    "aligner._sequencer_of IncompatibleShapesError: no reg_read_size reads the": _matmul(
        {"welement": "K % 2, K / 2"}),   # the weights' K stored even-first: no contiguous read of the packet's K
}
