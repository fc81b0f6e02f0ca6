"""Stream side of the Transpose Engine (manual L6820–7041).

NOT YET IMPLEMENTED: issue 7 (transpose) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import StreamTensor, TransposeTensor


def transpose(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], time: Mapping, packet: Mapping
) -> TransposeTensor[Any, Any, Any, Any, Any, Any]:
    """Transpose."""
    raise UnsupportedFeatureError("issue 7 (transpose): not implemented yet", call="transpose")
