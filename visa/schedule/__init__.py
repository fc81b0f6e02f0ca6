"""The schedule: resources, hazards by address, contention, the roofline profile and the trace (manual
"Scheduling", L7042–7070; DMA engines L2473–2504; bank arbitration L2897–2941).

The host/schedule layer: it imports the engines, tensors and memories, and :class:`visa.Context` keeps one
:class:`Schedule` per device.  Every operation is recorded with :meth:`Schedule.record` (through
``Context.record``) with its read and write footprints (:func:`footprint` of tensor handles, or explicit
:class:`~visa.memory.footprint.Footprint` objects) and the lanes it occupies.
"""

from visa.memory.footprint import EMPTY, Footprint, Span
from visa.schedule.core import TU_TRACKS, Dependency, Lane, Operation, Schedule, dma_lane, user_location
from visa.schedule.footprints import footprint, live_dm_bytes, span_of
from visa.schedule.report import KernelReport, PassProfile, Roofline, TrackProfile
from visa.schedule.resources import dma_lanes, dma_traffic

__all__ = ["EMPTY", "Footprint", "Span", "TU_TRACKS", "Dependency", "Lane", "Operation", "Schedule", "dma_lane",
           "user_location", "footprint", "live_dm_bytes", "span_of", "KernelReport", "PassProfile", "Roofline",
           "TrackProfile", "dma_lanes", "dma_traffic"]
