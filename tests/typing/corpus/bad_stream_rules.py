"""Switch, collect, commit, cast and transpose refusals, each from its engine's plan (L3054–3669, L2145–2354,
L6756–7041)."""

from visa import CollectTensor, FetchTensor, axes, bf16, i8, i32, m
from visa.engines.switch import SwitchConfig

axes(A=256, B=64, C=63, X=4, M=8, N=32)


def switch_topology(s: FetchTensor[i8, m["1"], m["1 # 2"], m["A"], m["B"], m["C # 64"]]) -> None:
    s.switch(m["A / 4, X"], m["B / 4, A / 2 % 2, B % 4, A % 2"], SwitchConfig.Broadcast01(slice1=3, slice0=2, time0=4))


def collect_not_normalised(s: FetchTensor[i8, m["1"], m["1 # 2"], m["A"], m["M"], m["N # 64"]]) -> None:
    s.collect(m["M"], m["N # 64"])


def commit_not_a_flit(s: FetchTensor[i32, m["1"], m["1 # 2"], m["A"], m["M"], m["N % 4"]]) -> None:
    s.commit(m["M, N % 4"], 0)


def cast_pair(s: CollectTensor[i32, m["1"], m["1 # 2"], m["A"], m["M"], m["M # 8"]]) -> None:
    s.cast(bf16, m["M # 9"])


def transpose_limits(s: CollectTensor[i8, m["1"], m["1 # 2"], m["A"], m["M, N"], m["B % 8 # 32"]]) -> None:
    s.transpose(m["M, B % 8"], m["N # 32"])
