"""Notebooks and pictures (issue 29, item 6): HTML and rich views of reports, contexts, tensors and mappings;
the timeline, a mapping and a DM layout drawn by matplotlib, checked to be real pictures (PNGs of the expected
size with many colours, the tracks' colours among them), not blank canvases."""

from __future__ import annotations

import io
import runpy
from pathlib import Path

import numpy as np
import pytest

from visa import AxisSet, Context, DmTensor, HostTensor, i32
from visa.context import holding, reset_acquired
from visa.schedule.show import TRACK_COLOURS

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def gemm_ctx() -> Context:
    reset_acquired()
    with holding() as contexts:
        runpy.run_path(str(EXAMPLES / "gemm.py"), run_name="__views__")["main"]()
    return next(c for c in contexts if c.schedule.ops)


def _png(fig: object) -> np.ndarray:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    buf.seek(0)
    return np.asarray(matplotlib.image.imread(buf, format="png"))


def _check_picture(img: np.ndarray, colours: list[str] = ()) -> None:  # type: ignore[assignment]
    assert img.ndim == 3 and img.shape[0] >= 100 and img.shape[1] >= 200
    rgb = (img[..., :3] * 255).round().astype(np.int64)
    flat = rgb.reshape(-1, 3)
    distinct = len({tuple(p) for p in flat[:: max(1, len(flat) // 20000)]})
    assert distinct >= 8, "an almost empty picture"
    assert (flat.sum(axis=1) < 3 * 250).mean() > 0.05, "mostly blank"
    for colour in colours:
        want = np.array([int(colour[k:k + 2], 16) for k in (1, 3, 5)])
        assert (np.abs(flat - want).max(axis=1) <= 3).any(), f"no bar of colour {colour}"


def test_a_report_shows_as_html_and_rich(gemm_ctx: Context) -> None:
    report = gemm_ctx.report()
    page = report._repr_html_()
    assert page.startswith("<div") and "<table" in page and "tracks" in page and "the critical path" in page
    assert f"{report.makespan:,} cycles end to end" in page
    assert gemm_ctx._repr_html_() == page
    assert "nothing ran yet" in Context.acquire()._repr_html_()
    assert repr(report).startswith("<KernelReport RNGD:") and len(repr(report)) < 200
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(report)
    text = console.export_text()
    assert "critical path: #" in text and "device RNGD" in text and "│ main" in text
    assert f"{report.makespan:,} cycles end to end" in text


def test_the_timeline_is_a_picture_of_every_track(gemm_ctx: Context) -> None:
    report = gemm_ctx.report()
    fig = report.plot_timeline()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len({lane for op in report.operations for lane in op.lanes})
    assert any("main" in label for label in labels) and any("dma" in label for label in labels)
    outlined = [p for p in ax.patches if p.get_linewidth() > 1]
    assert len(outlined) >= len(report.critical_path)  # the critical path is marked
    used = [TRACK_COLOURS[t] for t in ("pdma", "tdma", "main", "sub")
            if any(op.track == t for op in report.operations)]
    _check_picture(_png(fig), used)


def test_a_mapping_and_a_dm_layout_are_pictures() -> None:
    ax = AxisSet(A=8, B=4)
    mapping = ax.m["B, A / 2 # 6"]
    page = mapping._repr_html_()
    assert "size 24, axes A, B" in page and "&quot;" in page  # escaped
    _check_picture(_png(mapping.plot()))
    ctx = Context.acquire()
    ax2 = AxisSet(S=16, E=12)
    host = HostTensor.from_numpy(np.arange(16 * 12).reshape(16, 12), i32, ax2.m["S, E"], axes="S E")
    hbm = host.to_hbm(ax2.m["1"], ax2.m["S, E"], ctx.pdma, 0)
    dm: DmTensor = hbm.to_dm(ax2.m["1 # 2"], ax2.m["S # 256"], ax2.m["E # 16"], ctx.tdma, 0)  # type: ignore[type-arg]
    assert "<table" in dm._repr_html_() and "Element" in dm._repr_html_()
    assert "<table" in host._repr_html_()
    fig = dm.plot_layout()
    assert len(fig.axes[0].get_yticklabels()) >= 1
    _check_picture(_png(fig))
