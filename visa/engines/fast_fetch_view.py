"""Fast path ``fetch.view-memo`` (issue 24): a fetch left a view of the DM bytes (``fetch.dm-read``,
``fetch.zero-point-read``) finds that view — and that every byte it reads was written — once per state of the DM
image, not again at every fetch while nothing changes the image.

Deciding the view asks the image whether every byte the sequencer's loop nest spans was written (the pages of
every enabled slice, :func:`visa.memory.images.nest_all_written`) and builds the strided view of its bytes
(:func:`visa.memory.nest_view.nest_view`): a few dozen small numpy calls, about 100 µs a fetch — as long as
numpy's whole copy of a 4 MiB operand.  Both answers depend on the fetch's configuration, its base addresses and
the image's bytes and written-state alone; every change of those gives the image a new stamp
(:func:`visa.memory.fast_written.stamp_of`, never reused), so the view (read-only, of the live bytes) is kept per
``(stamp, configuration, bases)``: a kernel reading the same weights again and again with nothing written into
that DM image between finds it at once.  An image with pending copies or whose arrays were handed out is asked
every time.  With the path off, every fetch derives it afresh (the reference's view; the values are the same).

For the same reason a zero-point fetch (``fetch.zero-point-read``) that stayed in the target's range over one state
of the bytes stays in it over that state again: it is remembered with the view, and the next such fetch does not
look at its result's extremes (a second pass over the stream, half of numpy's whole subtraction).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.cache import exact_key
from visa.memory.fast_written import stamp_of

__all__ = ["VIEW_MEMO", "remembered_view", "in_range", "note_in_range", "LIMIT"]

VIEW_MEMO = fastpaths.register("fetch.view-memo", "a fetch's view of the DM bytes (fetch.dm-read, "
                               "fetch.zero-point-read) and whether all it reads was written kept for the DM image's "
                               "state (its stamp), not derived again until the image changes")

#: Views kept per image state (the oldest go first).
LIMIT = 16

#: Per live DM image, the stamp its views are for and the views (at most :data:`LIMIT`).  Keyed weakly by the image:
#: a view holds its image's bytes, so an entry lives no longer than its image (issue 25: one list of 16 views kept
#: the bytes of the DM images of dead contexts alive, and their mapped buffers out of ``memory.arena``'s reuse);
#: and only the image's current state's views are kept (a stamp is never reused: an older state's views are dead).
#: The views share the bytes of live images: the memo holds no bytes of its own.
_VIEWS: weakref.WeakKeyDictionary[Any, tuple[int, dict[Hashable, npt.NDArray[Any] | None]]] = \
    weakref.WeakKeyDictionary()


def remembered_view(cfg: Any, images: Sequence[Any], bases: npt.NDArray[np.int64], zero_points: bool,
                    derive: Callable[[], npt.NDArray[Any] | None]) -> tuple[npt.NDArray[Any] | None, Hashable | None]:
    """``derive()`` (the fetch's view of the DM bytes, or None), kept for the one image's state (module
    docstring); and the key it is kept under (None when it is not), for :func:`in_range` and :func:`note_in_range`."""
    image = images[0]
    stamp = stamp_of(image) if VIEW_MEMO.on and len(images) == 1 else None
    if stamp is None:
        return derive(), None
    rest = (exact_key(cfg), tuple(bases.tolist()), zero_points)
    kept = _VIEWS.get(image)
    if kept is not None and kept[0] == stamp and rest in kept[1]:
        return kept[1][rest], (stamp, *rest)
    got = derive()
    after = stamp_of(image)  # (deriving changes no byte; asked again all the same)
    if after is None:
        return got, None
    views = kept[1] if kept is not None and kept[0] == after else {}
    if len(views) >= LIMIT:
        del views[next(iter(views))]
    views[rest] = got
    _VIEWS[image] = (after, views)
    return got, (after, *rest)


def in_range(key: Hashable | None) -> bool:
    """Did the zero-point subtraction of the fetch kept under ``key`` (its configuration, with its zero points, over
    that state of the bytes) stay in the target's range?  (Then it does again: the same bytes, the same
    differences — ``fetch.zero-point-read`` need not look at the result's extremes.)"""
    return key is not None and key in _IN_RANGE


def note_in_range(key: Hashable | None) -> None:
    """The zero-point subtraction of the fetch kept under ``key`` stayed in range (:func:`in_range`)."""
    if key is not None:
        if len(_IN_RANGE) >= LIMIT:
            del _IN_RANGE[next(iter(_IN_RANGE))]
        _IN_RANGE[key] = None


_IN_RANGE: dict[Hashable, None] = {}  # (an ordered set)
