"""Which bytes belong to which live tensor: allocation overlap and stale reads (manual L150–155, L1085–1093).

Both contexts share the flat on-chip SRAM, "so the programmer must explicitly assign DM addresses ... to
prevent tensors from overlapping" (L152–154).  The registry keeps, per memory and chip, the byte range of
every live tensor (a tensor is live while Python holds it).  Two rules follow:

* an operation may not write a tensor over the bytes of a tensor it reads (``AllocationError``: two live
  tensors overlap in one operation, e.g. a commit onto the DM tensor being fetched);
* any other write over a live tensor's bytes makes that tensor *stale*; reading it afterwards raises
  ``StaleTensorError`` naming the write.  Memory reuse is fine as long as the old tensor is not read again.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from visa.errors import AllocationError, StaleTensorError

__all__ = ["Region", "Registry", "refuse_overlap"]


@dataclass(eq=False)
class Region:
    """The bytes one tensor occupies: ``[lo, hi)`` in ``memory`` on each of ``chips``, in each of ``units`` (a
    bitmask of ``cluster · slices_per_cluster + slice``, -1 for every unit: HBM) for DM, TRF and VRF (manual
    L1085–1093; each slice has its own address space, L2874, and padding slices are unused, L150–155)."""

    memory: str
    chips: frozenset[int]
    lo: int
    hi: int
    name: str
    rows: frozenset[int] | None = None  # TRF rows, when the memory is the TRF
    owner: weakref.ReferenceType[object] | None = None
    stale_by: str | None = None
    ident: int = field(default=0)
    freed: bool = False  # released by ``free()``: its bytes may hold another tensor now
    writes: int = 0  # how many writes have touched these bytes since the tensor was made (its own included)
    written_by: str = ""  # the last of them
    units: int = -1

    def overlaps(self, other: Region) -> bool:
        """Same memory, a shared chip (slice, TRF row), and intersecting byte ranges."""
        if self.memory != other.memory or not (self.chips & other.chips):
            return False
        if self.units != -1 and other.units != -1 and not (self.units & other.units):
            return False
        if self.rows is not None and other.rows is not None and not (self.rows & other.rows):
            return False
        return self.lo < other.hi and other.lo < self.hi

    def live(self) -> bool:
        """Whether the tensor holding these bytes still exists."""
        return self.owner is not None and self.owner() is not None


def refuse_overlap(result: Region, source: Region, call: str) -> None:
    """An operation may not write its result over the bytes of a tensor it reads (manual L150–155).  Pure (the
    registry calls it for every live input, the mypy plugin for a source whose address the call shows)."""
    if result.overlaps(source):
        raise AllocationError(
            f"the result {result.name} would occupy bytes {result.lo}..{result.hi} of {result.memory.upper()}, "
            f"which overlap {source.name} (bytes {source.lo}..{source.hi}) that this operation reads",
            call=call, level="Element", fix="give the result an address outside the input's bytes (manual L150–155)")


class Registry:
    """Live regions of one device (all chips, all memories): the overlap and staleness rules of manual
    L150–155."""

    def __init__(self) -> None:
        self._regions: list[Region] = []
        #: the same regions per memory, in the same order (dead ones dropped when :meth:`note_write` meets them):
        #: a write looks at its own memory's regions only (another memory's never overlap)
        self._of: dict[str, list[Region]] = {}
        self._next = 1
        #: counts the owners that died (each region's weak reference tells it): no region can have died since the
        #: last prune while the count is what it was then, and the prune is skipped
        self._deaths = _Deaths()
        self._pruned_at = 0
        #: the DM regions' own count of deaths, and of allocations and releases (:meth:`dm_generation`)
        self._dm_deaths = _Deaths()
        self._dm_changes = 0

    def allocate(self, owner: object, memory: str, chips: frozenset[int], lo: int, hi: int, name: str, *,
                 rows: frozenset[int] | None = None, reads: tuple[Region, ...] = (), call: str = "",
                 units: int = -1) -> Region:
        """Register a new tensor's bytes; refuse an overlap with a tensor the same operation reads."""
        dm = memory == "dm"
        region = Region(memory, chips, lo, hi, name, rows, weakref.ref(owner, self._dm_deaths if dm else self._deaths),
                        ident=self._next, units=units)
        self._next += 1
        if dm:
            self._dm_changes += 1
        for src in reads:
            if src.live():
                refuse_overlap(region, src, call)
        self.note_write(region, call=call, writer=name)
        self._prune()
        self._regions.append(region)
        self._of.setdefault(memory, []).append(region)
        return region

    def note_write(self, target: Region, *, call: str, writer: str) -> None:
        """Mark every other live region that a write over ``target``'s bytes clobbers as stale, and count the
        write on every region it touches, ``target`` included (a pass that read one of them before the write
        may not end after it, :func:`visa.stream.collect.input_regions`)."""
        what = f"{call} writing {writer} (bytes {target.lo}..{target.hi} of {target.memory.upper()})"
        target.writes += 1
        target.written_by = what
        memory = target.memory
        regions = self._of.get(memory, ())
        dead = False
        for r in regions:  # (another memory's regions never overlap: not looked at)
            if r is target:
                continue
            if not r.live():
                dead = True
            elif r.overlaps(target):
                r.writes += 1
                r.written_by = what
                if r.stale_by is None:
                    r.stale_by = what
        if dead:
            self._of[memory] = [r for r in regions if r.live()]

    def check_live(self, region: Region, *, call: str) -> None:
        """Refuse any use of a tensor after ``free()``: its bytes went back to the allocator, and another tensor
        may hold them now (issue 23; a read would return that tensor's data, a write would clobber it)."""
        if region.freed:
            raise StaleTensorError(
                f"{region.name} was freed (free()); its bytes may hold another tensor now", call=call,
                level="Element", fix="free() a tensor after its last use, or keep it (dropping the last reference "
                                     "frees it safely)")

    def check_readable(self, region: Region, *, call: str) -> None:
        """Refuse to read a tensor that was freed or that another write has overwritten."""
        self.check_live(region, call=call)
        if region.stale_by is not None:
            raise StaleTensorError(
                f"{region.name} was overwritten by {region.stale_by}; its bytes no longer hold it",
                call=call, level="Element", fix="keep tensors that are still read at non-overlapping addresses")

    def release(self, region: Region) -> None:
        """Forget a region: the tensor was freed explicitly, and every handle of it (aliases share the region)
        is refused from now on (:meth:`check_live`)."""
        region.freed = True
        if region.memory == "dm":
            self._dm_changes += 1
        self._regions = [r for r in self._regions if r is not region]
        if region.memory in self._of:
            self._of[region.memory] = [r for r in self._of[region.memory] if r is not region]

    def _prune(self) -> None:
        deaths = self._deaths.count + self._dm_deaths.count
        if deaths == self._pruned_at:
            return  # (every region here was made by :meth:`allocate` with a live owner, and none has died since)
        self._pruned_at = deaths
        self._regions = [r for r in self._regions if r.live()]

    def dm_generation(self) -> tuple[int, int]:
        """A value that changes whenever the set of live DM regions may have (a DM tensor allocated, released or
        dead): while it is what it was, :meth:`live_regions` of ``"dm"`` holds the same regions (the DM occupancy's
        ``memory.occupancy-replay``, :mod:`visa.memory.fast_occupancy`)."""
        return self._dm_changes, self._dm_deaths.count

    def live_regions(self, memory: str | None = None) -> list[Region]:
        """Live regions, optionally of one memory."""
        self._prune()
        return [r for r in self._regions if memory is None or r.memory == memory]


class _Deaths:
    """The callback of the registry's weak references to its tensors: counts the tensors that died (it holds no
    reference to the registry, which its regions' weak references would otherwise keep in a cycle)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, _ref: object) -> None:
        self.count += 1
