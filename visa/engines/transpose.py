"""Transpose Engine: reorders elements within flits before the Commit Engine (manual L6820–7041).

The engine sees a stream's ``[Time, Packet]`` as a sequence of ``n`` iterations.  One iteration reads
``in_rows × packets_per_col`` input flits and writes ``out_rows`` output flits, in four stages (L6841–6856):

1. **Unpack** — keep the first ``elements_per_packet`` elements of each 32-byte packet; ``packets_per_col``
   consecutive packets make one row of ``in_cols = packets_per_col × elements_per_packet`` columns.
2. **Transpose** — ``[in_rows × in_cols] → [in_cols × in_rows]``.
3. **Trim** — keep the first ``out_rows ≤ in_cols`` rows (the dropped ones hold the packets' padding).
4. **Align** — pad each ``in_rows``-element row to 32 bytes (``output_alignment`` elements).

So with ``Time = [outer, in_rows, packets_per_col]`` and ``Packet = [cols # 32 B]`` in, the engine gives
``OutTime = [outer, out_rows]`` (a row ``j = pc · elements_per_packet + e``) and
``OutPacket = [in_rows # output_alignment]``.

:func:`plan` finds the ``(in_rows, packets_per_col, out_rows)`` whose result *is* the requested
``OutTime``/``OutPacket`` — it runs the configuration's index map over the input layout's tensor indices and
compares them with the output layout's, position by position — then checks every limit of ``hw.transpose``
(L6876–6886).  :func:`execute` runs the same index map over the data (the fast path ``transpose.tiles`` as
views of each tile, :mod:`visa.engines.fast_transpose`); :func:`cycles` is the single/double
buffering formula (L6887–6912).

>>> from visa.hw import RNGD
>>> from visa.dtypes import i8
>>> from visa.mapping import AxisSet
>>> m = AxisSet(C=8, D=8, E=8).m
>>> cfg = plan(RNGD, i8, m["C, D"], m["E # 32"], m["C, E"], m["D # 32"])     # manual L6913–6945
>>> cfg.in_rows, cfg.in_cols, cfg.out_rows, cfg.iterations, cfg.double_buffered, cycles(cfg)
(8, 8, 8, 8, True, 72)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines import fast_transpose_shared
from visa.engines.cache import cached
from visa.engines.common import StreamData, axes_text, divisors, refuse_in_sub_context
from visa.engines.shared import SharedRows
from visa.errors import HardwareLimitError, IncompatibleShapesError, UnsupportedFeatureError
from visa.hw import HardwareProfile, TransposeEngine
from visa.mapping import Mapping, pair_of

__all__ = ["TransposeConfig", "plan", "check_context", "execute", "cycles", "source_index", "report_details"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Coords = tuple[dict[str, IntArray], BoolArray]

CALL = "transpose"

TILES = fastpaths.register("transpose.tiles", "the Unpack, Transpose, Trim and Align stages as views of each "
                           "[in_rows × in_cols] tile and the known-mask of an all-known stream as the tile's pattern")
#: (registered here, with the module ``import visa`` imports; :mod:`visa.engines.fast_transpose` takes it)
KNOWN_ROWS = fastpaths.register("transpose.known-rows", "a known-mask the same in every slice (broadcast, or its "
                                "rows compared equal) transposed for one slice and broadcast, not for every slice")


@dataclass(frozen=True)
class TransposeConfig:
    """The Transpose Engine's configuration for one pass (manual L6841–6912).

    ``iterations`` is the manual's ``n`` (``OutTime::SIZE / out_rows``); ``in_packet`` the number of elements
    in an input packet (32 bytes).  ``buffer_cols`` is ``num_buffer_cols`` of the profile (L6859).
    """

    dtype: type[dt.Scalar]
    in_rows: int
    packets_per_col: int
    elements_per_packet: int
    out_rows: int
    output_alignment: int
    iterations: int
    in_packet: int
    buffer_cols: int

    @property
    def in_cols(self) -> int:
        """``in_cols = packets_per_col × elements_per_packet`` (L6845)."""
        return self.packets_per_col * self.elements_per_packet

    @property
    def in_time(self) -> int:
        """Input flits of the whole pass."""
        return self.iterations * self.input_flits_per_iter

    @property
    def out_time(self) -> int:
        """Output flits of the whole pass (``OutTime::SIZE``)."""
        return self.iterations * self.out_rows

    @property
    def input_flits_per_iter(self) -> int:
        """``in_rows × packets_per_col`` (L6896)."""
        return self.in_rows * self.packets_per_col

    @property
    def output_flits_per_iter(self) -> int:
        """``out_rows`` (L6897)."""
        return self.out_rows

    @property
    def double_buffered(self) -> bool:
        """Double buffering when ``in_cols ≤ num_buffer_cols``, else single (L6887–6895)."""
        return self.in_cols <= self.buffer_cols

    @property
    def cycles_per_iter(self) -> int:
        """``max(in, out)`` when double buffered, ``in + out`` when single buffered (L6899–6904)."""
        i, o = self.input_flits_per_iter, self.output_flits_per_iter
        return max(i, o) if self.double_buffered else i + o

    @property
    def trimmed_rows(self) -> int:
        """Rows the Trim stage drops per iteration (``in_cols − out_rows``; negative = rows the engine lacks)."""
        return self.in_cols - self.out_rows

    def describe(self) -> str:
        """The configuration in the manual's words (for reports and traces)."""
        mode = "double" if self.double_buffered else "single"
        return (f"{self.dtype!r} in_rows={self.in_rows} × in_cols={self.in_cols} "
                f"(packets_per_col={self.packets_per_col} × elements_per_packet={self.elements_per_packet}) "
                f"→ out_rows={self.out_rows} # {self.output_alignment}, n={self.iterations}, {mode} buffering")


def cycles(config: TransposeConfig) -> int:
    """Cycles of one burst (manual L6905–6912).

    Double buffering: ``input_flits_per_iter + (n − 1) · cycles_per_iter + output_flits_per_iter``;
    single buffering: ``n · cycles_per_iter``.
    """
    n = config.iterations
    if config.double_buffered:
        return config.input_flits_per_iter + (n - 1) * config.cycles_per_iter + config.output_flits_per_iter
    return n * config.cycles_per_iter


def report_details(config: TransposeConfig) -> tuple[tuple[str, object], ...]:
    """The manual's cycle variables, for an :class:`~visa.engines.common.EngineReport`."""
    return (("in_rows", config.in_rows), ("in_cols", config.in_cols), ("out_rows", config.out_rows),
            ("packets_per_col", config.packets_per_col), ("n", config.iterations),
            ("input_flits_per_iter", config.input_flits_per_iter),
            ("output_flits_per_iter", config.output_flits_per_iter),
            ("buffering", "double" if config.double_buffered else "single"))


# ------------------------------------------------------------------------------------------------ execution


def source_index(config: TransposeConfig, flits: int | None = None) -> tuple[IntArray, BoolArray]:
    """Where each output element comes from (Unpack, Transpose, Trim, Align, L6841–6856): a flat
    ``time · in_packet + lane`` input index, and a mask.

    Output flit ``o · out_rows + j``, lane ``l`` holds input flit ``o · in_rows · packets_per_col + l ·
    packets_per_col + j // elements_per_packet``, lane ``j % elements_per_packet`` (Unpack, Transpose), when
    ``l < in_rows`` and ``j < in_cols``; otherwise it is alignment padding (Align) — or, for ``j ≥ in_cols``,
    a row the engine does not have (a configuration :func:`plan` refuses).  Arrays of shape
    ``(flits, output_alignment)`` for the first ``flits`` output flits (default: all of them).
    """
    c = config
    t_out = np.arange(c.out_time if flits is None else min(flits, c.out_time), dtype=np.int64)
    o, j = t_out // c.out_rows, t_out % c.out_rows
    lane = np.arange(c.output_alignment, dtype=np.int64)
    t_in = (o * c.input_flits_per_iter + j // c.elements_per_packet)[:, None] + (lane * c.packets_per_col)[None, :]
    src = t_in * c.in_packet + (j % c.elements_per_packet)[:, None]
    has = (lane < c.in_rows)[None, :] & (j < c.in_cols)[:, None]
    return np.where(has, src, 0), has


def execute(config: TransposeConfig, data: StreamData) -> StreamData:
    """Run the configuration over a stream's data (shape ``(Chip, Cluster, Slice, Time, Packet)``; L6841–6856):
    every output element is the input element :func:`source_index` names; alignment padding is poison (``known``
    False, value zero).  The fast path ``transpose.tiles`` computes the same as views of each tile
    (:mod:`visa.engines.fast_transpose`)."""
    c = config
    if fast_transpose_shared.SHARED.on and isinstance(data, SharedRows):  # the distinct rows only (each checked)
        return fast_transpose_shared.execute(c, data)
    lead = data.values.shape[:3]
    expect = (*lead, c.in_time, c.in_packet)
    if data.values.shape != expect:
        raise ValueError(f"transpose data of shape {data.values.shape} for a configuration of {expect}")
    if TILES.on:
        from visa.engines import fast_transpose

        return fast_transpose.execute(c, data)
    src, has = source_index(c)
    values = data.values.reshape(*lead, -1)[..., src]
    known = np.broadcast_to(data.known, expect).reshape(*lead, -1)[..., src] & has
    return StreamData(np.where(has, values, np.zeros((), dtype=values.dtype)), known)


# ------------------------------------------------------------------------------------------------ planning


def check_context(hw: HardwareProfile, context: str) -> None:
    """Refuse the Transpose Engine in the sub context (``"main"``/``"sub"``): the sub context has no compute
    engines (L3046–3051) and its commits follow fetch only (L2337).  Pure (the stream and the mypy plugin call it)."""
    refuse_in_sub_context(hw, context, "Transpose Engine", CALL, "Time")


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], in_time: Mapping, in_packet: Mapping, out_time: Mapping,
         out_packet: Mapping) -> TransposeConfig:
    """``transpose::<OutTime, OutPacket>()`` of a ``dtype`` stream ``[in_time, in_packet]``: the configuration,
    or the refusal (manual L6820–7041).

    Refusals, each naming the level, mapping and axis: an element width the engine lacks, input or output
    packets that are not 32 bytes / ``output_alignment`` elements (L6876–6886), data past
    ``elements_per_packet`` in an input packet (Unpack, L6843), an output that is not a transpose of the input
    (:class:`~visa.errors.IncompatibleShapesError`), ``in_rows`` above the dtype's maximum, ``in_cols`` outside
    the valid set, ``out_rows > in_cols``, and a Trim that would drop data (L6850–6852, L6880–6886).
    Pure: depends only on its arguments (the mypy plugin calls it too).
    """
    return _plan(hw.transpose, dtype, in_time, in_packet, out_time, out_packet)


@cached(512)
def _plan(te: TransposeEngine, dtype: type[dt.Scalar], in_time: Mapping, in_packet: Mapping, out_time: Mapping,
          out_packet: Mapping) -> TransposeConfig:
    bits = dtype.size_bits
    if bits not in te.elements_per_packet:
        widths = "/".join(str(b) for b in sorted(te.elements_per_packet))
        raise UnsupportedFeatureError(
            f"the Transpose Engine handles {widths}-bit elements, not {bits}-bit {dtype!r} (manual L6860–6883)",
            call=CALL, fix="cast the stream to a supported type first")
    epp = te.elements_per_packet[bits]
    align = te.output_alignment[bits]
    _check_packets(te, dtype, in_packet, out_packet, align)
    src = _coords(in_time, in_packet)
    _check_unpack(dtype, in_packet, epp)
    dst = _coords(out_time, out_packet)

    candidates = [(_violations(te, cfg, in_time, out_time, src, dst), cfg)
                  for cfg in _configs(te, dtype, in_time.size, in_packet.size, out_time.size)
                  if all(_mismatch(cfg, src, dst, flits) is None for flits in (2, cfg.out_rows, None))]
    if not candidates:
        raise _no_transpose(te, dtype, in_time, in_packet, out_time, out_packet, src, dst)
    problems, best = min(candidates, key=lambda pc: (len(pc[0]), cycles(pc[1]), -pc[1].iterations))
    if problems:
        raise problems[0]
    return best


def _configs(te: TransposeEngine, dtype: type[dt.Scalar], in_time: int, in_packet: int,
             out_time: int) -> list[TransposeConfig]:
    """Every split of ``in_time`` input flits into ``n`` iterations of ``in_rows × packets_per_col`` flits
    (``in_rows`` at most ``output_alignment``) that gives ``out_time`` output flits (L6841–6856)."""
    bits = dtype.size_bits
    epp, align = te.elements_per_packet[bits], te.output_alignment[bits]
    return [TransposeConfig(dtype, in_rows, ppc, epp, out_time // n, align, n, in_packet, te.buffer_cols)
            for in_rows in divisors(in_time) if in_rows <= align
            for ppc in divisors(in_time // in_rows)
            for n in (in_time // (in_rows * ppc),) if out_time % n == 0]


def _coords(time: Mapping, packet: Mapping) -> Coords:
    """Tensor indices (per-axis coordinates) of every ``[time, packet]`` position, shape ``(Time, Packet)``.

    Evaluated on the joint mapping: an axis padded and cut by both levels (``C # 16 / 8`` in Time, ``C # 16 % 8``
    in Packet, as a collect of a long packet makes) is valid only where its whole index is inside the axis.
    """
    ev = pair_of(time, packet).evaluate()
    shape = (time.size, packet.size)
    valid = np.asarray(ev.valid, dtype=bool)
    coords = {a: np.where(valid, c, 0).reshape(shape) for a, c in ev.coords.items()}
    return coords, valid.reshape(shape)


def _bytes(n: int, bits: int) -> str:
    return f"{n * bits / 8:g} bytes"


def _check_packets(te: TransposeEngine, dtype: type[dt.Scalar], in_packet: Mapping, out_packet: Mapping,
                   align: int) -> None:
    bits = dtype.size_bits
    want = te.packet_bytes * 8 // bits
    if in_packet.size != want:
        raise HardwareLimitError(
            f"the input packet holds {in_packet.size} {dtype!r} elements ({_bytes(in_packet.size, bits)}); the "
            f"Transpose Engine takes {te.packet_bytes}-byte packets ({want} elements, manual L6865–6885)",
            call=CALL, level="Packet", mapping=repr(in_packet), axis=axes_text(in_packet),
            fix=f"pad the packet to {want} elements: m[\"{in_packet.text} # {want}\"] (or collect it so)")
    if out_packet.size != align:
        raise HardwareLimitError(
            f"OutPacket holds {out_packet.size} {dtype!r} elements ({_bytes(out_packet.size, bits)}); the Align "
            f"stage pads each output row of in_rows elements to output_alignment = {align} elements "
            f"({te.packet_bytes} bytes, manual L6853–6856, L6880–6885)",
            call=CALL, level="Packet", mapping=repr(out_packet), axis=axes_text(out_packet),
            fix=f"write OutPacket as [rows # {align}]")


def _check_unpack(dtype: type[dt.Scalar], in_packet: Mapping, epp: int) -> None:
    """Unpack keeps the first ``elements_per_packet`` elements of a packet; the rest must be padding (L6843)."""
    ev = in_packet.evaluate()
    extra = np.flatnonzero(np.asarray(ev.valid)[epp:])
    if extra.size:
        lane = epp + int(extra[0])
        axes = sorted(a for a, c in ev.coords.items() if int(c[lane]) != 0) or sorted(in_packet.axes)
        held = ", ".join(f"{a}: {int(ev.coords[a][lane])}" for a in axes if a in ev.coords)
        raise HardwareLimitError(
            f"the Unpack stage keeps only the first elements_per_packet = {epp} elements of each packet for "
            f"{dtype.size_bits}-bit {dtype!r} (manual L6843, L6859–6863, L6880), but element {lane} of the packet "
            f"holds data ({held or 'index 0'})",
            call=CALL, level="Packet", mapping=repr(in_packet), axis=", ".join(axes) or None,
            fix=f"put at most {epp} data elements in a packet (pad them to the packet: `# {in_packet.size}`) and "
                "move the rest of the axis into Time")


def _misses(cfg: TransposeConfig, src: Coords, dst: Coords,
            flits: int | None = None) -> tuple[BoolArray, dict[int, str]]:
    """Where ``cfg`` does not produce the output layout: a ``(flits, output_alignment)`` mask over the first
    ``flits`` output flits (all by default), and the axis of the first miss of each axis, by flat position."""
    s_coords, s_valid = src
    d_coords, d_valid = dst
    index, has = source_index(cfg, flits)
    rows = index.shape[0]
    got_valid = has & s_valid.reshape(-1)[index]
    bad = got_valid != d_valid[:rows]
    axis_at_fault: dict[int, str] = {}
    for a in sorted(set(s_coords) | set(d_coords)):
        got = s_coords[a].reshape(-1)[index] if a in s_coords else np.zeros(index.shape, dtype=np.int64)
        want = d_coords[a][:rows] if a in d_coords else np.zeros(index.shape, dtype=np.int64)
        diff = got_valid & (got != want)
        if diff.any():
            axis_at_fault.setdefault(int(np.flatnonzero(diff)[0]), a)
            bad |= diff
    return bad, axis_at_fault


def _mismatch(cfg: TransposeConfig, src: Coords, dst: Coords,
              flits: int | None = None) -> tuple[int, int, str | None] | None:
    """The first output position (time, lane, axis) where ``cfg`` does not produce the output layout.

    Only the first ``flits`` output flits are compared when given (a cheap first filter of candidates).
    """
    bad, axis_at_fault = _misses(cfg, src, dst, flits)
    if not bad.any():
        return None
    flat = int(np.flatnonzero(bad)[0])
    return flat // bad.shape[1], flat % bad.shape[1], axis_at_fault.get(flat)


def _index_text(coords: dict[str, IntArray], valid: BoolArray, t: int, lane: int) -> str:
    if not valid[t, lane]:
        return "padding"
    parts = [f"{a}: {int(c[t, lane])}" for a, c in sorted(coords.items()) if int(c[t, lane])]
    return "{" + ", ".join(parts) + "}"


def _no_transpose(te: TransposeEngine, dtype: type[dt.Scalar], in_time: Mapping, in_packet: Mapping,
                  out_time: Mapping, out_packet: Mapping, src: Coords, dst: Coords) -> IncompatibleShapesError:
    """The refusal when no configuration produces the requested output, showing the closest one's first miss."""
    align = te.output_alignment[dtype.size_bits]
    shape = (f"the Transpose Engine turns Time [outer, in_rows, packets_per_col] × Packet [cols # "
             f"{in_packet.size}] into OutTime [outer, packets_per_col, cols] (trimmed) × OutPacket [in_rows # "
             f"{align}] (manual L6841–6856)")
    configs = _configs(te, dtype, in_time.size, in_packet.size, out_time.size)
    mapping = f"{out_time!r} × {out_packet!r} from {in_time!r} × {in_packet!r}"
    if not configs:
        return IncompatibleShapesError(
            f"{shape}; OutTime has {out_time.size} flits, which no split of the {in_time.size} input flits into "
            f"n iterations of in_rows ≤ {align} rows gives", call=CALL, level="Time", mapping=mapping,
            axis=axes_text(out_time), fix="keep the outer Time axes of the input as the outer axes of OutTime")
    cfg = min(configs, key=lambda c: int(np.count_nonzero(_misses(c, src, dst)[0])))  # the closest one
    miss = _mismatch(cfg, src, dst)
    assert miss is not None
    t, lane, axis = miss
    index, has = source_index(cfg)
    s_coords, s_valid = src
    produced = "padding"
    if has[t, lane] and s_valid.reshape(-1)[index[t, lane]]:
        k = int(index[t, lane])
        produced = _index_text({a: c.reshape(-1, 1) for a, c in s_coords.items()}, s_valid.reshape(-1, 1), k, 0)
    wanted = _index_text(dst[0], dst[1], t, lane)
    level = "Packet" if axis is not None and axis in out_packet.axes and axis not in out_time.axes else "Time"
    return IncompatibleShapesError(
        f"{shape}; the closest configuration ({cfg.describe()}) puts {produced} at output flit {t}, element "
        f"{lane}, where OutTime × OutPacket hold {wanted}", call=CALL, level=level, mapping=mapping,
        axis=axis or axes_text(out_time),
        fix="write OutTime as the input's outer Time axes followed by the packet's axes, and OutPacket as the "
            f"input's row axis padded to {align}")


def _varying_axes(coords: dict[str, IntArray], valid: BoolArray, ts: IntArray, lanes: range) -> str | None:
    """Axes whose coordinate changes across the flits ``ts`` (at a fixed lane among ``lanes``)."""
    found: set[str] = set()
    for lane in lanes:
        ok = valid[ts, lane]
        if ok.sum() < 2:
            continue
        for a, c in coords.items():
            vals = c[ts, lane][ok]
            if vals.min() != vals.max():
                found.add(a)
    return ", ".join(sorted(found)) or None


def _violations(te: TransposeEngine, cfg: TransposeConfig, in_time: Mapping, out_time: Mapping, src: Coords,
                dst: Coords) -> list[HardwareLimitError]:
    """Every limit of the Transpose Engine that ``cfg`` breaks (manual L6876–6886), as refusals."""
    bits = cfg.dtype.size_bits
    out: list[HardwareLimitError] = []
    s_coords, s_valid = src
    s_coords2 = {a: c.reshape(in_time.size, -1) for a, c in s_coords.items()}
    s_valid2 = s_valid.reshape(in_time.size, -1)
    lanes = range(cfg.elements_per_packet)
    max_rows = te.max_in_rows[bits]
    if cfg.in_rows > max_rows:
        ts = np.arange(cfg.in_rows, dtype=np.int64) * cfg.packets_per_col
        out.append(HardwareLimitError(
            f"in_rows = {cfg.in_rows} rows of {bits}-bit {cfg.dtype!r}, above the Transpose Engine's maximum "
            f"in_rows = {max_rows} ({max_rows * bits // 8} bytes per output row, manual L6876–6883)",
            call=CALL, level="Time", mapping=repr(in_time),
            axis=_varying_axes(s_coords2, s_valid2, ts, lanes) or axes_text(in_time),
            fix=f"split the row axis: at most {max_rows} rows per iteration, the rest as an outer Time axis"))
    valid_cols = te.valid_in_cols[bits]
    if cfg.in_cols not in valid_cols:
        ts = np.arange(cfg.packets_per_col, dtype=np.int64)
        allowed = ", ".join(str(v) for v in valid_cols)
        ppcs = ", ".join(str(v // cfg.elements_per_packet) for v in valid_cols)
        out.append(HardwareLimitError(
            f"in_cols = {cfg.in_cols} (packets_per_col = {cfg.packets_per_col} × elements_per_packet = "
            f"{cfg.elements_per_packet}); for {bits}-bit {cfg.dtype!r} the valid in_cols are {allowed} "
            f"(manual L6880–6883)",
            call=CALL, level="Time", mapping=repr(in_time),
            axis=_varying_axes(s_coords2, s_valid2, ts, lanes) or axes_text(in_time),
            fix=f"make the packets-per-column axis (innermost in Time) of size {ppcs}"))
    if cfg.out_rows > cfg.in_cols:
        d_coords, d_valid = dst
        ts = np.arange(cfg.out_rows, dtype=np.int64)
        out.append(HardwareLimitError(
            f"out_rows = {cfg.out_rows} output flits per iteration, more than in_cols = {cfg.in_cols} "
            f"(out_rows ≤ in_cols, manual L6886)",
            call=CALL, level="Time", mapping=repr(out_time),
            axis=_varying_axes(d_coords, d_valid, ts, range(cfg.output_alignment)) or axes_text(out_time),
            fix=f"at most {cfg.in_cols} rows per iteration in OutTime (drop the padding of its inner axis)"))
    elif cfg.out_rows < cfg.in_cols:
        # Trim drops columns out_rows .. in_cols-1 of every row: they must hold padding (L6850-6852).
        t = np.arange(cfg.in_time, dtype=np.int64)
        col = (t % cfg.packets_per_col)[:, None] * cfg.elements_per_packet + np.arange(cfg.elements_per_packet)
        dropped = (col >= cfg.out_rows) & s_valid2[:, : cfg.elements_per_packet]
        if dropped.any():
            tt, e = (int(v[0]) for v in np.nonzero(dropped))
            held = {a: c[tt, e] for a, c in s_coords2.items() if int(c[tt, e])}
            axes = sorted(held)
            out.append(HardwareLimitError(
                f"the Trim stage keeps out_rows = {cfg.out_rows} of in_cols = {cfg.in_cols} rows, but dropped "
                f"column {int(col[tt, e])} holds data ({', '.join(f'{a}: {v}' for a, v in held.items())}) at input "
                f"flit {tt}, element {e}; Trim may drop only padding rows (manual L6850–6852)",
                call=CALL, level="Time", mapping=repr(out_time), axis=", ".join(axes) or axes_text(out_time),
                fix=f"keep all {cfg.in_cols} rows in OutTime"))
    return out
