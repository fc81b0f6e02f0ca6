"""Cast Engine: precision lowering of 32-bit results, one 32-byte flit at a time (manual L6756–6819).

``stream.cast(D2, OutPacket)`` narrows an i32 or f32 stream (after Collect, the Contraction Engine or the
Vector Engine) to i4/i8/i16 or f8e5m2/f8e4m3/f16/bf16 (L6774–6779).  The input packet is exactly one flit
(``P # (32 / sizeof(D1))``); each element is converted and the result is padded back to one flit
(``P # (32 / sizeof(D2))``); Time passes through (L6780–6784).

Rounding and overflow are not in the manual; this engine (docs/manual-notes.md, "Cast Engine"):

- **floats** round to nearest, ties to even, once from the exact f32 value; a value whose rounded magnitude
  exceeds the target's largest finite value becomes ±inf (bf16, f16, f8e5m2) or NaN (f8e4m3, which has no
  infinity); NaN stays NaN (the target's canonical quiet NaN, sign kept) — bit for bit what
  ``ml_dtypes``/numpy ``astype`` gives, except that numpy's f16 keeps NaN payload bits;
- **integers** wrap: the low 4, 8 or 16 bits, two's complement (numpy ``astype`` and ``ml_dtypes.int4``; the
  Vector Engine's Clip stage saturates explicitly before a cast when that is wanted, L4953–4972).

The padding the engine adds is poison (``#``: arbitrary values, L3771); the Commit Engine drops it.

>>> from visa.hw import RNGD
>>> from visa.dtypes import i32, i8
>>> from visa.mapping import AxisSet
>>> m = AxisSet(A=8, B=4).m
>>> p = plan(RNGD, i32, i8, m["A"], m["A # 32"], m["B"])                  # manual L6786-6802
>>> p.in_elements, p.out_elements, p.overflow, cycles(p)
(8, 32, 'wrap', 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visa import dtypes as dt
from visa.engines import fast_shared
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text, refuse_in_sub_context
from visa.engines.deferred import PaddedLanes
from visa.engines.fast_cast_rows import cast_stream_occupied
from visa.engines.shared import SharedRows
from visa.errors import DtypeError, HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.memory.known import all_true

__all__ = ["CastPlan", "plan", "check_context", "execute", "cycles", "report_details", "overflow_mode", "ROUNDING"]

CALL = "cast"

#: Rounding of every float narrowing (the manual is silent; see the module docstring).
ROUNDING: dt.Rounding = "nearest_even"


def overflow_mode(dst: type[dt.Scalar]) -> dt.Overflow:
    """What the Cast Engine does with a value past ``dst``'s range (the manual is silent, L6756–6819): integers
    wrap; floats become ±inf, or NaN for f8e4m3 (no infinity) — the choices of the module docstring."""
    if dst.kind == "int":
        return "wrap"
    return "inf" if getattr(dst, "has_inf", True) else "nan"


@dataclass(frozen=True)
class CastPlan:
    """The Cast Engine's configuration for one pass (L6756–6819): types, packet sizes, time steps, rounding and
    overflow."""

    src: type[dt.Scalar]
    dst: type[dt.Scalar]
    in_elements: int
    out_elements: int
    time: int
    rounding: dt.Rounding
    overflow: dt.Overflow

    def describe(self) -> str:
        """The configuration in the manual's words."""
        return (f"{self.src!r} → {self.dst!r}: {self.in_elements} → {self.out_elements} elements per 32-byte flit, "
                f"{self.time} flits, round {self.rounding.replace('_', ' ')}, overflow {self.overflow}")


def cycles(plan: CastPlan) -> int:
    """One flit per cycle: the engine is a pass-through that is never the bottleneck (L6816–6819)."""
    return plan.time


def report_details(plan: CastPlan) -> tuple[tuple[str, object], ...]:
    """The plan's terms (one flit per cycle, L6816–6819), for an :class:`~visa.engines.common.EngineReport`."""
    return (("from", repr(plan.src)), ("to", repr(plan.dst)), ("flits", plan.time),
            ("rounding", plan.rounding), ("overflow", plan.overflow))


def check_context(hw: HardwareProfile, context: str) -> None:
    """Refuse the Cast Engine in the sub context (``"main"``/``"sub"``): the sub context has no compute engines
    (L3046–3051) and its commits follow fetch only (L2337).  Pure (the stream and the mypy plugin call it)."""
    refuse_in_sub_context(hw, context, "Cast Engine", CALL, "Packet")


def plan(hw: HardwareProfile, src: type[dt.Scalar], dst: type[dt.Scalar], in_packet: Mapping, out_packet: Mapping,
         time: Mapping) -> CastPlan:
    """``cast::<D2, OutPacket>()`` of a ``src`` stream ``[time, in_packet]``: the configuration, or the refusal.

    Refusals: a type pair the engine does not lower (L6774–6779), an input or output packet that is not one
    32-byte flit (L6780–6784), and an OutPacket that is not the input packet's data padded to a flit.  Pure
    (the mypy plugin calls it).
    """
    return _plan(hw, src, dst, in_packet, out_packet, time.size)


@cached(256)
def _plan(hw: HardwareProfile, src: type[dt.Scalar], dst: type[dt.Scalar], in_packet: Mapping, out_packet: Mapping,
          time: int) -> CastPlan:
    refusal = hw.cast_refusal(src.name, dst.name)
    if refusal is not None:
        raise DtypeError(refusal, call=CALL, level="Packet", mapping=repr(in_packet),
                         fix="the Cast Engine lowers i32 to i4/i8/i16 and f32 to f8e5m2/f8e4m3/f16/bf16; "
                             "use the Vector Engine for other conversions")
    flit = hw.cast.packet_bytes
    for what, mp, d in (("input packet", in_packet, src), ("OutPacket", out_packet, dst)):
        nbits = mp.size * d.size_bits
        want = flit * 8 // d.size_bits
        if nbits != flit * 8:
            raise HardwareLimitError(
                f"the {what} holds {mp.size} {d!r} elements ({nbits / 8:g} bytes); the Cast Engine takes and "
                f"gives one {flit}-byte flit ({want} {d!r} elements, manual L6780–6784)", call=CALL,
                level="Packet", mapping=repr(mp), axis=axes_text(mp),
                fix=(f"collect the stream into {flit}-byte flits first" if what == "input packet" else
                     f'pad the data to one flit: m["{in_packet.text} # {want}"]'))
    expect = in_packet.pad(out_packet.size)
    if out_packet != expect:
        raise LayoutError(
            f"OutPacket {out_packet!r} is not the input packet {in_packet!r} padded to {out_packet.size} elements: "
            "the Cast Engine converts each element in place and pads the flit (Packet = [P # (32 / sizeof(D2))], "
            "manual L6780–6784)", call=CALL, level="Packet", mapping=repr(out_packet),
            axis=", ".join(sorted(out_packet.axes ^ in_packet.axes)) or axes_text(out_packet),
            fix=f'write OutPacket as m["{in_packet.text} # {out_packet.size}"]')
    return CastPlan(src, dst, in_packet.size, out_packet.size, time, ROUNDING, overflow_mode(dst))


def execute(plan: CastPlan, data: StreamData) -> StreamData:
    """Convert every element (round/overflow per the plan) and pad each flit (L6780–6784); the padding is
    poison (L3771)."""
    if fast_shared.CAST.on and isinstance(data, SharedRows):  # the distinct rows only (fast_shared)
        return data.map(lambda rows: execute(plan, rows))
    values = data.values
    lead = values.shape[:-1]
    if values.shape[-1] != plan.in_elements:
        raise ValueError(f"cast data of packet {values.shape[-1]} for a plan of {plan.in_elements}")
    # Poisoned inputs carry arbitrary storage; convert them as zeros so that no conversion can fail on them.
    every = all_true(data.known)  # (O(1) for a stream known everywhere: no mask is read or made)
    fast = None if every else cast_stream_occupied(plan, values, data.known)  # (cast.occupied)
    if fast is not None:
        return PaddedLanes(fast[0], plan.out_elements, fast[1])
    src = values if every else np.where(data.known, values, np.zeros((), dtype=values.dtype))
    converted = dt.convert(src, plan.src, plan.dst, rounding=plan.rounding, overflow=plan.overflow)
    shape = (*lead, plan.out_elements)
    if every:  # known in the converted lanes, poison in the padding: one flit's pattern, broadcast
        lanes = np.arange(plan.out_elements) < plan.in_elements
        lanes.flags.writeable = False
        known = np.broadcast_to(lanes, shape)
    else:
        known = np.zeros(shape, dtype=bool)
        known[..., : plan.in_elements] = data.known
    # the padding is made only if read (PaddedLanes): the commit writes the converted lanes themselves
    return PaddedLanes(np.asarray(converted, dtype=plan.dst.storage), plan.out_elements, known)
