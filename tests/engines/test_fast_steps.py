"""``contraction.float-steps``, ``contraction.float-steps-jit``, ``contraction.float-row-jit`` and
``contraction.float-row-bf16`` (visa/engines/contraction/fast_steps.py, fast_steps_jit.py, fast_row_jit.py,
fast_row_bf16.py) against the Reducer's order written out
by brute force (the reference's ``tree`` over the ``2^n`` products, L4386–4388, then ``in_order`` over the reduced
Time steps, L4408, L4415–4431): the same bits on random label configurations (operands lacking labels, outputs
neither operand has, several reduced digits) and on poisoned values (infinities, NaNs, signed zeros, subnormals,
products that overflow or underflow f32, exponents far apart), with the compiled loop on and off (numpy's loop) and
the one-row loop on and off."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_fast_compute import _every_slice, _two_slices
from visa import bf16, fastpaths
from visa.engines.contraction import fast_steps, fast_steps_jit
from visa.engines.contraction.reference import in_order, one_nan, tree

#: The poisoned values overflow f32 and meet inf - inf on purpose (IEEE: an infinity or a NaN, as on the chip).
pytestmark = pytest.mark.filterwarnings("ignore:(overflow|invalid value) encountered:RuntimeWarning")

#: Values a bf16 operand may hold that stress the order: specials, signed zeros, subnormals, far exponents.
SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, -3e-39, 9e-41, 3e38, -2e38, 1e-38, 2.0**-126,
                    2.0**100, -(2.0**-100), 2.0**60, 1.0, -1.5, 2.0**-60, 7.0, 0.0078125], dtype=np.float32)

VARIANTS = {"jit": (), "jit-transposing": ("contraction.float-row-jit",),
            "jit-f32-weights": ("contraction.float-row-bf16",),
            "jit-buffered": ("contraction.float-row-jit", "contraction.float-tree32"),
            "numpy": ("contraction.float-steps-jit",)}
PATHS = ("contraction.float-steps", "contraction.float-steps-jit", "contraction.float-row-jit",
         "contraction.float-row-bf16",
         "contraction.float-act-classes", "contraction.float-tree32", "contraction.float-weight-period")


def _brute(a: np.ndarray, la: list[str], w: np.ndarray, lw: list[str], lo: list[str], sizes: dict[str, int],
           reduced: list[str]) -> np.ndarray:
    """Every product over (steps, lo, j), the tree over j, the accumulator over the steps in ascending order."""
    steps = [lab for lab in reduced if lab != "j"]
    order = [*steps, *lo, "j"]

    def full(x: np.ndarray, labels: list[str]) -> np.ndarray:
        own = [lab for lab in order if lab in labels]
        v = x.astype(np.float32).transpose([labels.index(lab) for lab in own])
        return np.broadcast_to(v.reshape([sizes[lab] if lab in labels else 1 for lab in order]),
                               [sizes[lab] for lab in order])

    c = tree(full(a, la) * full(w, lw))
    return one_nan(in_order(c, tuple(range(len(steps)))) if steps else c)


def _values(rng: np.random.Generator, shape: tuple[int, ...], special: float) -> np.ndarray:
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-30, 30, size=shape)).astype(np.float32)
    pick = rng.random(shape) < special
    x[pick] = rng.choice(SPECIAL, size=int(pick.sum()))
    return x.astype(ml_dtypes.bfloat16)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _switched(variant: str) -> Any:
    """The fast paths the variant switches off (none: a context that changes nothing; ``fastpaths.disabled()``
    with no name would switch every path off)."""
    return fastpaths.disabled(*VARIANTS[variant]) if VARIANTS[variant] else contextlib.nullcontext()


def _variant(name: str) -> None:
    if name.startswith("jit") and not fast_steps_jit.available():
        pytest.skip("numba is not installed (the `fast` extra)")
    if not all(fastpaths.get(n).on for n in PATHS):
        pytest.skip("switched off by VISA_FASTPATHS")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), special=st.sampled_from([0.0, 0.05, 0.3]))
def test_random_configurations_are_the_brute_force_order(variant: str, seed: int, special: float) -> None:
    _variant(variant)
    rng = np.random.default_rng(seed)
    n_steps, n_out = int(rng.integers(0, 3)), int(rng.integers(1, 4))
    steps = [f"s{k}" for k in range(n_steps)]
    outs = [f"o{k}" for k in range(n_out)]
    sizes = {lab: int(rng.integers(1, 5)) for lab in steps + outs}
    sizes["j"] = 1 << int(rng.integers(0, 6))
    lo = list(rng.permutation(outs))
    # each label in the activation, the weights, both or (an output only) neither; j in both
    la, lw = ["j"], ["j"]
    for lab in steps + outs:
        where = int(rng.integers(0, 4 if lab in outs else 3))
        if where in (0, 2):
            la.insert(int(rng.integers(0, len(la) + 1)), lab)
        if where in (1, 2):
            lw.insert(int(rng.integers(0, len(lw) + 1)), lab)
    a = _values(rng, tuple(sizes[lab] for lab in la), special)
    w = _values(rng, tuple(sizes[lab] for lab in lw), special)
    reduced = [*steps, "j"]
    want = _brute(a, la, w, lw, lo, sizes, reduced)
    with _switched(variant):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, reduced)
    assert got.shape == want.shape
    assert np.array_equal(_bits(got), _bits(want)), (la, lw, lo, sizes)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_large_block_is_the_brute_force_order(variant: str) -> None:
    """A GEMM-shaped call (batch, rows, two step digits, 32 products) with every kind of poisoned value: several
    pieces and blocks of batch positions."""
    _variant(variant)
    rng = np.random.default_rng(7)
    sizes = {"b": 24, "m": 16, "k": 8, "t": 3, "r": 8, "j": 32}
    la, lw, lo = ["b", "t", "m", "k", "j"], ["b", "r", "k", "t", "j"], ["b", "m", "r"]
    a = _values(rng, tuple(sizes[lab] for lab in la), 0.02)
    w = _values(rng, tuple(sizes[lab] for lab in lw), 0.02)
    want = _brute(a, la, w, lw, lo, sizes, ["t", "k", "j"])
    with _switched(variant):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "k", "j"])
    assert np.isnan(want).any() and np.isinf(want).any()  # (the poison reaches the outputs)
    assert np.array_equal(_bits(got), _bits(want))
    assert set(_bits(got)[np.isnan(got)].tolist()) == {0x7FC00000}  # (one NaN, whichever operand order)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("nj", [1, 2, 4, 32])
def test_one_activation_row_is_the_brute_force_order(variant: str, nj: int) -> None:
    """A GEMV-shaped call (one activation row, a batch, two step digits, many weight columns) with poisoned
    values: the one-row loop reads the weights in place (``contraction.float-row-jit``), the same bits as the
    transposing loop, numpy's and the brute force."""
    _variant(variant)
    rng = np.random.default_rng(11 + nj)
    sizes = {"b": 6, "k": 4, "t": 2, "n": 8, "r": 5, "j": nj}
    la, lw, lo = ["t", "b", "k", "j"], ["b", "n", "k", "t", "r", "j"], ["b", "n", "r"]
    a = _values(rng, tuple(sizes[lab] for lab in la), 0.02)
    w = _values(rng, tuple(sizes[lab] for lab in lw), 0.02)
    want = _brute(a, la, w, lw, lo, sizes, ["t", "k", "j"])
    with _switched(variant):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "k", "j"])
    assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("nj", [1, 2, 4, 32])
def test_a_decode_gemv_is_the_brute_force_order(variant: str, nj: int) -> None:
    """A decode step's GEMV as the TRF window gives it (issue 25): the weights' output labels (Row, a column
    digit) one stride in the window, a view of it (every other element of a wider window), poisoned values:
    ``contraction.float-row-bf16`` reads the bits in place, the same bits as the other loops and the brute
    force."""
    _variant(variant)
    rng = np.random.default_rng(29 + nj)
    sizes = {"b": 5, "r": 8, "d": 4, "t": 6, "q": 1, "j": nj}
    la, lw, lo = ["b", "t", "q", "j"], ["b", "r", "d", "t", "q", "j"], ["b", "d", "q", "r"]
    a = _values(rng, tuple(sizes[lab] for lab in la), 0.02)
    wide = _values(rng, tuple(sizes[lab] * (2 if lab == "t" else 1) for lab in lw), 0.02)
    w = wide[:, :, :, ::2]  # (a strided view, as the window's steps)
    want = _brute(a, la, w, lw, lo, sizes, ["t", "j"])
    with _switched(variant):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"])
        contiguous = fast_steps.contract(a, la, np.ascontiguousarray(w), lw, lo, sizes, ["t", "j"])
    assert np.array_equal(_bits(got), _bits(want))
    assert np.array_equal(_bits(contiguous), _bits(want))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.sampled_from([1, 3]))
def test_replicated_activations_are_the_brute_force_order(variant: str, seed: int, rows: int) -> None:
    """Batch positions whose activations are replicas (equal labels; a negative label is a position of its own)
    share one laid-out block (``contraction.float-act-classes``): the same bits with the path on and off, with
    one activation row (the one-row loop) and several."""
    _variant(variant)
    rng = np.random.default_rng(seed)
    sizes = {"b": int(rng.integers(2, 9)), "c": int(rng.integers(1, 3)), "t": int(rng.integers(1, 3)), "m": rows,
             "n": int(rng.integers(1, 6)), "j": 1 << int(rng.integers(0, 6))}
    la, lw, lo = ["b", "t", "m", "c", "j"], ["b", "c", "n", "t", "j"], ["b", "c", "m", "n"]
    labels = rng.integers(-2, 3, size=sizes["b"]).astype(np.int64)
    blocks = _values(rng, (3, *(sizes[lab] for lab in la[1:])), 0.05)
    a = np.stack([blocks[lab] if lab >= 0 else _values(rng, blocks.shape[1:], 0.05) for lab in labels])
    w = _values(rng, tuple(sizes[lab] for lab in lw), 0.05)
    want = _brute(a, la, w, lw, lo, sizes, ["t", "j"])
    for off in [(), ("contraction.float-act-classes",)]:
        with fastpaths.disabled(*VARIANTS[variant], *off):
            got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels)
        assert np.array_equal(_bits(got), _bits(want)), (labels, sizes, off)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.sampled_from([1, 3]), nj=st.sampled_from([1, 4, 32]))
def test_weights_repeating_with_a_period_are_the_brute_force_order(variant: str, seed: int, rows: int,
                                                                    nj: int) -> None:
    """Weights given for one period of the batch positions (position ``b`` reads ``b mod period``, the TRF
    window's ``period``) are laid out once per distinct block (``contraction.float-weight-period``): the same bits
    as the brute force over the repeated weights, with the path on and off, with replicated activations too."""
    _variant(variant)
    rng = np.random.default_rng(seed)
    period = int(rng.integers(1, 5))
    sizes = {"b": period * int(rng.integers(1, 4)), "c": int(rng.integers(1, 3)), "t": int(rng.integers(1, 3)),
             "m": rows, "n": int(rng.integers(1, 6)), "j": nj}
    la, lw, lo = ["b", "t", "m", "c", "j"], ["b", "c", "n", "t", "j"], ["b", "c", "m", "n"]
    a = _values(rng, tuple(sizes[lab] for lab in la), 0.05)
    w = _values(rng, (period, *(sizes[lab] for lab in lw[1:])), 0.05)
    whole = w[np.arange(sizes["b"]) % period]
    want = _brute(a, la, whole, lw, lo, sizes, ["t", "j"])
    labels = (np.arange(sizes["b"], dtype=np.int64) // period if rng.random() < 0.5 else None)
    if labels is not None:  # (the activations replicated in blocks of `period` positions, as the GEMM example's)
        a = np.ascontiguousarray(np.repeat(a[::period], period, axis=0))
        want = _brute(a, la, whole, lw, lo, sizes, ["t", "j"])
    for off in [(), ("contraction.float-weight-period",)]:
        with fastpaths.disabled(*VARIANTS[variant], *off):
            got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels, period)
        assert np.array_equal(_bits(got), _bits(want)), (period, sizes, off)


def test_labels_that_lie_are_caught_when_verifying(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``VISA_VERIFY_REPLICAS=1`` a label claiming equal activations the bytes do not hold is an internal
    error, not a wrong number."""
    if not fast_steps_jit.available() or not fastpaths.get("contraction.float-act-classes").on:
        pytest.skip("the compiled loop or the path is off")
    monkeypatch.setenv("VISA_VERIFY_REPLICAS", "1")
    rng = np.random.default_rng(3)
    a = _values(rng, (4, 2, 4), 0.0)
    w = _values(rng, (4, 3, 4), 0.0)
    sizes = {"b": 4, "m": 2, "n": 3, "j": 4}
    with pytest.raises(AssertionError, match="replica labels"):
        fast_steps.contract(a, ["b", "m", "j"], w, ["b", "n", "j"], ["b", "m", "n"], sizes, ["j"],
                            np.array([5, 5, 5, 5], dtype=np.int64))


def test_the_tree_rounds_every_pair() -> None:
    """Sums whose order changes the bits (exponents 2^±24 apart): the compiled and numpy loops agree with the
    brute force, and a plain f32 sum in another order does not."""
    a = np.array([[1.0, 2.0**-24, 2.0**-24, 2.0**-24]], dtype=np.float32).astype(ml_dtypes.bfloat16)
    w = np.ones((1, 4), dtype=ml_dtypes.bfloat16)
    sizes = {"m": 1, "n": 1, "j": 4}
    want = _brute(a, ["m", "j"], w, ["n", "j"], ["m", "n"], sizes, ["j"])
    assert want[0, 0] == np.float32(1.0) + np.float32(2.0**-23)  # ((1 + e) + (e + e)): 1 + 2e, e rounded away
    for name, variant in VARIANTS.items():
        if name.startswith("jit") and not fast_steps_jit.available():
            continue
        with fastpaths.disabled(*variant):
            got = fast_steps.contract(a, ["m", "j"], w, ["n", "j"], ["m", "n"], sizes, ["j"])
        assert _bits(got)[0, 0] == _bits(want)[0, 0]
    assert math.fsum([1.0, 2.0**-24, 2.0**-24, 2.0**-24]) != float(want[0, 0])


@pytest.mark.parametrize("layout", [_two_slices, _every_slice])
@pytest.mark.parametrize("poison", [False, True])
def test_engine_with_the_compiled_loop_off_is_the_reference(layout: Any, poison: bool) -> None:
    """The Contraction Engine's bf16 results, bytes and cycles with numpy's loop (the compiled one off) and with
    every contraction path off (the reference's steps)."""
    with fastpaths.disabled("contraction.float-steps-jit"):
        fast, fast_cycles = layout(bf16, 512, poison, 3)
    with fastpaths.disabled("contraction.float-steps", "contraction.float-steps-jit"):
        reference, reference_cycles = layout(bf16, 512, poison, 3)
    assert fast_cycles == reference_cycles
    for got, want in zip(fast, reference, strict=True):
        bits = np.dtype(f"u{got.itemsize}") if got.dtype.kind == "f" else got.dtype
        assert np.array_equal(np.ascontiguousarray(got).view(bits), np.ascontiguousarray(want).view(bits))


def test_numba_is_imported_by_a_float_contraction_only() -> None:
    """Importing visa and the Contraction Engine does not import numba (a kernel without float sums never pays
    for it); the first float contraction does, when the compiled loop is on and numba installed."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, ml_dtypes\n"
            "import visa\n"
            "from visa.engines.contraction import compute, fast_steps, fast_steps_jit\n"
            "assert 'numba' not in sys.modules\n"
            "a = np.ones((2, 4), dtype=ml_dtypes.bfloat16)\n"
            "fast_steps.contract(a, ['m', 'j'], a, ['n', 'j'], ['m', 'n'], {'m': 2, 'n': 2, 'j': 4}, ['j'])\n"
            "print(('numba' in sys.modules) == (fast_steps_jit.JIT.on and fast_steps_jit.available()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), period=st.sampled_from([2, 4, 8, 16]), n=st.sampled_from([1, 3, 32, 40]),
       labelling=st.sampled_from(["blocks", "none", "random"]))
def test_weight_groups_side_by_side_are_the_brute_force_order(seed: int, period: int, n: int, labelling: str) -> None:
    """Positions reading consecutive weight blocks with one activation block (the GEMM example's slices: the
    activations repeat in blocks of ``period`` positions, the weights with the period) are multiplied by groups of
    blocks laid side by side (``contraction.float-tree32-wide``): the same bits as the brute force with the path on
    and off, also where the positions' activations do not come in such runs (every position its own, or random
    classes: the blocks laid out one by one again)."""
    _variant("jit")
    rng = np.random.default_rng(seed)
    sizes = {"b": period * int(rng.integers(1, 4)), "t": int(rng.integers(1, 3)), "m": int(rng.integers(1, 4)),
             "n": n, "j": 32}
    la, lw, lo = ["b", "t", "m", "j"], ["b", "n", "t", "j"], ["b", "m", "n"]
    w = _values(rng, (period, *(sizes[lab] for lab in lw[1:])), 0.05)
    whole = w[np.arange(sizes["b"]) % period]
    if labelling == "blocks":  # (the GEMM example's: one activation block per run of `period` positions)
        labels: np.ndarray | None = np.arange(sizes["b"], dtype=np.int64) // period
    elif labelling == "random":
        labels = rng.integers(0, min(3, sizes["b"]), size=sizes["b"]).astype(np.int64)
    else:
        labels = None
    a = _values(rng, tuple(sizes[lab] for lab in la), 0.05)
    if labels is not None:  # (equal labels, equal activations)
        a = np.ascontiguousarray(a[labels])
    want = _brute(a, la, whole, lw, lo, sizes, ["t", "j"])
    got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels, period)
    assert np.array_equal(_bits(got), _bits(want)), (period, sizes, labelling)
    with fastpaths.disabled("contraction.float-tree32-wide"):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels, period)
    assert np.array_equal(_bits(got), _bits(want)), (period, sizes, labelling, "off")


def test_weight_group_layouts_round_trip() -> None:
    """:func:`~visa.engines.contraction.fast_tree32_wide.layout` puts block ``k·g + q``'s ``j × n`` rows at group
    ``k``, columns ``q·n …``, and :func:`~visa.engines.contraction.fast_tree32_wide.narrow` gives the blocks back."""
    from visa.engines.contraction import fast_tree32_wide

    laid = np.arange(8 * 2 * 3 * 32, dtype=np.float32).reshape(8, 2, 3, 32)  # (blocks, s, n, j)
    wide = fast_tree32_wide.layout(laid, 4)
    assert wide.shape == (2, 2, 32, 12)
    assert np.array_equal(wide[1, 1, :, 3:6], laid[5, 1].T)
    assert np.array_equal(fast_tree32_wide.narrow(wide, 4), laid.transpose(0, 1, 3, 2))
    assert fast_tree32_wide.group(16, 32) == 8 and fast_tree32_wide.group(6, 32) == 2
    assert fast_tree32_wide.group(16, 200) == 1 and fast_tree32_wide.group(3, 32) == 1


def _scaled(rng: np.random.Generator, shape: tuple[int, ...], low: int, high: int, cancel: bool) -> np.ndarray:
    """bf16 values ``±m · 2^e`` with ``e`` in ``[low, high]`` (``m`` any 8-bit significand, or from a few small ones
    whose products cancel in pairs, ``cancel``), a tenth of them zeros of either sign."""
    e = rng.integers(low, high + 1, size=shape).astype(np.float64)
    if cancel:
        m = rng.choice(np.array([1.0, 1.25, 1.5, 1.75]), size=shape)
    else:
        m = 1.0 + rng.integers(0, 128, size=shape) / 128.0
    x = np.where(rng.random(shape) < 0.5, -m, m) * np.exp2(e)
    zero = rng.random(shape) < 0.1
    x[zero] = np.where(rng.random(int(zero.sum())) < 0.5, -0.0, 0.0)
    return x.astype(np.float32).astype(ml_dtypes.bfloat16)


#: Exponent ranges of the activations and the weights: inside the instruction's range (products exact and normal,
#: pair sums normal), on its edges (the least and greatest exponent sums it takes: 2^-56 · 2^-56, 2^63 · 2^63), just
#: outside them (the f32 loop then); and the poisoned values of SPECIAL in both or in the activations only.
RANGES = {"ordinary": ((-20, 20), (-20, 20)), "least": ((-56, -50), (-56, -50)), "below": ((-57, -50), (-57, -50)),
          "greatest": ((55, 63), (55, 63)), "above": ((55, 64), (55, 64)), "far": ((-110, -100), (90, 100))}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), period=st.sampled_from([2, 8, 16]), n=st.sampled_from([1, 3, 16, 32]),
       spread=st.sampled_from([*RANGES, "special", "special-activations"]), cancel=st.booleans(),
       weights=st.sampled_from(["groups", "period", "every"]))
def test_the_bf16_pair_dot_product_is_the_brute_force_order(seed: int, period: int, n: int, spread: str,
                                                            cancel: bool, weights: str) -> None:
    """bf16 operands with 32 products a tree (``contraction.float-tree32-bf16dp``: the tree's first depth by the
    CPU's pair dot product where the exponents allow it, else the f32 loop) — the GEMM example's weight groups
    (``groups``: one activation block per run of ``period`` positions, the weights repeating with the period), the
    weights laid out once per period without such runs (``period``), or every position's own (``every``): the same
    bits as the brute force with the path on and off — signed zeros, pairs cancelling to zero, exponents on the
    edges of the instruction's range and past them, infinities, NaNs and denormals."""
    _variant("jit")
    rng = np.random.default_rng(seed)
    sizes = {"b": period * int(rng.integers(1, 3)), "t": int(rng.integers(1, 3)), "m": int(rng.integers(1, 4)),
             "n": n, "j": 32}
    la, lw, lo = ["b", "t", "m", "j"], ["b", "n", "t", "j"], ["b", "m", "n"]
    w_shape = (period if weights != "every" else sizes["b"], *(sizes[lab] for lab in lw[1:]))
    if spread.startswith("special"):
        w = _values(rng, w_shape, 0.05) if spread == "special" else _scaled(rng, w_shape, -20, 20, cancel)
        a = _values(rng, tuple(sizes[lab] for lab in la), 0.05)
    else:
        (alo, ahi), (wlo, whi) = RANGES[spread]
        w = _scaled(rng, w_shape, wlo, whi, cancel)
        a = _scaled(rng, tuple(sizes[lab] for lab in la), alo, ahi, cancel)
    labels = np.arange(sizes["b"], dtype=np.int64) // period if weights == "groups" else None
    if labels is not None:  # (one activation block per run of `period`)
        a = np.ascontiguousarray(a[labels])
    w_period = period if weights != "every" else 0
    want = _brute(a, la, w[np.arange(sizes["b"]) % w.shape[0]], lw, lo, sizes, ["t", "j"])
    got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels, w_period)
    assert np.array_equal(_bits(got), _bits(want)), (period, sizes, spread, weights)
    with fastpaths.disabled("contraction.float-tree32-bf16dp"):
        got = fast_steps.contract(a, la, w, lw, lo, sizes, ["t", "j"], labels, w_period)
    assert np.array_equal(_bits(got), _bits(want)), (period, sizes, spread, weights, "off")


@pytest.mark.parametrize("compiled", [True, False])
def test_the_pair_dot_products_exponent_checks(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`~visa.engines.contraction.fast_tree32_dp.exponent_range` (compiled, and numpy's when numba is
    missing) and :func:`~visa.engines.contraction.fast_tree32_dp.fits`; :func:`~visa.engines.contraction.
    fast_tree32_dp.layout` pairs adjacent products of one column, the first in the low half."""
    from visa.engines.contraction import fast_tree32_dp

    if not compiled:
        monkeypatch.setattr(fast_tree32_dp, "_compiled", lambda: None)
    elif fast_tree32_dp._compiled() is None:
        pytest.skip("numba, or this CPU's VDPBF16PS, is missing: only numpy's checks (the other case) run")

    def bits(*values: float) -> np.ndarray:
        return np.array(values, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)

    assert fast_tree32_dp.exponent_range(bits(1.0, -0.0, 2.0**-56, -(2.0**63))) == (71, 190)
    assert fast_tree32_dp.exponent_range(bits(0.0, -0.0)) == (255, 0)
    assert fast_tree32_dp.exponent_range(bits()) == (255, 0)
    for bad in (np.inf, -np.inf, np.nan, 1e-40):
        assert fast_tree32_dp.exponent_range(bits(1.0, bad)) is None
    assert fast_tree32_dp.fits((71, 127), (71, 127)) and not fast_tree32_dp.fits((70, 127), (71, 127))
    assert fast_tree32_dp.fits((127, 190), (100, 190)) and not fast_tree32_dp.fits((127, 191), (100, 190))
    assert fast_tree32_dp.fits((255, 0), (1, 254)) and not fast_tree32_dp.fits(None, (127, 127))
    laid = np.arange(4 * 2 * 3 * 32, dtype=np.uint16).reshape(4, 2, 3, 32)  # (blocks, s, n, j)
    pairs = fast_tree32_dp.layout(laid, 2)
    assert pairs.shape == (2, 2, 16, 6) and pairs.dtype == np.uint32
    assert int(pairs[1, 1, 5, 4]) == int(laid[3, 1, 1, 10]) | int(laid[3, 1, 1, 11]) << 16


@pytest.mark.parametrize("path", ["contraction.float-tree32-wide", "contraction.float-tree32-bf16dp"])
def test_the_gemm_example_is_the_same_with_the_weight_groups_off(path: str) -> None:
    """The GEMM example (examples/gemm.py, whose 256 slices read 16 activation blocks and 16 weight blocks in the
    runs ``contraction.float-tree32-wide`` takes, on bf16 operands: ``contraction.float-tree32-bf16dp``): the same
    result bits and every op's cycles with the path off."""
    if not fast_steps_jit.available() or not fastpaths.get(path).on:
        pytest.skip("the compiled loop or the path is off")
    if path.endswith("bf16dp"):
        from visa.engines.contraction import fast_tree32_dp

        if fast_tree32_dp.kernel() is None:
            pytest.skip("this CPU (or numba's target) has no VDPBF16PS: the path is never offered")
    from benchmarks.common import load_example
    from visa import Context, HostTensor, launch
    from visa.mapping.axes import AXES_ATTR

    module = load_example("gemm")
    m = getattr(module, AXES_ATTR).m  # (the example's axes)

    def run() -> tuple[np.ndarray, list[int]]:
        ctx = Context.acquire()
        rng = np.random.default_rng(5)
        a = HostTensor.rand(bf16, m["I, K"], rng)
        b = HostTensor.rand(bf16, m["K, J"], rng)
        a_hbm = a.to_hbm(module.Chip, m["I, K"], ctx.pdma, 0)
        b_hbm = b.to_hbm(module.Chip, m["J, K"], ctx.pdma, 1 << 28)
        out = launch(module.kernel, ctx, a_hbm, b_hbm).to_host(m["I, J"], ctx.pdma)
        return np.asarray(out.numpy(axes="I J")).view(np.uint16).copy(), [op.cycles for op in ctx.schedule.ops]

    fast, fast_cycles = run()
    with fastpaths.disabled(path):
        slow, slow_cycles = run()
    assert fast_cycles == slow_cycles
    assert np.array_equal(fast, slow)


def test_an_f32_activation_already_laid_out_reaches_the_compiled_loop() -> None:
    """An f32 ``x`` already in the loop's layout was handed on as a read-only view, which the compiled loop's
    signature refused (TypeError; found by a review, session 38): now the same bits as numpy's loop."""
    rng = np.random.default_rng(0)
    sizes = {"b": 5, "r": 4, "t": 2, "j": 16}
    a = rng.standard_normal((5, 2, 16)).astype(np.float32)
    w = rng.standard_normal((5, 4, 2, 16)).astype(ml_dtypes.bfloat16)
    args = (a, ["b", "t", "j"], w, ["b", "r", "t", "j"], ["b", "r"], sizes, ["t", "j"])
    got = fast_steps.contract(*args)
    with fastpaths.disabled("contraction.float-steps-jit"):
        want = fast_steps.contract(*args)
    assert np.array_equal(_bits(got), _bits(want))
