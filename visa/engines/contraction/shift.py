"""Shift-reuse in the Stream Adapter: the convolution's sliding window along a packet (manual L3737–3776,
L3917–3920, L3928; "Advanced Operations", which the manual names but does not contain, L3876, L3957).

A convolution ``$(H + Fh)$(W + Fw)K, FhFwKC → HWC`` reads each input row once and slides it: the ``$(H + Fh)``
sliding is the fetch's (a buffer relabelled with a linear combination, L1006–1016), the ``$(W + Fw)`` one the
Stream Adapter's.  The collected stream carries the input row as a linear combination whole — its Packet (and the
flit axis of its Time) is ``$(W : s, Fw : d)`` cut into 32-byte flits, each position holding the row's element at
``s·w + d·fw``.  With ``collect_flits = 3`` the Flit Buffer (96 bytes, L3928) takes ``feed_flits`` flits of the
row (2 by default, 3 for a row longer than 64 bytes, L3754) and the rest zero; for every shift ``j`` of the shift
axis (an OutTime axis of the combination's terms, innermost after the activation's own Time) it emits the 64-byte
computation packet ``buffer[ℓ + σ·j]``, lane ``ℓ`` of OutPacket:

- filter-stride 1 (L3738–3745): ``$(W : 1, Fw : 1)``, OutTime ``[…, Fw]``, OutPacket ``W # 32``: σ = 1;
- filter-stride 2 (L3746–3760): ``$(W : 2, Fw : 1)``, OutTime ``[…, Fw / 2]``, OutPacket ``W # 16, Fw % 2``
  (``Fw / 2`` extracted as an outer product, L3748): σ = 2;
- dilation 2 (L3761–3768): ``$(W : 1, Fw : 2)``, OutTime ``[…, Fw]``, OutPacket ``W # 32``: σ = 2;
- both (L3769–3776): ``$(W : 2, Fw : 2)``, OutPacket ``W # 16, 1 # 2``: the odd lanes are dummies, contracted
  with the TRF's zero dummies ``1 # 2`` (``1z``) to nothing.

:func:`plan` derives ``feed_flits``, the shift axis, its count and σ from the mappings, checking that every lane
of the computation holds, after the shift, the element its index names (or refusing, naming the lane); the
"index" of a stream position inside the combination is its position there (:func:`visa.mapping.evaluate.lin_key`).
:func:`adapt` runs it over the collected data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa.engines.common import axes_text
from visa.errors import HardwareLimitError, InsufficientInputError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping.canon import Dim, Lin, Win
from visa.mapping.evaluate import forward, inverse, lin_key, lin_keys

__all__ = ["ShiftPlan", "plan", "adapt", "carried_lin"]

CALL = "align"
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ShiftPlan:
    """The Stream Adapter's shift-reuse: ``feed_flits`` flits of each input row into the ``collect_flits``-flit
    buffer, ``shifts`` packets per row read at ``σ = stride`` elements apart, ``act`` the activation's Time before
    the shift (``Time'``), ``rest`` the OutTime after the shift axis (tiling axes)."""

    feed_flits: int
    collect_flits: int
    shifts: int
    stride: int
    act: Mapping
    shift: Mapping
    rest: Mapping
    flit_elements: int

    @property
    def buffer_elements(self) -> int:
        """Elements the Flit Buffer holds (``collect_flits`` flits)."""
        return self.collect_flits * self.flit_elements


def carried_lin(packet: Mapping) -> Lin | None:
    """The linear combination a collected packet carries whole (the input row of a convolution), if any."""
    found: list[Lin] = []

    def walk(dims: tuple[Dim | Lin, ...]) -> None:
        for d in dims:
            if isinstance(d, Lin):
                found.append(d)
            elif isinstance(d.atom, Win):
                walk(d.atom.inner)

    walk(packet.canon)
    return found[0] if len(found) == 1 else None


def _lin_axes(lin: Lin) -> frozenset[str]:
    from visa.mapping.canon import axis_atoms

    return frozenset(a.name for part, _ in lin.parts for a in axis_atoms(part) if hasattr(a, "name"))


def plan(hw: HardwareProfile, time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping,
         flit_elements: int, n64: int) -> ShiftPlan | None:
    """The shift-reuse configuration of ``align(out_time, out_packet, …)`` over a stream ``[time, packet]`` whose
    packet carries a linear combination, or None when the packet carries none (the plain Stream Adapter then
    applies).  Refusals name the level, mapping and axis: a row longer than the buffer's ``max_feed_flits``
    flits (L3754), an OutTime that does not continue the activation's Time with a shift axis of the
    combination's terms (L3740–3775), lanes whose element is not at one shift stride from the unshifted lane
    (insufficient input), and a read past the 96-byte Flit Buffer (L3928, L3951)."""
    lin = carried_lin(packet)
    if lin is None:
        return None
    ce = hw.contraction
    key = lin_key(lin)
    lin_axes = _lin_axes(lin)
    feed = next((f for f in range(1, ce.max_feed_flits + 1)
                 if time.size % f == 0 and key not in lin_keys(time.stride(f).canon)), None)
    if feed is None:
        raise HardwareLimitError(
            f"the input row {key} spans more than {ce.max_feed_flits} flits of the stream's Time {time!r}; the "
            f"shift buffer takes at most feed_flits = {ce.max_feed_flits} (L3754, L3928)", call=CALL, level="Time",
            mapping=repr(time), axis=key, fix="split the row (fewer W per packet), or feed it in flits of 32 bytes "
                                             "innermost in Time")
    act = time.stride(feed)
    row = pair_of(time.modulo(feed), packet)
    shift, rest = _split_out_time(act, out_time, lin_axes)
    for axis in sorted(rest.axes & (lin_axes | act.axes | packet.axes)):
        raise LayoutError(f"OutTime {out_time!r} repeats {axis} after the shift axis {shift!r}: only tiling axes the "
                          "activation lacks may follow it (L3934–3945)", call=CALL, level="Time",
                          mapping=repr(out_time), axis=axis, fix=f"write OutTime as [{act}, {shift}, <tiling axes>]")
    stride = _stride(row, lin, shift, out_packet)
    reach = n64 - 1 + stride * (shift.size - 1)
    buffer = ce.flit_buffer_bytes // hw.collect.flit_bytes * flit_elements  # 3 flits (L3928)
    if reach >= buffer:
        raise HardwareLimitError(
            f"the last shift reads element {reach} of the shift buffer, which holds {buffer} "
            f"({ce.flit_buffer_bytes} bytes, L3928, L3951): {shift.size} shifts of {stride} over a {n64}-lane packet",
            call=CALL, level="Packet", mapping=repr(out_packet), axis=axes_text(shift),
            fix="fewer shifts per row (split the filter axis into Time), or a smaller shift stride")
    return ShiftPlan(feed, ce.flit_buffer_bytes // hw.collect.flit_bytes, shift.size, stride, act, shift, rest,
                     flit_elements)


def _split_out_time(act: Mapping, out_time: Mapping, lin_axes: frozenset[str]) -> tuple[Mapping, Mapping]:
    """OutTime = [act, shift, rest…]: the shift item (an item over the combination's terms) and the rest."""
    from visa.engines.contraction.reducer import flat_items

    items = flat_items(out_time)
    for j in range(len(items) + 1):
        head = pair_of(*items[:j]) if j else Mapping.identity()
        if head.size == act.size and head == act:
            tail = items[j:]
            if tail and tail[0].axes & lin_axes:
                rest = pair_of(*tail[1:]) if len(tail) > 1 else Mapping.identity()
                return tail[0], rest
            break
        if head.size > act.size:
            break
    raise LayoutError(
        f"OutTime {out_time!r} is not the activation's Time m[\"{act}\"] followed by a shift axis over "
        f"{', '.join(sorted(lin_axes))} (the filter axis the Stream Adapter slides the row by, L3740–3775)",
        call=CALL, level="Time", mapping=repr(out_time), axis=axes_text(out_time),
        fix=f"write OutTime as [{act}, <filter axis>, <tiling axes>], e.g. [{act}, Fw]")


def _stride(row: Mapping, lin: Lin, shift: Mapping, out_packet: Mapping) -> int:
    """σ: the row element lane ℓ of shift j reads is ``ℓ + σ·j``; checked at every lane whose index is held."""
    key = lin_key(lin)
    rev = forward(row.canon)  # the combination's position at each row position (its carried coordinate)
    held_row = np.asarray(rev.valid) & (key in rev.coords)
    lin_pos = np.where(held_row, rev.coord(key), -1)
    first_row = np.full(lin.size, -1, dtype=np.int64)
    idx = np.flatnonzero(lin_pos >= 0)
    order = idx[np.argsort(lin_pos[idx], kind="stable")][::-1]
    first_row[lin_pos[order]] = order  # the first row position holding each combination position
    joint = pair_of(shift, out_packet)
    ev = forward(joint.canon)
    valid = np.asarray(ev.valid).reshape(shift.size, out_packet.size)
    coords = {k: np.asarray(v).reshape(shift.size, out_packet.size) for k, v in ev.coords.items()}
    pos = np.zeros(valid.shape, dtype=np.int64)
    ok = valid.copy()
    for part, n in lin.parts:
        q, h = inverse(part, coords, valid.shape)
        pos = pos + q * n
        ok &= h
    extra = sorted(k for k in coords if k not in _lin_axes(lin) and bool(np.any(coords[k][valid] != 0)))
    if extra:
        raise LayoutError(
            f"the computation packet {pair_of(shift, out_packet)!r} names {extra[0]}, which the input row {key} does "
            "not hold: a shift reads the row only (L3740–3775)", call=CALL, level="Packet", mapping=repr(out_packet),
            axis=extra[0], fix=f"keep {extra[0]} in the activation's Time")
    ok &= pos < lin.size
    rho = np.where(ok, first_row[np.where(ok, pos, 0)], -1)
    missing = valid & (rho < 0)
    if missing.any():
        j, lane = (int(v[0]) for v in np.nonzero(missing))
        raise InsufficientInputError(
            f"lane {lane} of shift {j} needs element {int(pos[j, lane])} of {key}, which the collected row "
            f"{row!r} does not hold (insufficient input, L1639–1659, L3740)", call=CALL, level="Packet",
            mapping=repr(out_packet), axis=key, fix="widen the row (pad the combination to whole flits)")
    lanes = np.arange(out_packet.size, dtype=np.int64)[None, :]
    steps = np.arange(shift.size, dtype=np.int64)[:, None]
    later = valid & (steps > 0)
    sig = 0
    if later.any():
        j0, l0 = (int(v[0]) for v in np.nonzero(later))
        sig, rem = divmod(int(rho[j0, l0]) - l0, j0)
        sig = sig if not rem else -1
    wrong = valid & (rho != lanes + sig * steps)
    if wrong.any() or sig < 0:
        j, lane = (int(v[0]) for v in np.nonzero(wrong if wrong.any() else later))
        raise LayoutError(
            f"lane {lane} of shift {j} reads row element {int(rho[j, lane])}, not {lane + max(sig, 0) * j}: the "
            "Stream Adapter moves the whole packet by one stride per step of the shift axis, its lanes in the row's "
            "order (L3740–3775, L3903–3912)", call=CALL, level="Packet", mapping=repr(pair_of(shift, out_packet)),
            axis=axes_text(out_packet),
            fix="write OutPacket over the combination's terms as the row holds them (W # 32; W # 16, Fw % 2) and "
                "the shift axis as an even split of the filter axis (Fw, Fw / 2)")
    return sig


def adapt(feed_flits: int, collect_flits: int, shifts: int, stride: int, flit_elements: int,
          values: npt.NDArray[np.generic], known: BoolArray, n64: int,
          units: BoolArray | None = None) -> tuple[npt.NDArray[np.generic], BoolArray]:
    """The shift-reuse Stream Adapter over collected data ``(Chip, Cluster, Slice, Time, Packet)``: each row of
    ``feed_flits`` flits enters the ``collect_flits``-flit buffer (the rest zero, known), and shift ``j`` emits
    lanes ``ℓ + σ·j``.  Returns ``(Chip, Cluster, Slice, Time' × shifts, n64)``.  ``units`` (``(Chip, Cluster,
    Slice)``) are the positions holding data: only they are computed (the others stay zero and unknown, in pages
    never touched)."""
    lead = values.shape[:3]
    fed = feed_flits * flit_elements
    steps = values.shape[3] // feed_flits
    pick = np.ones(lead, dtype=bool) if units is None else units
    rows = values[pick].reshape(-1, steps, fed)
    krows = known[pick].reshape(rows.shape)
    buf = np.zeros((rows.shape[0], steps, collect_flits * flit_elements), dtype=values.dtype)
    kbuf = np.ones(buf.shape, dtype=bool)
    buf[..., :fed] = rows
    kbuf[..., :fed] = krows
    at = np.arange(shifts, dtype=np.int64)[:, None] * stride + np.arange(n64, dtype=np.int64)[None, :]
    out = np.zeros((*lead, steps * shifts, n64), dtype=values.dtype)
    kout = np.zeros(out.shape, dtype=bool)
    out[pick] = buf[..., at].reshape(-1, steps * shifts, n64)
    kout[pick] = kbuf[..., at].reshape(-1, steps * shifts, n64)
    return out, kout
