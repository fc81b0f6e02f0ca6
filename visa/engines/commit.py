"""Commit Engine: a flit stream back to DM, through the truncating adapter and the commit sequencer
(manual L2145–2354, and the Fetch and Commit kernel examples L7611–7981).

:func:`plan` derives, from dtypes and mappings only:

* ``commit_in_size`` (L2187–2236): the leading bytes of each 32-byte flit that are written, the smallest of
  8/16/24/32 bytes covering every packet position whose element the Element mapping holds — trailing
  padding (``W # 32`` → 8 bytes) and elements the Element leaves out (``W`` → ``W = 4``) are dropped;
* the **write sequencer** (the mapping algebra's :func:`~visa.mapping.sequencer.derive` of the Element
  against ``Time`` and the truncated packet; L2239–2313) and ``commit_size = gcd(contiguous_sram_access_size,
  commit_in_size)`` among the context's sizes (8/16/24/32 main, 8 sub), with ``commit_in_size / commit_size``
  writes per time step where they differ (L2295–2313);
* the **slice bitmap** (L2314–2319): the slices whose Slice (and Cluster, Chip) position holds data;
* the rules: a 32-byte input packet, every stride a multiple of 8 bytes (L2338), no broadcast or discarded
  Time axis (non-zero strides, L7775), sub-context commits only after fetch (L2337), and **writes never go
  past the tensor's boundary** (L7883–7897) nor put padding over elements the tensor holds.

:func:`execute` writes each slice's DM image (vectorised over clusters and slices); :func:`cycles` counts the
DM writes of one slice: ``Time::SIZE × commit_in_size / commit_size``.

>>> from visa.hw import RNGD
>>> from visa.dtypes import i8
>>> from visa.mapping import AxisSet
>>> ax = AxisSet(M=4, K=2, W=8)
>>> one, cl, sl = ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"]
>>> cfg = plan(RNGD, i8, one, cl, sl, ax.m["K"], ax.m["M, W"], ax.m["K, M, W # 16"])   # manual L2295-2313
>>> str(cfg.sequencer), cfg.commit_in_size, cfg.commit_size, cfg.writes_per_step, cycles(cfg)
('[2 : 64, 4 : 16, 8 : 1] : 8', 32, 8, 4, 8)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines import fast_shared
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text, engine_call
from visa.engines.deferred import DeferredData, PaddedLanes
from visa.engines.fetch import CONTEXTS, stream_validity
from visa.engines.shared import SharedRows
from visa.errors import AddressError, DtypeError, HardwareLimitError, LayoutError, VisaError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping import canon as C
from visa.mapping.fast_validity import validity_of
from visa.mapping.sequencer import Entry, SequencerConfig, derive
from visa.memory.images import DenseImage, store_nest, store_nest_into, store_stream
from visa.memory.known import all_true
from visa.memory.performance import sequence_bank_runs
from visa.memory.units import enabled_units

__all__ = ["CommitConfig", "plan", "check_view", "check_address", "execute", "cycles", "SUB_COMMIT_AFTER",
           "packed_packet", "check_packed_counts", "plan_stage", "plan_valid_count", "valid_count_keep",
           "plan_generate", "generate_cycles"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_call = functools.partial(engine_call, "commit")  # a refusal's call: "commit <stage>" (sub context marked)

#: Engines a sub-context commit may follow: fetch (through the switch and collect that carry it), never the
#: Cast or Transpose Engine (L2337).
SUB_COMMIT_AFTER = frozenset({"fetch", "switch", "collect"})


@dataclass(frozen=True)
class CommitConfig:
    """Everything :func:`plan` derives for one commit (manual L2145–2354).

    ``written`` is the packet truncated to ``commit_in_size`` bytes; ``sequencer`` writes ``(time, written)``
    into the Element (strides in elements, base relative to the tensor's element 0, or to the view's);
    ``slices`` says, per ``(chip, cluster, slice)``, whether the slice bitmap enables it.
    """

    context: str
    dtype: type[dt.Scalar]
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    time: Mapping
    packet: Mapping
    element: Mapping
    written: Mapping
    commit_in_size: int
    sequencer: SequencerConfig
    contiguous_sram_access_size: int
    commit_size: int
    writes_per_step: int
    bitmaps: tuple[int, ...]

    @property
    def elements_written(self) -> int:
        """Packet positions written per time step."""
        return self.written.size

    def bitmap_text(self) -> str:
        """The slice bitmap per cluster, as the manual prints it (bit k = slice k; L2316–2319)."""
        full = (1 << self.slice.size) - 1
        parts = []
        for k, b in enumerate(self.bitmaps):
            if b == full:
                parts.append(f"cluster {k}: all {self.slice.size} slices")
            elif b == 0:
                parts.append(f"cluster {k}: none")
            else:
                parts.append(f"cluster {k}: {bin(b).count('1')} slices, bitmap {b:#x}")
        return "; ".join(parts)

    def describe(self, address: int | None = None) -> str:
        """The configuration in the manual's notation ``[n : s, ...] @ base / commit_size`` (L7674)."""
        entries = ", ".join(str(e) for e in self.sequencer.entries)
        base = self.sequencer.base * self.dtype.size_bits // 8 + (address or 0)
        return (f"commit[{self.context}] {self.dtype!r}: Time {self.time!r} ({self.time.size}), Packet "
                f"{self.packet!r} → Element {self.element!r}; sequencer [{entries}] @ {base} / "
                f"{self.commit_size}; commit_in_size = {self.commit_in_size} B (packet {self.written!r}), "
                f"contiguous_sram_access_size = {self.contiguous_sram_access_size} B, commit_size = "
                f"{self.commit_size} B, {self.writes_per_step} write(s) per time step; slice bitmap: "
                f"{self.bitmap_text()}")

    def __str__(self) -> str:
        return self.describe()


def check_address(hw: HardwareProfile, byte_address: int, element: Mapping, call: str) -> None:
    """A commit writes whole 8-byte units of DM: "the target tensor for commit always corresponds to an 8-byte
    aligned range" (L7699), the banks writing only complete 8-byte units (L2414).  So the address it starts at
    (a new tensor's, or a view's first byte) must be a multiple of 8 bytes (issue 23: an unaligned one was
    accepted)."""
    align = hw.commit.stride_granularity_bytes
    if byte_address % align:
        raise AddressError(
            f"the commit would start at DM byte {byte_address}, not a multiple of {align}: a commit writes whole "
            f"{align}-byte units, so its target starts on one (manual L7699, L2414)", call=call, level="Element",
            mapping=repr(element), axis=axes_text(element),
            fix=f"commit to an address (or a view starting at a byte) that is a multiple of {align}")


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping,
         time: Mapping, packet: Mapping, element: Mapping, *, context: str = "main",
         after: Sequence[str] = ("fetch", "collect"),
         region: tuple[Mapping, int] | None = None) -> CommitConfig:
    """The Commit Engine's configuration writing ``StreamTensor<dtype, chip, cluster, slice_, time, packet>``
    as ``DmTensor<dtype, chip, cluster, slice_, element>`` in ``context``.

    ``after`` names the engines the stream went through (a sub-context commit may follow only fetch, L2337);
    ``region`` is, for ``commit_view``, the whole tensor's Element and the view's element offset in it (the
    boundary the writes must keep, L7883–7897).  Pure: raises the rule's error or returns the configuration.
    """
    return _plan(hw, dtype, chip, cluster, slice_, time, packet, element, context, tuple(after), region)


def check_view(dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping, view_dtype: type[dt.Scalar],
               view_levels: AbcMapping[str, Mapping]) -> None:
    """``commit_view``'s own rules (L2159–2163): the DM view holds the stream's dtype and has its Chip, Cluster
    and Slice mappings (``view_levels``: the view's ``Chip``, ``Cluster``, ``Slice``, ``Element``).  Pure (the
    stream and the mypy plugin call it; :func:`plan` with ``region`` checks the writes)."""
    call = "commit_view"
    if view_dtype is not dtype:
        raise LayoutError(f"the view holds {view_dtype!r} but the stream carries {dtype!r}", call=call,
                          level="Element", mapping=repr(view_levels["Element"]), fix="cast the stream first")
    for level, mine in (("Chip", chip), ("Cluster", cluster), ("Slice", slice_)):
        if view_levels[level] != mine:
            raise LayoutError(f"the view's {level} {view_levels[level]!r} differs from the stream's {mine!r}",
                              call=call, level=level, mapping=repr(mine),
                              axis=axes_text(mine), fix="commit with the stream's layout")


def packed_packet(chip: Mapping, cluster: Mapping, slice_: Mapping, time: Mapping, packet: Mapping,
                  element: Mapping, call: str = "commit") -> Mapping:
    """The Packet a compacted stream (after ``vector_filter``, valid-count packing L2322–2326, L8580–8584) is
    committed with: the kept elements sit at lanes 0, 1, … of each packet.

    An Element over the stream's own axes writes lane j where lane j goes; an Element that names, instead of
    the Packet's axes, one new axis ``K`` (the kept element's position in its packet) reads the packet as
    ``K # Packet::SIZE``.  Pure (the commit and the mypy plugin call it).
    """
    stream_axes = chip.axes | cluster.axes | slice_.axes | time.axes | packet.axes
    new = sorted(element.axes - stream_axes)
    if not new:
        if packet.axes and not (packet.axes & element.axes):
            # the packed axis has one position (top-1 routing, K = 1, L8456–8460): a size-1 axis sets no
            # index, so the Element names none of the Packet's axes and no new one — lane 0 of each packet
            return Mapping.parse(f"1 # {packet.size}", element.axis_set)
        return packet
    if len(new) == 1 and not (packet.axes & element.axes):
        k = new[0]
        size = element.axis_set.size(k)
        if size > packet.size:
            raise LayoutError(f"the packed axis {k} has {size} positions, but a packet has {packet.size} lanes",
                              call=call, level="Element", mapping=repr(element), axis=k, line=2324,
                              fix=f"declare {k} with at most {packet.size} positions (the kept elements per packet)")
        text = k if size == packet.size else f"{k} # {packet.size}"
        return Mapping.parse(text, element.axis_set)
    raise LayoutError(f"the Element {element!r} of a compacted stream names {', '.join(new)} besides the stream's "
                      f"axes; a packed Element replaces the Packet's axes ({axes_text(packet)}) by one axis, the "
                      "kept element's position in its packet", call=call, level="Element", mapping=repr(element),
                      axis=", ".join(new), line=2324,
                      fix="commit with the stream's own axes, or with Time's axes and one new axis K (e.g. T, K)")


def plan_stage(hw: HardwareProfile, context: str, stage: str, call: str) -> None:
    """Refuse a Commit Engine adapter stage the context lacks (L2329–2336): valid-count packing and generate mode
    are the sub context's (``hw.commit.sub_adapter_stages``).  Pure (the plugin calls it too)."""
    c = hw.commit
    have = c.main_adapter_stages if context == "main" else c.sub_adapter_stages
    if stage not in have:
        other = "sub" if context == "main" else "main"
        names = {"valid_count_packing": "valid-count packing", "generate": "generate mode (ITOS)"}
        raise HardwareLimitError(f"the {context} context's Commit Engine has no {names.get(stage, stage)} stage "
                                 f"(it has {', '.join(have)}; manual L2322–2336)", call=_call(stage, context),
                                 level="Packet", fix=f"run it in ctx.{other}")


def plan_valid_count(hw: HardwareProfile, context: str, packet: Mapping, count: int | None) -> None:
    """Valid-count packing (L2322–2324): the sub context commits the first ``count`` lanes of each packet and
    discards the rest.  A static ``count`` must lie in 0..lanes (None: a runtime count, checked when it is read,
    :func:`valid_count_keep`).  Pure."""
    plan_stage(hw, context, "valid_count_packing", "commit")
    if count is not None and not 0 <= count <= packet.size:
        raise LayoutError(f"a valid count of {count} lanes, but the packet {packet!r} has {packet.size}",
                          call=_call("valid_count_packing", context), level="Packet", mapping=repr(packet),
                          axis=axes_text(packet), line=2324, fix=f"count 0..{packet.size} leading lanes")


def valid_count_keep(counts: npt.NDArray[np.int64], packet: Mapping, context: str) -> BoolArray:
    """The lanes valid-count packing does not write (``lane >= count``), over ``(Chip, Cluster, Slice, Time,
    Packet)`` from the counts over ``(Chip, Cluster, Slice, Time)`` (a count read at run time is refused outside
    0..lanes, naming where, L2324)."""
    bad = (counts < 0) | (counts > packet.size)
    if bad.any():
        where = tuple(int(k[0]) for k in np.nonzero(bad))
        raise LayoutError(f"the valid count at chip {where[0]}, cluster {where[1]}, slice {where[2]} is "
                          f"{int(counts[where])}; the packet {packet!r} has {packet.size} lanes",
                          call=_call("valid_count_packing", context), level="Packet", mapping=repr(packet),
                          axis=axes_text(packet), line=2324, fix=f"write a count 0..{packet.size}")
    lanes = np.arange(packet.size, dtype=np.int64).reshape(1, 1, 1, 1, -1)
    keep: BoolArray = lanes >= counts[..., None]
    return keep


def plan_generate(hw: HardwareProfile, context: str, dtype: type[dt.Scalar], element: Mapping, address: int) -> None:
    """Generate mode (L2325–2326): the sub context writes one ``generate_value_bits``-bit value (an ITOS command,
    bypassing the pipeline) at the address of a one-element DM view.  Pure."""
    plan_stage(hw, context, "generate", "generate")
    bits = hw.commit.generate_value_bits
    call = _call("generate", context)
    if dtype.size_bits != bits:
        raise DtypeError(f"generate mode writes a single {bits}-bit value; the view holds {dtype!r}", call=call,
                         level="Element", mapping=repr(element), line=2326,
                         fix="generate into a view of an i32, u32 or f32 tensor")
    held = int(np.count_nonzero(element.validity()))
    if held != 1:
        raise LayoutError(f"generate mode writes one value; the view {element!r} holds {held} elements", call=call,
                          level="Element", mapping=repr(element), axis=axes_text(element), line=2326,
                          fix="tile the tensor to the one element (view.tile(m[axis], 1, …, index))")
    if address % (bits // 8):
        raise AddressError(f"a {bits}-bit value at byte {address}, not a multiple of {bits // 8}", call=call,
                           level="Element", mapping=repr(element), line=1071, fix=f"align to {bits // 8} bytes")


def generate_cycles(hw: HardwareProfile) -> int:
    """One ITOS write: the value's bytes at the commit's flit rate (``ceil(bits / 8 / in_packet_bytes)``, one
    cycle; the manual gives no figure, L2326)."""
    return -(-hw.commit.generate_value_bits // 8 // hw.commit.in_packet_bytes)


def check_packed_counts(counts: npt.NDArray[np.int64], packet: Mapping, call: str = "commit") -> None:
    """A packet keeping more elements than the packed Packet ``K # n`` holds is refused at run time, naming its
    position and count (the valid count is data, L2324)."""
    room = int(np.asarray(packet.evaluate().valid, dtype=bool).sum())
    over = counts > room
    if over.any():
        where = tuple(int(k[0]) for k in np.nonzero(over))
        raise LayoutError(f"the packet at chip {where[0]}, cluster {where[1]}, slice {where[2]}, time {where[3]} keeps "
                          f"{int(counts[where])} elements, but the packed Packet {packet!r} holds {room}", call=call,
                          level="Packet", mapping=repr(packet), axis=axes_text(packet), line=2324,
                          fix="filter fewer elements per packet, or give the packed axis more positions")


@cached(512)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping,
          time: Mapping, packet: Mapping, element: Mapping, context: str, after: tuple[str, ...],
          region: tuple[Mapping, int] | None) -> CommitConfig:
    c = hw.commit
    if context not in CONTEXTS:
        raise VisaError(f"unknown Tensor Unit context {context!r}; expected one of {CONTEXTS}", call="commit")
    if dtype.image_bits != dtype.size_bits:
        raise LayoutError(f"{dtype!r} lives only in the stream and the TRF (manual L2525, L6778); it cannot be "
                          "committed to DM", call=_call("adapter", context), level="Element",
                          mapping=repr(element), fix="cast it (e.g. to i32 or i8) before the commit")
    # -- the input flit (L2192, L2328) -------------------------------------------------------------------
    in_bits = packet.size * dtype.size_bits
    if in_bits != 8 * c.in_packet_bytes:
        raise HardwareLimitError(
            f"the Commit Engine takes {c.in_packet_bytes}-byte flits; the packet {packet!r} is {in_bits / 8:g} "
            "bytes (manual L2192, L2328)", call=_call("adapter", context), level="Packet",
            mapping=repr(packet), axis=axes_text(packet),
            fix="collect the stream into 32-byte flits first (.collect(Time2, Packet2))")
    # -- the sub context (L2332-2337) ---------------------------------------------------------------------
    if context == "sub" and c.sub_follows_fetch_only:
        bad = [e for e in after if e not in SUB_COMMIT_AFTER]
        if bad:
            raise HardwareLimitError(
                f"a sub-context commit can only follow fetch; this stream went through {', '.join(bad)} "
                "(manual L2337)", call=_call("adapter", context), level="Packet", mapping=repr(packet),
                fix="commit in ctx.main, or commit the fetched stream before casting/transposing")
    # -- truncation: commit_in_size (L2187-2236) -----------------------------------------------------------
    valid = stream_validity(time, packet)
    ev = pair_of(time, packet).evaluate()
    coords = {a: ev.coord(a) for a in element.axes if a in ev.coords}
    _, held = element.locate(coords, (time.size * packet.size,))
    needed = (valid & np.asarray(held).reshape(valid.shape)).any(axis=0)
    if not needed.any():
        raise LayoutError(f"the Element {element!r} holds none of the elements the stream carries",
                          call=_call("adapter", context), level="Element", mapping=repr(element),
                          axis=axes_text(element), fix="commit with an Element over the stream's axes")
    need_bits = (int(np.flatnonzero(needed)[-1]) + 1) * dtype.size_bits
    bitmaps = _bitmaps(chip, cluster, slice_)
    # The compiler derives commit_in_size from the Element (L2236): every size that covers the positions the
    # Element holds and writes legally is a candidate; the fewest writes per step win, then the largest
    # (a full flit where the Element has room for it, L7748-7752).  A refusal is kept without its traceback: a
    # traceback holds this frame and every caller's, the user's kernel and its tensors among them, in a cycle only
    # the garbage collector breaks, so the DM counter would hold freed tensors until it runs.
    best, first_error = _choose([ci for ci in c.commit_in_sizes if need_bits <= 8 * ci <= in_bits], functools.partial(
        _configure, hw, dtype, chip, cluster, slice_, time, packet, element, context, region, bitmaps=bitmaps))
    if best is None:
        assert first_error is not None
        raise first_error
    return best


def _choose(sizes: Sequence[int], configure: Callable[[int], CommitConfig]
           ) -> tuple[CommitConfig | None, VisaError | None]:
    """Of the legal configurations ``configure(commit_in_size)`` over ``sizes``, the one with the fewest writes per
    step, of equals the largest ``commit_in_size`` (L2236, L7748–7752), and the smallest size's error (None when
    one is legal; without its traceback, see :func:`_plan`).

    The sizes are tried from the largest: a smaller one replaces the best only with strictly fewer writes (the
    choice that trying them from the smallest and keeping the later of equals makes), and one write per step (the
    fewest there are: ``commit_size`` never exceeds ``commit_in_size``) ends the search, since no smaller size can
    win then: a first launch configures one size where it configured all four.
    """
    best: CommitConfig | None = None
    error: VisaError | None = None
    for commit_in in sorted(sizes, reverse=True):
        try:
            cfg = configure(commit_in)
        except VisaError as err:
            error = err.with_traceback(None)  # (the last one tried: the smallest size refused)
            continue
        if best is None or cfg.writes_per_step < best.writes_per_step:
            best = cfg
        if best.writes_per_step <= 1:
            return best, None
    return best, None if best is not None else error


def _configure(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, slice_: Mapping,
               time: Mapping, packet: Mapping, element: Mapping, context: str, region: tuple[Mapping, int] | None,
               commit_in: int, *, bitmaps: tuple[int, ...]) -> CommitConfig:
    """The commit with a given ``commit_in_size``, or the error that makes it illegal."""
    c = hw.commit
    n = 8 * commit_in // dtype.size_bits
    written = packet if n >= packet.size else packet.resize(n)
    # -- the write sequencer (L2239-2313) -----------------------------------------------------------------
    seq = derive(element, time, written, limits=hw.sequencer, call=_call("sequencer", context))
    seq = _padding_strides(seq, time, written, element)
    for e in seq.entries:
        if e.stride == 0:
            what = "Packet" if e.packet else "Time"
            raise LayoutError(
                f"the write sequencer would need a stride-0 entry ({e}): the stream's {what} has an axis the "
                f"Element {element!r} lacks, and a commit can neither broadcast nor discard (manual L7775)",
                call=_call("sequencer", context), level=what,
                mapping=repr(time if what == "Time" else written),
                axis=", ".join(sorted((time.axes | written.axes) - element.axes)) or axes_text(time),
                fix="put every stream axis in the Element")
    contiguous_bits = seq.contiguous_elements() * dtype.size_bits
    sizes = c.main_commit_sizes if context == "main" else c.sub_commit_sizes
    g = math.gcd(contiguous_bits, 8 * commit_in)
    fitting = [s for s in sizes if g % (8 * s) == 0]
    if not fitting:
        raise HardwareLimitError(
            f"commit_size = gcd(contiguous_sram_access_size = {contiguous_bits / 8:g} B, commit_in_size = "
            f"{commit_in} B) = {g / 8:g} B is not one of the {context} context's {list(sizes)} bytes "
            "(manual L2243–2248, L2330)", call=_call("sequencer", context), level="Element",
            mapping=repr(element), axis=axes_text(element),
            fix="pad the Element's innermost axis so that 8-byte runs are contiguous (e.g. `W # 8`)")
    commit_size = max(fitting)
    _check_addresses(hw, dtype, seq, time, written, element, commit_size, context, region)
    return CommitConfig(context, dtype, chip, cluster, slice_, time, packet, element, written, commit_in, seq,
                        contiguous_bits // 8 if contiguous_bits % 8 == 0 else 0, commit_size,
                        commit_in // commit_size, bitmaps)


def _padding_strides(seq: SequencerConfig, time: Mapping, written: Mapping, element: Mapping) -> SequencerConfig:
    """Give a non-zero stride to entries that carry only padding past their first index.

    The algebra reads such a digit (``E # 16`` with ``E = 1``) with stride 0, which is harmless for a read; a
    write needs a non-zero stride (L7775) and must put that padding into the Element's own padding.  The
    Element's pure-padding digits are the candidates, tried from the innermost: a digit no entry steps through
    yet, else one with room left after the loops already in it (:func:`_pad_room`); the address checks decide.
    """
    if all(e.stride != 0 for e in seq.entries):
        return seq
    sizes = [e.size for e in seq.entries]
    total = math.prod(sizes)
    valid = stream_validity(time, written).reshape(-1)
    if valid.size != total:
        return seq
    pos = np.arange(total, dtype=np.int64)
    weights, w = [], 1
    for d in reversed(element.canon):
        weights.append((w, d))
        w *= d.size
    pads = [(wt, d.size) for wt, d in weights if isinstance(d, C.Dim) and d.atom is None]
    entries = list(seq.entries)
    inner = 1
    for k in range(len(entries) - 1, -1, -1):
        e = entries[k]
        if e.stride == 0 and e.size > 1:
            idx = (pos // inner) % e.size
            if not (valid & (idx >= 1)).any():
                free = [wt for wt, _ in pads if all(x.stride != wt for x in entries)]
                shared = [c for c in (_pad_room(wt, size, e.size, entries) for wt, size in pads) if c]
                if free or shared:
                    entries[k] = Entry(e.size, free[0] if free else shared[0], e.packet)
        inner *= e.size
    return SequencerConfig(tuple(entries), seq.packet_size, seq.base, seq.raw)


def _pad_room(weight: int, size: int, n: int, entries: Sequence[Entry]) -> int:
    """The stride at which ``n`` more positions fit in the Element's padding digit ``(weight, size)`` after the
    entries already stepping through it (strides ``weight``, ``weight · n1``, ...: one digit split into loops,
    innermost first), or 0 if they do not fit.  Merged padding (``E # 8, R # 8`` of one-element axes is one
    64-position digit) serves several padding-only loops this way."""
    used = 1
    while any(x.stride == weight * used and x.size > 1 for x in entries):
        used *= next(x.size for x in entries if x.stride == weight * used and x.size > 1)
    return weight * used if used > 1 and used * n <= size else 0


def _bitmaps(chip: Mapping, cluster: Mapping, slice_: Mapping) -> tuple[int, ...]:
    """One slice bitmap per cluster: bit k set when slice k holds data (L2314–2319)."""
    cv = validity_of(cluster) & bool(validity_of(chip).any())
    sv = validity_of(slice_)
    word = sum(1 << k for k in np.flatnonzero(sv).tolist())
    return tuple(word if ok else 0 for ok in cv.tolist())


def _item_step(time: Mapping, written: Mapping, addr: IntArray) -> list[tuple[Mapping, str, int]]:
    """``(item, level, address step)`` of every stream item of size > 1 (for naming the axis at fault)."""
    out = []
    items = [(it, "Time") for it in time.items()] + [(it, "Packet") for it in written.items()]
    w = 1
    weights = []
    for it, _ in reversed(items):
        weights.append(w)
        w *= it.size
    weights.reverse()
    for (it, level), wt in zip(items, weights, strict=True):
        if it.size > 1 and wt < addr.size:
            out.append((it, level, int(addr[wt] - addr[0])))
    return out


def _check_addresses(hw: HardwareProfile, dtype: type[dt.Scalar], seq: SequencerConfig, time: Mapping,
                     written: Mapping, element: Mapping, commit_size: int, context: str,
                     region: tuple[Mapping, int] | None) -> None:
    """The address rules of one configuration: 8-byte strides, the tensor boundary, no padding over data,
    every held element written."""
    call = _call("sequencer", context)
    addr = seq.addresses().astype(np.int64)
    bits = dtype.size_bits
    gran = 8 * hw.commit.stride_granularity_bytes
    unit = 8 * commit_size // bits
    starts = addr[::unit]
    if np.any(((starts - starts[0]) * bits) % gran):
        k = int(np.argmax(((starts - starts[0]) * bits) % gran != 0))
        steps = [s for s in _item_step(time, written, addr)
                 if (s[2] * bits) % gran and abs(s[2]) * bits >= 8 * commit_size]
        it, level, step = steps[0] if steps else (time, "Time", int(starts[k] - starts[0]))
        raise HardwareLimitError(
            f"every commit sequencer stride must be a multiple of {hw.commit.stride_granularity_bytes} bytes "
            f"(manual L2338); {it!r} steps {step * bits / 8:g} bytes in the Element {element!r}",
            call=call, level=level, mapping=repr(it), axis=axes_text(it),
            fix="pad the Element's inner axes to a multiple of 8 bytes (e.g. `W # 8`)")
    lo, hi = 0, element.size
    if region is not None:
        lo, hi = -region[1], region[0].size - region[1]
    if addr.min() < lo or addr.max() >= hi:
        far = int(addr.max()) if addr.max() >= hi else int(addr.min())
        pos = int(np.argmax(addr == far))
        t = pos // written.size
        raise AddressError(
            f"the write of time step {t} reaches element {far} of a tensor of {hi - lo} elements: writes never "
            f"go past the tensor's boundary (manual L7883–7897); commit_in_size writes "
            f"{written.size * bits / 8:g} bytes per step", call=call, level="Element", mapping=repr(element),
            axis=axes_text(element),
            fix="pad the Element so that whole writes fit (e.g. pad its innermost axis to 8, 16, 24 or 32 bytes)")
    svalid = stream_validity(time, written).reshape(-1)
    evalid = element.validity()
    if region is not None:
        base_el, off = region
        bvalid = base_el.validity()
        rel = np.arange(lo, hi, dtype=np.int64)
        forbidden = np.zeros(hi - lo, dtype=bool)  # base data that the view does not own
        inview = (rel >= 0) & (rel < element.size)
        forbidden[inview] = bvalid[rel[inview] + off] & ~evalid[rel[inview]]
        forbidden[~inview] = bvalid[rel[~inview] + off]
        hit = forbidden[addr - lo]
        if hit.any():
            raise AddressError(
                f"the commit would write element {int(addr[np.argmax(hit)]) + off} of the whole tensor, which "
                "the view does not own (writes never go past the tensor's boundary, manual L7883–7897)",
                call=call, level="Element", mapping=repr(element), axis=axes_text(element),
                fix="commit a view whose padding does not cover other elements of the tensor")
    inside = (addr >= 0) & (addr < element.size)
    clobber = inside & ~svalid
    clobber[inside] &= evalid[addr[inside]]
    if clobber.any():
        k = int(np.argmax(clobber))
        held = element.map(int(addr[k]))
        raise LayoutError(
            f"time step {k // written.size} writes padding over element "
            f"{held.text() if held is not None else addr[k]} that the Element holds", call=call, level="Packet",
            mapping=repr(written), axis=axes_text(element),
            fix="pad the Element where the stream carries padding (e.g. `A # 96`), or truncate the packet")
    covered = np.zeros(element.size, dtype=bool)
    covered[addr[inside & svalid]] = True
    missing = evalid & ~covered
    if missing.any():
        k = int(np.argmax(missing))
        idx = element.map(k)
        names = sorted(idx) if idx is not None else []
        lacking = sorted(element.axes - (time.axes | written.axes)) or names
        raise LayoutError(
            f"the Element {element!r} holds {idx.text() if idx is not None else k} but the stream never delivers it"
            " (insufficient input for the write)", call=call, level="Element", mapping=repr(element),
            axis=", ".join(lacking) or None, fix="commit with an Element over the stream's axes only")


def _last_writes(addr: IntArray) -> IntArray:
    """Indices of the writes that land last on each address (the order the sequencer writes them)."""
    rev = addr[::-1]
    _, first = np.unique(rev, return_index=True)
    out: IntArray = np.sort(addr.size - 1 - first)
    return out


@cached(32)
def _static(cfg: CommitConfig) -> tuple[IntArray, IntArray, BoolArray]:
    addr = cfg.sequencer.addresses().astype(np.int64)
    keep = _last_writes(addr)
    n = cfg.written.size
    t = keep // n
    p = keep % n
    pos = (t * cfg.packet.size + p).astype(np.int64)  # position in the (Time, Packet) stream
    enabled = np.zeros((cfg.chip.size, cfg.cluster.size, cfg.slice.size), dtype=bool)
    for k, word in enumerate(cfg.bitmaps):
        for s in range(cfg.slice.size):
            enabled[:, k, s] = bool((word >> s) & 1)
    enabled &= validity_of(cfg.chip)[:, None, None]
    for a in (addr, pos, enabled):
        a.flags.writeable = False
    return addr[keep], pos, enabled


FUSED = fastpaths.register("commit.fused", "a stream still one ufunc is computed straight into the DM words "
                           "(one pass) instead of into an array that is then written")
LANES = fastpaths.register("commit.cast-lanes", "the commit of a cast stream writes its converted lanes without "
                           "building the flit padding")


def execute(cfg: CommitConfig, data: StreamData, images: Sequence[DenseImage], bit_base: int,
            keep: BoolArray | None = None) -> None:
    """Write the stream into each chip's DM image at element 0 = ``bit_base`` (bits within a slice): the write
    sequencer (L2239–2313) in every slice the bitmap enables (L2314–2319).

    Each enabled slice receives, per time step, the first ``commit_in_size`` bytes of its flit at the
    sequencer's addresses; a poison element leaves its bytes unwritten (a later read reports it).  ``keep``
    (the stream's shape) marks positions not written at all: their elements keep the bytes they had (the
    lanes valid-count packing drops, L2324).
    """
    addr, pos, enabled = _static(cfg)
    if keep is not None and keep.any():
        _execute_keeping(cfg, data, images, bit_base, keep, addr, pos, enabled)
        return
    if fast_shared.COMMIT.on and isinstance(data, SharedRows) and fast_shared.commit(cfg, data, images, bit_base, pos,
                                                                                    enabled):
        return
    if fast_shared.GATHER.on and isinstance(data, SharedRows) and fast_shared.commit_gather(cfg, data, images, bit_base,
                                                                                            pos, enabled):
        return
    fused = FUSED.on and isinstance(data, DeferredData) and data.pending
    if fused and isinstance(data, DeferredData) and _execute_deferred(cfg, data, images, bit_base, pos, enabled):
        return
    bits = bit_base + addr * cfg.dtype.image_bits
    seq, n = cfg.sequencer, cfg.written.size
    loops = tuple((e.size, e.stride) for e in seq.entries)
    for c, img in enumerate(images):
        on = enabled[c]
        if not on.any():
            continue
        target = enabled_units(img, on)
        if pos.size == seq.stream_size:  # every write lands on its own address: the loops run as they are
            sel = slice(None) if on.all() else on.reshape(-1)
            # (unit, Time, Packet) views: a known-mask broadcast along the stream stays one (no copy)
            values = data.lanes[c] if LANES.on and isinstance(data, PaddedLanes) and n <= data.lanes.shape[-1] \
                else data.values[c]
            per_v = values.reshape(on.size, cfg.time.size, -1)[sel][..., :n]
            per_k = data.known[c].reshape(on.size, cfg.time.size, cfg.packet.size)[sel][..., :n]
            if store_nest(cfg.dtype, target, bit_base + seq.base * cfg.dtype.image_bits, loops, per_v, per_k):
                continue
        flat_v = data.values[c].reshape(on.size, -1)
        flat_k = data.known[c].reshape(on.size, -1)
        if not on.all():
            flat_v, flat_k = flat_v[on.reshape(-1)], flat_k[on.reshape(-1)]
        if pos.size == flat_v.shape[1] and _is_identity(pos):
            vals, known = flat_v, flat_k  # every position written once, in stream order
        else:
            vals, known = flat_v[:, pos], flat_k[:, pos]
        held = stream_validity(cfg.time, cfg.packet).reshape(-1)[pos]  # stream padding holds no element
        store_stream(cfg.dtype, target, bits, vals, known, held)


def _execute_deferred(cfg: CommitConfig, data: DeferredData, images: Sequence[DenseImage], bit_base: int,
                      pos: IntArray, enabled: BoolArray) -> bool:
    """:func:`execute` of a stream whose values are still one ufunc (:mod:`visa.engines.deferred`), computed straight
    into the DM words (one pass instead of a pass into a new array and a copy of it): when every slice is enabled,
    every element known, and the write sequencer writes every lane of every flit once in stream order, through
    one strided view of each chip's image (:func:`~visa.memory.images.store_nest_into`).  False, nothing written,
    when the case is not that one (then :func:`execute` computes the values and writes them)."""
    seq = cfg.sequencer
    if (pos.size != seq.stream_size or cfg.written.size != cfg.packet.size or not bool(enabled.all())
            or not all_true(data.known)):
        return False
    loops = tuple((e.size, e.stride) for e in seq.entries)
    base = bit_base + seq.base * cfg.dtype.image_bits
    for c, img in enumerate(images):
        target = enabled_units(img, enabled[c])
        if not store_nest_into(cfg.dtype, target, base, loops, functools.partial(data.into, c)):
            return False  # (chips written before hold the values the general path writes again)
    return True


def _execute_keeping(cfg: CommitConfig, data: StreamData, images: Sequence[DenseImage], bit_base: int,
                     keep: BoolArray, addr: IntArray, pos: IntArray, enabled: BoolArray) -> None:
    """:func:`execute` where ``keep`` marks positions whose elements keep their bytes: each is read back first
    and written again unchanged (known or unwritten, as it was)."""
    from visa.memory.images import load

    bits = bit_base + addr * cfg.dtype.image_bits
    held = stream_validity(cfg.time, cfg.packet).reshape(-1)[pos]
    for c, img in enumerate(images):
        on = enabled[c]
        if not on.any():
            continue
        target = enabled_units(img, on)
        sel = on.reshape(-1)
        vals = data.values[c].reshape(on.size, -1)[sel][:, pos]
        known = data.known[c].reshape(on.size, -1)[sel][:, pos]
        kept = keep[c].reshape(on.size, -1)[sel][:, pos]
        old_v, old_k = load(cfg.dtype, target, bits)
        old_v = np.asarray(old_v).reshape(vals.shape)
        old_k = np.asarray(old_k).reshape(vals.shape)
        store_stream(cfg.dtype, target, bits, np.where(kept, old_v, vals), np.where(kept, old_k, known), held)


def _is_identity(pos: IntArray) -> bool:
    return bool(pos[0] == 0 and pos[-1] == pos.size - 1 and np.all(np.diff(pos) == 1))


def bank_runs(hw: HardwareProfile, cfg: CommitConfig, address: int, sample: int = 1 << 14) -> tuple[int, ...]:
    """Per DM bank, the longest run of consecutive commit writes whose first byte falls in it (bits 3–6, L2878),
    over the first ``sample`` elements: a commit counts toward the bank-starvation rule as a fetch does
    (L2897–2941, L2913; :func:`visa.memory.performance.dm_bank_runs`).  Each write is ``commit_size`` bytes at
    byte ``address`` plus the sequencer's offset."""
    seq = cfg.sequencer
    per = max(1, (cfg.commit_size * 8) // cfg.dtype.size_bits)
    return _sequence_runs(hw, tuple(e.size for e in seq.entries), tuple(e.stride for e in seq.entries),
                 8 * address + seq.base * cfg.dtype.size_bits, cfg.dtype.size_bits, per, sample)


_sequence_runs = cached(1024)(sequence_bank_runs)


def cycles(cfg: CommitConfig) -> int:
    """DM writes per slice: ``Time::SIZE × commit_in_size / commit_size`` (L2243–2248; 15 versus 3 cycles in
    the kernel examples L7695, L7763)."""
    return cfg.time.size * cfg.writes_per_step
