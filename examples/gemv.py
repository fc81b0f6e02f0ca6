"""Hello, TCP! — GEMV (manual L378–465), line by line in the Python spelling.

GEMV ``IJ, J → I`` computes ``y_i = Σ_j A_ij x_j``: the output axis I maps to Slice (one row of the matrix per
slice); the reduced axis J splits into Time (``J / 32``, 64 computation steps) and Packet (``J % 32``, 32
products per step).  The vector is needed in every slice: the kernel's DMA places it in each slice's DM
(``Slice = m["I"]`` on a tensor without I broadcasts it), and the sub context loads it into each slice's TRF.
The Switch Engine's Broadcast01 {slice1: 256, slice0: 1, time0: 1} (the pseudocode of L390–399) is the
alternative route for that broadcast; ``tests/engines/test_switch.py`` runs it (SW-14).

The kernel follows the manual's (L432–464) line for line, with two changes, each the smallest that makes it
legal:

- ``.collect::<Time, Packet>()`` (L456) would keep a 64-byte packet, but the Collect Engine emits 32-byte
  flits (L3543–3564): the flit axis ``J % 32 / 16`` goes innermost in Time, ``.collect(m["J / 32, J % 32 / 16"],
  m["J % 16"])``; ``.align(Time, Packet, …)`` then collects the two flits back into 64 bytes (collect_flits = 2).
- ``.commit(0)`` (L461) would write over the matrix, which lives at DM address 0 (L439), and its Element
  ``m![1]`` (2 bytes) is below the smallest commit (8 bytes, L2193): the result goes to ``1 << 13`` as
  ``m["1 # 4"]``.

The manual's typed ``let`` bindings (L439–452) become the mapping arguments of the calls.
The host side (L417–431) also compares the result with numpy, which the manual does not.

Run it with ``visa run examples/gemv.py``.
"""

import numpy as np

from visa import AccumulationKind, Context, HbmTensor, HostTensor, TrfAddress, axes, bf16, device, launch, m

axes(I=256, J=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["I"]  # Distribute output dimension across slices
Time = m["J / 32"]  # Temporal iterations for reduction dimension
Packet = m["J % 32"]  # Packet size for reduction dimension
Row = m["1"]


@device(chip=1)
def kernel(ctx: Context, matrix: HbmTensor[bf16, m["1"], m["I, J"]],
           vector: HbmTensor[bf16, m["1"], m["J"]]) -> HbmTensor[bf16, m["1"], m["I"]]:
    """The manual's kernel (L432–464), with the two changes of the module docstring."""
    # Move data from HBM to DM
    matrix_dm = matrix.to_dm(Cluster, Slice, m["J"], ctx.tdma, 0)
    vector_dm = vector.to_dm(Cluster, Slice, m["J"], ctx.tdma, 1 << 12)

    # Load vector into TRF
    vector_trf = (ctx.sub
                  .begin(vector_dm.view())
                  .fetch(bf16, m["1"], m["J"])
                  # Collect Engine: split into 32-byte flits.
                  .collect(m["J / 16"], m["J % 16"])
                  .to_trf(Row, m["J"], TrfAddress.Full))

    # Compute GEMV: matrix × vector
    # Key difference: `I` maps to slice (preserved), `J` gets reduced
    result = (ctx.main
              .begin(matrix_dm.view())
              .fetch(bf16, Time, Packet)
              .collect(m["J / 32, J % 32 / 16"], m["J % 16"])  # 32-byte flits (manual: ::<Time, Packet>)
              .align(Time, Packet, vector_trf)
              .contract(m["1"])
              .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved)
              .cast(bf16, m["1 # 16"])
              .commit(m["1 # 4"], 1 << 13))  # manual: .commit(0), over the matrix

    # Transfer result to HBM
    return result.to_hbm(m["I"], ctx.tdma, 2 << 28)


def main() -> None:
    """The host side (manual L417–431): random bf16 matrix and vector, launch, read back, compare."""
    ctx = Context.acquire()
    rng = np.random.default_rng(42)
    matrix = HostTensor.rand(bf16, m["I, J"], rng)
    vector = HostTensor.rand(bf16, m["J"], rng)
    matrix_hbm = matrix.to_hbm(Chip, m["I, J"], ctx.pdma, 0 << 28)
    vector_hbm = vector.to_hbm(Chip, m["J"], ctx.pdma, 1 << 28)
    out_hbm = launch(kernel, ctx, matrix_hbm, vector_hbm)
    out = out_hbm.to_host(m["I"], ctx.pdma)

    # numpy: exact sums of the bf16 products; the result is f32-accumulated and rounded to bf16 (half an ulp,
    # 2^-9 relative, plus the f32 accumulation error).
    a, x = matrix.numpy(axes="I J").astype(np.float64), vector.numpy().astype(np.float64)
    want = a @ x
    got = np.asarray(out.numpy(), dtype=np.float64)
    bound = np.abs(want) * 2.0**-8 + x.size * 2.0**-23 * (np.abs(a) @ np.abs(x))
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))


if __name__ == "__main__":
    main()
