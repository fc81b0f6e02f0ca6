"""Fast path ``fetch.padded-known`` (issue 24): a fetch whose stream is padded (``C % 4 # 8``: lanes the stream
holds no element at, manual L1094–1151) but whose every other position was written is read as one strided copy,
its padded lanes then zeroed, its known-mask a broadcast of the stream's validity.

The reference (:func:`visa.engines.fetch.read`) reads every position's value and known-mask (the written-state of
each word's bytes), then makes the padding poison: value 0, not known.  When the padding is one loop of the
sequencer's nest cut to a range (the padded lanes of ``X # 8`` are indices 4–7 of the innermost loop, for every
index of the others) and every element of the nest so cut was written in every slice that holds data
(:func:`visa.memory.images.nest_elements_written`), the stream is known exactly where it is valid: the values
are the bytes the nest reads, 0 at the padding (written by one strided assignment,
:func:`visa.engines.fast_masked.fill`), and the known-mask is the validity broadcast over the slices that hold
data (no bool per position read or computed).  The row max of ``benchmarks/bench_first_launch.py`` spent most of
its fetch asking the page masks for every padded word's bytes and then blanking them.

``fetch.padded-cut-read``: into a new pooled buffer (all zeros, :class:`~visa.memory.rowpool.Loan`'s ``zeroed``)
the nest cut to its unpadded lanes is read straight into those lanes (:func:`~visa.memory.images.load_nest_view`,
a strided view of the buffer): the padded lanes hold the zeros they were given, so they are neither read (the
bytes past each packet's elements, which the zeroing then overwrote) nor zeroed — half the bytes read, no pass
over the padding, the same stream.  A buffer handed out again (its rows hold the last stream's values) is read and
zeroed as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.fast_masked import Cut, written_cut
from visa.memory.images import DenseImage

__all__ = ["PADDED", "CUT_READ", "padded_cut", "known_of", "cut_view"]

PADDED = fastpaths.register("fetch.padded-known", "a padded fetch whose other positions were all written is read in "
                            "one strided copy, its padding zeroed by one assignment, its known-mask the validity "
                            "as a broadcast")

CUT_READ = fastpaths.register("fetch.padded-cut-read", "a padded fetch read into a new (zeroed) pooled buffer reads "
                              "only its unpadded lanes, in place, instead of every lane then zeroing the padding")

BoolArray = npt.NDArray[np.bool_]


def cut_view(rows: npt.NDArray[Any], cut: Cut) -> npt.NDArray[Any]:
    """The unmasked positions of ``rows`` (stream rows, each the nest's positions in C order) as a strided view
    ``(rows, *cut sizes)``: the cut loop's indices ``lo`` to ``hi``."""
    view = rows.reshape(rows.shape[0], *cut.sizes)
    return view[(slice(None),) * (1 + cut.loop) + (slice(cut.lo, cut.hi),)]


def padded_cut(src: type[dt.Scalar], images: Sequence[DenseImage], lv: BoolArray,
               nest: tuple[int, tuple[tuple[int, int], ...]] | None, valid: BoolArray) -> Cut | None:
    """The stream's padding (``~valid``, one bool per stream position in the nest's C order) as a :class:`Cut`
    of the nest, when every element of the nest so cut was written in every slice that holds data (``lv``);
    else None (the path is off, nothing is padded, the padding is no cut of one loop, or an element is not
    known to be written)."""
    if not PADDED.on or nest is None or bool(valid.all()):
        return None
    return written_cut(src, images, lv, nest, ~valid)


def known_of(valid: BoolArray, lv: BoolArray, shape: tuple[int, ...]) -> BoolArray:
    """The known-mask ``shape`` (``(Chip, Cluster, Slice, Time · Packet)``) of a padded stream read whole: the
    validity where a slice holds data, poison (False) elsewhere; a read-only broadcast when every slice does."""
    if bool(lv.all()):
        return np.broadcast_to(valid, shape)
    return np.broadcast_to(lv.reshape(*shape[:-1], 1), shape) & valid
