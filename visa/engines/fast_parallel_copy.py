"""Fast path of ParallelCopy (issue 24), beside :mod:`visa.engines.parallel_copy`, whose reference ``execute`` it
stands for; ``tests/engines/test_fast_parallel_copy.py`` checks it against the reference with the path off.

``parallel_copy.strided``: the reference moves every byte of every slice through an index array (the source
position of each destination element, ``cfg.source``, times the element's bytes).  The positions an asymmetric
slice keeps are an arithmetic pattern — the entries ``(outer, j, inner)`` of the split Element for a fixed ``j``
— so the source is a strided view of each slice's bytes and the destination a contiguous run: one strided copy
per cluster (chip), for the bytes and, when the source is not all written, for the written-mask.  The memory
images are asked for the source's and the result's ranges only (:meth:`~visa.memory.images.DenseImage.flat_range`:
what is pending elsewhere stays pending), and mark the same ranges written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines import affine
from visa.engines.cache import per_object
from visa.memory.images import DenseImage

if TYPE_CHECKING:
    from visa.engines.parallel_copy import SliceConfig

__all__ = ["STRIDED", "execute"]

STRIDED = fastpaths.register("parallel_copy.strided", "ParallelCopy as one strided copy per cluster (chip) instead "
                                                      "of a byte index gather and scatter")

@per_object(128)
def _factors(cfg: SliceConfig) -> affine.Factors | None:
    """The source positions of every entry of the digit as one mixed radix (cached per configuration, under the
    plan budget: :func:`~visa.engines.cache.per_object`)."""
    return affine.factor(cfg.source) if cfg.source.size else None


def _bytes(rows: npt.NDArray[Any], at: int, sizes: tuple[int, ...], strides: tuple[int, ...], nb: int
           ) -> npt.NDArray[Any]:
    """``(slices, sizes…, nb)`` bytes of the 2-D ``rows`` (a slice a row): element ``p`` of every row at byte
    ``at + Σ p_d · strides_d · nb``."""
    return np.lib.stride_tricks.as_strided(rows[:, at:], shape=(rows.shape[0], *sizes, nb),
                                           strides=(rows.strides[0], *(s * nb for s in strides), 1))


def execute(cfg: SliceConfig, src: DenseImage, dst: DenseImage, chip: int, src_address: int, dst_address: int
            ) -> bool:
    """The reference's copy by strided views; False (nothing done) when the positions are not affine."""
    f = _factors(cfg)
    if f is None:
        return False
    sizes, strides, bases = f
    nb = cfg.dtype.size_bits // 8
    lead = src.lead_shape
    nbytes = src.nbytes
    real = cfg.source.shape[1]
    lo, hi = dst_address, dst_address + real * nb
    s_lo = src_address + int(cfg.source.min()) * nb
    s_hi = src_address + (int(cfg.source.max()) + 1) * nb
    # (what is pending in DM elsewhere stays pending: the source's range made, the destination's made and touched)
    sv = src.flat_range(s_lo, s_hi, write=False).reshape(*lead, nbytes)
    dv = dst.flat_range(lo, hi).reshape(*lead, nbytes)
    dense_strides = tuple(int(np.prod(sizes[d + 1:])) for d in range(len(sizes)))  # the destination: in order

    def entry(k: int) -> int:
        return cfg.indices[chip] if cfg.level == "Chip" else cfg.indices[min(k, len(cfg.indices) - 1)]

    for k in range(lead[0]):
        j = entry(k)
        out = _bytes(dv[k].reshape(-1, nbytes), dst_address, sizes, dense_strides, nb)
        out[...] = _bytes(sv[k].reshape(-1, nbytes), src_address + bases[j] * nb, sizes, strides[j], nb)
    if src.all_written(s_lo, s_hi):
        dst.mark_written(slice(None), lo, hi)
        return True
    sk = src.known_bytes(s_lo, s_hi)
    dk = dst.mask_for_write(slice(None), lo, hi).reshape(*lead, nbytes)
    known_rows = sk.reshape(*lead, s_hi - s_lo)
    for k in range(lead[0]):
        j = entry(k)
        out = _bytes(dk[k].reshape(-1, nbytes), dst_address, sizes, dense_strides, nb)
        out[...] = _bytes(known_rows[k].reshape(-1, s_hi - s_lo), src_address - s_lo + bases[j] * nb, sizes,
                          strides[j], nb)
    return True
