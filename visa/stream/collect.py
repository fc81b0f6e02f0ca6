"""Stream side of the Collect Engine and the register-file loads (manual L3543–3669, L4055, L5063).

NOT YET IMPLEMENTED: issue 4 (fetch, collect, commit) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.memory.tensors import TrfAddress, TrfTensor, VrfTensor
    from visa.stream.stages import CollectTensor, StreamTensor


def collect(
    stream: StreamTensor[Any, Any, Any, Any, Any, Any], time: Mapping, packet: Mapping
) -> CollectTensor[Any, Any, Any, Any, Any, Any]:
    """Collect."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="collect")


def to_trf(
    stream: CollectTensor[Any, Any, Any, Any, Any, Any], row: Mapping, element: Mapping, address: TrfAddress
) -> TrfTensor[Any, Any, Any, Any, Any, Any]:
    """Load the TRF."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="to_trf")


def to_vrf(
    stream: CollectTensor[Any, Any, Any, Any, Any, Any], element: Mapping, address: int
) -> VrfTensor[Any, Any, Any, Any, Any]:
    """Load the VRF."""
    raise UnsupportedFeatureError("issue 4 (fetch, collect, commit): not implemented yet", call="to_vrf")
