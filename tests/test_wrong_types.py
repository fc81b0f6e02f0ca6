"""Every public constructor and method on tensors, views, streams and contexts refuses a wrong Python type with a
``TypeError`` or ``VisaError`` whose message names the parameter (issue 16; refusals per design API.md §5).

The table below gives, per call, arguments that work; each argument in turn is replaced by values of the wrong
type for its kind (a mapping given as text, an address given as ``"0"`` or ``None``, a numpy dtype, ...).  A
coverage check makes the table systematic: a public method that takes arguments and is neither in the table nor
exempted (with the reason) fails the test, so a new method cannot skip the check.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from visa import (
    AccumulationKind,
    AccumulationTensor,
    AlignedTensor,
    AxisSet,
    BeginTensor,
    CastTensor,
    CollectTensor,
    Context,
    ContractionTensor,
    DmTensor,
    DmTensorView,
    FetchTensor,
    HbmTensor,
    HbmTensorView,
    HostTensor,
    SwitchTensor,
    TransposeTensor,
    TrfAddress,
    TrfTensor,
    VectorFinalTensor,
    VrfTensor,
    bf16,
    device,
    i16,
    i32,
    launch,
)
from visa.context import TuContext
from visa.engines.vector import BranchMode, ClipBinaryOpF32
from visa.errors import VisaError
from visa.hw import RNGD
from visa.tensors.collective import ShuffledSource
from visa.tensors.device import DmaContext
from visa.tensors.indirect import GatherSource, ScatterTarget
from visa.testing import place_dm

ax = AxisSet(I=256, J=2048)
m = ax.m
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["I"]
#: four chips (shuffles, chip slices) and a gather's table, index axis T and row axis V
bx = AxisSet(A=4, B=4, S=256, D=8, V=16, E=32, T=4)
n = bx.m
TRANSPOSED, SPLIT = m["J, I"], m["I, J / 16, J % 16"]  # result annotations for launch's check

#: wrong values per kind of parameter
WRONG: dict[str, list[object]] = {
    "mapping": ["I", None, 3, ("I",)],
    "int": ["0", None, 1.5, b"0"],
    "dtype": [np.int32, None, int, np.dtype("float32")],
    "pdma": [None, "ctx.pdma", 0],
    "tdma": [None, "ctx.tdma", 0],
    "ctx": [None, "ctx", 0],
    "hw": [None, "RNGD"],
    "view": [None, "view", 0],
    "trf": [None, "trf"],
    "trf_address": [None, "Full", 0],
    "rng": [None, 0, "seed"],
    "array": [None, "text", {"I": 1}],
    "axes": [1.5, 3, [1, 2]],
    "kernel": [None, 3, "kernel"],
    "overflow": [None, 3, "clip"],
    "index": [None, "I", 3],
    "ints": [None, "1 0", 3, [0, "1"], [0.5, 1], {0, 1}, [True, False]],
    "sub": [None, "ctx.sub", 0],
    "tensor": [None, "ids", 0, np.zeros(4, np.int32)],
    "stream": ["J", m["J"], (m["J"],), ("J / 16", "J % 16")],
    "views": [None, "views", 0, [], [None], ["view"]],
    "value": [None, "3", [1, 2], True, "0", b"0", [0]],
}


class World:
    """One context with a tensor of every kind and a stream at every stage (the relu example's shapes)."""

    def __init__(self) -> None:
        ctx = self.ctx = Context.acquire()
        rng = np.random.default_rng(0)
        self.host = HostTensor.rand(bf16, m["I, J"], rng)
        self.vec_host = HostTensor.rand(bf16, m["J"], rng)
        self.hbm = self.host.to_hbm(Chip, m["I, J"], ctx.pdma, 0)
        vec_hbm = self.vec_host.to_hbm(Chip, m["J"], ctx.pdma, 1 << 28)
        self.dm = self.hbm.to_dm(Cluster, Slice, m["J"], ctx.tdma, 0)
        vec_dm = vec_hbm.to_dm(Cluster, Slice, m["J"], ctx.tdma, 1 << 12)
        self.trf = (ctx.sub.begin(vec_dm.view()).fetch(bf16, m["1"], m["J"]).collect(m["J / 16"], m["J % 16"])
                    .to_trf(m["1"], m["J"], TrfAddress.Full))
        self.begin = ctx.main.begin(self.dm.view())
        self.fetch = ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
        self.collect = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]))
        self.aligned = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf))
        self.contracted = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                           .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                           .contract(m["1"]))
        self.accumulated = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                            .collect(m["J / 32, J % 32 / 16"], m["J % 16"])
                            .align(m["J / 32"], m["J % 32"], self.trf).contract(m["1"])
                            .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved))
        self.vinit = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                      .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                      .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init())
        self.vbranch = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                        .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                        .vector_intra_slice_branch(BranchMode.Unconditional))
        self.final = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                      .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                      .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                      .vector_intra_slice_branch(BranchMode.Unconditional).vector_final())
        self.cast = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                     .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                     .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                     .vector_intra_slice_branch(BranchMode.Unconditional).vector_final().cast(bf16, m["1 # 16"]))
        # destinations of the in-place DMAs, a guard's count, a gather's table and indices
        self.hbm_dst = HbmTensor(ctx, bf16, Chip, m["I, J"], 1 << 30)
        self.dm_dst = DmTensor(ctx, bf16, Chip, Cluster, Slice, m["J"], 1 << 17)
        self.gen = DmTensor(ctx, i32, Chip, Cluster, Slice, m["1"], 3 << 17)  # generate mode's one value
        self.count = HostTensor.from_numpy(np.int32(3), i32, m["1"]).to_hbm(Chip, m["1"], ctx.pdma, 1 << 31)
        self.table = (HostTensor.from_numpy(np.arange(16 * 32).reshape(16, 32), i32, n["V, E"], axes="V E")
                      .to_hbm(n["1"], n["V, E"], ctx.pdma, 3 << 30))
        self.dm_table = self.table.to_dm(n["1 # 2"], n["1 # 256"], n["V, E"], ctx.tdma, 1 << 18)
        self.ids = HostTensor.from_numpy(np.array([3, 1, 4, 1]), i32, n["T"], axes="T").to_hbm(
            n["1"], n["T"], ctx.pdma, (3 << 30) + (1 << 20))
        # a four-chip kernel's context: a DM tensor X[A, S, B, D] (chip a holds row a) and its HBM copy
        ctx4 = self.ctx4 = Context(RNGD)
        ctx4.num_chips = 4
        x = np.arange(4 * 256 * 4 * 8, dtype=np.int32).reshape(4, 256, 4, 8)
        self.x4 = place_dm(ctx4, x, i32, n["A"], n["1 # 2"], n["S"], n["B, D"], 0, axes="A S B D")
        self.h4 = self.x4.to_hbm(n["S, B, D"], ctx4.tdma, 0)


Case = tuple[str, Callable[..., Any], dict[str, Any], dict[str, str]]


def cases(w: World) -> list[Case]:
    ctx, hbm, dm = w.ctx, w.hbm, w.dm
    free = iter(range(1 << 26, 1 << 30, 1 << 22))  # fresh HBM addresses
    return [
        ("HostTensor.from_numpy", HostTensor.from_numpy,
         dict(array=np.zeros((256, 2048)), dtype=bf16, mapping=m["I, J"], axes="I J", overflow="error"),
         dict(array="array", dtype="dtype", mapping="mapping", axes="axes", overflow="overflow")),
        ("HostTensor.rand", HostTensor.rand, dict(dtype=i32, mapping=m["J"], rng=np.random.default_rng(1)),
         dict(dtype="dtype", mapping="mapping", rng="rng")),
        ("HostTensor.zeros", HostTensor.zeros, dict(dtype=i32, mapping=m["J"]), dict(dtype="dtype", mapping="mapping")),
        ("HostTensor.numpy", w.host.numpy, dict(axes="I J"), dict(axes="axes")),
        ("HostTensor.to_hbm", w.host.to_hbm, dict(chip=Chip, element=m["I, J"], pdma=ctx.pdma, address=next(free)),
         dict(chip="mapping", element="mapping", pdma="pdma", address="int")),
        ("HbmTensor", HbmTensor, dict(ctx=ctx, dtype=i32, chip=Chip, element=m["J"], address=next(free)),
         dict(ctx="ctx", dtype="dtype", chip="mapping", element="mapping", address="int")),
        ("HbmTensor.from_addr", HbmTensor.from_addr, dict(ctx=ctx, dtype=i32, chip=Chip, element=m["J"], address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", element="mapping", address="int")),
        ("DmTensor", DmTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, element=m["1"],
                                    address=1 << 16),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("DmTensor.from_addr", DmTensor.from_addr, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice,
                                                        element=m["1"], address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("VrfTensor", VrfTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, element=m["1"],
                                      address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("TrfTensor", TrfTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, row=m["1"],
                                      element=m["1"], trf_address=TrfAddress.SecondHalf),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", row="mapping",
              element="mapping", trf_address="trf_address")),
        ("HbmTensor.to_dm", hbm.to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                            address=1 << 14),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensor.to_hbm", hbm.to_hbm, dict(chip=Chip, element=m["I, J"], tdma=ctx.tdma, address=next(free)),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensor.to_host", hbm.to_host, dict(element=m["I, J"], pdma=ctx.pdma),
         dict(element="mapping", pdma="pdma")),
        ("HbmTensor.relabel", hbm.relabel, dict(Element=m["I, J"]), dict(Element="mapping")),
        ("HbmTensor.logical", hbm.logical, dict(axes="I J"), dict(axes="axes")),
        ("DmTensor.to_hbm", dm.to_hbm, dict(element=m["J"], tdma=ctx.tdma, address=next(free)),
         dict(element="mapping", tdma="tdma", address="int")),
        ("DmTensor.to_dm", dm.to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                          address=1 << 15),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.tile", hbm.view().tile, dict(dim=m["I"], size=2, tile_mapping=m["I = 2, J"], start=0),
         dict(dim="mapping", size="int", tile_mapping="mapping", start="int")),
        ("HbmTensorView.relabel", hbm.view().relabel, dict(element=m["I, J"]), dict(element="mapping")),
        ("HbmTensorView.to_dm", hbm.view().to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                                       address=1 << 14),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.to_hbm", hbm.view().to_hbm, dict(chip=Chip, element=m["I, J"], tdma=ctx.tdma,
                                                         address=next(free)),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.to_host", hbm.view().to_host, dict(element=m["I, J"], pdma=ctx.pdma),
         dict(element="mapping", pdma="pdma")),
        ("DmTensorView.to_hbm", dm.view().to_hbm, dict(element=m["J"], tdma=ctx.tdma, address=next(free)),
         dict(element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.to_dm", dm.view().to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                                     address=1 << 15),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.tile", dm.view().tile, dict(dim=m["J"], size=2, tile_mapping=m["J = 2"], start=0),
         dict(dim="mapping", size="int", tile_mapping="mapping", start="int")),
        ("Context.acquire", Context.acquire, dict(hw=RNGD), dict(hw="hw")),
        ("Context.fold", Context.acquire().fold, dict(first=0), dict(first="int")),
        ("TuContext.begin", ctx.main.begin, dict(view=dm.view()), dict(view="view")),
        ("TuContext.begin_interleaved", ctx.main.begin_interleaved,
         dict(axis=m["1 # 2"], lhs=dm.view(), rhs=dm.view()), dict(axis="mapping", lhs="view", rhs="view")),
        ("TuContext.begin_heterogeneous", ctx.main.begin_heterogeneous, dict(axis=m["I"], views=[dm.view()]),
         dict(axis="mapping", views="views")),
        ("TuContext.generate", ctx.sub.generate, dict(view=w.gen.view(), value=3), dict(view="view", value="value")),
        ("device", device, dict(chip=1), dict(chip="int")),
        ("launch", launch, dict(kernel=device(chip=1)(lambda c: None), ctx=ctx), dict(kernel="kernel", ctx="ctx")),
        ("Mapping.position_of", m["J"].position_of, dict(index={"J": 1}), dict(index="index")),
        ("Mapping.map", m["J"].map, dict(position=1), dict(position="int")),
        ("Mapping.pad", m["J"].pad, dict(n=4096), dict(n="int")),
        ("BeginTensor.fetch", w.begin.fetch, dict(dtype=bf16, time=m["J / 32"], packet=m["J % 32"]),
         dict(dtype="dtype", time="mapping", packet="mapping")),
        ("FetchTensor.collect", w.fetch.collect, dict(time=m["J / 32, J % 32 / 16"], packet=m["J % 16"]),
         dict(time="mapping", packet="mapping")),
        ("FetchTensor.commit", w.fetch.commit, dict(element=m["J"], address=1 << 16),
         dict(element="mapping", address="int")),
        ("FetchTensor.transpose", w.fetch.transpose, dict(time=m["J / 32"], packet=m["J % 32"]),
         dict(time="mapping", packet="mapping")),
        ("FetchTensor.commit_view", w.fetch.commit_view, dict(view=dm.view()), dict(view="view")),
        ("CollectTensor.align", w.collect.align, dict(time=m["J / 32"], packet=m["J % 32"], trf=w.trf),
         dict(time="mapping", packet="mapping", trf="trf")),
        ("CollectTensor.to_vrf", w.collect.to_vrf, dict(element=m["J"], address=0),
         dict(element="mapping", address="int")),
        ("CollectTensor.to_trf", w.collect.to_trf, dict(row=m["1"], element=m["J"], address=TrfAddress.Full),
         dict(row="mapping", element="mapping", address="trf_address")),
        ("CollectTensor.cast", w.collect.cast, dict(dtype=bf16, packet=m["J % 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("AlignedTensor.contract", w.aligned.contract, dict(packet=m["1"]), dict(packet="mapping")),
        ("ContractionTensor.accumulate", w.contracted.accumulate,
         dict(time=m["1"], packet=m["1 # 8"], kind=AccumulationKind.Interleaved),
         dict(time="mapping", packet="mapping", kind="trf")),
        ("AccumulationTensor.cast", w.accumulated.cast, dict(dtype=bf16, packet=m["1 # 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("AccumulationTensor.commit", w.accumulated.commit, dict(element=m["1 # 8"], address=1 << 16),
         dict(element="mapping", address="int")),
        ("VectorInitTensor.vector_intra_slice_branch", w.vinit.vector_intra_slice_branch,
         dict(mode=BranchMode.Unconditional), dict(mode="trf")),
        ("VectorBranchTensor.vector_clip", w.vbranch.vector_clip, dict(op=ClipBinaryOpF32.Max, operand=0.0),
         dict(op="trf")),
        ("VectorFinalTensor.cast", w.final.cast, dict(dtype=bf16, packet=m["1 # 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("CastTensor.commit", w.cast.commit, dict(element=m["1 # 4"], address=1 << 13),
         dict(element="mapping", address="int")),
        ("CastTensor.transpose", w.cast.transpose, dict(time=m["1"], packet=m["1 # 16"]),
         dict(time="mapping", packet="mapping")),
        # in-place DMAs (one entry point, visa.tensors.indirect.to_view)
        ("HbmTensor.to_hbm_view", hbm.to_hbm_view, dict(target=w.hbm_dst.view(), tdma=ctx.tdma),
         dict(target="view", tdma="tdma", stream="stream")),
        ("DmTensor.to_dm_view", dm.to_dm_view, dict(target=w.dm_dst.view(), tdma=ctx.tdma),
         dict(target="view", tdma="tdma", stream="stream")),
        ("HbmTensorView.to_dm_view", hbm.view().to_dm_view, dict(target=w.dm_dst.view(), tdma=ctx.tdma),
         dict(target="view", tdma="tdma", stream="stream")),
        ("DmTensorView.to_hbm_view", dm.view().to_hbm_view, dict(target=w.hbm_dst.view(), tdma=ctx.tdma),
         dict(target="view", tdma="tdma", stream="stream")),
        # bitcast (the views' _bitcast)
        ("HbmTensorView.bitcast", hbm.view().bitcast, dict(dtype=i16), dict(dtype="dtype")),
        ("DmTensorView.bitcast", dm.view().bitcast, dict(dtype=i16), dict(dtype="dtype")),
        # gather / scatter staging (_Staged) and the gather's moves (GatherSource._move)
        ("HbmTensorView.gather", w.table.view().gather, dict(axis=n["V"], ids=w.ids),
         dict(axis="mapping", ids="tensor")),
        ("DmTensorView.scatter", w.dm_table.view().scatter, dict(axis=n["V"], ids=w.ids),
         dict(axis="mapping", ids="tensor")),
        ("GatherSource.to_hbm", w.table.view().gather(n["V"], w.ids).to_hbm,
         dict(chip=n["1"], element=n["T, E"], tdma=ctx.tdma, address=next(free)),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int")),
        ("GatherSource.to_dm", w.table.view().gather(n["V"], w.ids).to_dm,
         dict(cluster=n["1 # 2"], slice_=n["T # 256"], element=n["E"], tdma=ctx.tdma, address=3 << 17),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        # guards (one entry point, visa.tensors.guard.when)
        ("TuContext.when", ctx.main.when, dict(tensor=w.count, predicate=lambda v: v > 0),
         dict(tensor="tensor", predicate="kernel")),
        ("DmaContext.when", ctx.tdma.when, dict(tensor=w.count, predicate=lambda v: v > 0),
         dict(tensor="tensor", predicate="kernel")),
        # collectives on four chips (ShuffledSource.stage, shuffled_move, asymmetric_slice)
        ("HbmTensorView.chip_shuffle", w.h4.view().chip_shuffle, dict(perm=[1, 2, 3, 0]), dict(perm="ints")),
        ("DmTensorView.chip_shuffle", w.x4.view().chip_shuffle, dict(perm=[1, 2, 3, 0]), dict(perm="ints")),
        ("ShuffledSource.to_hbm", w.h4.view().chip_shuffle([1, 2, 3, 0]).to_hbm,
         dict(chip=n["A"], element=n["S, B, D"], tdma=w.ctx4.tdma, address=1 << 24),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int", stream="stream")),
        ("ShuffledSource.to_dm", w.x4.view().chip_shuffle([1, 2, 3, 0]).to_dm,
         dict(cluster=n["1 # 2"], slice_=n["S"], element=n["B, D"], tdma=w.ctx4.tdma, address=1 << 12),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int",
              stream="stream")),
        ("DmTensor.asymmetric_chip_slice", w.x4.asymmetric_chip_slice,
         dict(digit=n["B"], sub=w.ctx4.sub, indices=[3, 0, 1, 2], address=1 << 13),
         dict(digit="mapping", sub="sub", indices="ints", address="int")),
        ("DmTensor.asymmetric_cluster_slice", w.x4.asymmetric_cluster_slice,
         dict(digit=n["B / 2"], sub=w.ctx4.sub, indices=[1, 0], address=1 << 13),
         dict(digit="mapping", sub="sub", indices="ints", address="int")),
        # the reference's newer surface (issue 26): SPM, staged slices, memset, fetch lifts, sparse prefixes
        ("DmTensor.to_spm", w.dm_table.to_spm, dict(pe=n["1 # 4"], element=n["V, E"], tdma=ctx.tdma, address=0),
         dict(pe="mapping", element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.to_spm", w.dm_table.view().to_spm,
         dict(pe=n["1 # 4"], element=n["V, E"], tdma=ctx.tdma, address=0),
         dict(pe="mapping", element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.chip_slice", w.x4.view().chip_slice, dict(digit=n["B"], element=n["D"], indices=[3, 0, 1, 2]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("HbmTensorView.chip_slice", w.h4.view().chip_slice,
         dict(digit=n["B"], element=n["S, D"], indices=[3, 0, 1, 2]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("DmTensorView.cluster_slice", w.x4.view().cluster_slice,
         dict(digit=n["B / 2"], element=n["B % 2, D"], indices=[1, 0]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("HbmTensorView.cluster_slice", w.h4.view().cluster_slice,
         dict(digit=n["B / 2"], element=n["S, B % 2, D"], indices=[1, 0]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("ShuffledSource.chip_slice", w.x4.view().chip_shuffle([1, 2, 3, 0]).chip_slice,
         dict(digit=n["B"], element=n["D"], indices=[3, 0, 1, 2]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("ShuffledSource.cluster_slice", w.x4.view().chip_shuffle([1, 2, 3, 0]).cluster_slice,
         dict(digit=n["B / 2"], element=n["B % 2, D"], indices=[1, 0]),
         dict(digit="mapping", element="mapping", indices="ints")),
        ("DmTensorView.memset", dm.view().memset, dict(value=0.0, ctx=ctx.sub), dict(value="value", ctx="ctx")),
        ("HbmTensorView.memset", hbm.view().memset, dict(value=0.0, ctx=ctx.tdma), dict(value="value", ctx="ctx")),
        ("FetchTensor.fetch_slice_lift", w.fetch.fetch_slice_lift, dict(slice_=m["I"], time=m["1"]),
         dict(slice_="mapping", time="mapping")),
        ("FetchTensor.fetch_cluster_lift", w.fetch.fetch_cluster_lift, dict(cluster=Cluster, time=m["1"]),
         dict(cluster="mapping", time="mapping")),
        ("FetchTensor.fetch_chip_lift", w.fetch.fetch_chip_lift, dict(chip=Chip, time=m["1"]),
         dict(chip="mapping", time="mapping")),
        ("GatherSource.sparse_prefix", w.table.view().gather(n["V"], w.ids).sparse_prefix, dict(valid_length=2),
         dict(valid_length="int")),
    ]


#: Public methods that take arguments but are not user calls, or are covered through another row.
EXEMPT = {
    "check_context": "internal guard (takes the operation's own context)",
    "check_readable": "internal guard (takes the calling operation's name)",
    "image": "direct byte access for tests, by chip number",
    "mapping": "looks up a level by name; a wrong name is a KeyError of a dict lookup",
    "level": "as mapping()",
    "take": "internal typestate step of every stage",
    "then": "internal typestate step of every stage",
    "record": "the schedule's internal bookkeeping",
    "trace": "a report (pid is a number shown as is)",
    "write_trace": "a report written to a path",
    "plot_layout": "a picture; its one keyword (slices) is compared with a count, so a non-number is a TypeError",
    "fetch_with_table": "as fetch (same dtype/mapping checks) plus a LookupTable",
    "fetch_with_zero_point": "as fetch plus a zero point",
    "fetch_with_zero_points": "as fetch plus zero points",
    "switch": "as collect (same mapping checks) plus a SwitchConfig",
    "commit_view": "covered on FetchTensor",
    "collect": "covered on FetchTensor",
    "commit": "covered on FetchTensor, AccumulationTensor and CastTensor",
    "transpose": "covered on FetchTensor and CastTensor",
    "cast": "covered on CollectTensor, AccumulationTensor and VectorFinalTensor",
    "relabel": "covered on HbmTensor and the views",
    "logical": "covered on HbmTensor",
    "to_dm": "covered on HbmTensor, DmTensor and both views",
    "to_hbm": "covered on every tensor and view",
    "check_chips": "internal guard (as check_context: takes the operation's own context)",
    "stage": "internal step of the views' chip_shuffle / cluster_swap (covered through chip_shuffle)",
    "to_hbm_view": "covered on HbmTensor and DmTensorView (one entry point, indirect.to_view)",
    "to_dm_view": "covered on DmTensor and HbmTensorView (one entry point, indirect.to_view)",
    "gather": "covered on HbmTensorView (the staged classes' constructor)",
    "scatter": "covered on DmTensorView (the staged classes' constructor)",
    "bitcast": "covered on both views",
    "chip_shuffle": "covered on both views (ShuffledSource.stage)",
    "when": "covered on TuContext and DmaContext (one entry point, guard.when)",
}

CLASSES = [HostTensor, HbmTensor, DmTensor, TrfTensor, VrfTensor, HbmTensorView, DmTensorView, Context, TuContext,
           BeginTensor, FetchTensor, CollectTensor, SwitchTensor, AlignedTensor, ContractionTensor,
           AccumulationTensor, CastTensor, TransposeTensor, VectorFinalTensor, DmaContext, ShuffledSource,
           GatherSource, ScatterTarget]


@pytest.fixture(scope="module")
def world() -> World:
    return World()


def test_every_public_method_with_arguments_is_in_the_table(world: World) -> None:
    covered = {name.split(".")[-1] for name, *_ in cases(world)}
    missing = []
    for cls in CLASSES:
        for name, fn in inspect.getmembers(cls, callable):
            if name.startswith("_") or name in covered or name in EXEMPT:
                continue
            params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
            if params:
                missing.append(f"{cls.__name__}.{name}")
    assert not missing, f"add these to the wrong-type table (or EXEMPT, with a reason): {missing}"


def test_wrong_types_are_refused_naming_the_parameter(world: World) -> None:
    failures = []
    count = 0
    schedules = (world.ctx.schedule, world.ctx4.schedule)
    for name, fn, good, kinds in cases(world):
        for param, kind in kinds.items():
            for bad in WRONG[kind]:
                count += 1
                args = {**good, param: bad}
                ops = [len(s.ops) for s in schedules]
                try:
                    fn(**args)
                except (TypeError, VisaError) as err:
                    if [len(s.ops) for s in schedules] != ops:
                        failures.append(f"{name}({param}={bad!r}): refused after putting an operation on the "
                                        "schedule")
                    if type(err) is TypeError and not isinstance(err, VisaError):
                        failures.append(f"{name}({param}={bad!r}): a bare TypeError: {err}")
                    elif param.rstrip("_") not in str(err) and param not in str(err):
                        failures.append(f"{name}({param}={bad!r}): the message does not name {param}: {err}")
                except Exception as err:  # noqa: BLE001 - every escape is collected and reported
                    failures.append(f"{name}({param}={bad!r}): {type(err).__name__} escaped: {err}")
                else:
                    failures.append(f"{name}({param}={bad!r}) was accepted")
    assert count > 300
    assert not failures, "\n".join(failures)


def test_device_validates_its_chip_count() -> None:
    for bad in (2.5, "2", None, True):
        with pytest.raises(TypeError, match="parameter chip must be an int"):
            device(chip=bad)  # type: ignore[arg-type]


def test_launch_checks_the_result_against_the_annotation(world: World) -> None:
    ctx = world.ctx

    @device(chip=1)
    def none(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return None  # type: ignore[return-value]

    @device(chip=1)
    def number(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return 3  # type: ignore[return-value]

    @device(chip=1)
    def dm_instead(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return world.dm  # type: ignore[return-value]

    @device(chip=1)
    def says_none(ctx: Context) -> None:
        return world.hbm  # type: ignore[return-value]

    for kernel, got in ((none, "None"), (number, "3"), (dm_instead, "DmTensor"), (says_none, "HbmTensor")):
        with pytest.raises(TypeError, match=f"parameter return must be .*got {got}"):
            launch(kernel, ctx)

    @device(chip=1)
    def fine(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return world.hbm

    assert launch(fine, ctx) is world.hbm


def test_launch_checks_the_results_dtype_and_mappings(world: World) -> None:
    from visa.errors import DtypeError, LayoutError

    ctx = world.ctx

    @device(chip=1)
    def wrong_dtype(ctx: Context) -> HbmTensor[i32, Any, Any]:
        return world.hbm  # type: ignore[return-value]

    @device(chip=1)
    def wrong_layout(ctx: Context) -> HbmTensor[bf16, Any, TRANSPOSED]:
        return world.hbm  # type: ignore[return-value]

    @device(chip=1)
    def equivalent_layout(ctx: Context) -> HbmTensor[bf16, Chip, SPLIT]:
        return world.hbm  # type: ignore[return-value]

    with pytest.raises(DtypeError, match="annotated to return i32 elements"):
        launch(wrong_dtype, ctx)
    with pytest.raises(LayoutError) as err:
        launch(wrong_layout, ctx)
    assert err.value.level == "Element" and 'm["J, I"]' in str(err.value)
    assert launch(equivalent_layout, ctx) is world.hbm  # equal by the manual's equivalence (L1017–1028)


def test_a_float_address_is_refused_after_the_equal_int_was_accepted() -> None:
    """A tensor handle's placement memo (``handles._CREATED``) is looked up for int addresses only: 4096.0 and
    False equal 4096 and 0 as keys, and once those were accepted a float or bool address skipped the type check
    (found by a review, session 38)."""
    from visa import AxisSet, Context, HbmTensor, bf16
    from visa.errors import WrongTypeError

    mm = AxisSet(I=256, J=64).m
    ctx = Context.acquire()
    keep = [HbmTensor(ctx, bf16, mm["1"], mm["I, J"], 4096), HbmTensor(ctx, bf16, mm["1"], mm["I, J"], 0)]
    for address in (4096.0, False):
        with pytest.raises(WrongTypeError, match="address must be an int"):
            HbmTensor(ctx, bf16, mm["1"], mm["I, J"], address)  # type: ignore[arg-type]
    assert [t.address for t in keep] == [4096, 0]
