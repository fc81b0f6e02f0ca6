"""The moves: host ↔ HBM over PCIe (``ctx.pdma``) and HBM/DM ↔ HBM/DM by the tensor DMA (``ctx.tdma``)
(manual L44–57, L1188–1193, L2375–2384).

Each move checks the source is still readable, plans (:func:`~visa.engines.dma.plan.plan`), allocates the
destination (refusing an overlap with the source), poisons its bytes, executes and records the operation.
Nothing is written when a rule refuses the move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.common import EngineReport
from visa.engines.dma.config import NAMES, DmaCost, DmaPlan, Side
from visa.engines.dma.cost import cycles
from visa.engines.dma.execute import execute
from visa.engines.dma.plan import plan
from visa.errors import LayoutError, VisaError
from visa.mapping import Mapping
from visa.memory.arena import lazy_zeros
from visa.memory.footprint import unit_indices
from visa.memory.layout import LEVEL_PARAMS, describe, element_bytes
from visa.memory.transfer import DmEndpoint, Endpoint, HbmEndpoint, HostBuffer
from visa.tensors import fast_host
from visa.tensors.device import Device, DmaContext, dma_device
from visa.tensors.fast_host import PLAIN
from visa.tensors.fast_poison import covers, written_whole
from visa.validate import expect_int, expect_mapping, wrong_type

if TYPE_CHECKING:
    from visa.tensors.handles import DmTensor, DmTensorView, HbmTensor, HbmTensorView, HostTensor

__all__ = ["check_stream", "dma_report", "host_to_hbm", "hbm_to_host", "hbm_to_dm", "dm_to_hbm", "hbm_to_hbm",
           "dm_to_dm"]


def _check_args(call: str, mappings: dict[str, object], address: object, stream: object | None) -> None:
    """Refuse wrong Python types among a move's arguments before anything reads them (issue 16): each level's
    mapping (keyed by its parameter name), the byte address, and the explicit ``(Time, Packet)`` stream."""
    for param, mp in mappings.items():
        expect_mapping(mp, param, call=call)
    expect_int(address, "address", call=call)
    check_stream(stream, call)


def _is_pair(x: object) -> bool:
    return isinstance(x, tuple) and len(x) == 2 and all(isinstance(y, Mapping) for y in x)


def check_stream(stream: object | None, call: str) -> None:
    """Refuse a wrong Python type as a move's explicit ``(Time, Packet)`` stream (``None``: the plan's own; a dict
    ``{dmn: (Time, Packet)}`` is a heterogeneous DMA, :func:`_heterogeneous`)."""
    if isinstance(stream, dict) and stream and all(isinstance(k, int) and not isinstance(k, bool) and _is_pair(v)
                                                   for k, v in stream.items()):
        return
    if stream is not None and not _is_pair(stream):
        raise wrong_type("stream", stream, 'a (Time, Packet) pair of mappings such as (m["A / 8"], m["A % 8"])',
                         call=call)


def _source(t: Any, call: str, ctx: Device) -> tuple[Any, Side]:
    """The base tensor and the DMA side of a tensor or view of ``ctx`` that the move may read."""
    from visa.tensors.handles import DeviceTensor, TensorView

    if isinstance(t, TensorView):
        base = t.base
        levels = dict(base.levels)
        levels["Element"] = t.element
        bit = base.element_bit_offset() + t.offset * base.dtype.size_bits
        side = Side.of(base.MEMORY, levels, name=repr(t))
        side = replace(side, bit_address=bit)
    elif isinstance(t, DeviceTensor):
        base = t
        side = replace(Side.of(t.MEMORY, dict(t.levels), name=t.describe()), bit_address=t.element_bit_offset())
    else:
        raise wrong_type("tensor", t, "an HbmTensor, a DmTensor or a view of one", call=call)
    base.check_context(ctx, call)
    base.check_readable(call)
    return base, side


def _endpoint(ctx: Device, medium: str) -> Endpoint:
    mem = ctx.memory
    if medium == "hbm":
        return HbmEndpoint(ctx.hw, lambda c: mem.chip(c).hbm)
    return DmEndpoint(ctx.hw, lambda c: mem.chip(c).dm)


def dma_report(engine: str, config: str, cost: DmaCost, details: Sequence[tuple[str, object]] = (), *,
               nbytes: int = 0) -> EngineReport:
    """The report of a DMA (plain, shuffled or indirect) that costs ``cost`` (L2465–2504): busy for its cycles
    after the startup, the startup being its latency; ``details`` and then the cost's parts."""
    slower = (("slower by", "; ".join(cost.why)),) if cost.why else ()
    return EngineReport(engine, config, cost.total - cost.startup, latency=cost.startup,
                        details=(*details, ("cost", str(cost)), *slower), nbytes=nbytes, hbm_channels=cost.channels)


def _report(ctx: Device, track: str, name: str, p: DmaPlan, cost: DmaCost, reads: Sequence[Any],
            writes: Sequence[Any]) -> int:
    """Record the move: it reads ``reads`` and writes ``writes`` (tensors or views) on the engines its plan
    spreads over (``transfer=p``); ``cost`` is ``cycles(p)``, computed before any byte changed (a refusal of the
    cost model comes before the write, issue 23)."""
    details = (("read", f"{p.read} {NAMES[p.src.medium]}"), ("write", f"{p.write} {NAMES[p.dst.medium]}"),
               ("time", str(p.time)), ("packet", str(p.packet)))
    report = dma_report("pdma" if track == "pdma" else "dma", str(p), cost, details, nbytes=cost.nbytes)
    op = ctx.record(track, name, [report], reads=reads, writes=writes, transfer=p)
    return op.end


def _poison(ctx: Device, medium: str, chips: int, lo: int, hi: int, levels: dict[str, Mapping] | None = None) -> None:
    """Bytes ``[lo, hi)`` of a new tensor are fresh memory: on DM only in the slices its ``levels`` occupy (each
    slice has its own address space, L2874; padding slices are unused, L150–155)."""
    units = None if levels is None or medium == "hbm" else unit_indices(levels, ctx.hw.dm.slices_per_cluster)
    for c in range(chips):
        img = ctx.memory.chip(c)
        if units is None:
            (img.hbm if medium == "hbm" else img.dm).poison(lo, hi)
        else:
            img.dm.poison(lo, hi, units)


def _destination(src: Any, medium: str, levels: dict[str, Mapping], dma: DmaContext, address: int, call: str,
                 kind: str, stream: object | None) -> tuple[Device, Any, Side, dict[str, Mapping], Side]:
    """What every move to a new ``medium`` tensor checks first, before anything is written (the plain moves,
    the shuffled ones and the gathers): the arguments' types, the DMA context ``kind``, the readable source.
    Returns the device, the source's base tensor and DMA side, the destination's levels (the source's Chip
    unless given) and its DMA side."""
    _check_args(call, {LEVEL_PARAMS[k]: v for k, v in levels.items()}, address, stream)
    ctx = dma_device(dma, kind, call)
    base, side = _source(src, call, ctx)
    levels = {"Chip": base.levels["Chip"], **levels}
    dst = Side.of(medium, levels, address, name=describe(medium, base.dtype, levels, address))
    return ctx, base, side, levels, dst


def _allocate(ctx: Device, medium: str, dtype: type[dt.Scalar], levels: dict[str, Mapping], address: int,
              reads: Sequence[Any], call: str, p: DmaPlan | None = None, whole: bool = False) -> Any:
    """The new ``medium`` tensor a move writes (its regions overlapping ``reads`` allowed), its bytes poisoned
    on every chip until the move's execution writes them (not when the move ``p`` writes every one of them,
    ``dma.written-whole``: :mod:`visa.tensors.fast_poison`; nor when the caller says it writes every one,
    ``whole``: a gather's rows, ``dma.written-whole-gather``)."""
    from visa.tensors.handles import DmTensor, HbmTensor

    out: Any
    if medium == "hbm":
        out = HbmTensor(ctx, dtype, levels["Chip"], levels["Element"], address, reads=tuple(reads), call=call)
    else:
        out = DmTensor(ctx, dtype, levels["Chip"], levels["Cluster"], levels["Slice"], levels["Element"],
                       address, reads=tuple(reads), call=call)
    if not (whole or _written_whole(p, medium, dtype, levels, address)):
        _poison_new(ctx, medium, dtype, levels, address)
    return out


def _written_whole(p: DmaPlan | None, medium: str, dtype: type[dt.Scalar], levels: dict[str, Mapping],
                   address: int) -> bool:
    """Does the move ``p`` write every byte of its new ``medium`` tensor (``dma.written-whole``, ``-dm``:
    :func:`visa.tensors.fast_poison.written_whole`), so that it need not be poisoned first?"""
    return written_whole(p, medium, element_bytes(dtype, levels["Element"].size), levels["Chip"], address)


def _poison_new(ctx: Device, medium: str, dtype: type[dt.Scalar], levels: dict[str, Mapping], address: int) -> None:
    """Poison the bytes of a new ``medium`` tensor of ``dtype`` and ``levels`` at ``address`` (:func:`_poison`)."""
    _poison(ctx, medium, levels["Chip"].size, address, address + element_bytes(dtype, levels["Element"].size), levels)


def _dmns(hw: Any, side: Side) -> list[int]:
    """The DMNs (per chip: ``(cluster · slices_per_cluster + slice) // slices_per_dmn``, L2867–2872) a DM side's
    Cluster and Slice occupy."""
    d = hw.dm
    clusters = np.flatnonzero(side.level("Cluster").validity())
    slices = np.flatnonzero(side.level("Slice").validity())
    units = (clusters[:, None] * d.slices_per_cluster + slices[None, :]).reshape(-1)
    return sorted(set((units // d.slices_per_dmn).tolist()))


def _heterogeneous(ctx: Device, dtype: type[dt.Scalar], side: Side, dst: Side, streams: dict[int, Any],
                   call: str) -> tuple[DmaPlan, dict[int, DmaPlan]]:
    """The heterogeneous aggregate DMA (L2482–2504): each DMN moves its part of one logical tensor move with its
    own stream ``{time, packet}`` (``StreamFn``); input and output mappings are the move's.  Every DMN the DM side
    occupies must be given one, and each must be a valid stream for the move (planned, or refused naming the
    DMN).  The bytes are the logical move's (the identity, L2498–2500); the cost is the slowest DMN's: each
    stream's plan costed as every engine ran it, the maximum taken."""
    dm = dst if dst.medium == "dm" else side if side.medium == "dm" else None
    if dm is None:
        raise LayoutError("a heterogeneous DMA gives each DMN its own stream; this move has no DM side (L2482–2504)",
                          call=call, fix="pass one (Time, Packet) stream, or none")
    want = _dmns(ctx.hw, dm)
    if sorted(streams) != want:
        missing = sorted(set(want) - set(streams))
        extra = sorted(set(streams) - set(want))
        raise LayoutError(f"the DM side occupies DMNs {want}; the streams name {sorted(streams)}"
                          + (f" (missing {missing})" if missing else "") + (f" (no such DMN {extra})" if extra else ""),
                          call=call, level="Slice", mapping=repr(dm.level("Slice")),
                          fix="give one (Time, Packet) stream per DMN the tensor occupies (L2492–2497)")
    plans: dict[int, DmaPlan] = {}
    for dmn, pair in streams.items():
        try:
            plans[dmn] = plan(ctx.hw, dtype, side, dst, stream=pair, call=f"{call} (DMN {dmn})")
        except VisaError as err:
            raise type(err)(f"the stream of DMN {dmn}: {err.message}", call=err.call, level=err.level,
                            mapping=err.mapping, axis=err.axis, fix=err.fix) from None
    slowest = max(plans.values(), key=lambda q: cycles(q).total)
    return slowest, plans


def _to_device(src: Any, medium: str, levels: dict[str, Mapping], dma: DmaContext, address: int, call: str,
               kind: str, stream: Any) -> Any:
    """The tensor DMA of ``src`` to a new ``medium`` tensor with ``levels`` (the source's Chip unless given);
    ``stream`` a ``(Time, Packet)`` pair, or a dict of them by DMN (:func:`_heterogeneous`)."""
    ctx, base, side, levels, dst = _destination(src, medium, levels, dma, address, call, kind, stream)
    if isinstance(stream, dict):
        p, plans = _heterogeneous(ctx, base.dtype, side, dst, stream, call)
        name = f"{call} → {describe(medium, base.dtype, levels, address)} (heterogeneous: {len(plans)} DMN streams)"
    else:
        p, name = plan(ctx.hw, base.dtype, side, dst, stream=stream, call=call), ""
    cost = cycles(p)  # (every check, the cost model's too, before any byte changes)
    whole = None if isinstance(stream, dict) else p  # (a heterogeneous move's p is one DMN's)
    out = _allocate(ctx, medium, base.dtype, levels, address, [r for r in (base.region,) if r is not None], call,
                    whole)
    try:
        execute(p, _endpoint(ctx, side.medium), _endpoint(ctx, medium))
    except VisaError:  # refused before writing a byte (transfer.execute): the destination as the reference leaves
        # it, poisoned, also where its fill was skipped for the write that never came (dma.written-whole(-dm))
        if _written_whole(whole, medium, base.dtype, levels, address):
            _poison_new(ctx, medium, base.dtype, levels, address)
        raise
    out.ready_at = _report(ctx, kind, name or f"{call} → {out.describe()}", p, cost, [src], [out])
    return out


def host_to_hbm(host: HostTensor[Any, Any], chip: Mapping, element: Mapping, pdma: DmaContext, address: int, *,
                stream: tuple[Mapping, Mapping] | None = None) -> HbmTensor[Any, Any, Any]:
    """PCIe DMA host → HBM (manual L53, L193): the same tensor, laid out as ``(chip, element)``.

    The host lays its buffer out in the HBM layout first (:func:`staging`), then the DMA copies it."""
    from visa.tensors.handles import HbmTensor, HostTensor

    call = "host.to_hbm"
    _check_args(call, {"chip": chip, "element": element}, address, stream)
    ctx = dma_device(pdma, "pdma", call)
    if not isinstance(host, HostTensor):
        raise wrong_type("host", host, "a HostTensor", call=call,
                         fix="build one with HostTensor.from_numpy or HostTensor.rand")
    dtype = host.dtype
    levels = {"Chip": chip, "Element": element}
    name = describe("hbm", dtype, levels, address)
    p = plan(ctx.hw, dtype, Side.of("host", {"Element": host.element}, name=repr(host)),
             Side.of("hbm", levels, address, name=name), stream=stream, call=call)
    cost = cycles(p)
    out: HbmTensor[Any, Any, Any] = HbmTensor(ctx, dtype, chip, element, address, call=call)
    nbytes = element_bytes(dtype, element.size)
    if not covers(p, nbytes):  # (a move that writes every byte of the tensor leaves nothing to poison)
        _poison(ctx, "hbm", chip.size, address, address + nbytes)
    staged = p.src.level("Element")
    buffer, buffer_known = host.buffer()
    values, known = _rearrange(buffer, buffer_known, host.element, staged)
    data, kbytes = _host_bytes(dtype, values, known)
    # HBM may share the bytes (copy on write) when nobody can write them again: the host tensor's own buffer
    # (visa made it and never writes it), or bytes made here for this move
    frozen = host.owned or not np.may_share_memory(data, buffer)
    execute(p, HostBuffer(data, kbytes, frozen=frozen), _endpoint(ctx, "hbm"))
    out.ready_at = _report(ctx, "pdma", f"{call} → {out.describe()}", p, cost, [], [out])
    return out


def _rearrange(values: npt.NDArray[Any], known: npt.NDArray[Any], src: Mapping, dst: Mapping
               ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """A host buffer laid out as ``src`` re-laid out as ``dst`` (positions ``dst`` holds get their values)."""
    if src == dst:
        return values, known
    fast = fast_host.rearrange_plain(values, known, src, dst) if PLAIN.on else None
    if fast is not None:
        return fast
    ev = dst.evaluate()
    coords = {a: np.where(ev.valid, c, 0) for a, c in ev.coords.items()}
    pos, held = src.locate(coords, (dst.size,))
    ok = ev.valid & held
    at = np.where(ok, pos, 0)
    return values[at], known[at] & ok


def _host_bytes(dtype: type[dt.Scalar], values: npt.NDArray[Any], known: npt.NDArray[Any]
                ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """A host buffer as bytes and a per-byte written mask (a 4-bit byte is known if either nibble is)."""
    if dtype.size_bits == 4 and values.size % 2:
        values = np.concatenate([values, np.zeros(1, values.dtype)])
        known = np.concatenate([known, np.zeros(1, bool)])
    if (dtype.kind == "int" and dtype.bits == dtype.image_bits == values.dtype.itemsize * 8 and np.little_endian
            and values.flags.c_contiguous and values.dtype == np.dtype(dtype.storage)):
        data = values.reshape(-1).view(np.uint8)  # the buffer is only read: its bytes are the image, no copy
    else:
        data = dt.to_bytes(dtype, values)
    if known.ndim == 1 and known.strides == (0,) and known.size and values.size % 2 == 0:
        kb = np.broadcast_to(known[:1], data.shape)  # every element known (or none): a constant mask
    elif dtype.size_bits == 4:
        kb = known[0::2] | known[1::2]
    elif dtype.size_bits == 8:
        kb = known
    else:
        kb = np.repeat(known, dtype.size_bits // 8)
    return data, kb


def hbm_to_host(hbm: HbmTensor[Any, Any, Any] | HbmTensorView, element: Mapping,
                pdma: DmaContext, *, stream: tuple[Mapping, Mapping] | None = None) -> HostTensor[Any, Any]:
    """PCIe DMA HBM → host (manual L197): a host buffer laid out as ``element``.

    The DMA copies the HBM layout as it is (:func:`staging`); the host then lays it out as ``element``."""
    from visa.tensors.handles import HostTensor

    call = "hbm.to_host"
    _check_args(call, {"element": element}, 0, stream)
    ctx = dma_device(pdma, "pdma", call)
    base, side = _source(hbm, call, ctx)
    dtype = base.dtype
    p = plan(ctx.hw, dtype, side, Side.of("host", {"Element": element}, name=f"HostTensor[{dtype!r}, {element!r}]"),
             stream=stream, call=call)
    cost = cycles(p)
    staged = p.dst.level("Element")
    n = _written_elements(p, staged.size)
    buf = HostBuffer(np.zeros(dtype.image_nbytes(n), np.uint8), written=False)
    execute(p, _endpoint(ctx, "hbm"), buf)
    staged_view = fast_host.staged_values(dtype, buf.data, n)  # (host.staged-view: the buffer is ours)
    values = (dt.from_bytes(dtype, buf.data, n) if staged_view is None else staged_view)[: staged.size]
    if buf.constant is not None and n >= staged.size:  # every byte written (or none): no per-byte mask to reduce
        known = np.broadcast_to(np.bool_(buf.constant), (staged.size,))
    elif buf.constant is not None:
        known = np.full(n, buf.constant)
    elif dtype.size_bits == 4:
        known = np.repeat(buf.written, 2)[: staged.size]
    else:
        known = np.asarray(buf.written.reshape(-1, dtype.size_bits // 8).all(axis=1), dtype=bool)
    if n < staged.size:  # the staged positions past the DMA's last byte: unwritten (zeros, lazily mapped)
        values, known = _extended(values, staged.size), _extended(known, staged.size)
    values, known = _rearrange(values, known, staged, element)
    _report(ctx, "pdma", f"{call} → HostTensor[{dtype!r}, {element!r}]", p, cost, [hbm], [])
    return HostTensor(dtype, element, values, known, source=f"{call} (ctx.pdma) from {base.describe()}",
                      owned=True)


def _written_elements(p: DmaPlan, size: int) -> int:
    """Elements of a host staging buffer of ``size`` elements (the DMA's destination, ``p.dst``) up to the last
    byte the DMA writes (an even count for 4-bit types): a view of a larger HBM tensor (a tile) is staged as its
    layout is, the whole tensor's padding included, of which the DMA writes only the view's bytes.  ``size`` (the
    count rounded up to even for 4-bit types) when a stride runs backwards, a loop is empty or the plan writes to
    the end."""
    bits = p.dtype.size_bits
    full = size + (size % 2 if bits == 4 else 0)
    loops = p.all_loops()
    if p.base[1] < 0 or any(lp.dst < 0 or lp.size < 1 for lp in loops):
        return full
    reach = p.base[1] + sum((lp.size - 1) * lp.dst for lp in loops) + 1  # bytes: the last one written, plus one
    count = -(-reach * 8 // bits)
    return min(full, count + (count % 2 if bits == 4 else 0))


def _extended(array: npt.NDArray[Any], size: int) -> npt.NDArray[Any]:
    """``array`` followed by zeros (False) up to ``size`` elements (mapped zeros: pages nobody touches take no
    memory, where the heap's recycled ``calloc`` would clear and keep them all)."""
    out = lazy_zeros((size,), array.dtype)
    out[: array.size] = array
    return out


def hbm_to_dm(hbm: HbmTensor[Any, Any, Any] | HbmTensorView, cluster: Mapping, slice_: Mapping, element: Mapping,
              tdma: DmaContext, address: int, *, stream: Any = None
              ) -> DmTensor[Any, Any, Any, Any, Any]:
    """Tensor DMA HBM → DM (manual L1188–1193, L2375–2384, L2637–2658); Chip is kept."""
    out: DmTensor[Any, Any, Any, Any, Any] = _to_device(
        hbm, "dm", {"Cluster": cluster, "Slice": slice_, "Element": element}, tdma, address, "hbm.to_dm", "tdma",
        stream)
    return out


def dm_to_hbm(dm: DmTensor[Any, Any, Any, Any, Any] | DmTensorView, element: Mapping, tdma: DmaContext,
              address: int, *, stream: Any = None) -> HbmTensor[Any, Any, Any]:
    """Tensor DMA DM → HBM (manual L217, L2752–2808); Chip is kept, Cluster and Slice fold into ``element``."""
    out: HbmTensor[Any, Any, Any] = _to_device(dm, "hbm", {"Element": element}, tdma, address, "dm.to_hbm", "tdma",
                                                stream)
    return out


def hbm_to_hbm(hbm: HbmTensor[Any, Any, Any] | HbmTensorView, chip: Mapping, element: Mapping, tdma: DmaContext,
               address: int, *, stream: Any = None) -> HbmTensor[Any, Any, Any]:
    """Tensor DMA HBM → HBM with a new layout (manual L2431–2464, L2555–2636); a new Chip crosses PCIe."""
    out: HbmTensor[Any, Any, Any] = _to_device(hbm, "hbm", {"Chip": chip, "Element": element}, tdma, address,
                                                "hbm.to_hbm", "tdma", stream)
    return out


def dm_to_dm(dm: DmTensor[Any, Any, Any, Any, Any] | DmTensorView, cluster: Mapping, slice_: Mapping,
             element: Mapping, tdma: DmaContext, address: int, *, stream: Any = None
             ) -> DmTensor[Any, Any, Any, Any, Any]:
    """Tensor DMA DM → DM with a new layout (manual L2659–2681); Chip is kept."""
    out: DmTensor[Any, Any, Any, Any, Any] = _to_device(
        dm, "dm", {"Cluster": cluster, "Slice": slice_, "Element": element}, tdma, address, "dm.to_dm", "tdma", stream)
    return out
