"""HTML tables for notebooks: what ``_repr_html_`` of a report, a context, a tensor or a mapping returns
(Jupyter shows it instead of the object's ``repr``).  Plain strings, escaped; no dependency."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

__all__ = ["table", "block"]

_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px"
_CELL = "border:1px solid #ccc;padding:2px 6px;text-align:left"


def table(header: Sequence[str], rows: Iterable[Sequence[object]], caption: str = "") -> str:
    """One HTML table: ``header`` cells, then a row per item of ``rows`` (each cell ``str()``-ed, escaped)."""
    head = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{escape(str(c))}</td>' for c in row) + "</tr>"
                   for row in rows)
    cap = f"<caption style=\"text-align:left\"><b>{escape(caption)}</b></caption>" if caption else ""
    return f'<table style="{_STYLE}">{cap}<tr>{head}</tr>{body}</table>'


def block(title: str, *parts: str) -> str:
    """A titled group of tables (already HTML) and lines of text (escaped when they do not start with ``<``)."""
    inner = "".join(p if p.startswith("<") else f"<div>{escape(p)}</div>" for p in parts)
    return f'<div style="font-family:monospace"><div><b>{escape(title)}</b></div>{inner}</div>'
