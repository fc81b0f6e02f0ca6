"""The Aligner: Stream Adapter (activations) and TRF Sequencer (weights) (manual L3789–4296).

``collect_tensor.align(OutTime, OutPacket, trf)`` turns the collected stream ``[Time, Packet]`` and the TRF
tensor ``[Row, Element]`` into one *computation mapping* ``[Row, OutTime, OutPacket]`` (L3811–3812) that the
Reducer pairs element by element:

- the **Stream Adapter** (L3878–4034) gathers ``collect_flits`` 32-byte flits into a 64-byte ``OutPacket``
  (2: the innermost Time flit axis is consumed; 1: the flit is zero-padded to 64 bytes), broadcasts it to
  every Row, and repeats it over *tiling* axes appended innermost to ``OutTime`` (axes the activation lacks);
  it never reorders Time.
- the **TRF Sequencer** (L4035–4296) reads ``reg_read_size`` contiguous bytes per cycle and repeats them to
  fill 64 bytes, walking the TRF with nested-loop entries ``(size, stride)`` over ``OutTime`` (stride 0
  broadcasts); each Row reads its own bank row with the same pattern.  ``reg_read_size`` is derived: the
  contiguous innermost part the TRF Element and ``OutPacket`` have in common (L4107–4108).

:func:`plan` derives both configurations (or the refusal, naming level and axis); :func:`adapt` runs the
Stream Adapter over the data; :func:`addresses` enumerates the TRF Sequencer's reads (byte addresses, one
per computation step), which :func:`cache_misses` replays through the direct-mapped TRF cache (L4177–4199).

>>> from visa.hw import RNGD
>>> from visa.dtypes import bf16
>>> from visa.mapping import AxisSet
>>> m = AxisSet(M=32, N=8, K=16, L=2, O=2).m
>>> trf = TrfOperand(bf16, m["1"], m["1"], m["1"], m["N"], m["O, M, K"], "FirstHalf", 0)
>>> p = plan(RNGD, bf16, m["1"], m["1"], m["1"], m["M, O, L"], m["K"], trf, m["M, O"], m["L, K"])  # L3816-3873
>>> p.collect_flits, p.reg_read_bytes, p.entries_text()
(2, 32, 'E1 {size: 32, stride: 32 B}, E0 {size: 2, stride: 1024 B}')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.broadcast import TimeDigits, normal_digits
from visa.engines.cache import cached
from visa.engines.common import axes_text
from visa.engines.contraction import shift
from visa.engines.contraction.reducer import flat_items
from visa.errors import (
    AddressError,
    DtypeError,
    HardwareLimitError,
    IncompatibleShapesError,
    InsufficientInputError,
    LayoutError,
    TypestateError,
    VisaError,
)
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping.evaluate import _axis_sizes
from visa.mapping.sequencer import Entry, contiguous_elements, derive, merge_entries

__all__ = ["TrfOperand", "AlignPlan", "plan", "check_context", "adapt", "addresses", "cache_misses", "report_details",
           "cycles", "latency", "disjoint_axis"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
CALL = "align"


@dataclass(frozen=True)
class TrfOperand:
    """What the Aligner needs of a ``TrfTensor<D, Chip, Cluster, Slice, Row, Element>``: its type, mappings,
    address mode (``"Full"``, ``"FirstHalf"``, ``"SecondHalf"``, L4149–4157) and byte address in each Row."""

    dtype: type[dt.Scalar]
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    row: Mapping
    element: Mapping
    mode: str
    address: int


@dataclass(frozen=True)
class AlignPlan:
    """The Aligner's configuration: the Stream Adapter's and the TRF Sequencer's (manual L3878–4296).

    Stream Adapter: ``collect_flits``, the ``rows`` the packet is broadcast to, ``act_time`` (OutTime steps the
    activation provides) and ``tiles`` (its repetitions over the tiling axes, innermost).  TRF Sequencer:
    ``reg_read_bytes`` (``rr_elements`` elements), ``entries`` (outermost first; strides in elements of the
    TRF tensor; the manual numbers them innermost first, E0), ``base`` (element offset), ``address`` (the TRF
    tensor's byte address in its Row) and ``reg_type`` (the TRF slot format, L4142–4147).
    """

    dtype: type[dt.Scalar]
    rows: int
    collect_flits: int
    in_time: int
    in_packet: int
    out_time: int
    out_packet: int
    act_time: int
    tiles: int
    reg_read_bytes: int
    rr_elements: int
    entries: tuple[Entry, ...]
    base: int
    address: int
    mode: str
    reg_type: int
    element_size: int
    cache_entries: int
    cache_line_bytes: int
    trf_dtype: type[dt.Scalar] | None = None
    feed_flits: int = 0
    shifts: int = 1
    shift_stride: int = 0

    @property
    def weight_dtype(self) -> type[dt.Scalar]:
        """The TRF operand's element type: the stream's, or the narrower one of a mixed pair (``reg_type`` 1, 2)."""
        return self.trf_dtype or self.dtype

    @property
    def byte_entries(self) -> tuple[tuple[int, float], ...]:
        """Entries as the manual writes them: ``(size, stride in bytes)``, outermost first."""
        return tuple((e.size, e.stride * self.dtype.size_bits / 8) for e in self.entries)

    @property
    def base_bytes(self) -> float:
        """Byte address of the first read in the Row (the TRF tensor's address plus the base element)."""
        return self.address + self.base * self.dtype.size_bits / 8

    def entries_text(self) -> str:
        """``E1 {size: 32, stride: 32 B}, E0 {size: 2, stride: 1024 B}`` (E0 innermost, as L3861–3863)."""
        n = len(self.entries)
        parts = [f"E{n - 1 - k} {{size: {size}, stride: {stride:g} B}}" for k, (size, stride) in
                 enumerate(self.byte_entries)]
        return ", ".join(parts) or "no entries"

    def describe(self) -> str:
        """The configuration in the manual's words (for reports and traces)."""
        tiles = f", time broadcast ×{self.tiles}" if self.tiles > 1 else ""
        mixed = (f", {self.weight_dtype!r} weights as {self.dtype!r} (reg_type {self.reg_type})"
                 if self.weight_dtype is not self.dtype else "")
        if self.feed_flits:
            tiles = f", shift-reuse feed_flits={self.feed_flits} × {self.shifts} shifts of {self.shift_stride}" + tiles
        return (f"Stream Adapter: collect_flits={self.collect_flits}, rows={self.rows}{tiles}; TRF Sequencer "
                f"({self.mode}): reg_read_size={self.reg_read_bytes} B, {self.entries_text()}{mixed}")


def cycles(p: AlignPlan) -> int:
    """One 64-byte computation packet per cycle (the Stream Adapter is a pass-through for collect_flits 1 and 2,
    L3955–3957; the TRF Sequencer reads one ``reg_read_size`` per cycle, L4096–4100)."""
    return p.out_time


def latency(p: AlignPlan) -> int:
    """The fill latency the Stream Adapter adds: none for collect_flits 1 and 2 (a pass-through, L3955–3956); for
    shift-reuse (collect_flits = 3, "additional latency", L3957, whose figure the manual's missing "Advanced
    Operations" page holds) the ``feed_flits`` cycles the Flit Buffer takes to fill before its first shift."""
    return p.feed_flits


def report_details(p: AlignPlan) -> tuple[tuple[str, object], ...]:
    """The configuration's terms and the TRF cache behaviour (L4177–4199), for an EngineReport."""
    misses = cache_misses(p)
    shift = (("feed_flits", p.feed_flits), ("shifts", p.shifts), ("shift_stride", p.shift_stride)) \
        if p.feed_flits else ()
    return (("collect_flits", p.collect_flits), *shift, ("rows", p.rows), ("tiles", p.tiles),
            ("reg_read_size", p.reg_read_bytes), ("entries", p.entries_text()), ("base", p.base_bytes),
            ("reg_type", p.reg_type), ("trf_cache_misses", misses),
            ("trf_cache_miss_rate", round(misses / max(1, p.out_time), 4)))


# ------------------------------------------------------------------------------------------------ planning


def check_context(hw: HardwareProfile, context: str, call: str = CALL) -> None:
    """Refuse the Contraction Engine in the sub context (``"main"``/``"sub"``): the sub context has no compute
    engines (L3046–3051) and its commits follow fetch only (L2337); it loads the TRF/VRF for the main context.
    Pure (the stream and the mypy plugin call it)."""
    if context == "sub" and hw.commit.sub_follows_fetch_only:
        raise TypestateError(
            "the sub context has no compute engines (L3046–3051) and its commits follow fetch only (manual L2337); "
            "it loads the TRF/VRF for the main context", call=call, fix=f"{call} on ctx.main")


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping,
         time: Mapping, packet: Mapping, trf: TrfOperand, out_time: Mapping, out_packet: Mapping) -> AlignPlan:
    """``align::<OutTime, OutPacket, Row, TrfElement>(&trf)`` of a collected ``dtype`` stream ``[time, packet]``:
    the Stream Adapter and TRF Sequencer configuration, or the refusal (manual L3789–4296).

    Refusals name level, mapping and axis: a TRF tensor of another type or placement (the signature,
    L3889–3896), a Row count outside 1/2/4/8 (L4160–4168), an OutPacket that is not 64 bytes (L3921) or not
    the collected flits (collect_flits 2: the innermost Time flit axis and the packet; 1: the packet zero-padded,
    L3913–3927), an OutTime that reorders the stream's Time or puts a tiling axis outside the innermost
    positions (L3945), computation axes that clash with the Row's, TRF axes the computation never reads, weights
    the TRF does not hold (insufficient input), no ``reg_read_size`` (L4107–4108), the sequencer's limits
    (8 entries, 65,536 per entry, 32-bit strides, L4169–4175) and the 64-byte alignment of 64-byte reads
    (L4110–4111).  Pure (the mypy plugin calls it).
    """
    return _plan(hw, dtype, chip, cluster, slice_, time, packet, trf, out_time, out_packet)


@cached(256)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping,
          time: Mapping, packet: Mapping, trf: TrfOperand, out_time: Mapping, out_packet: Mapping) -> AlignPlan:
    ce = hw.contraction
    reg_type = _reg_type(hw, dtype, trf.dtype, trf)
    for level, mine, theirs in (("Chip", chip, trf.chip), ("Cluster", cluster, trf.cluster),
                                ("Slice", slice_, trf.slice)):
        if mine != theirs:
            raise LayoutError(f"the stream's {level} {mine!r} differs from the TRF tensor's {theirs!r}; each slice "
                              "contracts with its own TRF (L3811–3812, L3889–3896)", call=CALL, level=level,
                              mapping=f"{mine!r} vs {theirs!r}", axis=axes_text(mine) or axes_text(theirs),
                              fix=f"load the TRF with the stream's {level} mapping")
    rows = trf.row.size
    if rows not in ce.valid_row_counts:
        raise HardwareLimitError(f"the TRF tensor has {rows} Rows; the Reducer uses 1, 2, 4 or 8 Rows (manual "
                                 "L4160–4168, L4529)", call=CALL, level="Row", mapping=repr(trf.row),
                                 axis=axes_text(trf.row), fix="pad Row to a power of two: m[\"… # 8\"]")
    bits = dtype.size_bits
    flit_bits = hw.collect.flit_bytes * 8
    mac_bits = ce.mac_width_bytes * 8
    if packet.size * bits != flit_bits:
        raise HardwareLimitError(f"the collected packet holds {packet.size * bits / 8:g} bytes; the Stream Adapter "
                                 f"takes {hw.collect.flit_bytes}-byte flits (L3913–3916)", call=CALL,
                                 level="Packet", mapping=repr(packet), axis=axes_text(packet),
                                 fix="collect the stream first")
    n64 = mac_bits // bits
    if out_packet.size != n64:
        raise HardwareLimitError(
            f"OutPacket holds {out_packet.size} {dtype!r} elements ({out_packet.size * bits / 8:g} bytes); the "
            f"computation packet is always mac_width = {ce.mac_width_bytes} bytes ({n64} elements, L3921, L4099)",
            call=CALL, level="Packet", mapping=repr(out_packet), axis=axes_text(out_packet),
            fix=f"collect two flits (m[\"<innermost Time flit axis>, {packet.text}\"]) or pad one: "
                f"m[\"{packet.text} # {n64}\"]")
    shifting = shift.plan(hw, time, packet, out_time, out_packet, packet.size, n64)
    if shifting is not None:  # shift-reuse (convolution, L3737–3776): the row slid over the shift axis
        collect_flits, act, tiles_map = shifting.collect_flits, shifting.act, shifting.rest
    else:
        collect_flits, act = _stream_adapter(ce.default_collect_flits, time, packet, out_packet, n64)
        tiles_map = _tiles(act, time, packet, out_time)
    act_axes = time.axes | packet.axes
    for it in tiles_map.items() if shifting is None else ():
        clash = it.axes & act_axes
        for a in sorted(clash):
            if disjoint_axis(a, it, pair_of(time, packet)) is not None:
                raise LayoutError(
                    f"the tiling axis {it!r} of OutTime repeats the activation over {a}, which the stream already "
                    "has: the Stream Adapter only broadcasts over axes the activation lacks (L3934–3945)",
                    call=CALL, level="Time", mapping=repr(out_time), axis=a,
                    fix="tile over an axis of the TRF tensor only, or keep the stream's own axes in its Time order")
    # The Row dimension is separate: no computation axis may also index the Rows (L3811–3812, L3929–3933).
    comp = pair_of(out_time, out_packet)
    for a in sorted(trf.row.axes & comp.axes):
        if disjoint_axis(a, trf.row, comp) is not None:
            raise LayoutError(
                f"axis {a} indexes the Rows (Row {trf.row!r}) and also OutTime/OutPacket: the Stream Adapter "
                "broadcasts the same packet to every Row and each Row reads its own TRF bank row, so the Row's "
                "part of an axis cannot appear in the computation's Time or Packet (L3929–3933, L4160–4168)",
                call=CALL, level="Row", mapping=f"{trf.row!r} vs {out_time!r} × {out_packet!r}", axis=a,
                fix="after accumulate the Row becomes the output packet; leave it out of OutTime/OutPacket")
    unread = sorted(trf.element.axes - comp.axes)
    if unread:
        raise LayoutError(
            f"the TRF Element {trf.element!r} holds axis {unread[0]}, which the computation mapping "
            f"{out_time!r} × {out_packet!r} never names: the sequencer would read one slice of it and silently "
            "drop the rest (L4080–4084)", call=CALL, level="Element", mapping=repr(trf.element), axis=unread[0],
            fix=f"add {unread[0]} to OutTime (a tiling axis, L3934–3945) or to OutPacket")
    seq = _sequencer(hw, dtype, trf, out_time, out_packet, n64)
    shifts = shifting.shifts if shifting is not None else 1
    steps = act.size * shifts  # the packets the Stream Adapter emits before the time broadcast
    return AlignPlan(dtype, rows, collect_flits, time.size, packet.size, out_time.size, n64, steps,
                     out_time.size // steps, *seq, trf.address, trf.mode, reg_type, bits,
                     hw.trf.cache_entries_per_row, hw.trf.cache_entry_bytes, trf.dtype,
                     shifting.feed_flits if shifting is not None else 0, shifts,
                     shifting.stride if shifting is not None else 0)


def disjoint_axis(axis: str, a: Mapping, b: Mapping) -> str | None:
    """``None`` when the parts of ``axis`` that ``a`` and ``b`` hold are disjoint digits (every sum of their
    coordinates is distinct and inside the axis), else a description of the clash (the Row and tiling rules,
    L3929–3945)."""
    ea, eb = a.evaluate(), b.evaluate()
    ca = np.unique(np.where(ea.valid, ea.coord(axis), 0)[np.asarray(ea.valid)])
    cb = np.unique(np.where(eb.valid, eb.coord(axis), 0)[np.asarray(eb.valid)])
    if ca.size <= 1 and int(ca.max(initial=0)) == 0 or cb.size <= 1 and int(cb.max(initial=0)) == 0:
        return None
    sums = (ca[:, None] + cb[None, :]).reshape(-1)
    size = {**_axis_sizes(a.canon), **_axis_sizes(b.canon)}.get(axis, 0)
    if np.unique(sums).size != sums.size or int(sums.max()) >= size:
        return f"both hold digits of {axis}"
    return None


def _stream_adapter(default: int, time: Mapping, packet: Mapping, out_packet: Mapping,
                    n64: int) -> tuple[int, Mapping]:
    """collect_flits and the activation's remaining Time (``Time'``), or the refusal (L3913–3927)."""
    tried = []
    if time.size % default == 0:
        consumed, rest = time.modulo(default), time.stride(default)
        want = pair_of(consumed, packet)
        tried.append(f'collect_flits = {default}: m["{want}"]')
        if out_packet == want:
            return default, rest
    padded = packet.pad(n64)
    tried.append(f'collect_flits = 1: m["{padded}"]')
    if out_packet == padded:
        return 1, time
    raise LayoutError(
        f"OutPacket {out_packet!r} is not what the Stream Adapter makes of Time {time!r} × Packet {packet!r}: it "
        f"collects the innermost Time flits into the packet or zero-pads one flit ({'; '.join(tried)}; manual "
        "L3913–3927, L3961–4008)", call=CALL, level="Packet", mapping=repr(out_packet), axis=axes_text(out_packet),
        fix=f"write OutPacket as {' or '.join(t.split(': ', 1)[1] for t in tried)}")


def _tiles(act: Mapping, time: Mapping, packet: Mapping, out_time: Mapping) -> Mapping:
    """OutTime = [the activation's remaining Time, tiling axes...]: the tiling part, or the refusal."""
    items = flat_items(out_time)
    for j in range(len(items) + 1):
        head = pair_of(*items[:j]) if j else Mapping.identity()
        if head.size == act.size and head == act:
            rest = items[j:]
            return pair_of(*rest) if rest else Mapping.identity()
        if head.size > act.size:
            break
    act_axes = time.axes | packet.axes
    for j, it in enumerate(items):
        if not (it.axes & act_axes) and any(later.axes & act_axes for later in items[j + 1:]):
            axis = sorted(it.axes)[0] if it.axes else None
            raise LayoutError(
                f"OutTime {out_time!r} puts the tiling axis {it!r} outside the activation's Time m[\"{act}\"]: tiling "
                "axes are placed at the innermost positions of OutTime (manual L3945)", call=CALL, level="Time",
                mapping=repr(out_time), axis=axis, fix=f"write OutTime as [{act}, <tiling axes>]")
    raise LayoutError(
        f"OutTime {out_time!r} does not start with the stream's remaining Time m[\"{act}\"]: the Stream Adapter passes "
        "the activation's time steps through in order (it collects flits and broadcasts; it does not reorder, "
        "L3903–3912); reorder the weights instead (TRF Sequencer, L4084)", call=CALL, level="Time",
        mapping=repr(out_time), axis=axes_text(out_time), fix=f"write OutTime as [{act}, <tiling axes>]")


def _reg_type(hw: HardwareProfile, dtype: type[dt.Scalar], trf_dtype: type[dt.Scalar], trf: TrfOperand) -> int:
    """The TRF slot format the sequencer reads the weights with (L4142–4147): 5-bit (i4, i5), 10-bit (i8, i9,
    f8), 20-bit (bf16) for operands of one type; for the mixed pairs (``hw.trf.mixed_operands``: i4 weights with
    an i8 stream, reg_type 1; i8 weights with an f8 stream, reg_type 2) the narrower weights widen into the
    stream's slot, so they take the TRF space of the stream's type — refused when that does not fit the
    tensor's address mode (L4149–4157).  Other pairs are refused (align::<…>(&TrfTensor<D, …>), L3889–3896)."""
    if trf_dtype is not dtype:
        reg = hw.trf.mixed_operands.get((dtype.name, trf_dtype.name))
        if reg is None:
            pairs = ", ".join(f"{t} weights with a {s} stream" for s, t in hw.trf.mixed_operands)
            raise DtypeError(
                f"the stream is {dtype!r} but the TRF tensor is {trf_dtype!r}; align pairs operands of one element "
                f"type (align::<…>(&TrfTensor<D, …>), manual L3889–3896), or the mixed pairs of the TRF's reg_types "
                f"1 and 2 ({pairs}; L4142–4147)", call=CALL, level="Element", mapping=repr(trf.element),
                fix=f"load the weights as {dtype!r} (or fetch-cast the stream to {trf_dtype!r})")
        need = trf.element.size * dtype.size_bits // 8
        have = hw.trf.mode_bytes(trf.mode)
        start = hw.trf.half_row_bytes if trf.mode == "SecondHalf" else 0
        if trf.address + need > start + have:
            raise HardwareLimitError(
                f"the {trf_dtype!r} weights read with reg_type {reg} ({hw.trf.reg_type_names[reg]}) take "
                f"{hw.trf.reg_type_slots[reg]} slots each, as {dtype!r}: {trf.element.size} elements need {need} "
                f"bytes of a TRF Row from byte {trf.address}, and {trf.mode} has {have} (L4142–4157)", call=CALL,
                level="Element", mapping=repr(trf.element), axis=axes_text(trf.element),
                fix="tile the weights' Element, or load them into the Full TRF")
        return reg
    names = hw.trf.reg_type_names
    if dtype.size_bits == 4:
        return next(k for k, v in names.items() if "5-bit" in v)
    if dtype.size_bits == 8:
        return next(k for k, v in names.items() if "i8->f8" in v)
    return next(k for k, v in names.items() if "bf16" in v)


class _Unlimited:
    max_entries = 1 << 30
    max_entry_size = 1 << 62


def _dummies(mp: Mapping, n: int) -> int:
    """The largest ``p`` ≤ ``n`` (a power of two) such that ``mp``'s innermost ``p`` positions are ``1 # p``: one
    position holding the empty index, then padding — the manual's ``1+1#`` / ``1+1z`` (L3771)."""
    best, p = 1, 2
    while p <= n and mp.size % p == 0:
        ev = mp.modulo(p).evaluate()
        valid = np.asarray(ev.valid)
        if not (bool(valid[0]) and not bool(valid[1:].any()) and not any(bool(np.any(c)) for c in ev.coords.values())):
            break
        best, p = p, p * 2
    return best


def _sequencer(hw: HardwareProfile, dtype: type[dt.Scalar], trf: TrfOperand, out_time: Mapping, out_packet: Mapping,
               n64: int) -> tuple[int, int, tuple[Entry, ...], int]:
    """reg_read_size (bytes, elements), the time entries and the base element offset (L4085–4111, L4169–4175).

    Zero dummies (L3769–3776): when OutPacket ends in dummy lanes ``1 # p`` and the TRF Element in the same
    ``1 # p`` (whose padding the TRF holds as zeros, ``1z``), each read takes the weight with its ``p − 1``
    dummies: the sequencer is derived over the Element and OutPacket without them, its reads ``p`` times wider."""
    unit = min(_dummies(out_packet, n64), _dummies(trf.element, n64))
    if unit > 1:
        inner = TrfOperand(trf.dtype, trf.chip, trf.cluster, trf.slice, trf.row, trf.element.stride(unit), trf.mode,
                           trf.address)
        rr, n, entries, base = _sequencer_of(hw, dtype, inner, out_time, out_packet.stride(unit), n64 // unit, unit)
        scaled = tuple(Entry(e.size, e.stride * unit, e.packet) for e in entries)
        return rr, n * unit, _limits(hw, dtype, trf, list(scaled), base * unit, rr), base * unit
    return _sequencer_of(hw, dtype, trf, out_time, out_packet, n64, 1)


def _sequencer_of(hw: HardwareProfile, dtype: type[dt.Scalar], trf: TrfOperand, out_time: Mapping,
                  out_packet: Mapping, n64: int, unit: int) -> tuple[int, int, tuple[Entry, ...], int]:
    """:func:`_sequencer` over an Element each of whose positions stands for ``unit`` elements (its dummies)."""
    bits = dtype.size_bits * unit
    sizes = hw.trf.reg_read_sizes
    ev = out_packet.evaluate()
    lead = int(np.argmin(ev.valid)) if not bool(np.all(ev.valid)) else out_packet.size
    limit = 1 << max(0, math.ceil(math.log2(max(lead, 1))))
    errors: list[VisaError] = []
    n = min(n64, limit)
    while n >= 1:
        nbytes = n * bits / 8
        if nbytes in sizes:
            inner, outer = out_packet.modulo(n), out_packet.stride(n)
            if outer.axes & (trf.element.axes | trf.row.axes):
                n //= 2
                continue
            try:
                cfg = derive(trf.element, out_time, inner, limits=_Unlimited(), call=CALL)
            except VisaError as err:
                errors.append(err.with_traceback(None))  # (a kept traceback would hold this frame: a cycle)
                n //= 2
                continue
            packet_entries = [e for e in cfg.entries if e.packet]
            if n == 1 and not packet_entries or (packet_entries and packet_entries[-1].stride == 1
                                                 and contiguous_elements(packet_entries) == n):
                time_entries = [e for e in cfg.entries if not e.packet]
                if unit > 1:  # (checked once scaled, by the caller)
                    return int(nbytes), n, tuple(time_entries), cfg.base
                return int(nbytes), n, _limits(hw, dtype, trf, time_entries, cfg.base, int(nbytes)), cfg.base
        n //= 2
    insufficient = [e for e in errors if isinstance(e, InsufficientInputError)]
    if insufficient:
        raise insufficient[0]
    raise IncompatibleShapesError(
        f"no reg_read_size reads the TRF Element {trf.element!r} as the computation {out_time!r} × {out_packet!r}: "
        "each cycle the sequencer reads reg_read_size contiguous bytes (1–64) and repeats them over the 64-byte "
        "packet, and walks OutTime with its entries (L4085–4108)", call=CALL, level="Packet",
        mapping=repr(out_packet), axis=axes_text(out_packet) or axes_text(trf.element),
        fix="make the innermost OutPacket axes the innermost, contiguous axes of the TRF Element, and the outer "
            "OutPacket axes ones the TRF lacks (broadcast)")


def _limits(hw: HardwareProfile, dtype: type[dt.Scalar], trf: TrfOperand, entries: list[Entry], base: int,
            rr: int) -> tuple[Entry, ...]:
    """Merge entries past the limit, then check the TRF sequencer's limits and the read alignment."""
    lim = hw.trf.sequencer
    if len(entries) > lim.max_entries:
        entries = merge_entries(entries)
    text = ", ".join(str(e) for e in entries)
    if len(entries) > lim.max_entries:
        raise HardwareLimitError(f"the TRF sequencer needs {len(entries)} entries [{text}]; it has "
                                 f"{lim.max_entries} (manual L4169–4175)", call=CALL, level="Time",
                                 mapping=repr(trf.element), axis=axes_text(trf.element),
                                 fix="merge OutTime axes that are contiguous in the TRF Element")
    bits = dtype.size_bits
    for e in entries:
        if e.size > lim.max_entry_size:
            raise HardwareLimitError(f"a TRF sequencer entry iterates {e.size} times; the limit is "
                                     f"{lim.max_entry_size} (manual L4174)", call=CALL, level="Time",
                                     mapping=repr(trf.element), axis=axes_text(trf.element),
                                     fix="split the OutTime axis into two")
        if abs(e.stride * bits) // 8 >= 1 << (lim.stride_bits - 1):
            raise HardwareLimitError(f"a TRF sequencer stride of {e.stride * bits // 8} bytes does not fit a signed "
                                     f"{lim.stride_bits}-bit field (manual L4175)", call=CALL, level="Time",
                                     mapping=repr(trf.element), axis=axes_text(trf.element),
                                     fix="reorder OutTime so that each sequencer entry steps less far in the TRF")
    base_bits = trf.address * 8 + base * bits
    stride_bits = [e.stride * bits for e in entries]
    wide = hw.trf.wide_read_alignment_bytes
    if rr == hw.contraction.mac_width_bytes:
        bad = [s for s in [base_bits, *stride_bits] if s % (wide * 8)]
        if bad:
            raise AddressError(
                f"a {rr}-byte reg_read_size spans both TRF bank columns, so the base address and every sequencer "
                f"stride must be multiples of {wide} bytes; got base {base_bits / 8:g} B and strides "
                f"[{', '.join(f'{s / 8:g}' for s in stride_bits)}] B (manual L4110–4111)", call=CALL,
                level="Element", mapping=repr(trf.element), axis=axes_text(trf.element),
                fix=f"pad the TRF Element's inner axes to {wide}-byte multiples (e.g. `# {wide * 8 // bits}`)")
    else:
        line = hw.trf.bank_line_bytes * 8
        if any(s % (rr * 8) for s in [base_bits, *stride_bits]):
            addrs = _enumerate(tuple(entries), base_bits, bits)
            crossing = (addrs % line) + rr * 8 > line
            if bool(crossing.any()):
                k = int(np.argmax(crossing))
                raise AddressError(
                    f"read {k} of the TRF sequencer starts at byte {int(addrs[k]) / 8:g} and its {rr} bytes cross a "
                    f"{line // 8}-byte bank column (a read of at most {line // 8} bytes uses one column, "
                    "L4110–4111, L4191–4194)", call=CALL, level="Element", mapping=repr(trf.element),
                    axis=axes_text(trf.element), fix=f"align the TRF Element's inner axes to {rr} bytes")
    return tuple(entries)


def _enumerate(entries: tuple[Entry, ...], base_bits: int, element_bits: int) -> IntArray:
    """The bit address of every read: ``base_bits`` plus each entry's stride (in elements of ``element_bits``)."""
    out = np.full((), base_bits, dtype=np.int64)
    nd = len(entries)
    for k, e in enumerate(entries):
        shape = [1] * nd
        shape[k] = e.size
        out = out + (np.arange(e.size, dtype=np.int64) * (e.stride * element_bits)).reshape(shape)
    return np.broadcast_to(out, tuple(e.size for e in entries)).reshape(-1)


# ------------------------------------------------------------------------------------------------ execution


def addresses(p: AlignPlan) -> IntArray:
    """Byte address (in the Row) of every read of the TRF Sequencer, one per computation step (L4085–4100)."""
    return _addresses(p)


@cached(64)
def _addresses(p: AlignPlan) -> IntArray:
    bits = _enumerate(p.entries, p.address * 8 + p.base * p.element_size, p.element_size)
    out = bits // 8
    out.flags.writeable = False
    return out


@cached(64)
def cache_misses(p: AlignPlan) -> int:
    """Reads that miss the direct-mapped TRF cache (8 entries of 32 bytes per Row: 4 bank lines × 2 columns,
    L4177–4199), replaying the sequencer's addresses; a 64-byte read fills both columns of a line."""
    addr = _addresses(p)
    line_bytes = p.cache_line_bytes
    entries = p.cache_entries
    line = addr // line_bytes
    width = max(1, p.reg_read_bytes // line_bytes)
    lines = (line[:, None] + np.arange(width, dtype=np.int64)[None, :]).reshape(-1)
    step = np.repeat(np.arange(addr.size, dtype=np.int64), width)
    slot, tag = lines % entries, lines // entries
    order = np.lexsort((step, slot))
    s, t, st = slot[order], tag[order], step[order]
    miss = np.ones(s.size, dtype=bool)
    miss[1:] = (s[1:] != s[:-1]) | (t[1:] != t[:-1])
    return int(np.unique(st[miss]).size)


def adapt(p: AlignPlan, values: npt.NDArray[np.generic], known: BoolArray,
          act_time: int | None = None, units: BoolArray | None = None) -> tuple[npt.NDArray[np.generic], BoolArray]:
    """The Stream Adapter over collected data ``(Chip, Cluster, Slice, Time, Packet)``: the activation before
    time broadcast, ``(Chip, Cluster, Slice, act_time, 64-byte packet)`` (a view when collect_flits = 2; the
    zero padding of collect_flits = 1 is known zeros, L3922–3927).  ``act_time`` is the activation's time steps
    when ``values`` is a compact stream (:func:`adapt_digits`); ``units`` the ``(Chip, Cluster, Slice)`` positions
    holding data (shift-reuse computes only them)."""
    lead = values.shape[:3]
    steps = p.act_time if act_time is None else act_time
    if p.feed_flits:  # shift-reuse (collect_flits = 3)
        return shift.adapt(p.feed_flits, p.collect_flits, p.shifts, p.shift_stride, p.in_packet, values, known,
                           p.out_packet, units)
    if p.collect_flits == 1:
        out = np.zeros((*lead, steps, p.out_packet), dtype=values.dtype)
        kout = np.ones((*lead, steps, p.out_packet), dtype=bool)
        out[..., : p.in_packet] = values
        kout[..., : p.in_packet] = known
        return out, kout
    return (values.reshape(*lead, steps, p.out_packet), known.reshape(*lead, steps, p.out_packet))


def adapt_digits(p: AlignPlan, digits: TimeDigits) -> TimeDigits | None:
    """The Time digits of the activation the Stream Adapter makes of a stream repeated along Time (``digits``,
    :class:`~visa.engines.broadcast.BroadcastData`), or None when the compact stream cannot be adapted as such
    (collect_flits = 2 pairs the innermost time steps: that digit must not repeat and must be even)."""
    if p.feed_flits:  # shift-reuse reads each row several times: the stream is materialised
        return None
    if p.collect_flits == 1:
        return digits
    size, rep = digits[-1] if digits else (1, False)
    if rep or size % p.collect_flits:
        return None
    return normal_digits((*digits[:-1], (size // p.collect_flits, False)))
