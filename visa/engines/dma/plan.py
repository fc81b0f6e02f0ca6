"""Planning a DMA: the stream, the fused sequencer and the DMA's rules (manual L2405–2594, L2834–2839).

:func:`plan` is pure (the runtime and the mypy plugin call it) and cached by its arguments.  See
:mod:`visa.engines.dma` for the overview and docs/manual-notes.md for the decisions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from visa import dtypes as dt
from visa.engines.cache import cached
from visa.engines.common import axes_text, divisors
from visa.engines.dma import fast_holds, fast_plan
from visa.engines.dma.config import MEDIA, NAMES, TABLE, DmaLoop, DmaPlan, Side
from visa.errors import (
    AddressError,
    DtypeError,
    HardwareLimitError,
    IncompatibleShapesError,
    InsufficientInputError,
    LayoutError,
    UnsupportedFeatureError,
    VisaError,
)
from visa.hw import HardwareProfile
from visa.mapping import IDENTITY, Mapping, pair_of
from visa.mapping import canon as C
from visa.mapping.sequencer import Entry, SequencerConfig, derive_many
from visa.memory.layout import check_placement
from visa.memory.transfer import AddressSpace, address_space

__all__ = ["plan", "staging"]


@dataclass(frozen=True)
class _Unlimited:
    max_entries: int = 1 << 30
    max_entry_size: int = 1 << 62


_UNLIMITED = _Unlimited()


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, *,
         stream: tuple[Mapping, Mapping] | None = None, call: str = "dma", own_padding: bool = True) -> DmaPlan:
    """The DMA configuration moving the tensor ``src`` holds to the placement ``dst`` (pure; raises the
    rule's :class:`~visa.errors.VisaError`).  ``stream=(time, packet)`` fixes the stream of a single engine
    (L2413–2419); without it the plan derives one and spreads it over the engines.  ``own_padding=False``
    says the destination's pure padding digits are not its own bytes (the other rows of an indirect DMA), so
    no packet may write them."""
    if stream is None:
        moved = fast_plan.plan(hw, dtype, src, dst, call, own_padding, _plan)
        if moved is not None:
            return moved
    return _plan(hw, dtype, src, dst, stream, call, own_padding)


@cached(2048, paths=(fast_holds.HOLDS,))  # (a plan that skipped the check: never handed out with it off)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side,
          stream: tuple[Mapping, Mapping] | None, call: str, own_padding: bool = True) -> DmaPlan:
    _check_media(hw, dtype, src, dst, call)
    if dst.medium != "host":
        check_placement(hw, dst.medium, dtype, dst.mappings, dst.bit_address // 8, num_chips=None,
                        name=dst.label(), call=call)
    _check_axes(src, dst, call)
    bits = dtype.size_bits
    if "host" in (src.medium, dst.medium):
        # The host CPU lays the buffer out as the device side is (a host-side permutation, free of DMA
        # rules); the PCIe DMA then copies it as it is.
        _check_holds(src, dst, _buffer(hw, src, bits), _buffer(hw, dst, bits), call)
        if src.medium == "host":
            src = staging(dst, src.name)
        else:
            dst = staging(src, dst.name)
    sbuf, dbuf = _buffer(hw, src, bits), _buffer(hw, dst, bits)
    offsets = (_offset(src, bits, call), _offset(dst, bits, call))
    if stream is not None:
        time, packet = stream
        result = _attempt(hw, dtype, src, dst, sbuf, dbuf, offsets, time, packet, None, call, own_padding)
    else:
        result = _derived(hw, dtype, src, dst, sbuf, dbuf, offsets, call, own_padding)
    _check_holds(src, dst, sbuf, dbuf, call)
    return result


def staging(device: Side, name: str = "") -> Side:
    """The host buffer a PCIe DMA copies (host ↔ HBM, L44–57): the device side's levels laid out as they are,
    chip-major."""
    return Side("host", (("Element", pair_of(*(mp for _, mp in device.levels))),), 0,
                name or f"host staging of {device.label()}")


def _check_media(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, call: str) -> None:
    """What a DMA can move at all: its media (L2386–2389), its types (L2525) and no linear combination
    (L1006–1016), refused before any layout is derived from the sides."""
    for side in (src, dst):
        if side.medium == "spm":
            raise UnsupportedFeatureError(
                "this DMA planner moves HBM and DM; SPM (4 KiB per PE, L2942–2947) has its own moves with its "
                "own placement rules (visa.engines.spm)", call=call,
                fix="stage into SPM with `dm.to_spm(...)` and back with `spm.to_dm(...)`")
        if side.medium not in MEDIA:
            raise UnsupportedFeatureError(
                f"a DMA moves between HBM, DM and SPM (L2386–2389), not {side.medium.upper()}", call=call,
                fix="TRF and VRF are loaded by the Tensor Unit (.to_trf, .to_vrf)")
    if "host" in (src.medium, dst.medium) and {src.medium, dst.medium} != {"host", "hbm"}:
        raise UnsupportedFeatureError(
            f"the host exchanges tensors with HBM only (PCIe DMA, ctx.pdma; L44–57), not with "
            f"{NAMES[dst.medium if src.medium == 'host' else src.medium]}", call=call,
            fix="move the tensor to HBM first")
    if dtype.name not in hw.dma.dtypes:
        raise DtypeError(f"{dtype!r} is not a DMA type: the DMA moves {', '.join(sorted(hw.dma.dtypes))} "
                         "(L2525)", call=call, fix="cast to a memory type in the Tensor Unit first")
    for side in (src, dst):
        for level, mp in side.levels:
            if any(isinstance(d, C.Lin) for d in mp.canon):
                raise UnsupportedFeatureError(
                    f"{side.label()} lays {level} out as a linear combination, which a DMA cannot read or write as "
                    "a sequencer (L1006–1016)", call=call, level=level, mapping=repr(mp), axis=axes_text(mp),
                    fix="move the tensor in a layout without linear combinations")


def _axes(side: Side) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for _, mp in side.levels:
        out |= mp.axes
    return out


def _check_axes(src: Side, dst: Side, call: str) -> None:
    dropped = sorted(_axes(src) - _axes(dst))
    if dropped:
        level, mp = dst.levels[-1]
        raise LayoutError(
            f"{dst.label()} does not use axis {', '.join(dropped)} of {src.label()}: a move is the identity "
            "on the tensor (manual L1162–1197), so the destination must hold every index the source holds",
            call=call, level=level, mapping=repr(mp), axis=dropped[0],
            fix=f"put {dropped[0]} in one of the destination's level mappings")


def _buffer(hw: HardwareProfile, side: Side, bits: int) -> Mapping:
    """The side's levels as one buffer over its DMA address space, in elements."""
    maps = [mp for _, mp in side.levels]
    if side.medium == "host":
        return maps[0]
    space = address_space(hw, side.medium)
    per_unit = space.unit_bytes * 8 // bits
    return pair_of(*maps[:-1], maps[-1].pad(per_unit))


def _offset(side: Side, bits: int, call: str) -> int:
    if side.bit_address % bits:
        raise AddressError(f"{side.label()} starts at bit {side.bit_address}, inside an element", call=call,
                           level="Element", mapping=repr(side.levels[-1][1]), axis=axes_text(side.levels[-1][1]),
                           fix="place the tensor (or start the tile) on a whole element")
    return side.bit_address // bits


def _check_holds(src: Side, dst: Side, sbuf: Mapping, dbuf: Mapping, call: str) -> None:
    """The destination must hold every index the source holds (read the source's stream from it)."""
    dims = _stream_dims(src, pad_inner=False)
    if not dims or (fast_holds.HOLDS.on and fast_holds.every_index(dims, dst)):
        return
    try:
        derive_many([dbuf], Mapping.from_canon(tuple(dims)), IDENTITY, limits=_UNLIMITED, call=call)
    except InsufficientInputError as err:
        level, mp = dst.levels[-1]
        raise LayoutError(
            f"{dst.label()} does not hold every index {src.label()} holds (axis {err.axis}): a move is the "
            "identity on the tensor (manual L1162–1197)", call=call, level=level, mapping=repr(mp),
            axis=err.axis, fix="give the destination the whole extent of the axis, or move a tile (view.tile)"
        ) from None
    except (IncompatibleShapesError, HardwareLimitError):
        pass


def _stream_dims(side: Side, pad_inner: bool, own_padding: bool = True) -> list[C.Dim]:
    """The side's layout as stream digits, outermost first, without padding.  With ``pad_inner`` (and
    ``own_padding``) the Element's innermost padding stays: that of its innermost real digit (``N # 64``) and
    pure padding digits after it (``A, 1 # 2``, or all of ``1 # 8``).  The packet may then carry the element
    and its padding (a padded packet, L1818–1840), which writes the padding: only the destination's own, so
    never a view's (a tile's padding is the rest of its tensor, L813–832; a write "must never write beyond the
    tensor boundary", L7896) and never the Cluster's or Slice's (it stands for other units' bytes)."""
    dims = pair_of(*(mp for _, mp in side.levels)).canon
    real = [d for d in dims if isinstance(d, C.Dim) and d.atom is not None and d.count > 1]
    out = [C.Dim(d.atom, d.stride, d.count, d.count, 0) for d in real]
    if pad_inner and real and own_padding:
        edims = side.level("Element").canon
        ereal = [k for k, d in enumerate(edims) if isinstance(d, C.Dim) and d.atom is not None and d.count > 1]
        if ereal and real[-1].count < real[-1].size and edims[ereal[-1]] == real[-1]:
            out[-1] = real[-1]
        tail = edims[ereal[-1] + 1:] if ereal else edims
        out += [d for d in tail if isinstance(d, C.Dim) and d.atom is None and d.size > 1]
    return out


def _continue_padding(loops: list[_Loop], cfgs: tuple[SequencerConfig, SequencerConfig]
                      ) -> tuple[SequencerConfig, SequencerConfig]:
    """Innermost stream digits of pure padding (no axis, stride 0 on both sides) continue the packet into the
    next elements, as a padded packet does (L1818–1840, reading past the data L1841): stride 1 for the
    innermost, the product of the inner sizes for the next."""
    k = len(loops)
    while k > 0 and not loops[k - 1].axes and loops[k - 1].src == 0 and loops[k - 1].dst == 0:
        k -= 1
    if k == len(loops):
        return cfgs
    step = 1
    for j in range(len(loops) - 1, k - 1, -1):
        loops[j].src = loops[j].dst = step
        step *= loops[j].size
    out = []
    for cfg in cfgs:
        entries = list(cfg.entries)
        for j in range(k, len(loops)):
            entries[j] = replace(entries[j], stride=loops[j].src)
        out.append(replace(cfg, entries=tuple(entries)))
    return out[0], out[1]


def _derived(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, sbuf: Mapping, dbuf: Mapping,
             offsets: tuple[int, int], call: str, own_padding: bool = True) -> DmaPlan:
    """Pick the stream: the destination's digits; keep the innermost padding when it gives a larger packet."""
    tried: list[DmaPlan] = []
    errors: list[VisaError] = []
    variants = [_stream_dims(dst, False)]
    padded = _stream_dims(dst, True, own_padding)
    if padded != variants[0]:
        variants.append(padded)
    for dims in variants:
        try:
            tried.append(_attempt(hw, dtype, src, dst, sbuf, dbuf, offsets, None, None, dims, call))
        except VisaError as err:
            errors.append(err.with_traceback(None))  # (a kept traceback would hold this frame: a cycle)
    if not tried:
        # an address that stays misaligned whatever the packet says more than the packet that padding fixed
        raise next((e for e in errors if isinstance(e, AddressError)), errors[0])
    return max(tried, key=lambda p: p.stride0)


@dataclass
class _Loop:
    size: int
    src: int
    dst: int
    axes: str


def _labels(time: Mapping, packet: Mapping, sizes: list[int]) -> list[str]:
    """The axes each loop of a stream walks: those whose coordinate changes when its digit steps by one."""
    stream = pair_of(time, packet)
    weights = [math.prod(sizes[k + 1:]) for k in range(len(sizes))]
    try:
        ev = stream.evaluate(np.array([0, *weights], dtype=np.int64))
    except VisaError:
        return [""] * len(sizes)
    out = []
    for k in range(len(sizes)):
        moved = [a for a, v in ev.coords.items() if ev.valid[k + 1] and v[k + 1] != v[0]]
        out.append(", ".join(sorted(moved)))
    return out


def _split_dims(dims: list[C.Dim], p: int) -> tuple[list[C.Dim], list[C.Dim]] | None:
    """Split stream digits into (time, packet) so the packet is the innermost ``p`` positions."""
    packet: list[C.Dim] = []
    rest, k = p, len(dims)
    while k > 0 and rest > 1:
        d = dims[k - 1]
        if rest % d.size == 0:
            packet.insert(0, d)
            rest //= d.size
            k -= 1
        elif d.size % rest == 0 and d.count == d.size and d.offset == 0:
            packet.insert(0, C.Dim(d.atom, d.stride, rest, rest, 0))
            outer = C.Dim(d.atom, d.stride * rest, d.size // rest, d.size // rest, 0)
            return [*dims[: k - 1], outer], packet
        else:
            return None
    return (dims[:k], packet) if rest == 1 else None


def _as_mapping(dims: list[C.Dim]) -> Mapping:
    return Mapping.from_canon(tuple(dims)) if dims else IDENTITY


def _attempt(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, sbuf: Mapping, dbuf: Mapping,
             offsets: tuple[int, int], time: Mapping | None, packet: Mapping | None, dims: list[C.Dim] | None,
             call: str, own_padding: bool = True) -> DmaPlan:
    explicit = dims is None
    if dims is not None:
        time, packet = _as_mapping(dims), IDENTITY
    assert time is not None and packet is not None
    rcfg, wcfg = derive_many([sbuf, dbuf], time, packet, limits=_UNLIMITED, call=call)
    sizes = [e.size for e in rcfg.entries]
    labels = _labels(time, packet, sizes)
    loops = [_Loop(r.size, r.stride, w.stride, lab)
             for r, w, lab in zip(rcfg.entries, wcfg.entries, labels, strict=True)]
    if len(rcfg.entries) == len(loops):
        rcfg, wcfg = _continue_padding(loops, (rcfg, wcfg))
    bases = (rcfg.base + offsets[0], wcfg.base + offsets[1])
    if explicit:
        _check_writes(loops, dst, time, packet, call)
        _check_padding_writes(wcfg, bases[1], dbuf, dst, time, packet, call, own_padding)
    # the packet: the longest innermost run contiguous on both sides
    run_start, run = len(loops), 1
    if loops and loops[-1].src == 1 and loops[-1].dst == 1:
        run_start, run = len(loops) - 1, loops[-1].size
        while run_start > 0 and loops[run_start - 1].src == run and loops[run_start - 1].dst == run:
            run_start -= 1
            run *= loops[run_start].size
    run_axes = ", ".join(sorted({a for lp in loops[run_start:] for a in lp.axes.split(", ") if a}))
    split = None if explicit else (lambda p: _split_dims(dims or [], p) is not None)
    p = _packet_elements(hw, dtype, src, dst, run, run_axes, split, time, packet, call)
    head = loops[:run_start]
    if run // p > 1:
        head.append(_Loop(run // p, p, p, run_axes))
    bits = dtype.size_bits
    byte_loops = [_bytes_loop(lp, bits, src, dst, time, call) for lp in head]
    packet_loop = DmaLoop(p * bits // 8, 1, 1, run_axes)
    byte_base = (_bytes_of(bases[0], bits, src, call), _bytes_of(bases[1], bits, dst, call))
    if byte_base[0] < 0:  # a padded packet that starts with the destination's left padding (``# 2 + B``)
        raise AddressError(f"{src.label()}: the packet would read {-byte_base[0]} byte(s) before address 0, which "
                           "does not exist (a read may overfetch past its tensor, L7896, not out of memory)",
                           call=call, level="Packet", mapping=repr(packet), axis=run_axes or None,
                           fix="give the destination no left padding the source lacks, or place the source higher")
    _check_alignment(hw, src, dst, byte_loops, packet_loop, byte_base, time, call)
    spatial, commands, temporal = _distribute(hw, src, dst, byte_loops, explicit, call, time)
    if explicit:
        read = replace(rcfg, base=bases[0])
        write = replace(wcfg, base=bases[1])
    else:
        split_dims = _split_dims(dims or [], p)
        assert split_dims is not None
        time, packet = _as_mapping(split_dims[0]), _as_mapping(split_dims[1])
        read = _config([(lp.size, lp.src) for lp in head], p, bases[0])
        write = _config([(lp.size, lp.dst) for lp in head], p, bases[1])
    return DmaPlan(hw, call, dtype, src, dst, time, packet, read, write, tuple(spatial), tuple(commands),
                   (*temporal, packet_loop), byte_base, explicit)


def _config(loops: list[tuple[int, int]], p: int, base: int) -> SequencerConfig:
    entries = tuple(Entry(n, s) for n, s in loops) + ((Entry(p, 1, packet=True),) if p > 1 else ())
    return SequencerConfig(entries, p, base, entries)


def _check_writes(loops: list[_Loop], dst: Side, time: Mapping, packet: Mapping, call: str) -> None:
    """A given stream must write each destination element once (an axis the destination lacks would write
    the same bytes again)."""
    for k, lp in enumerate(loops):
        if lp.size > 1 and lp.dst == 0:
            level = "Packet" if k == len(loops) - 1 and packet.size > 1 else "Time"
            what = (f"axis {lp.axes}" if lp.axes else
                    f"a padding digit of {lp.size} positions (no axis) outside the packet's innermost digits")
            raise LayoutError(f"the stream walks {what} that {dst.label()} does not hold: the "
                              "DMA would write the same bytes again", call=call, level=level,
                              mapping=repr(packet if level == "Packet" else time), axis=lp.axes or None,
                              fix="stream only the destination's axes (padding only as the packet's innermost "
                                  "digits, where it continues the packet)")


_ENUMERATE = 1 << 22


def _check_padding_writes(wcfg: SequencerConfig, base: int, dbuf: Mapping, dst: Side, time: Mapping,
                          packet: Mapping, call: str, own_padding: bool = True) -> None:
    """A given stream's padding positions may only write the destination's own padding (none, unless
    ``own_padding``): "write sequencer configurations must never write beyond the tensor boundary" (L7896)."""
    stream = pair_of(time, packet)
    if stream.size > _ENUMERATE:
        return
    valid = stream.validity()
    addr = wcfg.addresses() - wcfg.base + base
    if valid.all():
        if np.unique(addr).size != addr.size:
            raise LayoutError(f"the stream writes some element of {dst.label()} twice", call=call, level="Time",
                              mapping=repr(time), fix="stream each destination index once")
        return
    unit = dbuf.size // math.prod(mp.size for _, mp in dst.levels[:-1])  # elements per chip / slice
    element = dst.levels[-1][1]
    offset_in_unit = (addr % unit) - (base % unit)
    outside = (offset_in_unit < 0) | (offset_in_unit >= element.size)
    clash = np.isin(addr[~valid], addr[valid])
    if not own_padding:  # a view's padding is the rest of its tensor (L813–832)
        raise LayoutError(
            f"the stream's padding positions would write the padding of {dst.label()}, which is the rest of its "
            "tensor: a write sequencer must never write beyond the tensor boundary (manual L7896)", call=call,
            level="Packet", mapping=repr(packet), fix="stream only the view's elements (no padding), or omit stream=")
    if outside[~valid].any() or clash.any():
        raise LayoutError(
            f"the stream's padding positions would write {dst.label()} outside its padding: a write sequencer "
            "must never write beyond the tensor boundary (manual L7896)", call=call, level="Packet",
            mapping=repr(packet), fix="pad the stream only where the destination is padded")


def _packet_elements(hw: HardwareProfile, dtype: type[dt.Scalar], src: Side, dst: Side, run: int, axes: str,
                     split: Callable[[int], bool] | None, time: Mapping, packet: Mapping, call: str) -> int:
    """The packet in elements: the largest divisor of the contiguous run allowed by the rules."""
    bits = dtype.size_bits
    align = _packet_align(hw, src, dst)
    best = 0
    for p in divisors(run):
        nbytes = p * bits
        if nbytes % 8 or nbytes // 8 > hw.dma.max_packet_bytes or (nbytes // 8) % align:
            continue
        if split is not None and not split(p):
            continue
        best = max(best, p)
    if best:
        return best
    run_bytes = run * bits / 8
    what = f"{run} {dtype!r} element(s) = {run_bytes:g} bytes" + (f" (axis {axes})" if axes else "")
    if bits < 8 and align == 1:
        raise HardwareLimitError(
            f"{src.label()} → {dst.label()}: the DMA moves whole bytes, and the longest run contiguous in both "
            f"layouts is {what}", call=call, level="Packet", mapping=repr(packet), axis=axes or None,
            fix="keep an even number of 4-bit elements contiguous in both layouts (pad with # 2)")
    medium = "HBM→DM transfers" if (src.medium, dst.medium) == ("hbm", "dm") else f"{NAMES[dst.medium]} writes"
    unit = max(1, align * 8 // bits)
    inner = axes.split(", ")[-1] if axes else _inner_axis(dst) or _inner_axis(src)
    padded = _stream_dims(dst, True)
    pads_each = bool(padded) and padded[-1].atom is None and padded[-1].size * bits % (8 * align) == 0
    if split is None and pads_each and packet.size == 1:  # the destination pads each element: carry it
        fix = (f"carry each element's padding in the packet: stream=({time!r}, m[\"1 # {padded[-1].size}\"]); "
               "or omit stream= and let visa derive it")
    elif split is None:  # a given stream: the packet is the kernel writer's choice
        fix = (f"give the stream a packet of a multiple of {align} bytes that is contiguous in both layouts (the "
               "innermost axes of both), or omit stream= and let visa derive it")
    else:
        fix = (f"pad axis {inner or '(innermost)'} in both layouts so that a contiguous run is a multiple of {align}"
               f" bytes (e.g. m[\"{inner or 'X'}, 1 # {unit}\"] or m[\"{inner or 'X'} # "
               f"{_round_up(run, unit)}\"] on both sides), or keep it contiguous on both sides")
    raise HardwareLimitError(
        f"{src.label()} → {dst.label()}: {medium} need packets of a multiple of {align} bytes (manual "
        f"L2424–2427), but the longest run contiguous in both layouts is {what}", call=call, level="Packet",
        mapping=repr(packet), axis=inner or None, fix=fix)


def _inner_axis(side: Side) -> str:
    """The axis of the side's innermost real digit ("" if none)."""
    dims = _stream_dims(side, pad_inner=False)
    if not dims:
        return ""
    return axes_text(Mapping.from_canon((dims[-1],))) or ""


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def _packet_align(hw: HardwareProfile, src: Side, dst: Side) -> int:
    align = hw.dma.packet_align[TABLE[dst.medium]]
    if (src.medium, dst.medium) == ("hbm", "dm"):
        align = max(align, hw.dma.hbm_to_dm_align)
    return align


def _bytes_of(elements: int, bits: int, side: Side, call: str) -> int:
    if (elements * bits) % 8:
        raise AddressError(f"{side.label()}: element {elements} starts inside a byte; the DMA addresses bytes",
                           call=call, level="Element", mapping=repr(side.levels[-1][1]),
                           axis=axes_text(side.levels[-1][1]), fix="start 4-bit tensors and tiles on an even element")
    return elements * bits // 8


def _bytes_loop(lp: _Loop, bits: int, src: Side, dst: Side, time: Mapping, call: str) -> DmaLoop:
    for stride, side in ((lp.src, src), (lp.dst, dst)):
        if (stride * bits) % 8:
            raise HardwareLimitError(
                f"{side.label()}: one step of axis {lp.axes or '?'} moves {stride} 4-bit elements, half a byte; "
                "the DMA addresses bytes", call=call, level="Time", mapping=repr(time), axis=lp.axes or None,
                fix="pad the axes inside it to an even number of elements (# 2)")
    return DmaLoop(lp.size, lp.src * bits // 8, lp.dst * bits // 8, lp.axes)


def _check_alignment(hw: HardwareProfile, src: Side, dst: Side, loops: list[DmaLoop], packet_loop: DmaLoop,
                     base: tuple[int, int], time: Mapping, call: str) -> None:
    """Read and write addresses (L2424–2427): DM writes 8 B; HBM→DM 8 B on both sides."""
    hbm_to_dm = (src.medium, dst.medium) == ("hbm", "dm")
    for k, side in enumerate((src, dst)):
        table = hw.dma.write_address_align if k else hw.dma.read_address_align
        align = table[TABLE[side.medium]]
        if hbm_to_dm:
            align = max(align, hw.dma.hbm_to_dm_align)
        if align == 1:
            continue
        what = "writes" if k else "reads"
        rule = "HBM→DM transfers need" if hbm_to_dm else f"{NAMES[side.medium]} {what} need"
        if base[k] % align:
            level, mp = side.levels[-1]
            addr = base[k] % address_space(hw, side.medium).unit_bytes
            raise AddressError(
                f"{side.label()}: {rule} {align}-byte aligned addresses (manual L2424–2427), but the DMA "
                f"{what} it from byte {addr}", call=call, level=level, mapping=repr(mp), axis=axes_text(mp),
                fix=f"use an address (or tile start) that is a multiple of {align} bytes")
        for lp in loops:
            stride = lp.dst if k else lp.src
            if lp.size > 1 and stride % align:
                raise AddressError(
                    f"{side.label()}: {rule} {align}-byte aligned addresses (manual L2424–2427), but successive "
                    f"packets along axis {lp.axes or '?'} start {stride} bytes apart", call=call, level="Time",
                    mapping=repr(time), axis=lp.axes or None,
                    fix=f"pad the axes inside {lp.axes or 'it'} so that one step is a multiple of {align} bytes"
                        + (f" (e.g. m[\"{lp.axes}, 1 # {align // math.gcd(stride, align)}\"] where {lp.axes} is "
                           f"innermost in {side.label()})" if lp.axes and ", " not in lp.axes else ""))


def _distribute(hw: HardwareProfile, src: Side, dst: Side, loops: list[DmaLoop], explicit: bool, call: str,
                time: Mapping) -> tuple[list[DmaLoop], list[DmaLoop], list[DmaLoop]]:
    """Split the loops (without the packet) into engines, commands and one command's sequencer."""
    spaces = (address_space(hw, src.medium), address_space(hw, dst.medium))
    spatial: list[DmaLoop] = []
    temporal: list[DmaLoop] = []
    # engines follow the DM side, the source's when both are DM ("the source DM DMN's engine", L2549)
    dm_side = 0 if src.medium == "dm" else 1 if dst.medium == "dm" else None
    d = hw.dm
    pair = hw.dma.dmns_per_engine * d.slices_per_dmn * d.slice_address_space_bytes
    for lp in loops:
        if explicit:
            temporal.append(lp)
            continue
        strides = (lp.src, lp.dst)
        if any(s and s % sp.chip_bytes == 0 for s, sp in zip(strides, spaces, strict=True)):
            spatial.append(lp)
            continue
        s = strides[dm_side] if dm_side is not None else 0
        if s and s % pair == 0:
            spatial.append(lp)
        elif s and pair % s == 0 and s * lp.size > pair and lp.size % (pair // s) == 0:
            k = pair // s
            spatial.append(DmaLoop(lp.size // k, lp.src * k, lp.dst * k, lp.axes))
            temporal.append(DmaLoop(k, lp.src, lp.dst, lp.axes))
        else:
            temporal.append(lp)
    if not explicit:
        _split_by_dmn(hw, spaces, dm_side, spatial, temporal)
        _interleave_dmns(hw, src, dst, temporal)
        _interleave_dmns(hw, src, dst, temporal)
    temporal = _fit_sizes(hw, temporal, call, time)
    commands: list[DmaLoop] = []
    limit = hw.sequencer.max_entries - 1  # the packet is the last entry
    if len(temporal) > limit:
        temporal = _merge(hw, temporal)
    while len(temporal) > limit:
        commands.append(temporal.pop(0))
    return spatial, commands, temporal


def _split_by_dmn(hw: HardwareProfile, spaces: tuple[AddressSpace, AddressSpace], dm_side: int | None,
                  spatial: list[DmaLoop], temporal: list[DmaLoop]) -> None:
    """Spread a slice loop over more than one DMN that is not a whole number of DMN pairs (224 slices: 3½
    pairs; 80 slices: 2½ DMNs; 48: 1½) over engines whose ranges each stay within one DMN, if the chip has the
    engines (8, L2404, L2831).

    The manual's answer to a slice count that does not divide among the DMNs is a heterogeneous operation
    (L2752–2808: whole pairs on their engines, the rest on its own); visa plans a homogeneous equivalent: the
    loop's slices in equal runs of ``c`` slices, ``c`` the largest divisor of the slices per DMN that divides
    the loop and leaves at most the free engines (224 slices: 7 runs of 32, one per DMN; 80: 5 runs of 16;
    48: 3 of 16).  Each engine reads its run at a DMN's 128 B/cycle (L2603); engines of one DMN share it, so
    the DMA lasts as long as its busiest DMN, as the heterogeneous operation does (a pair's engine alternates
    two DMNs at 256 B/cycle for twice the bytes).  Any engine may serve any DMN (L2547–2548).  A loop over one
    DMN or less, or over whole pairs (planned per pair by :func:`_distribute`, alternating the pair's DMNs by
    :func:`_interleave_dmns`), is left alone."""
    if dm_side is None:
        return
    d = hw.dm
    dmn = d.slices_per_dmn * d.slice_address_space_bytes
    def per_chip(lp: DmaLoop) -> bool:  # a loop of engines within a chip, not of chips
        return not any(x and x % sp.chip_bytes == 0 for x, sp in zip((lp.src, lp.dst), spaces, strict=True))
    free = hw.dma.engines_per_chip // math.prod(lp.size for lp in spatial if per_chip(lp))
    for k, lp in enumerate(temporal):
        s = lp.dst if dm_side else lp.src
        if not s or dmn % s or s * lp.size <= dmn:
            continue
        per = dmn // s
        if lp.size == per * hw.dma.dmns_per_engine:
            continue  # one whole pair: its engine alternates the two DMNs (L2883–2893)
        run = max((c for c in divisors(per) if lp.size % c == 0 and lp.size // c <= free), default=0)
        if not run or lp.size // run == 1:
            continue
        spatial.append(DmaLoop(lp.size // run, lp.src * run, lp.dst * run, lp.axes))
        temporal[k] = DmaLoop(run, lp.src, lp.dst, lp.axes)
        return


def _interleave_dmns(hw: HardwareProfile, src: Side, dst: Side, temporal: list[DmaLoop]) -> None:
    """Make the innermost loop alternate the two DMNs of the engine's pair, if a loop walks both (L2883–2893).

    A loop over the slices of the pair is split into its DMN digit and the slices within a DMN first."""
    dmn = hw.dm.slices_per_dmn * hw.dm.slice_address_space_bytes
    pair = hw.dma.dmns_per_engine
    for side, medium in ((1, dst.medium), (0, src.medium)):
        if medium != "dm":
            continue
        for k in range(len(temporal) - 1, -1, -1):
            lp = temporal[k]
            s = lp.dst if side else lp.src
            if s and dmn % s == 0 and s * lp.size == pair * dmn and lp.size > pair:
                inner = lp.size // pair
                temporal[k: k + 1] = [DmaLoop(pair, lp.src * inner, lp.dst * inner, lp.axes),
                                      DmaLoop(inner, lp.src, lp.dst, lp.axes)]
                s = dmn
                lp = temporal[k]
            if s == dmn and lp.size == pair:
                temporal.append(temporal.pop(k))
                return


def _fit_sizes(hw: HardwareProfile, loops: list[DmaLoop], call: str, time: Mapping) -> list[DmaLoop]:
    """Split loops longer than the sequencer's limit (L1631) into two."""
    limit = hw.sequencer.max_entry_size
    out: list[DmaLoop] = []
    for lp in loops:
        if lp.size <= limit:
            out.append(lp)
            continue
        inner = max((q for q in divisors(lp.size) if q <= limit and lp.size // q <= limit), default=0)
        if not inner:
            raise HardwareLimitError(
                f"a DMA loop of {lp.size} iterations (axis {lp.axes or '?'}) cannot be split into loops of at most "
                f"{limit} (manual L1631)", call=call, level="Time", mapping=repr(time), axis=lp.axes or None,
                fix="pad the axis to a size with a divisor at most 65536")
        out.append(DmaLoop(lp.size // inner, lp.src * inner, lp.dst * inner, lp.axes))
        out.append(DmaLoop(inner, lp.src, lp.dst, lp.axes))
    return out


def _merge(hw: HardwareProfile, loops: list[DmaLoop]) -> list[DmaLoop]:
    """Merge adjacent loops contiguous on both sides (L1567–1627)."""
    out = list(loops)
    k = len(out) - 1
    while k > 0:
        o, i = out[k - 1], out[k]
        if o.src == i.size * i.src and o.dst == i.size * i.dst and o.size * i.size <= hw.sequencer.max_entry_size:
            axes = ", ".join(sorted({a for a in (o.axes + ", " + i.axes).split(", ") if a}))
            out[k - 1: k + 1] = [DmaLoop(o.size * i.size, i.src, i.dst, axes)]
        k -= 1
    return out


