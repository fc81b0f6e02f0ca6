"""Fast path ``sequencer.first-plain`` (issue 24): the sequencer's check that the stream's first element is read
from a buffer position holding it (``sequencer._check_first``, insufficient input, L1639–1659), evaluated in plain
Python when the stream's and the buffer's canonical digits are plain (digits of axes, or padding).

The reference evaluates the mapping (:func:`visa.mapping.evaluate.forward`) at one position: the stream's pair
``(time, packet)`` at 0 and each buffer at its configuration's base, each a round of numpy arrays of one element
(a fifth of a first launch's sequencer derivations).  For digits that are all :class:`~visa.mapping.canon.Dim` of
an axis or of padding, ``forward`` says position ``p`` holds an index exactly when ``0 <= p < SIZE``, each digit of
``p`` (mixed radix, innermost last) lies in its window ``[offset, offset + count)`` and each axis's coordinate (the
sum of its digits' ``(digit - offset) · stride``) is below the axis's size (L596–620, L711): :func:`valid_at`
reads the same from integers.  The stream's pair is ``time``'s digits then ``packet``'s (position 0 is digit 0 of
every digit of both), so its canonical form, which the pair would build, is not needed.  Any other digit (a
linear combination, a window, a skewed axis) answers None: the reference runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from visa import fastpaths
from visa.mapping import canon as C

__all__ = ["FIRST", "valid_at"]

FIRST = fastpaths.register("sequencer.first-plain", "the sequencer's check that the stream's first element is held "
                           "at the buffer's base evaluated from plain digits in Python, not by evaluating the "
                           "mappings with numpy")


def valid_at(dims: Sequence[object], p: int) -> bool | None:
    """Whether position ``p`` of the canonical digits ``dims`` holds an index (``forward(dims, [p]).valid[0]``),
    or None when a digit is not plain (see the module)."""
    total = 1
    for d in dims:
        if type(d) is not C.Dim or not (d.atom is None or type(d.atom) is C.Sym):
            return None
        total *= d.size
    if not 0 <= p < total:
        return False
    coords: dict[str, int] = {}
    sizes: dict[str, int] = {}
    weight = total
    for d in dims:
        assert type(d) is C.Dim  # (checked above)
        weight //= d.size
        digit = (p // weight) % d.size
        if not d.offset <= digit < d.offset + d.count:
            return False
        if d.atom is not None:
            assert type(d.atom) is C.Sym
            coords[d.atom.name] = coords.get(d.atom.name, 0) + (digit - d.offset) * d.stride
            sizes[d.atom.name] = d.atom.size
    return all(v < sizes[k] for k, v in coords.items())
