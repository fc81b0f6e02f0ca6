"""Hello, TCP! — GEMM (manual L466–525), line by line in the Python spelling.

GEMM ``IK, KJ → IJ`` computes ``C_ij = Σ_k A_ik B_kj``.  The two output axes map jointly to Slice,
``m["I / 32, J / 32"]`` (16 × 16 slices), so each slice computes a 32 × 32 tile of C: the manual's "16 × 16
output tile" (L470, L483) is the slice grid, not the tile its mapping gives.  Each slice's TRF holds its 32
columns of B, 8 of them as Rows (``Row = m["J % 8"]``) and 4 per Row (``J / 8 % 4``); A streams through,
broadcast over ``J / 8 % 4`` by the fetch, K is reduced 32 at a time by the tree and over ``K / 32`` by the
accumulator.

The manual's kernel breaks its own limits; the changes, each the smallest that makes it legal:

- **K = 1024, not 2048** (L479): the TRF Element ``m["J / 8 % 4, K"]`` holds 4 × K bf16 per Row, 16 KiB for
  K = 2048 — twice a Row's 8 KiB (L139, L1089; 128 KiB per slice against 64 KiB).  With K = 1024 it fills a
  Row exactly; the kernel and every mapping are otherwise the manual's.
- **DM addresses** (L497–498, L521): ``a`` (64 KiB per slice at K = 1024) at 0, ``b`` at ``1 << 16`` and the result
  at ``1 << 17`` — the manual's ``a`` at 0, ``b`` at ``1 << 12`` and ``.commit(0)`` overlap one another.
- **B's HBM layout** ``m["J, K"]``, not ``m![K, J]`` (L494, L498): ``b.to_dm(…, m![J % 32, K], …)`` would transpose B
  element by element, 2-byte runs, and an HBM→DM transfer moves packets of multiples of 8 bytes (L2424–2427).
  The tensor is the same B[K, J] (``IK, KJ → IJ``, L116; the heading's ``B_jk``, L467, is this layout); the host
  writes it J-major (PCIe writes to HBM have no such alignment).
- ``.commit(0)`` infers its Element from the annotation in Rust (L512); Python passes it: ``m["I % 32, J % 32"]``;
  the other typed ``let`` bindings (L497–503) become the mapping arguments of the calls as well.

The host code is omitted in the manual ("similar to previous examples", L486–489); ``main()`` follows GEMV's.
Run it with ``visa run examples/gemm.py``.
"""

from typing import Any

import numpy as np

from visa import AccumulationKind, Context, HbmTensor, HostTensor, TrfAddress, axes, bf16, device, launch, m

axes(I=512, J=512, K=1024)  # manual: K = 2048, whose TRF operand needs 16 KiB per Row (see above)

Chip = m["1"]
Cluster = m["1 # 2"]
# Distribute output dimensions `I` and `J` across slices
Slice = m["I / 32, J / 32"]  # 16 × 16 slices, each handling a 32 × 32 output tile
Row = m["J % 8"]


@device(chip=1)
def kernel(ctx: Context, a: HbmTensor[bf16, m["1"], m["I, K"]],
           b: HbmTensor[bf16, m["1"], m["J, K"]]) -> HbmTensor[bf16, m["1"], m["I, J"]]:  # manual: m![K, J]
    """The manual's kernel (L490–524), with the changes of the module docstring."""
    # Move data from HBM to DM
    a_dm = a.to_dm(Cluster, Slice, m["I % 32, K"], ctx.tdma, 0)
    b_dm = b.to_dm(Cluster, Slice, m["J % 32, K"], ctx.tdma, 1 << 16)  # manual: 1 << 12, inside a

    # Load matrix B into TRF
    # Each slice gets the full `K` dimension but only its 32 columns of J
    b_trf = (ctx.sub
             .begin(b_dm.view())
             .fetch(bf16, m["J % 8, J / 8 % 4"], m["K"])
             .collect(m["J % 8, J / 8 % 4, K / 16"], m["K % 16"])
             .to_trf(Row, m["J / 8 % 4, K"], TrfAddress.Full))

    # Compute GEMM: A × B
    # Contraction reduces along `K`, preserves `I` and `J`
    result = (ctx.main
              .begin(a_dm.view())
              .fetch(bf16, m["I % 32, J / 8 % 4"], m["K"])
              .collect(m["I % 32, J / 8 % 4, K / 16"], m["K % 16"])
              .align(m["I % 32, J / 8 % 4, K / 32"], m["K % 32"], b_trf)
              .contract(m["1"])
              .accumulate(m["I % 32, J / 8 % 4"], m["J % 8"], AccumulationKind.Interleaved)
              .cast(bf16, m["J % 8 # 16"])
              .commit(m["I % 32, J % 32"], 1 << 17))  # manual: .commit(0), over a

    # Transfer result to HBM
    return result.to_hbm(m["I, J"], ctx.tdma, 2 << 28)


def main() -> None:
    """Host side (omitted in the manual, L485–489): random bf16 A and B, launch, read C back, compare with numpy."""
    ctx = Context.acquire()
    rng = np.random.default_rng(42)
    a = HostTensor.rand(bf16, m["I, K"], rng)
    b = HostTensor.rand(bf16, m["K, J"], rng)
    out = run(ctx, a, b)
    check(a, b, out)


def run(ctx: Context, a: HostTensor[bf16, Any], b: HostTensor[bf16, Any]) -> HostTensor[bf16, Any]:
    """The simulated part of :func:`main`: A and B to HBM, the kernel, C back to the host (manual L53, L193)."""
    a_hbm = a.to_hbm(Chip, m["I, K"], ctx.pdma, 0 << 28)
    b_hbm = b.to_hbm(Chip, m["J, K"], ctx.pdma, 1 << 28)  # B laid out J-major in HBM (see the docstring)
    out_hbm = launch(kernel, ctx, a_hbm, b_hbm)
    return out_hbm.to_host(m["I, J"], ctx.pdma)


def check(a: HostTensor[bf16, Any], b: HostTensor[bf16, Any], out: HostTensor[bf16, Any]) -> None:
    """:func:`main`'s comparison of C with numpy's float32 product of the same bf16 values.

    bf16 products are exact in f32.  With s the exact sum,
    S = |x| @ |y| and n = K = 1024 terms (u = 2^-24, f32's unit roundoff): the device sums in f32 (tree and
    accumulator) and numpy sums in f32 (BLAS), each within n·u·S of s (any summation order, gamma_(n-1) < n·u);
    the device then rounds to bf16, within 2^-8 of its sum (8 significant bits, round to nearest).  So
    |got - want| <= 2^-8·|got_f32| + 2·n·u·S, and |got_f32| <= |want| + 2·n·u·S:
    |got - want| <= 2^-8·|want| + (1 + 2^-8)·n·2^-23·S,   S_ij <= ||x_i||·||y_j|| (Cauchy–Schwarz).
    The norms are f32 sums of exact squares (relative error below n·u = 2^-14, then a square root and a product):
    the margin 2^-10 covers them and the rounding of the bound's own few operations.  One f32 product, as
    numpy's own GEMM costs, and two row norms."""
    x, y = a.numpy(axes="I K").astype(np.float32), b.numpy(axes="K J").astype(np.float32)
    want = x @ y
    got = np.asarray(out.numpy(axes="I J"), dtype=np.float32)
    n = x.shape[1]
    s = np.outer(np.sqrt(np.square(x).sum(axis=1)), np.sqrt(np.square(y).sum(axis=0)))
    bound = (np.abs(want) * np.float32(2.0**-8) + s * np.float32((1 + 2.0**-8) * n * 2.0**-23)) * np.float32(
        1 + 2.0**-10)
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))

if __name__ == "__main__":
    main()
