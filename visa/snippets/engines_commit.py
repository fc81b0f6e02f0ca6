"""Snippets for the Commit Engine (``visa/engines/commit.py``, ``visa/stream/commit.py``; manual "Commit
Engine", L2149–2337), the Cast Engine's output packet and the register-file loads (``visa/engines/collect.py``):
one pass over a DM tensor (:func:`visa.snippets.base.stream`) whose commit breaks one rule."""

from __future__ import annotations

from visa.snippets.base import Snippet, module, stream
from visa.snippets.engines_vector import VE_ALL, ve

__all__ = ["ENGINES_COMMIT"]

_SUB = {"begin": "ctx.sub.begin(d.view())", "collect": ""}   # the sub context commits what it fetched
_COUNT = ('c = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["1 # 2"], 1 << 14)   # each slice\'s count\n'
          "{}")
_BY_C = '.commit(m["A % 8"], 1 << 12, valid_count=c.view().tile(m["1 # 2"], 1, m["1"], 0))'
_FILTER = ve("\n .vector_filter(ValidBranchIds.of(0))")   # every lane passes: 8 kept per packet
_PACKED = {"imports": VE_ALL, "vector": _FILTER}

_GEN = ("from visa import Context, DmTensor, axes, {dtype}, m\n\naxes(N=4)\nctx = Context.acquire()\n"
        't = DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["1 # 256"], m["N{pad}"], {address})')
_GEN_CALL = 'ctx.sub.generate({view}, 77)   # write 77 into every slice\'s element'
_ONE = 't.view().tile(m["N"], 1, m["N = 1{pad}"], 2)'


def _generate(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """Generate mode (ITOS, sub context, L2325–2326): one 32-bit value into a one-element view."""
    base = {"dtype": "i32", "pad": "", "address": "256", "view": _ONE.format(pad="")}
    a, b = base | failing, base | (fixed or {})
    return module(_GEN.format(**a), _GEN_CALL.format(**a), _GEN_CALL.format(**b)) if a["dtype"] == b["dtype"] \
        else Snippet(module(_GEN.format(**a), _GEN_CALL.format(**a), "").failing,
                     module(_GEN.format(**b), "", _GEN_CALL.format(**b)).fixed)


_CAST = {"imports": "from visa import bf16\n", "dtype": "f32", "fetch": '.fetch(f32, m["1"], m["A % 8"])',
         "commit": '.commit(m["A % 8 # 16"], 1 << 12)'}
_ADD = "\n .vector_fxp(FxpBinaryOp.AddFxp, 1)"
_STALE = ("from visa import Context, DmTensor, axes, i32, m\n\naxes(A=2048)\nctx = Context.acquire()\n"
          'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)\n'
          "d.view().memset(7, ctx.sub)\n"
          'pass_ = ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])')
_WIDE = {"imports": "from visa import i9\n", "axes": "", "dtype": "i8", "element": 'm["A % 32"]',
         "collect": '.collect(m["1"], m["A % 32"])', "commit": '.commit(m["A % 32"], 1 << 12)'}
_PLAN = '''
from visa import RNGD, axes, {dtype}, m
from visa.engines import commit

axes({axes})
# {question} (the Commit Engine's own plan, as the mypy plugin and `.commit(...)` / `.commit_view(...)` call it)
commit.plan(RNGD, {dtype}, m["1"], m["1 # 2"], m["1 # 256"], m["{time}"], m["{packet}"], m["{element}"]{region})
'''


def _plan(base: dict[str, str], failing: dict[str, str], fixed: dict[str, str]) -> Snippet:
    """A write rule asked of :func:`visa.engines.commit.plan` directly (Chip, Cluster, Slice as one slice's)."""
    return Snippet(_PLAN.format(**(base | failing)), _PLAN.format(**(base | fixed)))


#: T = 3 steps padded to 4; the padding step lands where the Element holds X = 1.
_STEPS = {"dtype": "i32", "axes": "P=8, T=3, X=2", "time": "T # 4", "packet": "P", "element": "X, T, P", "region": "",
          "question": "three steps of 8 lanes (a fourth of padding) into an Element that also holds X = 1"}
#: 20 bytes padded to a 32-byte flit, into a view at the start of a 64-byte tensor.
_VIEW = {"dtype": "i8", "axes": "A=20, W=64", "time": "1", "packet": "A # 32", "element": "A # 32",
         "region": ', region=(m["W"], 0)',
         "question": "20 bytes (a 32-byte flit) into a view whose 12 bytes of padding are the tensor's W = 20..31"}


def _rows(head: str, failing: str, fixed: str, n: str, fixed_n: str) -> Snippet:
    """``head`` then ``N`` rows of weights in DM (``n`` failing, ``fixed_n`` fixed) and ``failing`` / ``fixed``."""
    rows = ("axes(A=256, N={})\nctx = Context.acquire()\n"
            'rhs = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N, A"], 0)   # N rows of weights')
    return module(head, rows.format(n) + "\n" + failing, rows.format(fixed_n) + "\n" + fixed)


#: site key → the failing and the fixed program.
ENGINES_COMMIT: dict[str, Snippet] = {
    "commit.plan_stage HardwareLimitError: the context's commit engine": stream(
        {"commit": '.commit(m["A % 8"], 1 << 12, valid_count=3)'},
        _SUB | {"commit": '.commit(m["A % 8"], 1 << 12, valid_count=3)'}),
    "commit.plan_valid_count LayoutError: a valid count of": stream(
        _SUB | {"commit": '.commit(m["A % 8"], 1 << 12, valid_count=9)'},
        _SUB | {"commit": '.commit(m["A % 8"], 1 << 12, valid_count=8)'}),
    "commit.valid_count_keep LayoutError: the valid count at": stream(
        _SUB | {"before": _COUNT.format("c.view().memset(9, ctx.sub)\n"),
                "commit": _BY_C},
        _SUB | {"before": _COUNT.format("c.view().memset(3, ctx.sub)\n"),
                "commit": _BY_C}),
    "commit._valid_count PoisonError: the valid count was": stream(
        _SUB | {"before": _COUNT.format(""), "commit": _BY_C},
        _SUB | {"before": _COUNT.format("c.view().memset(3, ctx.sub)\n"),
                "commit": _BY_C}),
    "commit.plan_generate DtypeError: generate mode writes a": _generate(
        {"dtype": "i8", "pad": ", 1 # 4", "view": _ONE.format(pad=", 1 # 4")}),
    "commit.plan_generate LayoutError: generate mode writes one": _generate({"view": "t.view()"}),
    "commit.packed_packet LayoutError: the packed axis has": stream(
        _PACKED | {"axes": ", K=9", "commit": '.commit(m["K"], 1 << 12)'},
        _PACKED | {"axes": ", K=8", "commit": '.commit(m["K"], 1 << 12)'}),
    "commit.packed_packet LayoutError: the element of a": stream(
        _PACKED | {"axes": ", K=8, J=2", "commit": '.commit(m["J, K"], 1 << 12)'},
        _PACKED | {"axes": ", K=8, J=2", "commit": '.commit(m["K"], 1 << 12)'}),
    "commit.check_packed_counts LayoutError: the packet at chip": stream(
        _PACKED | {"axes": ", K=4", "commit": '.commit(m["K"], 1 << 12)'},
        _PACKED | {"axes": ", K=8", "commit": '.commit(m["K"], 1 << 12)'}),
    "commit._plan LayoutError: lives only in the": stream(
        _WIDE | {"fetch": '.fetch(i9, m["1"], m["A % 32"])   # i8 widened to i9'},
        _WIDE | {"fetch": '.fetch(i8, m["1"], m["A % 32"])'}),
    "cast._plan LayoutError: outpacket is not the": stream(
        _CAST | {"vector": '\n .cast(bf16, m["A % 8, 1 # 2"])'}, _CAST | {"vector": '\n .cast(bf16, m["A % 8 # 16"])'}),
    "collect._plan_trf HardwareLimitError: the trf is used": _rows(
        "from visa import Context, DmTensor, TrfAddress, axes, bf16, m\n\n",
        '(ctx.sub.begin(rhs.view()).fetch(bf16, m["N"], m["A"]).collect(m["N, A / 16"], m["A % 16"])\n'
        ' .to_trf(m["N"], m["A"], TrfAddress.Full))',
        '(ctx.sub.begin(rhs.view()).fetch(bf16, m["N"], m["A"]).collect(m["N, A / 16"], m["A % 16"])\n'
        ' .to_trf(m["N"], m["A"], TrfAddress.Full))', "3", "4"),
    "channel.check_context TypestateError: dual channel mode combines": stream(
        {"begin": "ctx.sub.begin(d.view(), dual_channel=True)", "collect": ""},
        {"begin": "ctx.main.begin(d.view(), dual_channel=True)"}),
    "stages.StreamTensor.__getattr__ TypestateError: after a would discard": stream(
        {"imports": VE_ALL, "vector": ve(_ADD), "commit": '.to_vrf(m["A % 8"], 0)'},
        {"imports": VE_ALL, "vector": ve(_ADD), "commit": '.commit(m["A % 8"], 1 << 12)'}),
    "collect.input_regions StaleTensorError: this pass read and": module(
        _STALE, 'd.view().memset(0, ctx.sub)   # while the pass is open\npass_.commit(m["A % 8"], 1 << 12)',
        'pass_.commit(m["A % 8"], 1 << 12)\nd.view().memset(0, ctx.sub)   # after the pass'),
    "commit._check_addresses LayoutError: time step writes padding": _plan(
        _STEPS, {}, {"element": "T # 4, P"}),
    "commit._check_addresses AddressError: the commit would write": _plan(
        _VIEW, {}, {"region": ', region=(m["A # 32"], 0)'}),
}
