"""The ``visa`` command line (design API.md §6).

``visa run FILE...`` runs each file's host entry point on the simulator and prints the result check (PASS or
FAIL) and, for every context the run acquired, a per-engine cycle table.  The host entry point is the file's
``main()`` function when it defines one, else the file itself run as a script.  ``visa check FILE...`` runs
mypy ``--strict`` with the visa plugin (design API.md §4) on the files, whether or not the project's mypy
configuration enables the plugin.  ``visa trace FILE -o trace.json`` runs a file and writes the schedule of
every context it acquired as one Chrome trace (one process per device; open it in Perfetto).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import runpy
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from visa.errors import VisaError

__all__ = ["main", "run_file", "mypy_command", "PLUGIN"]

#: The mypy plugin ``visa check`` enables (design API.md §4).
PLUGIN = "visa.mypy"

#: The mypy configuration ``visa check`` uses in a project whose own configuration does not enable the plugin.
_CHECK_CONFIG = f"[mypy]\nstrict = True\nplugins = {PLUGIN}\n"


def _defines_main(source: str) -> bool:
    """Whether a module's source defines a top-level ``main()`` function (its host entry point)."""
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in ast.parse(source).body)


def run_file(path: Path, *, verbose: bool = True) -> bool:
    """Run one file's host entry point (design API.md §6); print its outcome and reports; return whether it
    passed.

    A file that defines ``main()`` is loaded as a module (its ``if __name__ == "__main__"`` block does not run)
    and ``main()`` is called; any other file runs as a script (``__name__ == "__main__"``), as ``python FILE``
    would run it.  A refusal (:class:`~visa.errors.VisaError`) is printed as one line, without a traceback.
    """
    from visa.context import report_all, reset_acquired

    if not path.is_file():
        print(f"ERROR {path}: no such file")
        return False
    reset_acquired()
    start = time.perf_counter()
    try:
        if _defines_main(path.read_text()):
            runpy.run_path(str(path), run_name="__visa_run__")["main"]()
        else:
            runpy.run_path(str(path), run_name="__main__")
    except VisaError as err:
        print(f"FAIL  {path}: {type(err).__name__} [{err.code}]: {err}")
        return False
    except AssertionError as err:
        print(f"FAIL  {path}: result check failed: {err}")
        if verbose:
            traceback.print_exc()
        return False
    except SystemExit as err:  # a script's sys.exit(): 0 or None is success, as for the shell
        if err.code not in (None, 0):
            print(f"FAIL  {path}: exited with status {err.code}")
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
    from visa.context import trace_all

    ok = run_file(Path(args.file), verbose=False)
    trace = trace_all()  # a failed run still writes what it scheduled up to the failure (issue 11)
    with open(args.output, "w") as fh:
        json.dump(trace, fh)
    what = "" if ok else " up to the failure"
    print(f"wrote {args.output}: {len(trace['traceEvents'])} events{what} (open it in https://ui.perfetto.dev)")
    return 0 if ok else 1


def _project_config() -> tuple[str | None, bool]:
    """The mypy configuration file mypy would read here (``None`` if none) and whether it enables the plugin."""
    from mypy.config_parser import parse_config_file
    from mypy.options import Options

    options = Options()
    quiet = io.StringIO()
    parse_config_file(options, lambda: None, None, quiet, quiet)
    enabled = any(p.split(":")[0] == PLUGIN for p in options.plugins)
    return options.config_file, enabled


def mypy_command(files: Sequence[str], config_dir: Path) -> list[str]:
    """The mypy command ``visa check`` runs: ``--strict`` under the project's configuration when that enables
    the visa plugin, else under a configuration written to ``config_dir`` that enables it (design API.md §4)."""
    config, enabled = _project_config()
    if enabled:
        return [sys.executable, "-m", "mypy", "--strict", *files]
    if config is not None:
        print(f"visa check: {config} does not enable the {PLUGIN} plugin; checking with --strict and the plugin "
              f'only (add plugins = ["{PLUGIN}"] to its mypy section to keep its other settings)', file=sys.stderr)
    ini = config_dir / "visa-check.ini"
    ini.write_text(_CHECK_CONFIG)
    return [sys.executable, "-m", "mypy", "--config-file", str(ini), *files]


def _check(args: argparse.Namespace) -> int:
    try:
        import mypy  # noqa: F401 - a development dependency, not a runtime one
    except ImportError:
        print("visa check needs mypy: pip install 'tcp-visa[dev]' (or mypy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="visa-check-") as tmp:
        return subprocess.call(mypy_command(args.files, Path(tmp)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``visa`` console script: ``visa run``, ``visa check``, ``visa trace`` (design API.md
    §6); returns the exit status."""
    parser = argparse.ArgumentParser(prog="visa", description="FuriosaAI TCP Virtual ISA simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run files' host entry points on the simulator")
    run.add_argument("files", nargs="+")
    run.add_argument("-q", "--quiet", action="store_true", help="print only PASS/FAIL lines")
    run.set_defaults(func=_run)
    trace = sub.add_parser("trace", help="run a file and write its schedule as a Chrome trace (Perfetto)")
    trace.add_argument("file")
    trace.add_argument("-o", "--output", default="trace.json")
    trace.set_defaults(func=_trace)
    check = sub.add_parser("check", help="type-check kernels with mypy --strict and the visa plugin")
    check.add_argument("files", nargs="+")
    check.set_defaults(func=_check)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
