"""DM occupancy over time: the trace's "live DM bytes" counter (manual "Scheduling", L7042–7070; DM shared by
both contexts, L150–155).

Operations are recorded in program order but run out of order (in-order issue, out-of-order completion), so a
sample "after operation *i*" stamped at that operation's end is wrong wherever a later operation ends earlier
(issue 29: the GEMM showed 0 bytes at 70.9 µs while 16 MiB were live).  Instead each DM tensor gets a lifetime
on the schedule's clock:

* it is held from the **start** of the first operation recorded after its bytes were allocated (the DMA or
  commit that writes it);
* it is held until the **end** of the last operation that touched its bytes (read or wrote them) while it was
  live; a tensor still live when the program ends is held to the end;
* bytes an operation touches through a handle that owns nothing (``DmTensor.from_addr`` over bytes whose
  tensors were freed) are held while that operation runs.

:meth:`DmOccupancy.samples` turns the lifetimes into a step function per chip, in time order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from visa.memory.fast_occupancy import REPLAY
from visa.memory.footprint import Footprint, Span
from visa.schedule.core import Operation
from visa.schedule.footprints import span_of, tensor_dm_bytes

__all__ = ["Lifetime", "DmOccupancy", "dm_bytes_in_use", "CLOSED"]


#: The span a closed :class:`Lifetime` keeps: none (its bytes and times are all :meth:`DmOccupancy.samples` reads;
#: a run that frees tensor after tensor — a model generating token after token — holds no byte ranges for them).
CLOSED = Span.of("dm", 0, [], [])


@dataclass
class Lifetime:
    """One DM tensor on the schedule's clock: its bytes per chip, held from ``start`` to ``end`` (cycles)."""

    name: str
    nbytes: dict[int, int]
    span: Span
    start: int
    end: int
    live: bool = True
    lo: int = field(init=False, default=0)  #: the span's first byte (with :attr:`hi`: a test that skips the span)
    hi: int = field(init=False, default=0)  #: past its last byte

    def __post_init__(self) -> None:
        if self.span.count:
            self.lo, self.hi = self.span.extent()


@dataclass
class DmOccupancy:
    """The lifetimes of every DM tensor of one context, kept up to date as operations are recorded."""

    lifetimes: dict[int, Lifetime] = field(default_factory=dict)
    _open: set[int] = field(default_factory=set)
    #: the last note's inputs (the registry, its DM generation, the spans touched, the chips and the operation's
    #: name) and what it did (the lifetimes it extended, the anonymous bytes): ``memory.occupancy-replay``
    _last: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    def note(self, registry: Any, op: Operation) -> None:
        """After ``op`` was recorded: start the tensors allocated since the last operation, extend those ``op``
        touches, and close those freed since (their end is the last operation that touched them).

        ``memory.occupancy-replay``: when no DM tensor was allocated, released or has died since the last note
        (:meth:`visa.memory.registry.Registry.dm_generation`), the live DM tensors are the ones the last note
        left open, each with its lifetime and span unchanged (an open lifetime's span never changes): nothing to
        start or close.  If ``op`` also touches the same spans (the same objects: a span never changes) on the
        same chips, it touches the same lifetimes and leaves the same anonymous bytes, which the last note kept."""
        key = (registry, registry.dm_generation(), op.reads.spans, op.writes.spans, op.lanes, op.name) \
            if REPLAY.on else None
        last = self._last
        if key is not None and last is not None and last[0] == key:
            for life in last[1]:
                life.end = max(life.end, op.end)
            if last[2]:
                self.lifetimes[-1 - len(self.lifetimes)] = Lifetime(
                    f"bytes {op.name} touches through a handle that owns none", dict(last[2]),
                    Span.of("dm", last[2], [0], [0]), op.start, op.end, live=False)
            return
        self._last = None
        extended: list[Lifetime] = []
        anonymous: dict[int, int] = {}
        self._note(registry, op, extended, anonymous)
        if key is not None:
            self._last = (key, tuple(extended), dict(anonymous))

    def _note(self, registry: Any, op: Operation, extended: list[Lifetime], anonymous: dict[int, int]) -> None:
        """:meth:`note` in full; the lifetimes ``op`` extended are added to ``extended``, its anonymous bytes to
        ``anonymous``."""
        live = {r.ident: r for r in registry.live_regions("dm")}
        for ident in [k for k in self._open if k not in live]:
            closed = self.lifetimes[ident]
            closed.live = False
            # only an open lifetime's bytes are compared with what an operation touches
            closed.span, closed.lo, closed.hi = CLOSED, 0, 0
            self._open.discard(ident)
        # op's DM spans, read and written (what every test below looks at; the other memories' are skipped once)
        reads = [sp for sp in op.reads.spans if sp.memory == "dm"]
        writes = [sp for sp in op.writes.spans if sp.memory == "dm"]
        touched = reads + writes
        # each span with bytes and its extent (a span without any shares no byte: Span.overlaps is False for it)
        dm = [(sp, *sp.extent()) for sp in touched if sp.count]
        # the byte hull of what op touches in DM: a lifetime whose bytes lie outside it is not touched, without
        # comparing its span with each of op's (most of a model's live tensors, at every operation)
        lo = min((e[1] for e in dm), default=0)
        hi = max((e[2] for e in dm), default=0)
        covered: dict[int, int] = {}
        for ident, region in live.items():
            life = self.lifetimes.get(ident)
            if life is None:
                owner = region.owner() if region.owner is not None else None
                span = span_of(owner) if owner is not None else None
                if span is None or span.memory != "dm":
                    span = Span.of("dm", region.chips, [region.lo], [region.hi])
                life = Lifetime(region.name, tensor_dm_bytes(region), span, op.start, op.end)
                self.lifetimes[ident] = life
                self._open.add(ident)
            # (nor is it by a span whose extent its own misses: Span.overlaps, whose first test of the intervals is
            # that one on numpy scalars, is asked of the others only)
            if life.lo < hi and lo < life.hi and any(a < life.hi and life.lo < b and sp.overlaps(life.span)
                                                     for sp, a, b in dm):
                life.end = max(life.end, op.end)
                extended.append(life)
                for chip, n in life.nbytes.items():
                    covered[chip] = covered.get(chip, 0) + n
        if not touched:  # (no DM byte touched: no chip has bytes beyond the tensors')
            return
        anonymous.update({c: n - covered.get(c, 0) for c in op.chips
                          if (n := max(_dm_bytes(reads, c), _dm_bytes(writes, c))) > covered.get(c, 0)})
        if anonymous:
            key = -1 - len(self.lifetimes)
            self.lifetimes[key] = Lifetime(f"bytes {op.name} touches through a handle that owns none", anonymous,
                                           Span.of("dm", anonymous, [0], [0]), op.start, op.end, live=False)

    def fold(self, cycle: int) -> None:
        """Let go of the lifetimes closed by ``cycle`` (:meth:`visa.schedule.Schedule.fold`: the record from there
        on is all that is kept); the anonymous ones left are renumbered (their keys count the lifetimes)."""
        self._last = None
        kept = [(k, life) for k, life in self.lifetimes.items() if life.live or life.end > cycle]
        self.lifetimes = {k if k >= 0 else -1 - i: life for i, (k, life) in enumerate(kept)}

    def samples(self, makespan: int) -> dict[int, list[tuple[int, int]]]:
        """Per chip, ``(cycle, bytes)`` in time order: the DM bytes held by tensors from that cycle on (one
        sample per change, starting with ``(0, 0)``)."""
        deltas: dict[int, dict[int, int]] = {}
        for life in self.lifetimes.values():
            end = life.end if not life.live else max(makespan, life.end)
            for chip, n in life.nbytes.items():
                per = deltas.setdefault(chip, {})
                per[life.start] = per.get(life.start, 0) + n
                if not life.live:
                    per[end] = per.get(end, 0) - n
        out: dict[int, list[tuple[int, int]]] = {}
        for chip, per in sorted(deltas.items()):
            level, steps = 0, [(0, 0)]
            for t in sorted(per):
                level += per[t]
                if steps[-1][0] == t:
                    steps[-1] = (t, level)
                else:
                    steps.append((t, level))
            out[chip] = steps
        return out

    def held_at(self, chip: int, cycle: float) -> int:
        """The DM bytes held on ``chip`` at ``cycle`` by this account (for checks)."""
        return sum(life.nbytes.get(chip, 0) for life in self.lifetimes.values()
                   if life.start <= cycle and (life.live or cycle < life.end))


def dm_bytes_in_use(op: Operation, chip: int) -> int:
    """A lower bound on the DM bytes in use on ``chip`` while ``op`` runs: the larger of what it reads and writes."""
    return max(_chip_bytes(op.reads, chip), _chip_bytes(op.writes, chip))


def _chip_bytes(fp: Footprint, chip: int) -> int:
    return _dm_bytes([s for s in fp.spans if s.memory == "dm"], chip)


def _dm_bytes(spans: list[Span], chip: int) -> int:
    """The bytes per chip of the DM ``spans`` on ``chip``."""
    return sum(s.bytes_per_unit * s.unit_count() for s in spans if s.chips >> chip & 1)
