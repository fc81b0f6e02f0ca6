"""A sweep's rows and what a kernel writer reads from them: the best point, a table, a plot, a CSV file."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from visa.validate import expect_instance, expect_int

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.table import Table

__all__ = ["Row", "SweepResult"]


@dataclass(frozen=True)
class Row:
    """One point of a sweep: its parameters and what running it gave.

    ``cycles`` are the kernel's simulated cycles (its roofline's, when the function returned a ``KernelReport``),
    ``utilisation`` the roofline's bound ÷ cycles and ``bound`` what bounds it; ``wall`` the seconds the call
    took and ``peak_memory`` the worker's peak resident bytes during it (None where the system cannot tell);
    ``error`` the exception the point raised (its own result check, a refusal), which ends that point only;
    ``cached`` whether the row came from the result cache instead of a run.
    """

    params: dict[str, Any]
    cycles: int | None
    utilisation: float | None = None
    bound: str | None = None
    wall: float = 0.0
    peak_memory: int | None = None
    error: str | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        """Whether the point ran and gave its cycles."""
        return self.error is None and self.cycles is not None

    def stored(self) -> dict[str, Any]:
        """What the result cache keeps of the row."""
        return {"cycles": self.cycles, "utilisation": self.utilisation, "bound": self.bound, "wall": self.wall,
                "peak_memory": self.peak_memory, "error": self.error}


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass
class SweepResult:
    """The rows of a sweep in the order of its points (:func:`visa.tune.sweep`)."""

    rows: list[Row]
    names: list[str] = field(default_factory=list)

    @property
    def best(self) -> Row | None:
        """The point with the fewest cycles (the first of equals, in point order); None when every point
        failed."""
        good = [r for r in self.rows if r.ok]
        return min(good, key=lambda r: r.cycles or 0) if good else None

    @property
    def errors(self) -> list[Row]:
        """The points that raised."""
        return [r for r in self.rows if r.error is not None]

    def speedup(self, default: dict[str, Any]) -> float | None:
        """Cycles of the point ``default`` ÷ the best point's (how much the sweep gained over a default choice);
        None when either is missing."""
        expect_instance(default, Mapping, "default", call="SweepResult.speedup", expected="a point {name: value}")
        best = self.best
        base = next((r for r in self.rows if r.params == default and r.ok), None)
        if best is None or base is None or not best.cycles:
            return None
        return (base.cycles or 0) / best.cycles

    def table(self, *, limit: int | None = None) -> Table:
        """A rich table of the rows, fastest first (the best marked), the failed points last with their errors."""
        from rich.table import Table

        if limit is not None:  # (a str raised slicing's TypeError; -1 dropped the last row)
            expect_int(limit, "limit", call="SweepResult.table", lo=0, fix="pass limit=N rows (N ≥ 0), or None")
        best = self.best
        table = Table(title=f"sweep: {len(self.rows)} points, {len(self.errors)} failed", title_justify="left")
        for name in self.names:
            table.add_column(name)
        for col in ("cycles", "util.", "bound", "wall s", "peak MiB", "error"):
            table.add_column(col, justify="right" if col not in ("bound", "error") else "left")
        ordered = sorted(self.rows, key=lambda r: (not r.ok, r.cycles or 0))
        for row in ordered[:limit]:
            style = "bold green" if row is best else ("red" if row.error else None)
            table.add_row(*(_fmt(row.params.get(n)) for n in self.names),
                          f"{row.cycles:,}" if row.cycles is not None else "—",
                          f"{row.utilisation:.1%}" if row.utilisation is not None else "",
                          row.bound or "", f"{row.wall:.2f}" + (" (cached)" if row.cached else ""),
                          f"{row.peak_memory / 2**20:,.0f}" if row.peak_memory else "",
                          _cut(row.error or ""), style=style)
        return table

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=160, record=True, file=_Null(), color_system=None)
        console.print(self.table())
        return console.export_text().rstrip()

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows (one column per parameter, then the measurements) to ``path``; returns it."""
        expect_instance(path, (str, Path), "path", call="SweepResult.to_csv",
                        expected="a file name (str or pathlib.Path)")
        path = Path(path)
        cols = ["cycles", "utilisation", "bound", "wall_s", "peak_memory_bytes", "error", "cached"]
        with path.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow([*self.names, *cols])
            for r in self.rows:
                out.writerow([*(r.params.get(n) for n in self.names), r.cycles, r.utilisation, r.bound,
                              f"{r.wall:.4f}", r.peak_memory, r.error or "", r.cached])
        return path

    def plot(self) -> Figure:
        """A matplotlib figure: the cycles of every point against each parameter (one panel each), the best
        point marked; failed points are left out.  Needs matplotlib (``pip install 'tcp-visa[plot]'``)."""
        try:
            from matplotlib.figure import Figure
        except ImportError as err:  # pragma: no cover - the extra is missing
            raise ImportError("SweepResult.plot needs matplotlib: pip install 'tcp-visa[plot]'") from err
        names = self.names or ["point"]
        cols = min(3, len(names))
        rows_ = math.ceil(len(names) / cols)
        fig = Figure(figsize=(4.2 * cols, 3.4 * rows_), layout="constrained")
        good = [r for r in self.rows if r.ok]
        best = self.best
        for k, name in enumerate(names):
            ax = fig.add_subplot(rows_, cols, k + 1)
            values = [r.params.get(name) if self.names else i for i, r in enumerate(good)]
            labels = sorted({_fmt(v) for v in values}, key=lambda t: (_num(t) is None, _num(t) or 0, t))
            pos = {t: i for i, t in enumerate(labels)}
            xs = [pos[_fmt(v)] for v in values]
            ax.scatter(xs, [r.cycles or 0 for r in good], s=18, alpha=0.7, color="tab:blue", label="points")
            if best is not None:
                bx = pos[_fmt(best.params.get(name))] if self.names else good.index(best)
                ax.scatter([bx], [best.cycles or 0], s=90, marker="*", color="tab:red", label="best", zorder=3)
            ax.set_xticks(range(len(labels)), labels)
            ax.set_xlabel(name)
            ax.set_ylabel("cycles")
            ax.grid(alpha=0.3)
        fig.axes[0].legend(loc="best", fontsize="small")
        fig.suptitle(f"sweep of {len(self.rows)} points" + (f": best {best.cycles:,} cycles" if best else ""))
        return fig

    def _repr_html_(self) -> str:
        """The table as HTML (Jupyter)."""
        from rich.console import Console

        console = Console(record=True, file=_Null(), width=160)
        console.print(self.table())
        return console.export_html(inline_styles=True)


def _cut(text: str, limit: int = 100) -> str:
    """An error shortened for a table cell (the CSV keeps it whole)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _Null() -> io.StringIO:
    """A file for a recording console to print into (its text is exported, not shown)."""
    return io.StringIO()
