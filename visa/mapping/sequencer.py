"""Sequencer configurations: moving between a buffer mapping and a stream (manual "Sequencer", L1219–1688).

Given a buffer mapping ``Buf`` and a stream ``(Time, Packet)``, :func:`derive` computes the nested-loop
configuration ``[size : stride, ...] : packet`` that visits, in stream order, the buffer position holding
each stream element.  It processes the items of ``Time`` then ``Packet`` term by term (L1454–1566): an item
whose axes the buffer lacks gets stride 0 (broadcast, L1557); an item is split where the buffer splits its
axis into non-contiguous parts (the "factorizable" rule, L1681); a padded item reads on past the data
(L1841).  A stream that needs indices the buffer lacks is *insufficient input* (L1639–1659); one whose
factors cannot line up with the buffer's is *incompatible shapes* (L1660–1683).  When there are more than
eight entries, every contiguous adjacent pair is merged (L1567–1627); the limits of L1628–1637 are then
checked.  One function serves fetch, commit and DMA: a DMA derives its read and write sides together so
that they share loop sizes (L2542–2594).

>>> from visa.mapping.axes import AxisSet
>>> ax = AxisSet(N=4, C=3, H=8, W=8)
>>> str(derive(ax.m["N, C, H, W"], ax.m["W, H, C, N"], ax.m["1"]))          # manual L1378-1400
'[8 : 1, 8 : 8, 3 : 64, 4 : 192] : 1'
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from visa.errors import HardwareLimitError, IncompatibleShapesError, InsufficientInputError, LayoutError, VisaError
from visa.hw import RNGD
from visa.mapping import canon as C
from visa.mapping import fast_atoms, fast_first
from visa.mapping.core import Mapping, pair_of
from visa.mapping.evaluate import (
    IntArray,
    RelationError,
    _axis_sizes,
    digit_weights,
    forward,
    has_lin,
    inverse,
    lin_keys,
)

__all__ = [
    "Entry", "SequencerConfig", "SequencerLimits", "DEFAULT_LIMITS", "derive", "derive_many",
    "merge_entries", "contiguous_elements", "largest_divisor", "fetch_size",
]


class SequencerLimits(Protocol):
    """The sequencer's hard limits (manual L1628–1637): the hardware profile's ``hw.sequencer``."""

    @property
    def max_entries(self) -> int:
        """Entries a configuration may have (8, L1630)."""
        ...

    @property
    def max_entry_size(self) -> int:
        """Iterations one entry may make (65 536, L1631–1632)."""
        ...


DEFAULT_LIMITS: SequencerLimits = RNGD.sequencer


@dataclass(frozen=True, slots=True)
class Entry:
    """One loop level: ``size`` iterations, ``stride`` elements apart (manual ``struct Entry``, L1352–1355)."""

    size: int
    stride: int
    packet: bool = field(default=False, compare=False)  # came from a Packet item

    def __str__(self) -> str:
        return f"{self.size} : {self.stride}"


@dataclass(frozen=True, slots=True)
class SequencerConfig:
    """A sequencer configuration (manual ``struct Config``, L1342–1351).

    ``entries`` run outermost first; ``stride`` and ``base`` count elements of the buffer's dtype.
    ``packet_size`` is the number of elements the innermost entry delivers contiguously when that entry
    belongs to the Packet (the manual's "elements per hardware fetch", L1351), else 1.  ``raw`` keeps the
    entries before merging (L1581–1627).
    """

    entries: tuple[Entry, ...]
    packet_size: int
    base: int = 0
    raw: tuple[Entry, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        body = ", ".join(str(e) for e in self.entries)
        text = f"[{body}] : {self.packet_size}"
        return text + (f" @ {self.base}" if self.base else "")

    @property
    def stream_size(self) -> int:
        """Number of elements the configuration visits (Time.SIZE × Packet.SIZE)."""
        return math.prod(e.size for e in self.entries)

    def addresses(self) -> IntArray:
        """Element offset of every visited element, in stream order (nested loops, manual L1380–1419)."""
        out = np.full((), self.base, dtype=np.int64)
        nd = len(self.entries)
        for k, e in enumerate(self.entries):
            shape = [1] * nd
            shape[k] = e.size
            out = out + (np.arange(e.size, dtype=np.int64) * e.stride).reshape(shape)
        return np.broadcast_to(out, tuple(e.size for e in self.entries)).reshape(-1)

    def contiguous_elements(self) -> int:
        """``contiguous_sram_access_size`` in elements (manual L1760–1806)."""
        return contiguous_elements(self.entries)


def contiguous_elements(entries: Sequence[Entry]) -> int:
    """Multiply entry sizes outward from the innermost (stride 0 or 1) while ``s_outer == n_inner·s_inner``.

    Manual L1760–1806: ``[4:96, 3:32, 4:8, 8:1]`` gives 384; ``[3:32, 4:96, 4:8, 8:1]`` gives 32.
    """
    if not entries or entries[-1].stride not in (0, 1):
        return 1
    size = entries[-1].size
    for outer, inner in zip(reversed(entries[:-1]), reversed(entries[1:]), strict=True):
        if outer.stride != inner.size * inner.stride:
            break
        size *= outer.size
    return size


def largest_divisor(value: int, allowed: Sequence[int]) -> int | None:
    """The largest allowed size that divides ``value`` (``None`` if none does): how fetch and commit sizes are
    picked (manual L1760–1762, L2193)."""
    best = None
    for a in allowed:
        if a > 0 and value % a == 0 and (best is None or a > best):
            best = a
    return best


def fetch_size(packet_bytes: int, contiguous_bytes: int, allowed: Sequence[int]) -> int | None:
    """Largest allowed size dividing ``gcd(packet_size, contiguous_sram_access_size)`` (manual L1760–1762)."""
    return largest_divisor(math.gcd(packet_bytes, contiguous_bytes), allowed)


def merge_entries(entries: Sequence[Entry], keep: Sequence[Sequence[Entry]] = ()) -> list[Entry]:
    """Merge every adjacent pair ``(n1 : s1), (n2 : s2)`` with ``s1 == n2·s2`` into ``(n1·n2 : s2)`` (L1567).

    ``keep`` lists the parallel entry lists of the other buffers of a fused (DMA) sequencer: a pair merges
    only where it is contiguous in every one of them.
    """
    lists = [list(entries), *[list(k) for k in keep]]
    k = len(lists[0]) - 1
    while k > 0:
        if all(lst[k - 1].stride == lst[k].size * lst[k].stride for lst in lists):
            for idx, lst in enumerate(lists):
                outer, inner = lst[k - 1], lst[k]
                lst[k - 1: k + 1] = [Entry(outer.size * inner.size, inner.stride, inner.packet)]
                lists[idx] = lst
        k -= 1
    return lists[0]


# ---------------------------------------------------------------------------------------------------------
# the buffer side: for each atom, the digits the buffer stores and where
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Factor:
    stride: int  # atom-position stride of this digit
    size: int
    count: int
    weight: int  # buffer-position weight (elements)


@dataclass(slots=True)
class _Buffer:
    mapping: Mapping
    factors: dict[C.Atom, list[_Factor]]
    axes: set[str]
    sizes: dict[str, int]
    base: int
    offset_done: set[C.Win] = field(default_factory=set)
    records: list[tuple[C.Atom, int, int, list[tuple[int, int]]]] = field(default_factory=list)


def _collect(dims: C.Canon, scale: int, into: _Buffer) -> None:
    weights = digit_weights(dims)
    for j, d in enumerate(dims):
        w = weights[j] * scale
        if isinstance(d, C.Lin):
            for part, n in d.parts:
                _collect(part, w * n, into)
            continue
        atom = d.atom
        into.base += d.offset * w  # atom position 0 sits at digit `offset`
        if atom is None:
            continue
        if isinstance(atom, C.Win) and d.stride == 1 and d.count == atom.size \
                and sum(1 for x in dims if isinstance(x, C.Dim) and x.atom == atom) == 1:
            _collect(atom.inner, w, into)
            continue
        into.factors.setdefault(atom, []).append(_Factor(d.stride, d.size - d.offset, d.count, w))


def _buffer(mapping: Mapping) -> _Buffer:
    buf = _Buffer(mapping, {}, set(mapping.axes), _axis_sizes(mapping.canon), 0)
    _collect(mapping.canon, 1, buf)
    for fl in buf.factors.values():
        fl.sort(key=lambda f: f.stride)
    return buf


# ---------------------------------------------------------------------------------------------------------
# the stream side
# ---------------------------------------------------------------------------------------------------------


class _Fallback(Exception):
    """The structural derivation cannot decide; the numeric one must."""


@dataclass(slots=True)
class _Ctx:
    call: str
    level: str
    item: Mapping
    buffer: Mapping

    def incompatible(self, axis: str | None, why: str) -> IncompatibleShapesError:
        return IncompatibleShapesError(
            f"incompatible shapes: {why}; no sequencer configuration reads {self.item!r} from the buffer "
            f"{self.buffer!r} (manual §Sequencer, L1660–1683)", call=self.call, level=self.level,
            mapping=repr(self.item), axis=axis,
            fix="split the stream axis on the same boundaries as the buffer (e.g. A % 5, A / 5)")

    def insufficient(self, axis: str | None) -> InsufficientInputError:
        return InsufficientInputError(
            f"needs indices of {axis} that the buffer {self.buffer!r} does not hold (insufficient input, "
            "manual §Sequencer, L1639–1659)", call=self.call, level=self.level, mapping=repr(self.item),
            axis=axis,
            fix=f"give the buffer the whole of {axis}, or narrow the stream with '=' or '%'")


def _atom_name(atom: C.Atom) -> str:
    if isinstance(atom, C.Sym):
        return atom.name
    if isinstance(atom, C.SkewAtom):
        return atom.skew.name
    return C.canon_text(atom.inner)


def _factorize(t: int, n: int, c: int, factors: list[_Factor], atom: C.Atom, ctx: _Ctx) -> list[tuple[int, int]]:
    """Split stream digit ``(stride t, size n, count c)`` of ``atom`` into buffer pieces, inner first."""
    pieces: list[tuple[int, int]] = []
    cur, rem, valid = t, n, c
    while rem > 1:
        # a buffer digit of stride s holds atom positions s·[0, count); past `count` it is padding
        f = next((f for f in factors if f.stride <= cur < f.stride * f.count and cur % f.stride == 0), None)
        if f is None:
            if any(f.stride <= cur < f.stride * f.count for f in factors):
                raise ctx.incompatible(_atom_name(atom),
                                       f"the stream steps {_atom_name(atom)} by {cur}, which does not fall on "
                                       "a boundary of the buffer's split of that axis")
            if valid <= 1:  # only padding is left: read on past the data (L1841)
                last = pieces[-1] if pieces else (1, 0)
                pieces.append((rem, last[0] * last[1]))
                break
            raise ctx.insufficient(_atom_name(atom))
        u = cur // f.stride
        if (valid - 1) * u < f.count:  # every valid digit left fits in this buffer digit
            pieces.append((rem, f.weight * u))
            break
        if f.count % u:
            raise ctx.incompatible(_atom_name(atom),
                                   f"a step of {cur} over {_atom_name(atom)} does not divide the buffer's "
                                   f"block of {f.stride * f.count}")
        k = f.count // u
        if rem % k:
            raise ctx.incompatible(_atom_name(atom),
                                   f"the stream's run of {rem} over {_atom_name(atom)} does not split into the "
                                   f"buffer's blocks of {k}")
        pieces.append((k, f.weight * u))
        cur *= k
        rem //= k
        valid = -(-valid // k)
    return pieces


@dataclass(slots=True)
class _Item:
    level: str
    mapping: Mapping
    dims: C.Canon


def stream_items(time: Mapping, packet: Mapping) -> list[_Item]:
    """The items of ``Time`` then ``Packet`` (manual L1454), each with its digits in the joint canonical form.

    The items are canonicalised together: a composite that several items cut (``B' / 32`` and ``B' % 32``)
    stays one atom, so the positions they give it add up.
    """
    pairs = [("Time", it) for it in time.items()] + [("Packet", it) for it in packet.items()]
    groups = C.simplify_groups([C.build_raw(it.node) for _, it in pairs])
    return [_Item(level, it, dims) for (level, it), dims in zip(pairs, groups, strict=True)]


def _dim_pieces(d: C.Dim | C.Lin, buf: _Buffer, ctx: _Ctx) -> tuple[list[tuple[int, int]], int]:
    """Pieces (inner first) of one stream dim in one buffer, and the base offset it adds."""
    if isinstance(d, C.Lin):
        raise _Fallback
    atom = d.atom
    if atom is None:
        return [(d.size, 0)], 0
    if atom in buf.factors:
        pieces = _factorize(d.stride, d.size, d.count, buf.factors[atom], atom, ctx)
        buf.records.append((atom, d.stride, d.count, pieces))
        if not d.offset:
            return pieces, 0
        live = [p for p in pieces if p[0] > 1]
        if len(live) != 1:
            raise _Fallback  # a left-padded digit split across buffer digits is not affine in the stream
        return pieces, -d.offset * live[0][1]
    if isinstance(atom, C.Sym):
        if atom.name not in buf.axes:
            return [(d.size, 0)], 0  # broadcast (L1557)
        if buf.sizes.get(atom.name, atom.size) != atom.size:
            raise LayoutError(f"axis {atom.name} has size {buf.sizes[atom.name]} in the buffer "
                              f"{buf.mapping!r} but {atom.size} in the stream", call=ctx.call,
                              level=ctx.level, mapping=repr(ctx.item), axis=atom.name,
                              fix="declare each axis once, with one size")
        raise _Fallback
    if isinstance(atom, C.Win):
        runs, base = _item_entries(atom.inner, buf, ctx)
        runs = [r for r in runs if r[0] > 1]
        if not runs:
            step = 0
        elif len(runs) == 1:
            step = runs[0][1]
        else:
            raise _Fallback
        shift = -d.offset * d.stride * step
        if atom in buf.offset_done:  # a composite's own offset counts once, however many digits it has
            return [(d.size, d.stride * step)], shift
        buf.offset_done.add(atom)
        return [(d.size, d.stride * step)], base + shift
    names = {atom.skew.base, *(n for n, _ in atom.skew.coefs)}
    if not names & buf.axes:
        return [(d.size, 0)], 0
    raise _Fallback


def _item_entries(dims: C.Canon, buf: _Buffer, ctx: _Ctx) -> tuple[list[tuple[int, int]], int]:
    """Entries (outer first) of one item in one buffer, merged where contiguous, and its base offset."""
    out: list[tuple[int, int]] = []
    base = 0
    for d in dims:
        pieces, off = _dim_pieces(d, buf, ctx)
        base += off
        out.extend(reversed(pieces))
    merged: list[tuple[int, int]] = []
    for size, stride in out:
        if merged and merged[-1][1] == size * stride:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    return merged, base


def _refine(per_buffer: list[list[tuple[int, int]]], ctx: _Ctx) -> list[list[tuple[int, int]]]:
    """Split the pieces of several buffers on the union of their boundaries (shared loop sizes)."""
    if len(per_buffer) == 1:
        return per_buffer
    bounds: set[int] = set()
    total = 0
    for pieces in per_buffer:
        acc = 1
        for size, _ in reversed(pieces):
            acc *= size
            bounds.add(acc)
        total = acc
    chain = sorted(bounds)
    for a, b in zip(chain, chain[1:], strict=False):
        if b % a:
            raise ctx.incompatible(None, "the read and write sides split the stream on boundaries "
                                         f"{a} and {b}, which do not nest")
    out = []
    for pieces in per_buffer:
        refined: list[tuple[int, int]] = []
        inner = 1
        for size, stride in reversed(pieces):
            start = inner
            for cut in chain:
                if start < cut <= inner * size:
                    refined.append((cut // start, stride * (start // inner)))
                    start = cut
            inner *= size
        out.append(list(reversed(refined)))
        assert math.prod(s for s, _ in out[-1]) == total
    return out


def _verify_atoms(buf: _Buffer, cap: int = 1 << 20) -> None:
    """Check that the pieces of all stream digits of one atom add up to the buffer's own addresses.

    Each digit fits the buffer on its own, but two digits of one atom can carry into the next buffer digit
    when added (``A / 3 = 2`` and ``A % 3`` over a buffer digit ``A % 4``); then the numeric derivation
    decides.
    """
    by_atom: dict[C.Atom, list[tuple[int, int, list[tuple[int, int]]]]] = {}
    for atom, t, c, pieces in buf.records:
        by_atom.setdefault(atom, []).append((t, c, pieces))
    for atom, recs in by_atom.items():
        if len(recs) < 2 or math.prod(c for _, c, _ in recs) > cap:
            continue
        if fast_atoms.ATOMS.on and fast_atoms.additive(recs, buf.factors[atom]):
            continue  # (no two digits carry: each digit's own addresses decide, fast_atoms.py)
        nd = len(recs)
        pos: IntArray = np.zeros((), dtype=np.int64)
        lin: IntArray = np.zeros((), dtype=np.int64)
        for k, (t, c, pieces) in enumerate(recs):
            view = [1] * nd
            view[k] = c
            v = np.arange(c, dtype=np.int64)
            pos = pos + (v * t).reshape(view)
            addr = np.zeros(c, dtype=np.int64)
            rest = v.copy()
            for size, stride in pieces:
                addr += (rest % size) * stride
                rest //= size
            lin = lin + addr.reshape(view)
        pos, lin = pos.reshape(-1), np.broadcast_to(lin, np.broadcast_shapes(lin.shape, pos.shape)).reshape(-1)
        if isinstance(atom, C.Sym):
            keep = pos < atom.size
            pos, lin = pos[keep], lin[keep]
        true = np.zeros(pos.shape, dtype=np.int64)
        rem = pos.copy()
        for f in sorted(buf.factors[atom], key=lambda f: -f.stride):
            digit = np.minimum(rem // f.stride, f.count - 1)
            true += digit * f.weight
            rem = rem - digit * f.stride
        if not np.array_equal(true, lin):
            raise _Fallback


def _merge_joint(per: list[list[tuple[int, int]]]) -> list[list[tuple[int, int]]]:
    """Merge adjacent pieces of one item where they are contiguous in every buffer (one term, one loop)."""
    out = [[p[0]] if p else [] for p in per]
    for k in range(1, len(per[0])):
        if all(o[-1][1] == p[k][0] * p[k][1] for o, p in zip(out, per, strict=True)):
            for o, p in zip(out, per, strict=True):
                o[-1] = (o[-1][0] * p[k][0], p[k][1])
        else:
            for o, p in zip(out, per, strict=True):
                o.append(p[k])
    return out


def _structural(bufs: list[_Buffer], items: list[_Item], call: str) -> list[list[Entry]] | None:
    """Entries per buffer (shared sizes), or None if the numeric derivation must decide."""
    lists: list[list[Entry]] = [[] for _ in bufs]
    bases = [b.base for b in bufs]
    try:
        for it in items:
            per: list[list[tuple[int, int]]] = []
            for bi, buf in enumerate(bufs):
                ctx = _Ctx(call, it.level, it.mapping, buf.mapping)
                entries, off = _item_entries(it.dims, buf, ctx)
                bases[bi] += off
                per.append(entries)
            per = _merge_joint(_refine(per, _Ctx(call, it.level, it.mapping, bufs[0].mapping)))
            for bi, p in enumerate(per):
                lists[bi].extend(Entry(s, st, it.level == "Packet") for s, st in p if s > 1)
        for buf in bufs:
            _verify_atoms(buf)
    except _Fallback:
        return None
    for bi, b in enumerate(lists):
        lists[bi] = [Entry(-1, bases[bi])] + b  # carry the base in a sentinel
    return lists


def _numeric(bufs: list[_Buffer], items: list[_Item], call: str, limit: int = 1 << 22) -> list[list[Entry]]:
    """Derive entries by evaluating the whole stream and fitting one stride per item digit."""
    dims: list[C.Dim | C.Lin] = [d for it in items for d in it.dims]
    owner = [it for it in items for _ in it.dims]
    total = math.prod(d.size for d in dims)
    first = items[0] if items else None
    ctx0 = _Ctx(call, first.level if first else "Time", first.mapping if first else bufs[0].mapping,
                bufs[0].mapping)
    if total > limit:
        raise ctx0.incompatible(None, f"the stream is too large ({total} elements) to derive numerically")
    try:
        ev = forward(tuple(dims))
    except RelationError as e:
        raise ctx0.incompatible(None, "a linear combination cannot be streamed") from e
    shape = tuple(d.size for d in dims)
    lists: list[list[Entry]] = []
    for buf in bufs:
        ctx = _Ctx(call, ctx0.level, ctx0.item, buf.mapping)
        carried = lin_keys(buf.mapping.canon)  # a combination the stream carries whole (evaluate.lin_key)
        coords = {k: v for k, v in ev.coords.items() if k in buf.axes or k in carried}
        addr, held = inverse(buf.mapping.canon, coords, (total,))
        need = ev.valid & ~held
        if need.any():
            bad = int(np.argmax(need))
            axis = next((k for k, v in coords.items() if v[bad] != 0), None)
            raise ctx.insufficient(axis)
        a = addr.reshape(shape)
        ok = ev.valid.reshape(shape)
        strides = []
        for k in range(len(dims)):
            if shape[k] == 1:
                strides.append(0)
                continue
            lo = [slice(None)] * len(dims)
            hi = [slice(None)] * len(dims)
            lo[k], hi[k] = slice(0, -1), slice(1, None)
            both = ok[tuple(lo)] & ok[tuple(hi)]
            diff = (a[tuple(hi)] - a[tuple(lo)])[both]
            if diff.size == 0:
                strides.append(0)
            elif np.all(diff == diff.flat[0]):
                strides.append(int(diff.flat[0]))
            else:
                it = owner[k]
                raise _Ctx(call, it.level, it.mapping, buf.mapping).incompatible(
                    None, "the buffer positions the stream visits are not evenly spaced")
        grid = np.zeros(shape, dtype=np.int64)
        for k, s in enumerate(strides):
            view = [1] * len(dims)
            view[k] = shape[k]
            grid = grid + (np.arange(shape[k], dtype=np.int64) * s).reshape(view)
        base_vals = (a - grid)[ok]
        base = int(base_vals[0]) if base_vals.size else 0
        if base_vals.size and not np.all(base_vals == base):
            raise ctx.incompatible(None, "the stream's digits do not add up linearly in the buffer")
        entries: list[Entry] = [Entry(-1, base)]
        for it in items:
            run: list[tuple[int, int]] = []
            start = sum(len(x.dims) for x in items[: items.index(it)])
            for k in range(start, start + len(it.dims)):
                size, stride = shape[k], strides[k]
                if run and run[-1][1] == size * stride:
                    run[-1] = (run[-1][0] * size, stride)
                else:
                    run.append((size, stride))
            entries.extend(Entry(s, st, it.level == "Packet") for s, st in run if s > 1)
        lists.append(entries)
    sizes = [[e.size for e in lst] for lst in lists]
    if any(s != sizes[0] for s in sizes):
        raise ctx0.incompatible(None, "the read and write sides need different loops")
    return lists


def derive_many(buffers: Sequence[Mapping], time: Mapping, packet: Mapping, *,
                limits: SequencerLimits = DEFAULT_LIMITS, call: str = "sequencer") -> tuple[SequencerConfig, ...]:
    """Configurations of several buffers over one stream, sharing loop sizes (a fused DMA, L2542–2594)."""
    items = stream_items(time, packet)
    for b in buffers:
        _refuse_unset_skew(b, time, call)
    bufs = [_buffer(b) for b in buffers]
    # A skewed axis ties two axes together (B = (B' + A) mod |B|, L1003): moving A moves B' too, which the
    # per-atom structural rule does not see (it read m["A', B"] as m["A, B"]); the numeric derivation
    # evaluates the skew exactly, or refuses (issue 15 review).
    skewed = any(isinstance(a, C.SkewAtom) for b in buffers for a in C.axis_atoms(b.canon)) or any(
        isinstance(a, C.SkewAtom) for it in items for a in C.axis_atoms(tuple(it.dims)))
    # a stream carrying a linear combination whole (its position as a coordinate, evaluate.lin_key): the numeric
    # derivation reads it from the buffer's same combination digit
    carried = any(has_lin(tuple(it.dims)) for it in items)
    try:
        if skewed or carried:
            raise _Fallback
        lists = _structural(bufs, items, call)
    except _Fallback:
        lists = None
    except IncompatibleShapesError as err:
        # The factor rule (L1681) found no common split; a stream short enough to enumerate may still be
        # affine (two points always are), so the numeric derivation has the last word.
        try:
            lists = _numeric(bufs, items, call)
        except LayoutError:
            raise err from None
    if lists is None:
        try:
            lists = _numeric(bufs, items, call)
        except (IncompatibleShapesError, InsufficientInputError) as err:
            if skewed:
                raise _skew_mismatch(buffers, items, call, err) from err
            raise
    else:
        _check_held(bufs, items, call)
    bases = [lst[0].stride for lst in lists]
    raws = [lst[1:] for lst in lists]
    merged = [list(r) for r in raws]
    if len(raws[0]) > limits.max_entries:
        merged = []
        for bi in range(len(raws)):
            others = [raws[j] for j in range(len(raws)) if j != bi]
            merged.append(merge_entries(raws[bi], others))
    configs = []
    for bi, entries in enumerate(merged):
        configs.append(_finish(entries, raws[bi], bases[bi], limits, call, time, packet))
    _check_first(buffers, configs, time, packet, call)
    return tuple(configs)


def _skew_mismatch(buffers: Sequence[Mapping], items: Sequence[Any], call: str,
                   err: VisaError) -> VisaError:
    """The refusal of a move between a skewed layout and another (issue 27 item 9): a skewed axis ``B' = B - A``
    puts ``B`` at ``(B - A) mod |B|`` (L986–1003), so one row of the other layout is a *rotation* of the skewed
    row: two runs, wrapping at the end, which the sequencer's evenly spaced steps (L1336–1423) cannot visit.  The
    same skew on both sides moves (the wrap is in both), so does a host re-layout.  ``err`` is returned as it is
    when the two sides skew alike (then the skew is not the cause)."""
    def skews(canon: Any) -> set[Any]:
        return {a.skew for a in C.axis_atoms(canon) if isinstance(a, C.SkewAtom)}

    stream = set().union(*(skews(tuple(it.dims)) for it in items)) if items else set()
    sides = [skews(b.canon) for b in buffers]
    odd = next((sk for side in sides for sk in side ^ stream), None)
    if odd is None:
        return err
    others = " ".join(f"{'+' if c > 0 else '-'} {abs(c) if abs(c) != 1 else ''}{n}" for n, c in odd.coefs)
    rule = f"{odd.name} = {odd.base} {others}".replace("  ", " ")
    return IncompatibleShapesError(
        f"one side holds the skewed axis {rule} (L986–1003) and the other does not: each row of one layout is a "
        f"rotation of the other's ({odd.base} wraps around at {odd.size}), which no sequencer's evenly spaced steps "
        "visit (manual §Sequencer, L1336–1423, L1660–1683)", call=call, level="Element",
        mapping=f'm["{odd.name}"]', axis=odd.name,
        fix=f"give both sides the same skew ({odd.name} in both mappings), or re-lay it out through the host "
            "(HostTensor.to_hbm / to_host move any mapping)")


def _refuse_unset_skew(buffer: Mapping, time: Mapping, call: str) -> None:
    """Refuse a buffer holding a skewed axis ``B' = B - A`` but not ``A`` (issue 15 review).

    Its position ``b'`` holds ``B = (b' + A) mod |B|`` (L1003) for the index's ``A``; the evaluator reads the
    unset ``A`` as 0 while the sequencer's strides would treat ``A`` as broadcast (stride 0, L1557): the two
    disagree, so no configuration is given rather than a wrong one.
    """
    sets = set(_axis_sizes(buffer.canon))
    for a in C.axis_atoms(buffer.canon):
        if isinstance(a, C.SkewAtom):
            for other, _ in a.skew.coefs:
                if other not in sets:
                    raise IncompatibleShapesError(
                        f"the buffer {buffer!r} holds the skewed axis {a.skew.name} (skewed by {other}) but not "
                        f"{other} itself: its positions hold B = (B' + {other}) mod |B| for an {other} it does not "
                        "set (manual L986-1003)", call=call, level="Time", mapping=repr(buffer), axis=other,
                        fix=f"put {other} in the buffer's mapping beside {a.skew.name}, or use {a.skew.base} "
                        "unskewed")


def _check_first(buffers: Sequence[Mapping], configs: list[SequencerConfig], time: Mapping, packet: Mapping,
                 call: str) -> None:
    """The first stream element, when it is an index, must be read from a buffer position holding it.

    The per-atom check (:func:`_check_held`) sees only the atoms the stream asks for; a stream asking none
    (``1``) of a buffer whose constant digits land on padding (``[# 1 + 1] / 2``) read padding (issue 15 review).
    """
    plain = fast_first.FIRST.on
    held = fast_first.valid_at((*time.canon, *packet.canon), 0) if plain else None
    if held is None:
        try:
            first = forward(pair_of(time, packet).canon, np.zeros(1, dtype=np.int64))  # not parsed from text
        except RelationError:  # a linear combination relates a position to several indices: no single first index
            return
        held = bool(first.valid[0])
    if not held:
        return
    for buffer, config in zip(buffers, configs, strict=True):
        ok = fast_first.valid_at(buffer.canon, config.base) if plain else None
        if ok is None:
            try:
                at = forward(buffer.canon, np.array([config.base], dtype=np.int64)) \
                    if 0 <= config.base < buffer.size else None
            except RelationError:
                continue
            ok = at is not None and bool(at.valid[0])
        if not ok:
            raise InsufficientInputError(
                f"the stream's first index is not held at the position the sequencer starts from ({config.base}) "
                f"in the buffer {buffer!r} (insufficient input, manual §Sequencer, L1639-1659)", call=call,
                level="Time", mapping=repr(time), axis=None,
                fix="give the buffer a position holding that index (padding holds none)")


def _finish(entries: list[Entry], raw: list[Entry], base: int, limits: SequencerLimits, call: str,
            time: Mapping, packet: Mapping) -> SequencerConfig:
    if len(entries) > limits.max_entries:
        text = ", ".join(str(e) for e in entries)
        raise HardwareLimitError(
            f"the sequencer needs {len(entries)} entries [{text}] even after merging contiguous ones; the "
            f"limit is {limits.max_entries} (manual L1630)", call=call, level="Time",
            mapping=repr(time), fix="merge axes in Time/Packet, or split the operation into several calls")
    for e in entries:
        if e.size > limits.max_entry_size:
            raise HardwareLimitError(
                f"a sequencer entry iterates {e.size} times; the limit is {limits.max_entry_size} per entry "
                "(manual L1631)", call=call, level="Packet" if e.packet else "Time",
                mapping=repr(packet if e.packet else time),
                fix="split the axis into two items, e.g. A / 2, A % 2")
    last = entries[-1] if entries else None
    packet_size = last.size if last is not None and last.packet and last.stride in (0, 1) else 1
    return SequencerConfig(tuple(entries), packet_size, base, tuple(raw))


def _check_held(bufs: list[_Buffer], items: list[_Item], call: str, cap: int = 1 << 26) -> None:
    """Insufficient-input check per atom: every position the stream asks of an atom must be stored (without
    enumerating when :func:`_holds_all` says so; by enumeration in chunks up to ``cap`` positions otherwise —
    beyond it, the check is not made: docs/manual-notes.md)."""
    for buf in bufs:
        wanted: dict[C.Atom, list[tuple[int, int, _Item]]] = {}
        opened: set[C.Win] = set()
        for it in items:
            _wants(it.dims, it, wanted, opened)
        for atom, reqs in wanted.items():
            factors = buf.factors.get(atom)
            if factors is None:
                continue
            digits = [(t, c) for t, c, _ in reqs if t and c > 1]  # a broadcast digit asks for nothing new
            if _holds_all(factors, sum((c - 1) * t for t, c in digits), atom):
                continue
            if math.prod(c for _, c in digits) > cap:
                continue
            for pos in _positions(sorted(digits, reverse=True)):
                if isinstance(atom, C.Sym):
                    pos = pos[pos < atom.size]  # past the end of the axis the stream itself is padding
                if not _all_held(factors, pos):
                    it = reqs[0][2]
                    raise _Ctx(call, it.level, it.mapping, buf.mapping).insufficient(_atom_name(atom))


def _positions(digits: list[tuple[int, int]], chunk: int = 1 << 20) -> Iterator[npt.NDArray[np.int64]]:
    """Every ``Σ i_k · t_k`` (``0 ≤ i_k < c_k``) of the digits ``(t_k, c_k)``, in arrays of at most about
    ``chunk`` positions (a position asked twice comes twice: cheaper than finding repeats)."""
    if len(digits) == 1 and digits[0][1] > chunk:
        t, c = digits[0]
        for lo in range(0, c, chunk):
            yield np.arange(lo, min(c, lo + chunk), dtype=np.int64) * t
        return
    if math.prod(c for _, c in digits) <= chunk or len(digits) == 1:
        pos: npt.NDArray[np.int64] = np.zeros((), dtype=np.int64)
        for k, (t, c) in enumerate(digits):
            view = [1] * len(digits)
            view[k] = c
            pos = pos + (np.arange(c, dtype=np.int64) * t).reshape(view)
        yield pos.reshape(-1)
        return
    (t, c), rest = digits[0], digits[1:]
    if math.prod(n for _, n in rest) <= chunk:  # the inner digits at once, the outer one a block at a time
        inner = next(_positions(rest, chunk))
        step = max(1, chunk // max(1, inner.size))
        for lo in range(0, c, step):
            outer = np.arange(lo, min(c, lo + step), dtype=np.int64) * t
            yield (outer[:, None] + inner[None, :]).reshape(-1)
        return
    for i in range(c):
        for part in _positions(rest, chunk):
            yield part + i * t


def _all_held(factors: list[_Factor], pos: npt.NDArray[np.int64]) -> bool:
    """Does the buffer hold every position (each digit, taken from the largest stride, below its count)?"""
    ok = np.ones(pos.shape, dtype=bool)
    rem = pos.copy()
    for f in sorted(factors, key=lambda f: -f.stride):
        digit = np.minimum(rem // f.stride, f.size - 1)
        ok &= digit < f.count
        rem = rem - digit * f.stride
    ok &= rem == 0
    return bool(ok.all())


def _holds_all(factors: list[_Factor], last: int, atom: C.Atom) -> bool:
    """Does the buffer hold every position ``0..last`` of the atom (clipped to a symbol's size)?  True when the
    values its digits hold form a complete mixed radix from stride 1 (each digit's stride is the previous one
    times the values it holds) that reaches past ``last``: then every such position decomposes exactly, each
    digit below its count (the check of :func:`_check_held`, without enumerating the positions)."""
    if isinstance(atom, C.Sym):
        last = min(last, atom.size - 1)
    if len({f.stride for f in factors}) != len(factors):  # two digits of one stride: leave it to the enumeration
        return False
    reach = 1
    for f in sorted(factors, key=lambda f: f.stride):
        if f.stride != reach or not 0 < f.count <= f.size:
            return False
        reach *= f.count
    return last < reach


def _wants(dims: C.Canon, it: _Item, wanted: dict[C.Atom, list[tuple[int, int, _Item]]],
           opened: set[C.Win] | None = None) -> None:
    """Collect, per atom, the digits ``(stride, count)`` a stream asks for; a composite asks for all of
    its inner positions once."""
    opened = set() if opened is None else opened
    for d in dims:
        if isinstance(d, C.Lin):
            for part, _ in d.parts:
                _wants(part, it, wanted, opened)
        elif isinstance(d.atom, C.Win):
            if d.atom not in opened:
                opened.add(d.atom)
                _wants(d.atom.inner, it, wanted, opened)
        elif d.atom is not None:
            wanted.setdefault(d.atom, []).append((d.stride, d.count, it))


def derive(buffer: Mapping, time: Mapping, packet: Mapping, *, limits: SequencerLimits = DEFAULT_LIMITS,
           call: str = "sequencer") -> SequencerConfig:
    """The configuration that reads (or writes) ``buffer`` as the stream ``(time, packet)`` (L1219–1688)."""
    return derive_many([buffer], time, packet, limits=limits, call=call)[0]
