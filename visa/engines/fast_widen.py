"""Fast path ``fetch.widen-read`` (issue 24): a fetch whose only adapter stage is a widening integer cast (i8 →
i9 / i32, i16 → i32: L1960–2021) reads its elements from DM straight into the wider type.

The reference reads the elements in their own storage (:func:`visa.engines.fetch.read`) and then converts them
(:func:`visa.dtypes.convert`, in :func:`visa.engines.fetch.adapt`): every value of the narrower type is a value
of the wider one, so the conversion is a sign extension, and poison (0) stays 0.  This path reads the DM bytes
once, as signed words copied into the wider type (:func:`visa.memory.images.load_nest_widened`), into the pooled
stream buffer (:mod:`visa.memory.rowpool`) — no copy in the narrower type, no fresh buffer for the converted one.
"""

from __future__ import annotations

import numpy as np

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.fetch import FetchConfig

__all__ = ["WIDEN", "widened_type"]

WIDEN = fastpaths.register("fetch.widen-read", "a fetch whose only adapter stage is a widening integer cast reads "
                           "the DM words sign-extended into the wider type, without a copy in the narrower one")


def widened_type(cfg: FetchConfig) -> type[dt.Scalar] | None:
    """``cfg.dst`` when the fetch's only adapter stage is a cast that widens one integer type filling its
    storage (i8, i16, i32) into a wider storage holding every value of it; else None."""
    if not WIDEN.on or cfg.cast is None or cfg.table is not None or cfg.mask is not None or cfg.zero_points:
        return None
    src, dst = cfg.src, cfg.dst
    if src.kind != "int" or dst.kind != "int":
        return None
    s, d = np.dtype(src.storage), np.dtype(dst.storage)
    if s.kind != "i" or d.kind != "i" or src.image_bits != 8 * s.itemsize or d.itemsize <= s.itemsize:
        return None
    if not (int(dst.min) <= int(src.min) and int(src.max) <= int(dst.max)):
        return None
    return dst
