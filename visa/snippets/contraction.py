"""Snippets for the Contraction Engine (the manual's dot product, :func:`visa.snippets.base.dot`: the TRF,
align, contract, accumulate; manual "Contraction Engine", L3670–4545)."""

from __future__ import annotations

from visa.snippets.base import Snippet, dot

__all__ = ["CONTRACTION"]

#: site key → the failing and the fixed program.
CONTRACTION: dict[str, Snippet] = {
    "aligner.check_context TypestateError: the sub context has": dot(
        {"begin": "ctx.sub.begin(lhs.view())   # the sub context has no Contraction Engine"}),
    "contraction.align VisaError: align needs a trftensor": dot(
        {"align": '.align(m["A / 32"], m["A % 32"], rhs)   # the DM tensor, not its TRF copy'}),
    "aligner._tiles LayoutError: outtime does not start": dot({"align": '.align(m["A / 16"], m["A % 32"], trf)'}),
    "aligner._plan HardwareLimitError: outpacket holds elements bytes": dot(
        {"align": '.align(m["A / 32"], m["A % 16"], trf)   # a computation packet is 64 bytes: 32 bf16'}),
    "aligner._plan LayoutError: axis indexes the rows": dot(
        {"to_trf": '.to_trf(m["A / 1024"], m["A % 1024"], TrfAddress.Full)'}),   # A in the Rows and the packet
    "collect._agreement LayoutError: the stream delivers elements": dot(
        {"to_trf": '.to_trf(m["1"], m["A # 4096"], TrfAddress.Full)'}),   # 4096 positions for 2048 elements
    "collect._agreement LayoutError: position of holds but": dot(
        {"to_trf": '.to_trf(m["1"], m["A % 16, A / 16"], TrfAddress.Full)'}),   # not the order the flits come in
    "reducer._plan_contract LayoutError: outpacket is not the": dot({"contract": '.contract(m["A % 2"])'}),
    "contraction.accumulate VisaError: the accumulation kind must": dot(
        {"accumulate": '.accumulate(m["1"], m["1 # 8"], "Interleaved")'}),
    "reducer._plan_accumulate LayoutError: accumulation outputs packet m": dot(
        {"accumulate": '.accumulate(m["1"], m["1 # 4"], AccumulationKind.Interleaved)'}),
}
