"""Every worked mapping example of the manual's "Mapping Expressions" chapter (L582–1028), by line."""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Index, i
from visa.errors import MappingSyntaxError, UnknownAxisError, UnsupportedFeatureError
from visa.mapping.evaluate import RelationError


def test_symbol_maps_linearly_L634() -> None:
    e = AxisSet(A=8).m["A"]
    assert e.size == 8
    assert [e.map(k) for k in range(8)] == [i(A=k) for k in range(8)]
    assert e.map(8) is None
    assert e.map(0) == i()  # i![A: 0] is the empty index (L671-673)


def test_pair_L678_L689() -> None:
    e = AxisSet(A=8, B=512).m["A, B"]
    assert e.size == 4096
    for k in range(0, 4096, 37):
        assert e.map(k) == i(A=k // 512, B=k % 512)
    assert e.map(2 * 512 + 7) == i(A=2, B=7)
    assert e.map(519) == i(A=1, B=7)  # L674: "Buffer index 519 holds i![A: 1, B: 7]"
    assert e.map(4096) is None


def test_pair_is_right_associative_L680() -> None:
    ax = AxisSet(A=2, B=3, C=4, D=5)
    assert ax.m["A, B, C, D"] == ax.m["A, [B, [C, D]]"] == ax.m["[[A, B], C], D"]
    assert [it.text for it in ax.m["A, B, C, D"].items()] == ["A", "B", "C", "D"]


def test_identity_L726() -> None:
    e = AxisSet().m["1"]
    assert e.size == 1 and e.map(0) == i() and e.map(1) is None


def test_padding_L753() -> None:
    e = AxisSet(C=13, D=61).m["C, D # 64"]
    assert e.size == 13 * 64
    assert e.map(0) == i(C=0, D=0)
    assert e.map(60) == i(C=0, D=60)
    assert e.map(61) is None and e.map(62) is None and e.map(63) is None
    assert e.map(64) == i(C=1, D=0)


def test_resize_L789() -> None:
    e = AxisSet(C=2, D=3).m["C, D = 2"]
    assert [e.map(k) for k in range(5)] == [i(), i(D=1), i(C=1), i(C=1, D=1), None]


def test_stride_and_modulo_L847() -> None:
    ax = AxisSet(A=8, B=512)
    d1, d2, e = ax.m["B / 64"], ax.m["B % 64"], ax.m["B / 64, B % 64"]
    assert (d1.size, d2.size, e.size) == (8, 64, 512)
    assert [d1.map(k) for k in range(8)] == [i({"B / 64": k}) for k in range(8)]
    assert d1.map(8) is None
    assert [d2.map(k) for k in range(64)] == [i({"B % 64": k}) for k in range(64)]
    assert d2.map(64) is None
    assert e == ax.m["B"]
    assert e.map(130) == i(B=130)  # L840: block 2, position 2
    assert e.map(512) is None


def test_stride_modulo_table_L905() -> None:
    e = AxisSet(B=16).m["B / 4, B % 4"]
    for r in range(4):
        for c in range(4):
            assert e.map(4 * r + c) == i(B=4 * r + c)
    table = e.table()
    assert "| B / 4: 2" in table and "B: 10" in table


def test_nested_stride_L930_L950() -> None:
    e = AxisSet(A=8, B=512).m["B / 64, B % 32, B / 32 % 2"]
    for a in range(8):
        for j in range(32):
            for k in range(2):
                assert e.map(64 * a + 2 * j + k) == i(B=64 * a + j + 32 * k)
    assert e.map(67) == i(B=97)  # L941
    assert e.map(512) is None


def test_escape_L982() -> None:
    ax = AxisSet(A=8, B=512)
    L, R = ax.m["A"], ax.m["B"]  # noqa: F841 - used by the escapes below
    assert ax.m["{L}, {R}"] == ax.m["A, B"]
    assert ax.m["{L}, {R}"].text == "{L}, {R}"


def test_escape_must_name_a_mapping_L972() -> None:
    ax = AxisSet(A=8)
    with pytest.raises(UnknownAxisError, match="escape {Nope}"):
        ax.m["{Nope}, A"]


def test_skewed_axis_L986_L1003() -> None:
    ax = AxisSet(A=4, B=4).skew("B'", "B - A")
    e = ax.m["A, B' = 4"]
    table = {(0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (0, 2), (0, 3): (0, 3),
             (1, 0): (1, 1), (1, 1): (1, 2), (1, 2): (1, 3), (1, 3): (1, 0)}
    for (a, bp), (a2, b) in table.items():
        assert e.map(4 * a + bp) == i(A=a2, B=b)
    for a in range(4):
        for bp in range(4):
            assert e.map(4 * a + bp) == i(A=a, B=(bp + a) % 4)  # L1003
    with pytest.raises(UnknownAxisError) as err:  # every axis of the derivation must be declared
        AxisSet(A=4, B=4).skew("B'", "B - Z")
    assert (err.value.call, err.value.axis) == ("skew", "Z") and err.value.fix


def test_linear_combination_sliding_window_L1011_L1016() -> None:
    ax = AxisSet(N=5, F=3)
    e = ax.m["$(N : 1, F : 2)"]
    assert e.size == 1 + (5 - 1) * 1 + (3 - 1) * 2 == 9
    assert set(e.maps(4)) == {i(N=4), i(N=2, F=1), i(F=2)}  # L1016
    with pytest.raises(RelationError):
        e.map(4)
    for n in range(5):
        for f in range(3):
            assert e.position_of(i(N=n, F=f)) == n + 2 * f  # table of L1013


def test_outer_sum_is_linear_combination_L1010() -> None:
    ax = AxisSet(A=3, B=4)
    assert ax.m["$(A : 4, B : 1)"] == ax.m["A, B"]


def test_indirect_sequencing_is_refused_L1004() -> None:
    with pytest.raises(UnsupportedFeatureError, match="L1004"):
        AxisSet(A=8).m["indirect(A)"]


def test_tile_mapping_L960_L970() -> None:
    ax = AxisSet(A=8, B=512)
    tile = ax.m["A, B / 32 = 2 # 16, B % 32"]
    assert tile.size == 8 * 16 * 32
    assert tile.map(0 * 512 + 1 * 32 + 5) == i(B=37)
    assert tile.map(2 * 32) is None  # block 2 of the 16-block footprint is outside the 2-block tile
    assert ax.m["B / 32 = 1"] == ax.m["1"]  # L970


class TestEquivalencesL1017:
    """The six listed equivalences, on small concrete mappings (property tests cover them at random)."""

    ax = AxisSet(A=2, B=3, C=4)

    @pytest.mark.parametrize("e", ["A", "A, B", "[A, B] # 7", "B / 3 # 2", "C % 2, A", "A = 1"])
    def test_identity_of_pairs(self, e: str) -> None:
        E = self.ax.m[e]
        assert E == self.ax.m["{E}, 1"] == self.ax.m["1, {E}"]

    @pytest.mark.parametrize("e,n", [("A, B", 2), ("A, B", 3), ("C, B", 4), ("[A, B] # 8", 4), ("A, C", 8)])
    def test_stride_modulo_decomposition(self, e: str, n: int) -> None:
        E = self.ax.m[e]
        assert E == self.ax.m[f"{{E}} / {n}, {{E}} % {n}"]

    def test_pair_projection(self) -> None:
        A, B = self.ax.m["A, C"], self.ax.m["B"]
        assert self.ax.m["[{A}, {B}] / 3"] == A
        assert self.ax.m["[{A}, {B}] % 3"] == B

    def test_associativity(self) -> None:
        e1, e2, e3 = self.ax.m["A"], self.ax.m["B # 4"], self.ax.m["C / 2"]  # noqa: F841 - used by escapes
        assert self.ax.m["{e1}, {e2}, {e3}"] == self.ax.m["[{e1}, {e2}], {e3}"] == self.ax.m["{e1}, [{e2}, {e3}]"]

    @pytest.mark.parametrize("e", ["A, B", "C % 2 # 3", "[A, B] = 5"])
    def test_idempotent_operations(self, e: str) -> None:
        E = self.ax.m[e]
        n = E.size
        assert E == self.ax.m["{E} / 1"] == self.ax.m[f"{{E}} # {n}"] == self.ax.m[f"{{E}} = {n}"]

    def test_modulo_by_one(self) -> None:
        assert self.ax.m["[A, B] % 1"] == self.ax.m["1"]
        assert self.ax.m["C % 1"] == self.ax.m["1"]


def test_equal_mappings_hash_equal_and_print_the_same() -> None:
    ax = AxisSet(A=2048, B=512)
    assert ax.m["A/8 # 256"] == ax.m["A / 8 # 256"]
    assert hash(ax.m["B / 64, B % 64"]) == hash(ax.m["B"])
    assert str(ax.m["B / 64, B % 64"]) == "B"
    assert ax.m["A / 8"] != ax.m["A % 256"]


def test_composite_cut_keeps_positions_together() -> None:
    # ARCHITECTURE.md: with A = 2, B = 3 and n = 2, position 3 must be {A: 1}, not {B: 3}.
    ax = AxisSet(A=2, B=3)
    e = ax.m["[A, B] / 2, [A, B] % 2"]
    assert e.map(3) == i(A=1)
    assert e == ax.m["A, B"]


def test_stride_must_divide_L874() -> None:
    with pytest.raises(MappingSyntaxError, match="Stride size must divide the original size"):
        AxisSet(A=10).m["A / 3"]


def test_modulo_must_divide_L891() -> None:
    with pytest.raises(MappingSyntaxError, match="Modulo size must divide the original size"):
        AxisSet(A=10).m["A % 3"]


def test_building_methods_refuse_like_the_text_L741_L903() -> None:
    a = AxisSet(A=10).m["A"]
    assert a.stride(5) == AxisSet(A=10).m["A / 5"] and a.modulo(5) == AxisSet(A=10).m["A % 5"]
    for build in (lambda: a.stride(3), lambda: a.modulo(3), lambda: a.pad(8), lambda: a.resize(11)):
        with pytest.raises(MappingSyntaxError) as err:
            build()
        assert err.value.mapping == 'm["A"]' and err.value.fix


def test_unknown_axis_names_axis_and_mapping() -> None:
    with pytest.raises(UnknownAxisError) as err:
        AxisSet(A=8).m["A, Q / 2"]
    assert err.value.axis == "Q"
    assert 'm["A, Q / 2"]' in str(err.value)


def test_stream_example_L1137_L1151() -> None:
    ax = AxisSet(N=4, C=64, H=32, W=32)
    slice_, time, packet = ax.m["C / 2"], ax.m["N, H, W"], ax.m["C % 2"]
    assert (slice_.size, time.size, packet.size) == (32, 4096, 2)
    assert slice_.size * packet.size == 64  # channels per cycle


def test_hbm_chip_element_union_L1064() -> None:
    ax = AxisSet(A=8, B=512)
    chip, element = ax.m["A"], ax.m["B"]
    for c in range(8):
        for e in (0, 7, 511):
            got = chip.map(c)
            other = element.map(e)
            assert got is not None and other is not None
            assert got + other == i(A=c, B=e)


def test_vectorised_evaluation_agrees_with_map() -> None:
    ax = AxisSet(A=3, B=8, C=5)
    e = ax.m["B / 4, A # 4, [B % 4, C] = 17"]
    ev = e.evaluate()
    for k in range(e.size):
        got = e.map(k)
        if got is None:
            assert not ev.valid[k]
        else:
            assert ev.valid[k]
            assert Index({a: int(ev.coords[a][k]) for a in ev.coords}) == got
    pos, held = e.locate({a: ev.coords[a] for a in ev.coords})
    assert np.array_equal(pos[ev.valid], np.arange(e.size)[ev.valid])
    assert held[ev.valid].all()


def test_mappings_pickle_with_skewed_axes_and_escapes_L972_L986() -> None:
    # regression: a mapping was pickled as its text over a fresh AxisSet of its sizes, which knows neither the
    # skewed axis nor the escape's alias, so unpickling (and copy.deepcopy) raised UnknownAxisError
    import copy
    import pickle

    ax = AxisSet(A=4, B=4).skew("B'", "B - A")
    X = ax.m["A"]  # noqa: F841 - the escape below names it
    for e in (ax.m["A, B' = 4"], ax.m["{X}, B"]):
        for back in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e)):
            assert back == e and repr(back) == repr(e) and back.key == e.key
