"""Run every benchmark module (``python -m benchmarks`` or ``make bench``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    wanted = set(sys.argv[1:])
    for name in names:
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        for line in module.run():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
