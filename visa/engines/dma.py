"""DMA Engine: moves between host, HBM and DM (manual L2355–2847).

NOT YET IMPLEMENTED: issue 3 (memories and DMA) provides this module; the signatures below are the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from visa.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from visa.context import DmaContext
    from visa.mapping import Mapping
    from visa.memory.tensors import DmTensor, HbmTensor, HostTensor


def host_to_hbm(
    host: HostTensor[Any, Any], chip: Mapping, element: Mapping, pdma: DmaContext, address: int
) -> HbmTensor[Any, Any, Any]:
    """PCIe DMA host → HBM."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="host_to_hbm")


def hbm_to_host(hbm: HbmTensor[Any, Any, Any], element: Mapping, pdma: DmaContext) -> HostTensor[Any, Any]:
    """PCIe DMA HBM → host."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="hbm_to_host")


def hbm_to_dm(
    hbm: HbmTensor[Any, Any, Any], cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext, address: int
) -> DmTensor[Any, Any, Any, Any, Any]:
    """Tensor DMA HBM → DM."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="hbm_to_dm")


def dm_to_hbm(
    dm: DmTensor[Any, Any, Any, Any, Any], element: Mapping, tdma: DmaContext, address: int
) -> HbmTensor[Any, Any, Any]:
    """Tensor DMA DM → HBM."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="dm_to_hbm")


def hbm_to_hbm(
    hbm: HbmTensor[Any, Any, Any], chip: Mapping, element: Mapping, tdma: DmaContext, address: int
) -> HbmTensor[Any, Any, Any]:
    """Tensor DMA HBM → HBM."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="hbm_to_hbm")


def dm_to_dm(
    dm: DmTensor[Any, Any, Any, Any, Any],
    cluster: Mapping,
    slice_: Mapping,
    element: Mapping,
    tdma: DmaContext,
    address: int,
) -> DmTensor[Any, Any, Any, Any, Any]:
    """Tensor DMA DM → DM."""
    raise UnsupportedFeatureError("issue 3 (memories and DMA): not implemented yet", call="dm_to_dm")
