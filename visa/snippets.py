"""A kernel that fails with a diagnostic, and the same kernel fixed (``visa explain CODE`` prints both).

Keyed by the diagnostic's *site key* (:func:`visa.diagnostics.site_key`), not its code, so that renumbering
codes never detaches a snippet.  ``tests/test_snippets.py`` runs every pair: the failing one must raise exactly
its site's code, the fixed one must run.  Each snippet is a whole program (imports included).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Snippet", "SNIPPETS"]


@dataclass(frozen=True)
class Snippet:
    """``failing`` raises the diagnostic; ``fixed`` is the smallest change that runs."""

    failing: str
    fixed: str


_FETCH = '''
import numpy as np
from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m

axes(A=2048)


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % {packet}"]){comment}
           .collect(m["1"], m["A % 8"])
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)


ctx = Context.acquire()
x = HostTensor.rand(i32, m["A"], np.random.default_rng(0))
launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0))
'''

_AXES = '''
from visa import axes, m

axes({declared})
print(m["A, B"].size)
'''

_LAUNCH = '''
import numpy as np
from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m

axes(A=8)

{decorator}def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    return x


ctx = Context.acquire()
launch(kernel, ctx, HostTensor.rand(i32, m["A"], np.random.default_rng(0)).to_hbm(m["1"], m["A"], ctx.pdma, 0))
'''

_STRIDE = '''
from visa import axes, m

axes(A=12)
print(m["A / {stride}"].size)
'''

#: site key → the failing and the fixed program.
SNIPPETS: dict[str, Snippet] = {
    "sequencer._Ctx.insufficient InsufficientInputError: needs indices of that": Snippet(
        _FETCH.format(packet=16, comment="     # each slice holds 8 elements of A, not 16"),
        _FETCH.format(packet=8, comment="      # a packet of the 8 elements the slice holds")),
    "axes.AxisSet.size UnknownAxisError: axis is not declared": Snippet(
        _AXES.format(declared="A=8"), _AXES.format(declared="A=8, B=4")),
    "context.launch TypestateError: is not a device": Snippet(
        _LAUNCH.format(decorator=""), _LAUNCH.format(decorator="@device(chip=1)\n")),
    "syntax._size_error MappingSyntaxError: has size which does": Snippet(
        _STRIDE.format(stride=5), _STRIDE.format(stride=4)),
}
