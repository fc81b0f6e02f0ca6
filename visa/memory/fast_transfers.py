"""Fast path ``memory.aligned-transfers`` (issue 24): the HBM transfers of DMA packets that cross no 256-byte
unit, listed directly.

The reference (:func:`visa.memory.performance.hbm_packet_transfers`) splits every packet into its requests
(L2469, L2981), gives each request the unit of its first and of its last byte, marks the second valid where they
differ (an unaligned read takes two transfers, L2984), and prices a write that covers part of a unit as a
read-modify-write (L2985) — a dozen temporaries of twice the transfers.  When the unit equals the request size
and every packet starts on a unit boundary (or, one request per packet, stays inside its unit), each
request is exactly one transfer, of the unit its first byte lies in: the units are the packets' units plus
``0, 256, …`` request by request, a write's factor is the penalty for a request shorter than a unit (only a
packet's last, when the packet is not a whole number of units), and the order is the reference's (packet by
packet, request by request).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.hw import HardwareProfile

__all__ = ["ALIGNED", "transfers"]

ALIGNED = fastpaths.register("memory.aligned-transfers", "the HBM transfers of DMA packets that cross no 256-byte "
                             "unit listed directly (one per request), not by splitting every request at the unit "
                             "boundaries")

IntArray = npt.NDArray[np.int64]


def transfers(hw: HardwareProfile, packets: IntArray, packet_bytes: int, write: bool
              ) -> tuple[IntArray, npt.NDArray[np.float64], IntArray] | None:
    """The reference's ``(units, factors, packet indices)``, or ``None`` when some request may cross a unit."""
    unit = hw.hbm.access_unit_bytes
    req = hw.dma.request_bytes
    nreq = -(-packet_bytes // req)
    if req != unit or nreq < 1 or not packets.size:
        return None
    lead = packets % unit
    if nreq == 1:
        if int((lead + packet_bytes).max()) > unit:
            return None
    elif np.any(lead):
        return None
    base = packets - lead
    if nreq == 1:
        units = base
        packet = np.arange(packets.size, dtype=np.int64)
    else:
        units = (base[:, None] + np.arange(nreq, dtype=np.int64) * req).reshape(-1)
        packet = np.repeat(np.arange(packets.size, dtype=np.int64), nreq)
    factor = np.ones(units.size)
    if write:
        last = packet_bytes - (nreq - 1) * req  # the bytes of a packet's last request
        if nreq == 1:
            if last < unit:
                factor[:] = float(hw.hbm.unaligned_write_penalty)
        elif last < unit:
            factor[nreq - 1::nreq] = float(hw.hbm.unaligned_write_penalty)
    return units, factor, packet
