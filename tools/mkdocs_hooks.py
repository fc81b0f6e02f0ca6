"""MkDocs hooks for ``make docs``: every page's bare manual citations (``L1639–1659``) get the manual's section
heading (``manual §Sequencer › Insufficient Input, L1639–1659``), as the error messages do, so a reader with
the manual can find the text by its headings (:func:`visa.manual.cite_markdown`)."""

from __future__ import annotations

from typing import Any

from visa.manual import cite_markdown


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Name the section of every citation on the page (code is left as it is)."""
    return cite_markdown(markdown)
