"""Tensors in a notebook: their HTML table (``_repr_html_``) and, for a DM tensor, ``plot_layout()``: which
slice and which address holds which element (manual "Size Constraint", L1074–1093; DM L2862–2941).
matplotlib is imported only by :func:`plot_layout` (``pip install 'tcp-visa[plot]'``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import html
from visa.mapping.show import SHOWN, logical_rank, require_matplotlib
from visa.memory.layout import LEVELS, element_bytes

if TYPE_CHECKING:
    from visa.tensors.handles import DeviceTensor, HostTensor

__all__ = ["device_html", "host_html", "plot_layout"]


def device_html(t: DeviceTensor) -> str:
    """A device tensor: its type, address and bytes, and one row per level (mapping, size, axes)."""
    levels = LEVELS[t.MEMORY]
    per_unit = element_bytes(t.dtype, t.levels["Element"].size)
    rows = [[lv, str(t.levels[lv]), t.levels[lv].size, ", ".join(sorted(t.levels[lv].axes)) or "—"] for lv in levels]
    where = f"{t.MEMORY.upper()} address {t.address}, {per_unit} bytes per " + \
        ("chip" if t.MEMORY == "hbm" else "slice" if t.MEMORY == "dm" else "unit")
    return html.block(f"{t.type_name()}[{t.dtype!r}]", where, html.table(["level", "mapping", "size", "axes"], rows))


def host_html(t: HostTensor[Any, Any]) -> str:
    """A host tensor: its type, element mapping and its first values."""
    values = np.asarray(t.values).reshape(-1)[:SHOWN]
    return html.block(f"HostTensor[{t.dtype!r}]", f'Element m["{t.element}"], {t.element.size} elements',
                      html.table(["position", "value"], list(enumerate(values.tolist()))))


def plot_layout(t: DeviceTensor, *, slices: int = 64) -> Any:
    """A matplotlib ``Figure`` of a DM tensor on chip 0: one row per slice that holds data (the first
    ``slices``), one column per element position in the slice (its DM address is the tensor's address plus
    the position times the element's bytes), each cell coloured by the tensor index it holds, grey where the
    position is padding; rows of slices that hold nothing are left out."""
    plt = require_matplotlib()
    cluster, slice_, element = t.levels["Cluster"], t.levels["Slice"], t.levels["Element"]
    n_el = element.size
    el_rank = logical_rank(element, np.arange(n_el, dtype=np.int64))
    shown: list[npt.NDArray[Any]] = []
    labels: list[str] = []
    for c in range(cluster.size):
        c_rank = logical_rank(cluster, np.array([c], dtype=np.int64))[0]
        if c_rank < 0:
            continue
        s_rank = logical_rank(slice_, np.arange(slice_.size, dtype=np.int64))
        for s in np.flatnonzero(s_rank >= 0):
            if len(shown) >= slices:
                break
            base = (int(c_rank) * max(1, slice_.size) + int(s_rank[s])) * max(1, n_el)
            shown.append(np.where(el_rank >= 0, base + el_rank, -1).astype(float))
            labels.append(f"cluster {c} slice {s}")
    grid = np.ma.masked_less(  # type: ignore[no-untyped-call, unused-ignore]  # (numpy 2.0's stubs)
        np.array(shown) if shown else np.full((1, n_el), -1.0), 0)
    fig, ax = plt.subplots(figsize=(min(14, max(6, 1 + n_el * 0.3)), min(12, max(3, 1 + len(shown) * 0.3))))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    ax.imshow(grid, cmap=cmap, aspect="auto", interpolation="nearest")
    step = max(1, len(labels) // 16)
    ax.set_yticks(range(0, len(labels), step), labels[::step], fontsize=7)
    nbytes = t.dtype.size_bits / 8
    ticks = range(0, n_el, max(1, n_el // 8))
    ax.set_xticks(list(ticks), [f"{t.address + int(k * nbytes)}" for k in ticks], fontsize=7)
    ax.set_xlabel("DM address in the slice (bytes)")
    ax.set_title(f"{t.describe()}\nwhich element each slice and address holds\n"
                 "(colour: the tensor index; grey: padding)", fontsize=8)
    fig.tight_layout()
    return fig
