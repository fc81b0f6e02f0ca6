"""Collect Engine: packets to 32-byte flits, and the loads into the register files (manual L3543–3669).

:func:`normalise` is the Collect Engine's one rule (L3560–3564): pad the packet with zeros to a multiple of
the flit (32 bytes, ``hw.collect.flit_bytes``); if that is more than one flit, the inner flit becomes the new
Packet and the flit count becomes the new innermost Time axis.  :func:`plan` checks that the requested
``Time2``/``Packet2`` are that normalisation (``verify_collect``, L3547–3558) by the manual's equivalence of
mappings; :func:`execute` pads and splits the data; :func:`cycles` is one flit per cycle.

The register-file loads take the collected stream as it flows, flit after flit:

* ``to_trf(Row, Element, TrfAddress)`` (L4049–4061): "the outermost axes of the input become the Row
  dimension, and the remaining inner axes become the Element dimension" — the stream, flattened in stream
  order, is ``Row::SIZE`` consecutive blocks of ``Element::SIZE`` elements;
* ``to_vrf(Element, address)`` (L280–285, L5063–5081): the flattened stream is the Element.

:func:`plan_trf` / :func:`plan_vrf` check that the ``Row``/``Element`` given hold, at every position, the
element the stream delivers there (positions the Element leaves as padding may hold anything); capacities
are the tensor handles' rules (L1088–1090).

>>> from visa.hw import RNGD
>>> from visa.dtypes import bf16
>>> from visa.mapping import AxisSet
>>> ax = AxisSet(A=8, B=32)
>>> t2, p2 = normalise(RNGD, bf16, ax.m["A"], ax.m["B"])          # manual L3647-3660
>>> t2 == ax.m["A, B / 16"], p2 == ax.m["B % 16"]
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines import fast_dm_read, fast_load_plan, fast_shared
from visa.engines.broadcast import BroadcastData
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text, kept_text
from visa.engines.fast_dm_read import DmRead
from visa.engines.fetch import stream_validity
from visa.engines.rows import CopiedRows
from visa.engines.shared import SharedRows
from visa.errors import HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.memory import owed
from visa.memory.images import DenseImage, store_nest, store_stream
from visa.memory.known import all_true, is_everywhere, known_everywhere
from visa.memory.replicas import combine
from visa.memory.units import enabled_units

__all__ = ["CollectConfig", "RegisterLoadConfig", "normalise", "plan", "execute", "cycles", "plan_trf",
           "plan_vrf", "execute_load", "load_cycles"]

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class CollectConfig:
    """The Collect Engine's configuration (manual L3560–3564): how many flits a packet becomes."""

    dtype: type[dt.Scalar]
    time: Mapping
    packet: Mapping
    out_time: Mapping
    out_packet: Mapping
    packet_bytes: int
    flit_bytes: int
    flits_per_packet: int
    pad_elements: int

    @kept_text
    def __str__(self) -> str:
        pad = f", zero padding {self.pad_elements * self.dtype.size_bits // 8} B" if self.pad_elements else ""
        split = f", {self.flits_per_packet} flits per packet (flit axis innermost in Time)" \
            if self.flits_per_packet > 1 else ""
        return (f"collect {self.dtype!r}: packet {self.packet!r} ({self.packet_bytes} B) → {self.flit_bytes}-byte "
                f"flits{pad}{split}; Time {self.out_time!r} ({self.out_time.size}), Packet {self.out_packet!r}")


def _flit(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping, call: str) -> tuple[int, int, int]:
    """(packet bytes, elements per flit, flits per packet)."""
    bits = packet.size * dtype.size_bits
    if bits % 8:
        raise HardwareLimitError(f"a packet of {packet.size} {dtype!r} elements is not whole bytes", call=call,
                                 level="Packet", mapping=repr(packet), axis=axes_text(packet),
                                 fix="pad the packet to an even number of elements")
    flit = hw.collect.flit_bytes
    per = dtype.elements_per_bytes(flit)
    return bits // 8, per, max(1, -(-bits // (8 * flit)))


def normalise(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """``(Time2, Packet2)`` of the collected stream (manual L3560–3564, L3590–3618).

    The packet is padded to ``flits × 32`` bytes; with one flit, Time is unchanged and Packet2 is the padded
    packet; with more, Time2 is ``[Time, padded / E]`` and Packet2 ``padded % E`` (E elements per flit).
    """
    _, per, flits = _flit(hw, dtype, packet, "collect")
    padded = packet if packet.size == flits * per else packet.pad(flits * per)
    if flits == 1:
        return time, padded
    return pair_of(time, padded.stride(per)), padded.modulo(per)


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, time2: Mapping,
         packet2: Mapping) -> CollectConfig:
    """``collect::<Time2, Packet2>()`` of a stream ``(dtype, time, packet)``: refuses anything but the
    normalisation (``verify_collect``, L3547–3558; exactly one flit per time step, L3544)."""
    return _plan(hw, dtype, time, packet, time2, packet2)


@cached(512)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, time2: Mapping,
          packet2: Mapping) -> CollectConfig:
    call = "collect"
    nbytes, per, flits = _flit(hw, dtype, packet, call)
    want_t, want_p = normalise(hw, dtype, time, packet)
    flit = hw.collect.flit_bytes
    if packet2.size * dtype.size_bits != 8 * flit:
        raise HardwareLimitError(
            f"the Collect Engine outputs exactly one {flit}-byte flit per time step (manual L3544); Packet2 "
            f"{packet2!r} holds {packet2.size} {dtype!r} = {packet2.size * dtype.size_bits / 8:g} bytes",
            call=call, level="Packet", mapping=repr(packet2), axis=axes_text(packet2), fix=f"write {want_p!r}")
    if packet2 != want_p:
        raise LayoutError(
            f"Packet2 {packet2!r} is not the packet {packet!r} padded to {flits * flit} bytes"
            + (f" and split into {flits} flits" if flits > 1 else "") + " (manual L3560–3564)",
            call=call, level="Packet", mapping=repr(packet2), axis=axes_text(packet2) or axes_text(packet),
            fix=f"write {want_p!r}")
    if time2 != want_t:
        extra = f", with the flit index of the {flits} flits as the innermost axis" if flits > 1 else " unchanged"
        raise LayoutError(f"Time2 {time2!r} must be the input Time {time!r}{extra} (manual L3562–3564)",
                          call=call, level="Time", mapping=repr(time2), axis=axes_text(time2) or axes_text(time),
                          fix=f"write {want_t!r}")
    return CollectConfig(dtype, time, packet, time2, packet2, nbytes, flit, flits, flits * per - packet.size)


def execute(cfg: CollectConfig, data: StreamData) -> StreamData:
    """Pad each packet with zeros (known values, L2122) to whole flits and split them along Time.  A stream
    repeated along Time (:class:`~visa.engines.broadcast.BroadcastData`) stays so: the flits of each compact
    packet, the flit index a new innermost Time digit that does not repeat."""
    if isinstance(data, CopiedRows):  # slices left copies of others stay so (every slice padded and split alike)
        return data.map(lambda v, k: _pad_split(cfg, v, k, cfg.out_time.size))
    if isinstance(data, DmRead) and not cfg.pad_elements:  # fetch.dm-read: the split a view of the DM bytes too
        got = data.reshaped((*data.known.shape[:3], cfg.out_time.size, cfg.out_packet.size))
        if got is not None:
            return got
    if fast_shared.COLLECT.on and isinstance(data, SharedRows):  # (so do rows shared by slices)
        return data.map(lambda d: StreamData(*_pad_split(cfg, d.values, d.known, cfg.out_time.size)))
    if isinstance(data, BroadcastData):
        vals, known = data.compact_values, data.compact_known
    else:
        vals, known = data.values, data.known
    out: StreamData
    if isinstance(data, BroadcastData):
        vals, known = _pad_split(cfg, vals, known, vals.shape[3] * cfg.flits_per_packet)
        out = BroadcastData(vals, known, (*data.digits, (cfg.flits_per_packet, False)))
    else:
        out = StreamData(*_pad_split(cfg, vals, known, cfg.out_time.size))
    out.replicas = data.replicas  # (every slice padded and split alike)
    return out


def _pad_split(cfg: CollectConfig, vals: npt.NDArray[Any], known: npt.NDArray[np.bool_], time: int
               ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """Each packet padded to whole flits (known zeros) and split along Time into ``time`` steps of flits."""
    if cfg.pad_elements:
        pad = [(0, 0)] * (vals.ndim - 1) + [(0, cfg.pad_elements)]
        vals = np.pad(vals, pad)
        # the padding is known: an all-known stream stays an all-known broadcast (visa.memory.known)
        known = known_everywhere(vals.shape) if is_everywhere(known) else np.pad(known, pad, constant_values=True)
    shape = (*vals.shape[:3], time, cfg.out_packet.size)
    return vals.reshape(shape), known.reshape(shape)


def cycles(cfg: CollectConfig) -> int:
    """One flit per cycle: ``Time2::SIZE`` (the manual gives no collect formula; a single-channel switch
    delivers 32 bytes per cycle, L2125–2126)."""
    return cfg.out_time.size


# ------------------------------------------------------------------------------------------------ TRF / VRF


@dataclass(frozen=True)
class RegisterLoadConfig:
    """A load of the collected stream into the TRF (``rows`` blocks, L4049–4061) or the VRF (one block,
    L5063–5081).

    ``address`` is the TRF address mode (``"Full"``, ``"FirstHalf"``, ``"SecondHalf"``) or the VRF byte
    address; ``flits`` the number of 32-byte flits written (the cost).
    """

    memory: str
    dtype: type[dt.Scalar]
    time: Mapping
    packet: Mapping
    row: Mapping | None
    element: Mapping
    address: str | int
    flits: int

    @kept_text
    def __str__(self) -> str:
        where = f"TrfAddress.{self.address}" if self.memory == "trf" else f"VRF {self.address}"
        rows = f"Row {self.row!r} ({self.row.size}), " if self.row is not None else ""
        return (f"to_{self.memory} {self.dtype!r}: {rows}Element {self.element!r} ({self.element.size}) at {where}; "
                f"{self.flits} flits")


def _agreement(stream: Mapping, buffer: Mapping, call: str, level: str, shown: Mapping) -> None:
    """Every position where ``buffer`` holds an index must receive that index from ``stream`` (same flat
    position); where ``buffer`` is padding anything may arrive."""
    if stream.size != buffer.size:
        raise LayoutError(f"the stream delivers {stream.size} elements per slice but {shown!r} has "
                          f"{buffer.size} positions", call=call, level=level, mapping=repr(shown),
                          axis=axes_text(shown), fix="use the stream's Time and Packet, flattened")
    sev, bev = stream.evaluate(), buffer.evaluate()
    bad = bev.valid & ~sev.valid
    for name in sorted(set(sev.coords) | set(bev.coords)):
        bad = bad | (bev.valid & sev.valid & (sev.coord(name) != bev.coord(name)))
    if bad.any():
        k = int(np.argmax(bad))
        held = buffer.map(k)
        got = stream.map(k)
        axis = axes_text(shown)
        if held is not None:
            g: dict[str, int] = dict(got) if got is not None else {}
            h: dict[str, int] = dict(held)
            names = sorted(n for n in set(h) | set(g) if g.get(n, 0) != h.get(n, 0))
            axis = ", ".join(names) or axis
        raise LayoutError(
            f"position {k} of {shown!r} holds {held.text() if held is not None else 'padding'} but the stream "
            f"delivers {got.text() if got is not None else 'padding'} there: the load writes the flits in stream "
            "order (manual L4049–4061)", call=call, level=level, mapping=repr(shown), axis=axis,
            fix="write the Element as the stream's Time and Packet flattened (outermost Time axes become Row)")


def plan_trf(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, row: Mapping,
             element: Mapping, address: str = "Full") -> RegisterLoadConfig:
    """``to_trf::<Row, Element>(address)`` of a collected stream (manual L4049–4061, L4150–4168)."""
    return _plan_trf(hw, dtype, time, packet, row, element, address)


@cached(256)
def _plan_trf(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, row: Mapping,
              element: Mapping, address: str) -> RegisterLoadConfig:
    call = "to_trf"
    _check_flit(hw, dtype, packet, call)
    if address not in hw.trf.address_modes:
        raise LayoutError(f"unknown TRF address mode {address!r}; expected one of {hw.trf.address_modes} "
                          "(manual L4043–4048)", call=call, fix="pass TrfAddress.Full, .FirstHalf or .SecondHalf")
    if row.size not in hw.trf.valid_row_counts:
        raise HardwareLimitError(f"the TRF is used with {', '.join(map(str, hw.trf.valid_row_counts))} Rows "
                                 f"(manual L4160–4168), got Row {row!r} of size {row.size}", call=call, level="Row",
                                 mapping=repr(row), axis=axes_text(row),
                                 fix="pad the Row axis to a power of two, e.g. m[\"N # 8\"]")
    _agreement(pair_of(time, packet), pair_of(row, element), call, "Element", element)
    return RegisterLoadConfig("trf", dtype, time, packet, row, element, address, time.size)


def plan_vrf(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, element: Mapping,
             address: int = 0) -> RegisterLoadConfig:
    """``to_vrf(address)`` with Element ``element`` (manual L280–285, L5063–5081)."""
    return _plan_vrf(hw, dtype, time, packet, element, int(address))


@cached(256)
def _plan_vrf(hw: HardwareProfile, dtype: type[dt.Scalar], time: Mapping, packet: Mapping, element: Mapping,
              address: int) -> RegisterLoadConfig:
    call = "to_vrf"
    _check_flit(hw, dtype, packet, call)
    _agreement(pair_of(time, packet), element, call, "Element", element)
    return RegisterLoadConfig("vrf", dtype, time, packet, None, element, address, time.size)


def _check_flit(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping, call: str) -> None:
    flit = hw.collect.flit_bytes
    if packet.size * dtype.size_bits != 8 * flit:
        raise HardwareLimitError(f"register files are loaded from collected {flit}-byte flits; the packet "
                                 f"{packet!r} is {packet.size * dtype.size_bits / 8:g} bytes (manual L3604–3606)",
                                 call=call, level="Packet", mapping=repr(packet), axis=axes_text(packet),
                                 fix="collect the stream first")


def execute_load(cfg: RegisterLoadConfig, data: StreamData, images: Sequence[DenseImage], bit_base: int,
                 units: BoolArray | None = None) -> None:
    """Write the flattened stream into each chip's TRF (``(cluster, slice, rows, bytes)``, Row r in bank row r,
    L4114–4148) or VRF image (L5063–5081).

    Unknown (poison) elements leave their bytes unwritten, so that a later read reports them.  ``units``
    (``(Chip, Cluster, Slice)``) are the slices the stream holds data in: only they load (the slice bitmap
    leaves the others out, L2314–2319, as for a commit); None loads every slice.
    """
    if fast_load_plan.load(cfg, data, images, bit_base, units):  # collect.load-plan: the decisions kept
        return
    if fast_shared.LOAD.on and isinstance(data, SharedRows):
        data = data.as_copied()
    copied = data if isinstance(data, CopiedRows) else None
    owner: npt.NDArray[np.int64] | None = None
    if copied is not None:  # slices still copies of others: the load reads the rows that hold the values
        vals, owner = copied.rows()
        known = copied.known
    else:  # (fetch.dm-read: the DM bytes themselves, not read into the stream)
        vals, known = fast_dm_read.source_of(data), data.known
    n_chip, n_cl, n_sl = vals.shape[:3]
    e = cfg.element.size
    rows = cfg.row.size if cfg.row is not None else 1
    flat_v = vals.reshape(n_chip, n_cl * n_sl, rows, e)
    flat_k = known.reshape(n_chip, n_cl * n_sl, rows, e)
    loops = ((e, 1),)  # element j of a row at bit_base + j · image_bits
    bits: npt.NDArray[np.int64] | None = None
    for c, img in enumerate(images):
        on = np.ones(n_cl * n_sl, dtype=bool) if units is None else units[c].reshape(-1)
        run = np.flatnonzero(on)
        if not run.size:
            continue
        pick: slice | npt.NDArray[np.bool_] = slice(int(run[0]), int(run[-1]) + 1) \
            if int(run[-1]) - int(run[0]) + 1 == run.size else on  # a range of slices: a view
        v = fast_dm_read.element_rows(flat_v[c][pick], e, (n_cl, n_sl)) if isinstance(data, DmRead) \
            else flat_v[c][pick].reshape(-1, e)
        k = flat_k[c][pick].reshape(v.shape)
        enabled = np.zeros(img.lead_shape, dtype=bool)
        enabled.reshape(n_cl * n_sl, -1)[pick] = True  # (the slices ``on``: a range of them as a slice)
        if cfg.memory == "trf":
            enabled[:, :, rows:] = False  # Row r is bank row r (L4114-4148)
        held_rows = None if owner is None else owner[c * on.size: (c + 1) * on.size] - c * on.size
        if _load_replicas(cfg, img, data.replicas, c, on, rows, bit_base, flat_v[c], k, held_rows):
            _record_replicas(cfg, img, data.replicas, c, on, rows, bit_base, k)
            continue
        if copied is not None and owner is not None:  # the load needs every row: the copies are made now
            owner = None
            flat_v = copied.values.reshape(n_chip, n_cl * n_sl, rows, e)
            v = flat_v[c][pick].reshape(-1, e)
        target = enabled_units(img, enabled)
        if store_nest(cfg.dtype, target, bit_base, loops, v, k):
            _record_replicas(cfg, img, data.replicas, c, on, rows, bit_base, k)
            continue
        if bits is None:
            bits = bit_base + np.arange(e, dtype=np.int64) * cfg.dtype.image_bits
        held = stream_validity(cfg.time, cfg.packet).reshape(rows, e)  # stream padding holds no element
        store_stream(cfg.dtype, target, bits, v.reshape(-1, e), k.reshape(-1, e),
                     np.broadcast_to(held, (run.size, rows, e)).reshape(-1, e))


REPLICA_LOAD = fastpaths.register("collect.replica-load", "a register load of slices whose streams are replicas "
                                  "writes one slice of each class and leaves the others pending copies")


def _load_replicas(cfg: RegisterLoadConfig, img: DenseImage, labels: npt.NDArray[np.int64] | None, chip: int,
                   on: BoolArray, rows: int, bit_base: int, values: npt.NDArray[Any], known: BoolArray,
                   held: npt.NDArray[np.int64] | None = None) -> bool:
    """The load of known whole-byte elements into slices ``on`` of a chip whose streams are replicas in classes
    (``labels``) of at least two: write the first slice of each class and leave the others pending copies of it
    (:func:`visa.memory.owed.store_with_copies`).  ``values`` are the chip's ``(slices, rows,
    elements)``, ``known`` those of the slices loaded; ``held``, when the stream's rows are partly copies not made
    (:class:`~visa.engines.rows.CopiedRows`), the row that holds each slice's values.  False (nothing written)
    when the load is not one."""
    if not REPLICA_LOAD.on or labels is None or cfg.dtype.image_bits % 8 or bit_base % 8 or not all_true(known):
        return False
    mine = labels[chip * on.size: (chip + 1) * on.size]
    slices = np.flatnonzero(on)
    if slices.size < 2 or not bool((mine[slices] >= 0).all()):
        return False
    _, first, inverse = np.unique(mine[slices], return_index=True, return_inverse=True)
    if 2 * first.size > slices.size:
        return False
    if held is not None and not bool((held[slices[first]] == slices[first]).all()):
        return False  # (a class's first slice is itself a copy not made: its row holds nothing yet)
    bank = img.lead_shape[-1] if cfg.memory == "trf" else 1  # a TRF unit is a bank row of a slice
    units = slices[:, None] * bank + np.arange(rows, dtype=np.int64)
    if int(units[-1, -1]) - int(units[0, 0]) + 1 != units.size:
        return False  # (the range the load covers is what lets it skip the zeros owed there)
    reps = np.sort(slices[first])  # (in unit order: the store writes the enabled units in that order)
    enabled = np.zeros(img.lead_shape, dtype=bool)
    enabled.reshape(on.size, -1)[reps, :rows] = True
    source = units[first[inverse.reshape(-1)]]  # each slice's rows come from its class's first slice
    moved = np.isin(slices, reps, invert=True)
    span = slice(int(units[0, 0]), int(units[-1, -1]) + 1)  # (what lets the store skip the zeros owed there)
    return owed.store_with_copies(cfg.dtype, img, bit_base, enabled, values[reps].reshape(-1, values.shape[-1]),
                                  units[moved].reshape(-1), source[moved].reshape(-1), span)


def _record_replicas(cfg: RegisterLoadConfig, img: DenseImage, labels: npt.NDArray[np.int64] | None, chip: int,
                     on: BoolArray, rows: int, bit_base: int, known: BoolArray) -> None:
    """After a load of known whole-byte elements: the rows of slices whose streams are replicas
    (``labels``, :class:`~visa.engines.common.StreamData` ``replicas``) hold the same bytes, row by row
    (:meth:`~visa.memory.images.DenseImage.record_replicas`)."""
    if labels is None or cfg.dtype.image_bits % 8 or bit_base % 8 or not all_true(known):
        return
    per_chip = on.size
    mine = labels[chip * per_chip: (chip + 1) * per_chip][on]
    if not (mine >= 0).any():
        return
    slices = np.flatnonzero(on)
    bank = img.lead_shape[-1] if cfg.memory == "trf" else 1  # a TRF unit is a bank row of a slice
    units = (slices[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
    keys = combine(np.repeat(mine, rows), np.tile(np.arange(rows, dtype=np.int64), slices.size))
    lo = bit_base // 8
    img.record_replicas(units, keys, lo, lo + cfg.element.size * (cfg.dtype.image_bits // 8))


def load_cycles(cfg: RegisterLoadConfig) -> int:
    """One flit per cycle (the SRAM-to-TRF / to-VRF path of the collected stream; the manual gives no
    formula, L4112–4113)."""
    return cfg.flits
