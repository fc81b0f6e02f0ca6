"""Stream side of the Fetch Engine: ``begin``, ``begin_interleaved`` and ``fetch`` (manual L1689–2144).

``ctx.main.begin(dm.view())`` makes a :class:`~visa.stream.stages.BeginTensor` whose Time is ``m["1"]`` and
whose Packet is the view's Element (the manual's ``BeginTensor<…, m![1], Element>``, L1701, L1731–1743);
``ctx.main.begin_interleaved(I, lhs, rhs)`` one whose Time is the axis ``I`` of size 2 (L1843–1868, L2044).
``fetch`` asks :func:`visa.engines.fetch.plan` for the configuration, runs it over the DM images and returns
the :class:`~visa.stream.stages.FetchTensor`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa.engines import channel
from visa.engines import fetch as engine
from visa.engines.common import EngineReport, StreamData, StreamLayout
from visa.engines.fast_fetch_report import REPORT, remembered_report
from visa.errors import LayoutError, VisaError
from visa.mapping import Mapping
from visa.mapping.core import ensure_mapping
from visa.mapping.fast_validity import validity_of
from visa.memory.known import broadcast_one
from visa.stream.stages import BeginTensor, Carried, FetchTensor
from visa.tensors.handles import TensorView
from visa.validate import expect_dtype, wrong_type

if TYPE_CHECKING:
    from visa.tensors.device import TuHandle
    from visa.tensors.handles import DmTensorView

__all__ = ["begin", "begin_interleaved", "fetch", "lift"]


def _check_view(tu: TuHandle, view: object, call: str, param: str = "view") -> DmTensorView[Any, Any, Any, Any, Any]:
    if not isinstance(view, TensorView) or view.base.MEMORY != "dm":
        raise wrong_type(param, view, "a DM tensor view (dm.view())", call=call, fix="call .view() on a DmTensor")
    view.base.check_context(tu.ctx, call)
    return view  # type: ignore[return-value]


def _placeholder(layout: StreamLayout) -> StreamData:
    """The data of a BeginTensor: nothing has been read yet (broadcast poison, no memory; the two read-only
    broadcasts kept per storage type and shape)."""
    shape = layout.shape
    key = (layout.dtype.storage, shape)
    got = _PLACEHOLDERS.get(key)
    if got is None:
        if len(_PLACEHOLDERS) >= 256:
            _PLACEHOLDERS.clear()
        got = _PLACEHOLDERS[key] = (broadcast_one(_zero(layout.dtype.storage), shape),
                                    broadcast_one(_zero(np.bool_), shape))
    return StreamData(*got)


_PLACEHOLDERS: dict[Any, tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]] = {}


_ZEROS: dict[Any, npt.NDArray[Any]] = {}


def _zero(storage: Any) -> npt.NDArray[Any]:
    """One read-only zero of a storage type, the element every BeginTensor's placeholder broadcasts (made once)."""
    got = _ZEROS.get(storage)
    if got is None:
        got = _ZEROS[storage] = np.zeros(1, dtype=storage)
        got.flags.writeable = False
    return got


def begin(tu: TuHandle, view: DmTensorView[Any, Any, Any, Any, Any],
          dual_channel: bool = False) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``tu.begin(dm.view())``: the stream at the start of the pipeline, Time ``m["1"]``, Packet = Element (L1701);
    ``dual_channel=True`` (main context only) runs the pass in dual channel mode (:mod:`visa.engines.channel`)."""
    if not isinstance(dual_channel, bool):
        raise wrong_type("dual_channel", dual_channel, "True or False", call="begin", fix="dual_channel=True")
    if dual_channel:
        channel.check_context(tu.kind)
    v = _check_view(tu, view, "begin")
    base = v.base
    layout = StreamLayout(base.dtype, base.levels["Chip"], base.levels["Cluster"], base.levels["Slice"],
                          Mapping.identity(v.element.axis_set), v.element)
    seen = {} if base.region is None else {id(base.region): (base.region, base.region.writes)}  # (as __init__ notes)
    return BeginTensor(tu, layout, _placeholder(layout), (), (base,),
                       Carried(views=(v,), dual_channel=dual_channel, seen=seen))


def begin_interleaved(tu: TuHandle, axis: Mapping, lhs: DmTensorView[Any, Any, Any, Any, Any],
                      rhs: DmTensorView[Any, Any, Any, Any, Any]) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``tu.begin_interleaved::<I, …>(lhs, rhs)``: two tensors with identical mappings, alternating along the
    Time axis ``axis`` (size 2; at most two tensors, L1843–1868)."""
    from visa.stream.stages import BeginTensor, Carried

    call = "begin_interleaved"
    if not isinstance(axis, Mapping):
        raise wrong_type("axis", axis, 'the interleave axis, a mapping such as m["I"]', call=call,
                         fix='declare axes(I=2) and pass m["I"]')
    a, b = _check_view(tu, lhs, call, "lhs"), _check_view(tu, rhs, call, "rhs")
    engine.plan_interleave(tu.ctx.hw, axis, (a.dtype, a.levels), (b.dtype, b.levels))
    base = a.base
    layout = StreamLayout(base.dtype, base.levels["Chip"], base.levels["Cluster"], base.levels["Slice"], axis,
                          a.element)
    inputs = (a.base,) if a.base is b.base else (a.base, b.base)
    return BeginTensor(tu, layout, _placeholder(layout), (), inputs, Carried(views=(a, b), interleave=axis))


def begin_heterogeneous(tu: TuHandle, axis: Mapping, views: Any) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """``tu.begin_heterogeneous(m["G"], [v0, v1, …])``: heterogeneous fetch sequencers (L1748): the slices whose
    Slice coordinate of ``G`` is g run their own sequencer over ``views[g]`` (another base address, another access
    pattern), all producing the one stream ``fetch(D, Time, Packet)`` names.  The views are DM views of tensors
    with the same dtype, Chip, Cluster and Slice; ``G``'s size is the number of views."""
    from visa.stream.stages import BeginTensor, Carried

    call = "begin_heterogeneous"
    if not isinstance(axis, Mapping) or len(axis.axes) != 1:
        raise wrong_type("axis", axis, 'the slice-group axis, a one-axis mapping such as m["G"]', call=call,
                         fix="declare axes(G=…) and put G in the tensors' Slice mapping")
    if not isinstance(views, (list, tuple)) or not views:
        raise wrong_type("views", views, "a list of DM tensor views, one per slice group", call=call,
                         fix="pass [t.view().tile(…, g) for g in range(…)]")
    checked = [_check_view(tu, v, call, f"views[{k}]") for k, v in enumerate(views)]
    first = checked[0].base
    name = next(iter(axis.axes))
    slice_ = first.levels["Slice"]
    for k, v in enumerate(checked):
        b = v.base
        if b.dtype is not first.dtype or any(b.levels[lv] != first.levels[lv] for lv in ("Chip", "Cluster", "Slice")):
            raise LayoutError(f"views[{k}] is {b.describe()}; a heterogeneous fetch reads tensors of one dtype, "
                              f"Chip, Cluster and Slice ({first.describe()}) (L1748)", call=call, level="Slice",
                              mapping=repr(b.levels["Slice"]), fix="give every view the same tensor layout")
    if name not in slice_.axes or axis.size != len(checked):
        raise LayoutError(f"the slice groups are the values of {name} in the Slice {slice_!r}: {axis.size} groups "
                          f"for {len(checked)} views (L1748)", call=call, level="Slice", mapping=repr(slice_),
                          axis=name, fix=f"put {name} (size {len(checked)}) in the Slice mapping, one view per value")
    layout = StreamLayout(first.dtype, first.levels["Chip"], first.levels["Cluster"], slice_,
                          Mapping.identity(checked[0].element.axis_set), checked[0].element)
    inputs = tuple({id(v.base): v.base for v in checked}.values())
    return BeginTensor(tu, layout, _placeholder(layout), (), inputs, Carried(views=tuple(checked), hetero=name))


def _groups(lay: StreamLayout, name: str) -> npt.NDArray[np.int64]:
    """The slice group (the coordinate of ``name`` in the Slice mapping) of every ``(Chip, Cluster, Slice)``."""
    ev = lay.slice.evaluate()
    g = np.where(np.asarray(ev.valid), ev.coord(name), -1)
    return np.broadcast_to(g.reshape(1, 1, -1), (lay.chip.size, lay.cluster.size, lay.slice.size))


def _units(lay: StreamLayout) -> int:
    """Slices per chip a stream occupies (its valid Cluster × Slice positions)."""
    return int(np.count_nonzero(validity_of(lay.cluster))) * int(np.count_nonzero(validity_of(lay.slice)))


def fetch(stream: BeginTensor[Any, Any, Any, Any, Any, Any], dtype: Any, time: Mapping, packet: Mapping, *,
          table: Any = None, zero_points: tuple[int, ...] | None = None,
          pad_value: Any = None) -> FetchTensor[Any, Any, Any, Any, Any, Any]:
    """``fetch::<D2, Time2, Packet2>()`` (L1700–1718), with an optional table (L1949) or zero points (L2030)."""
    ctx = stream.ctx
    hw = ctx.hw
    dst = expect_dtype(dtype, "dtype", call="fetch")
    time = ensure_mapping(time, "Time2", "fetch", "Time")
    packet = ensure_mapping(packet, "Packet2", "fetch", "Packet")
    if table is not None and not isinstance(table, engine.LookupTable):
        raise VisaError(f"fetch_with_table takes a LookupTable, got {type(table).__name__}",
                        call="fetch table indexing", fix="build one with LookupTable.from_function(din, dout, f)")
    views = stream.carried.views
    if not views:
        raise VisaError("this BeginTensor has no DM view to fetch from", call="fetch",
                        fix="start the stream with ctx.main.begin(dm.view())")
    interleave: Mapping | None = stream.carried.interleave
    lay = stream.layout
    hetero = stream.carried.hetero
    per_view = views if hetero else views[:1]
    key = None
    # a plain fetch of one view seen before with the same objects: its plan key, configuration and _PASSES entry
    ikey: tuple[Any, ...] | None = None
    held: tuple[Any, ...] = ()
    known_pass: tuple[Any, ...] | None = None
    # (zero points remembered by value when they are Python ints: a float or a numpy integer equal to one is
    # planned, and so checked, every time)
    plain_zp = zero_points is None or all(type(z) is int for z in zero_points)
    if not hetero and table is None and plain_zp and len(views) == 1:
        v0 = views[0]
        held = (lay.chip, lay.cluster, lay.slice, lay.packet, time, packet, interleave)
        ikey = (id(hw), lay.dtype, dst, stream.tu.kind, pad_value, zero_points, v0.base.dtype, v0.base.address,
                v0.offset, *map(id, held))
        got = _BY_ID.get(ikey)
        if got is not None and got[0] is hw and all(a is b for a, b in zip(got[1], held, strict=True)):
            known_pass = got
    if known_pass is not None:
        key = known_pass[2]
        kept: tuple[Any, Any] | None = (hw, known_pass[4])
    else:
        if not hetero and table is None and plain_zp:  # (a plain fetch: its plan kept per layout, _PLANS)
            key = (id(hw), lay.dtype, dst, lay.chip.key, lay.cluster.key, lay.slice.key, lay.packet.key, time.key,
                   packet.key, stream.tu.kind, None if interleave is None else interleave.key, pad_value,
                   zero_points)
        kept = _PLANS.get(key) if key is not None else None
    if kept is not None and kept[0] is hw:
        cfgs = [kept[1]]
    else:
        cfgs = [engine.plan(hw, lay.dtype, dst, lay.chip, lay.cluster, lay.slice,
                            v.element if hetero else lay.packet, time, packet, context=stream.tu.kind,
                            interleave=interleave, table=None if table is None else (table.din, table.dout),
                            zero_points=zero_points, pad_value=pad_value) for v in per_view]
        if key is not None:
            if len(_PLANS) >= _LIMIT:
                del _PLANS[next(iter(_PLANS))]
            _PLANS[key] = (hw, cfgs[0])
    for v in views:
        v.base.check_readable("fetch")
    # a plain fetch of one view: its bit base, report and output layout kept per the plan's key, the mapping objects
    # (held by the entry, so their ids name no other meanwhile) and the view's dtype, address and offset
    passed: tuple[Any, ...] | None = None
    pkey: tuple[Any, ...] | None = None
    if known_pass is not None:
        pkey, passed = known_pass[3], known_pass[5]
    elif key is not None and len(views) == 1:
        v0 = views[0]
        pkey = (key, id(lay.chip), id(lay.cluster), id(lay.slice), id(time), id(packet), v0.base.dtype,
                v0.base.address, v0.offset)
        passed = _PASSES.get(pkey)
        if passed is not None and passed[0] is not hw:
            passed = None
    bases = passed[1] if passed is not None else \
        [engine.view_bit_base(hw, v.base.dtype, v.base.address, v.offset, v.element) for v in views]
    images = [ctx.memory.chip(c).dm for c in range(lay.chip.size)]
    if hetero:  # each slice group's own sequencer over its own view (L1748), in parallel
        groups = _groups(lay, hetero)
        runs = [engine.execute(cfg, images, [b], table) for cfg, b in zip(cfgs, bases, strict=True)]
        values = np.array(runs[0].values, copy=True)
        known = np.array(runs[0].known, copy=True)
        for g, run in enumerate(runs[1:], start=1):
            on = (groups == g)[..., None, None]
            values = np.where(on, run.values, values)
            known = np.where(on, run.known, known)
        data: Any = StreamData(values, known)
        cfg = max(cfgs, key=engine.cycles)
    else:
        cfg = cfgs[0]
        data = engine.execute(cfg, images, bases, table)
    if hetero:
        report = fetch_report(hw, cfg, tuple(cfgs), tuple(bases), lay, hetero)
    elif passed is not None and REPORT.on:  # (fetch.report-memo: the one remembered for this key)
        report = passed[2]
    else:  # (fetch.report-memo: the same report for the same configuration, addresses and layout)
        report = remembered_report((hw, cfg, tuple(bases), lay.dtype, lay.chip, lay.cluster, lay.slice),
                                   lambda: fetch_report(hw, cfg, (cfg,), tuple(bases), lay, None))
    if passed is not None:
        layout = passed[3]
    else:
        layout = StreamLayout(dst, lay.chip, lay.cluster, lay.slice, time, packet)
        if pkey is not None and REPORT.on:
            if len(_PASSES) >= _LIMIT:
                del _PASSES[next(iter(_PASSES))]
            passed = _PASSES[pkey] = (hw, bases, report, layout, lay, time, packet)
    if ikey is not None and known_pass is None and passed is not None and REPORT.on:
        if len(_BY_ID) >= _LIMIT:
            del _BY_ID[next(iter(_BY_ID))]
        _BY_ID[ikey] = (hw, held, key, pkey, cfg, passed)
    # the bytes are read now: the write counts of the inputs' regions now (what the stage's __init__ notes in an
    # empty ``seen``, given whole: the carried fields copied once)
    seen = {id(t.region): (t.region, t.region.writes) for t in stream.inputs if t.region is not None}
    return stream.then(FetchTensor, layout, data, report, fetch=cfg, seen=seen)


#: A plain fetch's (or one with zero points, Python ints) configuration (:func:`visa.engines.fetch.plan`, pure) per
#: its layout's and arguments' exact keys and the hardware profile (kept with it: its id is in the key): a kernel's
#: passes plan the fetch once, not again at every pass (nor make a new configuration object each time for a pad
#: value).
_PLANS: dict[Any, tuple[Any, Any]] = {}
_LIMIT = 256
#: A plain fetch's bit bases, report (``fetch.report-memo``'s) and output layout per :data:`_PLANS`' key, the ids of
#: the stream's Chip, Cluster and Slice and of the Time and Packet mappings, and the view's dtype, address and offset:
#: pure functions of those (the entry holds the mappings, through the layouts: their ids are theirs while it lives).
_PASSES: dict[Any, tuple[Any, ...]] = {}
#: :data:`_PLANS`' and :data:`_PASSES`' keys, configuration and entry of a plain one-view fetch per the identity of its
#: mapping objects (the stream's Chip, Cluster, Slice and Packet, the Time, Packet and interleave arguments: held by
#: the entry, so their ids are theirs while it lives), the hardware profile (held), the dtypes, the stage's kind, the
#: pad value and the view's address and offset: a pass of the same objects finds them without their exact keys.
_BY_ID: dict[Any, tuple[Any, ...]] = {}


def fetch_report(hw: Any, cfg: Any, cfgs: tuple[Any, ...], bases: tuple[int, ...], lay: StreamLayout,
                 hetero: str | None) -> EngineReport:
    """The Fetch Engine's report of a fetch ``cfg`` (the slowest of ``cfgs``, one per heterogeneous sequencer) over
    the tensors at bit ``bases``: its configuration, cycles (L2060), bytes moved and DM bank runs (L2897–2941)."""
    hetero_details = (("sequencers", f"heterogeneous: {len(cfgs)} slice groups over {hetero} (L1748)"),) \
        if hetero else ()
    pairs = list(zip(cfgs, bases, strict=True)) if hetero else [(cfg, b) for b in bases]
    # an interleaved pair: each tensor's runs, bank by bank the longer (their packets alternate, L1855–1868)
    bank = tuple(int(x) for x in np.max([engine.bank_runs(hw, c, b) for c, b in pairs], axis=0))
    return EngineReport("fetch", cfg.describe([b // 8 for b in bases]), engine.cycles(cfg), cfg.latency,
                        details=(("fetch_size", cfg.fetch_size), ("fetches_per_packet", cfg.fetches_per_packet),
                                 ("contiguous_sram_access_size", cfg.contiguous_sram_access_size),
                                 ("contiguous", engine.is_contiguous(cfg)), *hetero_details),
                        nbytes=int(np.count_nonzero(validity_of(lay.chip)))
                        * math.prod(e.size for e in cfg.sequencer.entries) * lay.dtype.size_bits // 8 * _units(lay),
                        bank_run=max(bank), bank_runs=bank)


def lift(stream: FetchTensor[Any, Any, Any, Any, Any, Any], level: str, placement: Mapping,
         time: Mapping) -> FetchTensor[Any, Any, Any, Any, Any, Any]:
    """``fetch_{chip,cluster,slice}_lift(placement, time)`` after ``fetch`` (design API.md §8): the fetch's outer
    Time digits replace a broadcast digit of ``level`` (:mod:`visa.engines.lift`).  The fetch's report is
    replaced by the lifted fetch's (fewer time steps, the copies in parallel)."""
    from dataclasses import replace

    from visa.engines import lift as lift_engine
    from visa.errors import TypestateError
    from visa.stream.stages import FetchTensor

    call = f"fetch_{level.lower()}_lift"
    placement = ensure_mapping(placement, level, call, level)
    time = ensure_mapping(time, "Time2", call, "Time")
    cfg: engine.FetchConfig | None = stream.carried.fetch
    if cfg is None:
        raise TypestateError(f"{call} follows fetch directly", call=call, fix="call it on what .fetch(...) returns")
    lifts = stream.carried.lifts
    if level in lifts:
        raise TypestateError(f"the stream's {level} was already lifted; a level is lifted once", call=call,
                             fix=f"lift the {level} once, with every digit it takes")
    lay = stream.layout
    others = frozenset().union(*(lay.level(n).axes for n in ("Chip", "Cluster", "Slice") if n != level))
    views = stream.carried.views
    addresses = cfg.sequencer.addresses() if len(views) == 1 else None
    plan = lift_engine.plan(stream.ctx.hw, level, lay.level(level), placement, lay.time, time, lay.packet, others,
                            cfg.src, addresses)
    lift_engine.check_replicated(plan, stream.data)
    data = lift_engine.execute(plan, stream.data)
    key = {"Chip": "chip", "Cluster": "cluster", "Slice": "slice"}[level]
    layout = lay.with_(**{key: placement, "time": time})
    reports = list(stream.reports)
    for k in range(len(reports) - 1, -1, -1):
        if reports[k].engine == "fetch":
            old = reports[k]
            reports[k] = replace(old, config=f"{old.config}; {plan}", cycles=lift_engine.cycles(cfg, plan),
                                 nbytes=old.nbytes * time.size // max(1, lay.time.size))
            break
    carried = stream.carried.with_(lifts=(*lifts, level), fetch=replace(cfg, time=time))
    out: FetchTensor[Any, Any, Any, Any, Any, Any] = FetchTensor(stream.tu, layout, data, tuple(reports),
                                                                  stream.inputs, carried)
    return out
