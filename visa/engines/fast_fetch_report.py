"""Fast path ``fetch.report-memo`` (issue 24): a fetch's engine report kept per configuration, addresses and layout,
not built again at every fetch.

The Fetch Engine's report (:func:`visa.stream.fetch.fetch_report`) writes the configuration in the manual's
notation (a few formatted strings), counts the bytes the fetch moves and the DM bank runs (L2897–2941): some 40 µs
of Python per fetch, for a value that depends on the hardware, the plan, the base addresses and the stream's
dtype and Chip, Cluster and Slice mappings alone.  The report is a frozen dataclass: kept per the exact key of
those (:func:`visa.engines.cache.exact_key`, never the manual's equivalence of mappings, L1017–1028), the same
value is handed to every fetch that asks.  With the path off, every fetch builds its own (the same value).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from visa import fastpaths
from visa.engines.cache import exact_key
from visa.engines.common import EngineReport

__all__ = ["REPORT", "remembered_report", "LIMIT"]

REPORT = fastpaths.register("fetch.report-memo", "a fetch's engine report kept per configuration, addresses and "
                                                 "layout (exact keys), not built again at every fetch")

#: Reports kept (the oldest go first).
LIMIT = 512

_REPORTS: dict[Hashable, EngineReport] = {}


def remembered_report(parts: tuple[Any, ...], build: Callable[[], EngineReport]) -> EngineReport:
    """``build()``, kept per :func:`~visa.engines.cache.exact_key` of ``parts`` (everything it depends on)."""
    if not REPORT.on:
        return build()
    key = exact_key(parts)
    got = _REPORTS.get(key)
    if got is None:
        got = build()
        if len(_REPORTS) >= LIMIT:
            del _REPORTS[next(iter(_REPORTS))]
        _REPORTS[key] = got
    return got
