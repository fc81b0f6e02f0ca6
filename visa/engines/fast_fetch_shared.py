"""Fast path ``fetch.shared-rows`` (issue 24), beside :mod:`visa.engines.fetch`, whose reference ``execute`` it
stands for: a fetch of slices known to hold the same bytes reads one slice of each class.

The DM image remembers which slices were written with the same known bytes (:mod:`visa.memory.replicas`: a
broadcast DMA, a register load of replicated slices, a commit of :class:`~visa.engines.shared.SharedRows`).  A
fetch whose every slice holds data, whose sequencer is one loop nest over the tensors' bytes (an interleaved pair
too), with no masking, table or zero points (L1870), reads the same stream from every slice of a class: it reads
one slice per class, widened on the way when its only adapter stage is a widening cast (``fetch.widen-read``'s
read, :func:`visa.memory.images.load_nest_widened`), and gives :class:`~visa.engines.shared.SharedRows`.  The
tensors' bytes must be known replicas element by element (their labels over each tensor's whole Element), every
one written (replica ids are given to written pages only).  A sequencer that repeats whole packets along Time is
left to ``fetch.repeat``, which reads each packet once in every slice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import StreamData
from visa.engines.fast_widen import widened_type
from visa.engines.fetch import FetchConfig, _static
from visa.engines.shared import SharedRows
from visa.memory.images import DenseImage, load_nest_values, load_nest_widened, nest_all_written
from visa.memory.known import known_everywhere
from visa.memory.replicas import combine
from visa.memory.units import enabled_units

__all__ = ["SHARED", "execute"]

SHARED = fastpaths.register("fetch.shared-rows", "a fetch of slices known to be replicas reads one slice of each "
                                                 "class (SharedRows) instead of every slice")

IntArray = npt.NDArray[np.int64]


def _classes(cfg: FetchConfig, img: DenseImage, units: IntArray, bases: IntArray) -> IntArray | None:
    """A class per unit (0, 1, …): units of one class hold the same bytes in every tensor the fetch reads (its
    whole Element); None when some unit is in no class, or fewer than half of the units repeat another."""
    nb = cfg.src.image_bits // 8
    parts = []
    for b in bases.tolist():
        lo = int(b) // 8
        labels = img.replica_labels(units, lo, lo + cfg.element.size * nb)
        if labels is None or not bool((labels >= 0).all()):
            return None
        parts.append(labels)
    cls = parts[0] if len(parts) == 1 else combine(*parts)
    if not bool((cls >= 0).all()):
        return None
    _, inverse = np.unique(cls, return_inverse=True)
    out: IntArray = inverse.reshape(-1).astype(np.int64)
    return out if 2 * (int(out.max()) + 1) <= units.size else None


def execute(cfg: FetchConfig, images: Sequence[DenseImage], bit_bases: Sequence[int]) -> SharedRows | None:
    """The fetch as :class:`~visa.engines.shared.SharedRows` (module docstring), or None (another path runs)."""
    if not all(img.knows_replicas for img in images):
        return None  # (no replica labels in some chip's image: _classes would refuse it, after the checks below)
    from visa.engines.fetch_fast import REPEAT, _nest, _repeat  # (that module imports this one)

    if REPEAT.on and _repeat(cfg) is not None:
        return None  # (a sequencer repeating whole packets along Time: fetch.repeat reads each packet once)
    if cfg.table is not None or cfg.mask is not None or cfg.zero_points or cfg.src.image_bits % 8:
        return None
    widen = widened_type(cfg)
    if cfg.cast is not None and widen is None:
        return None
    _, _, valid, _, _, lv = _static(cfg)
    if not bool(lv.all()) or not bool(valid.all()):
        return None
    bases = np.asarray(list(bit_bases), dtype=np.int64)
    if bool((bases % 8).any()):
        return None
    nest = _nest(cfg, bases, cfg.sequencer.entries)
    if nest is None:
        return None
    per = lv[0].size
    owner = np.empty(len(images) * per, dtype=np.int64)
    reads = []
    rows = 0
    for c, img in enumerate(images):
        units = np.arange(per, dtype=np.int64)
        cls = _classes(cfg, img, units, bases)
        if cls is None:
            return None
        _, first = np.unique(cls, return_index=True)
        reps = np.sort(first)
        enabled = np.zeros(img.lead_shape, dtype=bool)
        enabled.reshape(-1)[reps] = True
        chosen = enabled_units(img, enabled)
        if not nest_all_written(cfg.src, chosen, nest[0], nest[1]):
            return None
        rank = np.empty(per, dtype=np.int64)
        rank[reps] = np.arange(reps.size, dtype=np.int64)
        owner[c * per: (c + 1) * per] = rows + rank[first[cls]]  # each unit: its class's row
        reads.append((chosen, reps.size))
        rows += reps.size
    storage = np.dtype((widen or cfg.dst).storage if cfg.cast is not None else cfg.src.storage)
    n_t, n_p = cfg.time.size, cfg.packet.size
    values = np.empty((rows, n_t * n_p), dtype=storage)
    at = 0
    for chosen, count in reads:
        read = load_nest_values if storage == np.dtype(cfg.src.storage) else load_nest_widened
        if not read(cfg.src, chosen, nest[0], nest[1], values[at: at + count]):
            return None
        at += count
    values = values.astype(cfg.dst.storage, copy=False)
    inner_shape = (1, 1, rows, n_t, n_p)
    inner = StreamData(values.reshape(inner_shape), known_everywhere(inner_shape))
    return SharedRows(inner, owner, (len(images), cfg.cluster.size, cfg.slice.size))
