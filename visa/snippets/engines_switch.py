"""Snippets for the Switch Engine (``visa/engines/switch.py``; manual "Switch Engine", L3054–3542), asked of
its ``plan`` (what ``.switch(Slice2, Time2, config)`` and the mypy plugin call): a stream of i8 packets over
a cluster's 256 slices, moved between slices by a topology."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_SWITCH"]

_SWITCH = '''
from visa import RNGD, SwitchConfig, axes, i8, m
from visa.engines import switch

axes({axes})
# {question}
switch.plan(RNGD, i8, m["{slice_}"], m["{time}"], m["{packet}"], m["{slice2}"], m["{time2}"],
            SwitchConfig.{config})
'''
_BC = {"axes": "A=256, B=64, C=64, X=4", "slice_": "A", "time": "B", "packet": "C", "slice2": "A / 4, X",
       "time2": "B, A % 4", "config": "Broadcast01(slice1=1, slice0=4, time0=1)",
       "question": "each group of 4 slices shares its packets (the Performance section's example, L3526–3529)"}
_CUSTOM = {"axes": "A=16, B=16, C=8, D=8, E=8, X=4, Y=2, Z=2", "slice_": "A, B", "time": "C", "packet": "D, E",
           "slice2": "A, B / 4, X", "time2": "C, B / 2 % 2, B % 2", "config": "CustomBroadcast(ring_size=4)",
           "question": "each slice gathers the packets of its group of four (L3459–3470)"}
_BC3 = {"axes": "A=256, B=64, C=63, X=4", "slice_": "A", "time": "B", "packet": "C # 64", "slice2": "A / 4, X",
        "time2": "B / 4, A / 2 % 2, B % 4, A % 2", "config": "Broadcast01(slice1=2, slice0=2, time0=4)",
        "question": "four slices share their packets, two by two (L3146–3209)"}
_INTER = {"axes": "A=8, B=32, C=256", "slice_": "C", "time": "A", "packet": "B # 32",
          "slice2": "C / 32, A / 2 % 2, C % 16", "time2": "A / 4, A % 2, C / 16 % 2",
          "config": "InterTranspose(slice1=2, slice0=16, time0=2)",
          "question": "pairs of slices exchange halves of their rows (L3304–3331)"}
_RING32 = {"slice2": "A / 2, Y, B / 2, Z", "config": "CustomBroadcast(ring_size=32)"}


def _switch(base: dict[str, str], failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    return Snippet(_SWITCH.format(**(base | failing)), _SWITCH.format(**(base | (fixed or {}))))


#: site key → the failing and the fixed program.
ENGINES_SWITCH: dict[str, Snippet] = {
    "switch.plan VisaError: the switch configuration must": Snippet(
        _SWITCH.format(**_BC).replace("SwitchConfig.Broadcast01(slice1=1, slice0=4, time0=1)", '"Broadcast01"'),
        _SWITCH.format(**_BC)),
    "switch._plan HardwareLimitError: has positions the switch": _switch(
        _BC, {"axes": "A=128, B=64, C=64, X=4"}, {"axes": "A=256, B=64, C=64, X=4"}),
    "switch._param VisaError: must be a positive": _switch(
        _BC, {"config": "Broadcast01(slice1=0, slice0=4, time0=1)"}),
    "switch._divides IncompatibleShapesError: does not divide the": _switch(
        _BC, {"config": "Broadcast01(slice1=1, slice0=3, time0=1)"}),
    "switch._custom HardwareLimitError: ring_size must be a": _switch(
        _CUSTOM, {"config": "CustomBroadcast(ring_size=3)"}),
    "switch._custom InsufficientInputError: time2 appends after the": _switch(
        _CUSTOM, {"axes": "A=16, B=16, C=8, D=8, E=8, X=4, F=4", "time2": "C, F"}),
    "switch._order_error LayoutError: the axes moved from": _switch(_CUSTOM, {"time2": "C, B % 2, B / 2 % 2"}),
    "switch._split_time2 LayoutError: axis moves from slice": _switch(
        _CUSTOM | _RING32, {"time2": "A % 2, C, B % 2"}, {"time2": "C, A % 2, B % 2"}),
    "switch._custom HardwareLimitError: cannot route output slice": _switch(
        _CUSTOM, {"slice2": "B % 4, B / 4, A % 4, A / 4", "time2": "C", "config": "CustomBroadcast(ring_size=128)"},
        {"slice2": "B % 4, B / 4, A % 4, A / 4", "time2": "C", "config": "CustomBroadcast(ring_size=256)"}),
    "switch._verify IncompatibleShapesError: delivers to output slice": _switch(
        _BC3, {"time2": "B / 4, A % 2, B % 4, A / 2 % 2"}),
    "switch._split_time2 LayoutError: time2 does not start": _switch(
        _CUSTOM, {"time2": "C % 4, C / 4, B / 2 % 2, B % 2"}),
    "switch._regular IncompatibleShapesError: turns input time steps": _switch(_BC, {"time2": "B, A % 2"}),
    "switch._custom LayoutError: position of the slice": _switch(_CUSTOM, {"time2": "C, B / 2 % 2, B % 2 # 4"}),
    "switch._regular HardwareLimitError: sends slice1 time0 flits": _switch(_INTER, {"packet": "B # 256"}),
    "switch._custom InsufficientInputError: output slice moved position": _switch(
        _CUSTOM, {"slice_": "A, B = 8 # 16",
                  "question": "each slice gathers the packets of its group of four, but the input holds B < 8 only"}),
}
