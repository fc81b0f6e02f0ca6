"""Every engine and each of its modes at a large size, against the numpy operation that moves the same data
(issue 24: "every engine near its data movement", aim ≤ 3×).

One row per engine mode.  Each row prepares its input (a stream built from data already in hand, a DM/HBM tensor
already written), then times one call of the engine through the public API — the stage method, or the DMA — and
reads its whole output (``data.values`` and ``data.known`` of a stream: an engine that defers its work pays for it
here), best of ``REPEAT`` runs.  The numpy column does what the engine does to the data (a cast is ``astype``, a
reduce a ``sum``, a move a copy of the same bytes), best of as many runs, in the same process (the same count on
both sides: on a loaded machine a side with more tries finds a quieter moment).  Every row checks its result
against numpy first (exact; floats bit for bit).

Where the engine's copy is strided, numpy's is too (the same gather and scatter pattern): the register loads'
numpy column (:func:`register_copy`) reads each slice's bytes at the tensor's address of an array shaped as the
chip's DM image and writes them into one shaped as the register file (a TRF slice's 8 bank rows, the first 4 KiB
of each 16 KiB row), as the engine's copy does — not one contiguous copy of the tensor, which stays in cache and
reads and writes one block (until issue 24's third wave the to_vrf and to_trf rows compared with that).  The DM →
DM and cluster swap rows likewise copy between two DM-shaped arrays (:func:`dm_copy`): 32 KiB runs 512 KiB apart,
spread over 256 MiB, which numpy copies about 1.4× slower than one contiguous 16 MiB block (its pages and TLB).

The size is ``ENGINES_N`` elements (default 2^22: 16 MiB of i32, 4 MiB of i8); ``ENGINES_ONLY=word,word`` runs
the rows whose name holds one of the words; ``ENGINES_REPEAT`` the runs of each side (default 5; a row whose numpy
side takes under 10 ms runs more, the same number on each side: enough for about 50 ms of numpy's, at most 100 —
best of 5 single calls of a 0.2 ms pass swung 3.2–6×).  A stream is one chip: 2 clusters × 256 slices × T time
steps × 8 lanes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from benchmarks.common import best_of, clock
from visa import (
    RNGD,
    AccumulationKind,
    AxisSet,
    BranchMode,
    ClipBinaryOpI32,
    Context,
    FpBinaryOp,
    FxpBinaryOp,
    HostTensor,
    InterSliceReduceOpI32,
    IntraSliceReduceOpI32,
    LogicBinaryOpI32,
    PadValue,
    TrfAddress,
    bf16,
    f32,
    i8,
    i32,
)
from visa.engines.common import StreamData, StreamLayout
from visa.engines.deferred import PaddedLanes
from visa.engines.fetch import LookupTable
from visa.kernels.memory import Arena
from visa.memory.arena import lazy_zeros
from visa.memory.known import known_everywhere
from visa.stream.stages import CollectTensor
from visa.testing import place_dm, place_trf, place_vrf

AIM = 3.0
REPEAT = int(os.environ.get("ENGINES_REPEAT", "5"))  # best of this many runs, on each side
OUT_BYTES = 1 << 16  # every slice's DM below this is where the rows write their outputs
N = int(os.environ.get("ENGINES_N", str(1 << 22)))
T = N // (2 * 256 * 8)  # time steps of a one-chip stream of N elements
RNG = np.random.default_rng(24)


@dataclass
class Row:
    """One engine mode: ``prepare()`` builds the input and returns the timed call; ``numpy`` the same data
    movement; ``check(out)`` compares the call's output with numpy's (raises on a difference)."""

    name: str
    prepare: Callable[[], Callable[[], Any]]
    numpy: Callable[[], Any]
    check: Callable[[Any], None]


def timed(prepare: Callable[[], Callable[[], Any]], check: Callable[[Any], None], repeat: int = REPEAT) -> float:
    """Best wall time of ``repeat`` calls, each on a freshly prepared input (the preparation is not timed),
    after a first call (which also pays the plan caches) whose output ``check`` compares with numpy's."""
    check(prepare()())
    best = float("inf")
    for _ in range(repeat):
        call = prepare()
        start = clock()
        call()
        best = min(best, clock() - start)
    return best


def force(stream: Any) -> Any:
    """Read a stream's whole output (values and known-mask) as its consumer does: lazy data is built here — but
    the Cast Engine's padding (poison, L6780–6784) only if read: a commit writes the converted lanes."""
    data = stream.data
    _ = (data.lanes if isinstance(data, PaddedLanes) else data.values), data.known
    return stream


def ints(shape: tuple[int, ...], dtype: Any = np.int32, lo: int = -(2**31), hi: int = 2**31 - 1) -> np.ndarray:
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if got.shape != want.shape or not np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)):
        raise AssertionError(f"{what}: the engine's output differs from numpy's")


# --- streams built from data ------------------------------------------------------------------------------------
ST = AxisSet(C=2, S=256, T=T, L=8)
SM = ST.m
LAYOUT = StreamLayout(i32, SM["1"], SM["C"], SM["S"], SM["T"], SM["L"])
LEVELS = [LAYOUT.level(n) for n in ("Chip", "Cluster", "Slice", "Time", "Packet")]


def stream(ctx: Context, x: np.ndarray, dtype: Any = i32, layout: StreamLayout = LAYOUT) -> CollectTensor[Any, Any, Any,
                                                                                                       Any, Any, Any]:
    """A CollectTensor holding ``x`` (shape C, S, T, L) in ``layout``, every element known (as a fetch of
    written memory gives it: the known-mask a broadcast, docs/manual-notes.md "All-known streams")."""
    lay = layout if dtype is i32 else StreamLayout(dtype, layout.chip, layout.cluster, layout.slice, layout.time,
                                                   layout.packet)
    values = np.ascontiguousarray(x.reshape(1, *x.shape))
    return CollectTensor(ctx.main, lay, StreamData(values, known_everywhere(values.shape)))


def lanes(out: Any, n: int = 8) -> np.ndarray:
    """The stream's values (its first ``n`` lanes), without the chip axis."""
    return np.asarray(out.data.values)[0, ..., :n]


def ve(ctx: Context, x: np.ndarray, dtype: Any = i32) -> Any:
    """A Vector Engine stream at its first stage (init, unconditional branch)."""
    return stream(ctx, x, dtype).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)


def stream_rows(ctx: Context) -> list[Row]:
    x = ints((2, 256, T, 8))
    small = ints((2, 256, T, 8), lo=-(2**20), hi=2**20)
    xf = RNG.standard_normal((2, 256, T, 8)).astype(np.float32)
    rows: list[Row] = []

    def cast_i8() -> Callable[[], Any]:
        s = stream(ctx, x)
        return lambda: force(s.cast(i8, SM["L # 32"]))

    rows.append(Row("cast i32 → i8 (narrowing, wrap)", cast_i8, lambda: x.astype(np.int8),
                    lambda out: same(lanes(out), x.astype(np.int8), "cast i8")))

    def cast_bf16() -> Callable[[], Any]:
        s = stream(ctx, xf, f32)
        return lambda: force(s.cast(bf16, SM["L # 16"]))

    rows.append(Row("cast f32 → bf16 (narrowing, round to nearest even)", cast_bf16,
                    lambda: xf.astype(ml_dtypes.bfloat16),
                    lambda out: same(lanes(out), xf.astype(ml_dtypes.bfloat16), "cast bf16")))

    def op(fn: Callable[[Any], Any], dtype: Any = i32, data: np.ndarray = x) -> Callable[[], Callable[[], Any]]:
        def prepare() -> Callable[[], Any]:
            s = ve(ctx, data, dtype)
            return lambda: force(fn(s).vector_final())
        return prepare

    rows.append(Row("VE branch (unconditional), init → final", op(lambda s: s), lambda: x.copy(),
                    lambda out: same(lanes(out), x, "branch")))
    rows.append(Row("VE fxp AddFxp constant", op(lambda s: s.vector_fxp(FxpBinaryOp.AddFxp, 1)), lambda: x + 1,
                    lambda out: same(lanes(out), x + 1, "AddFxp")))
    rows.append(Row("VE logic BitAnd constant", op(lambda s: s.vector_logic(LogicBinaryOpI32.BitAnd, 0x5555)),
                    lambda: x & 0x5555, lambda out: same(lanes(out), x & 0x5555, "BitAnd")))
    rows.append(Row("VE clip Max 0", op(lambda s: s.vector_clip(ClipBinaryOpI32.Max, 0)), lambda: np.maximum(x, 0),
                    lambda out: same(lanes(out), np.maximum(x, 0), "Max")))
    rows.append(Row("VE clip AddFxpSat constant", op(lambda s: s.vector_clip(ClipBinaryOpI32.AddFxpSat, 7)),
                    lambda: np.clip(x.astype(np.int64) + 7, -(2**31), 2**31 - 1).astype(np.int32),
                    lambda out: same(lanes(out), np.clip(x.astype(np.int64) + 7, -(2**31), 2**31 - 1)
                                     .astype(np.int32), "AddFxpSat")))
    rows.append(Row("VE fxp → fp (i32 → f32)", op(lambda s: s.vector_fxp_to_fp(31), data=small),
                    lambda: small.astype(np.float32),
                    lambda out: same(lanes(out), small.astype(np.float32), "fxp_to_fp")))

    def fp_add(s: Any) -> Any:
        return s.vector_split(SM["T, L / 4"], SM["L % 4"]).vector_fp_binary(FpBinaryOp.AddF, 1.0) \
            .vector_concat(SM["T"], SM["L"])

    rows.append(Row("VE split → fp AddF → concat (f32)", op(fp_add, f32, xf), lambda: xf + np.float32(1.0),
                    lambda out: same(lanes(out), xf + np.float32(1.0), "AddF")))
    rows.append(Row("VE fp → fxp (f32 → i32, half away from zero)",
                    op(lambda s: s.vector_fp_to_fxp(31), f32, xf * 1000),
                    lambda: np.trunc(xf * 1000 + np.copysign(np.float32(0.5), xf)).astype(np.int32),
                    lambda out: same(lanes(out), np.trunc((xf * 1000).astype(np.float64)
                                                          + np.copysign(0.5, xf)).astype(np.int32), "fp_to_fxp")))

    w = ints((8,))
    vrf = place_vrf(ctx, np.broadcast_to(w, (2, 256, 8)), i32, SM["1"], SM["C"], SM["S"], SM["L"], 0, axes="C S L")
    rows.append(Row("VE fxp MulInt by a VRF operand", op(lambda s: s.vector_fxp(FxpBinaryOp.MulInt, vrf)),
                    lambda: x * w, lambda out: same(lanes(out), x * w, "MulInt VRF")))

    # intra-slice reduce: the max over each slice's T · 4 elements of lanes 0–3 (Way4, L4907–4913)
    def intra() -> Callable[[], Any]:
        s = ve(ctx, x)
        return lambda: force(s.vector_split(SM["T, L / 4"], SM["L % 4"])
                             .vector_intra_slice_reduce("T", SM["L / 4"], SM["L % 4"], IntraSliceReduceOpI32.Max)
                             .vector_concat(SM["1"], SM["L"]).vector_final())

    rows.append(Row("VE split → intra-slice reduce Max over Time → concat", intra, lambda: x.max(axis=2),
                    lambda out: same(np.asarray(out.data.values)[0, :, :, 0], x.max(axis=2), "intra max")))

    # inter-slice reduce: Σ over 32 neighbouring slices (Add wraps), the result broadcast over them (X)
    red = AxisSet(C=2, G=8, R=32, T=T, L=8, X=32)
    rlay = StreamLayout(i32, red.m["1"], red.m["C"], red.m["G, R"], red.m["T"], red.m["L"])
    xr = x.reshape(2, 8, 32, T, 8)
    want_add = xr.sum(axis=2, dtype=np.int32)

    def inter(slice2: str, op_: Any) -> Callable[[], Callable[[], Any]]:
        def prepare() -> Callable[[], Any]:
            s = stream(ctx, x, i32, rlay).vector_init()
            return lambda: force(s.vector_inter_slice_reduce(red.m[slice2], red.m["T"], op_).vector_final())
        return prepare

    def numpy_inter(x5: np.ndarray, broadcast: bool) -> np.ndarray:
        """The sums laid out as the engine lays them out: on every slice of the group, or on its first."""
        out = np.empty_like(x5) if broadcast else np.zeros_like(x5)
        total = x5.sum(axis=2, dtype=np.int32)
        if broadcast:
            out[...] = total[:, :, None]
        else:
            out[:, :, 0] = total
        return out

    rows.append(Row("VE inter-slice reduce Add, 32 slices, broadcast", inter("G, X", InterSliceReduceOpI32.Add),
                    lambda: numpy_inter(xr, True),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 8, 32, T, 8)[:, :, 5], want_add,
                                     "inter Add")))
    xs = small.reshape(2, 8, 32, T, 8)
    want_sat = xs.sum(axis=2, dtype=np.int32)  # |Σ| ≤ 2^25: never saturates

    def inter_sat() -> Callable[[], Any]:
        s = stream(ctx, small, i32, rlay).vector_init()
        return lambda: force(s.vector_inter_slice_reduce(red.m["G, 1 # 32"], red.m["T"],
                                                         InterSliceReduceOpI32.AddSat).vector_final())

    rows.append(Row("VE inter-slice reduce AddSat, 32 slices, 1 # 32", inter_sat, lambda: numpy_inter(xs, False),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 8, 32, T, 8)[:, :, 0], want_sat,
                                     "inter AddSat")))

    # zip: pairs of Time steps (the pair innermost: a group is one packet in the register-file cache, L5156)
    # unzipped into groups and added
    zax = AxisSet(C=2, S=256, I=2, T=T // 2, L=8)
    zlay = StreamLayout(i32, zax.m["1"], zax.m["C"], zax.m["S"], zax.m["T, I"], zax.m["L"])
    xz = x.reshape(2, 256, T // 2, 2, 8)

    def zipped() -> Callable[[], Any]:
        s = stream(ctx, x, i32, zlay).vector_init()
        return lambda: force(s.vector_intra_slice_unzip("I", zax.m["T, 1 # 2"], zax.m["T"])
                             .vector_fxp_zip(FxpBinaryOp.AddFxp).vector_final())

    rows.append(Row("VE unzip → fxp zip AddFxp", zipped, lambda: xz[:, :, :, 0] + xz[:, :, :, 1],
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, T // 2, 8),
                                     xz[:, :, :, 0] + xz[:, :, :, 1], "zip")))

    # transpose: 8 × 8 i8 blocks within 32-byte flits (L6913–6945)
    tax = AxisSet(C=2, S=256, B=N // (2 * 256 * 64), R=8, E=8)
    tlay = StreamLayout(i8, tax.m["1"], tax.m["C"], tax.m["S"], tax.m["B, R"], tax.m["E # 32"])
    xt = ints((2, 256, N // (2 * 256 * 64), 8, 8), np.int8, -128, 127)
    padded = np.zeros((*xt.shape[:-1], 32), dtype=np.int8)
    padded[..., :8] = xt
    known = np.zeros(padded.shape, dtype=bool)
    known[..., :8] = True

    def transpose() -> Callable[[], Any]:
        s = CollectTensor(ctx.main, tlay, StreamData(padded.reshape(1, 2, 256, -1, 32), known.reshape(1, 2, 256, -1,
                                                                                                      32)))
        return lambda: force(s.transpose(tax.m["B, E"], tax.m["R # 32"]))

    def numpy_transpose() -> np.ndarray:
        """The blocks transposed into 32-byte flits, as the engine lays them out (8 bytes of each a row)."""
        out = np.zeros(padded.shape, dtype=np.int8)
        out[..., :8] = xt.swapaxes(-1, -2)
        return out

    rows.append(Row("transpose 8 × 8 i8 blocks", transpose, numpy_transpose,
                    lambda out: same(np.asarray(out.data.values)[0].reshape(*xt.shape[:-2], 8, 32)[..., :8],
                                     xt.swapaxes(-1, -2), "transpose")))
    return rows


def image_like(lead: tuple[int, ...], nbytes: int) -> np.ndarray:
    """Zero bytes shaped as a memory image, mapped as the images are (small pages, taken where written:
    :func:`visa.memory.arena.lazy_zeros`) — numpy's huge pages would commit and clear 2 MiB for every few slices'
    rows, half a GiB for a DM-shaped pair."""
    return lazy_zeros((*lead, nbytes), np.dtype(np.uint8))


def register_copy(ctx: Context, x: np.ndarray, address: int, memory: str) -> Callable[[], Any]:
    """The numpy operation that moves what a register load from DM moves: each slice's bytes of ``x`` (``(2, 256,
    ...)``), read at ``address`` of an array shaped as a chip's DM image and written into one shaped as its
    register file (a VRF slice's first bytes; a TRF slice's bank rows, the first bytes of each) — strided on
    both sides as the engine's copies are, where a copy of ``x`` would read and write one contiguous block."""
    dm = ctx.memory.chip(0).dm
    reg = getattr(ctx.memory.chip(0), memory)
    per = x[0, 0].nbytes
    src = image_like(dm.lead_shape, dm.nbytes)
    src[..., address: address + per] = x.reshape(*dm.lead_shape, -1).view(np.uint8)
    dst = image_like(reg.lead_shape, reg.nbytes)
    rows = int(np.prod(reg.lead_shape[2:], dtype=np.int64))  # (bank rows of a TRF slice; 1 for the VRF)
    target = dst.reshape(*dm.lead_shape, rows, reg.nbytes)[..., : per // rows]
    source = src[..., address: address + per].reshape(target.shape)
    return lambda: np.copyto(target, source)


def dm_copy(ctx: Context, x: np.ndarray, src: int, dst: int, swap: bool = False) -> Callable[[], Any]:
    """The numpy operation that moves what a DM → DM DMA moves: each slice's bytes of ``x`` (``(2, 256, ...)``),
    read at ``src`` of an array shaped as a chip's DM image and written at ``dst`` of another (the clusters
    exchanged with ``swap``): runs of a slice's bytes a slice's address space apart on both sides, as the engine's
    copy — where a copy of ``x`` reads and writes one contiguous block.  (Two arrays: in one, numpy would copy the
    source to a temporary first, as the engine's reference path does.)"""
    image = ctx.memory.chip(0).dm
    per = x[0, 0].nbytes
    a = image_like(image.lead_shape, image.nbytes)
    a[..., src: src + per] = x.reshape(*image.lead_shape, -1).view(np.uint8)
    b = image_like(image.lead_shape, image.nbytes)
    b[..., dst: dst + per] = 1
    source = a[::-1, :, src: src + per] if swap else a[..., src: src + per]
    return lambda: np.copyto(b[..., dst: dst + per], source)


# --- DM and HBM: fetch, commit, register loads, contraction, ParallelCopy, DMA --------------------------------
DX = AxisSet(C=2, S=256, E=N // 512, P=2, H=N // 1024, V=N // 512 // 8, W=7)
DM_ = DX.m


def memory_rows(ctx: Context) -> list[Row]:
    per = N // 512
    x = ints((2, 256, per))
    rows: list[Row] = []
    arena = Arena(dm=OUT_BYTES)  # inputs above the shared output area [0, OUT_BYTES) of every slice
    src = place_dm(ctx, x, i32, DM_["1"], DM_["C"], DM_["S"], DM_["E"], arena.take_dm(4 * per), axes="C S E")

    def fetch() -> Callable[[], Any]:
        return lambda: force(ctx.main.begin(src.view()).fetch(i32, DM_["E / 8"], DM_["E % 8"]))

    rows.append(Row("fetch (plain)", fetch, lambda: x.copy(),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, per), x, "fetch")))

    xb = ints((2, 256, per), np.int8, -125, 127)  # (x − 3 stays in range for the zero point)
    src8 = place_dm(ctx, xb, i8, DM_["1"], DM_["C"], DM_["S"], DM_["E"], arena.take_dm(per), axes="C S E")

    def widen() -> Callable[[], Any]:
        return lambda: force(ctx.main.begin(src8.view()).fetch(i32, DM_["E / 8"], DM_["E % 8"]))

    rows.append(Row("fetch with a cast i8 → i32 (widening)", widen, lambda: xb.astype(np.int32),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, per), xb.astype(np.int32),
                                     "widen")))

    table = LookupTable.from_function(i8, i8, lambda v: np.clip(2 * v.astype(np.int32), -128, 127))
    lut = np.clip(2 * np.arange(-128, 128), -128, 127).astype(np.int8)

    def tabled() -> Callable[[], Any]:
        return lambda: force(ctx.main.begin(src8.view()).fetch_with_table(i8, DM_["E / 32"], DM_["E % 32"], table))

    rows.append(Row("fetch with a lookup table (i8 → i8)", tabled, lambda: lut[xb.view(np.uint8) ^ 0x80],
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, per),
                                     lut[xb.astype(np.int16) + 128], "table")))

    def zero_point() -> Callable[[], Any]:
        return lambda: force(ctx.main.begin(src8.view()).fetch_with_zero_point(i8, DM_["E / 32"], DM_["E % 32"],
                                                                               3))

    zp = (xb.astype(np.int16) - 3).astype(np.int8)
    rows.append(Row("fetch with a zero point (i8)", zero_point, lambda: xb - np.int8(3),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, per), zp, "zero point")))

    # masked: the last of every 8 lanes is padding in DM, filled by the pad value
    xm = ints((2, 256, per // 8, 7))
    srcm = place_dm(ctx, xm, i32, DM_["1"], DM_["C"], DM_["S"], DM_["V, W # 8"], arena.take_dm(4 * per),
                    axes="C S V W")
    want_m = np.concatenate([xm, np.zeros((*xm.shape[:-1], 1), dtype=np.int32)], axis=-1)

    def masked() -> Callable[[], Any]:
        return lambda: force(ctx.main.begin(srcm.view()).fetch(i32, DM_["V"], DM_["W # 8"], pad_value=PadValue.Zero))

    rows.append(Row("fetch with masking (a padded lane, pad value 0)", masked, lambda: want_m.copy(),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(want_m.shape), want_m, "masked")))

    flat = StreamLayout(i32, DM_["1"], DM_["C"], DM_["S"], DM_["E / 8"], DM_["E % 8"])
    values = np.ascontiguousarray(x.reshape(1, 2, 256, per // 8, 8))

    def commit() -> Callable[[], Any]:
        s = CollectTensor(ctx.main, flat, StreamData(values, known_everywhere(values.shape)))
        return lambda: s.commit(DM_["E"], 0)

    rows.append(Row("commit", commit, lambda: x.copy(),
                    lambda out: same(np.asarray(out.logical(axes="C S E")), x, "commit")))
    view_dst = place_dm(ctx, np.zeros((2, 256, per), dtype=np.int32), i32, DM_["1"], DM_["C"], DM_["S"], DM_["E"],
                        arena.take_dm(4 * per), axes="C S E")

    def commit_view() -> Callable[[], Any]:
        s = CollectTensor(ctx.main, flat, StreamData(values, known_everywhere(values.shape)))
        return lambda: s.commit_view(view_dst.view())

    rows.append(Row("commit_view", commit_view, lambda: x.copy(),
                    lambda out: same(np.asarray(view_dst.logical(axes="C S E")), x, "commit_view")))

    # register loads: the sub context's fetch → collect → to_vrf / to_trf of what fits (VRF 8 KiB, TRF 64 KiB)
    vr = AxisSet(C=2, S=256, E=2048)
    xv = ints((2, 256, 2048))
    src_v = place_dm(ctx, xv, i32, vr.m["1"], vr.m["C"], vr.m["S"], vr.m["E"], arena.take_dm(8192),
                     axes="C S E")

    def to_vrf() -> Callable[[], Any]:
        return lambda: (ctx.sub.begin(src_v.view()).fetch(i32, vr.m["E / 8"], vr.m["E % 8"])
                        .collect(vr.m["E / 8"], vr.m["E % 8"]).to_vrf(vr.m["E"], 0))

    rows.append(Row("fetch → collect → to_vrf (8 KiB a slice)", to_vrf, register_copy(ctx, xv, src_v.address, "vrf"),
                    lambda out: same(np.asarray(out.logical(axes="C S E")), xv, "to_vrf")))
    tr = AxisSet(C=2, S=256, R=8, E=4096)
    xtr = ints((2, 256, 8, 4096), np.int8, -128, 127)
    src_t = place_dm(ctx, xtr, i8, tr.m["1"], tr.m["C"], tr.m["S"], tr.m["R, E"], arena.take_dm(32768),
                     axes="C S R E")

    def to_trf() -> Callable[[], Any]:
        return lambda: (ctx.sub.begin(src_t.view()).fetch(i8, tr.m["R"], tr.m["E"])
                        .collect(tr.m["R, E / 32"], tr.m["E % 32"]).to_trf(tr.m["R"], tr.m["E"], TrfAddress.FirstHalf))

    rows.append(Row("fetch → collect → to_trf (32 KiB a slice)", to_trf, register_copy(ctx, xtr, src_t.address, "trf"),
                    lambda out: same(np.asarray(out.logical(axes="C S R E")), xtr, "to_trf")))

    # contraction: 512 slices, each (128 × 64 i8) · (64 × 64 i8), accumulated in i32
    ca = AxisSet(C=2, S=256, I=128, K=64, J=64)
    cm = ca.m
    a = ints((2, 256, 128, 64), np.int8, -128, 127)
    b = ints((2, 256, 64, 64), np.int8, -128, 127)  # (J, K) per slice
    a_dm = place_dm(ctx, a, i8, cm["1"], cm["C"], cm["S"], cm["I, K"], arena.take_dm(8192), axes="C S I K")
    trf = place_trf(ctx, b, i8, cm["1"], cm["C"], cm["S"],
                    cm["J % 8"], cm["J / 8, K"], TrfAddress.SecondHalf, axes="C S J K")
    af, bf = a.astype(np.float32), b.astype(np.float32)
    want_c = np.einsum("csik,csjk->csij", a.astype(np.int32), b.astype(np.int32))

    def contract() -> Callable[[], Any]:
        s = (ctx.main.begin(a_dm.view()).fetch(i8, cm["I"], cm["K"]).collect(cm["I, K / 32"], cm["K % 32"])
             .align(cm["I, J / 8"], cm["K"], trf).contract(cm["1"]))
        return lambda: force(s.accumulate(cm["I, J / 8"], cm["J % 8"], AccumulationKind.Interleaved))

    rows.append(Row("contraction: accumulate (512 × 128×64·64×64 i8)", contract, lambda: af @ bf.swapaxes(-1, -2),
                    lambda out: same(np.asarray(out.data.values)[0].reshape(2, 256, 128, 64), want_c, "contract")))

    # ParallelCopy: each cluster keeps one half of the Element
    xp = ints((2, 256, 2, per // 2))
    src_p = place_dm(ctx, xp, i32, DM_["1"], DM_["C"], DM_["S"], DM_["P, H"], arena.take_dm(4 * per),
                     axes="C S P H")

    def pcopy() -> Callable[[], Any]:
        return lambda: src_p.asymmetric_cluster_slice(DM_["P"], ctx.sub, [0, 1], 0)

    rows.append(Row("ParallelCopy (asymmetric cluster slice)", pcopy, lambda: xp[[0, 1], :, [0, 1]].copy(),
                    lambda out: same(np.asarray(out.logical(axes="C S H")), np.stack([xp[0, :, 0], xp[1, :, 1]]),
                                     "parallel copy")))
    rows.extend(dma_rows(ctx, arena))
    return rows


def dma_rows(ctx: Context, arena: Arena) -> list[Row]:
    per = N // 512
    x = ints((2, 256, per))
    rows: list[Row] = []
    m = DM_
    host = HostTensor.from_numpy(x, i32, m["C, S, E"], axes="C S E")
    hbm = host.to_hbm(m["1"], m["C, S, E"], ctx.pdma, 0)
    dm = hbm.to_dm(m["C"], m["S"], m["E"], ctx.tdma, arena.take_dm(4 * per))
    flat = x.reshape(-1)

    rows.append(Row("DMA host → HBM (PCIe)", lambda: lambda: host.to_hbm(m["1"], m["C, S, E"], ctx.pdma, 1 << 28),
                    lambda: x.copy(), lambda out: same(out.to_host(m["C, S, E"], ctx.pdma).numpy(axes="C S E"), x,
                                                       "host → HBM")))
    rows.append(Row("DMA HBM → host (PCIe)", lambda: lambda: hbm.to_host(m["C, S, E"], ctx.pdma), lambda: x.copy(),
                    lambda out: same(out.numpy(axes="C S E"), x, "HBM → host")))
    rows.append(Row("DMA HBM → HBM contiguous", lambda: lambda: hbm.to_hbm(m["1"], m["C, S, E"], ctx.tdma, 1 << 29),
                    lambda: flat.copy(), lambda out: same(out.logical(axes="C S E"), x, "HBM → HBM")))
    rows.append(Row("DMA HBM → HBM permuted (C, S, E) → (S, C, E)",
                    lambda: lambda: hbm.to_hbm(m["1"], m["S, C, E"], ctx.tdma, 1 << 29),
                    lambda: x.transpose(1, 0, 2).copy(), lambda out: same(out.logical(axes="C S E"), x, "permuted")))
    rows.append(Row("DMA HBM → DM (512 slices)", lambda: lambda: hbm.to_dm(m["C"], m["S"], m["E"], ctx.tdma, 0),
                    lambda: flat.copy(), lambda out: same(out.logical(axes="C S E"), x, "HBM → DM")))
    rows.append(Row("DMA DM → HBM", lambda: lambda: dm.to_hbm(m["C, S, E"], ctx.tdma, 1 << 30), lambda: flat.copy(),
                    lambda out: same(out.logical(axes="C S E"), x, "DM → HBM")))
    rows.append(Row("DMA DM → DM", lambda: lambda: dm.to_dm(m["C"], m["S"], m["E"], ctx.tdma, 0),
                    dm_copy(ctx, x, dm.address, 0), lambda out: same(out.logical(axes="C S E"), x, "DM → DM")))
    rows.append(Row("DMA cluster swap (DM → DM)",
                    lambda: lambda: dm.view().cluster_swap().to_dm(m["C"], m["S"], m["E"], ctx.tdma, 0),
                    dm_copy(ctx, x, dm.address, 0, swap=True),
                    lambda out: same(out.logical(axes="C S E"), x[::-1], "cluster swap")))
    one = hbm.view().tile(m["C"], 1, m["1 # 2, S, E"], 0).tile(m["S"], 1, m["1 # 2, 1 # 256, E"], 0)
    rows.append(Row("DMA HBM → DM broadcast (one row to 512 slices)",
                    lambda: lambda: one.to_dm(m["1 # 2"], m["1 # 256"], m["E"], ctx.tdma, 0),
                    lambda: np.broadcast_to(x[0, 0], (512, per)).copy(),
                    lambda out: same(out.logical(axes="E"), x[0, 0], "broadcast")))
    return rows


def measure(rows: list[Row]) -> list[str]:
    only = [w for w in os.environ.get("ENGINES_ONLY", "").split(",") if w]
    lines = []
    for row in rows:
        if only and not any(w in row.name for w in only):
            continue
        theirs = best_of(row.numpy, REPEAT)
        runs = max(REPEAT, min(100, int(0.05 / max(theirs, 1e-6))))  # (short rows: more samples, both sides alike)
        ours = timed(row.prepare, row.check, runs)
        if runs > REPEAT:
            theirs = min(theirs, best_of(row.numpy, runs))
        ratio = ours / theirs
        verdict = "within" if ratio <= AIM else "OVER"
        lines.append(f"engine: {row.name:<52} visa {ours * 1e3:8.2f} ms   numpy {theirs * 1e3:7.2f} ms   "
                     f"ratio {ratio:6.2f}x  ({verdict} the {AIM:g}x aim)")
    return lines


def run() -> list[str]:
    ctx = Context(RNGD)
    return measure(stream_rows(ctx) + memory_rows(ctx))


if __name__ == "__main__":
    for text in run():
        print(text, flush=True)
