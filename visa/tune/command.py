"""``visa tune FILE:FUNCTION --grid name=v1,v2 …``: a sweep from the command line.

A live progress bar on a terminal, the table at the end, the best point, and beside FILE the rows as CSV and
the plot as PNG (``FILE-FUNCTION.tune.csv`` / ``.png``; ``--out PREFIX`` to put them elsewhere).  Values are read
as Python literals where they are one (``512``, ``true``/``false``, ``none``, ``0.5``), else kept as text.

>>> parse_grid(["k_tile=256,512", "double_buffer=true,false", "mode=ring"])
{'k_tile': [256, 512], 'double_buffer': [True, False], 'mode': ['ring']}
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from visa.errors import VisaError
from visa.tune.worker import _script_module
from visa.validate import option_int

__all__ = ["add_arguments", "run", "parse_grid", "load"]

_WORDS = {"true": True, "false": False, "none": None}


def _value(text: str) -> Any:
    word = _WORDS.get(text.strip().lower(), ...)
    if word is not ...:
        return word
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["name=v1,v2", …]`` → ``{"name": [v1, v2], …}`` (a name given twice adds its values)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise VisaError(f"--grid {item!r} is not name=value,value", call="visa tune",
                            fix="write --grid k_tile=256,512")
        grid.setdefault(name.strip(), []).extend(_value(v) for v in values.split(","))
    return grid


def load(spec: str) -> tuple[Callable[..., Any], Path, str]:
    """``FILE:FUNCTION`` → the function (its file compiled as a module, not run as ``__main__``), the file and
    the function's name."""
    file, sep, name = spec.rpartition(":")
    if not sep or not file or not name:
        raise VisaError(f"{spec!r} is not FILE:FUNCTION", call="visa tune", fix="write kernel.py:point")
    path = Path(file)
    if not path.is_file():
        raise VisaError(f"{file}: no such file", call="visa tune", fix="give the path of a Python file")
    module = _script_module(path.read_text(), str(path.resolve()))
    fn = getattr(module, name, None)
    if not callable(fn):
        raise VisaError(f"{file} defines no function {name}", call="visa tune",
                        fix="name a module-level function of the file")
    return fn, path, name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``visa tune`` options."""
    parser.add_argument("target", metavar="FILE:FUNCTION", help="the function that runs one point")
    parser.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2",
                        help="a parameter and the values to try (repeat for each parameter)")
    parser.add_argument("--workers", type=option_int(1), default=None,
                        help="local worker processes, at least 1 (default: the cores)")
    parser.add_argument("--scheduler", default=None, metavar="ADDR",
                        help="a Dask scheduler's address (tcp://host:8786): run the points on its cluster")
    parser.add_argument("--samples", type=option_int(1), default=None,
                        help="run this many points (at least 1) drawn from the grid")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --samples")
    parser.add_argument("--threads", type=option_int(1), default=None, help="BLAS threads per point, at least 1")
    parser.add_argument("--no-cache", action="store_true", help="run every point again (and store nothing)")
    parser.add_argument("--out", default=None, metavar="PREFIX", help="where the CSV and PNG go (default: beside FILE)")


def run(args: argparse.Namespace) -> int:
    """``visa tune``: run the sweep and write its table, CSV and plot; 0 when some point ran, else 1."""
    from rich.console import Console
    from rich.markup import escape

    from visa.tune import sweep

    console = Console(soft_wrap=True, highlight=False)
    if not console.is_terminal:  # a log or a pipe: the whole table, not cells wrapped to 80 columns
        console.width = 160
    try:
        fn, path, name = load(args.target)
        space = parse_grid(args.grid)
        if not space:
            raise VisaError("no --grid given", call="visa tune", fix="add --grid name=v1,v2 for each parameter")
    except VisaError as err:
        console.print(f"[red]visa tune[/]: {err}")
        return 2
    start = time.perf_counter()
    try:
        result = sweep(fn, space, workers=args.workers, dask=args.scheduler, samples=args.samples, seed=args.seed,
                       threads=args.threads, cache=not args.no_cache, progress=console.is_terminal)
    except VisaError as err:  # the sweep's own refusals (a lambda as FUNCTION, …): said, not a traceback
        console.print(f"[red]visa tune[/]: {escape(str(err))}")
        return 2
    wall = time.perf_counter() - start
    console.print(result.table())
    prefix = Path(args.out) if args.out else path.with_name(f"{path.stem}-{name}")
    csv_path = result.to_csv(f"{prefix}.tune.csv")
    best = result.best
    cached = sum(r.cached for r in result.rows)
    console.print(f"{len(result.rows)} points in {wall:.1f} s ({cached} from the cache), "
                  f"{len(result.errors)} failed; rows in {csv_path}")
    try:
        fig = result.plot()
    except ImportError:
        console.print("(no plot: pip install 'tcp-visa[plot]' for matplotlib)")
    else:
        fig.savefig(f"{prefix}.tune.png", dpi=110)
        console.print(f"plot in {prefix}.tune.png")
    if best is None:
        console.print("[red]every point failed[/]")
        return 1
    console.print(f"[bold green]best[/]: {best.params}: {best.cycles:,} cycles"
                  + (f", {best.utilisation:.1%} of the roofline bound" if best.utilisation is not None else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - python -m visa.tune.command
    parser = argparse.ArgumentParser(prog="visa tune")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
