"""Fast path ``mapping.validity-memo`` (issue 24): which positions of a mapping hold an index, computed once per
mapping, not evaluated again at every pass.

A stream's or a tensor's Chip, Cluster and Slice mappings say which units it occupies (their padding positions
hold no index, L616–620, L2314–2319); every fetch, commit and register load asks it (the slice bitmap, the bytes a
fetch moves), and :meth:`visa.mapping.Mapping.evaluate` decodes every position each time (about 12 µs for a
256-slice mapping, several times a pass).  The answer depends on the mapping alone: here it is kept per mapping's
exact key (:attr:`~visa.mapping.Mapping.key`, never the manual's equivalence, L1017–1028), a read-only array.
With the path off, each call evaluates the mapping afresh (the reference).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.mapping.core import Mapping

__all__ = ["VALIDITY", "validity_of"]

VALIDITY = fastpaths.register("mapping.validity-memo", "a mapping's validity (the positions holding an index) kept "
                                                       "per mapping's exact key, read-only, not evaluated at every "
                                                       "pass")

_LIMIT = 4096  # mappings remembered (a few KiB each at most: one bool per position of a level mapping)
_MEMO: dict[Hashable, npt.NDArray[np.bool_]] = {}


def validity_of(mapping: Mapping) -> npt.NDArray[np.bool_]:
    """``mapping.evaluate().valid`` as a bool array (read-only with the path on: a shared answer)."""
    if not VALIDITY.on:
        return np.asarray(mapping.evaluate().valid, dtype=bool)
    key = mapping.key
    got = _MEMO.get(key)
    if got is None:
        got = np.array(mapping.evaluate().valid, dtype=bool)
        got.flags.writeable = False
        if len(_MEMO) >= _LIMIT:
            _MEMO.clear()
        _MEMO[key] = got
    return got
