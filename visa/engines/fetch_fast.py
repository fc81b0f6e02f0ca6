"""The Fetch Engine's fast paths (:mod:`visa.fastpaths`): faster ways to compute exactly the stream
:func:`visa.engines.fetch.execute` computes by one address per position (manual L1219–1688, L1870).

- ``fetch.repeat`` — a sequencer that repeats whole packets along Time (a stride-0 loop, the GEMM example's
  ``J / 8 % 4``, L466–525) is read once: the result is a :class:`~visa.engines.broadcast.BroadcastData`, the
  repetition kept as structure (the cycles count every time step all the same).
- ``fetch.all-known`` — where every byte the loop nest reads was written (asked of the pages, no mask read), the
  known-mask is a broadcast of True and the values are read into a pooled buffer whose rows without data stay
  zero (:mod:`visa.memory.rowpool`).
- ``fetch.pending-copies`` — slices whose DM bytes are pending copies of others (:mod:`visa.memory.pending`) are
  not read: the stream is a :class:`~visa.engines.rows.CopiedRows` that makes the copies when read.
- ``fetch.loop-nest`` — the sequencer's loops as one strided copy of the image (``load_nest``), instead of one
  address per position; an interleaved pair anywhere in the slice too (:func:`_pair_nest`).
- ``fetch.replica-labels`` — the stream carries which slices read the same bytes (:mod:`visa.memory.replicas`),
  for the register loads and the Contraction Engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.broadcast import BroadcastData, TimeDigits, normal_digits, place_values
from visa.engines.cache import cached
from visa.engines.common import StreamData
from visa.engines.fast_cast_rows import cast_occupied
from visa.engines.fast_dm_read import DM_READ, DmRead, view_of
from visa.engines.fast_fetch_view import in_range, note_in_range, remembered_view
from visa.engines.fast_masked import MASKED, Cut, written_cut
from visa.engines.fast_masked import fill as fill_masked
from visa.engines.fast_masked_read import MASKED_READ, masked_read
from visa.engines.fast_padded import CUT_READ, cut_view, padded_cut
from visa.engines.fast_padded import known_of as padded_known
from visa.engines.fast_widen import widened_type
from visa.engines.fast_zero_point_read import ZP_READ, subtract_read
from visa.engines.fetch import FetchConfig, LookupTable, _static, adapt
from visa.engines.rows import CopiedRows
from visa.memory import owed
from visa.memory.images import (
    DenseImage,
    load,
    load_nest,
    load_nest_values,
    load_nest_view,
    load_nest_widened,
    nest_all_written,
    nest_span,
)
from visa.memory.known import is_everywhere, known_everywhere
from visa.memory.replicas import Labels
from visa.memory.rowpool import ROW_POOL, Loan
from visa.memory.units import UnitSelection, enabled_units

__all__ = ["REPEAT", "ALL_KNOWN", "PENDING_COPIES", "LOOP_NEST", "REPLICA_LABELS", "execute"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

REPEAT = fastpaths.register("fetch.repeat", "a sequencer repeating whole packets along Time reads them once "
                            "(BroadcastData) instead of once per time step")
ALL_KNOWN = fastpaths.register("fetch.all-known", "a fetch whose bytes were all written carries its known-mask as "
                               "a broadcast of True and reads into a pooled buffer")
PENDING_COPIES = fastpaths.register("fetch.pending-copies", "slices that are pending copies in DM are not read: "
                                    "the stream makes the copies when read (CopiedRows)")
PAIR_PADDED = fastpaths.register("fetch.pair-padded-nest", "an interleaved pair far apart whose packet ends in "
                                 "padding lanes is read as one loop nest: the padded lanes' reach past an element is "
                                 "not a carry into the other tensor")
LOOP_NEST = fastpaths.register("fetch.loop-nest", "the sequencer's loops run as one strided copy of the DM image "
                               "instead of one address per stream position")
REPLICA_LABELS = fastpaths.register("fetch.replica-labels", "the stream carries which slices read bytes known to "
                                    "be replicas (visa.memory.replicas)")
_ALL = (REPEAT, ALL_KNOWN, PENDING_COPIES, LOOP_NEST, REPLICA_LABELS)

@dataclass(frozen=True)
class _Repeat:
    """A fetch's repeating Time digits (stride-0 sequencer loops over whole packets): the Time digits
    (:data:`~visa.engines.broadcast.TimeDigits`), the sequencer entries without the repeating loops, and the
    stream positions (time step × packet) of the compact stream in the whole one."""

    digits: TimeDigits
    entries: tuple[Any, ...]
    keep: IntArray
    keep_time: IntArray


@cached(128)
def _repeat(cfg: FetchConfig) -> _Repeat | None:
    """The repeating Time digits of ``cfg``'s sequencer, or None when there are none (or when a repeated step
    is not the same as the step it repeats: its validity, masking or tensor differ, e.g. a padded axis)."""
    entries = cfg.sequencer.entries
    n_p = cfg.packet.size
    places = [math.prod(e.size for e in entries[k + 1:]) for k in range(len(entries))]
    rep = [k for k, e in enumerate(entries) if e.stride == 0 and e.size > 1 and places[k] % n_p == 0]
    if not rep:
        return None
    # Time split at the repeating loops: (outer, size, inner) per loop, in time steps
    bounds = sorted({1, cfg.time.size} | {places[k] // n_p for k in rep}
                    | {places[k] * entries[k].size // n_p for k in rep})
    sizes = [b // a for a, b in zip(bounds, bounds[1:], strict=False)][::-1]  # outermost first
    starts = {places[k] // n_p for k in rep}
    inner = place_values(sizes)
    digits = tuple((s, p in starts) for s, p in zip(sizes, inner, strict=True))
    sel, off, valid, mask, tsel, _ = _static(cfg)
    shape = (*sizes, n_p)
    first = tuple(slice(0, 1) if r else slice(None) for _, r in digits)
    for arr in (sel, off, valid, mask):
        if arr is None:
            continue
        a = arr.reshape(shape)
        if not np.array_equal(a, np.broadcast_to(a[first], shape)):
            return None
    if tsel is not None:
        ts = tsel.reshape(sizes)
        if not np.array_equal(ts, np.broadcast_to(ts[first], ts.shape)):
            return None
    index = np.arange(cfg.time.size * n_p, dtype=np.int64).reshape(shape)
    keep = np.ascontiguousarray(index[first]).reshape(-1)
    keep_time = np.ascontiguousarray(np.arange(cfg.time.size, dtype=np.int64).reshape(sizes)[first]).reshape(-1)
    kept = tuple(e for k, e in enumerate(entries) if k not in rep)
    for a in (keep, keep_time):
        a.flags.writeable = False
    return _Repeat(normal_digits(digits), kept, keep, keep_time)


def execute(cfg: FetchConfig, images: Sequence[DenseImage], bit_bases: Sequence[int],
            table: LookupTable[Any, Any] | None = None) -> StreamData | None:
    """:func:`visa.engines.fetch.execute` by the fast paths that are on (module docstring); None when every one
    is off (the caller runs the reference)."""
    if not any(p.on for p in _ALL):
        return None
    sel, off, valid, mask, tsel, lv = _static(cfg)
    bases = np.asarray(list(bit_bases), dtype=np.int64)
    n_t, n_p = cfg.time.size, cfg.packet.size
    repeat = _repeat(cfg) if REPEAT.on else None
    entries = cfg.sequencer.entries
    if repeat is not None:  # the compact stream: the time steps at digit 0 of every repeating digit
        entries = repeat.entries
        sel, off, valid = sel[repeat.keep], off[repeat.keep], valid[repeat.keep]
        mask = None if mask is None else mask[repeat.keep]
        tsel = None if tsel is None else tsel[repeat.keep_time]
        n_t = repeat.keep_time.size
    plain = PENDING_COPIES.on and repeat is None and cfg.table is None and cfg.cast is None and not cfg.zero_points \
        and (mask is None or cfg.mask is None)  # the values as read: slices left pending copies stay so
    masking = mask if cfg.mask is not None else None
    widen = widened_type(cfg)
    zp_read = ZP_READ.on and bool(cfg.zero_points) and tsel is None
    written_all: bool | None = None  # (_all_known of the nest, once asked: _read asks the same)
    if (DM_READ.on or zp_read) and repeat is None:  # fetch.dm-read: the values a view of the DM bytes, read later
        nest = _nest(cfg, bases, entries)
        shape = (len(images), cfg.cluster.size, cfg.slice.size, n_t, n_p)
        asked: list[bool] = []  # (_all_known of the nest, when asked: _read asks the same)

        def fresh() -> npt.NDArray[Any] | None:
            asked.append(nest is not None and _all_known(cfg.src, images, lv, nest, valid))
            return view_of(cfg, images, bases, lv, valid, nest, shape, zp_read) if asked[0] else None

        view, kept = remembered_view(cfg, images, bases, zp_read, fresh)
        written_all = asked[0] if asked else None
        if view is not None and not zp_read:
            return DmRead(view, images[0], _replicas(cfg, images, bases, lv, entries))
        got = None if view is None else subtract_read(view, cfg.dst, cfg.zero_points, in_range(kept))
        if got is not None:  # fetch.zero-point-read: subtracted on the read, one pass
            note_in_range(kept)
            return got
    if masking is not None and repeat is None and tsel is None and MASKED_READ.on and ALL_KNOWN.on:
        # fetch.masked-read: the masked-known fetch's elements and pad value written in one pass (as _read cuts it)
        m_nest = _nest(cfg, bases, entries)
        if m_nest is not None and written_all is None:
            written_all = _all_known(cfg.src, images, lv, m_nest, valid)
        m_cut = None if m_nest is None or written_all else _masked_known(cfg.src, images, lv, m_nest, valid, masking)
        got = None if m_nest is None or m_cut is None else \
            masked_read(cfg, images, lv, m_nest, m_cut, (len(images), cfg.cluster.size, cfg.slice.size, n_t, n_p))
        if got is not None:
            got.replicas = _replicas(cfg, images, bases, lv, entries)
            return got
    values, known, loan, copies, cut = _read(cfg, images, bases, sel, off, valid, lv, entries, n_t, plain, masking,
                                             widen, written_all)
    written: BoolArray | None = lv.reshape(-1)  # the rows of the pooled buffer that may hold non-zeros
    if masking is not None:
        written = None  # (every row: the padding of rows without data too)
    if cut is not None and cfg.mask is not None and is_everywhere(known):  # fetch.masked-known: the masking stage
        fill_masked(values, math.prod(values.shape[:-1]), cut, np.asarray(cfg.mask.pad_value).astype(cfg.src.storage))
        mask = None  # (done: every position is known, the masked ones hold the pad value)
    if widen is None or values.dtype != np.dtype(widen.storage):  # (fetch.widen-read: the cast is done)
        cast = cast_occupied(cfg, values, lv)  # (fetch.cast-occupied: the data rows alone)
        if cast is None:
            values, known = adapt(cfg, values, known, mask, tsel, n_t, table)
        else:
            values = cast
    out_shape = (len(images), cfg.cluster.size, cfg.slice.size, n_t, n_p)
    if copies is not None:  # (plain: values are the buffer read into) its rows of pending copies stay to be made
        if loan is not None:  # (values is the pooled buffer; the copies it makes write data rows only)
            loan.settle(written)
        lazy = CopiedRows(values.reshape(out_shape), known.reshape(out_shape), *copies)
        lazy.replicas = _replicas(cfg, images, bases, lv, entries)
        return lazy
    if loan is not None:  # the pooled buffer goes back read-only (rowpool.py); a converted copy is our own
        settled = loan.settle(written)
        if values.base is loan.owner:
            values = settled.reshape(values.shape)
    out = (BroadcastData(values.reshape(out_shape), known.reshape(out_shape), repeat.digits) if repeat is not None
           else StreamData(values.reshape(out_shape), known.reshape(out_shape)))
    # masking, table and cast treat every slice alike; zero points may not (one per time step of an interleave)
    out.replicas = None if cfg.zero_points else _replicas(cfg, images, bases, lv, entries)
    return out


def _replicas(cfg: FetchConfig, images: Sequence[DenseImage], bases: IntArray, lv: BoolArray,
              entries: Sequence[Any]) -> Labels | None:
    """Labels of the stream's ``(Chip, Cluster, Slice)`` positions (flat): slices whose DM bytes under the
    sequencer's loop nest are known replicas of one another (:mod:`visa.memory.replicas`) read the same stream.
    None when the addresses are no loop nest or no two slices are known to be equal."""
    if not any(img.knows_replicas for img in images):
        return None  # (no image ever recorded a replica: every chip's labels would be None)
    nest = _nest(cfg, bases, entries) if REPLICA_LABELS.on else None
    span = None if nest is None else nest_span(cfg.src, nest[0], nest[1])
    if span is None:
        return None
    per_chip = lv[0].size
    out = -np.arange(1, len(images) * per_chip + 1, dtype=np.int64)
    found = False
    for c, img in enumerate(images):
        units = np.flatnonzero(lv[c].reshape(-1))
        labels = img.replica_labels(units, *span) if units.size > 1 else None
        if labels is None:
            continue
        same = labels >= 0
        out[c * per_chip + units[same]] = c * per_chip + labels[same]  # (labels of a chip stay below per_chip)
        found = True
    return out if found else None


def _read(cfg: FetchConfig, images: Sequence[DenseImage], bases: IntArray, sel: IntArray, off: IntArray,
          valid: BoolArray, lv: BoolArray, entries: Sequence[Any], n_t: int, lazy: bool = False,
          masking: BoolArray | None = None, widen: type[dt.Scalar] | None = None, written_all: bool | None = None
          ) -> tuple[npt.NDArray[Any], BoolArray, Loan | None, tuple[IntArray, IntArray] | None, Cut | None]:
    """The sequencer's output ``(Chip, Cluster, Slice, Time · Packet)`` in ``cfg.src`` and its known-mask: a
    broadcast of True (no memory, :mod:`visa.memory.known`) when every byte read was written — then in a pooled
    buffer whose rows without data are zero already (:mod:`visa.memory.rowpool`), with its loan to settle.
    With ``lazy``, slices whose bytes are pending copies of others in DM (:mod:`visa.memory.pending`) are not
    read: the fourth item gives their flat rows and the rows they copy (:class:`~visa.engines.rows.CopiedRows`).
    With ``masking`` (the masking stage's positions), a fetch whose unmasked positions were all written is read
    so too (``fetch.masked-known``): the last item is then the mask as a cut of the nest, for the caller to fill
    (:mod:`visa.engines.fast_masked`); the values read at the masked positions are not the stream's.
    ``written_all``: :func:`_all_known` of the same nest when the caller asked it already (not asked again).
    With ``widen`` (a wider integer type, ``fetch.widen-read``), a fetch whose bytes were all written is read
    into that type, sign-extended (:mod:`visa.engines.fast_widen`): the values' dtype says whether it was."""
    src, n_p = cfg.src, cfg.packet.size
    nest = _nest(cfg, bases, entries) if LOOP_NEST.on or ALL_KNOWN.on or lazy else None
    shape = (len(images), cfg.cluster.size, cfg.slice.size, n_t * n_p)
    whole = ALL_KNOWN.on and nest is not None and (
        written_all if written_all is not None else _all_known(src, images, lv, nest, valid))
    cut = None if whole or not ALL_KNOWN.on else _masked_known(src, images, lv, nest, valid, masking)
    # fetch.padded-known: the stream's padding a cut of the nest, every other element written (fast_padded.py)
    padded = None if whole or cut is not None or masking is not None or not ALL_KNOWN.on \
        else padded_cut(src, images, lv, nest, valid)
    if whole or cut is not None or padded is not None:  # every byte read written (or masked): no mask read
        # known where a slice holds data (a broadcast along the stream: one bool per slice), poison (0) elsewhere
        known = (padded_known(valid, lv, shape) if padded is not None
                 else known_everywhere(shape) if bool(lv.all())
                 else np.broadcast_to(lv.reshape(*shape[:-1], 1), shape))
        storage = np.dtype((src if widen is None or cut is not None or padded is not None else widen).storage)
        pooled, loan = ROW_POOL.take((math.prod(shape[:-1]), shape[-1]), storage, lv.reshape(-1))
        values = pooled.reshape(shape)
        copies: list[tuple[IntArray, IntArray]] = []
        # fetch.padded-cut-read: a new pooled buffer holds zeros at the padding already; only the lanes read
        cut_read = padded is not None and nest is not None and CUT_READ.on and loan is not None and loan.zeroed \
            and storage == np.dtype(src.storage)
        for c, img in enumerate(images):
            if not lv[c].any():
                continue
            units = enabled_units(img, lv[c])
            rows = values[c].reshape(-1, n_t * n_p)
            if lazy and nest is not None and _read_sources(src, img, units, nest, rows, copies, c * rows.shape[0]):
                cut_read = False  # (the rows read there hold the padding's bytes: zeroed below)
                continue
            if units.span is None or nest is None:
                break  # (not expected: _all_known asked of the same nest) the general path below
            if cut_read and padded is not None and load_nest_view(
                    src, units, nest[0] + padded.shift * src.image_bits, padded.loops,
                    cut_view(rows[units.span], padded)):
                continue
            cut_read = False  # (a chip read whole: its padding holds bytes read, zeroed below)
            read = load_nest_values if storage == np.dtype(src.storage) else load_nest_widened
            if not read(src, units, nest[0], nest[1], rows[units.span]):
                break  # (not expected: _all_known asked of the same nest) the general path below
        else:
            if padded is not None and not cut_read:  # the padding is poison: 0 (its known-mask is False already)
                fill_masked(values, math.prod(shape[:-1]), padded, np.zeros((), dtype=storage))
            pending = None if not copies else (np.concatenate([d for d, _ in copies]),
                                               np.concatenate([s_ for _, s_ in copies]))
            return values, known, loan, pending, cut
    # every position is written below: the slices read, and the others as poison (0, unknown)
    values = np.empty(shape, dtype=src.storage)
    known = np.empty(shape, dtype=bool)
    bits: IntArray | None = None
    stream_ok = valid
    for c, img in enumerate(images):
        for lo, hi in _runs(~lv[c].reshape(-1)):  # the slices that hold no data, a range at a time
            values[c].reshape(-1, n_t * n_p)[lo:hi] = 0
            known[c].reshape(-1, n_t * n_p)[lo:hi] = False
        if not lv[c].any():
            continue
        # only the slices that hold data are read: the others' stream is poison whatever they hold
        units = enabled_units(img, lv[c])
        span = units.span  # the slices read, as a range of this chip's (cluster, slice) positions
        out = None if span is None else (values[c].reshape(-1, n_t * n_p)[span],
                                         known[c].reshape(-1, n_t * n_p)[span])
        got = None if nest is None or not LOOP_NEST.on else load_nest(src, units, nest[0], nest[1], out)
        in_place = got is not None and out is not None
        if got is None:  # the general path: one address per stream position, reads outside the slice poison
            if bits is None:
                bits = bases[sel] + off * src.image_bits
                limit = 8 * img.nbytes
                inside = (bits >= 0) & (bits + src.image_bits <= limit)
                bits = np.where(inside, bits, 0)
                stream_ok = valid & inside
            got = load(src, units, bits)
        v, k = got[0].reshape(units.count, -1), got[1].reshape(units.count, -1)
        if not stream_ok.all():
            k &= stream_ok[None, :]
        if not k.all():
            np.copyto(v, np.zeros((), dtype=src.storage), where=~k)  # poison reads as 0
        if in_place:
            continue  # read straight into the stream
        values[c][lv[c]] = v
        known[c][lv[c]] = k
    return values, known, None, None, None


def _masked_known(src: type[dt.Scalar], images: Sequence[DenseImage], lv: BoolArray,
                  nest: tuple[int, tuple[tuple[int, int], ...]] | None, valid: BoolArray,
                  masking: BoolArray | None) -> Cut | None:
    """``fetch.masked-known``: the mask as a cut of the nest (:func:`~visa.engines.fast_masked.unmasked_cut`)
    when every position it leaves is valid and every element of the nest so cut was written in every slice that
    holds data (:func:`~visa.memory.images.nest_elements_written`); else None."""
    if masking is None or nest is None or not MASKED.on or not bool((valid | masking).all()):
        return None
    return written_cut(src, images, lv, nest, masking)


def _read_sources(src: type[dt.Scalar], img: DenseImage, units: UnitSelection,
                  nest: tuple[int, tuple[tuple[int, int], ...]], rows: npt.NDArray[Any],
                  copies: list[tuple[IntArray, IntArray]], first: int) -> bool:
    """Read into ``rows`` (a chip's flat stream rows, one per DM unit) only the selected units whose bytes are
    not pending copies of others (:func:`visa.memory.owed.holders`), and note the others' rows
    and the rows they copy, offset by ``first``, in ``copies``.  False (nothing read) when no selected unit is
    a pending copy."""
    span = nest_span(src, nest[0], nest[1])
    owner = None if span is None else owed.holders(img, units.units, *span)
    if owner is None:
        return False
    owner = owner.copy()
    # a class whose source unit is not read (a slice the fetch leaves out): its first selected unit is read
    # instead, and the class's other units copy that one's row (a row of a slice not read is poison, not data)
    orphan = np.flatnonzero((owner != units.units) & ~np.isin(owner, units.units))
    if orphan.size:
        lead = orphan[np.unique(owner[orphan], return_index=True)[1]]  # the first orphan of each class
        proxy = np.arange(math.prod(img.lead_shape), dtype=np.int64)
        proxy[owner[lead]] = units.units[lead]
        owner[orphan] = proxy[owner[orphan]]
    moved = owner != units.units
    if not moved.any():
        return False
    held = units.units[~moved]
    enabled = np.zeros(img.lead_shape, dtype=bool)
    enabled.reshape(-1)[held] = True
    part = np.empty((held.size, rows.shape[1]), dtype=rows.dtype)
    if not load_nest_values(src, enabled_units(img, enabled), nest[0], nest[1], part):
        return False
    rows[held] = part
    copies.append((first + units.units[moved], first + owner[moved]))
    return True


def _all_known(src: type[dt.Scalar], images: Sequence[DenseImage], lv: BoolArray,
               nest: tuple[int, tuple[tuple[int, int], ...]] | None, valid: BoolArray) -> bool:
    """Is every position of the stream known in the slices that hold data (``lv``; the others are poison): every
    stream position is valid (no padding read), and every byte the loop nest spans was written in every such
    slice (asked of the pages, no mask read; manual L1071–1093)?"""
    if nest is None or not bool(valid.all()):
        return False
    return all(nest_all_written(src, enabled_units(img, lv[c]), nest[0], nest[1])
               for c, img in enumerate(images) if lv[c].any())


def _runs(on: BoolArray) -> list[tuple[int, int]]:
    """The ranges ``[lo, hi)`` of consecutive True positions of ``on``."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], on, [False])).astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def _nest(cfg: FetchConfig, bases: IntArray, entries: Sequence[Any]) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """``(bit base, loops)`` of the sequencer ``entries`` over the slice's bits, when its addresses are that loop
    nest: one tensor, or an interleaved pair whose second tensor follows the first (then the buffer
    ``[I, Element]`` is the bytes themselves).  None otherwise."""
    seq = cfg.sequencer
    loops = tuple((int(e.size), int(e.stride)) for e in entries)
    if len(bases) > 1 and any(int(b) != int(bases[0]) + k * cfg.element.size * cfg.src.image_bits
                              for k, b in enumerate(bases.tolist())):
        got = _pair_nest(cfg, bases, loops)
        if got is None and PAIR_PADDED.on:  # (fetch.pair-padded-nest: the padded lanes left out of the reach)
            tail = _padded_tail(cfg, loops)
            got = _pair_nest(cfg, bases, loops, tail) if tail else None
        return got
    return int(bases[0]) + seq.base * cfg.src.image_bits, loops


def _padded_tail(cfg: FetchConfig, loops: tuple[tuple[int, int], ...]) -> int:
    """The positions at the end of the sequencer's innermost loop that are stream padding at every step of the
    other loops (a packet ``A % 4 # 8``: 4), or 0."""
    if not loops or loops[-1][1] != 1:
        return 0
    valid = _static(cfg)[2]
    n = loops[-1][0]
    if n < 2 or valid.size % n:
        return 0
    rows = valid.reshape(-1, n)
    first = rows[0]
    kept = int(np.count_nonzero(first))
    if kept == 0 or kept == n or not bool(first[:kept].all()) or not bool((rows == first).all()):
        return 0
    return n - kept


def _pair_nest(cfg: FetchConfig, bases: IntArray, loops: tuple[tuple[int, int], ...], tail: int = 0
               ) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """:func:`_nest` of an interleaved pair anywhere in the slice (the second tensor above the first, e.g. the
    collectives' ``acc`` and ``t``): buffer position ``p = k·E + e`` (``E = Element::SIZE``) is bit
    ``bases[k] + e·image_bits``, so the loops that step ``k`` (stride a multiple of ``E``) step by the gap
    between the tensors instead.  A loop crossing from ``e`` into ``k`` (``size·stride`` a multiple of ``E``)
    is split there first; a second tensor below the first is a negative stride.  None when the positions are no
    such nest: the buffer base or the loops within an element reach past it (a carry from ``e`` into ``k``), or
    a negative stride among the sequencer's loops.  ``tail`` (``fetch.pair-padded-nest``): the last positions of
    the innermost loop are stream padding everywhere (:func:`_padded_tail`), so its reach past the element is not
    a carry into the next tensor: the nest gives those positions other bytes than the sequencer's, which the
    fetch never reads as data (poison, or the masking stage's pad value)."""
    n_e, bits = cfg.element.size, cfg.src.image_bits
    gap = int(bases[1]) - int(bases[0])
    base = cfg.sequencer.base
    if len(bases) != 2 or gap % bits or not 0 <= base < n_e:
        return None
    out: list[tuple[int, int]] = []
    within, across = base, 0  # the furthest element offset and tensor index the loops reach
    for k, (n, s) in enumerate(loops):
        if s < 0:
            return None
        if n == 1 or s == 0:
            out.append((n, s))
        elif s % n_e == 0:  # steps the tensor
            out.append((n, s // n_e * (gap // bits)))
            across += (n - 1) * (s // n_e)
        elif s < n_e and n_e % s == 0 and (n * s) % n_e == 0:  # runs over whole elements: split at E
            inner = n_e // s
            out += [(n // inner, gap // bits), (inner, s)]
            across += n // inner - 1
            within += (inner - 1) * s
        else:
            out.append((n, s))
            within += (n - 1 - (tail if k == len(loops) - 1 else 0)) * s
    if within >= n_e or across > 1:
        return None
    return int(bases[0]) + base * bits, tuple(out)
