"""TRF double buffering three ways: the reference's published makespans, reproduced by visa's timing model.

The Rust reference's tuning guide (furiosa-opt, "Scheduling › Tuning › Double buffering") writes one kernel three
ways and publishes each schedule's makespan: 20 bf16 weight groups, ``Out = 8 × Red = 64`` each; per group ``g``
the sub context stages ``W[g]`` in the TRF and the main context contracts a 16-token activation (Tok on
Cluster × Slice, Red in the Element) with it, casts to bf16 and commits tile ``g`` of the output.

* **rolled** (one TRF address for every group): 19,106 cycles — the load of group ``g + 1`` must wait for the pass
  that still reads the TRF (write-after-read), the pass for its load (read-after-write);
* **pipelined** (two groups per iteration, one per TRF half, both loads first): 15,477;
* **unrolled** (groups alternate halves): 15,086.

The scheduler finds each overlap from the TRF addresses alone (manual "Scheduling", L7042–7070).  Python runs the
loop eagerly, so "rolled" is the one-address form.  A kernel's makespan is counted from the moment its inputs are
in HBM (the end of the host's uploads) to the end of its last operation, as the reference's schedule of a
launch is.  The per-command overheads of ``hw.timing`` were fitted to these figures (docs/manual-notes.md,
"Timing model (issue 22)"); every other cost is the manual's.  ``main()`` checks each result against numpy and
prints the three makespans beside the published ones.

Departures from the reference's kernel: visa spells ``contract_outer / contract_packet / contract_time /
contract_lane`` as ``align / contract / accumulate`` and ``commit_trim`` as the commit's Element.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa import (
    RNGD,
    AccumulationKind,
    Context,
    DmTensor,
    HardwareProfile,
    HbmTensor,
    HostTensor,
    TrfAddress,
    TrfTensor,
    axes,
    bf16,
    device,
    launch,
    m,
)

axes(Tok=16, Red=64, Out=8, Group=20)

Cluster = m["Tok / 8 % 2"]
Slice = m["Tok % 8 # 256"]

#: The reference's published makespans (furiosa-opt tuning guide), by loop form.
PUBLISHED = {"rolled": 19_106, "pipelined": 15_477, "unrolled": 15_086}
FORMS = tuple(PUBLISHED)
#: a float64 array (spelled out: numpy 2.0, the floor, gives a bare np.ndarray no default type parameters)
F64 = npt.NDArray[np.float64]


def stage(ctx: Context, w_dm: DmTensor[bf16, m["1"], m["Tok / 8 % 2"], m["Tok % 8 # 256"], m["Group, Out, Red"]],
          g: int, half: TrfAddress
          ) -> TrfTensor[bf16, m["1"], m["Tok / 8 % 2"], m["Tok % 8 # 256"], m["Out"], m["Red"]]:
    """The sub context stages weight group ``g`` in one TRF half (a contiguous load: the StoTRF short command,
    L4112–4114)."""
    return (ctx.sub.begin(w_dm.view().tile(m["Group"], 1, m["Group = 1, Out, Red"], g))
            .fetch(bf16, m["Out, Red / 16"], m["Red % 16"])
            .collect(m["Out, Red / 16"], m["Red % 16"])
            .to_trf(m["Out"], m["Red"], half))


def contract(ctx: Context, a_dm: DmTensor[bf16, m["1"], m["Tok / 8 % 2"], m["Tok % 8 # 256"], m["Red"]],
             trf: TrfTensor[bf16, m["1"], m["Tok / 8 % 2"], m["Tok % 8 # 256"], m["Out"], m["Red"]],
             out: DmTensor[bf16, m["1"], m["Tok / 8 % 2"], m["Tok % 8 # 256"], m["Group, Out"]], g: int) -> None:
    """The main context contracts the activation with group ``g``'s weights and commits tile ``g``."""
    (ctx.main.begin(a_dm.view())
     .fetch(bf16, m["Red / 16"], m["Red % 16"])
     .collect(m["Red / 16"], m["Red % 16"])
     .align(m["Red / 32"], m["Red % 32"], trf)
     .contract(m["1"])
     .accumulate(m["1"], m["Out"], AccumulationKind.Interleaved)
     .cast(bf16, m["Out # 16"])
     .commit_view(out.view().tile(m["Group"], 1, m["Group = 1, Out"], g)))


def run(form: str, hw: HardwareProfile = RNGD, seed: int = 7) -> tuple[int, F64, F64]:
    """Launch the kernel in one loop form; return its makespan, its result and numpy's."""

    @device(chip=1)
    def kernel(ctx: Context, a: HbmTensor[bf16, m["1"], m["Tok, Red"]],
               w: HbmTensor[bf16, m["1"], m["Group, Out, Red"]]) -> HbmTensor[bf16, m["1"], m["Tok, Group, Out"]]:
        a_dm = a.to_dm(Cluster, Slice, m["Red"], ctx.tdma, 0)
        w_dm = w.to_dm(Cluster, Slice, m["Group, Out, Red"], ctx.tdma, 1 << 12)
        out = DmTensor.from_addr(ctx, bf16, m["1"], Cluster, Slice, m["Group, Out"], 1 << 16)
        if form == "rolled":  # one TRF address for every group
            for g in range(20):
                contract(ctx, a_dm, stage(ctx, w_dm, g, TrfAddress.FirstHalf), out, g)
        elif form == "pipelined":  # two groups per iteration, one per half, both staged first
            for p in range(10):
                first = stage(ctx, w_dm, 2 * p, TrfAddress.FirstHalf)
                second = stage(ctx, w_dm, 2 * p + 1, TrfAddress.SecondHalf)
                contract(ctx, a_dm, first, out, 2 * p)
                contract(ctx, a_dm, second, out, 2 * p + 1)
        else:  # unrolled: groups alternate halves
            for g in range(20):
                half = TrfAddress.FirstHalf if g % 2 == 0 else TrfAddress.SecondHalf
                contract(ctx, a_dm, stage(ctx, w_dm, g, half), out, g)
        return out.to_hbm(m["Tok, Group, Out"], ctx.tdma, 1 << 28)

    ctx = Context.acquire(hw)
    rng = np.random.default_rng(seed)
    a = HostTensor.rand(bf16, m["Tok, Red"], rng)
    w = HostTensor.rand(bf16, m["Group, Out, Red"], rng)
    a_hbm = a.to_hbm(m["1"], m["Tok, Red"], ctx.pdma, 0)
    w_hbm = w.to_hbm(m["1"], m["Group, Out, Red"], ctx.pdma, 1 << 20)
    ready = ctx.schedule.makespan  # the inputs are in HBM: the launch's schedule starts here
    out = launch(kernel, ctx, a_hbm, w_hbm)
    span = max(op.end for op in ctx.schedule.ops if op.in_kernel) - ready
    got = np.asarray(out.to_host(m["Tok, Group, Out"], ctx.pdma).numpy(axes="Tok Group Out"), dtype=np.float64)
    want = np.einsum("tr,gor->tgo", a.numpy(axes="Tok Red").astype(np.float64),
                     w.numpy(axes="Group Out Red").astype(np.float64))
    return span, got, want


def check(got: F64, want: F64, red: int = 64) -> None:
    """bf16 result: half an ulp (2^-8 relative, generously) plus the f32 accumulation error of ``red`` products."""
    bound = np.abs(want) * 2.0**-8 + red * 2.0**-23 * np.abs(want).max()
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))


def makespans(hw: HardwareProfile = RNGD) -> dict[str, int]:
    """The three makespans (each result checked against numpy)."""
    out = {}
    for form in FORMS:
        span, got, want = run(form, hw)
        check(got, want)
        out[form] = span
    return out


def main() -> None:
    """Print visa's makespans beside the published ones, and the double-buffering gain of each."""
    spans = makespans()
    for form in FORMS:
        print(f"{form:>9}: {spans[form]:>7,} cycles (published {PUBLISHED[form]:,}, "
              f"ratio {spans[form] / PUBLISHED[form]:.3f})")
    gain = (spans["rolled"] - spans["unrolled"]) / spans["rolled"]
    ref = (PUBLISHED["rolled"] - PUBLISHED["unrolled"]) / PUBLISHED["rolled"]
    print(f"double-buffering gain (rolled − unrolled) / rolled: {gain:.1%} (published {ref:.1%})")
    assert spans["unrolled"] <= spans["pipelined"] < spans["rolled"], spans


if __name__ == "__main__":
    main()
