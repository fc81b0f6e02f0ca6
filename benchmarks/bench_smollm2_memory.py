"""SmolLM2-135M's resident memory by phase (issue 25's aim: peak ≤ 2 × the weights' bytes + the KV cache).

Run in a fresh process, as ``python -m benchmarks smollm2_memory`` (or ``python -m
benchmarks.bench_smollm2_memory STEPS``; not part of ``make bench``: a load, a prefill and the decode steps take a
few minutes of CPU).  After each phase it prints the process's
resident set (``VmRSS``) and the highest it reached during the phase (``VmHWM``, reset between phases through
``/proc/self/clear_refs``; Linux only), in MB of 10^6 bytes, and the aim from the model's own byte counts.

It reports the peak two ways, as ``bench_gemv4096`` does: the process's raw peak (``VmHWM`` over the whole run)
and the peak over the resident set after the imports — numpy, visa, ``visa.models`` with the models extra
(``gguf``, ``tokenizers``) and what the float contraction loads on its first call (numba, llvmlite and the
compiled loops of ``contraction.float-steps-jit``, ``contraction.float-row-jit`` and
``contraction.float-tree32``, each only when its fast path is on and numba is installed: none with
``VISA_FASTPATHS=off`` or without the ``fast`` extra).  Issue 25's aim is read on the second
(docs/manual-notes.md, issue 25, i25m's second round); the first is printed beside it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path


def _status() -> dict[str, float]:
    """VmRSS and VmHWM in MB (10^6 bytes)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024 / 1e6
    return out


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current VmRSS


def imports() -> str:
    """Import what the baseline holds (module docstring); what it loaded, in words."""
    import gguf  # noqa: F401 (the models extra)
    import numpy  # noqa: F401
    import tokenizers  # noqa: F401

    import visa.models  # noqa: F401
    from visa.engines.contraction import fast_row_jit, fast_steps_jit, fast_tree32

    compiled = (("float-steps-jit", fast_steps_jit.kernel()), ("float-row-jit", fast_row_jit.kernel()),
                ("float-tree32", fast_tree32.kernel(32)))
    loops = [name for name, loop in compiled if loop is not None]
    return (f"numpy, visa, visa.models, gguf, tokenizers, numba with the compiled loops {', '.join(loops)}"
            if loops else "numpy, visa, visa.models, gguf, tokenizers (no compiled float loop: numba absent or off)")


def run(steps: int = 7) -> Iterator[str]:
    """Load, prefill "The capital of France is", then ``steps`` decode steps (8 tokens in all by default, as
    ``make demo``); a line per phase."""
    import numpy as np

    _reset_peak()
    t0 = time.perf_counter()
    peaks: list[float] = []

    def phase(name: str) -> str:
        nonlocal t0
        s = _status()
        peaks.append(s["VmHWM"])
        line = f"{name:<12} RSS {s['VmRSS']:7.1f} MB, peak in the phase {s['VmHWM']:7.1f} MB, " \
               f"{time.perf_counter() - t0:6.1f} s"
        _reset_peak()
        t0 = time.perf_counter()
        return line

    from visa.models import SmolLM2

    loaded = imports()
    yield phase("import")
    base = _status()["VmRSS"]
    model = SmolLM2.load()
    yield phase("load")
    ids = model.tokenizer.encode("The capital of France is")
    token = int(np.argmax(model.prefill(ids, every=False)[-1]))  # as generate: the head of the last token
    yield phase("prefill")
    for i in range(steps):
        token = int(np.argmax(model.run([token], len(ids) + i)["logits"][0]))
        yield phase(f"decode {i + 1}")
    c = model.config
    cache = 2 * 2 * c.blocks * model.w.c.kv_heads * c.head_dim * model.length
    aim = 2 * model.weight_bytes + cache
    peak = max(peaks)
    yield (f"aim 2 × {model.weight_bytes:,} B of weights + {cache:,} B of KV cache = {aim / 1e6:.1f} MB")
    yield f"raw peak (VmHWM of the process) {peak:.1f} MB: {peak / (aim / 1e6):.2f}× the aim"
    yield (f"peak over the imports {peak - base:.1f} MB: {(peak - base) / (aim / 1e6):.2f}× the aim (aim ≤ 1×; the "
           f"imports' resident set {base:.1f} MB: {loaded})")


if __name__ == "__main__":
    for text in run(int(sys.argv[1]) if len(sys.argv) > 1 else 7):
        print(text)
