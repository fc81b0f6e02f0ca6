"""Snippets for the DMA's collectives and redistributions (``visa/engines/dma/shuffle.py``, ``slicing.py``,
``visa/engines/parallel_copy.py``; manual "Chip/Cluster Reduce", L7382–7610): a four-chip kernel that shuffles
or slices a DM tensor with a wrong permutation, digit or index list."""

from __future__ import annotations

from visa.snippets.base import Snippet

__all__ = ["ENGINES_DMA", "chips"]

_CHIPS = '''
from visa import Context, DmTensor, HbmScalar, HbmTensor, axes, device, i4, i8, i32, launch, m

axes(Q=4, B=4, C=2, D=8, S=256)


@device(chip={n})
def kernel(ctx: Context) -> None:
    d = DmTensor(ctx, {dtype}, m["{chip}"], {cluster}, m["S"], m["{element}"], 0)   # {what}
    {body}


launch(kernel, Context.acquire())
'''


def chips(body: str, fixed: str, **fields: str) -> Snippet:
    """A kernel over ``n`` chips (4 by default) with one DM tensor ``d`` (i32, Chip Q, Element C, B, D), whose
    last line is ``body`` (failing) or ``fixed``; ``fields`` (``fixed_…`` for the fixed program's) replace the
    kernel's."""
    base = {"n": "4", "dtype": "i32", "chip": "Q", "cluster": 'm["1 # 2"]', "element": "C, B, D",
            "what": "rows of 8 on each chip"}
    a = base | {k: v for k, v in fields.items() if not k.startswith("fixed_")}
    b = a | {k.removeprefix("fixed_"): v for k, v in fields.items() if k.startswith("fixed_")}
    return Snippet(_CHIPS.format(body=body, **a), _CHIPS.format(body=fixed, **b))


_ONE = {"n": "1", "chip": "1", "fixed_n": "4", "fixed_chip": "Q"}
_SWAP = {"cluster": 'm["C"]', "element": "B, D", "what": "half the rows on each cluster"}
_SLICE = 'd.view().chip_slice(m["B"], m["{}"], {})   # chip c keeps row block indices[c]'
_ASYM = 'd.asymmetric_chip_slice(m["{}"], ctx.{}, {}, 1 << 14)   # chip c keeps entry indices[c]'
_ACLUSTER = 'd.asymmetric_cluster_slice(m["{}"], ctx.sub, {}, 1 << 14)   # cluster k keeps entry indices[k]'
_TO_DM = ('d.view().chip_slice(m["B"], m["{0}"], [3, 0, 1, 2]).to_dm(m["1 # 2"], m["S"], m["{0}"], ctx.tdma, 1 << 14)')
_HBM = 'h = HbmTensor(ctx, i32, m["Q"], m["C, S, B, D"], 1 << 20)   # the same rows in HBM\n    '
_SCALAR = "s = HbmScalar.from_host(ctx, 3, i32, 1 << 20)   # a device scalar\n    "

#: site key → the failing and the fixed program.
ENGINES_DMA: dict[str, Snippet] = {
    "shuffle.check_permutation LayoutError: a chip shuffle moves": chips(
        'd.view().chip_shuffle([0]).to_dm(m["1 # 2"], m["S"], m["C, B, D"], ctx.tdma, 1 << 14)',
        'd.view().chip_shuffle([1, 2, 3, 0]).to_dm(m["1 # 2"], m["S"], m["C, B, D"], ctx.tdma, 1 << 14)', **_ONE),
    "shuffle.check_permutation LayoutError: the permutation has entries": chips(
        "d.view().chip_shuffle([1, 2, 3])", "d.view().chip_shuffle([1, 2, 3, 0])"),
    "shuffle.check_permutation LayoutError: p is not a": chips(
        "d.view().chip_shuffle([1, 2, 3, 4])", "d.view().chip_shuffle([1, 2, 3, 0])"),
    "shuffle.check_permutation LayoutError: is not a permutation": chips(
        "d.view().chip_shuffle([0, 0, 1, 2])", "d.view().chip_shuffle([3, 0, 1, 2])"),
    "shuffle.check_cluster_swap LayoutError: a cluster swap exchanges": chips(
        _HBM + "h.view().cluster_swap()",
        "d.view().cluster_swap()", **_SWAP),
    "shuffle.check_cluster_swap LayoutError: a cluster swap reads": chips(
        "d.view().cluster_swap()", "d.view().cluster_swap()", element="B, D", fixed_cluster='m["C"]',
        what="the rows on cluster 0 only", fixed_what="half the rows on each cluster"),
    "slicing.plan_slice LayoutError: the element after slicing": chips(
        _SLICE.format("D, C", "[3, 0, 1, 2]"), _SLICE.format("C, D", "[3, 0, 1, 2]")),
    "slicing.plan_slice LayoutError: a chip slice keeps": chips(
        _SLICE.format("C, D", "[0]"), _SLICE.format("C, D", "[3, 0, 1, 2]"), **_ONE),
    "slicing.plan_slice LayoutError: a cluster slice keeps": chips(
        _HBM + 'h.view().cluster_slice(m["C"], m["S, B, D"], [1, 0])',
        'd.view().cluster_slice(m["C"], m["B, D"], [1, 0])'),
    "slicing.plan_slice AddressError: the digit steps elements": chips(
        'd.view().chip_slice(m["D % 4"], m["C, B, D / 4"], [3, 0, 1, 2])',
        'd.view().chip_slice(m["B"], m["C, D"], [3, 0, 1, 2])', dtype="i4", element="C, B, D", fixed_dtype="i4"),
    "slicing.check_constant_indices TypestateError: must be constants is": chips(
        _SCALAR + _SLICE.format("C, D", "[s, 0, 1, 2]"), _SCALAR + _SLICE.format("C, D", "[3, 0, 1, 2]")),
    "parallel_copy.check_indices LayoutError: indices for s u": chips(
        _SLICE.format("C, D", "[3, 0, 1]"), _SLICE.format("C, D", "[3, 0, 1, 2]")),
    "parallel_copy.check_indices LayoutError: 's index is outside": chips(
        _SLICE.format("C, D", "[3, 0, 1, 9]"), _SLICE.format("C, D", "[3, 0, 1, 2]")),
    "parallel_copy.check_context TypestateError: an asymmetric slice is": chips(
        _ASYM.format("B", "main", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), element="B, C, D"),
    "parallel_copy.split_digit LayoutError: the digit is not": chips(
        _ASYM.format("S", "sub", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), element="B, C, D"),
    "parallel_copy._single LayoutError: the sliced digit must": chips(
        _ASYM.format("B, C", "sub", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), element="B, C, D"),
    "parallel_copy._plan LayoutError: an asymmetric slice keeps": chips(
        _ASYM.format("B", "sub", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"),
        fixed_element="B, C, D"),
    "parallel_copy._plan UnsupportedFeatureError: packs two elements a": chips(
        _ASYM.format("B", "sub", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), dtype="i4",
        element="B, C, D", fixed_dtype="i32"),
    "parallel_copy._plan LayoutError: an asymmetric chip slice": chips(
        _ASYM.format("B", "sub", "[0]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), element="B, C, D", **_ONE),
    "parallel_copy.check_dm_stride AddressError: the sliced digit steps": chips(
        _TO_DM.format("C"), _TO_DM.format("D"), dtype="i8", element="B, C", fixed_element="B, D"),
    "parallel_copy.split_digit LayoutError: the digit lies in": chips(
        _ASYM.format("B", "sub", "[3, 0, 1, 2]"), _ASYM.format("B", "sub", "[3, 0, 1, 2]"), element="B # 8, C, D",
        fixed_element="B, C, D"),
}
