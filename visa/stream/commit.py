"""Stream side of the Commit Engine (manual L2145–2354).

NOT YET IMPLEMENTED: issue 4 (fetch, collect, commit) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.memory.tensors import DmTensor
    from visa.stream.stages import StreamTensor


def commit(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], element: Mapping, address: int
) -> DmTensor[Any, Any, Any, Any, Any]:
    """Commit."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="commit")


def commit_view(stream: StreamTensor[Any, Any, Any, Any, Any, Any], view: Any) -> None:
    """Commit into a view."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="commit_view")
