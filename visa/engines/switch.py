"""Switch Engine: the ring of 256 slice routers that redistributes packets across slices (manual L3054–3542).

``FetchTensor.switch(Slice2, Time2, config)`` moves whole packets between the slices of a cluster and
reorders them in time; the packet itself, Chip and Cluster pass through unchanged (L3085–3089).  Each
topology is lowered to a *routing*: for every output slice ``o`` its snoop bitmap — the source slices whose
packets it outputs, in the order the counter-clockwise ring delivers them (ascending within a ring group,
L3092–3103, L3487–3491) — and, for every output time step, which input time step of which of those sources
arrives there.  The regular topologies are affine digit programs over the output ``(slice, time)`` position
(formulas of L3139–3331); a custom topology's bitmap is derived from the output mappings (L3332–3458).

:func:`plan` derives the routing from the configuration, checks it against the ring (every source in the
output's ring group of ``ring_size`` slices), and then checks that what the ring delivers *is* the layout
``(Slice2, Time2)`` says — position by position, tensor index against tensor index — so that a wrong
routing is a refusal naming the axis, never a wrong number.  :func:`execute` runs the routing as one gather;
:func:`cycles` is ``ring_size × input_time × cycles_per_packet`` (L3520–3542).  Forwarding (no ``switch``
call, L3120–3138) is :func:`forwarding`: ring size 1.

>>> from visa.hw import RNGD
>>> from visa.dtypes import i8
>>> from visa.mapping import AxisSet
>>> m = AxisSet(A=256, B=64, C=63, X=4).m
>>> p = plan(RNGD, i8, m["A"], m["B"], m["C # 64"], m["A / 4, X"], m["B / 4, A / 2 % 2, B % 4, A % 2"],
...          SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4))          # manual L3161-3209
>>> p.ring_size, p.bitmap(5), cycles(p)
(4, (4, 5, 6, 7), 512)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.broadcast import BroadcastData, compact_index
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text
from visa.errors import (
    HardwareLimitError,
    IncompatibleShapesError,
    InsufficientInputError,
    LayoutError,
    VisaError,
)
from visa.hw import HardwareProfile, SwitchEngine
from visa.mapping import Mapping, pair_of

__all__ = [
    "SwitchConfig", "Broadcast01", "Broadcast1", "Transpose", "InterTranspose", "CustomBroadcast", "Digit",
    "SwitchPlan", "plan", "forwarding", "execute", "cycles", "routes", "report_details",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

CALL = "switch"


# ------------------------------------------------------------------------------------------------ configurations


class SwitchConfig:
    """``enum SwitchConfig``: the topology a switch uses (manual L3058, L3197–3201, L3248–3251, L3277–3280,
    L3321–3325, L3377).

    Spelled as the manual's variants: ``SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4)``,
    ``SwitchConfig.Broadcast1(slice1=4, slice0=8)``, ``SwitchConfig.Transpose(slice1=32, slice0=2)``,
    ``SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2)``, ``SwitchConfig.CustomBroadcast(ring_size=4)``.
    Forwarding has no variant: it is a ``collect()`` straight on the FetchTensor (L3120–3123).
    """

    __slots__ = ()
    Broadcast01: ClassVar[type[Broadcast01]]
    Broadcast1: ClassVar[type[Broadcast1]]
    Transpose: ClassVar[type[Transpose]]
    InterTranspose: ClassVar[type[InterTranspose]]
    CustomBroadcast: ClassVar[type[CustomBroadcast]]

    @property
    def name(self) -> str:
        """The variant's name (``"Broadcast01"``, ...)."""
        return type(self).__name__

    def describe(self) -> str:
        """``Broadcast01 { slice1: 2, slice0: 2, time0: 4 }`` (the manual's notation)."""
        params = ", ".join(f"{k}: {getattr(self, k)}" for k in self.__dataclass_fields__)  # type: ignore[attr-defined]
        return f"{self.name} {{ {params} }}"


@dataclass(frozen=True)
class Broadcast01(SwitchConfig):
    """Broadcast the two inner Slice sub-axes slice1, slice0 over Time (manual L3139–3217).

    Input Slice ``[slice2, slice1, slice0]``, Time ``[time1, time0]``; output Slice ``[slice2, tile, tile]``,
    Time ``[time1, slice1, time0, slice0]`` (L3146–3158).
    """

    slice1: int
    slice0: int
    time0: int


@dataclass(frozen=True)
class Broadcast1(SwitchConfig):
    """Broadcast Slice sub-axis slice1 over Time, keeping slice0 in Slice (manual L3218–3254).

    Input Slice ``[slice2, slice1, slice0]``, Time ``[time0]``; output Slice ``[slice2, tile, slice0]``,
    Time ``[time0, slice1]`` (L3224–3235).
    """

    slice1: int
    slice0: int


@dataclass(frozen=True)
class Transpose(SwitchConfig):
    """Swap the two inner Slice sub-axes: ``[slice2, slice1, slice0] → [slice2, slice0, slice1]`` (L3255–3284)."""

    slice1: int
    slice0: int


@dataclass(frozen=True)
class InterTranspose(SwitchConfig):
    """Swap slice1 with the equally sized time1 (manual L3285–3331).

    Input Slice ``[slice2, slice1, slice0]``, Time ``[time2, time1, time0]`` with ``time1 = slice1``; output
    Slice ``[slice2, time1, slice0]``, Time ``[time2, time0, slice1]`` (L3288–3300).
    """

    slice1: int
    slice0: int
    time0: int


@dataclass(frozen=True)
class CustomBroadcast(SwitchConfig):
    """A snoop bitmap per slice, derived from ``Slice2``/``Time2``; the user gives ``ring_size`` (L3332–3482)."""

    ring_size: int


SwitchConfig.Broadcast01 = Broadcast01
SwitchConfig.Broadcast1 = Broadcast1
SwitchConfig.Transpose = Transpose
SwitchConfig.InterTranspose = InterTranspose
SwitchConfig.CustomBroadcast = CustomBroadcast


# ------------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class Digit:
    """One mixed-radix digit of the output ``(slice, time)`` position and what it selects at the source.

    An output slice (time step) index is the mixed-radix number of its digits, outermost first.  A digit of
    value ``v`` adds ``v · slice_weight`` to the source slice and ``v · time_weight`` to the source time step;
    a digit with both weights 0 is a broadcast (``tile``) digit.  ``role`` names it as the manual's diagrams
    do (``slice2``, ``tile``, ``time1``, ...).
    """

    role: str
    size: int
    slice_weight: int = 0
    time_weight: int = 0


@dataclass(frozen=True)
class SwitchPlan:
    """The Switch Engine's configuration for one switch (or a forwarding): the routing (snoop bitmaps and delivery
    order, L3092–3103) and its cost terms (L3520–3542).

    Regular topologies (and forwarding) carry ``slice_digits``/``time_digits``; a custom topology carries
    ``custom_bitmap`` (per output slice, its sources in delivery order) and ``moved`` (how many sources each
    output slice snoops: the size of the Slice→Time part of Time2).
    """

    topology: str
    config: SwitchConfig | None
    ring_size: int
    slices: int
    in_time: int
    out_time: int
    packet_bytes: int
    flits_per_packet: int
    slice_digits: tuple[Digit, ...] = ()
    time_digits: tuple[Digit, ...] = ()
    custom_bitmap: tuple[tuple[int, ...], ...] | None = field(default=None, repr=False)
    moved: int = 1

    @property
    def ring_groups(self) -> int:
        """Independent rings running in parallel: ``slices / ring_size`` (L3210–3212, L3530–3532)."""
        return self.slices // self.ring_size

    def bitmap(self, output_slice: int) -> tuple[int, ...]:
        """The snoop bitmap of one output slice: its source slices, in the order the ring delivers them."""
        src, _ = routes(self)
        row = src[output_slice]
        _, first = np.unique(row, return_index=True)
        return tuple(int(s) for s in row[np.sort(first)])

    def describe(self) -> str:
        """The configuration in the manual's words (for reports and traces)."""
        head = "Forwarding" if self.config is None else self.config.describe()
        return (f"{head}: ring_size {self.ring_size} ({self.ring_groups} rings), input_time {self.in_time}, "
                f"{self.flits_per_packet} flit(s) per {self.packet_bytes}-byte packet, output time "
                f"{self.out_time}")


def cycles(plan: SwitchPlan) -> int:
    """``ring_size × input_time × cycles_per_packet`` (manual L3137, L3207–3209, L3520–3529).

    All rings run in parallel, so the count does not grow with the number of rings (L3530–3532).
    """
    return plan.ring_size * plan.in_time * plan.flits_per_packet


def report_details(plan: SwitchPlan) -> tuple[tuple[str, object], ...]:
    """The cycle formula's terms (L3520–3542), for an :class:`~visa.engines.common.EngineReport`."""
    out: list[tuple[str, object]] = [
        ("topology", plan.topology), ("ring_size", plan.ring_size), ("input_time", plan.in_time),
        ("cycles_per_packet", plan.flits_per_packet), ("rings", plan.ring_groups)]
    if plan.custom_bitmap is not None:
        out.append(("bitmap[0]", plan.custom_bitmap[0]))
        out.append(("sfr_bitmap_write", "preempts DMA and the sub context; cost not given (L3336, L3533–3537)"))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ routing


def _digit_values(digits: tuple[Digit, ...], n: int) -> list[IntArray]:
    """Value of every digit at positions ``0..n-1`` (outermost digit first)."""
    out: list[IntArray] = []
    pos = np.arange(n, dtype=np.int64)
    inner = n
    for d in digits:
        inner //= d.size
        out.append((pos // inner) % d.size)
    return out


@cached(128)
def routes(plan: SwitchPlan) -> tuple[IntArray, IntArray]:
    """Where every output packet comes from (the ring's delivery, L3092–3103): ``(source_slice, source_time)``,
    both of shape ``(slices, out_time)`` (read-only).  Output slice ``o``, time step ``t`` outputs the packet that
    input slice ``source_slice[o, t]`` fetched at its time step ``source_time[o, t]``."""
    if plan.custom_bitmap is not None:
        table = np.asarray(plan.custom_bitmap, dtype=np.int64).reshape(plan.slices, plan.moved)
        t = np.arange(plan.out_time, dtype=np.int64)
        src = table[:, t % plan.moved]
        tim = np.broadcast_to(t // plan.moved, src.shape).copy()
    else:
        src = np.zeros((plan.slices, plan.out_time), dtype=np.int64)
        tim = np.zeros((plan.slices, plan.out_time), dtype=np.int64)
        for d, v in zip(plan.slice_digits, _digit_values(plan.slice_digits, plan.slices), strict=True):
            src += (v * d.slice_weight)[:, None]
            tim += (v * d.time_weight)[:, None]
        for d, v in zip(plan.time_digits, _digit_values(plan.time_digits, plan.out_time), strict=True):
            src += (v * d.slice_weight)[None, :]
            tim += (v * d.time_weight)[None, :]
    src.flags.writeable = False
    tim.flags.writeable = False
    return src, tim


def execute(plan: SwitchPlan, data: StreamData) -> StreamData:
    """Run the routing over a stream's data (shape ``(Chip, Cluster, Slice, Time, Packet)``): one gather.

    Every output packet is a copy of the source packet, values and poison alike (the switch never changes a
    value, L3085–3089); a :class:`~visa.engines.broadcast.BroadcastData` is read through its compact stream.
    """
    if isinstance(data, BroadcastData):  # a stream the fetch repeated along Time: gather from the compact one
        src, tim = routes(plan)
        flat = src * data.compact_values.shape[3] + compact_index(data.digits)[tim]
        return StreamData(_take_packets(data.compact_values, flat), _take_packets(data.compact_known, flat))
    flat = _flat_routes(plan, data.values.shape[3])
    return StreamData(_take_packets(data.values, flat), _take_packets(data.known, flat))


def _take_packets(a: npt.NDArray[Any], flat: IntArray) -> npt.NDArray[Any]:
    """``a[:, :, src, tim, :]`` for ``flat = src · Time + tim``: Slice and Time merged into one axis (C order) and
    gathered by ``np.take`` — the same packets, an order of magnitude faster than two index arrays in the middle
    of the shape (4M bf16 lanes of the ring-4 broadcast: 10 → 0.4 ms; ``bench_heldout4``)."""
    c, k, s, t = a.shape[:4]
    return np.take(a.reshape(c, k, s * t, *a.shape[4:]), flat, axis=2)


@cached(128)
def _flat_routes(plan: SwitchPlan, time: int) -> IntArray:
    """:func:`routes` as one index into the input's Slice × Time positions (``source_slice · time +
    source_time``, ``time`` the input stream's Time size; read-only)."""
    src, tim = routes(plan)
    flat = src * time + tim
    flat.flags.writeable = False
    return flat


# ------------------------------------------------------------------------------------------------ planning


def forwarding(hw: HardwareProfile, dtype: type[dt.Scalar], slice_: Mapping, time: Mapping,
               packet: Mapping) -> SwitchPlan:
    """Forwarding (no ``switch`` call, L3120–3138): every router outputs its own input; ring size 1."""
    sw = hw.switch
    nbytes = _packet_bytes(dtype, packet)
    return SwitchPlan("Forwarding", None, sw.forwarding_ring_size, slice_.size, time.size, time.size, nbytes,
                      _flits(sw, nbytes), (Digit("slice", slice_.size, slice_weight=1),),
                      (Digit("time", time.size, time_weight=1),))


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], slice_: Mapping, time: Mapping, packet: Mapping,
         slice2: Mapping, time2: Mapping, config: SwitchConfig) -> SwitchPlan:
    """``switch::<Slice2, Time2>(config)`` of a ``dtype`` stream ``[slice_, time, packet]``: the routing, or
    the refusal (manual L3054–3542).

    Refusals name the level, the mapping and the axis: a Slice that is not the full cluster (L3501–3502),
    topology parameters that do not divide the Slice/Time sizes, a ``ring_size`` that is not a power of two up
    to 256 or too small for the bitmap (L3364), axes moved from Slice to Time out of their input order
    (L3459–3470, L3504–3508) or not innermost in Time2 (L3471–3482, L3509–3514), and an output layout that
    is not what the ring delivers (topology pattern mismatch, L3498–3500).  Pure (the mypy plugin calls it).
    """
    if not isinstance(config, SwitchConfig):
        raise VisaError(f"the switch configuration must be a SwitchConfig variant such as "
                        f"SwitchConfig.Broadcast01(slice1=..., slice0=..., time0=...), got {config!r}", call=CALL,
                        fix="pass SwitchConfig.Broadcast01, Broadcast1, Transpose, InterTranspose or "
                            "CustomBroadcast")
    return _plan(hw.switch, dtype, slice_, time, packet, slice2, time2, config)


@cached(256)
def _plan(sw: SwitchEngine, dtype: type[dt.Scalar], slice_: Mapping, time: Mapping, packet: Mapping,
          slice2: Mapping, time2: Mapping, config: SwitchConfig) -> SwitchPlan:
    for name, mp in (("input Slice", slice_), ("Slice2", slice2)):
        if mp.size != sw.ring_slices:
            raise HardwareLimitError(
                f"{name} has {mp.size} positions; the switch runs on a full cluster of {sw.ring_slices} slices "
                "(InSlice::SIZE = OutSlice::SIZE = 256, manual L3501–3502)", call=CALL, level="Slice",
                mapping=repr(mp), axis=axes_text(mp), fix=f'pad it to the cluster: m["{mp.text} # {sw.ring_slices}"]')
    nbytes = _packet_bytes(dtype, packet)
    flits = _flits(sw, nbytes)
    n = sw.ring_slices
    if isinstance(config, CustomBroadcast):
        result = _custom(sw, slice_, time, slice2, time2, config, nbytes, flits)
    else:
        result = _regular(sw, slice_, time, time2, config, nbytes, flits)
        assert result.slices == n
    _verify(result, slice_, time, slice2, time2)
    return result


def _packet_bytes(dtype: type[dt.Scalar], packet: Mapping) -> int:
    return (packet.size * dtype.size_bits + 7) // 8


def _flits(sw: SwitchEngine, nbytes: int) -> int:
    return max(1, -(-nbytes // sw.width_bytes))


def _param(value: object, name: str, config: SwitchConfig) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise VisaError(f"{config.describe()}: {name} must be a positive integer, got {value!r}", call=CALL,
                        level="Time" if name.startswith("time") else "Slice",
                        fix=f"give {name} the size of the Slice/Time sub-axis it names")
    return value


def _divides(part: int, whole: int, what: str, config: SwitchConfig, level: str, mp: Mapping) -> None:
    if whole % part:
        raise IncompatibleShapesError(
            f"{config.describe()}: {what} = {part} does not divide the {level} size {whole} (the topology splits "
            f"{level} into sub-axes, manual L3146, L3224, L3288)", call=CALL, level=level, mapping=repr(mp),
            axis=axes_text(mp), fix=f"choose parameters whose product divides {whole}")


def _regular(sw: SwitchEngine, slice_: Mapping, time: Mapping, time2: Mapping, config: SwitchConfig, nbytes: int,
             flits: int) -> SwitchPlan:
    n, t_in = sw.ring_slices, time.size
    s1 = _param(getattr(config, "slice1"), "slice1", config)  # noqa: B009 - every regular variant has it
    s0 = _param(getattr(config, "slice0"), "slice0", config)  # noqa: B009
    ring = s1 * s0
    _divides(ring, n, "slice1 × slice0", config, "Slice", slice_)
    s2 = n // ring
    slice2_d = Digit("slice2", s2, slice_weight=ring)
    sd: tuple[Digit, ...]
    td: tuple[Digit, ...]
    if isinstance(config, Broadcast01):
        t0 = _param(config.time0, "time0", config)
        _divides(t0, t_in, "time0", config, "Time", time)
        sd = (slice2_d, Digit("tile", s1), Digit("tile", s0))
        td = (Digit("time1", t_in // t0, time_weight=t0), Digit("slice1", s1, slice_weight=s0),
              Digit("time0", t0, time_weight=1), Digit("slice0", s0, slice_weight=1))
    elif isinstance(config, Broadcast1):
        sd = (slice2_d, Digit("tile", s1), Digit("slice0", s0, slice_weight=1))
        td = (Digit("time0", t_in, time_weight=1), Digit("slice1", s1, slice_weight=s0))
    elif isinstance(config, Transpose):
        sd = (slice2_d, Digit("slice0", s0, slice_weight=1), Digit("slice1", s1, slice_weight=s0))
        td = (Digit("time", t_in, time_weight=1),)
    elif isinstance(config, InterTranspose):
        t0 = _param(config.time0, "time0", config)
        _divides(s1 * t0, t_in, "slice1 × time0 (time1 = slice1)", config, "Time", time)
        blocking = s1 * t0 * flits
        if blocking > sw.intertranspose_blocking_flits:
            raise HardwareLimitError(
                f"{config.describe()} sends slice1 × time0 × flits per packet = {s1} × {t0} × {flits} = {blocking} "
                f"consecutive blocking flits to a router, over the limit of {sw.intertranspose_blocking_flits} (a "
                "router buffers essentially one packet, manual L3489; the reference's InterTranspose bound)",
                call=CALL, level="Time", mapping=repr(time), axis=axes_text(time),
                fix="shrink time0 or the packet (fewer flits a packet), or transpose a smaller slice1")
        sd = (slice2_d, Digit("time1", s1, time_weight=t0), Digit("slice0", s0, slice_weight=1))
        td = (Digit("time2", t_in // (s1 * t0), time_weight=s1 * t0), Digit("time0", t0, time_weight=1),
              Digit("slice1", s1, slice_weight=s0))
    else:  # pragma: no cover - every variant is handled above
        raise VisaError(f"unknown switch topology {config!r}", call=CALL)
    out_time = math.prod(d.size for d in td)
    if time2.size != out_time:
        raise IncompatibleShapesError(
            f"{config.describe()} turns {t_in} input time steps into {out_time} "
            f"({' × '.join(f'{d.role} {d.size}' for d in td)}), but Time2 has {time2.size} (manual L3146–3158, "
            "L3224–3235, L3288–3300)", call=CALL, level="Time", mapping=repr(time2), axis=axes_text(time2),
            fix=_expected_text(config, slice_, time))
    return SwitchPlan(config.name, config, ring, n, t_in, out_time, nbytes, flits, sd, td)


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _custom(sw: SwitchEngine, slice_: Mapping, time: Mapping, slice2: Mapping, time2: Mapping,
            config: CustomBroadcast, nbytes: int, flits: int) -> SwitchPlan:
    ring = config.ring_size
    if isinstance(ring, bool) or not isinstance(ring, int) or not _is_pow2(ring) or ring > sw.max_ring_size:
        raise HardwareLimitError(
            f"ring_size must be a power of 2 up to {sw.max_ring_size}, got {ring!r} (manual L3364)", call=CALL,
            level="Slice", mapping=repr(slice2), axis=axes_text(slice2),
            fix="use the smallest power of two whose aligned slice groups contain every transfer")
    moved = _split_time2(slice_, time, time2)
    inner = moved if moved is not None else Mapping.identity()
    k = inner.size
    # For every output slice o and moved position j: the tensor index it must hold, located in the input Slice.
    s_ev, m_ev = slice2.evaluate(), inner.evaluate()
    if not bool(np.all(m_ev.valid)):
        j = int(np.argmin(m_ev.valid))
        raise LayoutError(
            f"position {j} of the Slice→Time part {inner!r} of Time2 is padding; the ring delivers packets of "
            "source slices only, so a moved axis cannot be padded (custom topologies, L3332–3458)", call=CALL,
            level="Time", mapping=repr(time2), axis=axes_text(inner),
            fix="resize the moved axis with '=' (partial extraction, L3420–3458) instead of padding it")
    foreign = sorted(inner.axes - slice_.axes)
    if foreign:
        raise InsufficientInputError(
            f"Time2 appends {inner!r} after the input Time, but axis {foreign[0]} is not an axis of the input Slice "
            f"{slice_!r}: only axes moved from Slice can follow the input Time (custom topologies, L3332–3458)",
            call=CALL, level="Time", mapping=repr(time2), axis=foreign[0],
            fix="append only (parts of) input Slice axes to Time2; broadcast a new axis in Slice2 instead")
    _check_order_structure(inner, slice_)
    names = sorted(slice_.axes)
    coords: dict[str, IntArray] = {}
    for a in names:
        sc = np.where(s_ev.valid, s_ev.coord(a), 0)[:, None]
        mc = m_ev.coord(a)[None, :]
        coords[a] = np.broadcast_to(sc + mc, (slice2.size, k))
    src, held = slice_.locate(coords, (slice2.size, k))
    need = np.broadcast_to(s_ev.valid[:, None], (slice2.size, k))
    if bool(np.any(need & ~held)):
        o, j = (int(x) for x in np.argwhere(need & ~held)[0])
        idx = ", ".join(f"{a}: {int(coords[a][o, j])}" for a in names if int(coords[a][o, j])) or "{}"
        raise InsufficientInputError(
            f"output slice {o} (moved position {j}) must hold {{{idx}}}, which no input slice holds", call=CALL,
            level="Time" if k > 1 else "Slice", mapping=f"{slice2!r} × {time2!r}",
            axis=axes_text(inner) if k > 1 else axes_text(slice2),
            fix="Slice2 and the moved part of Time2 must together name indices of the input Slice")
    # Output slices that are padding in Slice2 snoop their own ring position (they carry no data).
    own = np.arange(slice2.size, dtype=np.int64)[:, None]
    src = np.where(need, src, own)
    _check_order(src, need, inner, slice_)
    groups_ok = (src // ring) == (own // ring)
    if not bool(np.all(groups_ok)):
        o, j = (int(x) for x in np.argwhere(~groups_ok)[0])
        least = 1
        while not bool(np.all((src // least) == (own // least))):
            least *= 2
        raise HardwareLimitError(
            f"{config.describe()} cannot route: output slice {o} needs input slice {int(src[o, j])}, outside its "
            f"ring group of {ring} slices ({o // ring * ring}..{o // ring * ring + ring - 1}); this bitmap needs "
            f"ring_size {least} (manual L3364–3367)", call=CALL, level="Slice", mapping=repr(slice2),
            axis=axes_text(slice2), fix=f"CustomBroadcast(ring_size={least})")
    bitmap = tuple(tuple(int(v) for v in row) for row in src)
    return SwitchPlan("CustomBroadcast", config, ring, sw.ring_slices, time.size, time.size * k, nbytes, flits,
                      custom_bitmap=bitmap, moved=k)


def _split_time2(slice_: Mapping, time: Mapping, time2: Mapping) -> Mapping | None:
    """Time2 = [input Time, axes moved from Slice]: the moved part (None if nothing moves), or the refusal."""
    items = [it for it in time2.items() if it.size > 1]
    for j in range(len(items) + 1):
        head = pair_of(*items[:j]) if j else Mapping.identity()
        if head.size == time.size and head == time:
            rest = items[j:]
            if not rest:
                return None
            return pair_of(*rest)
    # Name the moved axis that input Time sits inside of (innermost rule), or the Time mismatch.
    moved_axes = set(slice_.axes) - set(time.axes)
    for j, it in enumerate(items):
        if it.axes & moved_axes and any(not (later.axes & moved_axes) for later in items[j + 1:]):
            axis = sorted(it.axes & moved_axes)[0]
            raise LayoutError(
                f"axis {axis} moves from Slice to Time ({it!r}) but input Time axes follow it in Time2; axes moved "
                "from Slice to Time arrive last per packet and must be the innermost Time2 axes (manual "
                "L3471–3482, L3509–3514)", call=CALL, level="Time", mapping=repr(time2), axis=axis,
                fix=f"write Time2 as [{time.text}, <moved axes>]; Broadcast01's time0 is the only exception")
    raise LayoutError(
        f"Time2 {time2!r} does not start with the input Time {time!r}; a switch cannot reorder time steps, it only "
        "appends the axes moved from Slice innermost (manual L3471–3482, L3509–3514)", call=CALL, level="Time",
        mapping=repr(time2), axis=axes_text(time2) or axes_text(time),
        fix=f"write Time2 as [{time.text}, <moved axes>]")


def _unit_steps(inner: Mapping, slice_: Mapping) -> list[tuple[Mapping, int | None]]:
    """For each moved item of Time2: how far (in input slices) one step of it moves the source."""
    out: list[tuple[Mapping, int | None]] = []
    for it in inner.items():
        if it.size < 2:
            continue
        ev = it.evaluate(np.array([0, 1]))
        pos = []
        for k in (0, 1):
            got, held = slice_.locate({a: np.array([int(ev.coord(a)[k])]) for a in slice_.axes}, (1,))
            pos.append(int(got[0]) if bool(held[0]) and bool(ev.valid[k]) else None)
        out.append((it, None if None in pos else int(pos[1]) - int(pos[0])))  # type: ignore[arg-type]
    return out


def _order_error(inner: Mapping, slice_: Mapping, axis: str | None) -> LayoutError:
    return LayoutError(
        f"the axes moved from Slice to Time, {inner!r}, do not keep their input Slice order {slice_!r}: the ring "
        "delivers each slice's sources in ring order and a router cannot reorder them (order preservation, "
        "manual L3459–3470, L3504–3508)", call=CALL, level="Time", mapping=repr(inner), axis=axis,
        fix="list the moved axes in Time2 in the order they have in the input Slice (outer first)")


def _check_order_structure(inner: Mapping, slice_: Mapping) -> None:
    """Order preservation read off the mappings: an outer moved item must step further in Slice than an
    inner one (checked before locating, so that a reversed pair is named as such)."""
    steps = [(it, w) for it, w in _unit_steps(inner, slice_) if w is not None]
    for (outer, w_out), (inner_it, w_in) in zip(steps, steps[1:], strict=False):
        if w_out < w_in:
            raise _order_error(inner, slice_, sorted(outer.axes | inner_it.axes)[0])


def _check_order(src: IntArray, need: BoolArray, inner: Mapping, slice_: Mapping) -> None:
    """The ring delivers a slice's sources in ascending ring order: the moved axes must keep their input order."""
    if src.shape[1] < 2:
        return
    rows = need[:, 0]
    step = np.diff(src[rows], axis=1)
    if bool(np.all(step > 0)):
        return
    raise _order_error(inner, slice_, axes_text(inner))


def _expected_text(config: SwitchConfig, slice_: Mapping, time: Mapping) -> str:
    """The output layout a regular topology produces from this input, as a fix text."""
    try:
        s1, s0 = getattr(config, "slice1"), getattr(config, "slice0")  # noqa: B009
        ring = s1 * s0
        outer = slice_.stride(ring)
        a1 = slice_.stride(s0).modulo(s1)
        a0 = slice_.modulo(s0)
        if isinstance(config, Broadcast01):
            t0 = config.time0
            s2t, t2t = f"[{outer}, <new axis of size {ring}>]", str(pair_of(time.stride(t0), a1, time.modulo(t0), a0))
        elif isinstance(config, Broadcast1):
            s2t, t2t = f"[{outer}, <new axis of size {s1}>, {a0}]", str(pair_of(time, a1))
        elif isinstance(config, Transpose):
            s2t, t2t = str(pair_of(outer, a0, a1)), str(time)
        elif isinstance(config, InterTranspose):
            t0 = config.time0
            b1 = time.stride(t0).modulo(s1)
            s2t = str(pair_of(outer, b1, a0))
            t2t = str(pair_of(time.stride(s1 * t0), time.modulo(t0), a1))
        else:
            return "follow the topology's layout"
    except VisaError:
        return "choose parameters that divide the Slice and Time sizes"
    return f'{config.name} makes Slice2 m["{s2t}"] and Time2 m["{t2t}"] from this input'


def _level_coords(mp: Mapping) -> tuple[dict[str, IntArray], BoolArray]:
    ev = mp.evaluate()
    valid = np.asarray(ev.valid)
    return {a: np.where(valid, c, 0) for a, c in ev.coords.items()}, valid


def _sum(a: str, outer: dict[str, IntArray], oi: IntArray | slice, inner: dict[str, IntArray],
         ii: IntArray | slice, shape: tuple[int, int]) -> IntArray:
    """Coordinate of axis ``a`` at every (outer, inner) position: the two levels' partial indices added."""
    total = np.zeros(shape, dtype=np.int64)
    if a in outer:
        part = outer[a][oi]
        total = total + (part[:, None] if part.ndim == 1 else part)
    if a in inner:
        part = inner[a][ii]
        total = total + (part[None, :] if part.ndim == 1 else part)
    return total


def _verify(p: SwitchPlan, slice_: Mapping, time: Mapping, slice2: Mapping, time2: Mapping) -> None:
    """What the ring delivers must be the layout (Slice2, Time2) says, at every valid output position."""
    src, tim = routes(p)
    shape = (src.shape[0], src.shape[1])
    si, sv = _level_coords(slice_)
    ti, tv = _level_coords(time)
    so, sov = _level_coords(slice2)
    to, tov = _level_coords(time2)
    every = slice(None)
    out_valid = sov[:, None] & tov[None, :]
    in_valid = sv[src] & tv[tim]
    got: dict[str, IntArray] = {}
    for a, n in _axis_sizes(slice_, time, slice2, time2).items():
        if a in so or a in to:
            out_valid = out_valid & (_sum(a, so, every, to, every, shape) < n)
        if a in si or a in ti:
            got[a] = _sum(a, si, src, ti, tim, shape)
            in_valid = in_valid & (got[a] < n)
    bad = out_valid & ~in_valid
    first_axis: str | None = None
    first_at = bad.size
    for a in sorted(got):
        diff = out_valid & in_valid & (got[a] != _sum(a, so, every, to, every, shape))
        if bool(diff.any()):
            at = int(np.flatnonzero(diff)[0])
            if at < first_at:
                first_at, first_axis = at, a
            bad = bad | diff
    if not bool(bad.any()):
        return
    o, t = (int(x) for x in np.argwhere(bad)[0])
    s, ts = int(src[o, t]), int(tim[o, t])
    held = _index_text({a: int(got[a][o, t]) for a in got}) if bool(in_valid[o, t]) else "padding"
    wanted = _index_text({a: int(_sum(a, so, every, to, every, shape)[o, t]) for a in set(so) | set(to)})
    axis = first_axis if first_at == int(np.flatnonzero(bad)[0]) else None
    axis = axis or first_axis or axes_text(slice2) or axes_text(time2)
    level = "Time" if t > 0 or (axis is not None and axis not in slice2.axes) else "Slice"
    head = "Forwarding" if p.config is None else p.config.describe()
    fix = _expected_text(p.config, slice_, time) if p.config is not None else "keep Slice and Time"
    raise IncompatibleShapesError(
        f"{head} delivers to output slice {o}, time step {t} the packet of input slice {s}, time step {ts}, which "
        f"holds {held}; Slice2 × Time2 say {wanted} is there (the output must match the topology's pattern, manual "
        "L3498–3500)", call=CALL, level=level, mapping=f"{slice2!r} × {time2!r}", axis=axis, fix=fix)


def _axis_sizes(*mps: Mapping) -> dict[str, int]:
    from visa.mapping.evaluate import _axis_sizes as sizes_of

    out: dict[str, int] = {}
    for mp in mps:
        out.update(sizes_of(mp.canon))
    return out


def _index_text(coords: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(coords.items()) if v) + "}"
