"""Canonical form of a mapping: the normal form behind equivalence, hashing and printing (manual L1017–1028).

A canonical mapping is a tuple of *dims*, outermost first.  A buffer position is split into one digit per
dim (mixed radix, like ``Pair``).  A :class:`Dim` ``(atom, stride, size, count, offset)`` adds
``(digit - offset)·stride`` to the flat position of its *atom*; digits outside ``[offset, offset + count)``
are padding (``offset`` is left padding, manual L1899).  An atom is a :class:`Sym` (an axis), a
:class:`Win` (a composite sub-mapping that a stride, modulo, resize or padding cut through, decoded only
after its terms are added up: ARCHITECTURE.md "A note on the mapping algebra"), or a skewed axis.  A
:class:`Lin` dim is a linear combination (L1006–1016), kept opaque.

Normalisation merges adjacent dims of one atom that are contiguous, drops size-1 dims and turns a dim that
can only be zero into padding.  While a mapping is built, every stride, modulo, resize or padding of a
multi-dim operand makes it one composite atom (even a trivial one such as ``E % SIZE``), so that ``[E] / n``
and ``[E] % n`` meet and add their positions; :func:`simplify` then replaces each composite that only one
dim refers to by the inner dims it cuts exactly.  These rules realise the manual's equivalences: pair
identity (1), stride–modulo decomposition (2), pair projection (3), associativity (4), idempotent
operations (5) and modulo by one (6).

>>> from visa.mapping.axes import AxisSet
>>> from visa.mapping.syntax import parse
>>> ax = AxisSet(A=8, B=512)
>>> canon_text(build(parse("B / 64, B % 64", ax))) == canon_text(build(parse("B", ax)))
True
>>> canon_text(build(parse("B / 32 = 2 # 16", ax)))
'B / 32 % 2 # 16'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from visa.errors import MappingSyntaxError
from visa.mapping.axes import Skew
from visa.mapping.syntax import (
    Escape,
    Identity,
    LinearCombination,
    Modulo,
    Node,
    Padding,
    Pair,
    Resize,
    Stride,
    Symbol,
)

__all__ = ["Sym", "Win", "SkewAtom", "Atom", "Dim", "Lin", "Canon", "build", "build_raw", "simplify",
           "simplify_groups", "axis_atoms",
           "canon_size", "canon_text", "node_text", "pad", "resize", "stride", "pair", "is_regular"]


@dataclass(frozen=True, slots=True)
class Sym:
    """An axis as an atom: its flat position is its coordinate (``Mapping::Symbol``, manual L624–673)."""

    name: str
    size: int


@dataclass(frozen=True, slots=True)
class Win:
    """A composite atom: flat position p holds ``inner.map(p)`` (decoded after every term is added), what a
    stride, modulo, resize or padding of a pair cuts through (manual L870–903).

    ``use`` tells apart the uses of one composite that each half of a pair walks from its start, padded or resized
    (``[A, B] # 7, [A, B] # 7``): each is decoded on its own and their indices add, as ``Pair::map`` does
    (L710–714, L775–777), where the cuts of one composite that a stride takes part in (``[E] / n, [E] % n``)
    share one atom and add their positions first."""

    inner: Canon
    use: int = 0

    @property
    def size(self) -> int:
        """SIZE of the composite."""
        return canon_size(self.inner)


@dataclass(frozen=True, slots=True)
class SkewAtom:
    """A skewed axis as an atom: position p gives ``base = (p - Σ coef·other) mod size`` (manual L986–1003)."""

    skew: Skew

    @property
    def size(self) -> int:
        """The size of the base axis (manual L986–1003)."""
        return self.skew.size


Atom = Sym | Win | SkewAtom


@dataclass(frozen=True, slots=True)
class Dim:
    """One mixed-radix digit of the buffer position (a term of the manual's pair, L674–716).

    Digit d is valid when ``offset <= d < offset + count`` and then adds ``(d - offset)·stride`` to the
    flat position of ``atom``; ``atom is None`` adds nothing (pure padding, ``count == 1``).
    """

    atom: Atom | None
    stride: int
    size: int
    count: int
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Lin:
    """A linear combination ``$(e1 : n1, ...)`` as one opaque digit of the buffer position (L1006–1016)."""

    parts: tuple[tuple[Canon, int], ...]
    size: int


Canon = tuple[Dim | Lin, ...]


def canon_size(dims: Canon) -> int:
    """SIZE of a canonical mapping (the product of its digits' sizes, as for ``Pair``, manual L674–716)."""
    out = 1
    for d in dims:
        out *= d.size
    return out


def axis_atoms(dims: Canon) -> Iterator[Sym | SkewAtom]:
    """Every axis atom of a canonical mapping, outermost first, composites and linear combinations opened (an
    atom that several digits use comes once per digit): the axes the mapping's indices set (manual L596–620)."""
    for d in dims:
        if isinstance(d, Lin):
            for c, _ in d.parts:
                yield from axis_atoms(c)
        elif isinstance(d.atom, Win):
            yield from axis_atoms(d.atom.inner)
        elif d.atom is not None:
            yield d.atom


# ---------------------------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------------------------


def _refs(dims: Canon, atom: Atom) -> int:
    return sum(1 for d in dims if isinstance(d, Dim) and d.atom == atom)


def _tidy(d: Dim) -> Dim | None:
    """One dim on its own: clamp counts to the axis, turn a dim that can only add zero into padding."""
    if isinstance(d.atom, Sym | SkewAtom):
        reach = -(-d.atom.size // d.stride)  # digits whose position stays inside the axis (a skewed one too)
        if d.count > reach:
            d = Dim(d.atom, d.stride, d.size, reach, d.offset)
    if isinstance(d.atom, Sym):  # a skewed axis at 0 still sets its base (B' = 0 is B = A, L988): kept
        if d.count == 1:
            d = Dim(None, 0, d.size, 1, d.offset)
    if d.atom is None and d.size == 1 and d.offset == 0:
        return None
    if isinstance(d.atom, Sym) and d.size == 1 and d.offset == 0:
        return None
    return d


def _merge(o: Dim, d: Dim) -> Dim | None:
    """Merge an outer and an inner dim into one when that changes nothing."""
    if o.atom is None and d.atom is None and o.offset < o.size and d.offset < d.size:
        return Dim(None, 0, o.size * d.size, 1, o.offset * d.size + d.offset)
    if (o.atom is not None and o.atom == d.atom and d.count == d.size and d.offset == 0
            and o.stride == d.stride * d.size):
        return Dim(o.atom, d.stride, o.size * d.size, o.count * d.size, o.offset * d.size)
    return None


def _normalise(dims: list[Dim | Lin]) -> Canon:
    changed = True
    while changed:
        changed = False
        out: list[Dim | Lin] = []
        for d in dims:
            if isinstance(d, Dim):
                t = _tidy(d)
                if t != d:
                    changed = True
                if t is None:
                    continue
                d = t
                if out and isinstance(out[-1], Dim):
                    merged = _merge(out[-1], d)
                    if merged is not None:
                        out[-1] = merged
                        changed = True
                        continue
            out.append(d)
        dims = out
    return tuple(dims)


def _window(dims: Canon) -> Dim:
    """Wrap a whole canonical mapping as one composite dim covering it exactly."""
    size = canon_size(dims)
    return Dim(Win(dims), 1, size, size)


def _single(dims: Canon) -> Dim | None:
    """The one dim a unary constructor may transform in place (else the operand is cut as a whole)."""
    if len(dims) == 1 and isinstance(dims[0], Dim):
        d = dims[0]
        if d.offset == 0 and d.count == d.size:
            return d
    # Several dims, a linear combination, or a dim with padding: cut it as one composite, so that the
    # validity of `[E] / n, [E] % n` is decided on the positions they add up to.
    return None


def _inert(d: Dim | Lin) -> bool:
    """True when digit 0 of ``d`` is valid and adds nothing (so the dim can be dropped when fixed at 0)."""
    if isinstance(d, Lin):
        return all(all(_inert(x) for x in c) for c, _ in d.parts)
    if d.offset:
        return False
    if d.atom is None or isinstance(d.atom, Sym):
        return True
    if isinstance(d.atom, Win):
        return all(_inert(x) for x in d.atom.inner)
    return False


# -- the constructors, composite-preserving ("raw"): a cut through several dims keeps them as one atom -----


def _separate_whole_uses(dims: list[Dim | Lin]) -> list[Dim | Lin]:
    """A composite that every digit naming it walks from its start over more than one position, whole, padded or
    resized (``[A, B] # 7, [A, B] # 7``; ``[A, B] = 4, [A, B] = 4``), is decoded per digit, as ``Pair::map``
    decodes each half on its own and adds the indices (L710–714, L775–777): each such digit gets an atom of its
    own (:attr:`Win.use`).  A composite that some digit strides through, or holds at position 0 only (the cuts of
    ``[E] / n, [E] % n``, n = 1 and n = SIZE included, L1024), keeps one atom, whose digits add their positions
    (ARCHITECTURE.md, "A note on the mapping algebra")."""
    groups: dict[Atom, list[int]] = {}
    for k, d in enumerate(dims):
        if isinstance(d, Dim) and isinstance(d.atom, Win):
            groups.setdefault(d.atom, []).append(k)
    out = list(dims)
    for atom, ks in groups.items():
        digits = [d for d in (out[k] for k in ks) if isinstance(d, Dim)]
        if len(ks) < 2 or not isinstance(atom, Win) or any(d.stride != 1 or d.count == 1 for d in digits):
            continue
        taken = {a.use for a in groups if isinstance(a, Win) and a.inner == atom.inner}
        fresh = (u for u in range(len(dims) + len(taken) + 1) if u not in taken)
        for k in ks[1:]:
            d = out[k]
            assert isinstance(d, Dim)
            out[k] = Dim(Win(atom.inner, next(fresh)), d.stride, d.size, d.count, d.offset)
    return out


def pair(left: Canon, right: Canon) -> Canon:
    """``L, R`` (manual L674–716)."""
    return _normalise(_separate_whole_uses([*left, *right]))


def pad(dims: Canon, n: int, left: int = 0) -> Canon:
    """``L # n`` (left = 0) or ``# left + L + # (n - left - SIZE)`` (manual L741–778, L1899)."""
    size = canon_size(dims)
    if n < size + left:
        raise MappingSyntaxError(f"padding to {n} is smaller than the size {size + left}", call="m")
    if not dims:
        return _normalise([Dim(None, 0, n, 1, left)])
    d = _single(dims) or _window(dims)
    return _normalise([Dim(d.atom, d.stride, n, d.count, d.offset + left)])


def resize(dims: Canon, n: int) -> Canon:
    """The first n positions: ``L = n`` (manual L779–812), and ``L % n`` (L887–903)."""
    size = canon_size(dims)
    if not 0 < n <= size:
        raise MappingSyntaxError(f"resize to {n} is outside 1..{size}", call="m")
    if not dims:
        return dims
    d = _single(dims) or _window(dims)
    return _normalise([Dim(d.atom, d.stride, n, min(d.count, n))])


def stride(dims: Canon, n: int) -> Canon:
    """Every n-th position: ``L / n`` (manual L870–886); n must divide SIZE."""
    size = canon_size(dims)
    if size % n:
        raise MappingSyntaxError(f"Stride size must divide the original size ({n} does not divide {size})",
                                 call="m")
    if not dims:
        return dims
    d = _single(dims) or _window(dims)
    return _normalise([Dim(d.atom, d.stride * n, d.size // n, -(-d.count // n))])


# -- exact decompositions, used to simplify a composite that only one dim refers to ----------------------


def _stride_exact(dims: Canon, n: int) -> Canon | None:
    """``dims / n`` without a composite atom, or ``None`` when n does not fall on digit boundaries."""
    rem, i = n, len(dims) - 1
    while rem > 1:
        d = dims[i]
        if rem % d.size == 0 and _inert(d):
            rem //= d.size
            i -= 1
            continue
        if isinstance(d, Dim) and d.size % rem == 0 and d.offset % rem == 0:
            lo, hi = d.offset // rem, -(-(d.offset + d.count) // rem)
            return (*dims[:i], Dim(d.atom, d.stride * rem, d.size // rem, hi - lo, lo))
        return None
    return dims[: i + 1]


def _prefix_exact(dims: Canon, n: int) -> Canon | None:
    """The first n positions of ``dims`` without a composite atom, or ``None``."""
    rem, i = n, len(dims) - 1
    while i >= 0:
        d = dims[i]
        if rem == d.size or (rem % d.size == 0 and rem > d.size):
            rem //= d.size
            i -= 1
            if rem == 1:
                return dims[i + 1:] if all(_inert(x) for x in dims[: i + 1]) else None
            continue
        if rem < d.size and isinstance(d, Dim) and all(_inert(x) for x in dims[:i]):
            count = min(d.offset + d.count, rem) - d.offset
            if count <= 0:
                return None
            return (Dim(d.atom, d.stride, rem, count, d.offset), *dims[i + 1:])
        return None
    return dims


def _cut(inner: Canon, t: int, n: int, c: int, off: int) -> Canon | None:
    """``# off + [[inner] = t·c] / t # ..`` expressed on inner's own dims, when every cut is on a digit boundary."""
    if n == 1 and off == 0 and all(_inert(x) for x in inner):
        return ()  # only position 0 of the composite, and it holds the empty index: nothing
    span = t * c
    size = canon_size(inner)
    got: Canon | None = inner
    if span < size:
        got = _prefix_exact(inner, span)
    elif span > size:
        return None
    if got is None:
        return None
    got = _stride_exact(got, t)
    if got is None:
        return None
    if n > canon_size(got) or off:
        if len(got) != 1:
            return None
        d = got[0]
        if not isinstance(d, Dim):  # a linear combination is padded as a whole, never cut (L1006–1016)
            return None
        got = (Dim(d.atom, d.stride, n, d.count, d.offset + off),)
    return got


def _collides(cut: Canon, dims: Canon, owner: Dim) -> bool:
    """True if splicing ``cut`` would let a window atom meet another digit of the same window.

    An axis or a skewed axis may meet itself: its positions add up over the whole index wherever they come
    from (a skewed axis is one coordinate, resolved once: manual L711, L988), so a digit spliced out of a
    composite adds to the same sum it added to inside it."""
    mine = {d.atom for d in cut if isinstance(d, Dim) and isinstance(d.atom, Win)}
    return any(isinstance(d, Dim) and d is not owner and d.atom in mine for d in dims)


def simplify(dims: Canon) -> Canon:
    """Replace each composite that a single dim refers to by the inner dims it cuts exactly (the stride–modulo
    decomposition and pair projection of manual L1017–1028).

    Applied once, to a whole mapping, after every constructor has run: while a mapping is still being built
    a composite must stay whole, so that ``[E] / n`` and ``[E] % n`` can meet and add their positions.
    """
    return simplify_groups([dims])[0]


def simplify_groups(groups: list[Canon]) -> list[Canon]:
    """:func:`simplify` over consecutive groups of one mapping (the items of a stream), keeping the groups.

    A composite referred to from two groups stays whole; merging happens inside a group only.
    """
    every: Canon = tuple(d for g in groups for d in g)
    raw_groups: list[list[Dim | Lin]] = []
    for g in groups:
        out: list[Dim | Lin] = []
        for d in g:
            if isinstance(d, Lin):
                out.append(Lin(tuple((simplify(c), n) for c, n in d.parts), d.size))
                continue
            if isinstance(d.atom, Win):
                refs = _refs(every, d.atom)
                inner = simplify(d.atom.inner)
                if refs == 1:
                    cut = _cut(inner, d.stride, d.size, d.count, d.offset)
                    if cut is not None and not _collides(cut, every, d):
                        out.extend(cut)
                        continue
                d = Dim(Win(inner, d.atom.use), d.stride, d.size, d.count, d.offset)
            out.append(d)
        raw_groups.append(out)
    # a composite spliced out of two uses of another is still one use in each (Pair::map, L710–714)
    flat = _separate_whole_uses([d for part in raw_groups for d in part])
    out_groups: list[Canon] = []
    for part in raw_groups:
        out_groups.append(_normalise(flat[:len(part)]))
        flat = flat[len(part):]
    if out_groups == groups:
        return out_groups
    return simplify_groups(out_groups)


def build(node: Node) -> Canon:
    """Canonical form of a parsed mapping tree: equivalent mappings (manual L1017–1028) get equal forms."""
    return _renumber(simplify(build_raw(node)))


def _renumber(dims: Canon) -> Canon:
    """The :attr:`Win.use` tags numbered by first appearance (per composite), inside composites too: one
    mapping gets one canonical form however its pairs were nested."""
    names: dict[Win, Win] = {}
    counts: dict[Canon, int] = {}
    out: list[Dim | Lin] = []
    for d in dims:
        if isinstance(d, Lin):
            out.append(Lin(tuple((_renumber(c), n) for c, n in d.parts), d.size))
            continue
        if isinstance(d.atom, Win):
            if d.atom not in names:
                inner = _renumber(d.atom.inner)
                names[d.atom] = Win(inner, counts.get(inner, 0))
                counts[inner] = counts.get(inner, 0) + 1
            d = Dim(names[d.atom], d.stride, d.size, d.count, d.offset)
        out.append(d)
    return tuple(out)


@lru_cache(maxsize=4096)
def build_raw(node: Node) -> Canon:
    """Composite-preserving form of a parsed tree (see :func:`simplify`; the constructors of manual L650–1016)."""
    if isinstance(node, Identity):
        return ()
    if isinstance(node, Symbol):
        atom: Atom = SkewAtom(node.skew) if node.skew is not None else Sym(node.name, node.size)
        return (Dim(atom, 1, node.size, node.size),)
    if isinstance(node, Pair):
        return pair(build_raw(node.left), build_raw(node.right))
    if isinstance(node, Padding):
        return pad(build_raw(node.inner), node.size, node.left)
    if isinstance(node, Resize):
        return resize(build_raw(node.inner), node.size)
    if isinstance(node, Modulo):
        return resize(build_raw(node.inner), node.n)
    if isinstance(node, Stride):
        return stride(build_raw(node.inner), node.n)
    if isinstance(node, Escape):
        return node.raw  # type: ignore[return-value]
    if isinstance(node, LinearCombination):
        parts = tuple((build_raw(e), n) for e, n in node.parts)
        return _lin(parts, node.size)
    raise TypeError(f"not a mapping node: {node!r}")  # pragma: no cover


def _lin(parts: tuple[tuple[Canon, int], ...], size: int) -> Canon:
    # $(e1 : size(e2), e2 : 1) is the pair e1, e2 (manual L1010): a mixed-radix combination is a pair.
    live = [(c, n) for c, n in parts if canon_size(c) > 1]
    # A term of one position adds position 0 only; it is dropped only when that holds the empty index (a skewed
    # axis at 0 still sets its base, B' = 0 gives B = A, L988; a padded position holds nothing)
    fixed = [(c, n) for c, n in parts if canon_size(c) == 1 and not all(_inert(d) for d in c)]
    live.sort(key=lambda p: -p[1])
    radix_ok = bool(live)
    expect = 1
    for c, n in reversed(live):
        if n != expect:
            radix_ok = False
            break
        expect *= canon_size(c)
    if radix_ok or not live:
        out: Canon = ()
        for c, _ in [*fixed, *live]:
            out = pair(out, c)
        return out
    return (Lin((*fixed, *live), size),)


def is_regular(dims: Canon) -> bool:
    """True when every axis appears in one atom only and no Lin or skew is involved (manual L986–1016 are the
    irregular cases).

    For regular mappings the inverse (tensor index to buffer position) is a plain digit decomposition.
    """
    seen: set[str] = set()
    for name in _atom_names(dims):
        if name in seen:
            return False
        seen.add(name)
    return not _has_irregular(dims)


def _atom_names(dims: Canon) -> list[str]:
    out: list[str] = []
    atoms: list[Atom] = []
    for d in dims:
        if isinstance(d, Lin):
            for c, _ in d.parts:
                out += _atom_names(c)
        elif d.atom is not None and d.atom not in atoms:
            atoms.append(d.atom)
    for a in atoms:
        if isinstance(a, Sym):
            out.append(a.name)
        elif isinstance(a, Win):
            out += _atom_names(a.inner)
        else:
            out.append(a.skew.base)
    return out


def _has_irregular(dims: Canon) -> bool:
    spans: dict[Atom, list[tuple[int, int]]] = {}
    for d in dims:
        if isinstance(d, Dim) and d.atom is not None:
            spans.setdefault(d.atom, []).append((d.stride, d.stride * d.count))
    for ranges in spans.values():  # the digits of one atom must not overlap (a mixed radix)
        ranges.sort()
        for (_, hi), (lo, _) in zip(ranges, ranges[1:], strict=False):
            if lo < hi:
                return True
    for d in dims:
        if isinstance(d, Lin):
            return True
        if isinstance(d.atom, SkewAtom):
            return True
        if isinstance(d.atom, Win) and _has_irregular(d.atom.inner):
            return True
    return False


# ---------------------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------------------


def _atom_text(atom: Atom) -> str:
    if isinstance(atom, Sym):
        return atom.name
    if isinstance(atom, SkewAtom):
        return atom.skew.name
    return f"[{canon_text(atom.inner)}]"


def _bracket(dims: Canon, text: str) -> str:
    return f"[{text}]" if len(dims) > 1 or (dims and isinstance(dims[0], Dim) and dims[0].offset) else text


def _dim_text(d: Dim | Lin) -> str:
    if isinstance(d, Lin):
        parts = ", ".join(f"{_bracket(c, canon_text(c))} : {n}" for c, n in d.parts)
        return f"$({parts})"
    if d.atom is None:
        text = "1"
    else:
        text = _atom_text(d.atom)
        asz = d.atom.size
        if d.stride > 1:
            if asz % d.stride and isinstance(d.atom, Win) and d.count * d.stride < asz:
                # cut a composite, never pad it: `[X] # 6` merges the padding into X, another composite
                text += f" = {d.count * d.stride}"
                asz = d.count * d.stride
            elif asz % d.stride:
                padded = -(-asz // d.stride) * d.stride
                text += f" # {padded}"
                asz = padded
            text += f" / {d.stride}"
            asz //= d.stride
        if d.count < asz:
            text += f" % {d.count}" if asz % d.count == 0 else f" = {d.count}"
        elif isinstance(d.atom, Win) and d.stride == 1:
            text += f" % {asz}"  # a whole cut of a composite other digits also cut, not the plain pair
    right = d.size - d.offset - d.count
    if d.offset:
        return f"# {d.offset} + {text}" + (f" + # {right}" if right else "")
    if right:
        text += f" # {d.size}"
    return text


def canon_text(dims: Canon) -> str:
    """Canonical text: parsing it gives back an equivalent mapping with the same canonical form (the grammar of
    manual L582–1016)."""
    if not dims:
        return "1"
    return ", ".join(_dim_text(d) for d in dims)


def node_text(node: Node) -> str:
    """Text of a parse tree as written (escapes keep their names, manual L972–984)."""
    if isinstance(node, Identity):
        return "1"
    if isinstance(node, Symbol):
        return node.name
    if isinstance(node, Pair):
        left = node_text(node.left)
        if isinstance(node.left, Pair):
            left = f"[{left}]"
        return f"{left}, {node_text(node.right)}"
    if isinstance(node, Escape):
        return f"{{{node.name}}}"
    if isinstance(node, LinearCombination):
        return "$(" + ", ".join(f"{node_text(e)} : {n}" for e, n in node.parts) + ")"
    inner = node.inner
    text = node_text(inner)
    if isinstance(inner, Pair) or (isinstance(inner, Padding) and inner.left):
        text = f"[{text}]"
    if isinstance(node, Padding):
        if node.left:
            right = node.size - node.left - inner.size
            return f"# {node.left} + {text}" + (f" + # {right}" if right else "")
        return f"{text} # {node.size}"
    if isinstance(node, Resize):
        return f"{text} = {node.size}"
    if isinstance(node, Stride):
        return f"{text} / {node.n}"
    return f"{text} % {node.n}"
