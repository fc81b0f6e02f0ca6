"""The GEMM "Hello, TCP!" example (examples/gemm.py, manual L466–525) against numpy's float32 matmul (issue 5).

The example runs the whole kernel on the simulator — host → HBM → DM by DMA, the TRF load in the sub context,
fetch → collect → align → contract → accumulate → cast → commit in the main context, and back to the host — for
A[512 × 1024] · B[1024 × 512] in bf16.  numpy computes the same logical product of the same bf16 values in float32
(``A.astype(float32) @ B.astype(float32)``), in the same run.

Two ratios against the aims: the example's simulated part (its ``run()``: a context, A and B to HBM, the launch, C
back to the host), and the Contraction Engine alone (the time spent in ``align``, ``contract`` and ``accumulate``,
which includes reading the TRF and the fused products).  numpy's side is handed its two arrays and returns its
product, so what ``main()`` does besides, making the random inputs (``HostTensor.rand``, ~5 ms) and its check (a
second float32 product of the same shape and two norms, ~5 ms), is outside the first ratio's timer; until issue 24
(h24g) the ratio timed the whole ``main()``, which charged the simulator with both (about 4× of numpy's product).
The whole ``main()`` is still printed beside it, without an aim.  A last line splits the example's time by the
module it is spent in, to say what dominates.

Each run is timed after a garbage collection, which frees the previous run's context (contexts are held only
inside ``visa.context.holding()``); each run still maps fresh DM pages for its own images, and its DMAs are
mostly those page faults (see below).

What dominates (measured on the 2-core VM, issue 15).  After the fetch's broadcast became structure (``J / 8 % 4``
read once and passed on as a repeating Time digit, docs/manual-notes.md "Broadcast streams as views"), the
written-mask went by page, all-known streams lost their per-element mask and the TRF window copied one period
of its repeated slices ("All-known streams"): the whole run went from 170–225 ms (80–95×) to 73–83 ms (35–38×),
the Contraction Engine from 28–30 ms (12–14×) to 7–9 ms (3.5–4.1×).  A third of those 73–83 ms was the first touch
of the 48 MiB of fresh DM and TRF pages the layout fills every run (A over the 16 column blocks, B over the 16 row
blocks, B again in the TRF); since the device images reuse the memory of the previous context's
(docs/manual-notes.md "Device images reuse memory"), a run after the first writes into pages the process already
maps, cleared where the last run wrote.  About 3 ms of the Contraction Engine was comparing the 16 MB TRF window
and the 16 MB of activations to find the slices that share them; the DMA that filled those slices from one source
now says so ("Replicas known from how bytes were written").  Then 36 ms (17.6×).  Since the writes a device
image owes are left owed until read (docs/manual-notes.md "Writes owed instead of made", "Stream rows left
copies": the broadcast DMAs write one slice per class, the zeros of reused memory and of the padded cluster are not
written again, B's fetch and TRF load read and write one slice per class) and the engine gives the BLAS thread
count back (the example's own check ran single-threaded after the first batch): 19.9–21.9 ms, 9.4–10.6× (README
"Measured").
Then (issue 24, i24g) the Contraction Engine was bound by the weights' layout and its compiled loop: the TRF
window holds one period of the 16 distinct weight blocks, but the float layout copied them back out to all 256
slices and converted each copy to f32, and the 32-product loop transposed every step's weights at every slice.
Now the distinct blocks are laid out once (``contraction.float-weight-period``), already as the loop's ``j × n``
rows: the engine's CPU time on one thread (BLAS and the workers limited to one) 20.7–23.2 → 14.1–15.0 ms, of which
the loop is 9.4 ms for its 2^28 products (numpy's f32 product of the same operands: 5.6 ms).
Then (issue 24, i24e) the profile of a run, in CPU time on the 2-core VM: the compiled loop is 7.3–7.9 ms of one
thread for the 2^28 products (numpy's f32 product of the same shape on one thread: 4.4 ms), the engine's own
Python and layout on the calling thread 4–5 ms (the TRF window read 1.5 ms, the weights' f32 layout 0.5 ms, the
hand-off to the workers 0.9 ms), and outside the engine, on one thread: DMA 8–12 ms, the two random tensors 5 ms,
the check 4–5 ms (its product on numpy's two threads).  The loop's 2^28 products are split over the two workers,
but each run followed a numpy product on two OpenBLAS threads (numpy's own timing, then the previous run's
check), whose second thread spins for ~0.1 s before it sleeps (:func:`settle`): the engine's two workers and that
thread had two cores between them (the engine's wall time about its CPU time).  Each timed run now starts once
that thread sleeps.  And the loop multiplies each activation row by 8 weight blocks side by side (256 columns, one
vectorised column loop, not 8 of 32 columns each after broadcasting the row): ``contraction.float-tree32-wide``, the
same tree and order, the loop's CPU time in a run 8.0 → 6.2 ms.
Then (issue 24, h24g) the profile of the timed part alone (``run()``, CPU time of the calling thread, 2-core VM at
load 3–7, minimum of 15 runs): 13.3 ms on the calling thread — DMA 4.5 (host → HBM 1.7 for the two inputs, HBM →
DM 1.4, DM → HBM 0.7, HBM → host 0.5; their schedule records ~0.3 ms in all), collect + to_trf 2.0, the Contraction
Engine 1.9 (the TRF window 0.6, the weights' f32 layout 0.6, the hand-off 0.2), fetch 1.8, commit 1.1, cast 0.9
(half of its stream is the padded cluster, converted as zeros), launch and handles ~1 — and the compiled loop's
6–7 ms on the two workers (~3.5 ms of wall time on two free cores), the process 19.8 ms of CPU in all.  No stage
dominates; each engine's Python is about a millisecond.
Then (issue 24, h24g2) the loop's multiplications: at 32 multiplications and 31 additions per output it was bound by
them (and by its weight loads alike) at 5.5–6.0 ms of one thread.  On a CPU with AVX512_BF16 the tree's first depth
of the bf16 operands is now one ``VDPBF16PS`` per 16 columns and 32 products (``contraction.float-tree32-bf16dp``:
the pair sums of exact products rounded once, the same bits while the operands' exponents keep them normal): the
loop 6.0 → 2.1–2.6 ms on one thread; with the groups' pieces sized by their activations alone (4 pieces, not 8),
the engine in a run, interleaved with the tree before (minimum of 15 runs, 2-core VM at load 3.5): CPU time
8.2–8.5 → 4.4–5.2 ms, wall time 8.2–8.6 → 4.4–5.2 ms (its two workers seldom ran at once at that load).
The last line of the report writes the bytes the layout requires with numpy alone, into fresh pages
(what a first run pays) and into pages already mapped (what a repeat pays).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import numpy as np

from benchmarks.common import Timer, best_of, breakdown, line, load_example, report

STAGES = (
    ("DMA", "visa.tensors.moves", ("host_to_hbm", "hbm_to_dm", "dm_to_hbm", "hbm_to_host")),
    ("fetch", "visa.stream.fetch", ("fetch",)),
    ("collect + to_trf", "visa.stream.collect", ("collect", "to_trf")),
    ("contraction", "visa.stream.contraction", ("align", "contract", "accumulate")),
    ("cast", "visa.stream.cast", ("cast",)),
    ("commit", "visa.stream.commit", ("commit",)),
)


def run() -> list[str]:
    from visa.stream import contraction

    module = load_example("gemm")
    rng = np.random.default_rng(42)
    a = rng.uniform(-2, 2, size=(512, 1024)).astype(np.float32)
    b = rng.uniform(-2, 2, size=(1024, 512)).astype(np.float32)
    import ml_dtypes

    a = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    b = b.astype(ml_dtypes.bfloat16).astype(np.float32)
    theirs = best_of(lambda: a @ b, repeat=20)
    module.main()  # warm-up (imports, caches)
    whole, simulated, engine = [], [], []
    for _ in range(3):
        gc.collect()  # the previous run's context (see the module docstring)
        settle()  # the previous run's BLAS threads (see settle)
        start = time.perf_counter()
        module.main()
        whole.append(time.perf_counter() - start)
    from visa import Context, HostTensor, bf16
    from visa.mapping.axes import AXES_ATTR

    m = getattr(module, AXES_ATTR).m  # (the example's axes)
    for _ in range(5):
        rng = np.random.default_rng(42)  # main's inputs, made outside the timer as numpy's side's are
        a_host, b_host = HostTensor.rand(bf16, m["I, K"], rng), HostTensor.rand(bf16, m["K, J"], rng)
        gc.collect()
        settle()
        with Timer(contraction, ("align", "contract", "accumulate")) as timer:
            start = time.perf_counter()
            ctx = Context.acquire()
            out = module.run(ctx, a_host, b_host)
            simulated.append(time.perf_counter() - start)
        engine.append(timer.total)
        module.check(a_host, b_host, out)  # (outside the timer: numpy's side checks nothing)
        del ctx, out
    # numpy's product again after the runs: its two OpenBLAS threads stall when another process takes a core
    # (a product 15× slower for as long as it lasts), which would flatter the ratios; the fastest of the two and of
    # numpy's product on one thread counts (_one_thread)
    theirs = min(theirs, best_of(lambda: a @ b, repeat=20), _one_thread(lambda: a @ b))
    lines = [
        report("GEMM example (512×1024 · 1024×512 bf16), to_hbm → to_host", min(simulated), theirs, 10),
        line("  its whole main(): + random inputs, + its check", min(whole), theirs, width=48),
        report("GEMM example, Contraction Engine only", min(engine), theirs, 3),
        breakdown(module.main, STAGES, "host side and the check", "  where the example's time goes",
                  before=settle),
        _floor(theirs),
    ]
    return lines


def _one_thread(fn: Callable[[], object]) -> float:
    """:func:`best_of` ``fn`` with numpy's BLAS limited to one thread (``threadpoolctl``; inf without it): what
    numpy's product takes when a loaded machine stalls its two threads for every one of the two-thread timings (on
    the 2-core VM at load 6, every one of 40 two-thread products took 79–90 ms, one thread 4.4 ms, and the ratios
    came out below 1×).  Taken with the two-thread times' minimum, it can only lower numpy's time (on an idle machine
    the two-thread product is the faster, ~2.1 ms against ~4.4 ms)."""
    from visa.engines.contraction.blas import _controller

    ctl = _controller()
    if ctl is None:
        return float("inf")
    with ctl.limit(limits=1, user_api="blas"):
        return best_of(fn, repeat=20)


#: Longest wait of :func:`settle` (seconds), and the slice of it it watches the process's CPU time over.
SETTLE_LIMIT, SETTLE_STEP = 1.0, 0.02


def settle() -> None:
    """Wait until no thread of this process is running (at most :data:`SETTLE_LIMIT`), before a timed run.

    After a threaded product numpy's OpenBLAS keeps its worker thread spinning for about 2^28 cycles (``OPENBLAS_
    THREAD_TIMEOUT``, ~0.1 s) before it sleeps: measured on the 2-core VM, 30–40 ms of CPU in the 100 ms after one
    512 × 1024 · 1024 × 512 product.  Each run ends with the example's own check (one such product) and the first
    follows numpy's timing, so without this wait the next run's Contraction Engine shares the two cores between its
    two workers and that spinning thread.  Measured on the (loaded) VM, a numpy product just before the engine's
    float loop: the process spent 9.5 ms of CPU in threads other than the caller and the loop (1.8 ms when
    settled), the loop's 8.3 ms unchanged, and the engine's fastest wall time went 10.2 → 12.9 ms (median 25 → 39
    ms); the idle make bench's 4.5× (~9.5 ms) is about the engine's CPU time, where two free cores take about half
    of its 7.8 ms loop off.  A run of the example
    started on its own (no numpy product just before) never pays it; the wait is outside the timed region, as the
    garbage collection before it is."""
    deadline = time.perf_counter() + SETTLE_LIMIT
    while time.perf_counter() < deadline:
        cpu = time.process_time()
        time.sleep(SETTLE_STEP)
        if time.process_time() - cpu < SETTLE_STEP / 10:  # (nobody ran: the spinning has stopped)
            return


#: Bytes the example's layout puts in device memories every run: A's and B's 32 × 1024 bf16 tiles in each of
#: the 256 slices' DM (each row of A is in the 16 slices of its I / 32, each column of B in the 16 of its J / 32),
#: and B's tile again in every slice's TRF (manual L483–485, L497–503).
LAYOUT_BYTES = 256 * (2 * 32 * 1024 * 2) + 256 * 32 * 1024 * 2


def _floor(theirs: float) -> str:
    """What numpy alone takes to write the bytes the layout requires, into fresh memory (a process's first
    context maps fresh pages) and into memory already mapped (a later context reuses its predecessor's pages,
    docs/manual-notes.md "Device images reuse memory")."""
    import mmap

    src = np.ones(1 << 20, np.uint8)

    def write() -> None:
        mem = mmap.mmap(-1, LAYOUT_BYTES)
        view = np.frombuffer(mem, np.uint8).reshape(-1, 1 << 20)
        view[...] = src
        del view
        mem.close()

    kept = np.zeros((LAYOUT_BYTES >> 20, 1 << 20), np.uint8)

    def rewrite() -> None:
        kept[...] = src

    fresh, mapped = best_of(write, repeat=5), best_of(rewrite, repeat=5)
    return (f"  the {LAYOUT_BYTES >> 20} MiB the layout puts in DM and TRF, written by numpy alone: into fresh pages "
            f"{fresh * 1e3:.1f} ms ({fresh / theirs:.1f}× its product), into pages already mapped "
            f"{mapped * 1e3:.1f} ms ({mapped / theirs:.1f}×)")


if __name__ == "__main__":
    print("\n".join(run()))
