"""A differential fuzzer of random kernels (issue 23; ARCHITECTURE principle 7): a seeded generator of small
programs — host → HBM moves, HBM → DM DMAs with padding, slice and cluster broadcasts, offsets and tiles, DM → DM
moves, streams with fetch, collect, an optional Vector Engine op, commit and commit_view — run three ways:

(a) with the fast paths as the environment leaves them and with every fast path off (:func:`visa.fastpaths.disabled`):
    every step's outcome (done, or refused with the same error class and message), the memories' bytes and
    written-state, and the schedule (track, name, start, cycles of every operation) must be identical;
(b) step by step, no byte (value or written-state) of DM or HBM outside the footprint the step's operations
    declare (their ``writes``) may change;
(c) a refused step changes no byte and records no operation.

Steps are drawn from legal shapes with random parameters; some of them are refused by the rules (a tile that does
not fit, a commit into a layout that cannot hold the stream, ...), which (c) then checks.  ``KNOWN`` lists the
issue-23 findings a check may still hit (fixed on another branch): a failure in such a step is recorded as known,
not raised.  The budget: ``VISA_FUZZ_CASES`` programs (a few in ``make test``, many in ``make fuzz``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from visa import AxisSet, BranchMode, Context, FxpBinaryOp, HostTensor, fastpaths, i8, i16, i32
from visa import dtypes as dt
from visa.errors import VisaError
from visa.tensors.handles import DmTensor
from visa.testing import _enter_kernel

#: Bytes of every DM slice the programs use (tensors are placed below it): the snapshots read this much.
DM_LIMIT = 1 << 13
#: Bytes of HBM the programs use.
HBM_LIMIT = 1 << 15
UNITS = 2 * 256

#: Findings of issue 23 (fixed on the i23b branch) that a step may still show: ``(kind, check) -> finding``.
KNOWN: dict[tuple[str, str], int] = {
    ("h2d-padded-left", "refused-changed"): 5,  # a refusal after the write (left padding the source lacks)
    ("h2d-padded-left", "bare-error"): 5,  # ... raised as a bare ValueError by the HBM cost model
    ("dma-tile", "outside-footprint"): 1,  # a DMA into a tile whose padded part is innermost writes the padding
    ("dma-slices", "outside-footprint"): 2,  # a DMA into some slices poisons the others' addresses
}


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
    known_findings: list[tuple[int, str, str]] = field(default_factory=list)


DTYPES = (i8, i16, i32)


def program(seed: int) -> list[Step]:
    """A random program of 3 to 7 steps (module docstring)."""
    r = random.Random(seed)
    dtype = r.choice(DTYPES)
    per = 32 // (dtype.size_bits // 8)  # elements of a 32-byte packet
    n_a = r.choice([2, 4, 8])
    n_b = per * r.choice([1, 2])
    steps: list[Step] = []
    tensors = 0
    for _ in range(r.randint(3, 7)):
        kinds = ["h2d", "h2d", "dma-slices", "dma-tile", "h2d-padded-left"] + (["stream", "stream", "dm2dm",
                                                                                  "stream-view"] if tensors else [])
        kind = r.choice(kinds)
        args: dict[str, Any] = {"dtype": dtype, "n_a": n_a, "n_b": n_b, "seed": r.randrange(1 << 30),
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
        self.ax = AxisSet(A=a["n_a"], B=a["n_b"], R=2, C=2, P=32 // (a["dtype"].size_bits // 8))
        self.ctx = Context()
        self.ctx.num_chips = 1
        _enter_kernel(self.ctx, self.ax.m["1"])
        self.hbm: list[Any] = []
        self.dm: list[Any] = []
        self.out = Outcome()

    # -- snapshots ------------------------------------------------------------------------------------------
    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """DM bytes ``[0, DM_LIMIT)`` of every slice and HBM ``[0, HBM_LIMIT)`` with their written-state (values
        where written, 0 where not: a never-written byte's value is nobody's)."""
        chip = self.ctx.memory.chip(0)
        dm = chip.dm
        units = np.arange(UNITS, dtype=np.int64)
        d_known = dm.known_bytes(0, DM_LIMIT).reshape(UNITS, DM_LIMIT)
        d = np.where(d_known, dm.read_units(units, 0, DM_LIMIT), 0)
        h, h_known = chip.hbm.gather(np.arange(HBM_LIMIT, dtype=np.int64))
        return d, d_known, np.where(h_known, h, 0), h_known

    def _within(self, before: tuple[np.ndarray, ...], after: tuple[np.ndarray, ...], ops: list[Any]) -> str | None:
        """None when every changed byte lies in the writes of ``ops``; else a description."""
        d_changed = (before[0] != after[0]) | (before[1] != after[1])
        h_changed = (before[2] != after[2]) | (before[3] != after[3])
        d_allowed = np.zeros_like(d_changed)
        h_allowed = np.zeros_like(h_changed)
        for op in ops:
            for s in op.writes.spans:
                if s.memory == "dm" and s.chips & 1:
                    units = [u for u in range(UNITS) if s.units < 0 or s.units >> u & 1]
                    for lo, hi in zip(s.lo.tolist(), s.hi.tolist(), strict=True):
                        d_allowed[units, max(lo, 0):min(hi, DM_LIMIT)] = True
                elif s.memory == "hbm" and s.chips & 1:
                    for lo, hi in zip(s.lo.tolist(), s.hi.tolist(), strict=True):
                        h_allowed[max(lo, 0):min(hi, HBM_LIMIT)] = True
        bad_d, bad_h = d_changed & ~d_allowed, h_changed & ~h_allowed
        if bad_d.any():
            u, b = np.argwhere(bad_d)[0]
            return f"DM slice {u} byte {b} changed outside the declared writes ({int(bad_d.sum())} bytes)"
        if bad_h.any():
            return f"HBM byte {int(np.flatnonzero(bad_h)[0])} changed outside the declared writes"
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
            except ValueError as err:  # not a refusal: a defect, unless a known finding
                finding = KNOWN.get((step.kind, "bare-error"))
                if finding is None:
                    raise
                outcome = f"failed {type(err).__name__}: {err}"
                self.out.known_findings.append((finding, step.kind, outcome))
            self.out.steps.append(f"{step.kind}: {outcome}")
            if before is not None:
                after = self.snapshot()
                ops = list(self.ctx.schedule.ops[n_ops:])
                if outcome != "done":
                    problem = "refused-changed" if any(not np.array_equal(x, y) for x, y in zip(
                        before, after, strict=True)) or ops else None
                    detail = "a refused step changed memory or recorded an operation"
                else:
                    detail = self._within(before, after, ops) or ""
                    problem = "outside-footprint" if detail else None
                if problem is not None:
                    finding = KNOWN.get((step.kind, problem))
                    if finding is None:
                        raise AssertionError(f"step {step.kind} {step.args}: {detail}")
                    self.out.known_findings.append((finding, step.kind, detail))
        d, dk, h, hk = self.snapshot()
        self.out.dm, self.out.hbm = (d, dk), (h, hk)
        self.out.schedule = [(op.track, op.name, op.start, op.cycles) for op in self.ctx.schedule.ops]
        return self.out

    def prepare(self, step: Step) -> None:
        """The part of a step no rule refuses: a DMA's source put in HBM (checked as the steps are, and left out
        of the refused part)."""
        a, m = step.args, self.ax.m
        if step.kind in ("h2d", "dma-slices", "dma-tile", "h2d-padded-left"):
            x = dt.random_values(a["dtype"], (a["n_a"], a["n_b"]), np.random.default_rng(a["seed"]))
            host = HostTensor.from_numpy(x, a["dtype"], m["A, B"], axes="A B")
            self.hbm.append(host.to_hbm(m["1"], m["A, B"], self.ctx.pdma, a["hbm"]))

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
            return
        if not self.dm:
            return
        src = self.dm[a["src"] % len(self.dm)]
        if step.kind == "dm2dm":
            lv = src.levels
            d = src.view().to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, DM_LIMIT // 2 + a["dm"] // 2)
            self.dm.append(d)
            return
        lv = src.levels
        per = 32 // (dtype.size_bits // 8)
        n_b = a["n_b"]
        s = ctx.main.begin(src.view()).fetch(dtype, m[f"B / {per}"], m[f"B % {per}"])
        c = s.collect(m[f"B / {per}"], m[f"B % {per}"])
        if a["vector"] and dtype is i32:
            c = (c.vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
                 .vector_fxp(FxpBinaryOp.AddFxp, a["constant"]).vector_final())
        if step.kind == "stream-view":
            target = self.dm[(a["src"] + 1) % len(self.dm)]
            c.commit_view(target.view())
            return
        d = c.commit(m["B"] if n_b == lv["Element"].size else lv["Element"], DM_LIMIT // 2 + a["dm"] // 2)
        assert isinstance(d, DmTensor)
        self.dm.append(d)


def run(steps: list[Step], check: bool = False) -> Outcome:
    """Run a program on a fresh context (and let the context go)."""
    out = Runner(steps, check).run()
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
