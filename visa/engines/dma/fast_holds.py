"""Fast path ``dma.holds-every-index`` (issue 24): a DMA plan's check that its destination holds every index its
source holds (``plan._check_holds``: a sequencer derived from the destination's buffer over the source's stream,
only to see whether it raises "insufficient input", L1639–1659) answered from the destination's digits when it
holds every index of every axis it has.

A move is the identity on the tensor (L1162–1197): the destination must hold each index of the source.  A
destination whose digits of each axis (plain axes only) form one complete mixed radix — sorted by stride, the
first of stride 1 and each next one's stride the product of the counts before it, the counts multiplying to the
axis's size — holds every index of that axis: any index a source holds of it is held, at exactly one position.
When, besides, every digit of the source's stream is of a plain axis the destination has (``plan._check_axes``
refused a source axis the destination lacks before this check), the reference's derivation has nothing to find
missing; the check is skipped.  Anything else (a tile's partial digits, a combination, a skewed or composite
atom, an axis split with gaps or replicated) runs the reference's derivation.
"""

from __future__ import annotations

from collections.abc import Sequence

from visa import fastpaths
from visa.engines.dma.config import Side
from visa.mapping import canon as C
from visa.mapping import pair_of
from visa.mapping.evaluate import covers_once

__all__ = ["HOLDS", "every_index"]

HOLDS = fastpaths.register("dma.holds-every-index", "a DMA plan's check that the destination holds every index of "
                           "the source skipped when the destination's digits hold every index of each of its axes "
                           "(a complete mixed radix) and the source streams plain axes only")


def every_index(src_dims: Sequence[C.Dim], dst: Side) -> bool:
    """Whether ``dst`` holds every index of each of its axes and every digit of ``src_dims`` (the source's stream
    digits, ``plan._stream_dims``) is of one of them (see the module)."""
    digits: list[tuple[str, int, int]] = []
    sizes: dict[str, int] = {}
    for d in pair_of(*(mp for _, mp in dst.levels)).canon:
        if not isinstance(d, C.Dim):
            return False
        if d.atom is None or (d.count <= 1 and isinstance(d.atom, C.Sym)):  # padding, or one index of an axis
            continue
        if not isinstance(d.atom, C.Sym) or sizes.setdefault(d.atom.name, d.atom.size) != d.atom.size:
            return False
        digits.append((d.atom.name, d.stride, d.count))
    return covers_once(tuple(digits), sizes) and all(
        isinstance(d, C.Dim) and isinstance(d.atom, C.Sym) and sizes.get(d.atom.name) == d.atom.size
        for d in src_dims)
