"""The inverse of a mapping whose axis is split between a symbol and a composite (issue 23, finding 7).

``G / 2, [G % 2, D] # 131072``: the symbol G holds the multiples of 2, the padded composite G's remainder and D.
Above the table inverse's limit (2**24 positions: the DM side of every transfer, a slice's 512 KB) each atom is
now inverted on its own share of the coordinate, so a gather or scatter whose index axis is split between Slice
and Element is no longer refused.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, HostTensor
from visa import dtypes as dt
from visa.mapping.evaluate import _table_inverse, inverse

MB = 1 << 20


def test_finding7_the_issue_probe() -> None:
    g = AxisSet(G=512, D=128).m["G / 2, [G % 2, D] # 131072"]
    assert g.size > 1 << 24
    assert g.position_of({"G": 1, "D": 0}) == 128
    at = g.position_of({"G": 511, "D": 127})
    assert at is not None and g.map(at) == {"G": 511, "D": 127}
    assert g.position_of({"G": 512, "D": 0}) is None and g.position_of({"D": 128}) is None


def test_finding7_gather_and_scatter_with_the_index_axis_split_between_slice_and_element() -> None:
    ax = AxisSet(V=16, D=8, T=512)
    m = ax.m
    ctx = Context.acquire()
    rng = np.random.default_rng(23)
    tab = rng.integers(-99, 99, (16, 8)).astype(np.int32)
    table = HostTensor.from_numpy(tab, dt.i32, m["V, D"], axes="V D").to_hbm(m["1"], m["V, D"], ctx.pdma, 0)
    ids_np = rng.integers(0, 16, 512).astype(np.int32)
    ids = HostTensor.from_numpy(ids_np, dt.i32, m["T"], axes="T").to_hbm(m["1"], m["T"], ctx.pdma, MB)
    out = table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T / 2"], m["T % 2, D"], ctx.tdma, 0)
    assert np.array_equal(out.logical("T D"), tab[ids_np])
    # scatter rows back from the split layout (distinct rows: the first 16 tokens to a permutation of V)
    perm = rng.permutation(16).astype(np.int32)
    small = AxisSet(V=16, D=8, T=16)
    sm = small.m
    src_np = rng.integers(-99, 99, (16, 8)).astype(np.int32)
    src = HostTensor.from_numpy(src_np, dt.i32, sm["T, D"], axes="T D").to_hbm(sm["1"], sm["T, D"], ctx.pdma, 2 * MB)
    src_dm = src.to_dm(sm["1 # 2"], sm["T / 2 # 256"], sm["T % 2, D"], ctx.tdma, 1 << 12)
    sids = HostTensor.from_numpy(perm, dt.i32, sm["T"], axes="T").to_hbm(sm["1"], sm["T"], ctx.pdma, 3 * MB)
    dst = HostTensor.from_numpy(np.zeros((16, 8), np.int32), dt.i32, sm["V, D"], axes="V D").to_hbm(
        sm["1"], sm["V, D"], ctx.pdma, 4 * MB)
    src_dm.to_hbm_view(dst.view().scatter(sm["V"], sids), ctx.tdma)
    want = np.zeros((16, 8), np.int32)
    want[perm] = src_np
    assert np.array_equal(dst.logical("V D"), want)


#: (layout, its composite): the axis G split between the symbol and a padded composite, in either order
FORMS = [("G / {k}, [{c}] # {n}", "G % {k}, D"), ("[{c}] # {n}, G / {k}", "G % {k}, D"),
         ("G / {k}, [{c}] # {n}", "D, G % {k}"), ("[{c}] # {n}, G % {k}", "D, G / {k}"),
         ("G / {k} # {p}, [{c}] # {n}", "G % {k}, D")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(FORMS), g=st.sampled_from([4, 6, 8, 12]), d=st.integers(1, 5), extra=st.integers(0, 7),
       data=st.data())
def test_split_axis_inverse_is_exact_without_the_table(form: tuple[str, str], g: int, d: int, extra: int,
                                                       data: st.DataObject) -> None:
    """The digit inverse (what runs above the table's limit) holds exactly the indices the table inverse holds,
    at positions that map back to them."""
    k = data.draw(st.sampled_from([x for x in range(2, g + 1) if g % x == 0]))
    ax = AxisSet(G=g, D=d)
    comp = form[1].format(k=k)
    text = form[0].format(k=k, c=comp, n=ax.m[comp].size + extra, p=g // k + 1)
    mp = ax.m[text]
    gg, dd = np.meshgrid(np.arange(-1, g + 1), np.arange(-1, d + 1), indexing="ij")
    coords = {"G": gg.reshape(-1), "D": dd.reshape(-1)}
    shape = gg.reshape(-1).shape
    pos, held = inverse(mp.canon, coords, shape, verify=True)
    want_pos, want_held = _table_inverse(mp.canon, coords, shape)
    assert np.array_equal(held, want_held), text
    ev = mp.evaluate(np.where(held, pos, 0))
    for axis in mp.axes:  # (an axis of size 1 is not used: broadcast, ignored by the inverse)
        assert np.array_equal(ev.coord(axis)[held], coords[axis][held]), text
