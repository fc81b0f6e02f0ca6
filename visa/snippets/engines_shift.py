"""Snippets for the Stream Adapter's shift reuse (``visa/engines/contraction/shift.py``; manual L3740–3775,
L3928–3951): a convolution's rows read as a sliding window ``$(W : 1, Fw : d)`` (L1006–1016) and aligned
against C filters of K × Fw weights, the adapter shifting each row by one pixel per filter tap."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_SHIFT"]

_CONV = '''
from visa import Context, DmTensor, TrfAddress, TrfTensor, axes, bf16, m

axes(Y=4, K=2, W={w}, Fw={fw}, C=8, X={x})
ctx = Context.acquire()
src = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["Y, K, X"], 0)   # Y rows of X pixels, K channels
row = "[$(W : 1, Fw : {dil}){cut} # {x}]"   # pixel w + {dil}·fw of a row: a sliding window{cut_note}
time, packet = m[f"Y, K, {{row}} / 16"], m[f"{{row}} % 16"]
stream = ctx.main.begin(src.view().relabel(m[f"Y, K, {{row}}"])).fetch(bf16, time, packet).collect(time, packet)
w = TrfTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["C"], m["K, Fw"], TrfAddress.Full)   # C filters
stream.align(m["{otime}"], m["{opacket}"], w)   # out[y, k, fw, w] = row[w + {dil}·fw]
'''
_BASE = {"w": "30", "fw": "3", "x": "32", "dil": "1", "otime": "Y, K, Fw", "opacket": "W # 32",
         "cut": "", "cut_note": ""}


def _conv(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """30 outputs of a 3-tap filter over 32-pixel rows (``failing``'s fields replaced, and ``fixed``'s)."""
    return Snippet(_CONV.format(**(_BASE | failing)), _CONV.format(**(_BASE | (fixed or {}))))


#: site key → the failing and the fixed program.
ENGINES_SHIFT: dict[str, Snippet] = {
    "shift.plan HardwareLimitError: the input row spans": _conv({"fw": "20", "x": "64"}),
    "shift.plan HardwareLimitError: the last shift reads": _conv({"w": "14", "fw": "10", "dil": "2"},
                                                                  {"w": "14", "fw": "3", "dil": "2"}),
    "shift._stride LayoutError: lane of shift reads": _conv({"opacket": "[W # 32] % 2, [W # 32] / 2"}),
    "shift._split_out_time LayoutError: outtime is not the": _conv({"otime": "Y, Fw, K"}),
    "shift.plan LayoutError: outtime repeats after the": _conv({"otime": "Y, K, Fw, K"}),
    "shift._stride LayoutError: the computation packet names": _conv({"opacket": "C # 32"}),
    "shift._stride InsufficientInputError: lane of shift needs": _conv(
        {"cut": " % 16", "cut_note": " (its first 16 positions only)"}),
}
