"""A tour of the mapping algebra: the manual's worked mappings and sequencer configurations.

Run with ``visa run examples/mapping_tour.py``.  Every line checks the manual's own answer.
"""

from visa import AxisSet, i
from visa.mapping.sequencer import derive, fetch_size


def main() -> None:
    """Each worked mapping and sequencer configuration of the manual, printed and checked."""
    ax = AxisSet(A=8, B=512)
    e = ax.m["A, B"]
    print(f"{e!r}: size {e.size}, map(519) = {e.map(519)}")  # manual L675–678
    assert e.map(519) == i(A=1, B=7)

    nested = ax.m["B / 64, B % 32, B / 32 % 2"]
    print(f"{nested!r}: map(67) = {nested.map(67)}")  # manual L928, L946–950
    assert nested.map(67) == i(B=97)
    assert ax.m["B / 64, B % 64"] == ax.m["B"]  # manual L845, L905
    print(ax.m["B / 64, B % 64"], "≡", ax.m["B"])

    print(AxisSet(B=16).m["B / 4, B % 4"].table())  # manual L906–913

    cases = [
        # (line, axes, buffer, time, packet, the manual's configuration)
        (1378, dict(N=4, C=3, H=8, W=8), "N, C, H, W", "W, H, C, N", "1", "[8 : 1, 8 : 8, 3 : 64, 4 : 192] : 1"),
        (1440, dict(A=8, B=8, C=8), "A, B, C # 32", "B, A", "C # 16", "[8 : 32, 8 : 256, 16 : 1] : 16"),
        (1474, dict(A=8, B=8, C=4), "A, B, C # 8", "A % 2, B % 4, A / 2, B / 4", "C # 32",
         "[2 : 64, 4 : 8, 4 : 128, 2 : 32, 32 : 1] : 32"),
        (1510, dict(A=16, B=8, C=8), "A, B, C", "A / 4, A % 4 = 3, B / 4, B % 4 = 2", "C",
         "[4 : 256, 3 : 64, 2 : 32, 2 : 8, 8 : 1] : 8"),
        (1546, dict(A=16, T=4, P=4), "A", "T, A", "P", "[4 : 0, 16 : 1, 4 : 0] : 4"),
        (1581, dict(N=8, C=8, H=8, W=32), "N, C, H, W",
         "W / 16, H % 2, H / 2, C / 2, C % 2, N / 2, N % 2, W / 8 % 2", "W % 8",
         "[2 : 16, 2 : 32, 4 : 64, 8 : 256, 8 : 2048, 16 : 1] : 16"),
    ]
    print("\nsequencer configurations (manual §Sequencer):")
    for line, axes_, buf, time, packet, want in cases:
        a = AxisSet(**axes_)
        got = derive(a.m[buf], a.m[time], a.m[packet])
        fs = fetch_size(got.packet_size, got.contiguous_elements(), (1, 2, 4, 8, 16, 32))
        print(f"  L{line}: {buf:>14} -> [{time}] : [{packet}]\n          {got}   (i8 fetch_size {fs})")
        assert str(got) == want, (line, str(got), want)


if __name__ == "__main__":
    main()
