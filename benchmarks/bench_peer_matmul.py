"""The Rust reference's ``matmul_16384`` kernel, written in visa as a new user would write it (issue 24).

``C[A, C] = Σ_B lhs[A, B] · rhs[B, C]`` with i8 operands and an **i8** result, n = 16384.  The structure is
the reference's (furiosa-opt's ``matmul_16384`` example, studied, not copied); each step in visa's spelling:

- **Output tiles of 1024 × 64** (``TI × TC``), 4,096 of them at full size; each is computed over the whole of
  the contracted axis and written in place into the HBM result (``to_hbm_view`` into a tile of ``out``).
- **K in four tiles** of n / 4 = 4,096 (the TRF holds 64 KiB a slice, L139): per K tile the tensor DMA moves the
  lhs tile to DM, the rhs tile to DM (broadcast to the row groups of slices), the **sub context** stages it into
  the TRF (fetch → collect → ``to_trf``), and the **main context** contracts: fetch, collect, align, contract,
  accumulate, then the Vector Engine's **inter-slice reduce** over the slices holding the K tile's pieces
  (``Add``, the result broadcast over those slices, L6654–6672), and the **Cast Engine narrows i32 → i8**
  (wrapping, docs/manual-notes.md "Cast Engine") into ``commit_view`` of a DM partial.
- **The four i8 partials added pairwise** as the reference does (``result0``, then ``result1 = result0 + t``,
  ``result0 = result1 + t``, ``result1 = result0 + t``): an interleaved fetch of the two partials widened to
  i32, ``vector_intra_slice_unzip`` and an ``AddFxp`` zip, narrowed back to i8 and ``commit_view``-ed.
- **The two clusters' halves reduced** by the reference's ReduceScatter of two clusters: an asymmetric cluster
  slice (ParallelCopy in the sub context, L7603–7606) keeps half of the columns on each cluster, a second one
  keeps the other halves, a **cluster swap** (DM → DM tensor DMA) exchanges those, and an interleaved add sums
  them: cluster k holds the sum of columns ``C % 64 / 32 = k``.
- The first slice of each reduce group is written to HBM (``to_hbm_view`` of a tile of the result).

Where visa departs from the reference, and why (each also in docs/manual-notes.md, "issue 24"):

- The contracted axis is declared as four axes ``J, H, K, S`` (``B = J·n/4 + H·n/8 + S·64 + K``, the same
  bytes as one axis): the reference puts ``B / 2048 % 2`` in Cluster and ``B / 64 % 32`` in Slice, and then
  reduces the slice digit while the cluster digit stays; visa's inter-slice reduce refuses a reduced axis that
  stays in Cluster (L6733–6734, V3053), so the cluster half is an axis of its own (as ``visa.kernels.gemm_i8``).
- The rhs tile is transposed by the DMA on its way to DM (``m["C, K"]``) instead of by a ParallelCopy, a
  Switch Engine broadcast and a Transpose Engine pass (the issue's structure stages it "into the TRF by the
  sub context"; the reference's extra passes are a workaround of its DMA, noted there as a TODO).
- Each intermediate has an address of its own (the reference puts ``result0``, ``result1`` and ``temp`` all at
  DM address 0).

The result is exact: every narrowing wraps modulo 2^8 and every add wraps modulo 2^32, so ``C`` is the exact
integer product modulo 256, compared bit for bit with numpy's (float32 products over K runs of 1024 — each an
integer below 2^24, exact — summed in int64 and wrapped to int8).

Reported: wall time per tile (the first tile, which plans every engine, and the rest) against numpy's float32
product of the same tile, the whole kernel's time (measured over ``TILES`` tiles, the rest extrapolated when
fewer than all run), and peak RSS against the tensors' bytes (5·n²: the operands x and y on the host, which the
check reads, and lhs, rhs and the result in HBM).  The benchmark runs in a fresh process (``--child``), so the peak
is its own (``VmHWM``, :func:`benchmarks.common.peak_rss`), given twice: after the setup and the launches (the
simulation), and after the check.  ``N`` (default 16384), ``ROWS`` (rows of lhs per slice, default 128) and
``TILES`` (how many tiles to run, default 8; 0 for all) in the environment; the suite's test runs ``N = 1024``
exactly.  ``TIMELINE=0`` turns the schedule's timeline off (``Schedule.timeline``: an operation that left flight
keeps its cycles, report and trace but lets go of its footprints — the same schedule), for long runs.  At n = 16384
the peak of setup + launches grows with the tiles run (C's HBM region, written tile by tile, and the schedule's
record): with the timeline on, 1.14 GiB for 48 tiles, 1.17 GiB for 256, 1.45 GiB for 1,024 (about 0.32 MiB a tile;
before the record shared a tile view's intervals and equal engine reports, issue 24 h24s, 0.6 MiB a tile and
1.73 GiB for 1,024); the whole 4,096 tiles extrapolate to about 2.4 GiB (1.9×) on, 2.0 GiB (1.6×) off.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.common import clock, in_child, peak_rss
from visa import (
    AccumulationKind,
    AxisSet,
    Context,
    DmTensor,
    FxpBinaryOp,
    HbmTensor,
    HostTensor,
    InterSliceReduceOpI32,
    TrfAddress,
    device,
    i8,
    i32,
    launch,
)

TC = 64  # columns of an output tile: 8 TRF Rows (the lanes) × 8 columns per Row
KS = 64  # contracted elements per slice and K tile (one Row's 64 products)
K_TILES = 4  # K tiles per output tile (the reference's 4 × 4096)

Dm = DmTensor[Any, Any, Any, Any, Any]


@dataclass(frozen=True)
class Geometry:
    """Sizes of the kernel for an ``n``³ product with ``rows`` lhs rows per slice."""

    n: int
    rows: int

    @property
    def slices_k(self) -> int:
        """Slices holding one cluster's half of a K tile (32 at n = 16384)."""
        return self.n // K_TILES // 2 // KS

    @property
    def groups(self) -> int:
        """Row groups of slices (8 at n = 16384): each holds ``rows`` rows of lhs."""
        return 256 // self.slices_k

    @property
    def ti(self) -> int:
        """Rows of an output tile (1024 at n = 16384)."""
        return self.groups * self.rows

    @property
    def tiles(self) -> int:
        """Output tiles of the whole product."""
        return (self.n // self.ti) * (self.n // TC)

    def check(self) -> None:
        """Refuse sizes the layout cannot hold."""
        if self.n % (K_TILES * 2 * KS) or self.slices_k > 256 or 256 % self.slices_k or self.n % self.ti \
                or self.rows % 8:
            raise SystemExit(f"N = {self.n}, ROWS = {self.rows}: need N a multiple of 512 with N / 512 dividing "
                             "256, ROWS a multiple of 8 and N a multiple of 256 / (N / 512) · ROWS")


def axes(g: Geometry) -> AxisSet:
    """The kernel's axes: A (rows), C (columns), the contracted axis as J (K tile), H (cluster half), S (slice),
    K (within a slice); X the broadcast of the reduce's result over a group's slices; I the interleave pair."""
    return AxisSet(A=g.n, C=g.n, J=K_TILES, H=2, S=g.slices_k, K=KS, X=g.slices_k, I=2)


def kernels(g: Geometry) -> Any:
    """The ``@device`` kernel ``matmul(ctx, lhs, rhs, out, tiles)``: the first ``tiles`` output tiles."""
    g.check()
    ax = axes(g)
    m = ax.m
    n, r, ti = g.n, g.rows, g.ti
    cluster = m["H"]
    slice_ = m[f"A % {ti} / {r}, S"]  # row group × K slice: 256 a cluster
    reduced_slice = m[f"A % {ti} / {r}, X"]  # the reduce's result, on every slice of its group
    # one slice's share of an output tile, the half of the columns each cluster keeps outermost: ParallelCopy keeps
    # an entry of the Element's outermost digit (one contiguous block a slice, L7603–7606), as the reference lays
    # its partials out (``C % 64`` first)
    partial = m[f"C % {TC} / 32, A % {r}, C % 32"]
    half = m[f"A % {r}, C % 32"]  # after the cluster reduce: one half of the columns
    lhs_tile_map = m[f"1 # {n // ti}, A % {ti}, 1 # {K_TILES}, H, S, K"]
    rhs_tile_map = m[f"1 # {K_TILES}, H, S, K, 1 # {n // TC}, C % {TC}"]
    out_tile_map = m[f"1 # {n // ti}, A % {ti}, 1 # {n // TC}, C % {TC}"]
    part_bytes, half_bytes = r * TC, r * 32
    a_lhs, a_rhs = 0, r * KS
    a_rhs_t = a_rhs + TC * KS
    rhs_t_map = m["C % 64 / 8, K / 8, C % 8, K % 8"]
    a_res = [a_rhs_t + TC * KS + k * part_bytes for k in range(3)]  # result0, result1, temp
    a_cl = a_res[2] + part_bytes  # sliced0, sliced1, shuffled1, reduced
    a_half = [a_cl + k * half_bytes for k in range(4)]

    def contraction(ctx: Context, lhs: Any, rhs: Any, out: Dm) -> None:
        """One K tile: lhs and rhs tiles to DM, rhs staged into the TRF by the sub context, contracted by main,
        reduced over the group's slices, narrowed to i8 into ``out``."""
        lhs_dm = lhs.to_dm(cluster, slice_, m[f"A % {r}, K"], ctx.tdma, a_lhs)
        rhs_dm = rhs.to_dm(cluster, slice_, m[f"K, C % {TC}"], ctx.tdma, a_rhs)
        rhs_t = (ctx.main.begin(rhs_dm.view())  # 8 × 8 blocks transposed: C major, K in runs of 8 (L6913–6945)
                 .fetch(i8, m["C % 64 / 8, K"], m["C % 8"])
                 .collect(m["C % 64 / 8, K"], m["C % 8 # 32"])
                 .transpose(m["C % 64 / 8, K / 8, C % 8"], m["K % 8 # 32"])
                 .commit(rhs_t_map, a_rhs_t))
        trf = (ctx.sub.begin(rhs_t.view())
               .fetch(i8, m["C % 8, C % 64 / 8"], m["K"])
               .collect(m["C % 8, C % 64 / 8, K / 32"], m["K % 32"])
               .to_trf(m["C % 8"], m["C % 64 / 8, K"], TrfAddress.Full))
        (ctx.main.begin(lhs_dm.view())
         .fetch(i8, m[f"A % {r}"], m["K"])
         .collect(m[f"A % {r}, K / 32"], m["K % 32"])
         .align(m[f"A % {r}, C % 64 / 8"], m["K"], trf)
         .contract(m["1"])
         .accumulate(m[f"A % {r}, C % 64 / 8"], m["C % 8"], AccumulationKind.Interleaved)
         .vector_init()
         .vector_inter_slice_reduce(reduced_slice, m[f"A % {r}, C % 64 / 8"], InterSliceReduceOpI32.Add)
         .vector_final()
         .cast(i8, m["C % 8 # 32"])
         .commit_view(out.view()))

    def add(ctx: Context, a: Dm, b: Dm, out: Dm, time: Any) -> None:
        """``out = a + b`` (i8, wrapping): interleaved fetch widened to i32, unzip, AddFxp, narrowed to i8."""
        # the pair innermost in Time, as the reference reads it: a group is one packet in the Vector Engine's
        # register-file cache (L5156)
        (ctx.main.begin_interleaved(m["I"], a.view(), b.view())
         .fetch(i32, m[f"{time}, I"], m["C % 8"])
         .collect(m[f"{time}, I"], m["C % 8"])
         .vector_init()
         .vector_intra_slice_unzip("I", m[f"{time}, 1 # 2"], m[time])
         .vector_fxp_zip(FxpBinaryOp.AddFxp)
         .vector_final()
         .cast(i8, m["C % 8 # 32"])
         .commit_view(out.view()))

    def reduce_over_cluster(ctx: Context, x: Dm) -> Dm:
        """The two clusters' sums: cluster k ends with columns ``C % 64 / 32 = k`` of x summed over H."""
        digit = m["C % 64 / 32"]
        sliced0 = x.asymmetric_cluster_slice(digit, ctx.sub, [0, 1], a_half[0])
        sliced1 = x.asymmetric_cluster_slice(digit, ctx.sub, [1, 0], a_half[1])
        shuffled1 = sliced1.view().cluster_swap().to_dm(cluster, reduced_slice, half, ctx.tdma, a_half[2])
        reduced = DmTensor.from_addr(ctx, i8, m["1"], cluster, reduced_slice, half, a_half[3])
        add(ctx, sliced0, shuffled1, reduced, f"A % {r}, C % 32 / 8")
        return reduced.relabel(Cluster=m["C % 64 / 32"])

    def tile_of(out: Any, t: int) -> Any:
        """Output tile ``t`` (row-major over the tiles) of the HBM result, a view."""
        it, ct = divmod(t, n // TC)
        return (out.view().tile(m[f"A / {ti}"], 1, m[f"1 # {n // ti}, A % {ti}, C"], it)
                .tile(m[f"C / {TC}"], 1, out_tile_map, ct))

    @device(chip=1)
    def matmul(ctx: Context, lhs: HbmTensor[Any, Any, Any], rhs: HbmTensor[Any, Any, Any],
               out: HbmTensor[Any, Any, Any], tiles: int) -> HbmTensor[Any, Any, Any]:
        results = [DmTensor.from_addr(ctx, i8, m["1"], cluster, reduced_slice, partial, a) for a in a_res]
        for t in range(tiles):
            it, ct = divmod(t, n // TC)
            out_tile = tile_of(out, t)
            lhs_rows = lhs.view().tile(m[f"A / {ti}"], 1, m[f"1 # {n // ti}, A % {ti}, J, H, S, K"], it)
            rhs_cols = rhs.view().tile(m[f"C / {TC}"], 1, m[f"J, H, S, K, 1 # {n // TC}, C % {TC}"], ct)
            for j in range(K_TILES):
                lhs_t = lhs_rows.tile(m["J"], 1, lhs_tile_map, j)
                rhs_t = rhs_cols.tile(m["J"], 1, rhs_tile_map, j)
                if j == 0:
                    contraction(ctx, lhs_t, rhs_t, results[0])
                else:
                    contraction(ctx, lhs_t, rhs_t, results[2])
                    src, dst = (results[0], results[1]) if j % 2 else (results[1], results[0])
                    add(ctx, src, results[2], dst, f"C % {TC} / 32, A % {r}, C % 32 / 8")
            reduced = reduce_over_cluster(ctx, results[1])
            first = reduced.relabel(Slice=m[f"A % {ti} / {r}, 1 # {g.slices_k}"])
            first.to_hbm_view(out_tile, ctx.tdma)
        return out

    return matmul, ax, tile_of


def reference(x: np.ndarray, y: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """``(x @ y)[rows, cols]`` wrapped to i8, exactly: float32 products over K runs of 1024 (each partial an
    integer below 2^24: exact), summed in int64."""
    out = np.zeros((rows.stop - rows.start, cols.stop - cols.start), dtype=np.int64)
    xr, yc = x[rows], y[:, cols]
    for k0 in range(0, x.shape[1], 1024):
        out += (xr[:, k0:k0 + 1024].astype(np.float32) @ yc[k0:k0 + 1024].astype(np.float32)).astype(np.int64)
    return out.astype(np.int8)


def numpy_tile(x: np.ndarray, y: np.ndarray, g: Geometry) -> float:
    """Best time of numpy's float32 product of one output tile (``ti × n`` by ``n × 64``)."""
    from benchmarks.common import best_of

    xf = x[:g.ti].astype(np.float32)
    yf = y[:, :TC].astype(np.float32)
    return best_of(lambda: xf @ yf, 5)


def run_kernel(n: int, rows: int = 128, tiles: int | None = None, measure: bool = True) -> dict[str, Any]:
    """Run the first ``tiles`` output tiles (all by default) of the n³ product, check them exactly; the
    measurements (``measure``: numpy's time for a tile too), the tiles of C and the schedule."""
    base = peak_rss()  # the interpreter, numpy and visa
    g = Geometry(n, rows)
    matmul, ax, tile_of = kernels(g)
    m = ax.m
    tiles = g.tiles if tiles is None else min(tiles, g.tiles)
    rng = np.random.default_rng(24)
    x = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    y = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    ctx = Context.acquire()
    if os.environ.get("TIMELINE", "1") == "0":  # the record compacts what left flight (visa.schedule.Schedule)
        ctx.schedule.timeline = False
    lhs = HostTensor.from_numpy(x.reshape(n, K_TILES, 2, g.slices_k, KS), i8, m["A, J, H, S, K"],
                                axes="A J H S K")
    rhs = HostTensor.from_numpy(y.reshape(K_TILES, 2, g.slices_k, KS, n), i8, m["J, H, S, K, C"],
                                axes="J H S K C")
    lhs_hbm = lhs.to_hbm(m["1"], m["A, J, H, S, K"], ctx.pdma, 0)
    rhs_hbm = rhs.to_hbm(m["1"], m["J, H, S, K, C"], ctx.pdma, n * n)
    out = HbmTensor.from_addr(ctx, i8, m["1"], m["A, C"], 2 * n * n)
    start = clock()
    launch(matmul, ctx, lhs_hbm, rhs_hbm, out, 1)
    first = clock() - start
    start = clock()
    if tiles > 1:
        launch(matmul, ctx, lhs_hbm, rhs_hbm, out, tiles)  # tile 0 again, then the rest
    rest = (clock() - start) / max(tiles, 1)
    # x, y on the host (the check reads them); lhs, rhs, out in HBM
    result = {"n": n, "ti": g.ti, "tiles": tiles, "all_tiles": g.tiles, "first_s": first, "tile_s": rest,
              "base_rss": base, "launch_peak": peak_rss(), "tensor_bytes": 2 * n * n + 3 * n * n,
              "cycles": ctx.schedule.makespan}
    result["schedule"] = [(op.track, op.name, op.start, op.end, op.cycles) for op in ctx.schedule.ops]
    result["c_tiles"] = []
    for t in range(max(tiles, 1)):
        it, ct = divmod(t, n // TC)
        got = tile_of(out, t).to_host(m[f"A % {g.ti}, C % {TC}"], ctx.pdma).numpy(axes="A C")
        want = reference(x, y, slice(it * g.ti, (it + 1) * g.ti), slice(ct * TC, (ct + 1) * TC))
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[0]
            raise AssertionError(f"tile {t}: C{tuple(bad)} = {got[tuple(bad)]}, numpy {want[tuple(bad)]}")
        result["c_tiles"].append(got)
    if measure:
        result["numpy_tile_s"] = numpy_tile(x, y, g)
    result["peak_rss"] = peak_rss()
    return result


def describe(r: dict[str, Any]) -> list[str]:
    """Report lines."""
    npt = r["numpy_tile_s"]
    whole = r["tile_s"] * r["all_tiles"]
    return [f"peer matmul_{r['n']} tile {r['ti']}×{TC} first launch: {r['first_s'] * 1e3:.0f} ms "
            f"({r['first_s'] / npt:.1f}× numpy {npt * 1e3:.1f} ms)",
            f"peer matmul_{r['n']} per tile (mean of {r['tiles']}): {r['tile_s'] * 1e3:.0f} ms "
            f"({r['tile_s'] / npt:.1f}× numpy; aim ≤ 10×); whole {r['all_tiles']} tiles ≈ {whole / 60:.1f} min "
            f"(aim ≤ 10 min)",
            f"peer matmul_{r['n']} peak RSS (its own process) of setup + launches "
            f"{r['launch_peak'] / 2**30:.2f} GiB = {r['launch_peak'] / r['tensor_bytes']:.2f}×, with the check "
            f"{r['peak_rss'] / 2**30:.2f} GiB = {r['peak_rss'] / r['tensor_bytes']:.2f}× the tensors' "
            f"{r['tensor_bytes'] / 2**30:.2f} GiB (x, y on the host; lhs, rhs, C in HBM; aim ≤ 2×); "
            f"{r['base_rss'] / 2**20:.0f} MiB of it the imports"]


def measure_here() -> dict[str, Any]:
    """The benchmark's measurements in this process (``N``, ``ROWS``, ``TILES`` from the environment)."""
    n = int(os.environ.get("N", "16384"))
    rows = int(os.environ.get("ROWS", "128"))
    tiles = int(os.environ.get("TILES", "8")) or None
    r = run_kernel(n, rows, tiles)
    return {k: v for k, v in r.items() if k not in ("schedule", "c_tiles")}


def run() -> list[str]:
    return describe(in_child("benchmarks.bench_peer_matmul"))  # a fresh process: the peak is its own


if __name__ == "__main__":
    if "--child" in sys.argv[1:]:
        print(json.dumps(measure_here()))
    else:
        print("\n".join(run()), file=sys.stdout)
