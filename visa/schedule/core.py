"""The scheduler: resources, hazards by address and contention (manual "Scheduling", L7042–7070; DMA engines
L2473–2504; bank arbitration L2897–2941).

Rules, each in one place:

* **Program order** (L7046–7055): operations issue in the order they are written; an operation never starts
  before the one written before it (in-order issue, out-of-order completion; docs/manual-notes.md).
* **Resources** (L7057–7065): an operation occupies *lanes* — ``(chip, resource)`` pairs: ``main`` and ``sub``
  (one operation at a time each, L7064, L2930), ``dma0`` … ``dma7`` (the chip's DMA engines, one per pair of
  DMNs, L2473–2504) and ``pcie`` (the chip's PCIe link, L2389, L2843–2847).  It starts when every lane is free.
* **Hazards** (L7066–7070): it also starts after every earlier operation it conflicts with has finished:
  read-after-write, write-after-read, write-after-write, found by intersecting footprints
  (:mod:`visa.memory.footprint`), so aliases and other chips are covered by construction; an operation of
  another context adds ``hw.timing.context_handoff_cycles`` (docs/cost-model.md).
* **HBM channels** (L2602, L2980): a DMA reserves the channels it uses for its busy cycles on each, so DMAs
  running at once share the chip's 1,536 B/cycle.
* **Bank starvation** (L2841–2842, L2913, L2922): a Tensor Unit operation whose fetch and commit make 64 or more
  consecutive accesses to one DM bank — counted with the other context's operation in flight on the same slices —
  is scheduled as if it occupied the DMA engines of its chips, and a :class:`~visa.errors.BankStarvationWarning`
  says so.
* **Main/sub contention** (L2927–2931): a main and a sub operation that overlap in time on the same DM slices,
  one of them hammering a bank, stretch toward main + sub: the later-issued one is lengthened by the overlap.
"""

from __future__ import annotations

import math
import os
import struct
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from visa.engines.common import EngineReport, replaced
from visa.errors import BankStarvationWarning
from visa.hw import RNGD, HardwareProfile
from visa.memory.footprint import EMPTY, Footprint

__all__ = ["Lane", "Dependency", "Operation", "Schedule", "TU_TRACKS", "dma_lane", "user_location"]

#: A resource of one chip: ``(chip, "main" | "sub" | "dma<i>" | "pcie")``.
Lane = tuple[int, str]

#: The Tensor Unit contexts (L150–155, L3046–3053).
TU_TRACKS = ("main", "sub")

_VISA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INSIDE: dict[str, bool] = {}  # source file → whether it is in the visa package


def dma_lane(chip: int, engine: int) -> Lane:
    """The lane of DMA engine ``engine`` of ``chip``."""
    return (chip, f"dma{engine}")


def _user_frame() -> tuple[str, int, int]:
    """``(file, line, depth)`` of the innermost frame outside the visa package, ``depth`` counted from the
    caller of this function (``("", 0, 1)`` if every frame is inside visa)."""
    frame = sys._getframe(2)
    depth = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = _INSIDE.get(filename)
        if inside is None:  # (abspath once per file: every operation records where the user issued it)
            inside = _INSIDE[filename] = os.path.abspath(filename).startswith(_VISA_DIR + os.sep)
        if not inside:
            return filename, frame.f_lineno, depth
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return "", 0, 1


def user_location() -> str:
    """``file:line`` of the innermost caller outside the visa package (the user's line that issued the
    operation); empty if every frame is inside visa."""
    path, line, _ = _user_frame()
    return f"{path}:{line}" if path else ""


@dataclass(frozen=True, slots=True)
class Dependency:
    """An earlier operation this one waited for, and why: ``"RAW"``, ``"WAR"`` and/or ``"WAW"`` (L7067–7069)."""

    op: int
    kinds: tuple[str, ...]


@dataclass(slots=True)
class Operation:
    """One operation: a DMA, or a Tensor Unit pipeline pass (fetch … commit); manual "Scheduling", L7042–7070.

    ``track`` is the context that issued it (``pdma``, ``tdma``, ``main``, ``sub``); ``lanes`` the resources it
    occupies; ``reads``/``writes`` its footprints; ``deps`` the in-flight operations it conflicted with;
    ``waits_for`` the operation whose end fixed its start (``None``: it started when issued); ``stretch`` the
    cycles contention added (included in ``cycles``); ``source`` the user's ``file:line``; ``traffic`` the
    bytes it moved per path (``"HBM"``, ``"DMA"``, ``"PCIe"``, ``"fetch"``, ``"commit"``, …: :mod:`visa.hw.paths`).
    """

    track: str
    name: str
    start: int
    cycles: int
    engines: tuple[EngineReport, ...] = ()
    index: int = 0
    lanes: tuple[Lane, ...] = ()
    reads: Footprint = EMPTY
    writes: Footprint = EMPTY
    deps: tuple[Dependency, ...] = ()
    waits_for: int | None = None
    stretch: int = 0
    source: str = ""
    traffic: dict[str, int] = field(default_factory=dict)
    bank_run: int = 0
    notes: tuple[str, ...] = ()
    in_kernel: bool = False
    bank_load: tuple[int, ...] = ()

    @property
    def end(self) -> int:
        """The cycle the operation finishes: its outputs are ready then."""
        return self.start + self.cycles

    @property
    def macs(self) -> int:
        """Multiply-accumulates its engines performed."""
        return sum(r.macs for r in self.engines)

    @property
    def chips(self) -> list[int]:
        """The chips whose resources it occupies."""
        return sorted({c for c, _ in self.lanes})

    def compact(self, shared: dict[Any, Any] | None = None) -> None:
        """Let go of what only scheduling the operations after it reads (:attr:`Schedule.timeline` off): its
        footprints, its bank loads and its engines' details, per-bank runs and HBM channel reservations.  What
        the report, the trace and the cycles read stays: start, cycles, lanes, dependencies, traffic, each
        engine's name, configuration, cycles, latency, bytes and MACs, the notes and the source line — the texts
        interned, and equal engine reports and traffic one object each (``shared``; neither is changed once
        recorded), so that a program that repeats itself (a model's decode steps) holds each once."""
        shared = {} if shared is None else shared
        self.reads = self.writes = EMPTY
        self.bank_load = ()
        self.name, self.source = sys.intern(self.name), sys.intern(self.source)
        if self.notes:
            self.notes = tuple([sys.intern(n) for n in self.notes])
        self.engines = tuple([_slim(r, shared) for r in self.engines])
        items = tuple(self.traffic.items())
        self.traffic = shared.setdefault(("traffic", *items, None if _plain(self.traffic.values()) else _exact(items)),
                                         self.traffic)


def _slim(r: EngineReport, shared: dict[Any, Any]) -> EngineReport:
    """An engine report without the details the scheduling of later operations read (:meth:`Operation.compact`),
    the one in ``shared`` equal to it if there is one (else it joins ``shared``)."""
    # keyed on the fields the slim report keeps (the others are empty in every slim one): what ``==`` of two slim
    # reports compares, without building one to look it up
    numbers = (r.cycles, r.latency, r.nbytes, r.macs, r.bank_run)
    texts = (r.engine, r.config, r.mac_dtype)
    exact = None if _plain(numbers) and _plain_text(texts) else _exact(texts + numbers)  # (0.0 and -0.0 apart)
    key = (_SLIM, type(r), *texts, *numbers, exact)
    out: EngineReport | None = shared.get(key)
    if out is None:
        out = shared[key] = replaced(r, config=sys.intern(r.config), details=(), bank_runs=(), hbm_channels=())
    return out


_SLIM = object()  # (a key of :attr:`Schedule.shared` that holds a slim engine report)

def _interned(text: str) -> str:
    """``sys.intern(text)`` for a plain ``str`` (the same text, one copy), a subclass as it is."""
    return sys.intern(text) if type(text) is str else text


def _exact(value: object) -> object:
    """``value`` as a key equal only to the same value: its type beside it, through nested tuples, and a float or
    numpy scalar by its bits (``-0.0`` is not ``0.0``; a NaN is its own bits).  ``==`` overlooks all three (1 and
    1.0, -0.0 and 0.0 are equal; a NaN equals nothing), so equal records are shared only when they are one."""
    kind = type(value)
    if isinstance(value, tuple):
        return kind, tuple([_exact(v) for v in value])
    if isinstance(value, float):
        return kind, struct.pack("<d", value)
    if isinstance(value, complex):
        return kind, struct.pack("<dd", value.real, value.imag)
    if not isinstance(value, (int, str, bytes)):
        bits = getattr(value, "tobytes", None)  # (a numpy scalar: np.float32, np.int64, …)
        if callable(bits):
            return kind, bits()
    return kind, value


def _plain(numbers: Iterable[object]) -> bool:
    """Whether every one is an ``int`` (not a subclass: ``==`` then tells them apart exactly)."""
    return all(type(n) is int for n in numbers)


def _plain_text(texts: Iterable[object]) -> bool:
    """Whether every one is a ``str`` (not a subclass)."""
    return all(type(t) is str for t in texts)


def _types(r: EngineReport) -> object:
    """A report's fields as :func:`_exact` keys them: types (nested through its details), float bits."""
    return _exact((r.engine, r.config, r.cycles, r.latency, r.nbytes, r.macs, r.mac_dtype, r.bank_run, r.details,
                   r.bank_runs, r.hbm_channels))


#: How many engine reports :func:`_kept` remembers (a kernel's passes repeat within a few hundred operations).
_KEPT_LIMIT = 512


def _kept(reports: tuple[EngineReport, ...],
          kept: dict[Any, tuple[EngineReport, object | None]]) -> tuple[EngineReport, ...]:
    """The reports, each replaced by the one recorded recently that is equal to it field by field, with the same
    types of its numbers and of its details' values and their items (``kept``, which it updates): engine reports
    are frozen, so a kernel's repeated passes hold each report once rather than a copy an operation (issue 24); a
    report that cannot be hashed (a detail holding a list) is kept as it is."""
    out = []
    for r in reports:
        try:
            key = (type(r), r.engine, r.config, r.cycles, r.latency, r.nbytes, r.macs, r.mac_dtype, r.bank_run,
                   r.bank_runs, r.hbm_channels, r.details)
            got = kept.get(key)
        except TypeError:  # (unhashable)
            out.append(r)
            continue
        if got is None:
            if len(kept) >= _KEPT_LIMIT:
                del kept[next(iter(kept))]
            kept[key] = (r, None)
            out.append(r)
            continue
        first, types = got
        if first is not r:
            if types is None:
                types = _types(first)
                kept[key] = (first, types)
            if types != _types(r):  # (equal, but 1 and 1.0, -0.0 and 0.0, (1,) and (1.0,): not shared)
                out.append(r)
                continue
        out.append(first)
    return tuple(out)


def _hazards(earlier: Operation, reads: Footprint, writes: Footprint) -> tuple[str, ...]:
    kinds = []
    if earlier.writes and reads and earlier.writes.overlaps(reads):
        kinds.append("RAW")
    if earlier.reads and writes and earlier.reads.overlaps(writes):
        kinds.append("WAR")
    if earlier.writes and writes and earlier.writes.overlaps(writes):
        kinds.append("WAW")
    return tuple(kinds)


def _traffic(track: str, reads: Footprint, writes: Footprint) -> dict[str, int]:
    """The bytes an operation moves per roofline path (:mod:`visa.hw.paths`), from its footprints: its HBM bytes,
    and for a Tensor Unit command the DM bytes its context fetches and commits (each port its own path; a DMA
    names its paths itself, :func:`visa.schedule.resources.dma_traffic`)."""
    out = {"HBM": reads.nbytes("hbm") + writes.nbytes("hbm")}
    if track in TU_TRACKS:
        ctx = "" if track == "main" else f" ({track})"
        out[f"fetch{ctx}"] = reads.nbytes("dm")
        out[f"commit{ctx}"] = writes.nbytes("dm")
    return {k: v for k, v in out.items() if v}


def _bank_load(reports: tuple[EngineReport, ...], banks: int) -> tuple[int, ...]:
    """Per DM bank, the consecutive accesses an operation's engines make to it, fetch and commit together (they
    run at once on the same slices, L2913); a report that knows only its longest run counts it on bank 0."""
    total = [0] * banks
    for r in reports:
        runs = r.bank_runs or ((r.bank_run,) if r.bank_run else ())
        for b, n in enumerate(runs[:banks]):
            total[b] += n
    return tuple(total) if any(total) else ()


#: :func:`_of_reports` per tuple of reports (by their ids; the reports, frozen, kept in the value) and bank count:
#: the last few (the oldest go first).
_OF_REPORTS: dict[tuple[int, ...], tuple[tuple[EngineReport, ...], tuple[int, ...], tuple[str, ...]]] = {}


def _of_reports(reports: tuple[EngineReport, ...], banks: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """An operation's :func:`_bank_load` and its engines' "slower by" notes: pure functions of its reports (frozen),
    kept for the same reports (a kernel's passes record the same remembered reports again and again)."""
    key = (banks, *map(id, reports))
    got = _OF_REPORTS.get(key)
    if got is not None and all(a is b for a, b in zip(got[0], reports, strict=True)):
        return got[1], got[2]
    load = _bank_load(reports, banks)
    slower = tuple(f"{r.engine} slower by: {why}" for r in reports if (why := dict(r.details).get("slower by")))
    if len(_OF_REPORTS) >= 16:  # (a few: the reports it keeps alive are not the record's to hold)
        del _OF_REPORTS[next(iter(_OF_REPORTS))]
    _OF_REPORTS[key] = (reports, load, slower)
    return load, slower


#: Spans of at most this many intervals are kept as keys of :data:`_SPANS` and :data:`_HAZARDS` (a footprint with
#: more is worked out afresh: the caches never hold a large view's intervals).
_SMALL = 4
_SPANS_LIMIT = 64

#: Per Tensor Unit track and the spans read and written (the objects: a span never changes), the lanes the
#: operation occupies by default (its track on each chip it touches) and its traffic (:func:`_traffic`): pure
#: functions of those, kept for a kernel's passes that read and write the same spans again and again.
_SPANS: dict[tuple[Any, ...], tuple[tuple[Lane, ...], dict[str, int]]] = {}

#: :func:`_hazards` per the spans of the earlier operation's and this one's footprints (a pure function of them).
_HAZARDS: dict[tuple[Any, ...], tuple[str, ...]] = {}


def _small(fp: Footprint) -> bool:
    return all(s.rel_lo.size <= _SMALL for s in fp.spans)


def _of_spans(track: str, reads: Footprint, writes: Footprint) -> tuple[tuple[Lane, ...], dict[str, int]] | None:
    """The default lanes of a Tensor Unit command (``track`` on each chip its footprints touch, as
    :meth:`Schedule.default_lanes` gives them) and its :func:`_traffic`, kept per track and spans (:data:`_SPANS`);
    None for footprints with a large span (the caller works them out)."""
    key = (track, reads.spans, writes.spans)
    got = _SPANS.get(key)
    if got is not None:
        return got
    if not (_small(reads) and _small(writes)):
        return None
    mask = reads.chips() | writes.chips()
    lanes = tuple((c, track) for c in range(mask.bit_length()) if mask >> c & 1) or ((0, track),)
    if len(_SPANS) >= _SPANS_LIMIT:
        del _SPANS[next(iter(_SPANS))]
    got = _SPANS[key] = (lanes, _traffic(track, reads, writes))
    return got


def _hazards_of(earlier: Operation, reads: Footprint, writes: Footprint) -> tuple[str, ...]:
    """:func:`_hazards`, kept per the spans of the four footprints (:data:`_HAZARDS`) when they are small."""
    key = (earlier.reads.spans, earlier.writes.spans, reads.spans, writes.spans)
    got = _HAZARDS.get(key)
    if got is not None:
        return got
    kinds = _hazards(earlier, reads, writes)
    if _small(earlier.reads) and _small(earlier.writes) and _small(reads) and _small(writes):
        if len(_HAZARDS) >= _SPANS_LIMIT:
            del _HAZARDS[next(iter(_HAZARDS))]
        _HAZARDS[key] = kinds
    return kinds


def _shares_dm_units(a: Operation, reads: Footprint, writes: Footprint) -> bool:
    mine = [s for s in (reads + writes).spans if s.memory == "dm"]
    theirs = [s for s in (a.reads + a.writes).spans if s.memory == "dm"]
    return any(x.shares_units(y) for x in mine for y in theirs)


class Schedule:
    """Operations in program order with their start times, given resources and hazards (module docstring).

    Only operations still in flight when the next one issues can delay it (issue is in order), so the
    scheduler keeps those (``active``) and compares a new operation's footprints with theirs alone.

    ``timeline`` (the default) keeps every operation whole, footprints and all, for a user who inspects them;
    off, an operation that leaves ``active`` is compacted (:meth:`Operation.compact`): the cycles, the report, the
    trace and the critical path are the same, and a long run (a model generating token after token) holds a few
    hundred bytes per operation rather than its footprints (issue 25's peak memory).  On, the record is bounded
    per operation too (issue 24): a tile view's span shares its Element's intervals (the ``shift`` of
    :class:`~visa.memory.footprint.Span`), equal engine reports of recent operations are one object
    (:attr:`kept`) and the texts are interned.
    """

    def __init__(self, hw: HardwareProfile = RNGD, *, timeline: bool = True) -> None:
        self.hw = hw
        self.timeline = timeline
        self.shared: dict[Any, Any] = {}  # the compact record's engine reports and traffic, each once
        # recent engine reports by value, with their types once found (:func:`_kept`)
        self.kept: dict[Any, tuple[EngineReport, object | None]] = {}
        self.ops: list[Operation] = []
        self.free_at: dict[Lane, int] = {}
        self.owner: dict[Lane, int] = {}
        self.active: list[Operation] = []
        self.warnings: list[str] = []
        self.hbm_free: dict[int, float] = {}  # when each HBM channel (chip · channels + channel) is free
        self.folded = 0  # operations let go of by :meth:`fold`
        self.folded_end = 0  # the latest end among them

    # -- resources -----------------------------------------------------------------------------------------
    def dma_engines(self, chip: int) -> list[Lane]:
        """The DMA engine lanes of one chip (L2473–2504)."""
        return [dma_lane(chip, e) for e in range(self.hw.dma.engines_per_chip)]

    def earliest_engine(self, chip: int, taken: Iterable[Lane] = ()) -> Lane:
        """The chip's DMA engine that is free first (lowest index on a tie), not among ``taken``: how a transfer
        with no DM side picks its engine (docs/manual-notes.md, "schedule")."""
        skip = set(taken)
        free = [(self.free_at.get(lane, 0), e, lane) for e, lane in enumerate(self.dma_engines(chip))
                if lane not in skip]
        return min(free)[2] if free else dma_lane(chip, 0)

    def default_lanes(self, track: str, chips: Iterable[int]) -> tuple[Lane, ...]:
        """The lanes of an operation given only its track: ``main``/``sub`` on each chip, the PCIe link for
        ``pdma``, the first free DMA engine of each chip for ``tdma``."""
        out: list[Lane] = []
        for c in sorted(set(chips)) or [0]:
            if track == "pdma":
                out.append((c, "pcie"))
            elif track == "tdma":
                out.append(self.earliest_engine(c))
            else:
                out.append((c, track))
        return tuple(out)

    # -- recording -----------------------------------------------------------------------------------------
    def record(self, track: str, name: str, engines: Iterable[EngineReport], *, reads: Footprint = EMPTY,
               writes: Footprint = EMPTY, lanes: Iterable[Lane] | None = None, cycles: int | None = None,
               traffic: dict[str, int] | None = None, in_kernel: bool = False, note: str = "") -> Operation:
        """Add an operation in program order and return it (its ``end`` is its outputs' ready time).

        Its cycles are the slowest engine's plus every engine's latency (a pipeline), unless given (a Tensor Unit
        command's come from :func:`visa.engines.timing.pass_cost`).  It starts at the latest of: the previous
        operation's start (in-order issue), each lane's free time and the end of every in-flight operation it
        conflicts with — plus ``hw.timing.context_handoff_cycles`` when that operation ran in another context
        (the signal that its result is ready, or its source free); contention may then lengthen it.
        """
        reports = _kept(tuple(engines), self.kept)
        if cycles is None:
            cycles = max((r.cycles for r in reports), default=0) + sum(r.latency for r in reports)
        pure = _of_spans(track, reads, writes) if track in TU_TRACKS else None
        if lanes is not None:
            lane_list = list(lanes)
        elif pure is not None:
            lane_list = list(pure[0])
        else:
            mask = reads.chips() | writes.chips()
            lane_list = list(self.default_lanes(track, [c for c in range(mask.bit_length()) if mask >> c & 1]))
        load, slower = _of_reports(reports, self.hw.dm.banks_per_slice)
        notes: list[str] = [note] if note else []
        notes += slower
        handoff = self.hw.timing.context_handoff_cycles
        issue = self.ops[-1].start if self.ops else 0
        if self.timeline:
            self.active = [a for a in self.active if a.end + handoff > issue]
        else:
            still = []
            for a in self.active:
                if a.end + handoff > issue:
                    still.append(a)
                else:
                    a.compact(self.shared)
            self.active = still
        bank_run = max(load, default=0)
        if track in TU_TRACKS:
            starving = self._starvation(track, name, reports, load, reads, writes)
            if starving:
                for c in sorted({c for c, _ in lane_list}):
                    lane_list += [ln for ln in self.dma_engines(c) if ln not in lane_list]
                notes.append(starving)
                self.warnings.append(starving)
                warnings.warn(starving, BankStarvationWarning, stacklevel=_user_frame()[2] + 1)
        # when each constraint is met, and by which operation
        bounds: list[tuple[int, int | None]] = [(issue, None)]
        for lane in lane_list:
            bounds.append((self.free_at.get(lane, 0), self.owner.get(lane)))
        deps: list[Dependency] = []
        for a in self.active:
            if a.end + (handoff if a.track != track else 0) <= issue:
                continue  # finished (and, from another context, signalled) before this one issues
            kinds = _hazards_of(a, reads, writes)
            if kinds:
                deps.append(Dependency(a.index, kinds))
                bounds.append((a.end + (handoff if a.track != track else 0), a.index))
        start = max(b for b, _ in bounds)
        waits_for = None  # started when issued (with, or right after, the previous operation)
        if start > issue:
            waits_for = next((who for b, who in bounds if b == start and who is not None), None)
        stretch = self._share_channels(reports, start, cycles, notes)
        if track in TU_TRACKS:
            limit = self.hw.dm.bank_starvation_limit
            contention = 0
            for a in self.active:
                if a.track in TU_TRACKS and a.track != track and a.end > start and \
                        max(a.bank_run, bank_run) >= limit and _shares_dm_units(a, reads, writes):
                    overlap = min(a.end, start + cycles + contention) - max(a.start, start)
                    if overlap > 0:
                        contention += overlap
            if contention:
                stretch += contention
                notes.append(f"stretched {contention} cycles sharing DM banks with the other context (L2927–2931)")
        if traffic is None:
            traffic = pure[1] if pure is not None else _traffic(track, reads, writes)
        # (the texts interned: a kernel's repeated passes hold one copy of their name, source line and notes)
        op = Operation(track, _interned(name), start, cycles + stretch, reports, len(self.ops), tuple(lane_list),
                       reads, writes, tuple(deps), waits_for, stretch, _interned(user_location()),
                       dict(traffic), bank_run, tuple([_interned(n) for n in notes]), in_kernel, load)
        self.ops.append(op)
        self.active.append(op)
        for lane in lane_list:
            self.free_at[lane] = op.end
            self.owner[lane] = op.index
        return op

    def _starvation(self, track: str, name: str, reports: tuple[EngineReport, ...], load: tuple[int, ...],
                    reads: Footprint, writes: Footprint) -> str:
        """Why a Tensor Unit command must not run beside DMA (empty if it may): its engines' consecutive accesses
        to one DM bank, added to those of the other context's command in flight on the same slices, reach the
        limit (64) the waiting DMA request can bear (L2897–2941; the count is cumulative over concurrent commands,
        fetch and commit of both contexts, L2913)."""
        if not load:  # (no bank this command accesses: nothing to add the others' runs to)
            return ""
        limit = self.hw.dm.bank_starvation_limit
        issue = self.ops[-1].start if self.ops else 0
        others: list[tuple[str, tuple[int, ...]]] = []
        total = list(load)
        for a in self.active:
            if a.track not in TU_TRACKS or a.track == track or not a.bank_load or a.end <= issue:
                continue
            # a command that already keeps DMA off (it was scheduled as occupying the engines) cannot starve it
            guarded = any(ln[1].startswith("dma") for ln in a.lanes)
            if not guarded and _shares_dm_units(a, reads, writes):
                others.append((f"{a.track} #{a.index}", a.bank_load))
                total = [x + y for x, y in zip(total, a.bank_load, strict=False)] if total else list(a.bank_load)
        if not others and max(load) < limit:  # (alone: the total is its own load, under the limit on every bank)
            return ""
        # a bank this command accesses (the others' runs alone were checked when they were scheduled)
        mine = [b for b in range(len(total)) if b < len(load) and load[b]]
        if not mine or max(total[b] for b in mine) < limit:
            return ""
        bank = max(mine, key=lambda b: total[b])
        parts = [(f"{track} {r.engine}", r.bank_runs or (r.bank_run,)) for r in reports if r.bank_run] + others
        terms = " + ".join(f"{who} {runs[bank]}" for who, runs in parts if bank < len(runs) and runs[bank])
        return (f"{name}: {terms} = {total[bank]} consecutive accesses to DM bank {bank} (limit {limit}, counted "
                "over concurrent commands, L2913); concurrent DMA would starve and trip the 4096-cycle NoC timeout, "
                "so it is scheduled as if it occupied the DMA engines (manual L2841–2842, L2922)")

    def _share_channels(self, reports: tuple[EngineReport, ...], start: int, cycles: int, notes: list[str]) -> int:
        """Reserve the HBM channels a DMA uses (its reports' ``hbm_channels``): each channel serves one DMA's
        transfers at a time, from the end of the DMA's startup on, so DMAs running at once share the channels'
        1.5 TB/s (L2602, L2980) and none is faster than its share; returns the cycles the sharing added."""
        channels: dict[int, float] = {}
        for r in reports:
            for c, busy in r.hbm_channels:
                channels[c] = channels.get(c, 0.0) + busy
        if not channels:
            return 0
        begin = start + max(r.latency for r in reports)
        last = float(start + cycles)
        for c, busy in channels.items():
            done = max(float(begin), self.hbm_free.get(c, 0.0)) + busy
            self.hbm_free[c] = done
            last = max(last, done)
        wait = math.ceil(last - 1e-9) - (start + cycles)
        if wait > 0:
            notes.append(f"waited {wait} cycles for HBM channels other DMAs were using (L2602, L2980)")
        return max(0, wait)

    def fold(self, first: int) -> None:
        """Let go of the operations before ``first`` (none still in flight: the cut moves back to the earliest one
        that is), keeping of them only how many there were (:attr:`folded`) and their latest end: a long run that
        needs no past launch's operations (a model generating token after token, :class:`visa.models.SmolLM2`)
        holds the last launch's record, not every launch's.  The operations kept are renumbered from 0 (an index
        is still a position in :attr:`ops`); a ``waits_for`` or a lane's owner among those let go becomes
        negative (the critical path stops there) and a dependency on one is dropped; :attr:`origin` is the first
        kept operation's start, where :meth:`visa.Context.report` counts the makespan from."""
        cut = min([first, len(self.ops), *(a.index for a in self.active)])
        if cut <= 0:
            return
        self.folded += cut
        self.folded_end = max(self.folded_end, *(op.end for op in self.ops[:cut]))
        del self.ops[:cut]
        for op in self.ops:
            op.index -= cut
            if op.waits_for is not None:
                op.waits_for -= cut
            if op.deps:
                op.deps = tuple(Dependency(d.op - cut, d.kinds) for d in op.deps if d.op >= cut)
        self.owner = {lane: i - cut for lane, i in self.owner.items()}
        self.shared = {}  # (the kept operations hold their own; the next launch's start sharing afresh)

    @property
    def origin(self) -> int:
        """The cycle the record starts at: 0, or after :meth:`fold` the first kept operation's start (issue is in
        order, so the earliest)."""
        return self.ops[0].start if self.folded and self.ops else 0

    @property
    def makespan(self) -> int:
        """Cycles from the first operation's start to the last one's end (the cycle the last one ends; after
        :meth:`fold` counted from cycle 0 still, the operations let go of included)."""
        return max(self.folded_end, max((op.end for op in self.ops), default=0))

    def device_span(self, first: int = 0) -> int:
        """Cycles from the first to the last device operation (``tdma``, ``main``, ``sub``; not the host's PCIe
        DMA) recorded since operation ``first`` — what a kernel launch takes on the device."""
        ops = [op for op in self.ops[first:] if op.track != "pdma"]
        return max((op.end for op in ops), default=0) - min((op.start for op in ops), default=0)

    def critical_path(self) -> list[Operation]:
        """The chain of operations that fixes the makespan: from the last to finish back through the operation
        whose end fixed each one's start (an operation that started when issued, with the one written before
        it, continues the chain through what fixed that one's start)."""
        if not self.ops:
            return []
        op: Operation | None = max(self.ops, key=lambda o: (o.end, -o.index))
        path: list[Operation] = []
        seen: set[int] = set()
        while op is not None and op.index not in seen:
            seen.add(op.index)
            path.append(op)
            cur = op
            # an operation that started when issued started with the one before it: follow what fixed that one
            while cur.waits_for is None and cur.start > 0 and cur.index > 0:
                cur = self.ops[cur.index - 1]
            op = self.ops[cur.waits_for] if cur.waits_for is not None and cur.waits_for >= 0 else None
        path.reverse()
        return path
