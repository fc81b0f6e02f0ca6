"""Tensor handles and the moves between memories (manual "Memory and Stream", L1029–1197).

The layer above the engines: a handle (:mod:`visa.tensors.handles`) knows where a tensor lives and how its
buffer holds it; its moves (:mod:`visa.tensors.moves`) call the DMA engine; :mod:`visa.tensors.device` names
what both need of the device they run on.
"""

from visa.tensors.device import Device, DmaContext, TuHandle
from visa.tensors.handles import (
    DeviceTensor,
    DmTensor,
    DmTensorView,
    HbmTensor,
    HbmTensorView,
    HostTensor,
    TensorView,
    TrfAddress,
    TrfTensor,
    VrfTensor,
)

__all__ = ["Device", "DmaContext", "TuHandle", "HostTensor", "DeviceTensor", "HbmTensor", "DmTensor", "TrfTensor",
           "VrfTensor", "TensorView", "HbmTensorView", "DmTensorView", "TrfAddress"]
