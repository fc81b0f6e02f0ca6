"""Stream side of the Switch Engine (manual L3054–3542).

NOT YET IMPLEMENTED: issue 5 (switch, contraction, cast) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import FetchTensor, SwitchTensor


def switch(
    stream: FetchTensor[Any, Any, Any, Any, Any, Any], slice_: Mapping, time: Mapping, config: Any
) -> SwitchTensor[Any, Any, Any, Any, Any, Any]:
    """Switch."""
    raise UnsupportedFeatureError("issue 5 (switch, contraction, cast): not implemented yet", call="switch")
