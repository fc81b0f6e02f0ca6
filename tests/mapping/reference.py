"""A brute-force reference for mapping semantics, written straight from the parse tree.

It follows the manual's trait implementations (L621–1016) with one change that ARCHITECTURE.md asks for:
a stride, modulo, resize or padding that cuts through a composite (a pair or the identity) keeps the
composite as one *atom*, so that ``[E] / n`` and ``[E] % n`` add their positions inside ``E`` before ``E``
decodes them.  Symbols are atoms too, whose position is their coordinate.  A composite that no use strides
through or keeps at one position (each walks it from its start, padded or resized: ``[A, B] # 7, [A, B] # 7``)
follows ``Pair::map`` as written (L710–714, L775–777): each use decodes on its own and the indices add.  A
tensor index must lie inside every axis.  It is slow and simple on purpose: the canonical form is tested against it.
"""

from __future__ import annotations

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

Terms = list[tuple[object, int]]


def _comp(node: Node, whole: bool) -> tuple[object, ...]:
    """The key of a composite's atom: one per composite for the uses a stride takes part in, a new one for each
    other use."""
    return ("comp", node, object() if whole else None)


def _base(node: Node, j: int, whole: bool = False) -> Terms | None:
    """Position ``j`` of the operand of a unary constructor (``whole``: no constructor so far strides, or keeps one
    position only)."""
    if isinstance(node, Escape):
        return _base(node.mapping.node, j, whole)
    if isinstance(node, Padding):
        return [(_comp(node, whole), j)]  # padding decides validity on the sum of the positions: keep it whole
    # A resize only cuts the end, as a modulo does (`A = 4` and `A % 4` are one mapping): both pass through
    # to their operand (docs/manual-notes.md, "Skewed axes inside composites").
    if isinstance(node, Symbol | Stride | Modulo | Resize):
        return terms(node, j, whole)
    return [(_comp(node, whole), j)]


def terms(node: Node, i: int, whole: bool = True) -> Terms | None:
    if isinstance(node, Identity):
        return [] if i == 0 else None
    if isinstance(node, Symbol):
        return [(("sym", node.name, node.size, node.skew), i)] if 0 <= i < node.size else None
    if isinstance(node, Pair):
        if not 0 <= i < node.size:
            return None
        left = terms(node.left, i // node.right.size)
        right = terms(node.right, i % node.right.size)
        return None if left is None or right is None else left + right
    if isinstance(node, Escape):
        return terms(node.mapping.node, i, whole)
    if isinstance(node, Stride):
        return _base(node.inner, i * node.n, whole and node.n == 1) if 0 <= i < node.size else None
    if isinstance(node, Modulo):
        return _base(node.inner, i, whole and node.n > 1) if 0 <= i < node.n else None
    if isinstance(node, Resize):
        return _base(node.inner, i, whole and node.size > 1) if 0 <= i < node.size else None
    if isinstance(node, Padding):
        if not 0 <= i < node.size:
            return None
        q = i - node.left
        return _base(node.inner, q, whole) if 0 <= q < node.inner.size else None
    if isinstance(node, LinearCombination):
        raise ValueError("linear combinations are relations")
    raise TypeError(node)


def sizes_of(node: Node, skews: bool = True) -> dict[str, int]:
    out: dict[str, int] = {}
    if isinstance(node, Symbol):
        if node.skew is not None:
            if skews:
                out[node.skew.base] = node.skew.size
        else:
            out[node.name] = node.size
    elif isinstance(node, Pair):
        out.update(sizes_of(node.left, skews))
        out.update(sizes_of(node.right, skews))
    elif isinstance(node, Escape):
        out.update(sizes_of(node.mapping.node, skews))
    elif isinstance(node, LinearCombination):
        for e, _ in node.parts:
            out.update(sizes_of(e, skews))
    elif not isinstance(node, Identity):
        out.update(sizes_of(node.inner, skews))
    return out


def ref_map(node: Node, i: int) -> dict[str, int] | None:
    """The tensor index at buffer position ``i`` (zeros dropped), or None.

    A skewed axis ``B' = B - A`` is resolved last, over the whole index (manual L988: its coordinate "at any
    point equals B minus A"), also when it sits inside a composite; its positions from every composite and every
    digit add up first (the index's coordinates add, L711) and are resolved once.
    """
    got = _decode(node, i)
    if got is None:
        return None
    coords, skews = got
    summed: dict[object, int] = {}  # one skewed axis is one coordinate: its positions from every composite add up
    for skew, pos in skews:
        summed[skew] = summed.get(skew, 0) + pos
    for skew, pos in summed.items():
        if not 0 <= pos < skew.size:  # the skewed coordinate itself past its end (terms of a repeated B' add up)
            return None
        shift = sum(coef * coords.get(other, 0) for other, coef in skew.coefs)
        coords[skew.base] = coords.get(skew.base, 0) + (pos - shift) % skew.size
    for name, size in sizes_of(node).items():
        if not 0 <= coords.get(name, 0) < size:
            return None
    return {k: v for k, v in coords.items() if v}


def _decode(node: Node, i: int) -> tuple[dict[str, int], list[tuple[object, int]]] | None:
    """Coordinates of the plain axes at position ``i``, and the skewed axes' positions still to resolve."""
    ts = terms(node, i)
    if ts is None:
        return None
    # a composite that some use strides through is one atom (its uses add their positions); one that no use
    # strides through keeps an atom per use (each decodes on its own)
    cut = {key[1] for key, _ in ts if isinstance(key, tuple) and key[0] == "comp" and key[2] is None}
    positions: dict[object, int] = {}
    for key, pos in ts:
        if isinstance(key, tuple) and key[0] == "comp" and key[1] in cut:
            key = ("comp", key[1], None)
        positions[key] = positions.get(key, 0) + pos
    coords: dict[str, int] = {}
    skews: list[tuple[object, int]] = []
    for key, pos in positions.items():
        assert isinstance(key, tuple)
        if key[0] == "sym":
            skew = key[3]
            if skew is not None:
                skews.append((skew, pos))
            else:
                coords[key[1]] = coords.get(key[1], 0) + pos
        else:
            sub = _decode(key[1], pos)
            if sub is None:
                return None
            sub_coords, sub_skews = sub
            for name, size in sizes_of(key[1], skews=False).items():  # a composite holds only its own range
                if not 0 <= sub_coords.get(name, 0) < size:
                    return None
            for k, v in sub_coords.items():
                coords[k] = coords.get(k, 0) + v
            skews += sub_skews
    return coords, skews
