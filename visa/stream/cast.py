"""Stream side of the Cast Engine (manual L6756–6819).

NOT YET IMPLEMENTED: issue 5 (switch, contraction, cast) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import CastTensor, StreamTensor


def cast(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], dtype: Any, packet: Mapping
) -> CastTensor[Any, Any, Any, Any, Any, Any]:
    """Cast."""
    raise UnsupportedFeatureError("issue 5 (switch, contraction, cast): not implemented yet", call="cast")
