"""Tiled GEMM / GEMV: ``out[M, N] = x[M, K] · w[N, K]ᵀ`` in bf16 with f32 partials (manual L7090–7150).

:class:`Gemm` derives the kernel from the sizes of three axes of an :class:`~visa.mapping.AxisSet`:

- each contraction computes an ``[M_t, 32]`` output tile per slice with ``M_t ≤ 32`` rows (the accumulator
  holds ``M_t × 4`` interleaved outputs of 8 Rows, at most 128, L4434); a larger M is tiled by 32, the M tiles
  sharing each TRF load; 32 columns of N are split as 8 TRF Rows (``N % 8``) × 4 (``N / 8 % 4``) as in the
  "Hello, TCP!" GEMM (L466–525);
- N is spread over the slices (``N / 32``, up to 256 tiles of 32 columns, 8192 columns per N tile) and
  tiled beyond that (``N / 8192``);
- K is tiled by ``k_tile`` (default: 512, or for a K that is no multiple of 512 the largest multiple of 32 below
  512 that divides it — 288 for SmolLM2's 576; :meth:`Gemm.k_tile_of`): a tile of w per Row is ``4 × k_tile``
  bf16, at most 4 KiB — one TRF half (L4151–4154) — so the sub context loads the next tile into the other half
  while the main context contracts (double buffering; the first tile is loaded by main, whose fetch is wider,
  L1757–1759).  A
  ``k_tile`` of 1024 fills a whole Row (8 KiB, L1089): fewer passes, but nothing to load into meanwhile;
- the M tiles run in blocks of ``m_block`` that share each TRF load (default: as many as the slice's DM holds
  the f32 partials of, L138); a smaller block reloads w once per block but needs less DM;
- each K tile's contraction commits its f32 accumulator output (no cast); the K partials are added in f32 by
  split-reduce passes (interleaved fetch and ``vector_clip_zip(Add)``, L7151–7381) and cast to bf16 once.

x is broadcast to every slice by the DMA (it does not depend on N) and w is read from HBM N-major
(``m["N, K"]``, 8-byte DMA packets, L2424–2427).  When x and w together would take more than half a slice's
DM (512 KiB, L138) — a GEMV over a 70B-size weight, say — the kernel streams: one (N, K) tile of w and one K
tile of x per step move from HBM into two alternating DM buffers, so the tensor DMA of the next tile overlaps
the current contraction (the weights pass through DM once, as the decode of the manual does, L8225–8419).
x and w may be HBM views with gaps between their rows (a head's rows out of a wider output, one KV head of a
cache of several): w's streamed tiles keep the view's row pitch (L829–831), and such an x stays resident.
Every DM buffer is scratch (:meth:`Arena.scratch`): the result leaves in HBM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast, overload

from visa import dtypes as dt
from visa.context import Context
from visa.engines.vector import ClipBinaryOpF32
from visa.errors import DtypeError, HardwareLimitError, LayoutError
from visa.hw import RNGD
from visa.kernels.memory import PAIR, Arena, Maps, pair_axis
from visa.mapping import AxisSet
from visa.stream import AccumulationKind
from visa.tensors.handles import DmTensor, HbmTensor, HbmTensorView, TrfAddress

__all__ = ["Gemm", "Prefetch"]

Hbm = HbmTensor[Any, Any, Any]
HbmIn = HbmTensor[Any, Any, Any] | HbmTensorView[Any, Any, Any]  # a tensor, or a view of one (tile, relabel)
Dm = DmTensor[Any, Any, Any, Any, Any]

N_SLICE = 32  # output columns per slice: 8 Rows × 4
ROW_COLS = 4  # w's columns per TRF Row (N / 8 % 4): a Row holds 4 × k_tile bf16
HALF_K = RNGD.trf.half_row_bytes // (2 * ROW_COLS)  # 512: a K tile that fills one TRF half (L4151–4154)
ROW_K = RNGD.trf.row_bytes // (2 * ROW_COLS)  # 1024: a K tile that fills a whole Row (8 KiB, L1089)
K_TILE = HALF_K  # the default K tile: one half, so the sub context can load the next one meanwhile
M_TILE = 32  # rows per contraction: 32 × 4 interleaved accumulator outputs per Row (L4434)
N_TILE = 256 * N_SLICE  # columns per N tile: all 256 slices of a cluster


@dataclass(frozen=True)
class Prefetch:
    """A streamed GEMM's first w tile, moved into DM ahead of the call (:meth:`Gemm.prefetch`)."""

    w: Any
    slots: tuple[int, int]
    first: Any


class _Layout:
    """What a call of a :class:`Gemm` in one mode decides from shapes alone (:meth:`Gemm._layout`): whether x stays
    resident, the M block, the steps ``(N tile, M tiles, K tile)`` and the mappings of its DMAs and passes."""

    __slots__ = ("x_resident", "block", "plan", "x_tile", "w_tile", "x_el", "out_el", "rows", "halves", "trf_el",
                 "partial_el", "w_outer", "x_outer", "out_outer", "out_tile", "w_fetch", "w_collect", "k_in", "k16",
                 "x_fetch", "x_collect", "x_align", "k32", "one", "cast_el", "out_hbm")

    def __init__(self, g: Gemm, stream: bool, slice_bytes: int, plain_x: bool = True) -> None:
        mm, m, n, k, kin, nin, mi = g.maps, g.m, g.n, g.k, g.kin, g.nin, g.mi
        kt_axis = f"{k} / {g.k_tile}" if g.k_tiles > 1 else ""
        nt_axis = f"{n} / {N_TILE}" if g.n_tiles > 1 else ""
        mt_axis = f"{m} / {M_TILE}" if g.m_tiles > 1 else ""
        self.x_tile, self.w_tile = mm[f"{mi}, {kin}"], mm[f"{nin} % 32, {kin}"]
        # x stays resident (one broadcast DMA) when it takes at most an eighth of a slice's DM (a GEMV's x up to
        # K = 32768); in stream mode only w then moves per step; an x whose rows are not plain [M, K] has no
        # (M, K) tiles to stream: it stays resident too
        self.x_resident = not stream or 2 * g.sm * g.sk <= slice_bytes // 8 or not plain_x
        self.block = block = g.block_of(slice_bytes, stream, self.x_resident)
        blocks = [tuple(range(b, min(b + block, g.m_tiles))) for b in range(0, g.m_tiles, block)]
        # the steps: one TRF load each, (N tile, block, K tile) with K fastest
        self.plan = tuple((nt, tiles, kt) for nt in range(g.n_tiles) for tiles in blocks for kt in range(g.k_tiles))
        self.x_el: Any = mm[g._outer(kt_axis, mt_axis, mi, kin)] if self.x_resident else None
        self.out_el = g._out_el()
        self.rows = mm[f"{nin} % 8"]
        self.halves = ((TrfAddress.FirstHalf, TrfAddress.SecondHalf) if g.k_tile <= HALF_K else
                       (TrfAddress.Full, TrfAddress.Full))
        self.trf_el = mm[f"{nin} / 8 % 4, {kin}"]
        self.partial_el = mm[f"{mi}, {nin} / 8 % 4, {nin} % 8"]
        w_outer, x_outer, out_outer = g._outer(nt_axis, kt_axis), g._outer(kt_axis, mt_axis), g._outer(nt_axis, mt_axis)
        self.w_outer = mm[w_outer] if w_outer else None
        self.x_outer = mm[x_outer] if x_outer else None
        self.out_outer = mm[out_outer] if out_outer else None
        self.out_tile = mm[f"{mi}, {nin} % 32"]
        self.w_fetch, self.k_in = mm[f"{nin} % 8, {nin} / 8 % 4"], mm[kin]
        self.w_collect, self.k16 = mm[f"{nin} % 8, {nin} / 8 % 4, {kin} / 16"], mm[f"{kin} % 16"]
        self.x_fetch = mm[f"{mi}, {nin} / 8 % 4"]
        self.x_collect = mm[f"{mi}, {nin} / 8 % 4, {kin} / 16"]
        self.x_align, self.k32 = mm[f"{mi}, {nin} / 8 % 4, {kin} / 32"], mm[f"{kin} % 32"]
        self.one = mm["1"]
        self.cast_el = mm[f"{nin} % 8 # 16"]
        self.out_hbm = mm[f"{m}, {n}"]


def _declare(ax: AxisSet, name: str, size: int) -> str:
    """Declare the helper axis ``name`` (a part of a ragged N) in ``ax`` once; its name."""
    if name not in ax:
        ax.declare(**{name: size})
    return name


class Gemm:
    """``out[M, N] = x[M, K] · w[N, K]ᵀ`` for the axes ``m``, ``n``, ``k`` of ``ax`` (bf16 in and out).

    Shapes: ``M`` at most 32 or a multiple of 32 (M tiles of 32 share each TRF load); ``N`` a multiple of 32 (past
    8192 and no multiple of it, the whole N tiles and the last, narrower one run as two GEMMs into one output: the
    LM head's V = 128,256, L7987); ``K`` a multiple of 32, at most 512 or a multiple of 512.  The refusals name
    the axis and the fix.

    ``chip`` (a mapping expression over ``ax``, default ``"1"``: one chip) is the Chip level (L1079) of the
    kernel's DM tensors.  With a chip axis (``chip="C"``, ``|C|`` the launch's chips) each chip contracts its own
    shard in the same launch: x and w carry that Chip level in HBM (``HbmTensor(…, m["C"], m["M, K"])``), the
    DMAs keep it, and the output is ``m["C"]`` × ``m["M, N"]`` — the tensor-parallel split of L8225–8419.

    ``first_slice`` places the N tiles' slices from that slice on (default 0): a narrow GEMM's DMAs then run on the
    DMA engines of other DMNs (L2404, L2831) than work placed from slice 0, so that a prefetch of its weights
    (:meth:`prefetch`) overlaps that work.

    ``k_tile`` (a multiple of 32 up to 1024) and ``m_block`` (M tiles per TRF load; ``None``: the most the DM
    holds) are the tiling choices a tuner sweeps (:mod:`visa.tune`); every choice computes the same product within
    :func:`visa.kernels.bounds.gemm` (the K tiles change only the order of the f32 additions).

    ``w_tiles=True`` says w is stored K-tile-major in HBM (``m["K / k_tile, N, K % k_tile"]``, N ≤ 8192): each (N, K)
    tile the stream mode moves is then one contiguous run.  A K tile of a row-major ``m["N, K"]`` w reads 1 KiB
    of every 2·K bytes, which under the HBM address map puts every 256-byte unit in a DRAM row of its own (a row
    switch per request: the manual's lines are in docs/manual-notes.md, "DMA cost vs HBM channels").
    """

    def __init__(self, ax: AxisSet, m: str = "M", n: str = "N", k: str = "K", *, chip: str = "1",
                 w_tiles: bool = False, k_tile: int | None = None, m_block: int | None = None,
                 first_slice: int = 0) -> None:
        call = f"visa.kernels.Gemm({m!r}, {n!r}, {k!r})"
        sm, sn, sk = ax.size(m), ax.size(n), ax.size(k)
        if k_tile is None:
            k_tile = self.k_tile_of(ax.size(k))
        if k_tile < 32 or k_tile > ROW_K or k_tile % 32:
            raise HardwareLimitError(f"k_tile = {k_tile}: a TRF Row holds 4 × {ROW_K} bf16 (8 KiB, manual L1089) "
                                     "and a packet 32 (L4388), so a K tile is a multiple of 32 from 32 to "
                                     f"{ROW_K}", call=call, level="Row", mapping=f'm["{k}"]', axis=k,
                                     fix="use k_tile = 128, 256, 512 or 1024")
        if m_block is not None and m_block < 1:
            raise HardwareLimitError(f"m_block = {m_block}: a block holds at least one M tile", call=call,
                                     level="Time", mapping=f'm["{m}"]', axis=m, fix="use m_block ≥ 1 (or None)")
        if sm > M_TILE and sm % M_TILE:
            raise HardwareLimitError(f"{m} = {sm}: a slice accumulates at most {M_TILE} rows × 4 outputs per Row "
                                     "(128 interleaved, manual L4434), so M is tiled by 32 and must be a multiple "
                                     "of it", call=call, level="Time", mapping=f'm["{m}"]', axis=m,
                                     fix=f"pad {m} to a multiple of {M_TILE}")
        if sn % N_SLICE:
            raise LayoutError(f"{n} = {sn} must be a multiple of 32 (8 Rows × 4 columns per slice)", call=call,
                              level="Slice", mapping=f'm["{n}"]', axis=n, fix=f"pad {n} to a multiple of 32")
        # N beyond one N tile and no multiple of it (the LM head's V = 128256, L7987): the whole tiles and the last,
        # narrower one run as two GEMMs over row ranges of w, each into its columns of the output (_ragged)
        self.parts: tuple[tuple[Gemm, int, int], ...] = ()
        if sn > N_TILE and sn % N_TILE:
            if w_tiles:
                raise LayoutError(f"{n} = {sn} is no multiple of {N_TILE}: its last N tile is narrower, which a "
                                  "K-tile-major w (w_tiles=True) does not split into", call=call, level="Slice",
                                  mapping=f'm["{n}"]', axis=n, fix="store w N-major (m[\"N, K\"]) for this N")
            full, last = sn // N_TILE * N_TILE, sn % N_TILE
            self.parts = tuple((Gemm(ax, m, _declare(ax, f"{n}__{which}", size), k, chip=chip,
                                     k_tile=k_tile, m_block=m_block), start, size)
                               for which, start, size in (("tiles", 0, full), ("last", full, last)))
        if sk % 32 or (sk > k_tile and sk % k_tile):
            raise LayoutError(f"{k} = {sk} must be a multiple of 32 (a 64-byte packet of bf16, L4388), at most "
                              f"{k_tile} (the K tile) or a multiple of it", call=call, level="Packet",
                              mapping=f'm["{k}"]', axis=k, fix=f"pad {k} with zeros to a multiple of 32"
                              + (f" and of {k_tile}" if sk > k_tile else ""))
        if self.k_tiles_of(sk, k_tile) > 1:
            pair_axis(ax)  # the interleave axis of the K-partial adds
        self.ax, self.m, self.n, self.k = ax, m, n, k
        self.maps = Maps(ax)  # (the mappings every call asks, parsed once)
        self._layouts: dict[tuple[bool, int, bool], _Layout] = {}  # (each mode's tiling, made once: _layout)
        self.w_tiles = w_tiles
        self.sm, self.sn, self.sk = sm, sn, sk
        self.k_tile = k_tile
        self.k_tiles = self.k_tiles_of(sk, k_tile)
        self.n_tiles = max(1, sn // N_TILE)
        self.m_tiles = max(1, sm // M_TILE)
        self.m_block = m_block
        self.mi = f"{m} % {M_TILE}" if self.m_tiles > 1 else m
        self.kin = f"{k} % {k_tile}" if self.k_tiles > 1 else k
        self.nin = f"{n} % {N_TILE}" if self.n_tiles > 1 else n
        mm = ax.m
        self.chip = mm[chip]  # the Chip level of every DM tensor (x, w and the output keep their HBM chips)
        if self.parts:  # (a dispatcher over its parts: no tiles of its own)
            return
        self.cluster = mm["1 # 2"]
        cols = sn if self.n_tiles == 1 else N_TILE
        # first_slice: the slices start there (a narrow N's DMAs then use the DMA engines of other DMNs than work
        # placed from slice 0, L2404, L2831: a prefetch overlaps it, issue 27 item 8)
        used = cols // N_SLICE
        if first_slice and not 0 <= first_slice <= N_TILE // N_SLICE - used:
            raise HardwareLimitError(f"{n} = {sn} takes {used} slices; from slice {first_slice} they pass the 256 of a "
                                     "cluster (L1081)", call=call, level="Slice", mapping=f'm["{n}"]', axis=n,
                                     fix=f"start at most at slice {N_TILE // N_SLICE - used}")
        rest = N_TILE // N_SLICE - used - first_slice
        self.slice = (mm[f"# {first_slice} + {self.nin} / 32" + (f" + # {rest}" if rest else "")] if first_slice else
                      mm[f"{self.nin} / 32" + (" # 256" if cols < N_TILE else "")])

    @staticmethod
    def k_tiles_of(size: int, k_tile: int | None = None) -> int:
        """K tiles of ``k_tile`` (default :meth:`k_tile_of`) for a K of ``size``."""
        return max(1, size // (Gemm.k_tile_of(size) if k_tile is None else k_tile))

    @staticmethod
    def k_tile_of(size: int) -> int:
        """The default K tile for a K of ``size`` (a multiple of 32): 512 (one TRF half, L4151–4154) when it
        divides ``size``, all of a K up to 512, else the largest multiple of 32 below 512 that divides it (288 for
        576), so that a K such as SmolLM2's 576 needs no padding."""
        if size <= K_TILE or size % K_TILE == 0 or size % 32:
            return K_TILE
        return next(t for t in range(K_TILE, 0, -32) if size % t == 0)

    def _outer(self, *parts: str) -> str:
        return ", ".join(p for p in parts if p)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one call: M·N·K."""
        return self.sm * self.sn * self.sk

    def resident_bytes(self) -> int:
        """DM bytes per slice that x and w take when held whole (the resident mode)."""
        return 2 * self.sm * self.sk + 2 * N_SLICE * self.sk * self.n_tiles + 8 * self.sm * N_SLICE

    def prefetch_slots(self, arena: Arena) -> tuple[int, int]:
        """The two DM buffers a streamed w tile alternates between, taken from ``arena`` outside any scratch block,
        so that a tile prefetched into one (:meth:`prefetch`) survives until the call that uses it."""
        tile = self.ax.m[f"{self.nin} % 32, {self.kin}"]
        return arena.take_dm(2 * tile.size), arena.take_dm(2 * tile.size)

    def prefetch(self, ctx: Context, w: HbmIn, slots: tuple[int, int]) -> Prefetch:
        """Issue the tensor DMA of w's first (N, K) tile into ``slots[0]`` now, ahead of the call that contracts it
        (``gemm(…, prefetched=p)``): a later layer's weights load while this one still computes (its AllReduce,
        issue 27 item 8).  Operations issue in program order (L7046–7055): the DMA starts once its inputs and an
        engine are free, whatever the Tensor Unit does meanwhile."""
        if self.parts:
            raise LayoutError("a GEMM of two N parts prefetches no single first tile", call="visa.kernels.Gemm",
                              level="Slice", fix="call it without prefetched=")
        return Prefetch(w, slots, self._stream_w(ctx, w, 0, 0, slots[0]))

    def _partial_bytes(self, block: int) -> int:
        """DM bytes per slice of the f32 partials of a block of ``block`` M tiles: each tile's first K partial and
        two running sums, and the two buffers the later partials alternate between."""
        tile = 4 * min(self.sm, M_TILE) * N_SLICE
        if self.k_tiles == 1:
            return 0
        return tile * (block * (1 + (2 if self.k_tiles > 2 else 0)) + 2)

    def _stream_bytes(self, stream: bool, x_resident: bool) -> int:
        """DM bytes per slice of x, w and the bf16 output (everything but the partials)."""
        mi, kt = min(self.sm, M_TILE), min(self.sk, self.k_tile)
        out = 2 * self.n_tiles * self.sm * N_SLICE
        if not stream:
            return self.resident_bytes() - 8 * self.sm * N_SLICE + out
        x = 2 * self.sm * self.sk if x_resident else 2 * 2 * mi * kt
        return x + 2 * 2 * N_SLICE * kt + out

    def block_of(self, ctx_dm_bytes: int, stream: bool, x_resident: bool) -> int:
        """M tiles per TRF load: ``m_block`` when given (refused when its partials do not fit the slice's DM),
        else the most that fit (at least one)."""
        room = ctx_dm_bytes - self._stream_bytes(stream, x_resident)
        if self.m_block is not None:
            block = min(self.m_block, self.m_tiles)
            if self._partial_bytes(block) > room:
                raise HardwareLimitError(
                    f"m_block = {self.m_block}: the f32 partials of {block} M tiles take "
                    f"{self._partial_bytes(block):,} bytes of DM per slice where {max(room, 0):,} are left "
                    f"(512 KiB per slice, manual L138)", call=f"visa.kernels.Gemm({self.m!r}, {self.n!r}, {self.k!r})",
                    level="Slice", mapping=f'm["{self.m}"]', axis=self.m, fix="use a smaller m_block (or None)")
            return block
        block = self.m_tiles
        while block > 1 and self._partial_bytes(block) > room:
            block = (block + 1) // 2
        return block

    @overload
    def __call__(self, ctx: Context, arena: Arena, x: HbmIn | Dm, w: HbmIn | Dm, *, double_buffer: bool = True,
                 stream: bool | None = None, prefetched: Prefetch | None = None,
                 out_dm: Literal[False] = False) -> Hbm: ...

    @overload
    def __call__(self, ctx: Context, arena: Arena, x: HbmIn | Dm, w: HbmIn | Dm, *, double_buffer: bool = True,
                 stream: bool | None = None, prefetched: Prefetch | None = None, out_dm: bool) -> Any: ...

    def __call__(self, ctx: Context, arena: Arena, x: HbmIn | Dm, w: HbmIn | Dm, *, double_buffer: bool = True,
                 stream: bool | None = None, prefetched: Prefetch | None = None, out_dm: bool = False) -> Any:
        """Run the GEMM on HBM ``x`` (``m["M, K"]``) and ``w`` (``m["N, K"]``); returns HBM ``m["M, N"]`` bf16.

        ``x`` may also be a DM tensor of those axes (any layout: a row-wise kernel's rows): one DMA DM → DM
        (L2659–2681) moves it to the GEMM's layout, not a store to HBM and a load back.  ``out_dm``: the result
        is the DM tensor the contractions commit (``m["M, N"]`` over the N tiles' slices, allocated from
        ``arena`` before the GEMM's scratch), not moved to HBM — a decode step's next row-wise kernel reads it by
        one DMA DM → DM.  Neither takes the streamed mode (its x tiles are read from HBM).

        ``stream`` (default: when x and w would take more than half a slice's DM, L138) moves one (N, K) tile of
        w and one K tile of x from HBM per step into two alternating DM buffers, so the tensor DMA of the next
        tile overlaps the current contraction; otherwise x and w are moved into DM whole first.
        ``double_buffer`` loads every TRF tile but the first from the sub context into the half the Reducer is
        not reading; it needs a K tile of at most one half (``k_tile`` ≤ 512, L4151–4154).
        ``w`` may also be a DM tensor from :meth:`load_w` (the resident layout), read in place.
        """
        in_dm = not isinstance(x, (HbmTensor, HbmTensorView))  # (a DM tensor or a view of one)
        call = f"visa.kernels.Gemm({self.m!r}, {self.n!r}, {self.k!r})"
        for name, t, axes in (("x", x, f"{self.m}, {self.k}"), ("w", w, f"{self.n}, {self.k}")):
            if getattr(t, "dtype", dt.bf16) is not dt.bf16:  # (its DM buffers are sized for bf16 too)
                raise DtypeError(f"{name} is {t.dtype.name}: the GEMM contracts bf16 x and w (bf16 products, f32 "
                                 "partials, L7090–7150)", call=call, level="Element", mapping=f'm["{axes}"]',
                                 axis=self.k, fix=f"give {name} as bf16 (HostTensor.from_numpy(…, bf16, …), or a "
                                                  "Vector Engine pass that casts it to bf16)")
        if self.parts:
            if out_dm or in_dm:
                raise LayoutError(f"a GEMM in N parts ({self.n} = {self.sn} is not a whole number of N tiles of "
                                  f"{N_TILE}: one GEMM per part, each output DMA'd into its columns in HBM) takes x "
                                  f"in HBM and gives its output in HBM; here {self._in_dm_names(in_dm, out_dm)} in DM",
                                  call=call, level="DM", mapping=self._in_dm_mapping(in_dm, out_dm),
                                  axis=self.k if in_dm else self.n,
                                  fix="pass x in HBM and take the output in HBM (out_dm=False)")
            # (x in HBM: refused above; w in DM is no part's resident layout)
            return self._ragged(ctx, arena, cast(HbmIn, x), cast(HbmIn, w), double_buffer, stream)
        if double_buffer and self.k_tiles > 1 and self.k_tile > HALF_K:
            raise HardwareLimitError(
                f"double buffering with k_tile = {self.k_tile}: a K tile of 4 × {self.k_tile} bf16 fills a whole "
                f"TRF Row, so no half is free to load the next tile into (manual L4151–4154)",
                call=f"visa.kernels.Gemm({self.m!r}, {self.n!r}, {self.k!r})", level="Row", mapping=f'm["{self.k}"]',
                axis=self.k, fix=f"use k_tile ≤ {HALF_K}, or double_buffer=False")
        if prefetched is not None:
            if prefetched.w is not w:
                raise LayoutError("the prefetched tile is another weight's", call="visa.kernels.Gemm",
                                  fix="pass the w that gemm.prefetch(ctx, w, slots) was given")
            stream = True  # the prefetched tile is the first step of the streamed mode
        if stream is None:
            stream = not self.holds_w(w) and self.resident_bytes() > ctx.hw.dm.slice_bytes // 2
        if (in_dm or out_dm) and stream:
            raise LayoutError(f"a GEMM whose x or output is in DM runs resident (x and w moved into DM whole), and "
                              f"this one streams its (N, K) tiles from HBM; here {self._in_dm_names(in_dm, out_dm)} "
                              "in DM", call=call, level="DM", mapping=self._in_dm_mapping(in_dm, out_dm),
                              axis=self.k if in_dm else self.n,
                              fix="pass x in HBM and take the output in HBM (out_dm=False), or stream=False when x "
                                  "and w fit half a slice's DM (L138)")
        mark = arena.dm
        out_at = arena.take_dm(2 * self._out_el().size) if out_dm else None  # (outlives the scratch below)
        try:
            with arena.scratch(vrf=False):  # every DM buffer is temporary: the result leaves in HBM (or at out_at)
                return self._run(ctx, arena, x, w, double_buffer, stream, prefetched, out_at)
        except BaseException:
            arena.dm = mark  # a refusal inside the run leaves no DM taken for an output that never came
            raise

    def _in_dm_names(self, in_dm: bool, out_dm: bool) -> str:
        """What a DM refusal found in DM: x, the output (``out_dm``), or both."""
        return "x and the output are" if in_dm and out_dm else "x is" if in_dm else "the output is"

    def _in_dm_mapping(self, in_dm: bool, out_dm: bool) -> str:
        """The mapping a DM refusal names: x's ``m["M, K"]`` when x is in DM, else the output's ``m["M, N"]``."""
        return f'm["{self.m}, {self.k}"]' if in_dm else f'm["{self.m}, {self.n}"]'

    def _out_el(self) -> Any:
        """The Element mapping of the DM output: per slice, its 32 columns of every M row (and N and M tile)."""
        nt_axis = f"{self.n} / {N_TILE}" if self.n_tiles > 1 else ""
        mt_axis = f"{self.m} / {M_TILE}" if self.m_tiles > 1 else ""
        return self.maps[self._outer(nt_axis, mt_axis, self.mi, f"{self.nin} % 32")]

    def _ragged(self, ctx: Context, arena: Arena, x: HbmIn, w: HbmIn, double_buffer: bool,
                stream: bool | None) -> Hbm:
        """An N of whole N tiles and a narrower last one: a GEMM over each row range of w (tile views relabelled to
        the part's own N axis), each part's ``[M, N']`` DMA'd (HBM → HBM) into its columns of the ``[M, N]``
        output (a tile view, L813–832)."""
        mm, m, n, k = self.ax.m, self.m, self.n, self.k
        out = HbmTensor(ctx, dt.bf16, self.chip, mm[f"{m}, {n}"], arena.take_hbm(2 * self.sm * self.sn),
                        call="visa.kernels.Gemm")
        wv: Any = (w.view() if isinstance(w, HbmTensor) else w).relabel(mm[f"{n}, {k}"])
        for part, start, size in self.parts:
            rows = wv.tile(mm[n], size, mm[f"{n} = {size}, {k}"], start).relabel(mm[f"{part.n}, {k}"])
            got = part(ctx, arena, x, rows, double_buffer=double_buffer, stream=stream)
            cols = out.view().tile(mm[n], size, mm[f"{m}, {n} = {size} # {self.sn}"], start)
            got.view().relabel(mm[f"{m}, {n} = {size}"]).to_hbm_view(cols, ctx.tdma)
        return out

    def _layout(self, stream: bool, slice_bytes: int, plain_x: bool = True) -> _Layout:
        """The tiling of a call in mode ``stream`` on slices of ``slice_bytes`` DM, with an x laid out plainly
        ``[M, K]`` or not (``plain_x``; :class:`_Layout`): a pure function of the GEMM's shapes, its choices and
        those three, made once per triple (a decode step calls each GEMM with the same ones: issue 25's wall
        time)."""
        key = (stream, slice_bytes, plain_x)
        got = self._layouts.get(key)
        if got is None:
            got = self._layouts[key] = _Layout(self, stream, slice_bytes, plain_x)
        return got

    def _run(self, ctx: Context, arena: Arena, x: HbmIn | Dm, w: HbmIn | Dm, double_buffer: bool, stream: bool,
             prefetched: Prefetch | None = None, out_at: int | None = None) -> Any:
        """The body of :meth:`__call__`: for each N tile, block of M tiles and K tile, one TRF load shared by the
        block's M tiles."""
        # an x not laid out m["M, K"] (a view with padding between its rows, such as a prefill's q|k heads read
        # out of the Q|K|V output, or another order of the same size) has no (M, K) tiles to stream: it stays
        # resident (whose DMA reads it by its own mapping, or refuses it)
        lay = self._layout(stream, ctx.hw.dm.slice_bytes, not stream or _element(x) == self.maps[f"{self.m}, {self.k}"])
        x_hbm: Any = x  # (the streamed mode's x, in HBM: __call__ refuses a DM x there)
        x_resident, block, plan = lay.x_resident, lay.block, lay.plan
        if stream:
            x_slots = [] if x_resident else [arena.take_dm(2 * lay.x_tile.size) for _ in range(2)]
            w_slots = (list(prefetched.slots) if prefetched is not None else
                       [arena.take_dm(2 * lay.w_tile.size) for _ in range(2)])
        if x_resident:
            x_dm = x.to_dm(self.cluster, self.slice, lay.x_el, ctx.tdma, arena.take_dm(2 * lay.x_el.size))
        if not stream:
            w_dm: Dm = cast(Dm, w) if self.holds_w(w) else self.load_w(ctx, arena, cast(HbmIn, w))
        out_el = lay.out_el
        out: Dm = DmTensor(ctx, dt.bf16, self.chip, self.cluster, self.slice, out_el,
                           arena.take_dm(2 * out_el.size) if out_at is None else out_at, call="visa.kernels.Gemm")
        rows, halves, partial_el = lay.rows, lay.halves, lay.partial_el
        many = self.k_tiles > 1
        parts = [arena.take_dm(4 * partial_el.size) for _ in range(2 if many else 0)]
        # per M tile of a block: the first K tile's partial, then the running sums alternating between two buffers
        firsts = [arena.take_dm(4 * partial_el.size) if many else 0 for _ in range(block)]
        sums = [[arena.take_dm(4 * partial_el.size) for _ in range(2 if self.k_tiles > 2 else 0)]
                for _ in range(block)]
        steps = len(plan)
        # stream mode issues w's DMA of step t + 1 before step t's TRF load and contractions, and x's DMA of step
        # t + 1 after them: operations issue in program order (L7046–7055), so the tensor DMA runs back to back
        # (w, x, w, x, …) while the Tensor Unit works on the tiles already in DM.  x is prefetched when there is
        # one M tile (two slots); with several, its tiles load in the loop.
        prefetch_x = stream and not x_resident and self.m_tiles == 1
        w_ahead: dict[int, Any] = {}
        x_ahead: dict[int, Any] = {}

        def issue_w(step: int) -> None:
            if stream and step < steps:
                nt_, _, kt_ = plan[step]
                w_ahead[step] = self._stream_w(ctx, cast(HbmIn, w), nt_, kt_, w_slots[step % 2])

        def issue_x(step: int) -> None:
            if prefetch_x and step < steps:
                x_ahead[step] = self._stream_x(ctx, x_hbm, 0, plan[step][2], x_slots[step % 2])

        if prefetched is not None:
            w_ahead[0] = prefetched.first
        else:
            issue_w(0)
        issue_x(0)
        acc: list[Dm | None] = [None] * block
        x_count = 0  # x tiles streamed so far (they alternate between the two slots)
        for step, (nt, tiles, kt) in enumerate(plan):
            if kt == 0:
                acc = [None] * block
            if stream:
                issue_w(step + 1)
                wv = w_ahead.pop(step)
            else:
                wv = w_dm.view()
                if lay.w_outer is not None:
                    wv = wv.tile(lay.w_outer, 1, lay.w_tile, nt * self.k_tiles + kt)
            loader = ctx.sub if double_buffer and step > 0 else ctx.main
            trf = (loader.begin(wv)
                   .fetch(dt.bf16, lay.w_fetch, lay.k_in)
                   .collect(lay.w_collect, lay.k16)
                   .to_trf(rows, lay.trf_el, halves[step % 2]))
            for j, mt in enumerate(tiles):
                if prefetch_x:
                    xv = x_ahead.pop(step)
                elif not x_resident:
                    xv = self._stream_x(ctx, x_hbm, mt, kt, x_slots[x_count % 2])
                    x_count += 1
                elif lay.x_outer is not None:
                    xv = x_dm.view().tile(lay.x_outer, 1, lay.x_tile, kt * self.m_tiles + mt)
                else:
                    xv = x_dm.view()
                out_view = (out.view().tile(lay.out_outer, 1, lay.out_tile, nt * self.m_tiles + mt)
                            if lay.out_outer is not None else out.view())
                acc_stream = (ctx.main.begin(xv)
                              .fetch(dt.bf16, lay.x_fetch, lay.k_in)
                              .collect(lay.x_collect, lay.k16)
                              .align(lay.x_align, lay.k32, trf)
                              .contract(lay.one)
                              .accumulate(lay.x_fetch, rows, AccumulationKind.Interleaved))
                if not many:
                    acc_stream.cast(dt.bf16, lay.cast_el).commit_view(out_view)
                    continue
                prev = acc[j]
                if prev is None:
                    acc[j] = acc_stream.commit(partial_el, firsts[j])
                    continue
                part = acc_stream.commit(partial_el, parts[(kt * block + j) % 2])
                s = self._pair(ctx, prev, part)
                if kt == self.k_tiles - 1:
                    s.cast(dt.bf16, lay.cast_el).commit_view(out_view)
                else:
                    acc[j] = s.commit(partial_el, sums[j][kt % 2])
            issue_x(step + 1)
        if out_at is not None:
            return out
        return out.to_hbm(lay.out_hbm, ctx.tdma, arena.take_hbm(2 * self.sm * self.sn))

    def _w_el(self) -> Any:
        """The Element mapping of the resident w in DM: per slice, its 32 rows of every N and K tile."""
        nt_axis = f"{self.n} / {N_TILE}" if self.n_tiles > 1 else ""
        kt_axis = f"{self.k} / {self.k_tile}" if self.k_tiles > 1 else ""
        return self.maps[self._outer(nt_axis, kt_axis, f"{self.nin} % 32", self.kin)]

    def load_w(self, ctx: Context, arena: Arena, w: HbmIn) -> Dm:
        """w moved into DM in the layout the resident mode contracts from (one tensor DMA): calls given this DM
        tensor as their ``w`` read it in place — a weight shared by many calls (a decode step's RoPE rotation,
        the same for all its layers, L8268–8284) then moves once, not once per call."""
        w_el = self._w_el()
        out: Dm = w.to_dm(self.cluster, self.slice, w_el, ctx.tdma, arena.take_dm(2 * w_el.size))
        return out

    def holds_w(self, w: Any) -> bool:
        """Whether ``w`` is a DM tensor in the resident layout (:meth:`load_w`'s), read in place by a call (a DM
        tensor is fetched where it lies, L8268–8284)."""
        return (isinstance(w, DmTensor) and w.levels["Slice"] == self.slice and w.levels["Cluster"] == self.cluster
                and w.levels["Element"] == self._w_el())

    def _stream_w(self, ctx: Context, w: HbmIn, nt: int, kt: int, address: int) -> Any:
        """w's (N, K) tile, HBM → DM (a view of the HBM tensor, L813–832)."""
        mm, n, k, kin, nin = self.maps, self.n, self.k, self.kin, self.nin
        wv: Any = w.view() if isinstance(w, HbmTensor) else w
        n_el = f"{n} = {N_TILE}" if self.n_tiles > 1 else n
        # elements from one row of w to the next: K, or more in a view with padding between its rows (a KV head's
        # V^T in a cache of all heads, m["Dv, S # H·S"]): the tiles keep the base's strides (L829)
        # (only a w laid out m["N, K"] is renamed to it; any other — padded, another order of the same size — is
        # tiled as it is, and the tile's stride check refuses what its strides cannot give)
        plain = wv.element == mm[f"{n}, {k}"]
        pitch = self.sk if plain else _pitch(wv.element, n, k, self.sk)
        if self.n_tiles > 1:
            wv = (wv.relabel(mm[f"{n}, {k}"]) if plain else wv).tile(
                mm[n], N_TILE, mm[f"{n_el}, {k}" + (f" # {pitch}" if pitch != self.sk else "")], nt * N_TILE)
        if self.k_tiles > 1:
            kt_, pad = self.k_tile, "" if self.w_tiles else f" # {pitch}"  # tile-major: the tile's rows are adjacent
            wv = wv.tile(mm[k], kt_, mm[f"{n_el}, {k} = {kt_}{pad}"], kt * kt_)
        return wv.to_dm(self.cluster, self.slice, mm[f"{nin} % 32, {kin}"], ctx.tdma, address).view()

    def _stream_x(self, ctx: Context, x: HbmIn, mt: int, kt: int, address: int) -> Any:
        """x's (M, K) tile, HBM → DM, broadcast to every slice."""
        mm, m, k, kin, mi = self.maps, self.m, self.k, self.kin, self.mi
        xv: Any = (x.view() if isinstance(x, HbmTensor) else x).relabel(mm[f"{m}, {k}"])
        m_el = f"{m} = {M_TILE}" if self.m_tiles > 1 else m
        if self.m_tiles > 1:
            xv = xv.tile(mm[m], M_TILE, mm[f"{m_el}, {k}"], mt * M_TILE)
        if self.k_tiles > 1:
            xv = xv.tile(mm[k], self.k_tile, mm[f"{m_el}, {k} = {self.k_tile} # {self.sk}"], kt * self.k_tile)
        return xv.to_dm(self.cluster, self.slice, mm[f"{mi}, {kin}"], ctx.tdma, address).view()

    def _pair(self, ctx: Context, a: Dm, b: Dm) -> Any:
        """``a + b`` in f32 by a split reduce (interleaved fetch, unzip, ``Add``; L7151–7381)."""
        mm, m, nin = self.maps, self.mi, self.nin
        pair = PAIR
        # the pair innermost in Time: one group waits in the Vector Engine's 1 KiB register-file cache while the
        # other streams in, so a group is one packet (the reference's unzip bound, docs/manual-notes.md issue 26)
        return (ctx.main.begin_interleaved(mm[pair], a.view(), b.view())
                .fetch(dt.f32, mm[f"{m}, {nin} / 8 % 4, {pair}"], mm[f"{nin} % 8"])
                .collect(mm[f"{m}, {nin} / 8 % 4, {pair}"], mm[f"{nin} % 8"])
                .vector_init()
                .vector_intra_slice_unzip(pair, mm[f"{m}, {nin} / 8 % 4, 1 # 2"], mm[f"{m}, {nin} / 8 % 4"])
                .vector_clip_zip(ClipBinaryOpF32.Add)
                .vector_final())


def _element(x: Any) -> Any:
    """The Element mapping of an HBM tensor or view."""
    return x.view().element if isinstance(x, HbmTensor) else x.element


def _pitch(element: Any, outer: str, inner: str, default: int) -> int:
    """Elements between index 0 and index 1 of ``outer`` (at ``inner`` 0) in ``element``: the row pitch of a view
    with padding between its rows; ``default`` when the mapping does not hold those indices by those names."""
    if element.axes != {outer, inner}:  # (other or more axes: the tile refuses it, naming the layout)
        return default
    first, second = element.position_of({outer: 0, inner: 0}), element.position_of({outer: 1, inner: 0})
    # (rows nearer than a row's length are no padded rows: the default, and the tile's stride check refuses it)
    return default if first is None or second is None or second - first < default else int(second - first)
