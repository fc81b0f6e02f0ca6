"""A mapping in a notebook: its HTML table (``Mapping._repr_html_``) and its picture (``Mapping.plot()``):
which tensor index each buffer position holds (manual "Mapping Tensors", L596–620).  matplotlib is imported
only by :func:`plot` (``pip install 'tcp-visa[plot]'``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import html

if TYPE_CHECKING:
    from visa.mapping.core import Mapping

__all__ = ["mapping_html", "plot", "logical_rank", "require_matplotlib", "SHOWN"]

#: Positions the HTML table and the plot's labels show at most.
SHOWN = 64


def logical_rank(mapping: Mapping, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each position's tensor index as one number (row-major over the mapping's axes in name order; ``-1`` for
    padding), for colouring: equal numbers are the same element."""
    ev = mapping.evaluate(positions)
    rank = np.zeros(positions.shape, dtype=np.int64)
    for axis in sorted(mapping.axes):
        size = _axis_size(mapping, axis)
        rank = rank * size + ev.coord(axis) % max(size, 1)
    return np.where(ev.valid, rank, -1)


def _axis_size(mapping: Mapping, axis: str) -> int:
    try:
        return int(mapping.axis_set.size(axis))
    except Exception:  # noqa: BLE001 - a derived axis without its own size: its base's
        return int(mapping.size)


def mapping_html(mapping: Mapping) -> str:
    """The mapping's text (as written and canonical), size and axes, and the manual's stride/modulo table
    (:meth:`visa.mapping.Mapping.table`: rows and columns are the outer and inner digits, each cell the index
    that position holds, ``·`` padding)."""
    rows = [r.strip("|").split("|") for r in mapping.table(SHOWN).splitlines() if not set(r) <= {"|", "-"}]
    cells = [[c.strip() for c in row] for row in rows]
    axes = ", ".join(sorted(mapping.axes)) or "none"
    return html.block(f"{mapping!r} ≡ {mapping}", f"size {mapping.size}, axes {axes}",
                      html.table(cells[0] if cells else [], cells[1:]))


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` with a backend that needs no screen, or a clear error naming the extra."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'tcp-visa[plot]'") from err
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline") and \
            not _has_display():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def plot(mapping: Mapping, width: int | None = None) -> Any:
    """A matplotlib ``Figure``: the buffer's positions as a grid of ``width`` columns (default: the innermost
    factor, at most 32), each cell coloured by the tensor index it holds (grey: padding) and, for small
    mappings, labelled with it."""
    plt = require_matplotlib()
    size = mapping.size
    if width is None:
        width = min(32, size)
        for d in reversed(mapping.canon):  # the innermost digit's size, if it is a sensible row
            if 1 < d.size <= 32:
                width = d.size
                break
    rows = -(-size // width)
    pos = np.arange(rows * width, dtype=np.int64)
    rank = np.full(pos.shape, -2, dtype=np.int64)
    rank[:size] = logical_rank(mapping, pos[:size])
    grid = rank.reshape(rows, width).astype(float)
    fig, ax = plt.subplots(figsize=(min(12, max(6, 1 + width * 0.45)), min(10, max(3, 1 + rows * 0.45))))
    shown = np.ma.masked_less(grid, 0)  # type: ignore[no-untyped-call, unused-ignore]  # (numpy 2.0's stubs)
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    ax.imshow(shown, cmap=cmap, aspect="auto", interpolation="nearest")
    if size <= SHOWN:
        ev = mapping.evaluate(pos[:size])
        axes = sorted(mapping.axes)
        for p in range(size):
            label = ",".join(str(int(ev.coord(a)[p])) for a in axes) if ev.valid[p] else "pad"
            ax.text(p % width, p // width, label, ha="center", va="center", fontsize=7, color="white")
    ax.set_xlabel(f"position % {width}" + (f"   (labels: {','.join(sorted(mapping.axes))})" if size <= SHOWN else ""))
    ax.set_ylabel(f"position // {width}")
    ax.set_title(f'm["{mapping}"]: the index each position holds (grey: padding)', fontsize=10)
    fig.tight_layout()
    return fig
