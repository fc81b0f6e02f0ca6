"""Fast path ``parallel_copy.replicas`` (issue 24), beside :mod:`visa.engines.parallel_copy`: an asymmetric slice
remembers which slices of its result hold the same bytes, so that what reads the result reads one slice of each
class.

A ParallelCopy copies, in every slice of cluster ``k``, the source's elements ``source[j]`` (``j`` the entry that
cluster keeps, L7603–7606) into the result.  Two slices whose source bytes are known replicas
(:mod:`visa.memory.replicas`: the inter-slice reduce's result broadcast over the 32 slices of its group, committed
as :class:`~visa.engines.shared.SharedRows`) and that keep the same entry ``j`` receive the same bytes: the result's
bytes are recorded as replicas with those classes (:meth:`~visa.memory.images.DenseImage.record_replicas`, which
records them only where the result is all written).  The reference ``execute`` records nothing; the copied bytes
are the same either way, and a reader that knows the classes (``fetch.shared-rows``) reads the same stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from visa import fastpaths
from visa.memory.fast_replica_sources import check_classes
from visa.memory.images import DenseImage
from visa.memory.replicas import verifying

if TYPE_CHECKING:
    from visa.engines.parallel_copy import SliceConfig

__all__ = ["REPLICAS", "record"]

REPLICAS = fastpaths.register("parallel_copy.replicas", "an asymmetric slice records the slices of its result "
                                                        "that received replicated bytes as replicas")


def record(cfg: SliceConfig, src: DenseImage, dst: DenseImage, chip: int, src_address: int,
           dst_address: int) -> None:
    """After the copy of one chip's share: record the result's replicas (module docstring)."""
    if not cfg.source.size:
        return
    nb = cfg.dtype.size_bits // 8
    lead = src.lead_shape
    units = np.arange(int(np.prod(lead)), dtype=np.int64)
    s_lo = src_address + int(cfg.source.min()) * nb
    s_hi = src_address + (int(cfg.source.max()) + 1) * nb
    labels = src.replica_labels(units, s_lo, s_hi)
    if labels is None or not bool((labels >= 0).any()):
        return
    entries = np.array([cfg.indices[chip] if cfg.level == "Chip" else cfg.indices[min(k, len(cfg.indices) - 1)]
                        for k in range(lead[0])], dtype=np.int64)
    j = np.repeat(entries, units.size // lead[0])
    labels = labels.astype(np.int64)
    keys = np.where(labels >= 0, labels * (int(entries.max()) + 1) + j, -1 - units)  # (no label: a class alone)
    hi = dst_address + cfg.source.shape[1] * nb
    dst.record_replicas(units, keys, dst_address, hi)
    if verifying():
        check_classes(dst, units, keys, dst_address, hi)
