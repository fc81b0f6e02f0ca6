"""Fast paths ``memory.settle-samples`` and ``dma.mask-touched-pages`` (issue 24), beside
:mod:`visa.memory.pages` and :mod:`visa.memory.transfer`, whose written-masks they serve.

``memory.settle-samples`` (:meth:`~visa.memory.pages.PageMask.settle_range`, and :meth:`~visa.memory.pages.
PageMask.settle` for the edge pages a mark cuts): which ``MIXED`` pages are wholly
written or wholly poison, found by reading a few of each page's mask bytes first and the whole page only when
those agree.

The reference reads every byte of every ``MIXED`` page in the range (``all`` and ``any`` over it).  A kernel that
writes a narrow column tile into each row of a wide result (the peer matmul's 1024 × 64 tiles into rows of
16 KiB) leaves a page per row ``MIXED`` until its last tile, and reads 4 MiB of mask a tile to find that none is
whole yet.  A page whose sampled bytes hold both a written and an unwritten one is neither whole nor empty, so it
stays ``MIXED`` without being read; the others are read whole, as the reference does — the same pages settle
(``tests/memory/test_fast_settle.py``).

``dma.mask-touched-pages`` (:func:`visa.memory.transfer.copy` into HBM, a strided write of known bytes): the
reference makes every page of the range the DMA spans ``MIXED`` (:meth:`~visa.memory.pages.PageMask.materialise`),
writes the mask bytes it wrote and settles the range; the pages it did not touch go back to what they were (an
``ALL`` page whole again, a ``NONE`` page empty again) after a read of each.  Here only the pages the write's runs
touch are made ``MIXED`` (:func:`touched_pages`): the others keep their state unread, the same state the
reference's settle gives them back.

``memory.edge-pages-unsettled`` (:meth:`~visa.memory.pages.PageMask.all_known`): a query whose range covers no page
whole (every page it touches is cut by one of its ends: a 128-byte partial sum in each slice's 4 KiB page) is
answered by the mask bytes of its ``MIXED`` pages over the range alone, which the reference reads after settling
the range's pages; settling changes no answer (a page settles only to the state its mask bytes already say), and
the pages such a query touches are the ones a narrow write left ``MIXED`` and that stay so.  The reference settles
first (a sample of every such page of every slice, then the same mask read): most of a fetch of two partial sums
of a streamed GEMV (issue 24).  The answer is the same (``tests/memory/test_fast_settle.py``); only whether those
pages are settled now or at a later query differs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["SAMPLES", "TOUCHED", "EDGES", "classify", "touched_pages"]

SAMPLES = fastpaths.register("memory.settle-samples", "a MIXED page with a written and an unwritten byte among a "
                                                      "few sampled stays MIXED unread; only the others are read "
                                                      "whole to settle them")

TOUCHED = fastpaths.register("dma.mask-touched-pages", "a strided DMA write into HBM makes MIXED only the pages its "
                                                       "runs touch, not every page of the range it spans")

EDGES = fastpaths.register("memory.edge-pages-unsettled", "whether a range that covers no page whole was written is "
                                                        "read from the mask of its MIXED pages without settling "
                                                        "them first")

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

_SAMPLED = 64  # mask bytes sampled a page


def classify(blocks: BoolArray, units: npt.NDArray[np.int64], pages: npt.NDArray[np.int64]
             ) -> tuple[BoolArray, BoolArray]:
    """``(whole, empty)`` of the pages ``pages`` of units ``units`` of ``blocks`` (the mask as ``(units, pages,
    page)``): whether every byte of each is written, and whether none is (the reference's ``all`` and ``not
    any`` over the page)."""
    step = max(1, blocks.shape[2] // _SAMPLED)
    sample = blocks[units, pages, ::step]
    whole: BoolArray = np.asarray(sample.all(axis=1))
    empty: BoolArray = ~np.asarray(sample.any(axis=1))
    maybe = np.flatnonzero(whole | empty)
    if maybe.size:
        block = blocks[units[maybe], pages[maybe]]
        whole[maybe] &= block.all(axis=1)
        empty[maybe] &= ~block.any(axis=1)
    return whole, empty


def touched_pages(page: int, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> IntArray | None:
    """The pages (of ``page`` bytes, sorted, each once) a byte view at ``offset`` of ``shape`` and ``strides``
    touches, when its innermost loop is a run of contiguous bytes (at most a page) and no stride is negative; else
    None."""
    if not shape or strides[-1] != 1 or shape[-1] > page or min(strides) < 0 or 0 in shape:
        return None
    grid: npt.NDArray[np.int64] = np.full((), offset, dtype=np.int64)
    for n, s in zip(shape[:-1], strides[:-1], strict=True):
        grid = grid[..., None] + np.arange(n, dtype=np.int64) * s
    starts = grid.reshape(-1)
    out: IntArray = np.unique(np.concatenate([starts // page, (starts + shape[-1] - 1) // page]))
    return out
