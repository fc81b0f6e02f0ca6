"""Stream side of the Fetch Engine: begin, begin_interleaved and fetch (manual L1689–2144).

NOT YET IMPLEMENTED: issue 4 (fetch, collect, commit) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.context import TuContext
    from visa.mapping import Mapping
    from visa.memory.tensors import DmTensorView
    from visa.stream.stages import BeginTensor, FetchTensor


def begin(tu: TuContext, view: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """Start a stream from a DM view."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="begin")


def begin_interleaved(
    tu: TuContext, axis: Mapping, lhs: DmTensorView, rhs: DmTensorView
) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
    """Interleave two DM views."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="begin_interleaved")


def fetch(
    stream: BeginTensor[Any, Any, Any, Any, Any, Any],
    dtype: Any,
    time: Mapping,
    packet: Mapping,
    *,
    table: Any = None,
    zero_points: tuple[int, ...] | None = None,
) -> FetchTensor[Any, Any, Any, Any, Any, Any]:
    """Fetch."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="fetch")
