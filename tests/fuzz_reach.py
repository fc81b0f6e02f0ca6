"""Which registered fast paths the differential fuzzer (tests/fuzz_kernels.py) takes: its reach.

``python -m tests.fuzz_reach [SEEDS] [TRIES] [PATH,PATH…]`` prints a table, one row a path: ``taken`` (turning
the path off, alone, changes which lines of visa run in a program the fuzzer draws: the path changed what ran),
``asked`` (its owner read the switch, on, but the programs tried ran the same lines with it off: the path declined
there), or ``never`` (no program asked).  A path the fuzzer never takes is checked against the reference by no
fuzzed program; it needs a generator that reaches it, or a differential test of its own (docs/fastpaths.md).

How: first every program of ``SEEDS`` is run once with each path's switch counted when read on (cheap); then for
each path, up to ``TRIES`` programs that asked it are run traced line by line (``sys.settrace``, visa's files
only), each in a fresh process (no cache filled by another run), with every path on and with that path off (the
environment's ``-name``).  Lines that differ between two fresh runs with every path on are noise (left out).
Leave the tree unchanged while it runs: each fresh process imports the generators as they are when it starts.  No
assertion: a measurement (minutes).  ``VISA_FASTPATHS`` off turns every path off: nothing is then taken.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from tests.fuzz_kernels import program, run
from visa import fastpaths

ROOT = str(Path(fastpaths.__file__).resolve().parent)


@contextmanager
def asked() -> Iterator[Counter[str]]:
    """Count, per path, the reads of its switch that found it on (the owner asked, and may take it)."""
    seen: Counter[str] = Counter()
    prop = fastpaths.FastPath.on

    def on(self: fastpaths.FastPath) -> bool:
        if self._off == 0:
            seen[self.name] += 1
            return True
        return False

    fastpaths.FastPath.on = property(on)  # type: ignore[assignment,method-assign]
    try:
        yield seen
    finally:
        fastpaths.FastPath.on = prop  # type: ignore[method-assign]


def traced(call: Callable[[], Any]) -> set[tuple[str, int]]:
    """The lines of visa's files ``call`` runs (every thread)."""
    lines: set[tuple[str, int]] = set()

    def local(frame: FrameType, event: str, _: Any) -> Any:
        if event == "line":
            lines.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def global_(frame: FrameType, event: str, _: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(ROOT) else None

    threading.settrace(global_)
    sys.settrace(global_)
    try:
        call()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return lines


def cold_lines(seed: int, off: str | None) -> set[tuple[str, int]]:
    """The lines of visa a fresh process runs for the program of ``seed`` (``off``: that path switched off by the
    environment): fresh, so that no cache filled by an earlier run hides a path's work, and both alike."""
    env = dict(os.environ, **{fastpaths.ENV: f"-{off}" if off else "on"})
    out = subprocess.run([sys.executable, "-m", "tests.fuzz_reach", "--lines", str(seed)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return {(f, int(n)) for f, n in json.loads(out)}


def reach(seeds: int, tries: int, workers: int = 2, only: list[str] | None = None) -> dict[str, tuple[str, int, int]]:
    """``{path: (state, programs that asked, first seed that took it or -1)}`` over ``range(seeds)`` (``only``:
    those paths)."""
    names = [n for n in fastpaths.names() if not n.startswith(("test.", "doctest.")) and (not only or n in only)]
    askers: dict[str, list[int]] = {n: [] for n in names}
    for seed in range(seeds):
        with asked() as seen:
            run(program(seed))
        for n in seen:
            if n in askers:
                askers[n].append(seed)
    with ThreadPoolExecutor(workers) as pool:
        used = sorted({s for n in names for s in askers[n][:tries]})
        ons = dict(zip(used, pool.map(lambda s: (cold_lines(s, None), cold_lines(s, None)), used), strict=True))
        jobs = {(n, s): pool.submit(cold_lines, s, n) for n in names for s in askers[n][:tries]}
        out: dict[str, tuple[str, int, int]] = {}
        for n in names:
            state, took = ("never" if not askers[n] else "asked"), -1
            for seed in askers[n][:tries]:
                on, again = ons[seed]
                if (on ^ jobs[n, seed].result()) - (on ^ again):
                    state, took = "taken", seed
                    break
            out[n] = (state, len(askers[n]), took)
            print(f"{n:44} {state:6} asked in {len(askers[n]):4} programs  taken in seed {took}", flush=True)
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["--lines"]:
        steps = program(int(argv[1]))
        print(json.dumps(sorted(traced(lambda: run(steps)))))
        return
    seeds = int(argv[0]) if argv else 200
    tries = int(argv[1]) if len(argv) > 1 else 3
    table = reach(seeds, tries, only=argv[2].split(",") if len(argv) > 2 else None)
    states = Counter(state for state, _, _ in table.values())
    print(f"\n{seeds} programs: {states['taken']} paths taken, {states['asked']} asked but declined, "
          f"{states['never']} never asked (of {len(table)})")
    for state in ("asked", "never"):
        print(f"{state}: " + ", ".join(n for n, (s, _, _) in table.items() if s == state))


if __name__ == "__main__":
    main(sys.argv[1:])
