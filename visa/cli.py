"""The ``visa`` command line.

``visa run FILE...`` runs each file's host entry point on the simulator and prints the result check (PASS or
FAIL) and, for every context the run acquired, a per-engine cycle table.  The host entry point is the file's
``main()`` function when it defines one, else the file itself run as a script.  ``visa check FILE...`` runs
mypy ``--strict`` with the visa plugin on the files, whether or not the project's mypy
configuration enables the plugin.  ``visa trace FILE -o trace.json`` runs a file and writes the schedule of
every context it acquired as one Chrome trace (one process per device; open it in Perfetto).  ``visa generate
"prompt" --max-tokens N`` runs SmolLM2-135M on the simulator (:mod:`visa.models.command`).
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
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from traceback import FrameSummary
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from visa.errors import VisaError

if TYPE_CHECKING:
    from visa.context import Operation

__all__ = ["main", "run_file", "mypy_command", "explain_assertion", "Outcome", "PLUGIN", "MYPY_FLOOR", "version",
           "examples_dir"]

#: The mypy plugin ``visa check`` enables.
PLUGIN = "visa.mypy"

#: The mypy configuration ``visa check`` uses in a project whose own configuration does not enable the plugin.
_CHECK_CONFIG = f"[mypy]\nstrict = True\nplugins = {PLUGIN}\n"


def _defines_main(source: str) -> bool:
    """Whether a module's source defines a top-level ``main()`` function (its host entry point)."""
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in ast.parse(source).body)


def _console() -> Console:
    """Where ``visa run`` prints: colour and progress only on a terminal (``NO_COLOR`` is honoured), never a
    wrapped line (a CI log keeps each message on one line)."""
    return Console(soft_wrap=True, highlight=False)


def _user_frame(tb: TracebackType | None) -> FrameSummary | None:
    """The last frame of a traceback that is the user's code: outside the visa package and the interpreter's
    own modules (``runpy``), so a refusal points at the kernel statement that asked for it."""
    package = Path(__file__).resolve().parent
    found = None
    for frame in traceback.extract_tb(tb):
        path = Path(frame.filename)
        if frame.filename.startswith("<") or path.name == "runpy.py":
            continue
        try:
            inside = path.resolve().is_relative_to(package)
        except OSError:
            inside = False
        if not inside:
            found = frame
    return found


def _where(frame: FrameSummary | None) -> str:
    if frame is None:
        return ""
    source = (frame.line or "").strip()
    return f"{frame.filename}:{frame.lineno}" + (f": {source}" if source else "")


def _short(value: object, limit: int = 120) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _array_difference(a: object, b: object) -> str | None:
    """What differs between two arrays (how many elements, the first, the largest difference), or ``None``."""
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:  # noqa: BLE001 - not array-like
        return None
    if x.ndim == 0 and y.ndim == 0:
        return None
    if x.shape != y.shape:
        return f"shapes differ: {x.shape} and {y.shape}"
    if x.dtype.kind not in "biufc" or y.dtype.kind not in "biufc":
        return None
    with np.errstate(all="ignore"):
        differ = ~((x == y) | (np.isnan(x.astype(float)) & np.isnan(y.astype(float))))
    count = int(differ.sum())
    if not count:
        return "the arrays are equal (the check's tolerance or its other arguments fail)"
    first = tuple(int(k) for k in np.argwhere(differ)[0])
    with np.errstate(all="ignore"):
        worst = float(np.max(np.abs(x.astype(float) - y.astype(float))))
    return (f"{count} of {x.size} elements differ; first at index {first}: {x[first]!r} and {y[first]!r}; "
            f"largest difference {worst:g}")


def _library_dirs() -> tuple[Path, ...]:
    """The interpreter's own modules and the installed packages (numpy's ``np.testing`` raises from there)."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    return (*sorted(dirs), Path(__file__).resolve().parent)


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The innermost traceback entry in the user's code: a check that fails inside a library
    (``np.testing.assert_allclose``) points at the user's line that called it."""
    libraries = _library_dirs()
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        try:
            path = Path(name).resolve()
            inside = name.startswith("<") or any(path.is_relative_to(d) for d in libraries)
        except OSError:
            inside = True
        if not inside or found is None:
            found = tb
        tb = tb.tb_next
    return found


def explain_assertion(err: AssertionError) -> list[str]:
    """What a failed result check compared: the ``assert`` statement's source and, evaluated again in its
    frame, the values of its operands (for arrays: how many elements differ and where).  The statements
    re-evaluated are the check's own operands, which in a result check are side-effect free."""
    tb = _user_traceback(err.__traceback__)
    if tb is None:
        return []
    frame, line = tb.tb_frame, tb.tb_lineno
    out = [_where(FrameSummary(frame.f_code.co_filename, line, frame.f_code.co_name))]
    try:
        tree = ast.parse(Path(frame.f_code.co_filename).read_text())
    except (OSError, SyntaxError, ValueError):
        return out
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.Assert)
                 and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
    call = next((n.value for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                 and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
    if node is None and call is None:
        return out

    def value(expr: ast.expr) -> object:
        code = compile(ast.Expression(expr), frame.f_code.co_filename, "eval")
        return eval(code, frame.f_globals, dict(frame.f_locals))  # noqa: S307 - the user's own check

    try:
        test = node.test if node is not None else call  # an assert, or a check such as np.testing.assert_allclose
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right = value(test.left), value(test.comparators[0])
            out.append(f"{ast.unparse(test.left)} = {_short(left)}")
            out.append(f"{ast.unparse(test.comparators[0])} = {_short(right)}")
            diff = _array_difference(left, right)
            if diff and not isinstance(left, (int, float, str)):
                out.append(diff)
        elif (isinstance(test, ast.Call) and len(test.args) == 1 and isinstance(test.args[0], ast.Compare)
              and len(test.args[0].ops) == 1):  # np.all(a <= b): where the comparison fails
            cmp = test.args[0]
            left, right = value(cmp.left), value(cmp.comparators[0])
            holds = np.asarray(value(cmp))
            if holds.ndim and not holds.all():
                first = tuple(int(k) for k in np.argwhere(~holds)[0])
                a = np.broadcast_to(np.asarray(left), holds.shape)[first]
                b = np.broadcast_to(np.asarray(right), holds.shape)[first]
                out.append(f"{int((~holds).sum())} of {holds.size} elements fail {ast.unparse(cmp)}; first at index "
                           f"{first}: {ast.unparse(cmp.left)} = {a!r}, {ast.unparse(cmp.comparators[0])} = {b!r}")
        elif isinstance(test, ast.Call) and len(test.args) >= 2:
            a, b = value(test.args[0]), value(test.args[1])
            out.append(_array_difference(a, b) or f"{ast.unparse(test.args[0])} = {_short(a)}; "
                                                 f"{ast.unparse(test.args[1])} = {_short(b)}")
    except Exception as exc:  # noqa: BLE001 - an explanation must never hide the failure itself
        out.append(f"(its operands could not be evaluated again: {type(exc).__name__})")
    return out


@dataclass
class Outcome:
    """What running one file gave: passed, failed, or interrupted (Ctrl-C); its wall time."""

    path: Path
    status: str
    seconds: float = 0.0
    operations: int = 0
    cycles: int = 0


class _Progress:
    """A live line while a run simulates (a spinner, a pulsing bar, the operations and cycles so far, the last
    operation, the time); shown only on a terminal, and only once a run takes longer than a moment.  A timer
    shows it, so a first operation that runs for minutes still has its line."""

    def __init__(self, console: Console, path: Path) -> None:
        self.console, self.path = console, path
        self.count = 0
        self.cycles = 0
        self.last = "starting"
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.stopped = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(_PROGRESS_AFTER, self._show)
        self.timer.daemon = True
        self.timer.start()

    def _text(self) -> str:
        return f"{self.count} ops, {self.cycles} cycles: {self.last}"

    def _show(self) -> None:
        with self.lock:
            if self.stopped:
                return
            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=16),
                                TextColumn("{task.fields[what]}"), TimeElapsedColumn(), console=self.console,
                                transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.path.name, total=None, what=self._text())

    def __call__(self, op: Operation) -> None:
        self.count += 1
        self.cycles = max(self.cycles, op.end)
        self.last = op.name
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, what=self._text())

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.timer.cancel()
            if self.bar is not None:
                self.bar.stop()
                self.bar = None


#: Seconds before ``visa run`` shows progress (shorter runs stay quiet).
_PROGRESS_AFTER = 0.5


def run_file(path: Path, *, verbose: bool = True, console: Console | None = None, critical: bool = False) -> bool:
    """Run one file's host entry point; print its outcome and reports; return whether it
    passed.

    A file that defines ``main()`` is loaded as a module (its ``if __name__ == "__main__"`` block does not run)
    and ``main()`` is called; any other file runs as a script (``__name__ == "__main__"``), as ``python FILE``
    would run it.  A refusal (:class:`~visa.errors.VisaError`) is printed as one line with its code, then the
    file, line and source of the kernel statement that raised it.  A failed result check prints the
    ``assert`` and what it compared.  Ctrl-C stops the run and prints the schedule so far
    (:class:`KeyboardInterrupt` is raised again for the caller to stop).  ``critical`` (``visa run -v``) lists
    the operations of each device's critical path after its report.
    """
    return _run_one(path, verbose, console or _console(), critical).status == "pass"


def _run_one(path: Path, verbose: bool, console: Console, critical: bool = False) -> Outcome:
    from visa.context import holding, reset_acquired

    if not path.is_file():
        console.print(f"[bold red]ERROR[/] {escape(str(path))}: no such file")
        return Outcome(path, "error")
    reset_acquired()
    with holding() as contexts:  # every device the file makes is reported, even one collected inside main()
        outcome = _simulate(path, verbose, console, critical)
        outcome.operations = sum(len(c.schedule.ops) for c in contexts)
        outcome.cycles = sum(c.schedule.makespan for c in contexts)
    return outcome


def _simulate(path: Path, verbose: bool, console: Console, critical: bool = False) -> Outcome:
    from visa.context import OBSERVERS, report_all

    start = time.perf_counter()
    progress = _Progress(console, path) if console.is_terminal else None
    if progress is not None:
        OBSERVERS.append(progress)
    status = "fail"
    try:
        if _defines_main(path.read_text()):
            runpy.run_path(str(path), run_name="__visa_run__")["main"]()
        else:
            runpy.run_path(str(path), run_name="__main__")
        status = "pass"
    except VisaError as err:
        console.print(f"[bold red]FAIL[/]  {escape(str(path))}: {type(err).__name__} [{err.code}]: "
                      f"{escape(err.describe())}")
        where = _where(_user_frame(err.__traceback__))
        if where:
            console.print(f"      at {escape(where)}")
        console.print(f"      (visa explain {err.code}: the rule and the fix)", style="dim")
    except AssertionError as err:
        console.print(f"[bold red]FAIL[/]  {escape(str(path))}: result check failed"
                      + (f": {escape(str(err))}" if str(err) else ""))
        for k, line in enumerate(explain_assertion(err)):
            console.print(f"      {'at ' if k == 0 else ''}{escape(line)}")
    except SystemExit as err:  # a script's sys.exit(): 0 or None is success, as for the shell
        if err.code in (None, 0):
            status = "pass"
        else:
            console.print(f"[bold red]FAIL[/]  {escape(str(path))}: exited with status {err.code}")
    except KeyboardInterrupt:
        if progress is not None:
            progress.stop()
        elapsed = time.perf_counter() - start
        console.print(f"[bold yellow]STOP[/]  {escape(str(path))}: interrupted after {elapsed:.2f} s; "
                      "the schedule so far:")
        text = report_all(operations=True)
        console.out(str(text) if text else "  (no operation was scheduled)", highlight=False)
        raise
    except Exception:  # noqa: BLE001 - a crash in an example is reported, not hidden
        console.print(f"[bold red]ERROR[/] {escape(str(path))}:")
        console.out(traceback.format_exc().rstrip(), highlight=False)
        status = "error"
    finally:
        if progress is not None:
            progress.stop()
            OBSERVERS.remove(progress)
    elapsed = time.perf_counter() - start
    if status == "pass":
        console.print(f"[bold green]PASS[/]  {escape(str(path))}  ({elapsed:.2f} s wall)")
        if verbose:
            text = report_all(critical=critical)
            if text:
                console.out(str(text), highlight=False)
    return Outcome(path, status, elapsed)


def _fastpaths_table() -> str:
    """The registered fast paths, whether each is on now (``VISA_FASTPATHS``), and what it does (API.md §8)."""
    import visa.engines  # noqa: F401  (every owner registers its paths at import: the engines and the memories)
    from visa import fastpaths

    rows = fastpaths.describe()
    width = max((len(n) for n, _, _ in rows), default=0)
    lines = [f"{name:<{width}}  {'on ' if on else 'off'}  {doc}" for name, on, doc in rows]
    return "\n".join([f"{len(rows)} fast paths ({fastpaths.ENV}=off runs every one on the reference path):", *lines])


def _run(args: argparse.Namespace) -> int:
    if args.fastpaths:
        print(_fastpaths_table())
        if not args.files:
            return 0
    if not args.files:
        print("visa run: name the files to run (or --fastpaths)", file=sys.stderr)
        return 2
    console = _console()
    outcomes: list[Outcome] = []
    start = time.perf_counter()
    try:
        for name in args.files:
            outcomes.append(_run_one(Path(name), not args.quiet, console, args.verbose))
    except KeyboardInterrupt:
        console.print(f"[bold yellow]interrupted[/]: {len(outcomes)} of {len(args.files)} files finished")
        return 130
    passed = sum(o.status == "pass" for o in outcomes)
    failed = len(outcomes) - passed
    if len(outcomes) > 1:
        colour = "green" if not failed else "red"
        console.print(f"[bold {colour}]{passed} passed, {failed} failed[/] in {time.perf_counter() - start:.1f} s: "
                      f"{sum(o.operations for o in outcomes)} operations, "
                      f"{sum(o.cycles for o in outcomes)} cycles simulated")
        for o in outcomes:
            if o.status != "pass":
                console.print(f"  [red]{o.status.upper()}[/] {escape(str(o.path))}")
    return 0 if not failed else 1


def _explain(args: argparse.Namespace) -> int:
    from visa.catalogue import explain

    text = explain(args.code)
    if text is None:
        print(f"visa explain: no diagnostic {args.code} (docs/errors.md lists them)", file=sys.stderr)
        return 2
    print(text)
    return 0


def examples_dir() -> Path | None:
    """The bundled examples: ``visa/examples`` in an installed wheel, ``examples/`` beside the package in a
    checkout (an editable install); ``None`` when neither exists."""
    package = Path(__file__).resolve().parent
    for where in (package / "examples", package.parent / "examples"):
        if where.is_dir() and any(where.glob("*.py")):
            return where
    return None


def _examples(args: argparse.Namespace) -> int:
    source = examples_dir()
    if source is None:
        print("visa examples: this installation has no examples", file=sys.stderr)
        return 2
    target = Path(args.directory)
    if target.exists() and not target.is_dir():
        print(f"visa examples: {target} is a file; name a new directory", file=sys.stderr)
        return 2
    try:
        occupied = target.exists() and any(target.iterdir())
    except OSError as err:  # a directory that cannot be read
        print(f"visa examples: cannot read {target}: {err.strerror or err}; name a new directory", file=sys.stderr)
        return 2
    if occupied:
        print(f"visa examples: {target} is not empty; name a new directory", file=sys.stderr)
        return 2
    names = sorted(p.name for p in source.glob("*.py"))
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            (target / name).write_bytes((source / name).read_bytes())
    except OSError as err:  # a parent that is a file, no permission, …: said, not a traceback
        print(f"visa examples: cannot write {target}: {err.strerror or err}; name a directory you can create",
              file=sys.stderr)
        return 2
    print(f"copied {len(names)} examples to {target}: visa run {target}/*.py")
    return 0


def _trace(args: argparse.Namespace) -> int:
    from visa.context import holding, trace_all

    status = 0
    with holding():  # the devices stay alive until their trace is written
        try:
            ok = run_file(Path(args.file), verbose=False)
        except KeyboardInterrupt:  # Ctrl-C: the trace of the operations scheduled so far
            ok, status = False, 130
        trace = trace_all()  # a failed or stopped run still writes what it scheduled up to then (issue 11)
    try:
        with open(args.output, "w") as fh:
            json.dump(trace, fh)
    except OSError as err:  # a folder that does not exist, no permission, …: said, not a traceback
        print(f"visa trace: cannot write {args.output}: {err.strerror or err}; give -o a file in a folder that "
              "exists", file=sys.stderr)
        return 2
    what = "" if ok else " up to the failure" if status == 0 else " up to the interruption"
    print(f"wrote {args.output}: {len(trace['traceEvents'])} events{what} (open it in https://ui.perfetto.dev)")
    return status if status else 0 if ok else 1


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
    the visa plugin, else under a configuration written to ``config_dir`` that enables it."""
    config, enabled = _project_config()
    if enabled:
        return [sys.executable, "-m", "mypy", "--strict", *files]
    if config is not None:
        print(f"visa check: {config} does not enable the {PLUGIN} plugin; checking with --strict and the plugin "
              f'only (add plugins = ["{PLUGIN}"] to its mypy section to keep its other settings)', file=sys.stderr)
    ini = config_dir / "visa-check.ini"
    ini.write_text(_CHECK_CONFIG)
    return [sys.executable, "-m", "mypy", "--config-file", str(ini), *files]


#: The oldest mypy the plugin works with: older releases lack the hooks it needs, and report "could not check"
#: notes instead of the layout errors (measured: 1.15 misses them, 1.16 passes the plugin's tests).
MYPY_FLOOR = (1, 16)


def version() -> str:
    """The installed version of visa (the ``tcp-visa`` distribution)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tcp-visa")
    except PackageNotFoundError:  # run from a source tree without installing
        return "unknown (not installed)"


def _mypy_version() -> tuple[int, ...] | None:
    """The importable mypy's version, or ``None`` when mypy is not installed."""
    try:
        from mypy.version import __version__
    except ImportError:
        return None
    return tuple(int(p) for p in __version__.split("+")[0].split(".")[:2] if p.isdigit())


def _check(args: argparse.Namespace) -> int:
    found = _mypy_version()
    floor = ".".join(map(str, MYPY_FLOOR))
    if found is None:
        print(f"visa check needs mypy >= {floor}: pip install 'tcp-visa[check]'", file=sys.stderr)
        return 2
    if found < MYPY_FLOOR:
        print(f"visa check needs mypy >= {floor} (found {'.'.join(map(str, found))}; an older mypy lacks the "
              f"hooks the plugin uses and would miss layout errors): pip install 'tcp-visa[check]'", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="visa-check-") as tmp:
        return subprocess.call(mypy_command(args.files, Path(tmp)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``visa`` console script: ``visa run``, ``visa check``, ``visa trace``, ``visa explain``,
    ``visa examples``, ``visa generate`` (design API.md §8); returns the exit status."""
    parser = argparse.ArgumentParser(prog="visa", description="FuriosaAI TCP Virtual ISA simulator")
    parser.add_argument("--version", action="version", version=f"visa {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run files' host entry points on the simulator")
    run.add_argument("files", nargs="*")
    run.add_argument("-q", "--quiet", action="store_true", help="print only PASS/FAIL lines (and the summary)")
    run.add_argument("--fastpaths", action="store_true",
                     help="list the registered fast paths and whether each is on (VISA_FASTPATHS)")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="also list the operations on each device's critical path (number, track, start, cycles, "
                          "what each waited for, the line that issued it)")
    run.set_defaults(func=_run)
    trace = sub.add_parser("trace", help="run a file and write its schedule as a Chrome trace (Perfetto)")
    trace.add_argument("file")
    trace.add_argument("-o", "--output", default="trace.json")
    trace.set_defaults(func=_trace)
    explain = sub.add_parser("explain", help="what an error code means, the manual's rule and the fix")
    explain.add_argument("code")
    explain.set_defaults(func=_explain)
    examples = sub.add_parser("examples", help="copy the bundled examples into a new directory")
    examples.add_argument("directory", nargs="?", default="visa-examples")
    examples.set_defaults(func=_examples)
    check = sub.add_parser("check", help="type-check kernels with mypy --strict and the visa plugin")
    check.add_argument("files", nargs="+")
    check.set_defaults(func=_check)
    tune = sub.add_parser("tune", help="sweep a kernel's choices in parallel (locally or on a Dask cluster)")
    from visa.tune import command as tune_command

    tune_command.add_arguments(tune)
    tune.set_defaults(func=tune_command.run)
    from visa.models.command import add_parser as add_generate  # visa generate (SmolLM2; tcp-visa[models])

    add_generate(sub)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # the reader closed the pipe (``visa explain V0057 | head``): no traceback for that
        # Python flushes standard output again at exit: point it at the null device, so that flush finds no pipe
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
