"""Run every benchmark module (``python -m benchmarks`` or ``make bench``), or the ones named on the command line.

The 16384³ GEMM (``bench_gemm16k``, about four to six minutes) runs only when named: ``make bench16k``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks

#: Benchmarks that run only when named.
LONG = frozenset({"bench_gemm16k", "bench_lm_head", "bench_moe128", "bench_smollm2_memory", "bench_tune"})


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    wanted = set(sys.argv[1:])
    for name in names:
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        if not wanted and name in LONG:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        for line in module.run():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
