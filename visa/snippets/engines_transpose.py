"""Snippets for the Transpose Engine (``visa/engines/transpose.py``; manual "Transpose Engine", L6820–7041),
asked of its ``plan`` (what ``.transpose(OutTime, OutPacket)`` and the mypy plugin call): a stream of i8 rows
``[C, D] × [E # 32]`` turned into ``[C, E] × [D # 32]``."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_TRANSPOSE"]

_T = '''
from visa import RNGD, axes, {dtype}, m
from visa.engines import transpose

axes({axes})
# {question}
transpose.plan(RNGD, {dtype}, m["{time}"], m["{packet}"], m["{otime}"], m["{opacket}"])
'''
_BASE = {"dtype": "i8", "axes": "C=8, D=8, E=8", "time": "C, D", "packet": "E # 32", "otime": "C, E",
         "opacket": "D # 32", "question": "transpose each C's D × E block of i8 (L6841–6856)"}
_WIDE = {"axes": "C=8, D=2, E=8", "packet": "E", "opacket": "D # 8",
         "question": "transpose each C's D × E block of i32"}


def _t(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    return Snippet(_T.format(**(_BASE | failing)), _T.format(**(_BASE | (fixed or {}))))


#: site key → the failing and the fixed program.
ENGINES_TRANSPOSE: dict[str, Snippet] = {
    "transpose._check_packets HardwareLimitError: the input packet holds": _t({"packet": "E # 16"}),
    "transpose._check_packets HardwareLimitError: outpacket holds elements the": _t(
        {"axes": "C=8, D=2, E=8", "opacket": "D # 16"}, {"axes": "C=8, D=2, E=8"}),
    "transpose._check_unpack HardwareLimitError: the unpack stage keeps": _t(
        {"axes": "C=2, D=2, E=9"}, {"axes": "C=2, D=2, E=8"}),
    "transpose._violations HardwareLimitError: in_rows rows of -bit": _t(
        {"axes": "C=2, D=16, E=4"}, {"axes": "C=2, D=8, E=4"}),
    "transpose._violations HardwareLimitError: in_cols packets_per_col elements_per_packet for": _t(
        {"axes": "C=2, D=2, Q=3, E=8", "time": "C, D, Q", "otime": "C, Q, E"},
        {"axes": "C=2, D=2, Q=2, E=8", "time": "C, D, Q", "otime": "C, Q, E"}),
    "transpose._violations HardwareLimitError: out_rows output flits per": _t({"otime": "C, E # 16"}),
    "transpose._violations HardwareLimitError: the trim stage keeps": _t(
        {"axes": "A=4, B=4", "time": "A", "packet": "B # 32", "otime": "B = 2", "opacket": "A # 32"},
        {"axes": "A=4, B=4", "time": "A", "packet": "B # 32", "otime": "B", "opacket": "A # 32"}),
    "transpose._no_transpose IncompatibleShapesError: the closest configuration puts": _t({"otime": "E, C"}),
    "transpose._plan UnsupportedFeatureError: the transpose engine handles": _t(
        _WIDE | {"dtype": "i64", "question": "transpose each C's D × E block of i64"}, _WIDE | {"dtype": "i32"}),
}
