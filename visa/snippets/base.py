"""A snippet pair (:class:`Snippet`) and the templates the snippet modules fill in: a one-chip kernel
(HBM → DM → fetch → collect → commit → DM → HBM, the manual's first program, L158–220) whose lines each
snippet changes one at a time, and a module header for mappings and host tensors."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Snippet", "kernel", "stream", "dot", "module", "KERNEL_LINES", "STREAM_LINES", "DOT_LINES", "VECTOR", "VE"]


@dataclass(frozen=True)
class Snippet:
    """``failing`` raises the diagnostic; ``fixed`` is the smallest change that runs."""

    failing: str
    fixed: str


_KERNEL = '''
import numpy as np
from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m
{imports}
axes(A=2048)


{device}
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    {before}dm = {to_dm}
    out = (ctx.main.begin(dm.view())
           {fetch}
           {collect}{vector}
           {commit})
    return {to_hbm}


ctx = Context.acquire()
x = {host}
launch(kernel, ctx, {to_device})
'''

#: The kernel's lines as written when nothing is wrong: a snippet replaces one or two of them.
KERNEL_LINES: dict[str, str] = {
    "imports": "",
    "device": "@device(chip=1)",
    "before": "",
    "to_dm": 'x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)',
    "fetch": '.fetch(i32, m["1"], m["A % 8"])',
    "collect": '.collect(m["1"], m["A % 8"])',
    "vector": "",
    "commit": '.commit(m["A % 8"], 1 << 12)',
    "to_hbm": 'out.to_hbm(m["A"], ctx.tdma, 1 << 28)',
    "host": 'HostTensor.rand(i32, m["A"], np.random.default_rng(0))',
    "to_device": 'x.to_hbm(m["1"], m["A"], ctx.pdma, 0)',
}

#: The Vector Engine lines between collect and commit (``vector=VECTOR.format(ops=...)``, with ``imports=VE``).
VECTOR = ("\n           .vector_init()\n           .vector_intra_slice_branch(BranchMode.Unconditional){ops}"
          "\n           .vector_final()")
VE = "from visa.engines.vector import BranchMode, FxpBinaryOp\n"


_STREAM = '''
from visa import Context, DmTensor, axes, f32, i8, i32, m
{imports}
axes(A=2048{axes})
ctx = Context.acquire()
d = DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["A / 8"], {element}, 0)   # a DM tensor (left unwritten here)
{before}({begin}
 {fetch}
 {collect}{vector}
 {commit})
'''

#: The lines of the stream snippet (:func:`stream`): one pass over a DM tensor with no kernel around it.
STREAM_LINES: dict[str, str] = {
    "imports": "",
    "axes": "",
    "before": "",
    "begin": "ctx.main.begin(d.view())",
    "dtype": "i32",
    "element": 'm["A % 8"]',
    "fetch": '.fetch(i32, m["1"], m["A % 8"])',
    "collect": '.collect(m["1"], m["A % 8"])',
    "vector": "",
    "commit": '.commit(m["A % 8"], 1 << 12)',
}


def stream(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """One Tensor Unit pass over a DM tensor (no kernel, no DMA), with ``failing``'s lines replaced, and with
    ``fixed``'s (the unchanged pass by default)."""
    return Snippet(_STREAM.format(**(STREAM_LINES | failing)), _STREAM.format(**(STREAM_LINES | (fixed or {}))))


_DOT = '''
from visa import AccumulationKind, Context, DmTensor, TrfAddress, axes, bf16, m
{imports}
axes(A=2048)
ctx = Context.acquire()
lhs = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0)
rhs = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 1 << 12)
trf = (ctx.sub.begin(rhs.view())
       .fetch(bf16, m["1"], m["A"])
       .collect(m["A / 16"], m["A % 16"])
       {to_trf})
({begin}
 .fetch(bf16, m["1"], m["A"])
 .collect(m["A / 16"], m["A % 16"])
 {align}
 {contract}
 {accumulate}
 {cast}
 {commit})
'''

#: The lines of the dot-product snippet (:func:`dot`, the manual's second program, L301–377).
DOT_LINES: dict[str, str] = {
    "imports": "",
    "to_trf": '.to_trf(m["1"], m["A"], TrfAddress.Full)',
    "begin": "ctx.main.begin(lhs.view())",
    "align": '.align(m["A / 32"], m["A % 32"], trf)',
    "contract": '.contract(m["1"])',
    "accumulate": '.accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved)',
    "cast": '.cast(bf16, m["1 # 16"])',
    "commit": '.commit(m["1 # 8"], 1 << 13)',
}


def dot(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """The manual's dot product over two DM tensors (the TRF loaded by the sub context, the main context's
    align, contract, accumulate and cast), with ``failing``'s lines replaced, and with ``fixed``'s."""
    return Snippet(_DOT.format(**(DOT_LINES | failing)), _DOT.format(**(DOT_LINES | (fixed or {}))))


def kernel(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """The kernel with ``failing``'s lines replaced, and with ``fixed``'s (the unchanged kernel by default)."""
    return Snippet(_KERNEL.format(**(KERNEL_LINES | failing)), _KERNEL.format(**(KERNEL_LINES | (fixed or {}))))


def module(head: str, failing: str, fixed: str) -> Snippet:
    """A short module: ``head`` (imports, axes) then the failing or the fixed lines."""
    return Snippet(f"\n{head.strip()}\n\n{failing.strip()}\n", f"\n{head.strip()}\n\n{fixed.strip()}\n")
