"""The memory tiers as byte images, tensor handles, placement rules and the live-tensor registry."""

from visa.memory.tensors import (
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

__all__ = ["HostTensor", "DeviceTensor", "HbmTensor", "DmTensor", "TrfTensor", "VrfTensor", "TensorView",
           "HbmTensorView", "DmTensorView", "TrfAddress"]
