"""The Reducer: spatial reduction trees (``contract``) and the temporal accumulator (``accumulate``)
(manual L4297–4548).

Each slice has 8 Rows; Row ``r`` multiplies the 64-byte stream packet with its own 64-byte weight packet and
its tree adds the products in pairs.  ``contract(OutPacket)`` picks the tree depth ``n``: the computation
``[Row, Time, Packet]`` becomes ``[Row, Time, Packet / 2^n]`` (L4384–4392), widened to i32/f32.  The ``Q``
outputs of a Row are resized to 32 columns (L4396–4404).  ``accumulate(OutTime, OutPacket, kind)`` sums over
the Time axes absent from OutTime in a 1024-slot buffer (L4406–4434) and emits, per kind (L4435–4527):

- ``Interleaved``: ``OutTime = [Time', Packet_c]``, ``OutPacket = [Row # 8]`` (one value of each Row per
  beat); at most 128 slots inner to the outermost reduced axis;
- ``Sequential``: ``OutTime = [Time', Row, Packet_outer]``, ``OutPacket = [Packet_inner]`` where the
  surviving packet is zero-padded to a multiple of 8 and split by 8; at most 32 slots.

>>> from visa.hw import RNGD
>>> from visa.dtypes import bf16, f32
>>> from visa.mapping import AxisSet
>>> m = AxisSet(M=4, N=8, K=64).m
>>> c = plan_contract(RNGD, bf16, m["K % 16 # 32"], m["K % 16 / 4"])                     # manual L4451-4481
>>> c.depth, c.columns, c.kept, c.out_dtype
(2, 8, 4, f32)
>>> a = plan_accumulate(RNGD, f32, m["N"], m["K / 16, M"], m["K % 16 / 4"], m["M, K % 16 / 4"], m["N"],
...                     "Interleaved")
>>> a.reduced_text, a.inner_slots, a.slot_limit
('K / 16', 16, 128)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.cache import cached
from visa.engines.common import axes_text
from visa.errors import DtypeError, HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of

__all__ = ["ContractPlan", "AccumulatePlan", "plan_contract", "plan_accumulate", "contract_cycles",
           "accumulate_cycles", "accumulator_trace", "KINDS", "REDUCE_OPS"]

IntArray = npt.NDArray[np.int64]

#: The accumulation kinds by name (``AccumulationKind.Interleaved`` / ``.Sequential``, L4433–4434).
KINDS = ("Interleaved", "Sequential")

#: The Reducer's reduce operations by name (``reduce_op = `Add``` in every dump, L3705; the max mode, L4393–4395,
#: L4533, L4546): ``ReduceOp.Add`` (the default) and ``ReduceOp.Max``.
REDUCE_OPS = ("Add", "Max")


# ------------------------------------------------------------------------------------------------ contract


@dataclass(frozen=True)
class ContractPlan:
    """The spatial reduction: tree ``depth`` n (of the dtype's ``tree_depth``), the ``columns`` Q = packet/2^n a
    Row outputs, of which ``kept`` (the OutPacket's size) are carried on (the rest is padding, L4440)."""

    dtype: type[dt.Scalar]
    out_dtype: type[dt.Scalar]
    packet: int
    depth: int
    tree_depth: int
    columns: int
    kept: int
    reduce_op: str = "Add"

    @property
    def group(self) -> int:
        """Products each output adds: ``2^depth``."""
        return 1 << self.depth

    def describe(self) -> str:
        """The configuration in the manual's words."""
        sliced = f" (first {self.kept} kept; the rest is padding)" if self.kept < self.columns else ""
        op = ", reduce_op = Max (Row 0 only)" if self.reduce_op == "Max" else ""
        return (f"{self.dtype!r} × {self.dtype!r} → {self.out_dtype!r}: tree depth {self.depth} of "
                f"{self.tree_depth}, {self.packet} products → {self.columns} outputs per Row{sliced}{op}")


def plan_contract(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping, out_packet: Mapping,
                  reduce_op: str = "Add", row: Mapping | None = None) -> ContractPlan:
    """``contract::<OutPacket>()`` of an aligned ``dtype`` pair with computation packet ``packet``: the tree
    depth, or the refusal (manual L4310–4404, L4528–4533).  ``reduce_op`` is ``"Add"`` (reduce-add) or
    ``"Max"`` (reduce-max, L4393–4395), and ``row`` the TRF operand's Row mapping (when known).

    Refusals: an input type the Reducer does not take (only i4, i8, f8, bf16 and the widened i5/i9; f32 is
    refused, L3782, L4533), an OutPacket that is not ``Packet / 2^n`` (possibly with its padding sliced off,
    L4440), a depth past the dtype's tree (L4388), more than 32 outputs per Row (depth 0, L4532), an unknown
    reduce operation, and reduce-max over more Rows than Row 0 (L4395, L4533).  Pure.
    """
    return _plan_contract(hw, dtype, packet, out_packet, reduce_op, row)


@cached(256)
def _plan_contract(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping, out_packet: Mapping,
                   reduce_op: str = "Add", row: Mapping | None = None) -> ContractPlan:
    ce = hw.contraction
    if reduce_op not in REDUCE_OPS:
        raise LayoutError(f"unknown reduce operation {reduce_op!r}; the Reducer adds or takes the maximum "
                          "(L4393–4395)", call="contract", level="Packet", mapping=repr(packet),
                          fix="ReduceOp.Add or ReduceOp.Max")
    if reduce_op == "Max" and row is not None and row.size > ce.reduce_max_rows:
        raise HardwareLimitError(
            f"reduce-max uses Row 0 only (1/{ce.reduce_max_throughput_divisor} of reduce-add's throughput, manual "
            f"L4393–4395, L4533, L4546), but the TRF operand has {row.size} Rows", call="contract", level="Row",
            mapping=repr(row), axis=axes_text(row),
            fix="load the TRF with Row m[\"1\"] and put the Rows' axis in Time instead")
    if dtype.name not in ce.input_dtypes:
        raise DtypeError(
            f"the Reducer multiplies {', '.join(sorted(ce.input_dtypes))} only, not {dtype!r} (manual L3782, L4390, "
            "L4533); f32 data goes to the Vector Engine instead", call="contract", level="Packet",
            mapping=repr(packet), fix="fetch-cast to bf16 first, or use vector_init() for f32")
    out_dtype = dt.scalar(ce.output_dtypes[dtype.name])
    tree = ce.max_tree_depth[dtype.name]
    found: int | None = None
    for n in range(0, int(math.log2(packet.size)) + 1):
        g = 1 << n
        if packet.size % g:
            break
        reduced = packet.stride(g)
        if reduced == out_packet or (out_packet.size < reduced.size and reduced == out_packet.pad(reduced.size)):
            if found is None or reduced.size == out_packet.size:
                found = n
    if found is None:
        options = ", ".join(f'm["{packet.stride(1 << n)}"]' for n in range(0, tree + 1)
                            if packet.size % (1 << n) == 0)
        raise LayoutError(
            f"OutPacket {out_packet!r} is not the computation packet {packet!r} reduced by a tree of depth n "
            "(Packet / 2^n, whose padding may be sliced off; manual L4392, L4440)", call="contract",
            level="Packet", mapping=repr(out_packet), axis=axes_text(out_packet) or axes_text(packet),
            fix=f"one of {options}")
    if found > tree:
        raise HardwareLimitError(
            f"reducing {packet.size} {dtype!r} products to {out_packet.size} needs tree depth {found}; the {dtype!r} "
            f"tree has depth {tree} ({ce.reduced_elements(dtype.name)} elements, manual L4388, L4531)",
            call="contract", level="Packet", mapping=repr(out_packet), axis=axes_text(packet),
            fix="keep more of the packet, or reduce the rest over time with accumulate")
    columns = packet.size >> found
    if columns > ce.resize_columns:
        raise HardwareLimitError(
            f"tree depth {found} leaves {columns} outputs per Row; the Reducer resizes each Row's output to "
            f"{ce.resize_columns} columns and more are invalid (depth 0 must not give more than "
            f"{ce.depth0_max_outputs}, manual L4396–4398, L4532)", call="contract", level="Packet",
            mapping=repr(out_packet), axis=axes_text(out_packet) or axes_text(packet),
            fix=f'reduce at least pairs: OutPacket m["{packet.stride(max(2, packet.size // ce.resize_columns))}"]')
    return ContractPlan(dtype, out_dtype, packet.size, found, tree, columns, out_packet.size, reduce_op)


def contract_cycles(p: ContractPlan, steps: int) -> tuple[int, int]:
    """``(cycles, latency)``: one computation packet per cycle over ``steps`` time steps, all Rows in parallel
    (L3785, L4544); the tree's latency is its depth in cycles, 5/6/7 by dtype (L3787, L4543)."""
    return steps, p.tree_depth


# ------------------------------------------------------------------------------------------------ accumulate


@dataclass(frozen=True)
class AccumulatePlan:
    """The temporal accumulation: ``segments`` of the contraction's Time (outermost first, ``(size, kept)``:
    kept segments form ``Time'``, the others are summed), the output ``kind``, and the buffer numbers.

    ``inner_slots`` is the product of the sizes inner to the outermost reduced axis, counted in OutTime (so
    with the appended axes), against ``slot_limit`` (128 Interleaved, 32 Sequential, L4434, L4534–4539).
    ``pad_columns`` is the Sequential packet padded to a multiple of 8 (``Packet_outer × 8``).
    """

    kind: str
    out_dtype: type[dt.Scalar]
    rows: int
    bus: int
    time: int
    segments: tuple[tuple[int, bool], ...]
    kept_time: int
    columns: int
    pad_columns: int
    out_time: int
    out_packet: int
    inner_slots: int
    slot_limit: int
    reduced_text: str

    @property
    def reduced(self) -> int:
        """Time steps summed into each output (the product of the reduced segments)."""
        return math.prod(s for s, kept in self.segments if not kept)

    def describe(self) -> str:
        """The configuration in the manual's words."""
        red = self.reduced_text or "nothing"
        return (f"{self.kind}: reduce {red} over time ({self.reduced} steps per output), {self.inner_slots} of "
                f"{self.slot_limit} slots inner to it; out Time {self.out_time} × Packet {self.out_packet}")


def plan_accumulate(hw: HardwareProfile, dtype: type[dt.Scalar], row: Mapping, time: Mapping, packet: Mapping,
                    out_time: Mapping, out_packet: Mapping, kind: str) -> AccumulatePlan:
    """``accumulate::<OutTime, OutPacket>(kind)`` of a ContractionTensor ``[row, time, packet]``: the plan, or
    the refusal (manual L4318–4324, L4406–4548).

    Refusals name level, mapping and axis: an OutPacket other than ``Row # 8`` (Interleaved) or the padded
    packet's inner 8 (Sequential), an OutTime other than ``[Time', Packet]`` / ``[Time', Row, Packet_outer]``
    where ``Time'`` keeps the contraction's Time axes in order, and a buffer past 128 (Interleaved) or 32
    (Sequential) slots inner to the outermost reduced axis (L4534–4539).  Pure (the mypy plugin calls it).
    """
    if kind not in KINDS:
        raise LayoutError(f"unknown accumulation kind {kind!r}", call="accumulate",
                          fix="AccumulationKind.Interleaved or AccumulationKind.Sequential")
    return _plan_accumulate(hw, dtype, row, time, packet, out_time, out_packet, kind)


@cached(256)
def _plan_accumulate(hw: HardwareProfile, dtype: type[dt.Scalar], row: Mapping, time: Mapping, packet: Mapping,
                     out_time: Mapping, out_packet: Mapping, kind: str) -> AccumulatePlan:
    ce = hw.contraction
    bus = ce.output_bus_elements
    rows = row.size
    m = packet.size
    if kind == "Interleaved":
        want_packet = row.pad(ce.accumulator_rows)
        appended = packet
        pad_cols = m
        limit = ce.interleaved_inner_max
        shape = "[Time', Packet]"
    else:
        pad_cols = -(-m // bus) * bus
        padded = packet.pad(pad_cols)
        want_packet = padded.modulo(bus)
        appended = pair_of(row, padded.stride(bus))
        limit = ce.sequential_inner_max
        shape = "[Time', Row, Packet_outer]"
    if out_packet != want_packet:
        raise LayoutError(
            f"{kind} accumulation outputs Packet m[\"{want_packet}\"], not {out_packet!r} (Interleaved: one value of "
            f"each Row per beat, Row # {ce.accumulator_rows}; Sequential: the packet padded to a multiple of {bus} "
            "and split by the 8-wide bus, manual L4445–4448, L4484–4492)", call="accumulate", level="Packet",
            mapping=repr(out_packet), axis=axes_text(out_packet) or axes_text(want_packet),
            fix=f'write OutPacket as m["{want_packet}"]')
    tail = appended.size
    if out_time.size % tail or out_time.modulo(tail) != appended:
        raise LayoutError(
            f"{kind} accumulation outputs Time {shape} with {appended!r} innermost, which {out_time!r} does not end "
            "with (manual L4445–4448, L4484–4492)", call="accumulate", level="Time", mapping=repr(out_time),
            axis=axes_text(out_time), fix=f'write OutTime as m["<kept Time axes>, {appended}"]')
    kept_items = _kept_items(out_time, appended)
    kept_map = pair_of(*kept_items) if kept_items else Mapping.identity()
    segments = _segments(time, kept_items, kept_map)
    reduced_idx = [k for k, (_, kept) in enumerate(segments) if not kept]
    if reduced_idx:
        outer = reduced_idx[0]
        inner = math.prod(seg.size for seg, kept in segments[outer + 1:] if kept) * tail
    else:
        inner = 0
    if inner > limit or inner * (ce.accumulator_rows if kind == "Interleaved" else ce.resize_columns) > \
            ce.accumulator_slots:
        seg = segments[reduced_idx[0]][0]
        raise HardwareLimitError(
            f"the axes inner to the reduced axis {seg!r} need {inner} accumulator slots; {kind} accumulation holds "
            f"{limit} (align_up(rows or packet) × inner ≤ {ce.accumulator_slots}, manual L4434, L4534–4539)",
            call="accumulate", level="Time", mapping=repr(out_time), axis=axes_text(seg),
            fix="make the reduced axis an inner Time axis, or use Interleaved (128 slots)" if kind == "Sequential"
            else "make the reduced axis an inner Time axis (fewer slots inner to it)")
    text = ", ".join(str(seg) for seg, kept in segments if not kept)
    return AccumulatePlan(kind, dtype, rows, bus, time.size, tuple((seg.size, kept) for seg, kept in segments),
                          kept_map.size, m, pad_cols, out_time.size, out_packet.size, inner, limit, text)


def flat_items(mp: Mapping) -> list[Mapping]:
    """The items of a mapping with nested pairs flattened (``[[O, T], L]`` → ``O, T, L``), size-1 items dropped
    (the Time axes accumulate keeps or reduces, L4445–4446, L4489–4490)."""
    out: list[Mapping] = []
    for it in mp.items():
        inner = it.items()
        if len(inner) > 1:
            out.extend(flat_items(it))
        elif it.size > 1:
            out.append(it)
    return out


def _kept_items(out_time: Mapping, appended: Mapping) -> list[Mapping]:
    """OutTime's items before the appended part (``OutTime = [kept..., appended]``)."""
    items = flat_items(out_time)
    for j in range(len(items), -1, -1):
        tail = pair_of(*items[j:]) if j < len(items) else Mapping.identity()
        if tail.size == appended.size and tail == appended:
            return items[:j]
        if tail.size > appended.size:
            break
    kept = out_time.stride(appended.size)
    return [kept] if kept.size > 1 else []


def _segments(time: Mapping, want: list[Mapping], kept: Mapping) -> list[tuple[Mapping, bool]]:
    """Split the contraction's Time into segments, in order, each kept (a part of ``kept``) or reduced."""
    queue = flat_items(time)
    segs: list[tuple[Mapping, bool]] = []
    for v in want:
        while True:
            if not queue:
                raise LayoutError(
                    f"OutTime's kept axis {v!r} is not a Time axis of the contraction {time!r} in the same order: "
                    "accumulation removes Time axes but keeps the others in order (manual L4445–4446, L4489–4490)",
                    call="accumulate", level="Time", mapping=repr(kept), axis=axes_text(v),
                    fix=f"keep the contraction's Time axes in the order of {time!r}")
            u = queue.pop(0)
            if u == v:
                segs.append((u, True))
                break
            if u.size > v.size and u.size % v.size == 0:
                d = u.size // v.size
                if u.stride(d) == v:
                    segs.append((v, True))
                    queue.insert(0, u.modulo(d))
                    break
                if u.modulo(v.size) == v:
                    segs.append((u.stride(v.size), False))
                    segs.append((v, True))
                    break
            if v.size > u.size:
                acc, size, k = [u], u.size, 0
                while size < v.size and k < len(queue):
                    acc.append(queue[k])
                    size *= queue[k].size
                    k += 1
                if size == v.size and pair_of(*acc) == v:
                    del queue[:k]
                    segs.append((v, True))
                    break
            segs.append((u, False))
    segs.extend((u, False) for u in queue)
    return segs


def accumulate_cycles(p: AccumulatePlan) -> tuple[int, int]:
    """``(cycles, latency)``: the accumulator takes one flit per cycle (a reduce axis of N steps needs about N
    cycles, L4543–4544) and emits one 8-element beat per output flit (L4436, L4484)."""
    return max(p.time, p.out_time), 1


def accumulator_trace(p: AccumulatePlan) -> tuple[IntArray, npt.NDArray[np.str_], npt.NDArray[np.bool_]]:
    """Per input flit: the buffer slot it uses, ``"store"`` or ``"accumulate"``, and whether the slot is output
    after it (the table of L4411–4431).  The slot counts the kept Time positions inner to the outermost reduced
    axis (outer kept positions reuse the slots after each output)."""
    sizes = [s for s, _ in p.segments] or [1]
    kept = [k for _, k in p.segments] or [True]
    t = np.arange(p.time, dtype=np.int64)
    digits = []
    inner = p.time
    for s in sizes:
        inner //= s
        digits.append((t // inner) % s)
    reduced = [k for k, flag in enumerate(kept) if not flag]
    first = reduced[0] if reduced else len(sizes)
    slot = np.zeros(p.time, dtype=np.int64)
    for k in range(first + 1, len(sizes)):
        if kept[k]:
            slot = slot * sizes[k] + digits[k]
    start = np.ones(p.time, dtype=bool)
    last = np.ones(p.time, dtype=bool)
    for k in reduced:
        start &= digits[k] == 0
        last &= digits[k] == sizes[k] - 1
    ops = np.where(start, "store", "accumulate")
    return slot, ops, last
