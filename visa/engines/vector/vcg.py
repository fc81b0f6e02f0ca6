"""The Valid Count Generator: its hardware formula, and the configuration a reduce axis placement needs
(manual "Valid Count Generator's Interface" L5574–6165 and "Implementation" L6166–6582).

The VCG tags each 8-lane flit ``(s, t)`` with ``vc(s, t)``; lane p is valid iff ``p < vc`` (L6177).  It is
configured from counters (the sequencer over the flits of a slice), a packet dim and three gate dims
(L6197–6209):

* :func:`counters` and :func:`generate` implement the formula
  ``vc(s, t) = packet_vc(t) · gate_0(s, t) · gate_1(s, t) · gate_2(s, t)`` exactly as L6180–6331 state it
  (``masked_id = s & mask`` with no shift, ``match`` in masked units, Q15);
* :func:`configure` builds the configuration the manual's recipes give for a padded reduce axis R
  (packet dim for R in Packet, a standard or transposed gate for R in Slice, a gate with ``mask = 0,
  match = 0`` for R only in Time; L6440–6520), and :func:`check` generates its valid counts, carries them
  through the Narrow step (split / trim, L6573–6582) and compares them with the validity the mapping
  requires.  A placement the hardware cannot express (Slice + Packet, an outer part of R in Packet,
  another axis sharing the packet, non-monotonic slices, over-allocated transposed time, …) therefore shows
  up as a mismatch, and the reduce refuses it instead of computing a number the hardware would not.

>>> c = VcgConfig(limits=(3,), assign=("p",), strides=(8,), v_p=19, stride_p=8)
>>> generate(c, 1, 3).tolist()       # manual L6291-6295
[[8, 8, 3]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa.engines.vector.plan import dim_axes
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping import canon as C
from visa.mapping.evaluate import BoolArray, IntArray

__all__ = ["Gate", "VcgConfig", "VcgResult", "counters", "generate", "configure", "check", "DISABLED"]


@dataclass(frozen=True)
class Gate:
    """One gate dim (L6306–6331): ``mask``, ``match`` (masked units), threshold ``v``, mode ``p`` (1 = transposed)."""

    mask: int
    match: int
    v: int
    p: int = 0


#: A disabled gate: ``mask = 0, match = 1`` puts every slice in the "below" group (L6331).
DISABLED = Gate(0, 1, 0, 0)


@dataclass(frozen=True)
class VcgConfig:
    """The VCG configuration (L6197–6209).

    ``limits[i]``, ``assign[i]`` (``"p"``, ``0``, ``1``, ``2`` or ``None``) and ``strides[i]`` describe counter
    ``c_i`` (``c_0`` innermost); ``v_p`` / ``stride_p`` drive the packet dim; ``gates`` the three gate dims.
    """

    limits: tuple[int, ...]
    assign: tuple[str | int | None, ...]
    strides: tuple[int, ...]
    v_p: int = 8
    stride_p: int = 8
    gates: tuple[Gate, Gate, Gate] = (DISABLED, DISABLED, DISABLED)

    def describe(self) -> str:
        """The configuration in the manual's terms (L6197–6209) for the pass report."""
        parts = [f"L={list(self.limits)}", f"dims={list(self.assign)}", f"σ={list(self.strides)}",
                 f"V_p={self.v_p}", f"stride_p={self.stride_p}"]
        for k, g in enumerate(self.gates):
            if g != DISABLED:
                parts.append(f"gate{k}(mask={g.mask:#b}, match={g.match}, V={g.v}, P={g.p})")
        return "VCG " + ", ".join(parts)


def counters(limits: tuple[int, ...], t: npt.ArrayLike) -> list[IntArray]:
    """Mixed-radix decomposition of flit index ``t`` into ``(c_0, c_1, …)``, ``c_0`` fastest (L6210–6232)."""
    rest = np.asarray(t, dtype=np.int64)
    out: list[IntArray] = []
    for lim in limits:
        out.append(rest % lim)
        rest = rest // lim
    return out


def generate(config: VcgConfig, slices: int, flits: int) -> IntArray:
    """``vc(s, t)`` for ``s < slices`` and ``t < flits``, by the hardware formula (L6180–6331); shape (S, T)."""
    t = np.arange(flits, dtype=np.int64)
    cs = counters(config.limits, t)
    idx: dict[str | int, IntArray] = {}
    for c, dim, sigma in zip(cs, config.assign, config.strides, strict=True):
        if dim is None:
            continue
        idx[dim] = idx.get(dim, np.zeros(flits, dtype=np.int64)) + c * sigma
    idx_p = idx.get("p", np.zeros(flits, dtype=np.int64))
    packet_vc = np.minimum(config.stride_p, np.maximum(0, config.v_p - idx_p))
    s = np.arange(slices, dtype=np.int64)[:, None]
    vc = np.broadcast_to(packet_vc[None, :], (slices, flits)).copy()
    for k, g in enumerate(config.gates):
        masked = s & g.mask
        ig = idx.get(k, np.zeros(flits, dtype=np.int64))[None, :]
        inside = ig < g.v
        if g.p == 0:
            gate = np.where(masked < g.match, True, np.where(masked == g.match, inside, False))
        else:
            gate = np.where(masked < g.match, True, inside)
        vc = vc * gate
    return vc


@dataclass(frozen=True)
class VcgResult:
    """What :func:`check` found: the configuration (if any) and, when unsupported, why."""

    config: VcgConfig | None
    supported: bool
    reason: str = ""


@dataclass(frozen=True)
class _RDim:
    level: str
    weight: int
    size: int
    stride: int  # in units of R's coordinate
    count: int


def _r_dims(mp: Mapping, level: str, axis: str) -> tuple[list[_RDim], list[tuple[int, int]]] | None:
    """R's factors of one level (R stride in R coordinates) and the other factors (weight, size)."""
    dims = mp.canon
    w = mp.size
    rd: list[_RDim] = []
    other: list[tuple[int, int]] = []
    for d in dims:
        w //= d.size
        if isinstance(d, C.Lin):
            return None
        atom = d.atom
        if isinstance(atom, C.Sym) and atom.name == axis:
            rd.append(_RDim(level, w, d.size, d.stride, d.count))
        elif isinstance(atom, C.Win) and len(atom.inner) == 1 and isinstance(atom.inner[0], C.Dim) and \
                isinstance(atom.inner[0].atom, C.Sym) and atom.inner[0].atom.name == axis and \
                atom.inner[0].stride == 1 and atom.inner[0].offset == 0:
            rd.append(_RDim(level, w, d.size, d.stride, d.count))
        elif atom is not None and axis in dim_axes(d):
            return None
        else:
            other.append((w, d.size))
    return rd, other


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def configure(hw: HardwareProfile, axis: str, n: int, slice_: Mapping, time8: Mapping, packet8: Mapping
              ) -> tuple[VcgConfig | None, str]:
    """The configuration the manual's recipes give for reduce axis ``axis`` (size ``n``) placed in
    ``slice_``/``time8``/``packet8`` (the Way8 layout entering the Vector Engine), or ``None`` and why not."""
    got = [_r_dims(mp, lv, axis) for mp, lv in ((slice_, "Slice"), (time8, "Time"), (packet8, "Packet"))]
    if any(g is None for g in got):
        return None, f"{axis} shares a factor with another axis"
    (s_r, _s_o), (t_r, _t_o), (p_r, p_o) = [g for g in got if g is not None]
    v = hw.vector
    tdims = time8.canon
    if len(tdims) > v.vcg_counters:
        return None, f"Time has {len(tdims)} factors but the VCG has {v.vcg_counters} counters"
    # counters: every Time factor, innermost first
    limits: list[int] = []
    tweights: list[int] = []
    w = time8.size
    for d in tdims:
        w //= d.size
        tweights.append(w)
        limits.append(d.size)
    limits.reverse()
    tweights.reverse()
    tstride = {r.weight: r.stride for r in t_r}
    assign: list[str | int | None] = [None] * len(limits)
    strides = [0] * len(limits)
    v_p, stride_p = v.way8_lanes, v.way8_lanes
    gates = [DISABLED, DISABLED, DISABLED]
    if p_r:
        if len(p_r) > 1 or p_o:
            return None, f"{axis} must be the sole occupant of the packet prefix (another axis shares the Packet)"
        pr = p_r[0]
        if pr.stride != 1 or pr.weight != 1:
            return None, f"the part of {axis} in the Packet must be its innermost part (% k) in the packet prefix"
        stride_p, v_p = pr.count, n
        for i, tw in enumerate(tweights):
            if tw in tstride:
                assign[i], strides[i] = "p", tstride[tw]
    if s_r:
        ordered = sorted(s_r, key=lambda r: -r.weight)
        if any(not _pow2(r.weight) or not _pow2(r.size) for r in s_r):
            return None, f"the Slice factors of {axis} must sit on whole slice-id bits"
        if any(a.stride <= b.stride for a, b in zip(ordered, ordered[1:], strict=False)):
            return None, f"the Slice factors of {axis} must have increasing strides from inner to outer"
        sigma_s = min(r.stride for r in s_r)
        span = 1
        for r in s_r:
            span *= r.size
        mask = sum((r.size - 1) * r.weight for r in s_r)
        inner = [r.stride for r in t_r + p_r]
        if all(st < sigma_s for st in inner):  # standard: Slice outer, Time/Packet inner
            b = n // sigma_s
            match = sum(((b * sigma_s // r.stride) % r.size) * r.weight for r in s_r) if b < span else mask + 1
            gv = n % sigma_s
            if not p_r:
                for i, tw in enumerate(tweights):
                    if tw in tstride:
                        assign[i], strides[i] = 0, tstride[tw]
            else:
                gv = 1 if gv else 0
            gates[0] = Gate(mask, match, gv, 0)
        elif all(st > sigma_s for st in inner) and not p_r and sigma_s == 1:  # transposed: Slice inner
            rem = n % span
            match = sum(((rem // r.stride) % r.size) * r.weight for r in s_r)
            for i, tw in enumerate(tweights):
                if tw in tstride:
                    assign[i], strides[i] = 0, tstride[tw] // span
            gates[0] = Gate(mask, match, n // span, 1)
        else:
            return None, f"{axis} interleaves Time and Slice factors; the VCG needs per-slice thresholds"
    elif t_r and not p_r:
        for i, tw in enumerate(tweights):
            if tw in tstride:
                assign[i], strides[i] = 0, tstride[tw]
        gates[0] = Gate(0, 0, n, 0)
    return VcgConfig(tuple(limits), tuple(assign), tuple(strides), v_p, stride_p,
                     (gates[0], gates[1], gates[2])), ""


def way4_counts(vc8: IntArray, kind: str, w4: int) -> IntArray:
    """Carry 8-lane valid counts through the Narrow step (L6573–6582): split → low/high halves, trim → kept."""
    if kind == "split":
        low = np.minimum(vc8, w4)
        high = np.maximum(vc8 - w4, 0)
        both: IntArray = np.stack([low, high], axis=-1).reshape(vc8.shape[0], -1)
        return both
    out: IntArray = np.minimum(vc8, w4)
    return out


def check(hw: HardwareProfile, axis: str, n: int, slice_: Mapping, time8: Mapping, packet8: Mapping, kind: str,
          contributes: BoolArray, relevant: BoolArray) -> VcgResult:
    """Configure the VCG for the placement and verify it: its valid counts, narrowed like the stream, must
    include exactly the contributing elements wherever the element feeds a valid output.

    ``contributes`` and ``relevant`` have the Way4 shape (…, Slice, Time4, 4) with any leading levels.
    """
    config, reason = configure(hw, axis, n, slice_, time8, packet8)
    if config is None:
        return VcgResult(None, False, reason)
    vc8 = generate(config, slice_.size, time8.size)
    vc4 = way4_counts(vc8, kind, hw.vector.way4_lanes)
    lanes = np.arange(hw.vector.way4_lanes)
    hw_valid = lanes[None, None, :] < vc4[:, :, None]
    hw_full = np.broadcast_to(hw_valid, contributes.shape)
    wrong = relevant & (hw_full != contributes)
    if wrong.any():
        bad = tuple(int(k[0]) for k in np.nonzero(wrong))
        s, t, p = bad[-3], bad[-2], bad[-1]
        more = "counts" if hw_full[bad] else "drops"
        return VcgResult(config, False, f"the VCG's counts cannot follow this placement of {axis}: its valid count "
                                        f"{more} lane {p} of flit {t} in slice {s}")
    return VcgResult(config, True)
