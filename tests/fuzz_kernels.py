"""A differential fuzzer of random kernels (issue 23; ARCHITECTURE principle 7): a seeded generator of small
programs — host → HBM moves, HBM → DM DMAs with padding, slice and cluster broadcasts, offsets and tiles, DM → DM
moves, streams with fetch (some with the packet's last lane padding masked, some widened to i32), collect, an
optional Vector Engine op (a constant added, or an inter-slice reduce broadcast over the slices), commit and
commit_view; streams through the Switch Engine (a slice transpose, L3264–3284); GEMMs through the TRF and the
Contraction Engine (fetch → collect → align → contract → accumulate → commit; i8, exact, or bf16 in the Reducer's
order, tests/reducer_order.py); and programs on two chips (every tensor over both, a ChipShuffle DMA, L7541) — run
three ways:

(a) with the fast paths as the environment leaves them and with every fast path off (:func:`visa.fastpaths.disabled`):
    every step's outcome (done, or refused with the same error class and message), the memories' bytes and
    written-state, and the schedule (track, name, start, cycles of every operation) must be identical;
(b) step by step, no byte (value or written-state) of DM or HBM outside the footprint the step's operations
    declare (their ``writes``) may change;
(c) a refused step changes no byte and records no operation.

Steps are drawn from legal shapes with random parameters; some of them are refused by the rules (a tile that does
not fit, a commit into a layout that cannot hold the stream, ...), which (c) then checks.  Anything else fails the
case: an error that is no refusal, a byte outside a footprint, a difference between the fast and the reference
paths.  The budget: ``VISA_FUZZ_CASES`` programs (a few in ``make test``, many in ``make fuzz``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from tests.reducer_order import manual_order, wide_range
from visa import (
    AccumulationKind,
    AxisSet,
    BranchMode,
    Context,
    FxpBinaryOp,
    HostTensor,
    InterSliceReduceOpI32,
    IntraSliceReduceOpI32,
    PadValue,
    SwitchConfig,
    TrfAddress,
    bf16,
    fastpaths,
    i8,
    i16,
    i32,
)
from visa import dtypes as dt
from visa.errors import VisaError
from visa.memory import owed
from visa.memory.rowpool import ROW_POOL
from visa.tensors.handles import DmTensor
from visa.testing import _enter_kernel

#: Bytes of every DM slice the programs use (tensors are placed below it): the snapshots read this much.
DM_LIMIT = 1 << 13
#: Bytes of HBM the programs use.
HBM_LIMIT = 1 << 15
UNITS = 2 * 256
#: The GEMM steps' sizes: I rows over 2 slices, J columns (TRF rows), K the contracted axis (one 64-byte i8 packet).
GEMM = {"I": 16, "J": 8, "K": 64}

def _gemm_dtype(a: dict[str, Any]) -> Any:
    """The GEMM step's operand type: i8 or bf16, from the step's seed (a draw of its own would change every
    program the seeds name)."""
    return bf16 if a["seed"] % 2 else i8


def budget(default: int) -> int:
    """Programs to run: ``VISA_FUZZ_CASES`` when set, else ``default``."""
    return int(os.environ.get("VISA_FUZZ_CASES", default))


@dataclass
class Step:
    """One step: its kind and its parameters (all drawn by :func:`program`)."""

    kind: str
    args: dict[str, Any]


@dataclass
class Outcome:
    """What a run saw: each step's outcome, and at the end the memories and the schedule."""

    steps: list[str] = field(default_factory=list)
    dm: tuple[np.ndarray, np.ndarray] | None = None
    hbm: tuple[np.ndarray, np.ndarray] | None = None
    schedule: list[tuple[str, str, int, int]] = field(default_factory=list)


DTYPES = (i8, i16, i32)


def program(seed: int) -> list[Step]:
    """A random program of 3 to 7 steps on one chip or two (module docstring)."""
    r = random.Random(seed)
    dtype = r.choice(DTYPES)
    per = 32 // (dtype.size_bits // 8)  # elements of a 32-byte packet
    n_a = r.choice([2, 4, 8])
    n_b = per * r.choice([1, 2])
    chips = r.choice([1, 1, 2])
    steps: list[Step] = []
    tensors = 0
    for _ in range(r.randint(3, 7)):
        kinds = ["h2d", "h2d", "dma-slices", "dma-tile", "h2d-padded-left", "gemm"]
        if tensors:
            kinds += ["stream", "stream", "dm2dm", "stream-view", "switch"] + (["shuffle"] if chips > 1 else [])
        kind = r.choice(kinds)
        args: dict[str, Any] = {"dtype": dtype, "n_a": n_a, "n_b": n_b, "chips": chips, "seed": r.randrange(1 << 30),
                                "hbm": 1024 * r.randrange(0, HBM_LIMIT // 1024 - 4),
                                "dm": 64 * r.randrange(0, (DM_LIMIT // 2) // 64),
                                "first": r.choice([0, 3, 64, 128]), "cluster": r.choice(["1 # 2", "C"]),
                                "slices": r.choice(["plain", "broadcast", "offset"]),
                                "pad": r.choice([0, per]), "src": r.randrange(1 << 10), "vector": r.random() < 0.5,
                                "constant": r.randrange(-100, 100), "half": r.choice([0, 1]),
                                "time": r.choice(["B / P", "A"])}
        if kind.startswith("h2d") or kind.startswith("dma"):
            tensors += 1
        steps.append(Step(kind, args))
    return steps


def fetch_variant(a: dict[str, Any]) -> str:
    """How a stream step fetches: ``plain``, ``masked`` (the packet's last lane padding, masked) or ``widen`` (an
    i8 or i16 source fetched as i32), from the step's data seed (so the programs drawn stay as they were)."""
    return ("plain", "masked", "widen")[(a["seed"] >> 1) % 3]


def padded_variant(a: dict[str, Any]) -> bool:
    """Does a plain stream step fetch a padded packet instead (half the packet's lanes hold elements, the rest
    padding no masking stage blanks: the sub context, L1870; ``fetch.padded-known``, and in a pooled buffer
    ``fetch.padded-cut-read``)?  From the step's data seed (the programs drawn stay as they were)."""
    return fetch_variant(a) == "plain" and (a["seed"] >> 4) % 3 == 0


def pooled_small(steps: list[Step]) -> bool:
    """Does the program lend its small stream buffers from the row pool, as a large kernel's are (the pool's
    ``least`` lowered to 0 for its run: :mod:`visa.memory.rowpool`, and the paths that read a new pooled buffer's
    zeros, ``fetch.padded-cut-read``)?  From the first step's seed."""
    return bool((steps[0].args["seed"] >> 6) % 2)


def wide_gemm(a: dict[str, Any]) -> bool:
    """Is a bf16 GEMM step the GEMM example's (examples/gemm.py) in small: 32 columns ``V``, 8 a TRF Row (the
    Rows are 1, 2, 4 or 8: L4160–4168) and 4 per Row, the activations broadcast over the 4 by the fetch — weight
    blocks 4 to a position, 32 lanes, in runs the pair dot product takes (``contraction.float-tree32-bf16dp``,
    on a CPU with VDPBF16PS)?  From the step's seed (the programs drawn stay as they were)."""
    return _gemm_dtype(a) is bf16 and bool((a["seed"] >> 5) % 2)


def cast_gemm(a: dict[str, Any]) -> bool:
    """Does a wide GEMM step (:func:`wide_gemm`) cast its f32 sums to bf16 before the commit, as the GEMM example
    does (the Cast Engine, round to nearest even: ``cast.*``, ``commit.cast-lanes``)?  From the step's seed."""
    return wide_gemm(a) and bool((a["seed"] >> 8) % 2)


def _gemm_places(a: dict[str, Any]) -> tuple[int, int]:
    """A GEMM step's HBM and DM addresses (X there, W 2 KiB or 1 KiB after; the wide W's 4 KiB below the limits)."""
    return ((a["hbm"] // 2048 * 1024, a["dm"] // 128 * 64) if wide_gemm(a) else (a["hbm"], a["dm"]))


def intra_variant(a: dict[str, Any]) -> bool:
    """Does a plain stream step (of an i32 tensor; not one reducing over the slices) reduce within each slice (four
    lanes a packet, trimmed to Way4, reduced over ``B`` by ``Max``, ``Min`` or ``AddSat``, padded back to Way8:
    L5278–5573; ``vector.intra-*``, ``vector.reduce-shortcuts``, ``vector.any-lanes``)?  From the step's seed."""
    return (fetch_variant(a) == "plain" and not padded_variant(a) and not (a["vector"] and inter_variant(a))
            and bool((a["seed"] >> 9) % 2))


def read_back(a: dict[str, Any]) -> bool:
    """Does an ``h2d`` step on one chip, the program's last, read its HBM tensor back to the host after its DMA (a
    PCIe DMA, L197: ``host.staged-view``) and check it against what the host wrote?  From the step's seed (last
    only: a read earlier changed what the later steps' DMAs found, and the paths they took)."""
    return a["chips"] == 1 and bool((a["seed"] >> 7) % 2)


def inter_variant(a: dict[str, Any]) -> bool:
    """Does a stream step's Vector Engine op reduce over the slices (an inter-slice reduce broadcast over a new
    slice axis) instead of adding a constant?  From the step's data seed (the programs drawn stay as they were)."""
    return bool((a["seed"] >> 3) % 2)


def _slices(a: dict[str, Any]) -> str:
    n_a, first = a["n_a"], a["first"]
    if a["slices"] == "broadcast":  # R copies of A over the slices (R not in the source: a DMA broadcast)
        return "[R, A] # 256"
    if a["slices"] == "offset" and first:
        return f"# {first} + A + # {256 - first - n_a}"
    return "A # 256"


class Runner:
    """Runs a program on a fresh context; with ``check``, (b) and (c) after every step."""

    def __init__(self, steps: list[Step], check: bool) -> None:
        self.steps, self.check = steps, check
        a = steps[0].args
        self.chips = a["chips"]
        self.ax = AxisSet(A=a["n_a"], B=a["n_b"], R=2, C=2, P=32 // (a["dtype"].size_bits // 8), X=self.chips,
                          I=GEMM["I"], J=GEMM["J"], V=4 * GEMM["J"], K=GEMM["K"], Y=a["n_a"])
        self.chip = self.ax.m["X"] if self.chips > 1 else self.ax.m["1"]
        self.ctx = Context()
        self.ctx.num_chips = self.chips
        _enter_kernel(self.ctx, self.chip)
        self.hbm: list[Any] = []
        self.dm: list[Any] = []
        self.operands: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))  # the last GEMM's X and W
        self.written = np.zeros(0)  # what the last DMA step's source holds on each chip
        self.out = Outcome()

    # -- snapshots ------------------------------------------------------------------------------------------
    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """DM bytes ``[0, DM_LIMIT)`` of every slice of every chip (``(chip · UNITS + unit, byte)``) and HBM
        ``[0, HBM_LIMIT)`` of every chip with their written-state (values where written, 0 where not: a
        never-written byte's value is nobody's)."""
        units = np.arange(UNITS, dtype=np.int64)
        parts: list[list[np.ndarray]] = [[], [], [], []]
        for c in range(self.chips):
            chip = self.ctx.memory.chip(c)
            dm = chip.dm
            d_known = dm.known_bytes(0, DM_LIMIT).reshape(UNITS, DM_LIMIT)
            h, h_known = chip.hbm.gather(np.arange(HBM_LIMIT, dtype=np.int64))
            for k, arr in enumerate((np.where(d_known, owed.read_units(dm, units, 0, DM_LIMIT), 0), d_known,
                                     np.where(h_known, h, 0), h_known)):
                parts[k].append(arr)
        d, dk, h, hk = (np.concatenate(p) for p in parts)
        return d, dk, h.reshape(self.chips, HBM_LIMIT), hk.reshape(self.chips, HBM_LIMIT)

    def _within(self, before: tuple[np.ndarray, ...], after: tuple[np.ndarray, ...], ops: list[Any]) -> str | None:
        """None when every changed byte lies in the writes of ``ops``; else a description."""
        d_changed = (before[0] != after[0]) | (before[1] != after[1])
        h_changed = (before[2] != after[2]) | (before[3] != after[3])
        d_allowed = np.zeros_like(d_changed)
        h_allowed = np.zeros_like(h_changed)
        for op in ops:
            for s in op.writes.spans:
                for c in (c for c in range(self.chips) if s.chips >> c & 1):
                    if s.memory == "dm":
                        units = [c * UNITS + u for u in range(UNITS) if s.units < 0 or s.units >> u & 1]
                        for lo, hi in zip(s.lo.tolist(), s.hi.tolist(), strict=True):
                            d_allowed[units, max(lo, 0):min(hi, DM_LIMIT)] = True
                    elif s.memory == "hbm":
                        for lo, hi in zip(s.lo.tolist(), s.hi.tolist(), strict=True):
                            h_allowed[c, max(lo, 0):min(hi, HBM_LIMIT)] = True
        bad_d, bad_h = d_changed & ~d_allowed, h_changed & ~h_allowed
        if bad_d.any():
            u, b = np.argwhere(bad_d)[0]
            return (f"DM chip {u // UNITS} slice {u % UNITS} byte {b} changed outside the declared writes "
                    f"({int(bad_d.sum())} bytes)")
        if bad_h.any():
            c, b = np.argwhere(bad_h)[0]
            return f"HBM chip {c} byte {b} changed outside the declared writes"
        return None

    # -- steps ----------------------------------------------------------------------------------------------
    def run(self) -> Outcome:
        for step in self.steps:
            self.prepare(step)
            before = self.snapshot() if self.check else None
            n_ops = len(self.ctx.schedule.ops)
            try:
                self.do(step)
                outcome = "done"
            except VisaError as err:
                outcome = f"refused {type(err).__name__}: {err.message}"
            self.out.steps.append(f"{step.kind}: {outcome}")
            if before is not None:
                after = self.snapshot()
                ops = list(self.ctx.schedule.ops[n_ops:])
                if outcome != "done":
                    assert not ops and all(np.array_equal(x, y) for x, y in zip(before, after, strict=True)), (
                        f"step {step.kind} {step.args}: a refused step changed memory or recorded an operation")
                else:
                    detail = self._within(before, after, ops)
                    assert detail is None, f"step {step.kind} {step.args}: {detail}"
        d, dk, h, hk = self.snapshot()
        self.out.dm, self.out.hbm = (d, dk), (h, hk)
        self.out.schedule = [(op.track, op.name, op.start, op.cycles) for op in self.ctx.schedule.ops]
        return self.out

    def host(self, x: np.ndarray, dtype: Any, element: str, axes: str, address: int) -> tuple[Any, np.ndarray]:
        """``x`` (without the chip axis) on every chip of the program (chip c holding ``x + c``, wrapped) in HBM,
        and what each chip holds (``(chips, *x.shape)``)."""
        m = self.ax.m
        x = np.stack([x + np.asarray(c, dtype=x.dtype) for c in range(self.chips)])
        if self.chips > 1:
            host = HostTensor.from_numpy(x, dtype, m[f"X, {element}"], axes=f"X {axes}")
        else:
            host = HostTensor.from_numpy(x[0], dtype, m[element], axes=axes)
        return host.to_hbm(self.chip, m[element], self.ctx.pdma, address), x

    def prepare(self, step: Step) -> None:
        """The part of a step no rule refuses: a DMA's source put in HBM (checked as the steps are, and left out
        of the refused part)."""
        a = step.args
        rng = np.random.default_rng(a["seed"])
        if step.kind in ("h2d", "dma-slices", "dma-tile", "h2d-padded-left"):
            x = dt.random_values(a["dtype"], (a["n_a"], a["n_b"]), rng)
            hbm, self.written = self.host(x, a["dtype"], "A, B", "A B", a["hbm"])
            self.hbm.append(hbm)
        elif step.kind == "gemm":
            kind = _gemm_dtype(a)
            jn = "V" if wide_gemm(a) else "J"
            hbm = _gemm_places(a)[0]
            x = dt.random_values(kind, (GEMM["I"], GEMM["K"]), rng)
            w = dt.random_values(kind, (self.ax.size(jn), GEMM["K"]), rng)
            if kind is bf16:  # (products of many magnitudes: their sums round differently in other orders)
                x, w = wide_range(x, rng), wide_range(w, rng)
            (x_hbm, xs), (w_hbm, ws) = (self.host(x, kind, "I, K", "I K", hbm),
                                        self.host(w, kind, f"{jn}, K", f"{jn} K", hbm + 2048))
            self.hbm += [x_hbm, w_hbm]
            self.operands = (xs, ws)

    def do(self, step: Step) -> None:
        a, m, ctx = step.args, self.ax.m, self.ctx
        dtype = a["dtype"]
        if step.kind in ("h2d", "dma-slices", "dma-tile", "h2d-padded-left"):
            element = "B" if not a["pad"] else f"B # {a['n_b'] + a['pad']}"
            if step.kind == "h2d-padded-left":
                element = f"# {a['pad'] or 8} + B"
            hbm = self.hbm[-1]
            if step.kind == "dma-tile" and self.dm:  # into a tile of a DM tensor made before
                target = self.dm[a["src"] % len(self.dm)]
                half = max(1, target.levels["Element"].size // 2)
                inner = f"B = {half} # {2 * half}" if a["pad"] else f"B = {half}"  # (the manual's padded tile, L813)
                view = target.view().tile(m["B"], half, m[inner], half * a["half"])
                hbm.view().tile(m["B"], half, m[f"B = {half}"], 0).to_dm_view(view, ctx.tdma)
                return
            d = hbm.to_dm(m[a["cluster"]], m[_slices(a)], m[element], ctx.tdma, a["dm"])
            self.dm.append(d)
            if step.kind == "h2d" and read_back(a) and step is self.steps[-1]:  # (last: the steps before run as drawn)
                back = hbm.to_host(m["A, B"], ctx.pdma).numpy(axes="A B")
                assert np.array_equal(back, self.written[0]), "the HBM tensor read back differs from the host's"
            return
        if step.kind == "gemm":
            self.gemm(a)
            return
        if not self.dm:
            return
        src = self.dm[a["src"] % len(self.dm)]
        lv = src.levels
        if step.kind == "dm2dm":
            d = src.view().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, DM_LIMIT // 2 + a["dm"] // 2)
            self.dm.append(d)
            return
        if step.kind == "shuffle":  # destination chip c receives chip p[c]'s bytes (L7541)
            d = src.view().chip_shuffle([1, 0]).to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma,
                                                      DM_LIMIT // 2 + a["dm"] // 2)
            self.dm.append(d)
            return
        dtype = src.dtype  # (a GEMM's tensors are i8 and i32, or bf16 and f32, whatever the program's type)
        per = 32 // (dtype.size_bits // 8)
        n_b = a["n_b"]
        time, packet = m[f"B / {per}"], m[f"B % {per}"]
        variant = fetch_variant(a)
        if step.kind == "stream" and dtype is i32 and intra_variant(a):  # a reduce within each slice, over B
            time, packet = m["B / 4"], m["B % 4 # 8"]
            op = (IntraSliceReduceOpI32.Max, IntraSliceReduceOpI32.Min, IntraSliceReduceOpI32.AddSat)[a["half"] + (
                a["seed"] >> 10) % 2]
            c = (ctx.main.begin(src.view()).fetch(i32, time, packet).collect(time, packet).vector_init()
                 .vector_intra_slice_branch(BranchMode.Unconditional).vector_trim_way4(m["B % 4"])
                 .vector_intra_slice_reduce("B", m["1"], m["1 # 4"], op).vector_pad_way8(m["1 # 8"]).vector_final())
            d = c.commit(m["1 # 8"], DM_LIMIT // 2 + a["dm"] // 2)
            assert isinstance(d, DmTensor)
            self.dm.append(d)
            return
        if step.kind == "stream" and padded_variant(a):  # half the lanes padding, not masked (fetch.padded-known)
            half = max(1, per // 2)
            time, packet = m[f"B / {half}"], m[f"B % {half} # {per}"]
            c = ctx.sub.begin(src.view()).fetch(dtype, time, packet).collect(time, packet)
            d = c.commit(m["B"] if n_b == lv["Element"].size else lv["Element"], DM_LIMIT // 2 + a["dm"] // 2)
            assert isinstance(d, DmTensor)
            self.dm.append(d)
            return
        if variant == "masked" and step.kind != "switch":  # the last lane padding, masked (fetch.masked-known)
            packet = m[f"B % {per} = {per - 1} # {per}"]
            s = ctx.main.begin(src.view()).fetch(dtype, time, packet, pad_value=PadValue.Zero)
        elif variant == "widen" and dtype in (i8, i16) and step.kind != "switch":  # widened to i32 (fetch.widen-read)
            s = ctx.main.begin(src.view()).fetch(i32, time, packet)
            time, packet, dtype = m[f"B / {per}, B % {per} / 8"], m["B % 8"], i32  # (a flit of 8 i32 a step)
        else:
            s = ctx.main.begin(src.view()).fetch(dtype, time, packet)
        if step.kind == "switch":  # slice s2·n + a1·h + a0 goes to slice (s2, a0, a1) (Transpose, L3264–3284)
            h = max(1, a["n_a"] // 2)
            text = str(lv["Slice"])
            split = f"A % {h}, A / {h}"
            text = text.replace("[R, A]", f"[R, {split}]") if "[R, A]" in text else text.replace("A", f"[{split}]", 1)
            s = s.switch(m[text], time, SwitchConfig.Transpose(slice1=a["n_a"] // h, slice0=h))
        c = s.collect(time, packet)
        if a["vector"] and dtype is i32 and inter_variant(a) and step.kind != "switch":
            # the sum over the slices holding A, left on as many slices (Y, broadcast: L6654–6672): every slice of
            # the sum holds the same row (vector.inter-shared, and the commit of shared rows)
            slice2 = m[str(lv["Slice"]).replace("A", "Y", 1)]
            c = c.vector_init().vector_inter_slice_reduce(slice2, time, InterSliceReduceOpI32.Add).vector_final()
        elif a["vector"] and dtype is i32:
            c = (c.vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
                 .vector_fxp(FxpBinaryOp.AddFxp, a["constant"]).vector_final())
        if step.kind == "stream-view":
            target = self.dm[(a["src"] + 1) % len(self.dm)]
            c.commit_view(target.view())
            return
        d = c.commit(m["B"] if n_b == lv["Element"].size else lv["Element"], DM_LIMIT // 2 + a["dm"] // 2)
        assert isinstance(d, DmTensor)
        self.dm.append(d)

    def gemm(self, a: dict[str, Any]) -> None:
        """``C[I, J] = Σ_K X[I, K] · W[J, K]`` in i8 (exact) or bf16 (f32 sums in the Reducer's order, L4386–4431):
        X over ``I / 8`` slices, W broadcast to them and loaded into the TRF (Row ``J``) by the sub context, the
        main context's stream aligned, contracted and accumulated (Interleaved), committed to DM."""
        m, ctx = self.ax.m, self.ctx
        kind = _gemm_dtype(a)
        wide = wide_gemm(a)
        jn = "V" if wide else "J"  # (the columns: 8, or 32 as 8 Rows of 4)
        n = 64 if kind is i8 else 32  # the elements of a 64-byte computation packet (the tree's products)
        flit = n // 2
        x_hbm, w_hbm = self.hbm[-2], self.hbm[-1]
        rows = GEMM["I"] // 2
        slices = m[f"I / {rows} # 256"]
        dm = _gemm_places(a)[1]
        x_dm = x_hbm.to_dm(m[a["cluster"]], slices, m[f"I % {rows}, K"], ctx.tdma, dm)
        w_dm = w_hbm.to_dm(m[a["cluster"]], slices, m["V % 8, V / 8, K" if wide else "J, K"], ctx.tdma, dm + 1024)
        self.dm += [x_dm, w_dm]
        # the weights' Rows and the columns each Row holds; the activations' time (broadcast over the blocks)
        row, per_row, time = ("V % 8", "V / 8, ", f"I % {rows}, V / 8") if wide else ("J", "", f"I % {rows}")
        trf = (ctx.sub.begin(w_dm.view()).fetch(kind, m[row + (", V / 8" if wide else "")], m["K"])
               .collect(m[f"{row}, {per_row}K / {flit}"], m[f"K % {flit}"])
               .to_trf(m[row], m[f"{per_row}K"], TrfAddress.Full))
        c = (ctx.main.begin(x_dm.view()).fetch(kind, m[time], m["K"])
             .collect(m[f"{time}, K / {flit}"], m[f"K % {flit}"])
             .align(m[f"{time}, K / {n}"], m[f"K % {n}"], trf).contract(m["1"])
             .accumulate(m[time], m[row], AccumulationKind.Interleaved))
        if cast_gemm(a):  # (the GEMM example's cast of the sums to bf16: the Cast Engine, L2169–2180)
            c = c.cast(bf16, m["V % 8 # 16"])
        c = c.commit(m[f"I % {rows}, {jn}"], DM_LIMIT // 2 + a["dm"] // 2)
        self.dm.append(c)
        axes = ("X " if self.chips > 1 else "") + ("C " if a["cluster"] == "C" else "") + f"I {jn}"
        if kind is bf16 and cast_gemm(a):  # f32, bit for bit, then rounded to bf16 (to nearest, ties to even)
            want = manual_order(*self.operands, n).astype(ml_dtypes.bfloat16).view(np.uint16)
            got = np.ascontiguousarray(c.logical(axes=axes)).view(np.uint16)
        elif kind is bf16:  # f32, bit for bit
            want = manual_order(*self.operands, n).view(np.uint32)
            got = np.ascontiguousarray(c.logical(axes=axes)).view(np.uint32)
        else:
            x, w = (v.astype(np.int64) for v in self.operands)  # (chips, I, K) and (chips, J, K)
            got = c.logical(axes=axes).astype(np.int64)  # (with two clusters, each computes the same)
            want = (x @ w.transpose(0, 2, 1)).astype(np.int32).astype(np.int64)  # (i32 results wrap)
        assert np.array_equal(got.reshape(self.chips, -1, *want.shape[1:]), np.broadcast_to(
            want[:, None], (self.chips, got.size // want.size, *want.shape[1:]))), "GEMM differs from numpy"


def run(steps: list[Step], check: bool = False) -> Outcome:
    """Run a program on a fresh context (and let the context go); with :func:`pooled_small`, its stream buffers
    lent by the row pool whatever their size."""
    least = ROW_POOL.least
    small = pooled_small(steps)
    if small:
        ROW_POOL.least = 0
    try:
        out = Runner(steps, check).run()
    finally:
        ROW_POOL.least = least
        if small:  # (the small buffers it lent stay out of later programs: a fresh buffer is what a path asks)
            ROW_POOL.clear()
    gc.collect()
    return out


@contextlib.contextmanager
def reference_mode() -> Iterator[None]:
    """Every fast path off."""
    with fastpaths.disabled():
        yield


def compare(seed: int) -> Outcome:
    """Checks (a), (b), (c) on the program of ``seed``; returns the checked run's outcome."""
    steps = program(seed)
    fast = run(steps)
    with reference_mode():
        ref = run(steps)
    assert fast.steps == ref.steps, (seed, fast.steps, ref.steps)
    assert fast.schedule == ref.schedule, (seed, "schedules differ")
    for mine, theirs, name in ((fast.dm, ref.dm, "DM"), (fast.hbm, ref.hbm, "HBM")):
        assert mine is not None and theirs is not None
        assert np.array_equal(mine[1], theirs[1]), (seed, f"{name} written-state differs")
        assert np.array_equal(mine[0], theirs[0]), (seed, f"{name} bytes differ")
    return run(steps, check=True)
