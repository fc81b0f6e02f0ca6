"""visa: FuriosaAI's TCP Virtual ISA as a Python embedded DSL, with mypy layout checks and an eager simulator.

Every public name — mappings, dtypes, hardware profiles, errors — is importable from here (design API.md §1).
"""

from visa import dtypes as _dtypes
from visa import errors as _errors
from visa import hw as _hw
from visa.context import Context, device, launch
from visa.dtypes import *  # noqa: F403
from visa.errors import *  # noqa: F403
from visa.hw import RNGD, RNGD_S, HardwareProfile
from visa.mapping import IDENTITY, AxisSet, Index, Mapping, axes, i, m, pair_of, skew
from visa.memory.tensors import (
    DmTensor,
    DmTensorView,
    HbmTensor,
    HbmTensorView,
    HostTensor,
    TrfAddress,
    TrfTensor,
    VrfTensor,
)
from visa.stream import (
    AccumulationKind,
    AccumulationTensor,
    AlignedTensor,
    BeginTensor,
    CastTensor,
    CollectTensor,
    ContractionTensor,
    FetchTensor,
    StreamTensor,
    SwitchTensor,
    TransposeTensor,
    VectorFinalTensor,
)

__all__ = [
    *_errors.__all__,
    *_dtypes.__all__,
    "RNGD",
    "RNGD_S",
    "HardwareProfile",
    "AxisSet",
    "Index",
    "Mapping",
    "axes",
    "i",
    "m",
    "pair_of",
    "skew",
    "IDENTITY",
    "Context",
    "device",
    "launch",
    "HostTensor",
    "HbmTensor",
    "DmTensor",
    "TrfTensor",
    "VrfTensor",
    "HbmTensorView",
    "DmTensorView",
    "TrfAddress",
    "StreamTensor",
    "BeginTensor",
    "FetchTensor",
    "SwitchTensor",
    "CollectTensor",
    "AlignedTensor",
    "ContractionTensor",
    "AccumulationTensor",
    "CastTensor",
    "TransposeTensor",
    "VectorFinalTensor",
    "AccumulationKind",
]
del _hw
