"""Stream side of the Vector Engine: vector_init and the vector typestate (manual L4549–6755).

NOT YET IMPLEMENTED: issue 6 (vector engine) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.stream.stages import StreamTensor


def vector_init(stream: StreamTensor[Any, Any, Any, Any, Any, Any]) -> Any:
    """Enter the Vector Engine."""
    raise UnsupportedFeatureError("issue 6 (vector engine): not implemented yet", call="vector_init")
