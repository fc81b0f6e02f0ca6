"""The Llama 3 70B decode layer at full size on one chip (``examples/llama70b_decode_layer.py`` with
``LLAMA70B_FULL=1``; issue 24: "the full-size Llama 70B decode layer, one chip, ≤ 10 s").

D = 8192, 64 query / 8 KV heads of 128, F = 28672, a KV cache of 256 positions: 856M bf16 weights (1.71 GB) in
HBM, streamed through DM in 8192 × 512 tiles, every stage checked against numpy within its derived bound (the
example's own check).  It runs in a fresh process (its peak RSS is its own) and reports the wall time of the
launch — the simulation, the aim — beside the setup (random weights written to HBM) and the check, the simulated
cycles, and the peak RSS against the bytes of the weights.  ``LLAMA70B_BENCH=0`` skips it.
"""

from __future__ import annotations

import json
import os
import subprocess
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
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_llama70b", "--child"], check=True,
                          capture_output=True, text=True)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    launch = r["launch s"]
    verdict = "within" if launch <= AIM_S else "OVER"
    peak, weights = r["peak MB"] * 2**20, r["weight bytes"]
    return [f"Llama 3 70B decode layer, full size, one chip: launch {launch:.1f} s ({verdict} the {AIM_S:g} s aim), "
            f"setup {r['setup s']:.1f} s, check {r['check s']:.1f} s; {int(r['makespan']):,} cycles; peak RSS "
            f"{peak / 2**30:.2f} GiB = {peak / weights:.2f}× the weights' {weights / 2**30:.2f} GiB"]


if __name__ == "__main__":
    if "--child" in sys.argv[1:]:
        print(json.dumps({k: float(v) for k, v in measure().items()}))
    else:
        print("\n".join(run()))
