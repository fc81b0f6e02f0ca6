"""User-facing mapping objects: ``m["..."]``, :class:`Mapping`, :class:`Index` and ``i(...)``.

``m["A / 8 # 256"]`` parses mapping text against the calling module's ``axes(...)`` (manual L582–1016) and
returns a :class:`Mapping`.  The same spelling serves annotations and values.

>>> from visa.mapping.axes import AxisSet
>>> ax = AxisSet(A=8, B=512)
>>> e = ax.m["A, B"]
>>> e.size, e.map(519), e.map(4096)                     # manual L678-689
(4096, i(A=1, B=7), None)
>>> ax.m["B / 64, B % 64"] == ax.m["B"]                  # manual L833-870
True
>>> str(ax.m["[A, B] / 512"])                           # pair projection, manual L1024
'A'
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from collections.abc import Mapping as AbcMapping
from types import FrameType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from visa.errors import MappingSyntaxError, RangeError, UnknownAxisError
from visa.mapping import canon as C
from visa.mapping.axes import AXES_ATTR, AxisSet
from visa.mapping.evaluate import (
    Evaluation,
    IntArray,
    RelationError,
    cover,
    forward,
    has_lin,
    inverse,
    validity,
)
from visa.mapping.syntax import (
    MAX_SIZE,
    Identity,
    Modulo,
    Node,
    Padding,
    Pair,
    Resize,
    Stride,
    Symbol,
    check_node,
    items_of,
    parse,
)
from visa.validate import expect_instance, expect_int, expect_mapping, wrong_type

if TYPE_CHECKING:
    from visa.mapping import static as _static  # noqa: F401 - the static type of m["..."] (visa.mypy)

__all__ = ["HashedKey", "Index", "i", "Mapping", "MappingFactory", "MappingSyntax", "m", "module_mapping", "pair_of",
           "IDENTITY"]


class HashedKey(tuple[object, ...]):
    """A tuple that computes its hash once (a plan cache hashes the same mapping keys on every lookup; the
    nodes inside are dataclasses whose generated ``__hash__`` would be computed again each time).  Equal to, and
    hashing like, the plain tuple of the same items."""

    _hash: int

    def __new__(cls, items: tuple[object, ...]) -> HashedKey:
        self = super().__new__(cls, items)
        self._hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, tuple) and tuple.__eq__(self, other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


class Index(AbcMapping[str, int]):
    """A tensor index: axis name to coordinate, where a zero coordinate is the same as an absent one (L671).

    >>> i(A=2, B=0) == i(A=2)
    True
    >>> i(A=1) + i(A=2, B=3)                             # Index::add sums coordinates (L711)
    i(A=3, B=3)
    >>> i({"B / 64": 2, "B % 64": 5})                    # sugar of manual L841: B = 64·2 + 5
    i(B=133)
    """

    __slots__ = ("_items", "_hash")

    def __init__(self, coords: AbcMapping[str, int] | None = None, /, **kw: int) -> None:
        merged: dict[str, int] = {}
        for src in (coords or {}, kw):
            for key, val in src.items():
                name, scale = _index_key(key)
                coord = expect_int(val, name, call="i", lo=-MAX_SIZE, hi=MAX_SIZE, error=MappingSyntaxError)
                merged[name] = merged.get(name, 0) + coord * scale
        self._items = tuple(sorted((k, v) for k, v in merged.items() if v != 0))
        self._hash = hash(self._items)

    def __getitem__(self, axis: str) -> int:
        for k, v in self._items:
            if k == axis:
                return v
        if isinstance(axis, str):
            return 0
        raise KeyError(axis)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, axis: object) -> bool:
        return any(k == axis for k, _ in self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Index):
            return self._items == other._items
        if isinstance(other, AbcMapping):
            return self._items == tuple(sorted((k, v) for k, v in other.items() if v != 0))
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __add__(self, other: AbcMapping[str, int]) -> Index:
        out = dict(self._items)
        for k, v in other.items():
            out[k] = out.get(k, 0) + v
        return Index(out)

    def __repr__(self) -> str:
        return "i(" + ", ".join(f"{k}={v}" if k.isidentifier() else f"**{{{k!r}: {v}}}"
                                for k, v in self._items) + ")"

    def text(self) -> str:
        """The manual's notation: ``A: 2, B: 3`` (``{}`` for the empty index)."""
        return ", ".join(f"{k}: {v}" for k, v in self._items) or "{}"


_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*'*)\s*(?:([/%])\s*([0-9]{1,15}))?\s*\Z", re.ASCII)


def _index_key(key: str) -> tuple[str, int]:
    if not isinstance(key, str):
        raise wrong_type("key", key, "an axis name (str)", call="i")
    mt = _KEY.match(key)
    if not mt:
        raise MappingSyntaxError(f"{key!r} is not an index key", call="i", fix="write i(A=2) or i({'B / 64': 2})")
    name, op, n = mt.groups()
    return name, (int(n) if op == "/" else 1)


def i(coords: AbcMapping[str, int] | None = None, /, **kw: int) -> Index:
    """Build an :class:`Index`: ``i(A=2, B=3)`` is the manual's ``i![A: 2, B: 3]`` (L601–610)."""
    return Index(coords, **kw)


def _index_at(ev: Evaluation, k: int) -> Index | None:
    if not bool(ev.valid.reshape(-1)[k]):
        return None
    return Index({name: int(arr.reshape(-1)[k]) for name, arr in ev.coords.items()})


class Mapping:
    """A mapping expression: buffer position to tensor index (manual "Mapping Interface", L596–620).

    ``size`` is the manual's ``SIZE``; ``map(i)`` its ``map``.  ``==`` is the manual's equivalence (same
    size, same map for every position, L1017–1028) and equal mappings hash equal; ``str()`` prints the
    canonical text; ``repr()`` the text as written.
    """

    __slots__ = ("node", "axis_set", "_canon", "_hash", "_text", "_items", "_key", "_axes")

    def __init__(self, node: Node, axis_set: AxisSet, text: str | None = None) -> None:
        self.node = node
        self.axis_set = axis_set
        self._canon: C.Canon | None = None
        self._hash: int | None = None
        self._text = text
        self._items: tuple[Mapping, ...] | None = None
        self._key: tuple[object, ...] | None = None
        self._axes: frozenset[str] | None = None

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, axis_set: AxisSet, scope: AbcMapping[str, Any] | None = None) -> Mapping:
        """Parse ``text``; escapes ``{Name}`` resolve in ``scope`` (a module's globals)."""
        return _parse_cached(text, axis_set, scope)

    @classmethod
    def identity(cls, axis_set: AxisSet | None = None) -> Mapping:
        """``m["1"]`` (manual L717–740)."""
        return cls(Identity(), axis_set or AxisSet(), "1")

    # -- the manual's interface --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of buffer positions (the manual's ``SIZE``)."""
        return self.node.size

    @property
    def canon(self) -> C.Canon:
        """Canonical form (see :mod:`visa.mapping.canon`)."""
        if self._canon is None:
            self._canon = C.build(self.node)
        return self._canon

    @property
    def key(self) -> tuple[object, ...]:
        """An exact, hashable identity: the composite-preserving form (axis sizes included).

        ``==`` is the manual's equivalence of one mapping on its own; two equivalent mappings can still mean
        different things next to others (``[A, B] % 2`` and ``B = 2`` pair differently with ``[A, B] / 2``)
        or over axes of other sizes.  Caches of anything derived from several mappings key on this.
        """
        if self._key is None:
            self._key = HashedKey(C.build_raw(self.node))
        return self._key

    def map(self, position: int) -> Index | None:
        """Tensor index held at buffer ``position``, or ``None`` for padding and positions past ``size``."""
        position = expect_int(position, "position", call="map")
        if not 0 <= position < self.size:
            return None
        if has_lin(self.canon):
            raise RelationError("a linear combination maps one position to several indices; it has no map()",
                                call="map", fix="use maps(i) for all of them, or read it as a buffer")
        return _index_at(forward(self.canon, np.array([position])), 0)

    def maps(self, position: int) -> list[Index]:
        """Every tensor index related to ``position``: one (or none) except for linear combinations (L1016)."""
        position = expect_int(position, "position", call="maps")
        try:
            got = self.map(position)
            return [] if got is None else [got]
        except RelationError:
            return _resolved_maps(self.canon, position)

    def evaluate(self, positions: npt.ArrayLike | None = None) -> Evaluation:
        """Vectorised ``map`` over ``positions`` (default: every position, in order)."""
        if positions is not None:
            positions = int_array(positions, "positions", "evaluate")
        return forward(self.canon, positions)

    def validity(self) -> npt.NDArray[np.bool_]:
        """Whether each position holds an index: ``evaluate().valid`` without the coordinates (L616–620)."""
        return validity(self.canon)

    def cover(self) -> npt.NDArray[np.bool_]:
        """Whether each position may hold an index: :meth:`validity`, and for a linear combination (a relation,
        L1006–1016) the positions some split of it reaches (:func:`visa.mapping.evaluate.cover`)."""
        return cover(self.canon)

    def locate(self, coords: AbcMapping[str, npt.ArrayLike],
               shape: tuple[int, ...] | None = None) -> tuple[IntArray, npt.NDArray[np.bool_]]:
        """Inverse: the buffer position holding each index, and whether the buffer holds it.

        Axes the mapping does not use are ignored (broadcast, manual L1557).  ``shape`` is the broadcast
        shape of the coordinate arrays (needed when ``coords`` is empty).
        """
        expect_instance(coords, AbcMapping, "coords", call="locate", expected="a dict of axis name to coordinates")
        for k in coords:
            if not isinstance(k, str):
                raise wrong_type("coords", k, "axis names (str) as keys", call="locate")
        return inverse(self.canon, {k: int_array(v, f"coords[{k!r}]", "locate") for k, v in coords.items()}, shape)

    def position_of(self, index: AbcMapping[str, int]) -> int | None:
        """The buffer position holding ``index`` (``None`` when it is not held)."""
        expect_instance(index, AbcMapping, "index", call="position_of", expected="an index such as i(A=2)")
        index = Index(index) if not isinstance(index, Index) else index
        if any(abs(v) > MAX_SIZE for v in index.values()):
            return None
        pos, held = self.locate({k: np.array([v]) for k, v in index.items()})
        return int(pos.reshape(-1)[0]) if bool(held.reshape(-1)[0]) else None

    @property
    def axes(self) -> frozenset[str]:
        """Names of the axes this mapping sets (derived axes count as their base and the axes they use)."""
        if self._axes is None:
            self._axes = frozenset(_axes_of(self.canon))
        return self._axes

    @property
    def text(self) -> str:
        """The text as written (escapes keep their names)."""
        if self._text is None:
            self._text = C.node_text(self.node)
        return self._text

    def items(self) -> tuple[Mapping, ...]:
        """Top-level items, as the sequencer processes them term by term (manual L1454–1566)."""
        if self._items is None:
            self._items = tuple(Mapping(n, self.axis_set) for n in items_of(self.node))
        return self._items

    # -- inspection (design API.md §8; :mod:`visa.mapping.inspect`) -----------------------------------------
    def remove_axis(self, axis: str) -> Mapping:
        """This mapping without the digits of ``axis`` (:func:`visa.mapping.inspect.remove_axis`)."""
        from visa.mapping.inspect import remove_axis

        return remove_axis(self, axis)

    def is_broadcast(self, data_axes: Iterable[str] | str | None = None) -> bool:
        """Every position holds the same data: no padding, no digit of ``data_axes``
        (:func:`visa.mapping.inspect.is_broadcast`)."""
        from visa.mapping.inspect import is_broadcast

        return is_broadcast(self, data_axes)

    def has_no_padding(self) -> bool:
        """Every position holds an index (:func:`visa.mapping.inspect.has_no_padding`, L741–812)."""
        from visa.mapping.inspect import has_no_padding

        return has_no_padding(self)

    def innermost_writable_size(self) -> int:
        """Positions of the innermost run before padding (:func:`visa.mapping.inspect.innermost_writable_size`)."""
        from visa.mapping.inspect import innermost_writable_size

        return innermost_writable_size(self)

    # -- building ----------------------------------------------------------------------------------------
    def stride(self, n: int) -> Mapping:
        """``self / n`` (n must divide ``size``, manual L874)."""
        n = expect_int(n, "n", call="stride")
        if n <= 0 or self.size % n:
            raise MappingSyntaxError(f"Stride size must divide the original size: {n} does not divide "
                                     f"{self.size}", call="stride", mapping=repr(self),
                                     fix=f"stride by a divisor of {self.size}, or pad first: .pad(m).stride(n)")
        return _built(Mapping(Stride(self.node, n), self.axis_set))

    def modulo(self, n: int) -> Mapping:
        """``self % n`` (n must divide ``size``, manual L891)."""
        n = expect_int(n, "n", call="modulo")
        if n <= 0 or self.size % n:
            raise MappingSyntaxError(f"Modulo size must divide the original size: {n} does not divide "
                                     f"{self.size}", call="modulo", mapping=repr(self),
                                     fix=f"take a divisor of {self.size}, or .resize(n) to keep the first n "
                                     "positions")
        return _built(Mapping(Modulo(self.node, n), self.axis_set))

    def pad(self, n: int) -> Mapping:
        """``self # n`` (n at least ``size`` and at most 2**48, manual L741–778)."""
        n = expect_int(n, "n", call="pad")
        if n > MAX_SIZE:
            raise MappingSyntaxError(f"padding to {n} is more than the limit {MAX_SIZE} (2**48)", call="pad",
                                     mapping=repr(self), fix="sizes count buffer positions; no memory holds more")
        if n < self.size:
            raise MappingSyntaxError(f"padding to {n} is smaller than the size {self.size}", call="pad",
                                     mapping=repr(self), fix="use .resize(n) to keep fewer positions")
        return _built(Mapping(Padding(self.node, n), self.axis_set))

    def resize(self, n: int) -> Mapping:
        """``self = n`` (n at most ``size``, manual L779–812)."""
        n = expect_int(n, "n", call="resize")
        if not 0 < n <= self.size:
            raise MappingSyntaxError(f"resize to {n} is outside 1..{self.size}", call="resize",
                                     mapping=repr(self), fix=f"resize to 1..{self.size}, or use .pad(n) to add "
                                     "positions")
        return _built(Mapping(Resize(self.node, n), self.axis_set))

    @classmethod
    def from_canon(cls, dims: C.Canon, axis_set: AxisSet | None = None) -> Mapping:
        """A mapping whose canonical form is ``dims`` (its written text is the canonical text)."""
        if axis_set is None:
            axis_set = AxisSet()
            _declare_from(dims, axis_set)
        return Mapping.parse(C.canon_text(dims), axis_set)

    # -- equivalence -------------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        if self is other or self.canon == other.canon:
            return True
        if self.size != other.size or hash(self) != hash(other):
            return False
        return _semantic_equal(self.canon, other.canon)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = _semantic_hash(self.canon)
        return self._hash

    def __str__(self) -> str:
        return C.canon_text(self.canon)

    def __repr__(self) -> str:
        return f'm["{self.text}"]'

    def __reduce__(self) -> tuple[Any, ...]:  # the tree, not the text: escapes and skewed axes need no scope
        return (Mapping, (self.node, self.axis_set, self.text))

    # -- views -------------------------------------------------------------------------------------------
    def plot(self, width: int | None = None) -> Any:
        """A matplotlib ``Figure`` of the buffer: each position coloured (and, when small, labelled) by the tensor
        index it holds, padding grey (:func:`visa.mapping.show.plot`; ``pip install 'tcp-visa[plot]'``)."""
        from visa.mapping.show import plot

        return plot(self, width)

    def table(self, limit: int = 64) -> str:
        """A grid like the manual's stride/modulo tables (L905–917): rows are the outer items, columns the last.

        >>> from visa.mapping.axes import AxisSet
        >>> print(AxisSet(B=16).m["B / 4, B % 4"].table())
        |          | B % 4: 0 | B % 4: 1 | B % 4: 2 | B % 4: 3 |
        |----------|----------|----------|----------|----------|
        | B / 4: 0 | {}       | B: 1     | B: 2     | B: 3     |
        | B / 4: 1 | B: 4     | B: 5     | B: 6     | B: 7     |
        | B / 4: 2 | B: 8     | B: 9     | B: 10    | B: 11    |
        | B / 4: 3 | B: 12    | B: 13    | B: 14    | B: 15    |
        """
        limit = expect_int(limit, "limit", call="table", lo=1)
        items = self.items()
        last = items[-1]
        outer_size = self.size // max(last.size, 1)
        rows = min(outer_size, limit)
        cols = min(last.size, limit)
        outer_label = ", ".join(it.text for it in items[:-1])
        head = ["", *(f"{last.text}: {c}" for c in range(cols))]
        body = []
        for r in range(rows):
            cells = []
            for c in range(cols):
                got = self.maps(r * last.size + c)
                cells.append(" | ".join(x.text() for x in got) if got else "·")
            body.append([f"{outer_label}: {r}" if outer_label else "", *cells])
        widths = [max(len(row[k]) for row in [head, *body]) + 2 for k in range(len(head))]
        widths[0] = max(widths[0], 10)

        def fmt(row: list[str]) -> str:
            return "|" + "|".join(f" {cell:<{w - 1}}" for cell, w in zip(row, widths, strict=True)) + "|"

        lines = [fmt(head), "|" + "|".join("-" * w for w in widths) + "|", *(fmt(r) for r in body)]
        return "\n".join(line.rstrip() for line in lines)

    def _repr_html_(self) -> str:
        """The mapping in a notebook: its text, size and axes, and the manual's stride/modulo table of which
        index each position holds (:meth:`table`; :func:`visa.mapping.show.mapping_html`)."""
        from visa.mapping.show import mapping_html

        return mapping_html(self)


def _built(made: Mapping) -> Mapping:
    """A mapping built by a method, refused past the depth and size limits as parsed text is."""
    check_node(made.node, repr(made), "m")
    return made


def int_array(value: object, param: str, call: str) -> npt.NDArray[np.int64]:
    """``value`` as an int64 array: integers only (no floats, no text), each within ±2**62 so that no position
    or coordinate wraps (issue 16)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        raise wrong_type(param, value, "integers (an int or an array of ints)", call=call) from None
    if arr.dtype == object:
        flat = arr.reshape(-1).tolist()
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
            raise wrong_type(param, value, "integers (an int or an array of ints)", call=call)
        if any(abs(v) > 1 << 62 for v in flat):
            raise RangeError(f"parameter {param} holds a value beyond ±2**62", call=call,
                             fix="positions and coordinates are at most 2**48")
        return arr.astype(np.int64)
    if arr.size and arr.dtype.kind not in "iu":
        raise wrong_type(param, value, "integers (an int or an array of ints)", call=call)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > 1 << 62:
        raise RangeError(f"parameter {param} holds a value beyond 2**62", call=call,
                         fix="positions and coordinates are at most 2**48")
    return arr.astype(np.int64)


def _declare_from(dims: C.Canon, axis_set: AxisSet) -> None:
    """Declare in ``axis_set`` every axis (and skew) that a canonical form uses."""
    for a in C.axis_atoms(dims):
        if isinstance(a, C.Sym):
            axis_set.declare(**{a.name: a.size})
            continue
        sk = a.skew
        if sk.base not in axis_set:
            axis_set.declare(**{sk.base: sk.size})
        if sk.name not in axis_set:
            axis_set._skews[sk.name] = sk


def _axes_of(dims: C.Canon) -> set[str]:
    """The axes a canonical form sets: its axes, and for a skewed axis its base and the axes it uses."""
    out: set[str] = set()
    for a in C.axis_atoms(dims):
        if isinstance(a, C.Sym):
            out.add(a.name)
        else:
            out.add(a.skew.base)
            out.update(name for name, _ in a.skew.coefs)
    return out


_SAMPLES = 48


def _sample_positions(size: int) -> npt.NDArray[np.int64]:
    first = list(range(min(size, 24)))
    spread = [k * size // (_SAMPLES - 22) for k in range(1, _SAMPLES - 23)]  # exact Python ints, no overflow
    return np.unique(np.array([*first, *spread, size - 1], dtype=np.int64))


def _semantic_hash(dims: C.Canon) -> int:
    size = C.canon_size(dims)
    try:
        ev = forward(dims, _sample_positions(size))
    except RelationError:
        return hash((size, dims))
    parts: list[object] = [size, ev.valid.tobytes()]
    for name in sorted(ev.coords):
        arr = np.where(ev.valid, ev.coords[name], 0)
        if arr.any():
            parts.append((name, arr.tobytes()))
    return hash(tuple(parts))


_CHUNK = 1 << 22


def _semantic_equal(a: C.Canon, b: C.Canon) -> bool:
    size = C.canon_size(a)
    try:
        for start in range(0, size, _CHUNK):
            pos = np.arange(start, min(size, start + _CHUNK), dtype=np.int64)
            ea, eb = forward(a, pos), forward(b, pos)
            if not np.array_equal(ea.valid, eb.valid):
                return False
            for name in set(ea.coords) | set(eb.coords):
                ca = np.where(ea.valid, ea.coord(name), 0)
                cb = np.where(eb.valid, eb.coord(name), 0)
                if not np.array_equal(ca, cb):
                    return False
    except RelationError:
        return False
    return True


def _resolved_maps(dims: C.Canon, position: int) -> list[Index]:
    """:func:`_relation_maps` over the whole index: a skewed axis ``B'`` is one coordinate of the index, summed over
    every term and composite that names it and resolved once, ``B = (B' - Σ coef·other) mod |B|`` (manual L988,
    L1003), as :func:`~visa.mapping.evaluate.forward` does; an index past the end of an axis is not held."""
    skews = list(dict.fromkeys(a.skew for a in C.axis_atoms(dims) if isinstance(a, C.SkewAtom)))
    sizes = {a.name: a.size for a in C.axis_atoms(dims) if isinstance(a, C.Sym)}
    sizes.update((sk.base, sk.size) for sk in skews)
    out: list[Index] = []
    for got in _relation_maps(_unskewed(dims), position):
        coords = dict(got)
        held = True
        for sk in skews:
            p = coords.pop(sk.name, 0)
            held = held and p < sk.size  # B' itself past its end (terms of a repeated B' add up)
            shift = sum(coef * coords.get(other, 0) for other, coef in sk.coefs)
            coords[sk.base] = coords.get(sk.base, 0) + (p - shift) % sk.size
        if held and all(0 <= v < sizes.get(k, v + 1) for k, v in coords.items()):
            out.append(Index(coords))
    return sorted(set(out), key=lambda x: x.text())


def _unskewed(dims: C.Canon) -> C.Canon:
    """``dims`` with every skewed axis read as a plain axis of its own name (its coordinate left unresolved)."""
    out: list[C.Dim | C.Lin] = []
    for d in dims:
        if isinstance(d, C.Lin):
            out.append(C.Lin(tuple((_unskewed(c), n) for c, n in d.parts), d.size))
        elif isinstance(d.atom, C.SkewAtom):
            out.append(C.Dim(C.Sym(d.atom.skew.name, d.atom.skew.size), d.stride, d.size, d.count, d.offset))
        elif isinstance(d.atom, C.Win):
            out.append(C.Dim(C.Win(_unskewed(d.atom.inner), d.atom.use), d.stride, d.size, d.count, d.offset))
        else:
            out.append(d)
    return tuple(out)


def _relation_maps(dims: C.Canon, position: int) -> list[Index]:
    """All indices at ``position`` of a mapping with linear combinations (manual L1006–1016): each ordinary
    digit gives one index (or none), each linear-combination digit every split of its value over its terms."""
    if not 0 <= position < C.canon_size(dims):
        return []
    weights = C.canon_size(dims)
    digits = []
    for d in dims:
        weights //= d.size
        digits.append((position // weights) % d.size)
    results: list[Index] = [Index()]
    for dig, d in zip(digits, dims, strict=True):
        options: list[Index] = []
        if isinstance(d, C.Lin):
            options = _lin_options(d, dig)
        else:
            if not d.offset <= dig < d.offset + d.count:
                return []
            if d.atom is None:
                options = [Index()]
            elif isinstance(d.atom, C.Win) and _has_relation(d.atom.inner):  # a padded or cut combination
                options = _relation_maps(d.atom.inner, (dig - d.offset) * d.stride)
            else:
                got = _index_at(forward((C.Dim(d.atom, d.stride, d.size, d.count, d.offset),), np.array([dig])), 0)
                options = [] if got is None else [got]
        results = [r + o for r in results for o in options]
        if not results:
            return []
    return sorted(set(results), key=lambda x: x.text())


def _has_relation(dims: C.Canon) -> bool:
    return any(isinstance(d, C.Lin) or (isinstance(d.atom, C.Win) and _has_relation(d.atom.inner)) for d in dims)


#: The most term positions (and indices) ``maps`` enumerates for one linear combination.
_MAPS_LIMIT = 1 << 16


def _part_maps(part: C.Canon, count: int) -> list[list[Index]]:
    """``maps(s)`` of one term of a linear combination for s in 0..count-1, evaluated at once."""
    try:
        ev = forward(part, np.arange(count, dtype=np.int64))
    except RelationError:
        return [_relation_maps(part, s) for s in range(count)]
    names = sorted(ev.coords)
    cols = [ev.coords[n].tolist() for n in names]
    valid = ev.valid.tolist()
    return [[Index(dict(zip(names, (c[s] for c in cols), strict=True)))] if valid[s] else [] for s in range(count)]


def _lin_options(d: C.Lin, digit: int) -> list[Index]:
    """Every index at value ``digit`` of ``$(e1 : n1, ...)``: Σ s_k·n_k = digit over the terms' positions."""
    counts = [min(C.canon_size(part), digit // n + 1) for part, n in d.parts]
    if sum(counts) > _MAPS_LIMIT:
        raise RelationError(f"maps() would look at {sum(counts)} positions of the combination's terms, more than "
                            f"{_MAPS_LIMIT}", call="maps", fix="evaluate the terms separately, or use smaller axes")
    tables = [_part_maps(part, count) for (part, _), count in zip(d.parts, counts, strict=True)]
    out: list[Index] = []
    last = len(d.parts) - 1
    work = 0
    # iterate over the choices of s_k term by term, keeping the partial sums (an explicit stack, no recursion);
    # the last term's position is what remains, so it is looked up rather than searched
    stack: list[tuple[int, int, Index]] = [(0, digit, Index())]
    while stack:
        k, remaining, acc = stack.pop()
        n = d.parts[k][1]
        table = tables[k]
        if k == last:
            if remaining % n == 0 and remaining // n < len(table):
                out.extend(acc + got for got in table[remaining // n])
            work += 1
        else:
            for s in range(min(len(table), remaining // n + 1)):
                for got in table[s]:
                    stack.append((k + 1, remaining - s * n, acc + got))
                    work += 1
        if len(out) > _MAPS_LIMIT or work > 16 * _MAPS_LIMIT:
            raise RelationError(f"position {digit} of the combination holds too many indices to list (more than "
                                f"{_MAPS_LIMIT}, or more than {16 * _MAPS_LIMIT} partial splits)", call="maps",
                                fix="evaluate the terms separately, or use smaller axes")
    return out


def pair_of(*parts: Mapping) -> Mapping:
    """``m["{a}, {b}, ..."]`` built from mapping objects: the right-nested ``Pair`` (manual L674–716)."""
    if not parts:
        raise MappingSyntaxError("pair_of needs at least one mapping", call="pair_of",
                                 fix='pass one mapping or more; m["1"] is the identity')
    for k, p in enumerate(parts):
        expect_instance(p, Mapping, f"parts[{k}]", call="pair_of", expected='a mapping such as m["A"]')
    node: Node = parts[-1].node
    for p in reversed(parts[:-1]):
        node = Pair(p.node, node)
    return _built(Mapping(node, parts[0].axis_set))


_CACHE: dict[tuple[str, int, int], Mapping] = {}


def _parse_cached(text: str, axis_set: AxisSet, scope: AbcMapping[str, Any] | None) -> Mapping:
    def resolve(name: str) -> Mapping:
        found = scope.get(name) if scope is not None else None
        if not isinstance(found, Mapping):
            what = "is not defined" if found is None else f"is a {type(found).__name__}, not a mapping"
            raise UnknownAxisError(f"escape {{{name}}} {what}", call="m", mapping=f'm["{text}"]',
                                   fix=f'define {name} = m["..."] at module level before this line')
        return found

    key = None
    if isinstance(text, str) and "{" not in text:  # parse() refuses anything but text
        # (the axis set's object and how many axes it declares: declaring only adds an axis, never changes one's
        # size, so the same object with as many axes has the same ones; the entry holds it, so its id is its own)
        key = (text, id(axis_set), len(axis_set.sizes))
        hit = _CACHE.get(key)
        if hit is not None and hit.axis_set is axis_set:
            return hit
    node = parse(text, axis_set, resolve)
    made = Mapping(node, axis_set, text.strip())
    if key is not None:
        if len(_CACHE) > 8192:
            _CACHE.clear()
        _CACHE[key] = made
    return made


class MappingFactory:
    """``ax.m["..."]``: parse mapping text against an explicit :class:`AxisSet` (manual
    L587–595)."""

    __slots__ = ("axis_set",)

    def __init__(self, axis_set: AxisSet) -> None:
        self.axis_set = axis_set

    def __getitem__(self, text: str) -> Mapping:
        if isinstance(text, str) and "{" not in text:  # no escape: no scope to resolve one in (not copied)
            return Mapping.parse(text, self.axis_set, None)
        frame = sys._getframe(1)
        scope = {**frame.f_globals, **_escape_locals(text, frame)}
        return Mapping.parse(text, self.axis_set, scope)


def _escape_locals(text: str, frame: FrameType) -> AbcMapping[str, Any]:
    """The caller's local variables when ``text`` has a ``{Name}`` escape (the only use of them), else none.

    Reading a frame's locals makes CPython (3.11, 3.12) keep a snapshot of them on the frame until the next
    read: a function that wrote ``m["..."]`` after ``Context.acquire()`` would keep that context (its device
    images) alive after it let go of it.
    """
    return frame.f_locals if isinstance(text, str) and "{" in text else {}


def module_mapping(text: str, module_globals: AbcMapping[str, Any],
                   local_scope: AbcMapping[str, Any] | None = None) -> Mapping:
    """``m[text]`` written in the module whose globals are ``module_globals`` (the one rule behind ``m``; manual
    L582–595).

    Names resolve against the module's ``axes(...)``; escapes ``{Name}`` against its variables (locals first).
    The mypy plugin (:mod:`visa.mypy`) calls this with the module it analyses.
    """
    found = module_globals.get(AXES_ATTR)
    if not isinstance(found, AxisSet):
        if isinstance(text, str) and _only_identity(text):
            found = AxisSet(str(module_globals.get("__name__", "")))
        else:
            name = module_globals.get("__name__", "?")
            raise UnknownAxisError(f"module {name} declares no axes", call="m",
                                   mapping=f'm["{text}"]', fix="call axes(A=..., ...) at the top of the module")
    scope = module_globals
    if local_scope and local_scope is not module_globals:
        scope = {**module_globals, **local_scope}
    return Mapping.parse(text, found, scope)


class MappingSyntax:
    """The type of :data:`m`: ``m["A / 8 # 256"]`` is an item lookup that parses mapping text (the manual's
    ``m![...]``, L582).

    ``m`` is an object, not a class, so that a type checker reads ``Slice = m["A / 8 # 256"]`` as a value
    (a :class:`Mapping`), never as a type alias; the :mod:`visa.mypy` plugin makes ``m["..."]`` a type too.
    """

    __slots__ = ()

    def __getitem__(self, text: str) -> Mapping:
        frame = sys._getframe(1)
        return module_mapping(text, frame.f_globals, _escape_locals(text, frame))

    def __repr__(self) -> str:
        return "m"


_Text = TypeVar("_Text")


class M(Mapping, Generic[_Text]):
    """``M[Literal["A % 8"]]``: the spelling of ``m["A % 8"]`` in an annotation that pyright and Pylance accept
    (they read ``m["A % 8"]`` as a forward reference and flag it).  The :mod:`visa.mypy` plugin reads it as the
    same type as ``m["A % 8"]``, with the same checks; at run time it is only an annotation (never
    instantiated).  Values stay ``m["..."]`` (manual ``m![...]``, L582)::

        def kernel(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A"]]]) -> ...
    """

    __slots__ = ()


#: ``m["A / 8 # 256"]``: a mapping expression, in annotations and values alike.
#: Names resolve against the calling module's ``axes(...)``; escapes ``{Name}`` against its variables.
m = MappingSyntax()


def _only_identity(text: str) -> bool:
    return re.fullmatch(r"[\s1#=%/0-9\[\],]*", text) is not None


IDENTITY = Mapping(Identity(), AxisSet(), "1")


def symbol(name: str, size: int) -> Mapping:
    """A one-axis mapping built without text (used by engines that invent axes, such as ``I``; manual
    L624–673)."""
    return Mapping(Symbol(name, size), AxisSet(**{name: size}), name)


#: The Python parameter behind each type-parameter name the stages pass to :func:`ensure_mapping`.
_PARAMS = {"Time2": "time", "OutTime": "time", "Packet2": "packet", "OutPacket": "packet", "Element": "element",
           "Row": "row", "Slice2": "slice_", "Cluster": "cluster", "Chip": "chip", "Time": "time", "Packet": "packet"}


def ensure_mapping(value: object, what: str, call: str | None = None, level: str | None = None) -> Mapping:
    """Check that an argument (``what``, e.g. ``"OutTime"``) is a :class:`Mapping`; otherwise a
    :class:`~visa.errors.WrongTypeError` names the parameter, the ``call`` that took it and the ``level`` it was
    meant for (manual "Mapping Expressions", L582)."""
    param = _PARAMS.get(what, what)
    return expect_mapping(value, param if param == what else f"{param} ({what})", call=call or what,  # type: ignore[no-any-return]
                          level=level)
