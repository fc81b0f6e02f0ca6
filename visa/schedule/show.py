"""A kernel's report in a notebook: HTML tables (``KernelReport._repr_html_``), a rich table (``__rich__``) and
the timeline as a matplotlib figure (``KernelReport.plot_timeline()``: one row per track, an operation as a bar
coloured by the engine context that issued it, dependencies between tracks as lines, the critical path
outlined).  matplotlib is imported only by :func:`plot_timeline` (``pip install 'tcp-visa[plot]'``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa import html
from visa.mapping.show import require_matplotlib

if TYPE_CHECKING:
    from visa.schedule.report import KernelReport

__all__ = ["report_html", "report_rich", "plot_timeline", "TRACK_COLOURS"]

#: The colour of each issuing context (the operation's track): host DMA, tensor DMA, main and sub Tensor Unit.
TRACK_COLOURS = {"pdma": "#4c72b0", "tdma": "#55a868", "main": "#c44e52", "sub": "#8172b2"}


def _summary(r: KernelReport) -> list[str]:
    out = [f"{len(r.operations)} operations, {r.makespan:,} cycles end to end"]
    if r.kernel is not None:
        out.append(f"kernel roofline: {r.kernel}")
    out.append(f"run roofline: {r.roofline}")
    if r.critical_path:
        out.append("critical path: " + " → ".join(f"#{i}" for i in r.critical_path))
    return out


def report_html(r: KernelReport) -> str:
    """The report as HTML: the totals and rooflines, the tracks, the main passes and the critical path's
    operations."""
    tracks = html.table(["chip", "track", "busy", "idle", "ops", "critical"],
                        [[t.chip, t.track, t.busy, t.idle, t.ops, t.critical] for t in r.tracks], "tracks")
    parts = [*_summary(r), tracks]
    if r.passes:
        parts.append(html.table(["#", "main pass", "cycles", "roofline"],
                                [[p.index, p.name, p.cycles, str(p.roofline)] for p in r.passes], "main passes"))
    crit = [r.operations[i] for i in r.critical_path]
    if crit:
        parts.append(html.table(["#", "operation", "track", "start", "cycles", "source"],
                                [[o.index, o.name, o.track, o.start, o.cycles, o.source] for o in crit],
                                "the critical path"))
    parts += [f"warning: {w}" for w in r.warnings]
    return html.block(f"device {r.device}", *parts)


def report_rich(r: KernelReport) -> Any:
    """The report as a rich renderable (a group of the summary lines and the tracks table)."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title=f"device {r.device}", title_justify="left")
    for col in ("chip", "track", "busy", "idle", "ops", "critical"):
        table.add_column(col, justify="left" if col in ("track",) else "right")
    for t in r.tracks:
        table.add_row(str(t.chip), t.track, f"{t.busy:,}", f"{t.idle:,}", str(t.ops), f"{t.critical:,}")
    return Group(*_summary(r), table)


def plot_timeline(r: KernelReport, *, dependencies: bool = True) -> Any:
    """A matplotlib ``Figure``: one row per track (chip and resource), each operation a bar from its start for
    its cycles, coloured by the context that issued it; lines from an operation's end to the start of each
    operation on another track that waited for it; the critical path's bars outlined in black."""
    plt = require_matplotlib()
    from matplotlib.patches import Patch

    order = {"main": 0, "sub": 1, "pcie": 99}
    lanes = sorted({lane for op in r.operations for lane in op.lanes},
                   key=lambda ln: (ln[0], order.get(ln[1], 2), ln[1]))
    row = {lane: k for k, lane in enumerate(lanes)}
    critical = set(r.critical_path)
    fig, ax = plt.subplots(figsize=(12, max(2.5, 0.45 * len(lanes) + 1.2)))
    for op in r.operations:
        for lane in op.lanes:
            on_path = op.index in critical
            ax.barh(row[lane], max(op.cycles, 1), left=op.start, height=0.6,
                    color=TRACK_COLOURS.get(op.track, "#999999"), edgecolor="black" if on_path else "none",
                    linewidth=1.6 if on_path else 0)
    if dependencies:
        for op in r.operations:
            for d in op.deps:
                src = r.operations[d.op]
                if not src.lanes or not op.lanes or src.lanes[0] == op.lanes[0]:
                    continue
                ax.plot([src.end, op.start], [row[src.lanes[0]], row[op.lanes[0]]], color="#555555",
                        linewidth=0.6, alpha=0.6)
    ax.set_yticks(range(len(lanes)), [f"chip {c} {t}" for c, t in lanes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    ax.set_xlim(0, max(r.makespan, 1))
    handles = [Patch(color=c, label=k) for k, c in TRACK_COLOURS.items()
               if any(op.track == k for op in r.operations)]
    handles.append(Patch(facecolor="white", edgecolor="black", label="critical path"))
    ax.legend(handles=handles, loc="upper right", fontsize=7)
    ax.set_title(f"device {r.device}: {len(r.operations)} operations, {r.makespan:,} cycles", fontsize=10)
    fig.tight_layout()
    return fig
