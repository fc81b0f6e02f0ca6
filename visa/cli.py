"""The ``visa`` command line (design API.md §6).

``visa run FILE...`` runs each file's host entry point (its ``main()`` function) on the simulator and prints
the result check and, for every context the run acquired, a per-engine cycle table.  ``visa check FILE...``
runs mypy with the visa plugin on the files.
"""

from __future__ import annotations

import argparse
import runpy
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from visa.errors import VisaError

__all__ = ["main", "run_file"]


def run_file(path: Path, *, verbose: bool = True) -> bool:
    """Run one file's ``main()``; print its outcome and reports; return whether it passed."""
    from visa.context import report_all, reset_acquired

    reset_acquired()
    start = time.perf_counter()
    try:
        namespace = runpy.run_path(str(path), run_name="__visa_run__")
        entry = namespace.get("main")
        if not callable(entry):
            print(f"SKIP  {path}: no main() host entry point")
            return True
        entry()
    except VisaError as err:
        print(f"FAIL  {path}: {type(err).__name__} [{err.code}]: {err}")
        return False
    except AssertionError as err:
        print(f"FAIL  {path}: result check failed: {err}")
        if verbose:
            traceback.print_exc()
        return False
    except Exception:  # noqa: BLE001 - a crash in an example is reported, not hidden
        print(f"ERROR {path}:")
        traceback.print_exc()
        return False
    elapsed = time.perf_counter() - start
    print(f"PASS  {path}  ({elapsed:.2f} s wall)")
    if verbose:
        text = report_all()
        if text:
            print(text)
    return True


def _run(args: argparse.Namespace) -> int:
    ok = True
    for name in args.files:
        ok &= run_file(Path(name), verbose=not args.quiet)
    return 0 if ok else 1


def _trace(args: argparse.Namespace) -> int:
    import json

    from visa.context import acquired_contexts

    if not run_file(Path(args.file), verbose=False):
        return 1
    events: list[object] = []
    for pid, ctx in enumerate(acquired_contexts()):
        for ev in ctx.trace()["traceEvents"]:
            events.append({**ev, "pid": pid})
        name = f"device {pid} ({ctx.hw.name})"
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
    with open(args.output, "w") as fh:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, fh)
    print(f"wrote {args.output}: {len(events)} events (open it in https://ui.perfetto.dev)")
    return 0


def _check(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "mypy", "--strict", *args.files]
    return subprocess.call(cmd)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``visa`` console script."""
    parser = argparse.ArgumentParser(prog="visa", description="FuriosaAI TCP Virtual ISA simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run examples' host entry points on the simulator")
    run.add_argument("files", nargs="+")
    run.add_argument("-q", "--quiet", action="store_true", help="print only PASS/FAIL lines")
    run.set_defaults(func=_run)
    trace = sub.add_parser("trace", help="run a file and write its schedule as a Chrome trace (Perfetto)")
    trace.add_argument("file")
    trace.add_argument("-o", "--output", default="trace.json")
    trace.set_defaults(func=_trace)
    check = sub.add_parser("check", help="type-check kernels with mypy and the visa plugin")
    check.add_argument("files", nargs="+")
    check.set_defaults(func=_check)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
