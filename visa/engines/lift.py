"""Fetch lifts: a fetch's outer Time digits replace a broadcast digit of Slice, Cluster or Chip (design API.md
§8; the reference's ``fetch_slice_lift`` / ``fetch_cluster_lift`` / ``fetch_chip_lift``, furiosa-opt v0.7 — a
reference extension, docs/manual-notes.md "issue 26").

A tensor replicated over a placement digit (the slices ``X = 0, 1`` of ``Slice = m["A, X"]`` hold the same bytes:
visa spells a broadcast digit as an axis the data does not have, as the manual's code does, L3164) is fetched
once per copy.  A lift gives each copy its own fetch base instead: unit ``u`` of the level starts its sequencer
``r(u)`` steps of the lifted Time digits further, so copy ``X = r`` reads time steps ``r · |Time2| ..``; the
stream's Time shrinks by the digit's size and the placement names the lifted axes where it named the broadcast.
No data moves and the packet does not change.

``.fetch(D, m["H"], m["V"]).fetch_slice_lift(m["A, H"], m["1"])`` over ``Slice = m["A, X"]`` (X = H = 2):
slice ``(a, x)`` reads time step ``h = x`` of its own copy, so the stream's Slice holds ``(a, h)`` and Time
``m["1"]``.

* :func:`plan` (the rules, shared with the mypy plugin): the new placement keeps the level's size; the new
  Time divides the old and is its inner part (``Time ≡ [Lifted, Time2]``), the lifted size a power of two; the
  placement loses only axes it held alone (the broadcast digits, together of the lifted size), keeps every
  other coordinate where it was, takes the lifted axes in their place, and keeps its padding (a padding digit
  is not a broadcast); each unit's base step is a whole ``lift_base_align_bytes`` (8-byte) DM word (L1756, the
  reference's check).
* :func:`check_replicated`: the copies the lift reads really are copies (the source region is replicated);
  a live axis named as a placement digit would give each unit other data, and is refused with the first unit
  and time step that differ.
* :func:`execute`: unit ``u`` of the new stream is the old stream's unit ``u`` at time steps
  ``r(u) · |Time2| + t2`` — its own copy, read from its own base.
* :func:`cycles`: the lifted fetch's ``Time2::SIZE × fetches_per_packet`` (L2060).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.common import StreamData, axes_text
from visa.errors import AddressError, HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping

__all__ = ["LiftConfig", "LEVELS", "plan", "check_replicated", "execute", "cycles"]

#: The lifts and the stream level (axis of the data) each changes.
LEVELS = {"Chip": 0, "Cluster": 1, "Slice": 2}


@dataclass(frozen=True, eq=False)
class LiftConfig:
    """A lift of ``level``: ``placement`` → ``placement2``, ``time`` → ``time2`` (the ``lifted`` outer digits,
    ``factor`` steps), ``replaced`` the broadcast axes that leave the placement; per unit of the level, ``steps``
    its lifted Time index (-1 for a padding unit), ``rep`` the unit whose copy it must equal, and ``base_bytes``
    the fetch base step of each lifted index."""

    level: str
    placement: Mapping
    placement2: Mapping
    time: Mapping
    time2: Mapping
    lifted: Mapping
    factor: int
    replaced: tuple[str, ...]
    steps: npt.NDArray[Any]
    rep: npt.NDArray[Any]
    base_bytes: tuple[int, ...]

    def __str__(self) -> str:
        return (f"fetch_{self.level.lower()}_lift: {self.level} {self.placement!r} → {self.placement2!r} (broadcast "
                f"{', '.join(self.replaced)} ← m[\"{self.lifted}\"]), Time {self.time!r} → {self.time2!r}, per-unit "
                f"base steps {list(self.base_bytes)} B")


def _fail(level: str, text: str, mapping: Mapping, fix: str, axis: str | None = None,
          cls: type[LayoutError] | type[HardwareLimitError] | type[AddressError] = LayoutError) -> Exception:
    return cls(text, call=f"fetch_{level.lower()}_lift", level=level, mapping=repr(mapping),
               axis=axis if axis is not None else axes_text(mapping), fix=fix)


def plan(hw: HardwareProfile, level: str, placement: Mapping, placement2: Mapping, time: Mapping, time2: Mapping,
         packet: Mapping, others: frozenset[str], src: type[dt.Scalar] | None = None,
         addresses: npt.NDArray[Any] | None = None) -> LiftConfig:
    """The lift of ``level`` (``"Chip"``, ``"Cluster"`` or ``"Slice"``) of a fetched stream whose ``level`` is
    ``placement``, Time ``time`` and Packet ``packet``; ``others`` are the axes of its other placement levels.
    ``addresses`` (the fetch sequencer's element addresses in stream order) and ``src`` (the buffer's dtype)
    check the per-unit base alignment when given.  Pure; raises the rule's :class:`~visa.errors.VisaError`."""
    if placement2.size != placement.size:
        raise _fail(level, f"a lift keeps the {level} size: {placement2!r} has {placement2.size} positions, "
                           f"{placement!r} {placement.size} (the placement is the hardware's, L1707–1709)",
                    placement2, f"keep {placement.size} positions: replace the broadcast digit, do not resize",
                    cls=HardwareLimitError)
    if time.size % time2.size:
        raise _fail(level, f"the new Time {time2!r} ({time2.size}) does not divide the fetch's Time {time!r} "
                           f"({time.size})", time2, "lift whole outer digits of the fetch's Time", axes_text(time))
    factor = time.size // time2.size
    if factor < 2 or factor & (factor - 1):
        raise _fail(level, f"a lift moves a power-of-two number of time steps onto a broadcast digit; {time!r} → "
                           f"{time2!r} moves {factor}", time2,
                    "lift a size-2^k digit of Time" if factor > 1 else "drop the lift: it moves nothing",
                    axes_text(time))
    lifted = time.stride(time2.size)
    if time.modulo(time2.size) != time2:
        raise _fail(level, f"the new Time {time2!r} is not the inner part of the fetch's Time {time!r}: a lift "
                           f"takes Time's outer digits ({lifted!r})", time2,
                    f"write the new Time as {time.modulo(time2.size)!r}", axes_text(time))
    ev, ev2 = placement.evaluate(), placement2.evaluate()
    valid = np.asarray(ev.valid, dtype=bool)
    if not np.array_equal(valid, np.asarray(ev2.valid, dtype=bool)):
        k = int(np.argmax(valid != np.asarray(ev2.valid, dtype=bool)))
        raise _fail(level, f"{level} position {k} is padding in one of {placement!r} and {placement2!r}: a lift "
                           "replaces a broadcast digit, never padding", placement2,
                    "keep the placement's padding where it is (a padding digit holds no copy to read)")
    replaced = tuple(sorted(placement.axes - placement2.axes))
    if not replaced:
        raise _fail(level, f"no broadcast digit of {placement!r} is replaced in {placement2!r}", placement2,
                    "name the lifted axes where the placement named its broadcast digit")
    stream_axes = time.axes | packet.axes | others
    live = sorted(set(replaced) & stream_axes)
    if live:
        raise _fail(level, f"{live[0]} is a live axis of the stream (its Time, Packet or another level), not a "
                           f"broadcast digit of {placement!r}", placement, "replace a digit the data does not have",
                    live[0])
    gained = placement2.axes - placement.axes
    if gained != lifted.axes:
        extra = sorted(gained ^ lifted.axes)
        raise _fail(level, f"{placement2!r} must name the lifted axes {lifted!r} in place of "
                           f"{', '.join(replaced)}, and no other new axis", placement2,
                    f"take {extra[0]} out of the placement or the Time" if extra else "", extra[0] if extra else None)
    for a in sorted(placement.axes & placement2.axes):
        if not np.array_equal(np.where(valid, ev.coord(a), 0), np.where(valid, ev2.coord(a), 0)):
            raise _fail(level, f"axis {a} moves between {placement!r} and {placement2!r}: a lift keeps every other "
                               "coordinate of the placement where it was", placement2,
                        "change only the broadcast digit", a)
    extent = 1
    for a in replaced:
        extent *= int(np.unique(np.asarray(ev.coord(a))[valid]).size) if valid.any() else 1
    if extent != factor:
        raise _fail(level, f"the broadcast digit(s) {', '.join(replaced)} of {placement!r} have {extent} copies; the "
                           f"lift moves {factor} time steps ({lifted!r})", placement,
                    f"lift {extent} time steps, or replace a broadcast digit of size {factor}", ", ".join(replaced))
    coords = {a: np.asarray(ev2.coord(a)) for a in lifted.axes}
    pos, held = lifted.locate(coords, valid.shape)
    held = np.broadcast_to(held, valid.shape)
    if not bool(np.all(held[valid])):
        k = int(np.argmax(valid & ~held))
        raise _fail(level, f"{level} position {k} names an index of {lifted!r} the lift does not move", placement2,
                    "name each lifted index once across the copies")
    steps = np.where(valid, np.broadcast_to(pos, valid.shape), -1).astype(np.int64)
    keep = sorted(placement.axes - set(replaced))
    key = np.stack([np.where(valid, ev.coord(a), -1) for a in keep], axis=-1) if keep else np.zeros((valid.size, 1))
    _, first, inverse = np.unique(np.concatenate([key, valid[:, None]], axis=1), axis=0, return_index=True,
                                  return_inverse=True)
    rep = first[np.asarray(inverse).reshape(-1)]
    base: list[int] = []
    if addresses is not None and src is not None:
        per_step = addresses.size // max(1, time.size)
        align = hw.fetch.lift_base_align_bytes
        for r in range(factor):
            bits = int(addresses[r * time2.size * per_step] - addresses[0]) * src.size_bits
            if bits % (8 * align):
                raise _fail(level, f"lifted index {r} starts {bits / 8:g} bytes after index 0: a lifted fetch base is "
                                   f"{align}-byte aligned (manual L1756)", time, "pad the inner axes of the "
                                   f"Element so that one lifted step is a multiple of {align} bytes",
                            axes_text(lifted), cls=AddressError)
            base.append(bits // 8)
    return LiftConfig(level, placement, placement2, time, time2, lifted, factor, replaced, steps, rep, tuple(base))


def _level_axis(cfg: LiftConfig) -> int:
    return LEVELS[cfg.level]


def check_replicated(cfg: LiftConfig, data: StreamData) -> None:
    """Refuse a lift whose copies differ (the replaced digit held live data): unit ``u`` must read what the first
    unit with the same kept coordinates reads, value and poison alike."""
    ax = _level_axis(cfg)
    values = np.moveaxis(np.asarray(data.values), ax, 0)
    known = np.moveaxis(np.asarray(data.known), ax, 0)
    units = np.flatnonzero((cfg.rep != np.arange(cfg.rep.size)) & (cfg.steps >= 0))
    if not units.size:
        return
    bits = values.view(np.dtype(f"u{values.dtype.itemsize}")) if values.dtype.itemsize in (1, 2, 4, 8) else values
    same = (bits[units] == bits[cfg.rep[units]]) | ~(known[units] | known[cfg.rep[units]])
    same &= known[units] == known[cfg.rep[units]]
    if bool(np.all(same)):
        return
    bad = np.argwhere(~same)[0]
    u = int(units[bad[0]])
    raise _fail(cfg.level, f"{cfg.level} position {u} and {int(cfg.rep[u])} hold different data at time step "
                           f"{int(bad[-2])}: the digit {', '.join(cfg.replaced)} of {cfg.placement!r} is live, not a "
                           "broadcast (a lift reads each copy of a replicated region)", cfg.placement,
                "replicate the region over the digit first (a DMA to every copy), or fetch without the lift",
                ", ".join(cfg.replaced))


def execute(cfg: LiftConfig, data: StreamData) -> StreamData:
    """The lifted stream: unit ``u`` at time step ``t2`` is the old stream's unit ``u`` at ``steps[u] · |Time2| +
    t2`` (its own copy, from its own base); a padding unit stays poison."""
    ax = _level_axis(cfg)
    values, known = np.asarray(data.values), np.asarray(data.known)
    n2 = cfg.time2.size
    steps = np.where(cfg.steps >= 0, cfg.steps, 0)
    tidx = steps[:, None] * n2 + np.arange(n2, dtype=np.int64)[None, :]  # (units, T2)
    shape = [1] * 5
    shape[ax] = steps.size
    shape[3] = n2
    out_shape = list(values.shape)
    out_shape[3] = n2
    idx = np.broadcast_to(tidx.reshape(shape), out_shape)
    new_values = np.take_along_axis(values, idx, axis=3)
    new_known = np.take_along_axis(known, idx, axis=3)
    pad = cfg.steps < 0
    if pad.any():
        sel: list[Any] = [slice(None)] * 5
        sel[ax] = pad
        new_known[tuple(sel)] = False
    return StreamData(new_values, new_known)


def cycles(fetch_cfg: Any, cfg: LiftConfig) -> int:
    """The lifted fetch: ``Time2::SIZE × ceil(packet_size / fetch_size)`` (L2060) — the copies read in parallel."""
    from visa.engines import fetch

    return fetch.cycles(replace(fetch_cfg, time=cfg.time2))
