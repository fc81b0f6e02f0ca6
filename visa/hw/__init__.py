"""Hardware profiles: one frozen data table per chip of the Tensor Contraction Processor line.

The bottom layer of visa (design ARCHITECTURE.md): every count, capacity, bandwidth, alignment, cast table and
cycle constant the manual gives, each field with its manual lines, so that no engine hard-codes a hardware
number.  ``RNGD`` is the default profile; ``RNGD_S`` differs by its extra fetch casts (manual L1973–1979).

>>> from visa.hw import RNGD, profile
>>> profile("rngd-s").supports_fetch_cast("f8e4m3", "bf16"), RNGD.contraction.accumulator_slots
(True, 1024)
"""

from __future__ import annotations

from visa.hw.paths import PATHS, DataPath, bandwidth
from visa.hw.profile import (
    DTYPE_NAMES,
    BitField,
    CastEngine,
    Clocks,
    CollectEngine,
    CommitEngine,
    ContractionEngine,
    DataMemory,
    DmaEngine,
    FetchEngine,
    FrozenMap,
    HardwareProfile,
    Hbm,
    Scheduling,
    Scratchpad,
    SequencerLimits,
    SwitchEngine,
    TensorRegisterFile,
    Timing,
    TransposeEngine,
    UnknownProfileError,
    VectorEngine,
    VectorRegisterFile,
)
from visa.hw.rngd import PROFILES, RNGD, RNGD_FETCH_CASTS, RNGD_S, RNGD_S_EXTRA_FETCH_CASTS

__all__ = [
    "DTYPE_NAMES",
    "PATHS",
    "PROFILES",
    "RNGD",
    "RNGD_FETCH_CASTS",
    "RNGD_S",
    "RNGD_S_EXTRA_FETCH_CASTS",
    "BitField",
    "CastEngine",
    "Clocks",
    "CollectEngine",
    "CommitEngine",
    "ContractionEngine",
    "DataPath",
    "DataMemory",
    "DmaEngine",
    "FetchEngine",
    "FrozenMap",
    "HardwareProfile",
    "Hbm",
    "Scheduling",
    "Scratchpad",
    "SequencerLimits",
    "SwitchEngine",
    "TensorRegisterFile",
    "Timing",
    "TransposeEngine",
    "UnknownProfileError",
    "VectorEngine",
    "VectorRegisterFile",
    "bandwidth",
    "profile",
]


def _key(name: str) -> str:
    return name.strip().upper().replace("_", "-")


def profile(name: str | HardwareProfile) -> HardwareProfile:
    """The hardware profile called ``name`` ("RNGD", "RNGD-S", manual L127, L1973; case, ``-`` and ``_`` do not
    matter).

    A :class:`HardwareProfile` is returned as it is, so callers can accept either.

    >>> profile("RNGD_S").name
    'RNGD-S'
    >>> profile("H100")
    Traceback (most recent call last):
    ...
    visa.hw.profile.UnknownProfileError: unknown hardware profile 'H100'; known profiles: RNGD, RNGD-S
    """
    if isinstance(name, HardwareProfile):
        return name
    wanted = _key(name)
    for known, hw in PROFILES.items():
        if _key(known) == wanted:
            return hw
    raise UnknownProfileError(f"unknown hardware profile {name!r}; known profiles: {', '.join(PROFILES)}")
