"""Fast path ``dma.split-regions`` (issue 24): a DMA that reads HBM bytes lying in several sparse regions is run
region by region instead of merging the regions first.

The reference (:func:`visa.memory.transfer.copy`) asks the source for one flat array holding every byte it
reads; on HBM that merges the regions the range overlaps into a new one (:meth:`~visa.memory.images.PagedImage.span`:
allocate, copy each region in).  A weight uploaded in pieces (one host → HBM DMA per chunk, each its own region,
shared with the host buffer) and read back tile by tile then costs a copy of every tile before the DMA copies
it again (the Llama 70B decode layer: 1.7 GB merged during the launch, 300 merges).  The copy is split along
its loop of the largest source stride at the regions' boundaries into DMAs of the same other loops over
consecutive iterations of it (an iteration that still spans regions alone, split again along the next loop),
down to copies that each read one region:
the same bytes are read and written (the destination is another medium, so no piece reads what another wrote),
the written-state travels with them as in the reference, and the regions stay as they were (still shared with
the host buffers; the bytes asked, :meth:`~visa.memory.images.PagedImage.regions`, are the same).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

__all__ = ["pieces"]


def pieces(n0: int, step: int, first: tuple[int, int], regions: Sequence[tuple[int, int]]
           ) -> list[tuple[int, int]] | None:
    """A loop's iterations ``[i0, i1)`` grouped by the region they read: consecutive iterations inside one region
    together, an iteration reading bytes of several regions (or of none) alone (split further along another
    loop); None when that leaves one group (nothing to split).

    ``n0`` iterations, each reading image bytes ``[first[0] + i·step, first[1] + i·step)`` (``step`` > 0);
    ``regions`` the ``[start, end)`` of the regions overlapping the whole range, ascending and disjoint.

    >>> pieces(4, 10, (0, 10), [(0, 20), (20, 40)])
    [(0, 2), (2, 4)]
    >>> pieces(4, 10, (0, 15), [(0, 20), (20, 45)])  # iteration 1 reads bytes 10..25, of both regions
    [(0, 1), (1, 2), (2, 4)]
    >>> pieces(2, 10, (0, 10), [(0, 20)]) is None  # one region: nothing to split
    True
    """
    if step <= 0 or n0 < 2:
        return None
    starts = [s for s, _ in regions]
    out: list[tuple[int, int]] = []
    i = 0
    while i < n0:
        lo, hi = first[0] + i * step, first[1] + i * step
        k = bisect.bisect_right(starts, lo) - 1
        if k >= 0 and hi <= regions[k][1]:
            j = min(n0, (regions[k][1] - first[1]) // step + 1)  # past the last iteration ending inside region k
        else:
            j = i + 1
        out.append((i, j))
        i = j
    return out if len(out) > 1 else None
