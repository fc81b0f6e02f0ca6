"""Fast path ``memory.region-slack`` (issue 24): a sparse HBM region grown by an access next to it is grown by
its own size at once.

The reference (:meth:`visa.memory.images.PagedImage.span`) makes a region exactly the bytes asked: an access that
reaches a little past a region allocates the merged range and copies the region into it.  A kernel that writes
an output tile by tile (rows of a wide matrix, a few columns at a time: each tile's rows reach a few bytes past
the last) then copies its whole band of rows for every tile.  Grown by its own size (at most
:data:`MAX_SLACK`) in the direction it grows, a region is copied a logarithmic number of times.  The bytes of the
slack are unwritten, as bytes outside every region are: they read back as poison, so nothing a kernel can
observe changes (the regions' extents reported are the bytes asked, :meth:`~visa.memory.images.PagedImage.regions`).
"""

from __future__ import annotations

#: The most bytes a region grows by beyond what is asked (the slack is mapped lazily: untouched, it takes no
#: memory; this bounds its address range).
MAX_SLACK = 1 << 26


def grown(lo: int, hi: int, old_lo: int, old_hi: int, floor: int, ceiling: int) -> tuple[int, int]:
    """The bytes to allocate for ``[lo, hi)`` (the merged range asked) replacing regions that spanned
    ``[old_lo, old_hi)``: extended by the merged size (at most :data:`MAX_SLACK`) past the side it grows at, but
    not below ``floor`` or from ``ceiling`` on (the neighbouring regions' ends, the image's ends).

    >>> grown(0, 1100, 0, 1000, 0, 1 << 30)
    (0, 2200)
    >>> grown(900, 2000, 1000, 2000, 512, 1 << 30)
    (512, 2000)
    """
    extra = min(hi - lo, MAX_SLACK)
    if hi > old_hi:
        return lo, min(hi + extra, ceiling)
    if lo < old_lo:
        return max(lo - extra, floor), hi
    return lo, hi
