"""The mapping-expression tree and its parser (manual "Mapping Expressions", L582–1016).

The tree mirrors the manual's constructors (``Mapping::{Symbol, Pair, Identity, Padding, Resize, Stride,
Modulo}``, L650–903) plus the advanced ones (escape L972–984, skewed axes L986–1003, linear combinations
L1006–1016).  Sizes are resolved while parsing, so every node knows its ``size`` (the manual's ``SIZE``).

Grammar (postfix operators chain left to right, ``,`` is right-associative)::

    mapping := item (',' item)*
    item    := ['#' INT '+'] postfix ['+' '#' INT]        left/right padding, manual L1899, L1927
    postfix := primary (('/' | '%' | '#' | '=') INT)*
    primary := '1' | NAME | '[' mapping ']' | '{' NAME '}' | '$' '(' postfix ':' INT (',' postfix ':' INT)* ')'

>>> from visa.mapping.axes import AxisSet
>>> parse("A / 8 # 256", AxisSet(A=2048))
Padding(inner=Stride(inner=Symbol(name='A', size=2048, skew=None), n=8), size=256, left=0)
>>> parse("A, B, C", AxisSet(A=2, B=3, C=4)).size
24
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from visa.errors import MappingSyntaxError, UnsupportedFeatureError, VisaError

if TYPE_CHECKING:
    from visa.mapping.axes import AxisSet, Skew
    from visa.mapping.core import Mapping

__all__ = [
    "Node", "Identity", "Symbol", "Pair", "Padding", "Resize", "Stride", "Modulo", "Escape",
    "LinearCombination", "parse", "items_of", "Resolver", "MAX_SIZE", "MAX_DEPTH", "check_node", "depth_of",
]


@dataclass(frozen=True, slots=True)
class Identity:
    """``1``: one buffer position holding the empty index (manual L717–740)."""

    @property
    def size(self) -> int:
        """SIZE = 1."""
        return 1


@dataclass(frozen=True, slots=True)
class Symbol:
    """An axis name (manual L624–673); a skewed axis (L986–1003) is a Symbol with its derivation."""

    name: str
    size: int
    skew: Skew | None = None


@dataclass(frozen=True, slots=True)
class Pair:
    """``L, R``: L major, R minor; SIZE = L·R (manual L674–716)."""

    left: Node
    right: Node
    size: int = field(init=False, repr=False, compare=False)  # SIZE = L·R, kept so no walk recurses for it

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", self.left.size * self.right.size)


@dataclass(frozen=True, slots=True)
class Padding:
    """``L # n`` (trailing padding to n, manual L741–778) or ``# l + L + # r`` (both sides, L1899)."""

    inner: Node
    size: int
    left: int = 0


@dataclass(frozen=True, slots=True)
class Resize:
    """``L = n``: the first n positions of L (manual L779–812)."""

    inner: Node
    size: int


@dataclass(frozen=True, slots=True)
class Stride:
    """``L / n``: every n-th position of L; n must divide L.SIZE (manual L870–886)."""

    inner: Node
    n: int

    @property
    def size(self) -> int:
        """SIZE = L.SIZE / n."""
        return self.inner.size // self.n


@dataclass(frozen=True, slots=True)
class Modulo:
    """``L % n``: the inner n positions of L; n must divide L.SIZE (manual L887–903)."""

    inner: Node
    n: int

    @property
    def size(self) -> int:
        """SIZE = n."""
        return self.n


@dataclass(frozen=True, slots=True)
class Escape:
    """``{ Name }``: a module-level mapping alias spliced in as one item (manual L972–984)."""

    name: str
    mapping: Mapping = field(compare=False)
    raw: tuple[object, ...] = ()  # the alias's composite-preserving canonical form (visa.mapping.canon)

    @property
    def size(self) -> int:
        """The alias's SIZE."""
        return self.mapping.size


@dataclass(frozen=True, slots=True)
class LinearCombination:
    """``$(e1 : n1, ..., ed : nd)``: position Σ s_k·n_k holds the union of e_k's indices (manual L1006–1016).

    SIZE = 1 + Σ (SIZE(e_k) − 1)·n_k.  It is a relation (several indices share a position), so it is only
    meaningful as a buffer that is read (a sliding window).
    """

    parts: tuple[tuple[Node, int], ...]

    @property
    def size(self) -> int:
        """SIZE = 1 + Σ (SIZE(e_k) − 1)·n_k."""
        return 1 + sum((node.size - 1) * n for node, n in self.parts)


Node = Identity | Symbol | Pair | Padding | Resize | Stride | Modulo | Escape | LinearCombination

#: Looks up an escape ``{Name}``; returns the aliased mapping or raises UnknownAxisError.
Resolver = Callable[[str], "Mapping"]

_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*'*)|(.))", re.ASCII | re.DOTALL)

#: The largest SIZE a mapping, an axis or any part of a mapping may have: positions, strides and their sums
#: stay exact in int64 with room to spare (docs/manual-notes.md, "Limits of the mapping algebra").
MAX_SIZE = 1 << 48
#: The deepest a mapping tree may nest (brackets, chained postfix operators, items of a list and escapes
#: each count as a level), so that no walk over it runs out of Python stack.
MAX_DEPTH = 64


class _Parser:
    def __init__(self, text: str, axes: AxisSet, resolve: Resolver | None) -> None:
        self.text = text
        self.axes = axes
        self.resolve = resolve
        self.toks: list[tuple[str, str, int]] = []
        for mt in _TOKEN.finditer(text):
            if mt.group(0).strip() == "":
                continue
            kind = "int" if mt.group(1) else "name" if mt.group(2) else "op"
            self.toks.append((kind, mt.group(0).strip(), mt.start(mt.lastindex or 0)))
        self.i = 0
        self.depth = 0

    # -- helpers -----------------------------------------------------------------------------------------
    def err(self, msg: str, pos: int | None = None, fix: str | None = None) -> MappingSyntaxError:
        if pos is None:
            pos = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        caret = " " * pos + "^"
        return MappingSyntaxError(f"{msg}\n    {self.text}\n    {caret}", call="m", mapping=f'm["{self.text}"]',
                                  fix=fix)

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str, int]:
        if self.i >= len(self.toks):
            raise self.err(f"expected {want!r} but the text ended" if want else "unexpected end of text")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise self.err(f"expected {want!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def integer(self, after: str) -> int:
        kind, val, pos = self.take()
        if kind != "int":
            digits = " written with the digits 0-9" if val.isnumeric() else ""
            raise self.err(f"{after} needs a whole number{digits}, found {val!r}", pos)
        if len(val) > 20 or int(val) > MAX_SIZE:
            raise self.err(f"{after} needs a number of at most {MAX_SIZE} (2**48), found {val[:24]}", pos,
                           fix="sizes count buffer positions; no memory holds more")
        n = int(val)
        if n <= 0:
            raise self.err(f"{after} needs a positive number, found {n}", pos)
        return n

    def sized(self, node: Node, pos: int) -> Node:
        """``node`` if its SIZE is within :data:`MAX_SIZE` (checked on exact Python ints, before any use)."""
        if node.size > MAX_SIZE:
            raise self.err(f"this part of the mapping has size {node.size}, more than the limit {MAX_SIZE} "
                           "(2**48)", pos, fix="sizes count buffer positions; no memory holds more")
        return node

    # -- grammar -----------------------------------------------------------------------------------------
    def parse(self) -> Node:
        if not self.toks:
            raise self.err("empty mapping", 0, fix='write m["1"] for the identity mapping')
        node = self.mapping()
        if self.i != len(self.toks):
            tok = self.toks[self.i]
            raise self.err(f"unexpected {tok[1]!r}", tok[2], fix=_hint(tok[1]))
        return node

    def mapping(self) -> Node:
        items = [self.item()]
        while self.peek() == ",":
            self.take(",")
            items.append(self.item())
        if len(items) > MAX_DEPTH:
            raise self.err(f"a mapping has at most {MAX_DEPTH} items, found {len(items)}", 0,
                           fix="group items with [ ] or merge adjacent ones")
        node = items[-1]
        for left in reversed(items[:-1]):
            node = self.sized(Pair(left, node), 0)
        return node

    def item(self) -> Node:
        left = 0
        start = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        if self.peek() == "#":
            self.take("#")
            left = self.integer("left padding '#'")
            if self.peek() != "+":
                raise self.err("left padding '# n' must be followed by '+' and a mapping",
                               fix="write # 2 + B + # 4")
            self.take("+")
        node = self.postfix()
        right = 0
        if self.peek() == "+":
            self.take("+")
            if self.peek() != "#":
                raise self.err("only padding '# n' can be added to a mapping", fix="write B + # 31")
            self.take("#")
            right = self.integer("right padding '#'")
        if left or right:
            if isinstance(node, LinearCombination):
                raise self.err("a linear combination cannot be padded on the left", start)
            node = self.sized(Padding(node, left + node.size + right, left), start)
        return node

    def postfix(self) -> Node:
        node = self.primary()
        ops = 0
        while self.peek() in ("/", "%", "#", "="):
            _, op, pos = self.take()
            ops += 1
            if ops > MAX_DEPTH:
                raise self.err(f"at most {MAX_DEPTH} operators may follow one operand", pos,
                               fix="merge them: B / 2 / 2 is B / 4")
            n = self.integer(f"'{op}'")
            if op == "/":
                if node.size % n:
                    raise _size_error("Stride size must divide the original size", self.text, node, n, pos,
                                      fix=f"pad first: [{_show(node)} # {-(-node.size // n) * n}] / {n}")
                node = Stride(node, n)
            elif op == "%":
                if node.size % n:
                    raise _size_error("Modulo size must divide the original size", self.text, node, n, pos,
                                      fix=f"use '= {n}' to keep the first {n} positions")
                node = Modulo(node, n)
            elif op == "#":
                if n < node.size:
                    raise self.err(f"padding '# {n}' is smaller than the size {node.size} it pads", pos,
                                   fix=f"use '= {n}' to keep fewer positions")
                node = Padding(node, n)
            else:
                if n > node.size:
                    raise self.err(f"resize '= {n}' is larger than the size {node.size} it resizes", pos,
                                   fix=f"use '# {n}' to pad")
                node = Resize(node, n)
        return node

    def primary(self) -> Node:
        kind, val, pos = self.take()
        if kind == "int":
            if val != "1":
                raise self.err(f"a number in a mapping must be 1 (the identity), found {val}", pos,
                               fix="sizes belong in axes(...); write the axis name here")
            return Identity()
        if kind == "name":
            if val in ("indirect", "IndirectLoop", "Indirect"):
                raise UnsupportedFeatureError(
                    "indirect sequencing is a TODO in the manual (L1004): it defines no mapping constructor, "
                    "so visa refuses it", call="m", mapping=f'm["{self.text}"]', line=1004,
                    fix='a data-dependent access is a DMA: table.view().gather(m["V"], ids) or '
                        'dst.view().scatter(m["V"], ids) (IndirectLoop, L1684–1688)')
            try:
                size = self.axes.size(val)
            except VisaError as e:
                e.mapping = f'm["{self.text}"]'
                raise type(e)(e.message, call="m", mapping=e.mapping, axis=val, fix=e.fix) from None
            return Symbol(val, size, self.axes.skew_of(val))
        if val == "[":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.err(f"brackets nest more than {MAX_DEPTH} deep", pos,
                               fix="remove redundant brackets: [[A]] is A")
            node = self.mapping()
            self.take("]")
            self.depth -= 1
            if depth_of(node) > 2 * MAX_DEPTH:
                raise self.err(f"the mapping nests more than {2 * MAX_DEPTH} levels deep", pos,
                               fix="write the mapping flat, without redundant brackets")
            return node
        if val == "{":
            kind, name, npos = self.take()
            if kind != "name":
                raise self.err(f"an escape {{Name}} needs a name, found {name!r}", npos)
            self.take("}")
            if self.resolve is None:
                raise self.err(f"escape {{{name}}} cannot be resolved here", npos,
                               fix="define the alias at module level before using it")
            from visa.mapping.canon import build_raw

            target = self.resolve(name)
            check_node(target.node, f'm["{self.text}"]', "m")
            return Escape(name, target, build_raw(target.node))
        if val == "$":
            self.take("(")
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.err(f"brackets nest more than {MAX_DEPTH} deep", pos)
            parts: list[tuple[Node, int]] = []
            while True:
                if len(parts) >= MAX_DEPTH:
                    raise self.err(f"a linear combination has at most {MAX_DEPTH} terms", pos)
                node = self.postfix()
                self.take(":")
                parts.append((node, self.integer("a linear-combination stride")))
                if self.peek() == ")":
                    break
                self.take(",")
            self.take(")")
            self.depth -= 1
            return self.sized(LinearCombination(tuple(parts)), pos)
        raise self.err(f"unexpected {val!r}", pos, fix=_hint(val))


def _hint(tok: str) -> str | None:
    if tok in ("*", "@", "!"):
        return (f"'{tok}' belongs to the DMA pages' older notation (manual L1875, L2431–2658); "
                "write pairs with ',' and slices with '='")
    if tok == ")":
        return "brackets in mappings are [ ]"
    return None


def _show(node: Node) -> str:
    from visa.mapping.canon import node_text

    return node_text(node)


def _size_error(msg: str, text: str, node: Node, n: int, pos: int, fix: str) -> MappingSyntaxError:
    return MappingSyntaxError(f"{msg}: {_show(node)} has size {node.size}, which {n} does not divide\n"
                              f"    {text}\n    {' ' * pos}^", call="m", mapping=f'm["{text}"]', fix=fix)


def parse(text: str, axes: AxisSet, resolve: Resolver | None = None) -> Node:
    """Parse mapping text into a tree whose node sizes are resolved against ``axes`` (manual L582–1016).

    Raises :class:`~visa.errors.MappingSyntaxError`, :class:`~visa.errors.UnknownAxisError` or
    :class:`~visa.errors.UnsupportedFeatureError`; never another exception for any input string.
    """
    if not isinstance(text, str):
        raise MappingSyntaxError(f"mapping text must be a string, got {type(text).__name__}", call="m",
                                 fix='write m["A, B"]')
    node = _Parser(text, axes, resolve).parse()
    check_node(node, f'm["{text}"]', "m")
    return node


def depth_of(node: Node) -> int:
    """Nesting depth of a tree (escapes count their alias's depth), computed without recursion."""
    best = 0
    stack: list[tuple[Node, int]] = [(node, 1)]
    while stack:
        cur, d = stack.pop()
        best = max(best, d)
        if best > 4 * MAX_DEPTH:  # enough to refuse; stop walking a pathological tree
            return best
        if isinstance(cur, Pair):
            stack += [(cur.left, d + 1), (cur.right, d + 1)]
        elif isinstance(cur, Padding | Resize | Stride | Modulo):
            stack.append((cur.inner, d + 1))
        elif isinstance(cur, Escape):
            stack.append((cur.mapping.node, d + 1))
        elif isinstance(cur, LinearCombination):
            stack += [(e, d + 1) for e, _ in cur.parts]
    return best


def check_node(node: Node, mapping: str, call: str) -> None:
    """Refuse a tree deeper than :data:`MAX_DEPTH` (twice that, counting a flat list's items as levels) or with
    a SIZE above :data:`MAX_SIZE`: the limits that keep every walk, hash and position exact and stack-safe."""
    depth = depth_of(node)
    if depth > 2 * MAX_DEPTH:
        raise MappingSyntaxError(f"the mapping nests {depth} levels deep, more than the limit {2 * MAX_DEPTH}",
                                 call=call, mapping=mapping[:200],
                                 fix="name parts with escapes sparingly, or write the mapping flat")
    if node.size > MAX_SIZE:
        raise MappingSyntaxError(f"the mapping has size {node.size}, more than the limit {MAX_SIZE} (2**48)",
                                 call=call, mapping=mapping[:200], fix="sizes count buffer positions")


def items_of(node: Node) -> list[Node]:
    """Top-level items of a right-nested Pair, as the sequencer processes them term by term (L1454)."""
    out: list[Node] = []
    while isinstance(node, Pair):
        out.append(node.left)
        node = node.right
    out.append(node)
    return out
