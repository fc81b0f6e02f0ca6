"""Fast path ``memory.written-memo`` (issue 24): whether every element of a loop nest was written is remembered for
the image's state, and not read again from the byte mask while the image does not change.

The reference (:func:`visa.memory.images.nest_elements_written`) answers from the pages when they are all written,
and otherwise reads the byte mask over the nest: a masked fetch of a tensor whose padded lane was never written
(``fetch.masked-known``, a ``W # 8`` lane) reads 16 MiB of mask, strided, on every fetch — more than the fetch's
own copy of the values.  A kernel fetches the same weights again and again with nothing written over them between.

Every change of a :class:`~visa.memory.images.DenseImage`'s bytes or written-state reaches ``_forget``, which
gives the image a new stamp (:data:`visa.memory.images.STAMPS`, never reused), so an answer keyed by the stamp,
the units asked and the nest holds exactly as long as that state.  Only an image that owns its memory is
remembered (a flat view of another image, :meth:`~visa.memory.images.DenseImage.flat_image`, or a small image
allocated by numpy is asked each time), and never one that handed its arrays out (``data``, ``written``: a write
through them reaches no stamp).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from visa import dtypes as dt
from visa import fastpaths
from visa.memory.images import DenseImage, Image, nest_elements_written
from visa.memory.units import UnitSelection

__all__ = ["MEMO", "elements_written", "LIMIT", "stamp_of"]

MEMO = fastpaths.register("memory.written-memo", "whether every element of a loop nest was written is remembered "
                          "for the image's state (its stamp), not read again from the mask until the image changes")

#: Answers kept (the oldest go first).
LIMIT = 256

_ANSWERS: dict[tuple[Any, ...], bool] = {}


def _key(image: Image) -> tuple[int, Any] | None:
    """The stamp of the image's state and the units asked, or None when the answer is not to be remembered."""
    units = image if isinstance(image, UnitSelection) else None
    base = units.base if units is not None else image
    if type(base) is not DenseImage or base._handed or base._leases[0] is None:  # noqa: SLF001 (the image's own)
        return None
    if units is None:
        return base._stamp, None  # noqa: SLF001
    which = (tuple((s.start, s.stop) for s in units.box) if units.box is not None
             else units.units.tobytes())
    return base._stamp, which  # noqa: SLF001


def stamp_of(image: Image) -> int | None:
    """The stamp naming ``image``'s bytes and written-state now (:data:`visa.memory.images.STAMPS`), for an answer
    about them to be remembered by; None when none may be: not an image owning its memory, its arrays handed out,
    or pending copies (whose making changes bytes without a new stamp)."""
    if type(image) is not DenseImage or image._handed or image._leases[0] is None or image._pending.copies:  # noqa: SLF001
        return None
    return image._stamp  # noqa: SLF001


def elements_written(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]]) -> bool:
    """:func:`visa.memory.images.nest_elements_written`, the answer remembered for the image's state (module
    docstring)."""
    key = _key(image) if MEMO.on else None
    if key is None:
        return nest_elements_written(dtype, image, bit_base, loops)
    full = (*key, dtype, bit_base, tuple((int(n), int(s)) for n, s in loops))
    got = _ANSWERS.get(full)
    if got is None:
        got = nest_elements_written(dtype, image, bit_base, loops)
        if len(_ANSWERS) >= LIMIT:
            del _ANSWERS[next(iter(_ANSWERS))]
        _ANSWERS[full] = got
    return got
