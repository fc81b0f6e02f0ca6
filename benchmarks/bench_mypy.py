"""mypy --strict over examples/, cold and warm, with and without the visa.mypy plugin (issue 8).

A cold run starts from an empty cache (it analyses visa, numpy's stubs and the standard library too); a warm
run reuses the cache of the previous run, so only what changed is checked again — here nothing, which is the
floor of an edit-check loop.  The plugin's share is the extra time of the runs with the plugin (its import of
visa and numpy, and its hooks).  Without the plugin the examples' ``m["..."]`` annotations are errors; the
time still measures the same analysis.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# mypy through its API (mypy's command line leaves with os._exit), then the hooks' total from the plugin
_RUN = ("import sys, mypy.api\nmypy.api.run(sys.argv[1:])\nm = sys.modules.get('visa.mypy')\n"
        "print('visa.mypy hooks: %.6f s' % (m.HOOK_SECONDS[0] if m else 0.0), file=sys.stderr)")
HOOKS = re.compile(r"visa\.mypy hooks: ([0-9.]+) s")


def _mypy(config: Path, cache: Path, targets: list[str]) -> tuple[float, float]:
    """(wall seconds, seconds inside the plugin's hooks) of one mypy run."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _RUN, "--config-file", str(config), "--cache-dir", str(cache),
                           "--no-error-summary", *targets], cwd=ROOT, capture_output=True, check=False, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    found = HOOKS.search(done.stderr)
    return wall, float(found.group(1)) if found else 0.0


def measure(plugin: bool, targets: list[str], repeat: int = 3) -> tuple[tuple[float, float], tuple[float, float]]:
    """((cold wall, cold hooks), (warm wall, warm hooks)) in seconds, the fastest of ``repeat``."""
    cold, warm = (float("inf"), 0.0), (float("inf"), 0.0)
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "mypy.ini"
            config.write_text("[mypy]\nstrict = True\npython_version = 3.11\n"
                              f"mypy_path = {ROOT / 'stubs'}{os.pathsep}{ROOT}\n"
                              + ("plugins = visa.mypy\n" if plugin else ""))
            cache = Path(tmp) / "cache"
            cold = min(cold, _mypy(config, cache, targets))
            warm = min(warm, _mypy(config, cache, targets))
    return cold, warm


def _import_seconds() -> float:
    """What loading the plugin costs (importing visa, numpy, ml_dtypes), over a bare interpreter."""
    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return time.perf_counter() - start

    return min(once("import visa.mypy") for _ in range(3)) - min(once("pass") for _ in range(3))


def run() -> list[str]:
    targets = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "examples").glob("*.py"))]
    targets += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests/typing/corpus").glob("ok_*.py"))]
    with_cold, with_warm = measure(True, targets)
    without_cold, without_warm = measure(False, targets)
    load = _import_seconds()
    lines = [f"mypy --strict over {len(targets)} kernels (examples/ and tests/typing/corpus/ok_*); loading the "
             f"plugin (visa, numpy) costs {load:.2f} s per run"]
    for name, (w, hooks), (wo, _) in (("cold", with_cold, without_cold), ("warm", with_warm, without_warm)):
        share = (hooks + load) / w
        lines.append(f"  {name}: with the plugin {w:6.2f} s (hooks {hooks * 1e3:6.1f} ms), without {wo:6.2f} s; "
                     f"the plugin's share (load + hooks) {share:5.1%}")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
