"""A tour of the Fetch and Commit Engines: the manual's four kernel examples (L7611–7981), checked.

Run with ``visa run examples/fetch_commit.py``.  Each example moves an ``f8e4m3`` tensor DM → fetch →
collect → commit → DM and checks the data and the cycle counts the manual gives:

1. axis permutation ``[A, B, C] → [B, A, C]``: 15 cycles (L7614–7708);
2. full-flit commit ``[A, [B, C]]``: 3 cycles, "5× faster" (L7709–7775);
3. tail padding of ``A = 65``: padding 7 / 15 / 23 / 31 gives 6 / 10 / 22 / 6 cycles (L7776–7882), and the
   32-byte commit into the 23-padded layout is refused because "writes never go past the tensor boundary"
   (L7883–7897);
4. segmentation of a 64 KB tensor into two executions of 1024 cycles (L7898–7981).

Spelling.  The manual's ``f8`` (L7618) is ``f8e4m3``, and ``.commit(addr)`` passes the Element Rust infers from
the ``let`` annotation (L7620).  The manual's examples write Chip, Cluster and Slice as
``m![1]``; a DM tensor needs Cluster 2 and Slice 256 (L1079–1084), so they are ``m["1 # 2"]`` and ``m["1 # 256"]``
here (only slice 0 of cluster 0 holds data; the commit's slice bitmap enables just that slice).  In this
chapter ``# n`` often means "add n bytes" (``C # 6`` is an 8-byte packet); visa's ``#`` always pads *to* n,
so ``C # 6`` is written ``C # 8``, ``C # 30`` is ``C # 32``, ``[B, C] # 22`` is ``[B, C] # 32``.
``B * (A # 72) / 24`` is ``B, [A # 72] / 24`` and ``A % 24`` is ``[A # 72] % 24``; ``slice(A, 0..1024)`` is a
tile and ``A @ 1024`` its second half.
Inputs are put in DM with :func:`visa.testing.place_dm` (the DMA is not part of these examples).

Departures.  Example 3 gives code for dummy 7 and 31 only (L7782–7793) and the configuration for 23
(L7894–7895); all four paddings of the table (L7864–7867) run the same pattern here, and dummy 7's 24-byte
step is fetched as a packet padded to 32 bytes (see :func:`tail_padding`).  Example 4 commits its two segments
(L7905–7915) into the two halves of one output tensor ``m![A, B]`` at 256K, as the manual describes its output
(L7925–7930, L7949–7951), with ``commit_view`` on a tile of it instead of two tensors at 256K and 256K + 32K.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from visa import AxisSet, Context, DmTensor, device, f8e4m3, launch
from visa.dtypes import random_values
from visa.errors import AddressError
from visa.testing import place_dm

#: A DM tensor of any layout (the examples build their mappings from explicit axis sets).
Dm: TypeAlias = DmTensor[Any, Any, Any, Any, Any]


@dataclass
class Run:
    """What one example produced: the engines' cycles, the pass's streaming cycles (its slowest engine: the count
    the manual gives) and the whole command's cycles (with its issue and fill, docs/cost-model.md)."""

    name: str
    ok: bool
    cycles: dict[str, int]
    pass_cycles: int
    configs: dict[str, str]

    @property
    def busy(self) -> int:
        """The pass's streaming cycles: its slowest engine's (the manual's count)."""
        return max(self.cycles.values())


def _run(name: str, ok: bool, op: Any) -> Run:
    return Run(name, ok, {r.engine: r.cycles for r in op.engines}, op.cycles,
               {r.engine: r.config for r in op.engines})


def _last_pass(ctx: Context, name: str, ok: bool) -> Run:
    return _run(name, ok, ctx.schedule.ops[-1])


def _input(ctx: Context, ax: AxisSet, element: str, shape: tuple[int, ...], axes: str, seed: int) -> Dm:
    m = ax.m
    values = random_values(f8e4m3, shape, np.random.default_rng(seed))
    return place_dm(ctx, values, f8e4m3, m["1"], m["1 # 2"], m["1 # 256"], m[element], 0, axes=axes)


# ------------------------------------------------------------------------------------------------ example 1

AX1 = AxisSet(A=3, B=5, C=2)


@device(chip=1)
def permute(ctx: Context, x: Dm) -> Dm:
    """Example 1 (L7618–7627): the write sequencer ``[A=3:8, B=5:24, C=8:1] @ 1024 / 8`` permutes A and B."""
    m = AX1.m
    return (ctx.main.begin(x.view())
            .fetch(f8e4m3, m["A, B"], m["C # 8"])      # Time [A, B], Packet C padded to 8 bytes
            .collect(m["A, B"], m["C # 32"])           # pad to a 32-byte flit (forwarding switch implied)
            .commit(m["B, A, C # 8"], 1024))           # 8-byte writes into the permuted layout


def example1() -> Run:
    """Run example 1 and check the permuted bytes at 1024 (L7690–7694)."""
    ctx = Context.acquire()
    x = _input(ctx, AX1, "A, B, C", (3, 5, 2), "A B C", 1)
    out = launch(permute, ctx, x)
    ok = np.array_equal(out.logical(axes="A B C"), x.logical(axes="A B C"), equal_nan=True)
    # the bytes: out[1024 + 24 b + 8 a + c] = x[a, b, c] (L7688-7693)
    raw = ctx.memory.chip(0).dm.data[0, 0]
    xin = x.logical(axes="A B C").view(np.uint8)
    ok &= all(raw[1024 + 24 * b + 8 * a + c] == xin[a, b, c] for a in range(3) for b in range(5) for c in range(2))
    return _last_pass(ctx, "1: axis permutation", bool(ok))


# ------------------------------------------------------------------------------------------------ example 2


@device(chip=1)
def full_flit(ctx: Context, x: Dm) -> Dm:
    """Example 2 (L7713–7721): 32-byte packets and full-flit commits ``[A=3:32, [B,C]=32:1] @ 1024 / 32``."""
    m = AX1.m
    return (ctx.main.begin(x.view())
            .fetch(f8e4m3, m["A"], m["[B, C] # 32"])    # Time A, Packet [B, C] padded to 32 bytes
            .collect(m["A"], m["[B, C] # 32"])          # already one flit
            .commit(m["A, [B, C] # 32"], 1024))


def example2() -> Run:
    """Run example 2 and check the committed tensor."""
    ctx = Context.acquire()
    x = _input(ctx, AX1, "A, B, C", (3, 5, 2), "A B C", 2)
    out = launch(full_flit, ctx, x)
    ok = np.array_equal(out.logical(axes="A B C"), x.logical(axes="A B C"), equal_nan=True)
    return _last_pass(ctx, "2: full-flit commit", bool(ok))


# ------------------------------------------------------------------------------------------------ example 3

AX3 = AxisSet(A=65, B=2)
#: dummy → (row length P = 65 + dummy, bytes per write): the table of L7864–7867
TAIL = {7: (72, 24), 15: (80, 16), 23: (88, 8), 31: (96, 32)}


def tail_padding(ctx: Context, x: Dm, dummy: int) -> Dm:
    """Example 3 (L7780–7867): commit ``A = 65`` with ``dummy`` bytes of tail padding per row.

    The stream reads ``step`` bytes of a row per time step (Time ``[B, (A # P) / step]``).  Where ``step`` is
    not a fetch size of the context (24 bytes: RNGD fetches 1, 2, 4, 8, 16 or 32, L1758), the fetch pads its
    packet to 32 bytes (the "padding packets" optimisation, L1812–1842), so that one 32-byte fetch serves
    each step; the commit truncates each flit back to ``step`` bytes (``commit_in_size``, L2187–2236).
    """
    m = AX3.m
    p, step = TAIL[dummy]
    time, inner = m[f"B, [A # {p}] / {step}"], f"[A # {p}] % {step}"
    packet = m[inner] if step in ctx.hw.fetch.main_fetch_sizes else m[f"{inner} # 32"]
    return (ctx.main.begin(x.view())
            .fetch(f8e4m3, time, packet)
            .collect(time, m[f"{inner} # 32"])
            .commit(m[f"B, A # {p}"], 1024))


def example3(dummy: int) -> Run:
    """Run example 3 with ``dummy`` bytes of padding and check the rows at 1024."""
    ctx = Context.acquire()
    ctx.num_chips = 1
    x = _input(ctx, AX3, "B, A # 72", (2, 65), "B A", 3)   # the input of L7780: m![B, A # 72]
    out = tail_padding(ctx, x, dummy)
    ok = np.array_equal(out.logical(axes="B A"), x.logical(axes="B A"), equal_nan=True)
    p, _ = TAIL[dummy]
    raw = ctx.memory.chip(0).dm.data[0, 0]
    xin = x.logical(axes="B A").view(np.uint8)
    ok &= bool(np.array_equal(raw[1024:1024 + 2 * p].reshape(2, p)[:, :65], xin))   # out[1024 + b P + a]
    return _last_pass(ctx, f"3: tail padding {dummy}", bool(ok))


def example3_refused() -> str:
    """L7883–7897: 32-byte commits into the 23-padded layout would write past the tensor: refused."""
    m = AX3.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    x = _input(ctx, AX3, "B, A # 72", (2, 65), "B A", 3)
    stream = (ctx.main.begin(x.view()).fetch(f8e4m3, m["B, [A # 96] / 32"], m["[A # 96] % 32"])
              .collect(m["B, [A # 96] / 32"], m["[A # 96] % 32"]))
    try:
        stream.commit(m["B, A # 88"], 1024)
    except AddressError as err:
        return str(err)
    raise AssertionError("a commit past the tensor's boundary was accepted")


# ------------------------------------------------------------------------------------------------ example 4

AX4 = AxisSet(A=2048, B=32)


@device(chip=1)
def segmented_copy(ctx: Context, x: Dm) -> Dm:
    """Example 4 (L7902–7917): copy 64 KB in two executions of 1024 cycles, each a tile of A."""
    m = AX4.m
    out: Dm = DmTensor(ctx, f8e4m3, m["1"], m["1 # 2"], m["1 # 256"], m["A, B"], 256 * 1024,
                             call="segmented_copy")
    for k in range(2):                                  # A % 1024, then A @ 1024
        src = x.view().tile(m["A"], 1024, m["A = 1024, B"], 1024 * k)
        dst = out.view().tile(m["A"], 1024, m["A = 1024, B"], 1024 * k)
        (ctx.main.begin(src)
         .fetch(f8e4m3, m["A % 1024"], m["B"])
         .collect(m["A % 1024"], m["B"])
         .commit_view(dst))                             # [A%1024=1024:32, B=32:1] @ 256K (+ 32K) / 32
    return out


def example4() -> tuple[Run, Run]:
    """Run example 4 and check that the output is a byte copy of the input."""
    ctx = Context.acquire()
    x = _input(ctx, AX4, "A, B", (2048, 32), "A B", 4)
    out = launch(segmented_copy, ctx, x)
    ok = np.array_equal(out.logical(axes="A B"), x.logical(axes="A B"), equal_nan=True)
    raw = ctx.memory.chip(0).dm.data[0, 0]
    ok &= bool(np.array_equal(raw[256 * 1024:320 * 1024], raw[:64 * 1024]))   # a byte copy
    return _run("4: segment 0", bool(ok), ctx.schedule.ops[-2]), _last_pass(ctx, "4: segment 1", bool(ok))


# ------------------------------------------------------------------------------------------------ main


def _show(run: Run, want: int) -> None:
    engines = ", ".join(f"{k} {v}" for k, v in run.cycles.items())
    print(f"  {run.name:<24} {'ok' if run.ok else 'WRONG DATA':<10} streams {run.busy:>5} cycles "
          f"(manual: {want}), the command {run.pass_cycles}   [{engines}]")
    print(f"      {run.configs['commit']}")
    assert run.ok, f"{run.name}: the committed tensor differs from the input"
    assert run.busy == want, f"{run.name}: {run.busy} cycles, the manual says {want}"


def main() -> None:
    """The four examples, checked against the data and the manual's cycle counts."""
    print("Fetch and Commit Engine kernel examples (manual L7611–7981)")
    one, two = example1(), example2()
    _show(one, 15)                                     # L7695
    _show(two, 3)                                      # L7763: 3 cycles vs 15, 5x faster
    assert one.cycles["commit"] == 15 and two.cycles["commit"] == 3
    for dummy, want in ((7, 6), (15, 10), (23, 22), (31, 6)):   # L7864-7867
        run = example3(dummy)
        _show(run, want)
        fetch = run.configs["fetch"].split("; ")
        print(f"      {fetch[1]}; {fetch[2].split(', ')[2]}")
    print("      (dummy 7: RNGD fetches 1-32 bytes in powers of two (L1758), so the 24-byte step is fetched as a\n"
          "       packet padded to 32 bytes; the manual's 24-byte fetch_size (L7795, L7864) is the commit size)")
    print(f"  3: 32-byte commits into A # 88 are refused:\n      {example3_refused()}")
    for run in example4():
        _show(run, 1024)                               # L7957


if __name__ == "__main__":
    main()
