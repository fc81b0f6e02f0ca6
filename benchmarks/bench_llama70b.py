"""The Llama 3 70B decode layer at full size on one chip (``examples/llama70b_decode_layer.py`` with
``LLAMA70B_FULL=1``; issue 24: "the full-size Llama 70B decode layer, one chip, ≤ 10 s").

D = 8192, 64 query / 8 KV heads of 128, F = 28672, a KV cache of 256 positions: 856M bf16 weights (1.71 GB) in
HBM, streamed through DM in 8192 × 512 tiles, every stage checked against numpy within its derived bound (the
example's own check).  It runs in a fresh process (its peak RSS is its own) and reports the wall time of the
launch — the simulation, the aim — beside the setup (random weights written to HBM) and the check, the simulated
cycles, and the peak RSS against the bytes of the weights: of the setup and launch (the simulation), and with the
check.  The peak is the child's ``VmHWM`` (:func:`benchmarks.common.peak_rss`; its ``ru_maxrss`` would carry the
parent's peak, whatever ran before it in ``python -m benchmarks``).  ``LLAMA70B_BENCH=0`` skips it.
"""

from __future__ import annotations

import json
import os
import sys

AIM_S = 10.0


def measure() -> dict[str, float]:
    """Run the layer at full size in this process; the example's measurements and the weights' bytes."""
    from benchmarks.common import load_example

    ex = load_example("llama70b_decode_layer")
    result = ex.run(ex.FULL)
    return {**result, "weight bytes": 2.0 * ex.FULL.weights}


def run() -> list[str]:
    if os.environ.get("LLAMA70B_BENCH", "1") == "0":
        return ["Llama 3 70B decode layer (full size): skipped (LLAMA70B_BENCH=0)"]
    from benchmarks.common import in_child

    r = in_child("benchmarks.bench_llama70b")
    launch = r["launch s"]
    verdict = "within" if launch <= AIM_S else "OVER"
    sim, peak, weights = r["launch peak MB"] * 2**20, r["peak MB"] * 2**20, r["weight bytes"]
    return [f"Llama 3 70B decode layer, full size, one chip: launch {launch:.1f} s ({verdict} the {AIM_S:g} s aim), "
            f"setup {r['setup s']:.1f} s, check {r['check s']:.1f} s; {int(r['makespan']):,} cycles; peak RSS "
            f"(its own process) of setup + launch {sim / 2**30:.2f} GiB = {sim / weights:.2f}×, with the check "
            f"{peak / 2**30:.2f} GiB = {peak / weights:.2f}× the weights' {weights / 2**30:.2f} GiB (aim ≤ 2×)"]


if __name__ == "__main__":
    if "--child" in sys.argv[1:]:
        print(json.dumps({k: float(v) for k, v in measure().items()}))
    else:
        print("\n".join(run()))
