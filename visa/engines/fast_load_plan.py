"""Fast path ``collect.load-plan`` (issue 24): a register load (``to_vrf``, ``to_trf``) of known elements replays
its placement decisions, kept per (configuration, register file image, bit base, slice mask, values' layout),
instead of making them again at every pass.

The reference load (:func:`visa.engines.collect.execute_load`, manual L4049–4061, L5063–5081) finds, for each chip,
the slices the stream holds (L2314–2319) and their range, the enabled mask over the register file's units, their
:class:`~visa.memory.units.UnitSelection` and box, then asks :func:`visa.memory.images.store_nest` to write the
flattened stream — which finds the byte nest, checks it, widens it into words and views the image's words: a
hundred small numpy and Python steps around one strided copy, about as long as the copy of an 8 KiB-a-slice VRF load
(the ``fetch → collect → to_vrf`` row of ``benchmarks/bench_engines.py``).  Every one of those decisions depends
on the configuration, the image's shape, the bit base, the slice mask and the values' shape, strides and type alone;
so for a stream whose elements are all known and carry no replica labels (a plain :class:`StreamData`, or a
``fetch.dm-read`` view of the DM bytes), they are made once and kept per image (weakly: an entry goes with its
image), as :class:`visa.memory.nest_store.NestStore` plans, and a later load with the same key runs them: the same
calls on the image in the same order (:meth:`~visa.memory.nest_store.NestStore.run`), the same bytes.  A load the
plan does not cover (poison, replicas, rows still copies, a mask whose units are no box, a nest that does not cover
its range) goes the reference's way.  With the path off every load makes its decisions afresh.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.cache import exact_key
from visa.engines.common import StreamData
from visa.engines.fast_dm_read import DmRead, element_rows
from visa.memory.fast_nest import WIDE
from visa.memory.images import DenseImage
from visa.memory.known import all_true
from visa.memory.nest_store import NestStore, plan

__all__ = ["LOAD_PLAN", "load", "LIMIT"]

LOAD_PLAN = fastpaths.register("collect.load-plan", "a register load of known elements replays its placement "
                               "decisions (slices, units, box, byte nest, words, the image's view) kept per "
                               "configuration, image, bit base, slice mask and values' layout")

#: Plans kept per register file image (the oldest go first).
LIMIT = 64

#: A chip whose stream holds no slice: nothing to load there.
_SKIP: Any = object()

_MISS: Any = object()  # (no plan kept yet)

#: Per live register file image, its plans: key → ``(slices picked, plan)`` or :data:`_SKIP`, or None (not plannable).
_PLANS: weakref.WeakKeyDictionary[DenseImage, dict[Hashable, Any]] = weakref.WeakKeyDictionary()


def load(cfg: Any, data: StreamData, images: Sequence[DenseImage], bit_base: int,
         units: npt.NDArray[np.bool_] | None) -> bool:
    """:func:`visa.engines.collect.execute_load` by the plans (module docstring); False when the path is off or
    the load is not one it covers (nothing written: the caller loads as the reference does)."""
    if not LOAD_PLAN.on or data.replicas is not None:
        return False
    kind = type(data)
    if kind is DmRead:
        vals = data.source()  # type: ignore[attr-defined]
    elif kind is StreamData:
        vals = data.values
    else:
        return False
    dm = kind is DmRead
    key = (exact_key(cfg), bit_base, None if units is None else units.tobytes(), dm, vals.shape, vals.strides,
           vals.dtype.str, WIDE.on)  # (memory.nest-words: whether the plan writes runs as wider words)
    n_chip, n_cl, n_sl = vals.shape[:3]
    e = cfg.element.size
    rows = cfg.row.size if cfg.row is not None else 1
    flat_v = vals.reshape(n_chip, n_cl * n_sl, rows, e)
    known = data.known
    steps: list[tuple[DenseImage, npt.NDArray[Any], NestStore]] = []
    for c, img in enumerate(images):
        kept = _PLANS.get(img)
        got = kept.get((c, key), _MISS) if kept is not None else _MISS
        if got is _MISS:
            got = _derive(cfg, img, c, units, flat_v, bit_base, dm, (n_cl, n_sl), rows, e)
            if kept is None:
                kept = _PLANS[img] = {}
            if len(kept) >= LIMIT:
                del kept[next(iter(kept))]
            kept[(c, key)] = got
        if got is _SKIP:
            continue
        if got is None:
            return False
        pick, store = got
        if img._bytes is not store.data:  # (the image's bytes are not the array planned over)
            return False
        if not all_true(known.reshape(flat_v.shape)[c][pick]):  # (the slices loaded hold poison)
            return False
        v = element_rows(flat_v[c][pick], e, (n_cl, n_sl)) if dm else flat_v[c][pick].reshape(-1, e)
        steps.append((img, v, store))
    for img, v, store in steps:  # (every chip planned: the writes, in the reference's order)
        store.run(img, v)
    return True


def _derive(cfg: Any, img: DenseImage, c: int, units: npt.NDArray[np.bool_] | None, flat_v: npt.NDArray[Any],
            bit_base: int, dm: bool, lead: tuple[int, int], rows: int, e: int) -> Any:
    """Chip ``c``'s plan: the slices picked and the store's (as ``execute_load`` finds them), :data:`_SKIP`, or None."""
    n = lead[0] * lead[1]
    on = np.ones(n, dtype=bool) if units is None else units[c].reshape(-1)
    run = np.flatnonzero(on)
    if not run.size:
        return _SKIP
    pick: slice | npt.NDArray[np.bool_] = slice(int(run[0]), int(run[-1]) + 1) \
        if int(run[-1]) - int(run[0]) + 1 == run.size else on
    v = element_rows(flat_v[c][pick], e, lead) if dm else flat_v[c][pick].reshape(-1, e)
    enabled = np.zeros(img.lead_shape, dtype=bool)
    enabled.reshape(n, -1)[pick] = True
    if cfg.memory == "trf":
        enabled[:, :, rows:] = False  # Row r is bank row r (L4114-4148)
    store = plan(cfg.dtype, img, bit_base, ((e, 1),), enabled, v)
    return None if store is None else (pick, store)
