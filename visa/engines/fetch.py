"""Fetch Engine: DM to a packet stream, through the Fetch Sequencer and the Fetch Adapter (manual L1689–2144).

:func:`plan` derives, from dtypes and mappings only, everything the hardware is configured with:

* the **sequencer** configuration ``[size : stride, ...] : packet`` that reads the DM Element as the stream
  ``(Time, Packet)`` (the mapping algebra, :func:`visa.mapping.sequencer.derive`; L1219–1688);
* ``contiguous_sram_access_size``, ``fetch_size`` (the largest size the context supports dividing
  ``gcd(packet_size, contiguous_sram_access_size)``, L1757–1762) and ``fetches_per_packet`` (batching,
  L2050–2060);
* the **adapter** stages in the manual's order (L1870): masking of the innermost axis' padding (the three
  cases of L1877–1935), table indexing (L1936–1959), type casting per the profile's table with the 32-byte
  limit on one fetch's output (L1960–2021), zero-point subtraction, one per interleaved tensor (L2022–2049),
  and batching;
* the rules: Cluster 2 and Slice 256 (L1707–1709), an 8-byte aligned output packet (L1711–1716), the sub
  context's adapter (zero-point subtraction only) and fetch sizes (4 or 8 bytes; L1758–1759, L1870).

:func:`execute` runs the derived loops over the DM byte images (one gather per chip, vectorised over clusters
and slices); :func:`cycles` is ``Time::SIZE × ceil(packet_size / fetch_size)`` (L2060).  Padding in a fetched
packet is poison (unknown) unless the masking stage writes ``pad_value`` there.

>>> from visa.hw import RNGD
>>> from visa.dtypes import i8
>>> from visa.mapping import AxisSet
>>> ax = AxisSet(N=4, C=3, H=4, W=8)
>>> one, cl, sl = ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"]
>>> cfg = plan(RNGD, i8, i8, one, cl, sl, ax.m["N, C, H, W"], ax.m["N"], ax.m["C, H, W"])   # manual L2099
>>> cfg.fetch_size, cfg.fetches_per_packet, cycles(cfg)
(32, 3, 12)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines import fast_mask_rows, fast_zero_point
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text, engine_call, unit_validity
from visa.errors import (
    AddressError,
    DtypeError,
    HardwareLimitError,
    LayoutError,
    UnsupportedFeatureError,
    UnsupportedOnProfileError,
    VisaError,
)
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping import canon as C
from visa.mapping.evaluate import validity
from visa.mapping.sequencer import SequencerConfig, derive, stream_items
from visa.memory.images import DenseImage, load
from visa.memory.known import is_everywhere
from visa.memory.performance import sequence_bank_runs
from visa.memory.units import UnitSelection, enabled_units, unwrite

__all__ = ["FetchConfig", "MaskConfig", "LookupTable", "PadValue", "plan_pad_value",
           "plan", "plan_interleave", "view_bit_base", "execute", "cycles",
           "stream_validity", "CONTEXTS", "UnitSelection", "unwrite"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_call = functools.partial(engine_call, "fetch")  # a refusal's call: "fetch <stage>" (sub context marked)

#: The Tensor Unit contexts (manual L150–155, L3046–3052).
CONTEXTS = ("main", "sub")

Din = TypeVar("Din", bound=dt.Scalar)
Dout = TypeVar("Dout", bound=dt.Scalar)


# ------------------------------------------------------------------------------------------------ table


class LookupTable(Generic[Din, Dout]):
    """``LookupTable<Din, Dout>``: the Fetch Adapter's table indexing stage (manual L1936–1959).

    Each input value, taken as its unsigned bit pattern (``0 .. 2**bits - 1``), indexes the table; the entry
    replaces it.  ``values`` has one entry per bit pattern, in ``dout``'s storage type.

    >>> from visa.dtypes import i8
    >>> t = LookupTable.from_function(i8, i8, lambda x: np.clip(2 * x, -128, 127))   # table[x] = 2x (L1946)
    >>> t.lookup(np.arange(8, dtype=np.int8)).tolist()
    [0, 2, 4, 6, 8, 10, 12, 14]
    """

    __slots__ = ("din", "dout", "values")

    #: The largest input width a table is built for (2**16 entries); the manual gives no table size.
    MAX_INPUT_BITS = 16

    def __init__(self, din: type[Din], dout: type[Dout], values: npt.ArrayLike) -> None:
        if din.image_bits > self.MAX_INPUT_BITS:
            raise UnsupportedFeatureError(
                f"a lookup table indexed by {din!r} would need 2**{din.image_bits} entries; the manual gives no "
                f"table size (L1936–1959), visa builds tables for inputs of at most {self.MAX_INPUT_BITS} bits",
                call="LookupTable", fix="index by an 8- or 16-bit type")
        arr = dt.as_storage(dout, np.asarray(values))
        want = 1 << din.image_bits
        if arr.shape != (want,):
            raise DtypeError(f"a LookupTable[{din!r}, {dout!r}] has {want} entries (one per bit pattern of "
                             f"{din!r}), got an array of shape {arr.shape}", call="LookupTable",
                             fix="use LookupTable.from_function(din, dout, f)")
        self.din: type[Din] = din
        self.dout: type[Dout] = dout
        self.values = arr

    @classmethod
    def from_function(cls, din: type[Din], dout: type[Dout],
                      fn: Callable[[npt.NDArray[Any]], npt.ArrayLike]) -> LookupTable[Din, Dout]:
        """The table of ``fn`` over every value of ``din`` (in bit-pattern order); ``fn`` returns ``dout`` values."""
        patterns = np.arange(1 << din.image_bits, dtype=np.int64)
        inputs = dt.from_bits(din, patterns)
        return cls(din, dout, np.asarray(fn(inputs)))

    def lookup(self, values: npt.ArrayLike) -> npt.NDArray[Any]:
        """The table entries for ``values`` (of ``din``)."""
        bits = dt.to_bits(self.din, values).astype(np.int64)
        out: npt.NDArray[Any] = self.values[bits]
        return out

    def __repr__(self) -> str:
        return f"LookupTable[{self.din!r}, {self.dout!r}]"


# ------------------------------------------------------------------------------------------------ configs


@dataclass(frozen=True)
class MaskConfig:
    """The masking stage (manual L1877–1935): which packet positions are forced to ``pad_value``.

    The masked axis is the innermost packet digit (``q``, ``packet_size`` positions, weight ``packet_weight``
    in the packet); its outer part, if any, is one Time digit (``i``, ``dim_size`` positions, weight
    ``time_weight``): the manual's ``last_dim``.  For index ``i`` the valid positions are ``lo[i] <= q < hi[i]``;
    the others take ``pad_value``.  ``case`` is the manual's: 1 (the masked Time digit is Time's innermost, or
    there is none), 2 (it is not: the padding regions are split across the data), 3 (a valid count per index).
    """

    case: int
    last_dim: int
    dim_size: int
    time_weight: int
    packet_size: int
    packet_weight: int
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    pad_value: int | float = 0

    def __str__(self) -> str:
        right = self.packet_size - self.hi[-1]
        if self.case in (1, 2):
            return (f"masking case {self.case}: last_dim = {self.last_dim}, left_pad = {self.lo[0]}, "
                    f"last_dim_rightmost_valid_count[0] = {self.hi[-1]} (masks {right} on the right), "
                    f"pad_value = {self.pad_value}")
        counts = ", ".join(str(h) for h in self.hi)
        return (f"masking case 3: last_dim = {self.last_dim}, left_pad = {self.lo[0]}, "
                f"last_dim_rightmost_valid_count[0..{self.dim_size}] = [{counts}], pad_value = {self.pad_value}")

    def positions(self, time_size: int, packet_size: int) -> BoolArray:
        """``(Time, Packet)`` mask: True where the stage writes ``pad_value``."""
        i = (np.arange(time_size, dtype=np.int64) // self.time_weight) % self.dim_size
        q = (np.arange(packet_size, dtype=np.int64) // self.packet_weight) % self.packet_size
        lo = np.asarray(self.lo, dtype=np.int64)[i][:, None]
        hi = np.asarray(self.hi, dtype=np.int64)[i][:, None]
        out: BoolArray = (q[None, :] < lo) | (q[None, :] >= hi)
        return out


@dataclass(frozen=True)
class FetchConfig:
    """Everything :func:`plan` derives for one fetch: the sequencer and adapter settings (manual L1689–2144).

    Sizes in bytes: ``packet_size`` (bytes the sequencer reads per packet, in the buffer's dtype),
    ``output_packet_bytes`` (after the adapter, in ``dst``), ``contiguous_sram_access_size``, ``fetch_size``.
    ``sequencer`` strides count elements of ``src``; its base is relative to the tensor's element 0 (with an
    interleaved pair, the buffer is ``[I, Element]`` and position ``k·Element::SIZE + e`` is tensor k's ``e``).
    """

    context: str
    src: type[dt.Scalar]
    dst: type[dt.Scalar]
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    element: Mapping
    time: Mapping
    packet: Mapping
    interleave: Mapping | None
    sequencer: SequencerConfig
    packet_size: int
    output_packet_bytes: int
    contiguous_sram_access_size: int
    fetch_size: int
    fetches_per_packet: int
    mask: MaskConfig | None
    table: tuple[type[dt.Scalar], type[dt.Scalar]] | None
    cast: tuple[type[dt.Scalar], type[dt.Scalar]] | None
    zero_points: tuple[int, ...]
    latency: int = 0
    note: str = ""

    def stages(self) -> list[str]:
        """The adapter stages this fetch uses, in the manual's order (L1870)."""
        out = []
        if self.mask is not None:
            out.append(str(self.mask))
        if self.table is not None:
            out.append(f"table indexing {self.table[0]!r} → {self.table[1]!r}")
        if self.cast is not None:
            out.append(f"type casting {self.cast[0]!r} → {self.cast[1]!r}")
        if self.zero_points:
            out.append("zero-point subtraction " + ", ".join(str(z) for z in self.zero_points))
        if self.fetches_per_packet > 1:
            out.append(f"batching {self.fetches_per_packet} fetches per packet")
        return out

    def describe(self, addresses: Sequence[int] = ()) -> str:
        """The configuration in the manual's notation; ``addresses`` are the DM byte addresses of the tensors."""
        seq = str(self.sequencer)
        if addresses:
            names = ("lhs", "rhs") if len(addresses) > 1 else ("",)
            seq += " on DM " + ", ".join(f"{n} {a}".strip() for n, a in zip(names, addresses, strict=False))
        if self.interleave is not None:
            seq += f" (interleaved along {self.interleave!r})"
        parts = [f"fetch[{self.context}] {self.src!r}", f"sequencer {seq}",
                 f"contiguous_sram_access_size = {self.contiguous_sram_access_size} B, packet_size = "
                 f"{self.packet_size} B, fetch_size = {self.fetch_size} B, fetches_per_packet = "
                 f"{self.fetches_per_packet}"]
        parts.append("adapter: " + ("; ".join(self.stages()) or "pass-through"))
        parts.append(f"out {self.dst!r} Time {self.time!r} ({self.time.size}), Packet {self.packet!r} "
                     f"({self.output_packet_bytes} B)")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.describe()


# ------------------------------------------------------------------------------------------------ plan


def plan(hw: HardwareProfile, src: type[dt.Scalar], dst: type[dt.Scalar], chip: Mapping, cluster: Mapping,
         slice_: Mapping, element: Mapping, time: Mapping, packet: Mapping, *, context: str = "main",
         interleave: Mapping | None = None, table: tuple[type[dt.Scalar], type[dt.Scalar]] | None = None,
         zero_points: tuple[int, ...] | None = None, pad_value: PadValue | None = None) -> FetchConfig:
    """The Fetch Engine's configuration reading ``DmTensor<src, chip, cluster, slice_, element>`` as the stream
    ``FetchTensor<dst, chip, cluster, slice_, time, packet>`` in ``context`` (``"main"`` or ``"sub"``).

    ``interleave`` is the axis ``I`` of ``begin_interleaved`` (L1843–1868), ``table`` the ``(Din, Dout)`` of a
    ``LookupTable`` (L1936–1959), ``zero_points`` the values subtracted (L2022–2049), ``pad_value`` what the
    masking stage writes into the masked padding (default zero, L1898–1902).  Pure: raises the rule's
    :class:`~visa.errors.VisaError` or returns the configuration.
    """
    cfg = _plan(hw, src, dst, chip, cluster, slice_, element, time, packet, context, interleave, table,
                None if zero_points is None else tuple(int(z) for z in zero_points))
    if pad_value is None:
        return cfg
    value = plan_pad_value(pad_value, src, context, packet)
    if cfg.mask is None or cfg.mask.pad_value == value:
        return cfg
    return replace(cfg, mask=replace(cfg.mask, pad_value=value))


@dataclass(frozen=True)
class PadValue:
    """What the masking stage writes into padding (manual L1898–1902; seed 003's pad values): ``PadValue.Zero``,
    ``PadValue.Min`` (the element type's minimum: ``-inf`` for a float type that has one, else its lowest
    value), ``PadValue.Max`` (``+inf`` / its highest), ``PadValue.Custom(v)`` (``v``, exactly representable).

    ``PadValue.identity(op)`` is the padding under which a reduction ignores the padded elements (L5544–5565):
    ``Max`` pads with Min, ``Min`` with Max, ``Add``/``AddSat`` with zero, ``Mul`` with one.
    """

    kind: str
    value: int | float | None = None
    Zero: ClassVar[PadValue]
    Min: ClassVar[PadValue]
    Max: ClassVar[PadValue]

    @classmethod
    def Custom(cls, value: int | float) -> PadValue:  # noqa: N802 - the seed's spelling (PadValueCustom)
        """Pad with ``value`` (it must be exactly representable in the fetched element type)."""
        return cls("Custom", value)

    @classmethod
    def identity(cls, op: Any) -> PadValue:
        """The identity padding of a reduce operator (``IntraSliceReduceOpF32.Max`` → ``PadValue.Min``; L5556)."""
        name = getattr(op, "name", op)
        table = {"Max": cls.Min, "Min": cls.Max, "Add": cls.Zero, "AddSat": cls.Zero, "Mul": cls("Custom", 1)}
        got = table.get(str(name))
        if got is None:
            raise DtypeError(f"{op!r} has no identity padding (Max, Min, Add, AddSat and Mul have)",
                             call="PadValue.identity", line=5556, fix="pad with PadValue.Custom(value)")
        return got

    def __repr__(self) -> str:
        return f"PadValue.Custom({self.value!r})" if self.kind == "Custom" else f"PadValue.{self.kind}"


PadValue.Zero = PadValue("Zero")
PadValue.Min = PadValue("Min")
PadValue.Max = PadValue("Max")


def plan_pad_value(pad: Any, src: type[dt.Scalar], context: str, packet: Mapping | None = None) -> int | float:
    """The value ``pad`` writes into a ``src`` element (the masking stage runs before the cast, L1870), or the
    rule that refuses it: a :class:`PadValue`, in the main context (the sub context has no masking, L1870), and a
    custom value exactly representable in ``src``.  Pure (the stream and the mypy plugin call it)."""
    call = "fetch masking"
    where = dict(level="Packet", mapping=None if packet is None else repr(packet),
                 axis=None if packet is None else axes_text(packet))
    if not isinstance(pad, PadValue):
        raise DtypeError(f"pad_value takes a PadValue, got {pad!r}", call=call, line=1898, **where,
                         fix="pass PadValue.Zero, PadValue.Min, PadValue.Max or PadValue.Custom(v)")
    if context != "main":
        raise HardwareLimitError("the sub context's fetch has no masking stage, so no pad value (manual L1870)",
                                 call=engine_call("fetch", "masking", context), line=1870, **where,
                                 fix="fetch in ctx.main to pad with a value")
    if pad.kind == "Zero":
        return 0
    if pad.kind in ("Min", "Max"):
        sign = -1.0 if pad.kind == "Min" else 1.0
        if src.kind == "float" and dt.is_representable(sign * math.inf, src):
            return sign * math.inf
        extreme = src.min if pad.kind == "Min" else src.max
        return int(extreme) if src.kind == "int" else float(extreme)
    value = pad.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not dt.is_representable(value, src):
        raise DtypeError(f"PadValue.Custom({value!r}) is not exactly representable in {src!r}, the type the "
                         "masking stage writes (before the cast, L1870)", call=call, line=1898, **where,
                         fix=f"pad with a value of {src!r}")
    return value


def plan_interleave(hw: HardwareProfile, axis: Mapping, lhs: tuple[type[dt.Scalar], AbcMapping[str, Mapping]],
                    rhs: tuple[type[dt.Scalar], AbcMapping[str, Mapping]]) -> None:
    """``begin_interleaved::<I, …>(lhs, rhs)``'s rules (L1843–1868): the axis ``I`` has size
    ``max_interleaved`` (at most two tensors, L1850) and the two tensors have identical dtypes and mappings
    (L1845).  ``lhs``/``rhs`` are ``(dtype, {"Chip", "Cluster", "Slice", "Element": mapping})`` of the views.
    Pure (the stream and the mypy plugin call it)."""
    call = "begin_interleaved"
    _check_interleave_size(hw, axis, call)
    (da, a), (db, b) = lhs, rhs
    for level in ("Chip", "Cluster", "Slice"):
        if a[level] != b[level]:
            raise LayoutError(f"interleaved tensors need identical mappings; {level} differs: "
                              f"{a[level]!r} vs {b[level]!r} (manual L1845)", call=call,
                              level=level, mapping=repr(b[level]),
                              axis=", ".join(sorted(a[level].axes ^ b[level].axes)) or axes_text(b[level]),
                              fix=f"place both tensors with the same {level} mapping")
    if a["Element"] != b["Element"] or da is not db:
        raise LayoutError(f"interleaved tensors need identical dtypes and mappings; got {da!r} Element "
                          f"{a['Element']!r} and {db!r} Element {b['Element']!r} (manual L1845)", call=call,
                          level="Element", mapping=repr(b["Element"]),
                          axis=", ".join(sorted(a["Element"].axes ^ b["Element"].axes)) or None,
                          fix="interleave two tensors of one dtype laid out with the same Element")


def _check_interleave_size(hw: HardwareProfile, axis: Mapping, call: str) -> None:
    """The interleave axis selects one of ``max_interleaved`` tensors: at most two per fetch (L1850)."""
    max_n = hw.fetch.max_interleaved
    if axis.size != max_n:
        raise LayoutError(f"the interleave axis {axis!r} must have size {max_n}: at most two tensors are "
                          "interleaved in one fetch (manual L1850)", call=call, level="Time",
                          mapping=repr(axis), axis=axes_text(axis),
                          fix=f"declare the interleave axis with size {max_n}, e.g. axes(I={max_n})")


def view_bit_base(hw: HardwareProfile, dtype: type[dt.Scalar], address: int, offset: int, element: Mapping) -> int:
    """The bit address the Fetch Engine starts a view at: the base tensor's byte ``address`` plus ``offset``
    elements of ``dtype``; refused unless it is on an ``address_align_bytes`` boundary (L1756).  Pure (the
    stream and the mypy plugin call it)."""
    align = hw.fetch.address_align_bytes
    bits = address * 8 + offset * dtype.image_bits
    if bits % (8 * align):
        raise AddressError(f"the view starts at bit {bits}, not on a {align}-byte boundary: fetch addresses "
                           f"are {align}-byte aligned (manual L1756)", call="fetch sequencer", level="Element",
                           mapping=repr(element), axis=axes_text(element), fix="start the tile on a whole byte")
    return bits


@cached(512)
def _plan(hw: HardwareProfile, src: type[dt.Scalar], dst: type[dt.Scalar], chip: Mapping, cluster: Mapping,
          slice_: Mapping, element: Mapping, time: Mapping, packet: Mapping, context: str,
          interleave: Mapping | None, table: tuple[type[dt.Scalar], type[dt.Scalar]] | None,
          zero_points: tuple[int, ...] | None) -> FetchConfig:
    f = hw.fetch
    if context not in CONTEXTS:
        raise VisaError(f"unknown Tensor Unit context {context!r}; expected one of {CONTEXTS}", call="fetch")
    # -- the asserts of the real fetch body (L1707-1716) --------------------------------------------------
    if cluster.size != hw.dm.clusters_per_chip:
        raise HardwareLimitError(f"Cluster size must be {hw.dm.clusters_per_chip}, got {cluster.size} "
                                 "(manual L1708)", call=_call("sequencer", context), level="Cluster",
                                 mapping=repr(cluster), axis=axes_text(cluster),
                                 fix=f'pad it: m["1 # {hw.dm.clusters_per_chip}"]')
    if slice_.size != hw.dm.slices_per_cluster:
        raise HardwareLimitError(f"Slice size must be {hw.dm.slices_per_cluster}, got {slice_.size} "
                                 "(manual L1709)", call=_call("sequencer", context), level="Slice",
                                 mapping=repr(slice_), axis=axes_text(slice_),
                                 fix=f'pad it: m["X # {hw.dm.slices_per_cluster}"]')
    out_bits = packet.size * dst.size_bits
    if out_bits % (8 * f.align_bytes):
        got = out_bits // 8 if out_bits % 8 == 0 else out_bits / 8
        unit = 8 * f.align_bytes // math.gcd(8 * f.align_bytes, dst.size_bits)
        raise HardwareLimitError(
            f"Fetch output packet must be {f.align_bytes}-byte aligned, got {got} bytes. (manual L1711–1716)",
            call=_call("adapter", context), level="Packet", mapping=repr(packet), axis=axes_text(packet),
            fix=f"pad the packet to a multiple of {f.align_bytes} bytes, e.g. "
                f"m[\"{packet.text} # {_round_up(packet.size, unit)}\"]")
    in_bits = packet.size * src.size_bits
    if in_bits % 8:
        raise HardwareLimitError(f"a packet of {packet.size} {src!r} elements is {in_bits} bits, not whole bytes",
                                 call=_call("sequencer", context), level="Packet", mapping=repr(packet),
                                 axis=axes_text(packet), fix="pad the packet to an even number of elements")
    # -- interleaving (L1843-1868) ------------------------------------------------------------------------
    buffer = element
    if interleave is not None:
        _check_interleave_size(hw, interleave, _call("sequencer", context))
        clash = interleave.axes & (element.axes | slice_.axes | cluster.axes | chip.axes)
        if clash:
            raise LayoutError(f"the interleave axis {interleave!r} is also an axis of the tensors",
                              call=_call("sequencer", context), level="Time", mapping=repr(interleave),
                              axis=", ".join(sorted(clash)), fix="use a fresh axis name for I")
        if not interleave.axes <= time.axes or interleave.axes & packet.axes:
            raise LayoutError(f"the interleave axis {interleave!r} selects the tensor, one per time step: it "
                              "must be an axis of Time, not of Packet (manual L1850–1852)",
                              call=_call("sequencer", context), level="Time", mapping=repr(time),
                              axis=axes_text(interleave), fix=f"put {interleave.text} in Time, e.g. m[\"..., "
                                                          f"{interleave.text}\"]")
        buffer = pair_of(interleave, element)
    # -- the sequencer (L1219-1688, L1749-1762) ------------------------------------------------------------
    seq = derive(buffer, time, packet, limits=hw.sequencer, call=_call("sequencer", context))
    contiguous_bits = seq.contiguous_elements() * src.size_bits
    # -- adapter: table, cast, zero points ---------------------------------------------------------------
    after_table = src
    if table is not None:
        if context != "main":
            raise HardwareLimitError("table indexing is a main-context adapter stage; the sub context's adapter "
                                     "only subtracts zero points (manual L1870, L1936)",
                                     call=_call("adapter", context), fix="fetch with a table in ctx.main")
        if table[0] is not src:
            raise DtypeError(f"the lookup table is indexed by {table[0]!r} but the tensor holds {src!r}",
                             call=_call("table indexing", context), fix=f"build a LookupTable[{src!r}, ...]")
        after_table = table[1]
    cast = None
    if after_table is not dst:
        refusal = hw.fetch_cast_refusal(after_table.name, dst.name)
        if refusal is not None:
            other = [p for p in _profiles() if p.supports_fetch_cast(after_table.name, dst.name)]
            cls = UnsupportedOnProfileError if other else DtypeError
            raise cls(refusal, call=_call("type casting", context), level="Packet", mapping=repr(packet),
                      axis=axes_text(packet),
                      fix=f"fetch as {after_table!r} and cast later, or choose a target the table lists")
        cast = (after_table, dst)
    zps: tuple[int, ...] = ()
    if zero_points is not None:
        zps = _check_zero_points(hw, dst, zero_points, interleave, context)
    # -- fetch_size (L1757-1762, L1996-2021) ---------------------------------------------------------------
    packet_bits = in_bits
    gcd_bits = math.gcd(packet_bits, contiguous_bits)
    ratio = (dst.size_bits, src.size_bits)
    if context == "main":
        sizes = [s for s in f.main_fetch_sizes if gcd_bits % (8 * s) == 0]
        fitting = [s for s in sizes if s * ratio[0] <= f.cast_output_max_bytes * ratio[1]]
        if not fitting:
            raise HardwareLimitError(
                f"no fetch size of {list(f.main_fetch_sizes)} bytes divides gcd(packet_size = "
                f"{packet_bits / 8:g} B, contiguous_sram_access_size = {contiguous_bits / 8:g} B) with at most "
                f"{f.cast_output_max_bytes} bytes per fetch after the cast (manual L1757–1762, L1996)",
                call=_call("sequencer", context), level="Packet", mapping=repr(packet), axis=axes_text(packet),
                fix="make the packet's innermost axis contiguous in the Element, or pad the packet")
        fetch_size = max(fitting)
    else:
        key = (src.name if table is None else table[1].name, dst.name)
        fetch_size = f.sub_fetch_size_by_cast.get(key, f.sub_fetch_size_default)
        if gcd_bits % (8 * fetch_size):
            raise HardwareLimitError(
                f"the sub context fetches {fetch_size} bytes at a time (manual L1759), which does not divide "
                f"gcd(packet_size = {packet_bits / 8:g} B, contiguous_sram_access_size = "
                f"{contiguous_bits / 8:g} B)", call=_call("sequencer", context), level="Packet",
                mapping=repr(packet), axis=axes_text(packet),
                fix=f"make {fetch_size}-byte runs of the packet contiguous in the Element, or fetch in ctx.main")
        if fetch_size * ratio[0] > f.cast_output_max_bytes * ratio[1]:
            raise HardwareLimitError(
                f"one {fetch_size}-byte fetch cast to {dst!r} gives {fetch_size * ratio[0] // ratio[1]} bytes, "
                f"more than the {f.cast_output_max_bytes}-byte flit (manual L1996–2021)",
                call=_call("type casting", context), level="Packet", mapping=repr(packet), axis=axes_text(packet),
                fix="fetch in ctx.main, whose fetch size shrinks to fit the cast, or fetch as "
                    f"{after_table!r} and cast later")
    packet_bytes = packet_bits // 8
    fpp = -(-packet_bytes // fetch_size)
    mask = _mask(hw, src, time, packet, context)
    latency = max(f.cast_latency_cycles) if cast is not None else 0
    note = f"sub context: {fpp} fetches of {fetch_size} B per packet (L280-285)" if context == "sub" and fpp > 1 \
        else ""
    return FetchConfig(context, src, dst, chip, cluster, slice_, element, time, packet, interleave, seq,
                       packet_bytes, out_bits // 8, contiguous_bits // 8, fetch_size, fpp, mask, table, cast, zps,
                       latency, note)


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def _profiles() -> tuple[HardwareProfile, ...]:
    from visa.hw.rngd import PROFILES

    return tuple(PROFILES.values())


def _check_zero_points(hw: HardwareProfile, dst: type[dt.Scalar], zero_points: tuple[int, ...],
                       interleave: Mapping | None, context: str) -> tuple[int, ...]:
    """Zero points: an i8 each (L2032), representable in the target type (L2117), one per tensor (L2044)."""
    call = _call("zero-point subtraction", context)
    n = 1 if interleave is None else interleave.size
    if len(zero_points) not in (1, n):
        raise LayoutError(f"{len(zero_points)} zero points for {n} tensor(s): fetch_with_zero_points takes one "
                          "per interleaved tensor (manual L2036–2049)", call=call, level="Time",
                          mapping=None if interleave is None else repr(interleave), axis=axes_text(interleave),
                          fix="use begin_interleaved for two zero points, or fetch_with_zero_point for one")
    if dst.kind != "int":
        raise UnsupportedFeatureError(
            f"zero-point subtraction turns quantized integers into computation types (manual L2023–2024); "
            f"the manual defines no zero point for a {dst!r} result", call=call, level="Packet",
            fix="fetch into an integer type (e.g. i32), or subtract in the Vector Engine")
    zdt = dt.scalar(hw.fetch.zero_point_dtype)
    for z in zero_points:
        if not (zdt.min <= z <= zdt.max):
            raise DtypeError(f"zero point {z} is not an {zdt!r} (manual L2032)", call=call,
                             fix=f"use a zero point in {int(zdt.min)}..{int(zdt.max)}")
        if not (dst.min <= z <= dst.max):
            raise DtypeError(f"zero point {z} does not fit the target type {dst!r} (manual L2117)", call=call,
                             fix=f"use a zero point in {dst.min:g}..{dst.max:g}")
    return zero_points


# ------------------------------------------------------------------------------------------------ masking


def _level_digits(items: Sequence[Any], level: str) -> list[tuple[int, C.Dim | C.Lin]]:
    """``(weight, dim)`` of every canonical digit of one level (Time or Packet), outermost first."""
    dims = [d for it in items if it.level == level for d in it.dims]
    out = []
    w = 1
    for d in reversed(dims):
        out.append((w, d))
        w *= d.size
    out.reverse()
    return out


def _mask(hw: HardwareProfile, src: type[dt.Scalar], time: Mapping, packet: Mapping,
          context: str) -> MaskConfig | None:
    """The masking stage for the innermost packet axis' padding (L1877–1935); None when there is none.

    A position (time digit ``i`` of the masked axis, packet digit ``q``) is masked when the stream holds no
    element there for any value of the other digits: it is padding of the masked axis itself.  The hardware
    masks a left pad at ``i = 0`` and a right pad at the last ``i`` (cases 1 and 2, the right count limited by
    the element width, L1902), or a valid count per index for at most 8 indices (case 3, L1922–1935).
    Padding the hardware cannot mask stays poison.  The sub context has no masking stage (L1870).
    """
    if context != "main":
        return None
    items = stream_items(time, packet)
    pdig = _level_digits(items, "Packet")
    tdig = _level_digits(items, "Time")
    if not pdig:
        return None
    pw, pd = pdig[-1]
    if not isinstance(pd, C.Dim) or pd.atom is None:
        return None
    if any(isinstance(d, C.Dim) and d.atom == pd.atom for _, d in pdig[:-1]):
        return None
    tmatch = [(k, w, d) for k, (w, d) in enumerate(tdig) if isinstance(d, C.Dim) and d.atom == pd.atom]
    if len(tmatch) > 1:
        return None
    if math.prod(d.size for _, d in tdig) != time.size or math.prod(d.size for _, d in pdig) != packet.size:
        return None
    if tmatch:
        k, tw, td = tmatch[0]
        size_l = td.size
        last_dim = sum(1 for _, d in tdig[:k] if d.size > 1)
        innermost = all(d.size == 1 for _, d in tdig[k + 1:])
    else:
        tw, size_l, last_dim, innermost = 1, 1, sum(1 for _, d in tdig if d.size > 1), True
    valid = stream_validity(time, packet)
    i = (np.arange(time.size, dtype=np.int64) // tw) % size_l
    q = (np.arange(packet.size, dtype=np.int64) // pw) % pd.size
    key = (i[:, None] * pd.size + q[None, :]).reshape(-1)
    used = np.bincount(key, weights=valid.reshape(-1).astype(np.float64), minlength=size_l * pd.size) > 0
    used = used.reshape(size_l, pd.size)
    if used.all():
        return None
    ranges = fast_mask_rows.row_ranges(used) if fast_mask_rows.ROWS.on else _row_ranges(used)
    if ranges is None:
        return None  # a hole inside the axis: not a left/right pad
    lo, hi = ranges
    if any(lo[1:]):
        return None  # left padding only at index 0 (L1891)
    f = hw.fetch
    limit = f.mask_right_count_max.get(src.size_bits)
    bytes_ok = packet.size * src.size_bits <= 8 * f.mask_packet_max_bytes
    if not bytes_ok or limit is None:
        return None
    simple = all(h == pd.size for h in hi[:-1]) and (size_l == 1 or lo[-1] == 0)
    right = pd.size - hi[-1]
    lo_t, hi_t = tuple(lo), tuple(hi)
    if simple and right <= limit and all(h > 0 for h in hi):
        return MaskConfig(1 if innermost else 2, last_dim, size_l, tw, pd.size, pw, lo_t, hi_t)
    if size_l <= f.mask_case3_counts:
        return MaskConfig(3, last_dim, size_l, tw, pd.size, pw, lo_t, hi_t)
    return None


def _row_ranges(used: BoolArray) -> tuple[list[int], list[int]] | None:
    """The first used digit and one past the last per index of the masked axis (a row of ``used``; ``(0, 0)``
    for a row with none), or None when a row has a hole (L1891–1935: only a left and a right pad are masked)."""
    lo, hi = [], []
    for row in used:
        idx = np.flatnonzero(row)
        if idx.size == 0:
            lo.append(0)
            hi.append(0)
            continue
        a, b = int(idx[0]), int(idx[-1]) + 1
        if not row[a:b].all():
            return None
        lo.append(a)
        hi.append(b)
    return lo, hi


# ------------------------------------------------------------------------------------------------ execute


def stream_validity(time: Mapping, packet: Mapping) -> BoolArray:
    """``(Time::SIZE, Packet::SIZE)``: True where the stream holds an element, False at its padding (manual
    L1094–1151, L616–620; jointly: composite axes cut by both levels, such as ``B' / 32`` and ``B' % 32``,
    decide their padding together)."""
    return _joint_validity(pair_of(time, packet).canon, time.size, packet.size)


@cached(64)
def _joint_validity(joint: C.Canon, n_time: int, n_packet: int) -> BoolArray:
    # Cached by the joint mapping's canonical form, not by (time, packet): two pairs of equivalent mappings
    # (``==``, each level alone) can hold different elements jointly (``[A, B] # 16 / 8`` and ``[A, B] / 8``).
    out: BoolArray = validity(joint).reshape(n_time, n_packet)
    out.flags.writeable = False
    return out


@cached(128)
def _static(cfg: FetchConfig) -> tuple[IntArray, IntArray, BoolArray, BoolArray | None, IntArray | None, BoolArray]:
    """Per stream position: tensor selector, element offset, validity, mask; per time step: tensor selector;
    per ``(chip, cluster, slice)``: whether it holds data."""
    addr = cfg.sequencer.addresses().astype(np.int64)
    n = cfg.element.size
    if cfg.interleave is not None:
        sel = np.clip(addr // n, 0, cfg.interleave.size - 1)
        off = addr - sel * n
    else:
        sel = np.zeros(addr.shape, dtype=np.int64)
        off = addr
    valid = stream_validity(cfg.time, cfg.packet).reshape(-1)
    mask = None if cfg.mask is None else cfg.mask.positions(cfg.time.size, cfg.packet.size).reshape(-1)
    tsel = None
    if cfg.interleave is not None:  # the tensor of each time step is its I digit (L1850-1852)
        tsel = np.asarray(cfg.time.evaluate().coord(next(iter(cfg.interleave.axes))), dtype=np.int64)
    units = unit_validity(cfg.chip, cfg.cluster, cfg.slice)
    for a in (sel, off, units):
        a.flags.writeable = False
    return sel, off, valid, mask, tsel, units


def execute(cfg: FetchConfig, images: Sequence[DenseImage], bit_bases: Sequence[int],
            table: LookupTable[Any, Any] | None = None) -> StreamData:
    """Run the fetch: the derived sequencer loops over each chip's DM image (L1219–1688), then the adapter
    stages in the manual's order (L1870).

    ``images`` are the DM images of the chips (``Chip::SIZE`` of them), ``bit_bases`` the bit offset of each
    tensor's element 0 in a slice (two with an interleaved pair).  Returns values of shape
    ``(Chip, Cluster, Slice, Time, Packet)`` in ``cfg.dst``'s storage type, with the poison mask.

    This is the reference: one address per stream position (:func:`read`), then :func:`adapt`.  The faster ways
    to compute the same stream are registered fast paths (:mod:`visa.engines.fetch_fast`, :mod:`visa.fastpaths`).
    """
    from visa.engines import fetch_fast  # (the fast paths of this engine; it imports this module)

    fast = fetch_fast.execute(cfg, images, bit_bases, table)
    if fast is not None:
        return fast
    sel, off, valid, mask, tsel, lv = _static(cfg)
    values, known = read(cfg, images, np.asarray(list(bit_bases), dtype=np.int64), sel, off, valid, lv)
    values, known = adapt(cfg, values, known, mask, tsel, cfg.time.size, table)
    shape = (len(images), cfg.cluster.size, cfg.slice.size, cfg.time.size, cfg.packet.size)
    return StreamData(values.reshape(shape), known.reshape(shape))


def read(cfg: FetchConfig, images: Sequence[DenseImage], bases: IntArray, sel: IntArray, off: IntArray,
         valid: BoolArray, lv: BoolArray) -> tuple[npt.NDArray[Any], BoolArray]:
    """The sequencer's output ``(Chip, Cluster, Slice, Time · Packet)`` in ``cfg.src`` and its known-mask, one
    address per stream position (``bases[sel] + off`` elements, L1219–1688): an element outside the slice, at
    the stream's padding (``valid``) or never written is poison (value 0); so is every position of a slice that
    holds no data (``lv``, the unit validity)."""
    src, n = cfg.src, sel.size
    shape = (len(images), cfg.cluster.size, cfg.slice.size, n)
    values = np.zeros(shape, dtype=src.storage)
    known = np.zeros(shape, dtype=bool)
    bits = bases[sel] + off * src.image_bits
    for c, img in enumerate(images):
        if not lv[c].any():
            continue
        inside = (bits >= 0) & (bits + src.image_bits <= 8 * img.nbytes)
        v, k = load(src, enabled_units(img, lv[c]), np.where(inside, bits, 0))
        k = k.reshape(-1, n) & (valid & inside)[None, :]
        values[c][lv[c]] = np.where(k, v.reshape(-1, n), np.zeros((), dtype=src.storage))  # poison reads as 0
        known[c][lv[c]] = k
    return values, known


def adapt(cfg: FetchConfig, values: npt.NDArray[Any], known: BoolArray, mask: BoolArray | None,
          tsel: IntArray | None, n_t: int, table: LookupTable[Any, Any] | None) -> tuple[npt.NDArray[Any], BoolArray]:
    """The Fetch Adapter's stages in the manual's order (L1870) over the sequencer's output (``values`` writable,
    its last axis ``n_t`` time steps of packets): masking (the masked padding becomes ``pad_value``, known;
    L1877–1935), table indexing (L1936–1959), type casting (L1960–2021; 0 casts to 0, so poison stays 0) and
    zero-point subtraction (L2022–2049).  Returns ``cfg.dst``'s storage and the known-mask."""
    src = cfg.src
    everywhere = is_everywhere(known)
    if mask is not None and cfg.mask is not None:
        np.copyto(values, np.asarray(cfg.mask.pad_value).astype(src.storage), where=mask)
        if not everywhere:
            known = known | mask if not known.flags.writeable else np.bitwise_or(known, mask, out=known)
    if cfg.table is not None:
        if table is None:
            raise VisaError("the configuration indexes a table but none was given", call="fetch table indexing")
        values = table.lookup(values)
        if not everywhere:
            values = np.where(known, values, np.zeros((), dtype=values.dtype))  # poison stays 0
    if cfg.cast is not None:
        cur = table.dout if cfg.table is not None and table is not None else src
        try:
            values = dt.convert(values, cur, cfg.dst)
        except DtypeError as err:
            raise DtypeError(f"casting {cur!r} to {cfg.dst!r}: {err.message}",
                             call=_call("type casting", cfg.context), level="Packet", mapping=repr(cfg.packet),
                             fix=err.fix) from None
    if cfg.zero_points:
        values = _subtract(values, known, cfg, tsel, n_t)
    return values.astype(cfg.dst.storage, copy=False), known


def _subtract(values: npt.NDArray[Any], known: BoolArray, cfg: FetchConfig, tsel: IntArray | None,
              n_t: int) -> npt.NDArray[Any]:
    """``cast(x) - zp`` (L2025), the zero point chosen per time step (``n_t`` of them) by the interleave digit
    (L2044)."""
    dst = cfg.dst
    zps = np.asarray(cfg.zero_points, dtype=np.int64)
    n_p = cfg.packet.size
    fast = fast_zero_point.subtract(values, known, dst, cfg.zero_points,
                                    None if len(zps) == 1 or tsel is None else zps[tsel], n_p)
    if fast is not None:
        return fast
    z = np.full((n_t,), zps[0], dtype=np.int64) if len(zps) == 1 or tsel is None else zps[tsel]
    zfull = np.broadcast_to(np.repeat(z, n_p), values.shape)
    diff = np.where(known, values.astype(np.int64) - zfull, 0)
    bad = (diff < dst.min) | (diff > dst.max)
    if bad.any():
        v = int(diff[bad].flat[0])
        raise DtypeError(f"zero-point subtraction gives {v}, outside {dst!r}'s range {dst.min:g}..{dst.max:g}",
                         call=_call("zero-point subtraction", cfg.context), level="Packet", mapping=repr(cfg.packet),
                         fix="choose a zero point that keeps x - zp in range, or a wider target type")
    out: npt.NDArray[Any] = diff.astype(dst.storage)
    return out


def is_contiguous(cfg: FetchConfig) -> bool:
    """Whether the fetch reads one contiguous run per slice, in order, with no adapter stage but batching: the
    condition for a register-file load to run as the StoTRF/StoVRF short command (L4112–4114)."""
    seq = cfg.sequencer
    total = math.prod(e.size for e in seq.entries)
    adapter = cfg.mask is not None or cfg.table is not None or cfg.cast is not None or bool(cfg.zero_points)
    return (cfg.interleave is None and not adapter and bool(seq.entries) and seq.entries[-1].stride == 1
            and seq.contiguous_elements() == total)


def cycles(cfg: FetchConfig) -> int:
    """``Time::SIZE × ceil(packet_size / fetch_size)`` (manual L2060), the packet counted in bytes (L2063–2110)."""
    return cfg.time.size * cfg.fetches_per_packet


def bank_runs(hw: HardwareProfile, cfg: FetchConfig, bit_base: int, sample: int = 1 << 14) -> tuple[int, ...]:
    """Per DM bank, the longest run of consecutive fetches whose first byte falls in it (bits 3–6, L2878), over the
    first ``sample`` elements: the count the bank-starvation rule limits (L2897–2941,
    :func:`visa.memory.performance.dm_bank_runs`).  A fetch reads ``fetch_size`` bytes."""
    seq = cfg.sequencer
    per = max(1, (cfg.fetch_size * 8) // cfg.src.size_bits)
    return _sequence_runs(hw, tuple(e.size for e in seq.entries), tuple(e.stride for e in seq.entries),
                 bit_base + seq.base * cfg.src.size_bits, cfg.src.size_bits, per, sample)


_sequence_runs = cached(1024)(sequence_bank_runs)


def bank_run(hw: HardwareProfile, cfg: FetchConfig, bit_base: int, sample: int = 1 << 14) -> int:
    """The longest run of consecutive fetches to one DM bank (:func:`bank_runs`)."""
    return max(bank_runs(hw, cfg, bit_base, sample))
