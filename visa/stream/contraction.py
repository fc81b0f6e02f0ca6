"""Stream side of the Contraction Engine: align, contract, accumulate (manual L3670–4548).

NOT YET IMPLEMENTED: issue 5 (switch, contraction, cast) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.memory.tensors import TrfTensor
    from visa.stream.stages import AccumulationKind, AccumulationTensor, AlignedTensor, CollectTensor, ContractionTensor


def align(
    stream: CollectTensor[Any, Any, Any, Any, Any, Any],
    time: Mapping,
    packet: Mapping,
    trf: TrfTensor[Any, Any, Any, Any, Any, Any],
) -> AlignedTensor[Any, Any, Any, Any, Any, Any]:
    """Align."""
    raise UnsupportedFeatureError("issue 5 (switch, contraction, cast): not implemented yet", call="align")


def contract(
    stream: AlignedTensor[Any, Any, Any, Any, Any, Any], packet: Mapping
) -> ContractionTensor[Any, Any, Any, Any, Any, Any]:
    """Contract."""
    raise UnsupportedFeatureError("issue 5 (switch, contraction, cast): not implemented yet", call="contract")


def accumulate(
    stream: ContractionTensor[Any, Any, Any, Any, Any, Any], time: Mapping, packet: Mapping, kind: AccumulationKind
) -> AccumulationTensor[Any, Any, Any, Any, Any, Any]:
    """Accumulate."""
    raise UnsupportedFeatureError("issue 5 (switch, contraction, cast): not implemented yet", call="accumulate")
