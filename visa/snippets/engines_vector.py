"""Snippets for the Vector Engine's rules (``visa/engines/vector``, ``visa/stream/vector``; manual "Vector
Engine", L4551–6755): one Tensor Unit pass over a DM tensor (:func:`visa.snippets.base.stream`) whose Vector
Engine lines break one rule (the stage order, the operands, the branch modes, the reduces, the operand
register)."""

from __future__ import annotations

from visa.snippets.base import KERNEL_LINES, VECTOR, Snippet, kernel, module, stream

__all__ = ["ENGINES_VECTOR", "ve", "VE_ALL"]

#: The Vector Engine names the snippets use (one import line).
VE_ALL = ("from visa.engines.vector import (BranchMode, FpBinaryOp, FpTernaryOp, FpUnaryOp, FxpBinaryOp, GroupId,\n"
          "    InputCmp,"
          "    ClipBinaryOpF32, IntraSliceReduceOpF32, InterSliceReduceOpI32, LogicBinaryOpI32, OperandRead, Stash,\n"
          "    BinaryArgMode, TernaryOperand, UnaryArgMode,\n"
          "    ValidBranchIds, VeBranchOperand, WriteOperand)\n")
_I32 = {"imports": VE_ALL}
_F32 = {"imports": VE_ALL, "dtype": "f32", "fetch": '.fetch(f32, m["1"], m["A % 8"])'}
_SPLIT = '\n .vector_split(m["A % 8 / 4"], m["A % 4"])'   # 8 lanes → two time steps of 4 (Way4)
_CONCAT = '\n .vector_concat(m["1"], m["A % 8"])'          # and back to 8 lanes
_ADD = "\n .vector_fxp(FxpBinaryOp.AddFxp, 1)"
_ADD_F = "\n .vector_fp_binary(FpBinaryOp.AddF, 1.0)"


def ve(ops: str, branch: str = "BranchMode.Unconditional") -> str:
    """The Vector Engine lines (init, branch ``branch``, ``ops``, final) indented as the stream snippet's."""
    return VECTOR.format(ops=ops).replace("           ", " ").replace("BranchMode.Unconditional", branch)


def _v(lines: dict[str, str], ops: str, fixed_ops: str, branch: str = "BranchMode.Unconditional",
       fixed_branch: str = "BranchMode.Unconditional") -> Snippet:
    return stream(lines | {"vector": ve(ops, branch)}, lines | {"vector": ve(fixed_ops, fixed_branch)})


def _way4(ops: str, fixed_ops: str) -> Snippet:
    """An f32 pass whose ``ops`` run on Way4 packets (between a split and a concat, L4842–4947)."""
    return _v(_F32, _SPLIT + ops + _CONCAT, _SPLIT + fixed_ops + _CONCAT)


def _raw(lines: dict[str, str], vector: str, fixed: str) -> Snippet:
    """A pass whose Vector Engine lines are given whole (no Branch stage, or no vector_final)."""
    return stream(lines | {"vector": vector}, lines | {"vector": fixed})


_VRF = ('v = VrfTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)   # never loaded\n')
_LOADED = ('v = (ctx.sub.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])\n'
           '     .to_vrf(m["A % 8"], 0))   # the VRF operand, loaded by the sub context\n')
_VRF_IMPORTS = "from visa import VrfTensor\n" + VE_ALL

_INTER_HEAD = (VE_ALL.replace("InterSliceReduceOpI32", "InterSliceReduceOpF32, InterSliceReduceOpI32")
               + "from visa import Context, DmTensor, axes, f32, i32, m\n\naxes(A={a}, R=4)\nctx = Context.acquire()\n"
               'd = DmTensor(ctx, {dtype}, m["1"], {cluster}, {slice_}, m["A % 8"], 0)   # 4 rows R over 4 slices each')
_INTER_PASS = ('(ctx.main.begin(d.view())\n .fetch({dtype}, m["1"], m["A % 8"])\n .collect(m["1"], m["A % 8"])'
               '\n .vector_init(){before}\n .vector_inter_slice_reduce({slice2}, m["1"], {op}){after}'
               '\n .vector_final()\n .commit(m["A % 8"], 1 << 12))')
_REDUCED = 'm["A / 8, 1 # 4"]'   # R reduced: a dummy keeps 256 slices


def _inter(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """The manual's inter-slice reduce over R (L4608–4623) with ``failing``'s fields replaced (and ``fixed``'s)."""
    base = {"a": "512", "dtype": "i32", "cluster": 'm["1 # 2"]', "slice_": 'm["A / 8, R"]', "before": "", "after": "",
            "slice2": _REDUCED, "op": "InterSliceReduceOpI32.Add"}
    a, b = base | failing, base | (fixed or {})
    return Snippet(f"\n{_INTER_HEAD.format(**a)}\n{_INTER_PASS.format(**a)}\n",
                   f"\n{_INTER_HEAD.format(**b)}\n{_INTER_PASS.format(**b)}\n")

_ORDER = ("\nfrom visa import RNGD\nfrom visa.engines.vector.plan import plan_transition\n\n"
          "# may a stream at the {0} stage go on to the {1} stage? (the mypy plugin asks this of every chain)\n"
          'plan_transition(RNGD, "{0}", "{1}")\n')


def _order(current: str, target: str, fixed_current: str, fixed_target: str = "") -> Snippet:
    """The stage-order rule (L4730–4751) asked directly of ``plan_transition``: a chain that breaks it fails at
    run time with the stream's own refusal (``.vector_x() is not available on …``), which wraps this one."""
    return Snippet(_ORDER.format(current, target), _ORDER.format(fixed_current, fixed_target or target))


_READ = "\n .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0))"   # add the register (carried operand)
_WRITE = "\n .vector_write_operand(WriteOperand(branch=0))"          # and write the sum back into it
_ADD_F_STASH = "\n .vector_fp_binary(FpBinaryOp.AddF, Stash)"
_ADD_STASH = "\n .vector_fxp(FxpBinaryOp.AddFxp, Stash)"
_DIRECT = ("\nfrom visa.engines.vector import {imports}plan\n\n"
           "# {question} (the mypy plugin asks this of every chain)\nplan.{fn}({args})\n")


def _direct(fn: str, args: str, fixed_args: str, question: str, imports: str = "") -> Snippet:
    """A rule asked directly of the Vector Engine's ``plan``: the stream's methods never reach it with these
    arguments (a chain that would is refused first by the stream's own ``… is not available on …``)."""
    return Snippet(_DIRECT.format(imports=imports, question=question, fn=fn, args=args),
                   _DIRECT.format(imports=imports, question=question, fn=fn, args=fixed_args))


_KADD = "\n           .vector_fxp(FxpBinaryOp.AddFxp, 1)"
_KVRF = 'v = VrfTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 0)   # never loaded'
_KLOAD = ('\n    v = (ctx.sub.begin(dm.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])'
          '\n         .to_vrf(m["A % 8"], 0))')
_FOURS = ("from visa import Context, DmTensor, axes, f32, m\n" + VE_ALL + "\naxes(B=1024)\nctx = Context.acquire()\n"
          'd = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["B / 4"], m["B % 4"], 0)   # four f32 a slice')
_FOURS_PASS = ('(ctx.main.begin(d.view()).fetch(f32, m["1"], m["B % 4 # 8"]).collect(m["1"], m["B % 4 # 8"])\n'
               ' .vector_init()\n .vector_intra_slice_branch(BranchMode.Unconditional)\n'
               ' .vector_trim_way4(m["B % 4"])\n .vector_fp_unary(FpUnaryOp.Exp)\n {}\n .vector_final())')
_R = ("from visa import Context, DmTensor, axes, f32, m\n"
      + VE_ALL.replace("IntraSliceReduceOpF32,", "IntraSliceReduceOpF32, IntraSliceReduceOpI32,")
      + "\naxes(A={a}, R=4)\nctx = Context.acquire()\n"
      'd = DmTensor(ctx, f32, m["1"], m["1 # 2"], {slice_}, {element}, 0)   # rows R of 8 f32 a slice')
_R_PASS = ('(ctx.main.begin(d.view())\n .fetch(f32, {time}, {packet})\n .collect({time}, {packet})\n .vector_init()'
           '\n .vector_intra_slice_branch(BranchMode.Unconditional)\n .vector_split({split}, m["{lanes} % 4"])'
           '\n .vector_intra_slice_reduce({axis}, {otime}, {opacket}, {op})\n .vector_concat(m["1"], {packet})'
           '\n .vector_final()\n .commit({packet}, 1 << 12))')
_R_LINES = {"a": "2048", "slice_": 'm["A / 8"]', "element": 'm["R, A % 8"]', "time": 'm["R"]', "packet": 'm["A % 8"]',
            "split": 'm["R, A % 8 / 4"]', "lanes": "A", "axis": '"R"', "otime": 'm["A % 8 / 4"]',
            "opacket": 'm["A % 4"]', "op": "IntraSliceReduceOpF32.Add"}


def _sum_rows(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    """The sum over R of four rows of 8 f32 a slice (the intra-slice reduce, L5278–5573), with ``failing``'s
    fields replaced (and ``fixed``'s)."""
    a, b = _R_LINES | failing, _R_LINES | (fixed or {})
    return Snippet(f"\n{_R.format(**a)}\n{_R_PASS.format(**a)}\n", f"\n{_R.format(**b)}\n{_R_PASS.format(**b)}\n")


_UNZIP = ("\n .vector_init()\n .vector_intra_slice_unzip(\"T\", m[\"1 # 2\"], m[\"1\"])   # group by T"
          "\n .vector_fxp_zip(FxpBinaryOp.AddFxp)\n .vector_final()")
_T = {"imports": VE_ALL, "axes": ", T={}", "element": 'm["T, A % 8"]', "fetch": '.fetch(i32, m["T"], m["A % 8"])',
      "collect": '.collect(m["T"], m["A % 8"])', "vector": _UNZIP}
_BIG = {"imports": VE_ALL, "axes": ", T=64, I=2", "element": 'm["{}, A % 8"]',
        "fetch": '.fetch(i32, m["{}"], m["A % 8"])', "collect": '.collect(m["{}"], m["A % 8"])', "vector": "",
        "commit": '.commit(m["T, A % 8"], 1 << 12)'}
_UNZIP_IT = ("\n .vector_init()\n .vector_intra_slice_unzip(\"I\", m[\"{}\"], m[\"T\"])"
             "\n .vector_fxp_zip(FxpBinaryOp.AddFxp)\n .vector_final()")
_LOG = ('\n    v = (ctx.sub.begin(dm.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])'
        '\n         .to_vrf(m["A % 8"], 0))   # the branch log: one ExecutionId per element')
_LANES = ("\nfrom visa import RNGD, axes, i32, m\nfrom visa.engines.vector import plan\n\naxes(A=2048)\n"
          "# {question} (the mypy plugin asks this of every chain; a stream's packets are always 8 lanes here)\n"
          "plan.{fn}(RNGD, {args})\n")


def _lanes(fn: str, args: str, fixed: str, question: str) -> Snippet:
    """A Narrow / Widen / entry rule asked of ``plan`` with packets a stream never has at that stage."""
    return Snippet(_LANES.format(fn=fn, args=args, question=question),
                   _LANES.format(fn=fn, args=fixed, question=question))


_WINDOW = ("\nfrom visa import RNGD, axes, m\nfrom visa.engines.vector import plan\n\naxes(T=4, I=2, A=8)\n"
           "# may a pass unzip the groups I of a Time that {question}? (the mypy plugin asks this of every chain)\n"
           'plan.plan_unzip(RNGD, "I", m["{time}"], m["A"], m["1 # 2, T"], m["T"])\n')
_OPERAND = ("\nfrom visa.engines.vector import elementwise\n\n"
            "# may a pass read the carried operand (OperandRead) in {0} mode?\n"
            'elementwise.plan_operand_read(None, "i32", "{0}", "vector_fxp")\n')
_BRANCH = "\n .vector_intra_slice_branch(BranchMode.Unconditional)"

#: site key → the failing and the fixed program.
ENGINES_VECTOR: dict[str, Snippet] = {
    "arith._count DtypeError: a shift count must": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.LeftShift, -1)   # shift right by shifting left?",
        "\n .vector_fxp(FxpBinaryOp.ArithRightShift, 1)"),
    "elementwise.plan_branch TypestateError: parameter mode of vector_intra_slice_branch": _v(
        _I32, _ADD, _ADD, branch='"Unconditional"'),
    "elementwise.plan_branch LayoutError: branchmode comparison takes up": _v(
        _I32, "", "", branch="BranchMode.Comparison([InputCmp.I32.Greater(k) for k in range(8)])",
        fixed_branch="BranchMode.Comparison([InputCmp.I32.Greater(k) for k in range(4)])"),
    "elementwise.plan_branch DtypeError: comparison of an stream": _v(
        _I32, "", "", branch="BranchMode.Comparison([InputCmp.I32.Greater(0.5)])",
        fixed_branch="BranchMode.Comparison([InputCmp.I32.Greater(0)])"),
    "elementwise.plan_branch TypestateError: branchmode vrf takes the": _v(
        _I32, "", "", branch="BranchMode.Vrf(3)", fixed_branch="BranchMode.Unconditional"),
    "elementwise.check_branch_log_dtype DtypeError: branchmode vrf reads executionids": _v(
        {"imports": _VRF_IMPORTS, "before": _VRF.format(dtype="f32").replace("   # never loaded", "")},
        "", "", branch="BranchMode.Vrf(v)", fixed_branch="BranchMode.Unconditional"),
    "elementwise.check_constant DtypeError: an f32 operation takes": _v(
        _F32, _SPLIT + '\n .vector_fp_binary(FpBinaryOp.AddF, "1.0")' + _CONCAT, _SPLIT + _ADD_F + _CONCAT),
    "elementwise.operand_list LayoutError: operandread selects its elements": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.always(OperandRead(branch=0)))"
              "\n .vector_write_operand(WriteOperand(branch=0))",
        "\n .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0))\n .vector_write_operand(WriteOperand(branch=0))"),
    "elementwise.operand_list LayoutError: branch operands at most": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(k, GroupId(k % 2)) for k in range(6)])",
        "\n .vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(k, GroupId(k % 2)) for k in range(5)])"),
    "elementwise.operand_list LayoutError: multiple validalways operands are": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.always(1), VeBranchOperand.always(2)])",
        "\n .vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.always(1), VeBranchOperand.group(2, GroupId(1))])"),
    "inter._plan DtypeError: is not an inter-slice": _inter({"op": "InterSliceReduceOpF32.Add"}),
    "inter._plan HardwareLimitError: slice2 has positions but": _inter({"slice2": 'm["A / 8, 1 # 8"]'}),
    "inter._plan LayoutError: axis is in the": _inter(
        {"a": "1024", "cluster": 'm["R / 2"]', "slice_": 'm["A / 8, R % 2"]', "slice2": 'm["A / 8, 1 # 2"]'}),
    "inter._plan LayoutError: slice2 and time2 keep": _inter({"slice2": 'm["A / 8, R"]'}),
    "inter._plan LayoutError: slice2 time2 do not": _inter({"slice2": 'm["A / 16, 1 # 8"]'}),
    "inter._plan LayoutError: slice2 time2 hold indices": _inter(   # the input holds A < 256 only
        {"slice_": 'm["A / 8 % 32, R, 1 # 2"]'},
        {"slice_": 'm["A / 8 % 32, R, 1 # 2"]', "slice2": 'm["A / 8 % 32, 1 # 8"]'}),
    "plan.plan_inter_entry TypestateError: this pass already ran": _inter(
        {"after": _BRANCH + '\n .vector_inter_slice_reduce(m["A / 8, 1 # 4"], m["1"], InterSliceReduceOpI32.Add)'},
        {"after": _BRANCH}),
    "single.VectorInterSliceReduceTensor.vector_intra_slice_branch TypestateError: after an intrafirst inter-slice":
        _inter({"before": _BRANCH, "after": _BRANCH}, {"before": _BRANCH}),
    "plan.plan_transition TypestateError: the inter-slice reduce is": _order("Fp", "InterSliceReduce", "Widen"),
    "plan.plan_transition TypestateError: after the inter-slice reduce": _order("InterSliceReduce", "Fxp", "Branch",
                                                                                "InterSliceReduce"),
    "plan.plan_transition TypestateError: the stage the stage": _order("Fp", "Fxp", "Branch"),
    "plan.plan_transition TypestateError: the stage needs way": _order("Branch", "Fp", "Narrow"),
    "plan.plan_stash_operand TypestateError: the stash was already": _v(
        _I32, "\n .vector_stash()\n .vector_logic(LogicBinaryOpI32.BitAnd, Stash)" + _ADD_STASH,
        "\n .vector_stash()\n .vector_logic(LogicBinaryOpI32.BitAnd, 255)" + _ADD_STASH),
    "plan.plan_stash_operand DtypeError: the stash holds but": _v(
        _I32, "\n .vector_stash()\n .vector_fxp_to_fp(31)" + _SPLIT + _ADD_F_STASH + _CONCAT,
        "\n .vector_fxp_to_fp(31)" + _SPLIT + "\n .vector_stash()" + _ADD_F_STASH + _CONCAT),
    "plan.plan_pending TypestateError: read the operand register": _v(   # a cumulative sum (L8708-8721)
        _I32, _READ, _READ + _WRITE),
    "plan.plan_second_read TypestateError: already reads the operand": _v(
        _I32, _READ + _READ + _WRITE, _READ + _WRITE),
    "plan.plan_carried_lanes LayoutError: the operand register was": _v(
        _F32, _WRITE + _SPLIT + "\n .vector_fp_binary(FpBinaryOp.AddF, OperandRead(branch=0))" + _CONCAT,
        _SPLIT + _WRITE + "\n .vector_fp_binary(FpBinaryOp.AddF, OperandRead(branch=0))" + _CONCAT),
    "plan.plan_write_operand TypestateError: vector_write_operand takes a writeoperand": _v(
        _I32, _READ + "\n .vector_write_operand(0)", _READ + _WRITE),
    "plan.plan_write_operand TypestateError: this pass already wrote": _v(
        _I32, _WRITE + _READ + _WRITE, _WRITE + _READ),
    "plan.plan_write_operand DtypeError: the op that reads": _v(
        _I32, _READ + "\n .vector_fxp_to_fp(31)\n .vector_clip(ClipBinaryOpF32.Max, 0.0)" + _WRITE,
        _READ + _WRITE + "\n .vector_fxp_to_fp(31)\n .vector_clip(ClipBinaryOpF32.Max, 0.0)"),
    "elementwise.plan_operand_read DtypeError: the operand register holds": _v(
        _I32, _WRITE + "\n .vector_fxp_to_fp(31)\n .vector_clip(ClipBinaryOpF32.Max, OperandRead(branch=0))",
        _WRITE + "\n .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0))\n .vector_fxp_to_fp(31)"),
    "ops._branch_set LayoutError: give the executionids once": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(0, branch=0))" + _WRITE, _READ + _WRITE),
    "ops._branch_set LayoutError: takes executionids 0 15": _v(
        _I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=16))" + _WRITE, _READ + _WRITE),
    "base.VeBase.__getattr__ TypestateError: vector_write_operand is not available": _v(
        _I32, _ADD + "\n .vector_filter(ValidBranchIds.of(0))" + _WRITE,
        _ADD + _WRITE + "\n .vector_filter(ValidBranchIds.of(0))"),
    "base.VeBase.__getattr__ TypestateError: vector_stash is not available": _v(
        _I32, "\n .vector_filter(ValidBranchIds.of(0))\n .vector_stash()", "\n .vector_stash()"),
    "base.VeBase.resolve TypestateError: operandread is the operand": _v(
        _F32, _SPLIT + "\n .vector_fp_unary_with_mode(FpUnaryOp.Exp, UnaryArgMode.Mode1, OperandRead(branch=0))"
        + _CONCAT, _SPLIT + "\n .vector_fp_unary(FpUnaryOp.Exp)" + _CONCAT),
    "base.VeBase.resolve DtypeError: takes a constant a": _v(_I32, "\n .vector_fxp(FxpBinaryOp.AddFxp, (1, 2))", _ADD),
    "base.VeBase._vrf PoisonError: element s of the": kernel(
        {"imports": _VRF_IMPORTS, "before": _KVRF + "\n    ",
         "vector": VECTOR.format(ops="\n           .vector_fxp(FxpBinaryOp.AddFxp, v)")},
        {"imports": _VRF_IMPORTS, "to_dm": KERNEL_LINES["to_dm"] + _KLOAD,
         "vector": VECTOR.format(ops="\n           .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "base.VeBase.resolve_ternary DtypeError: takes operand0 operand1 or": _way4(
        "\n .vector_fp_ternary(FpTernaryOp.FmaF, 0.5)",
        "\n .vector_fp_ternary(FpTernaryOp.FmaF, (0.5, 1.0))"),
    "base.VeBase.resolve_ternary DtypeError: operand1 of a ternary": _way4(
        "\n .vector_fp_ternary(FpTernaryOp.FmaF, (0.5, Stash))",
        "\n .vector_fp_ternary(FpTernaryOp.FmaF, (0.5, 1.0))"),
    "single._Ops._carried DtypeError: operand1 of a ternary": _way4(
        _WRITE + "\n .vector_fp_ternary(FpTernaryOp.FmaF, (OperandRead(branch=0), Stash))",
        _WRITE + "\n .vector_fp_ternary(FpTernaryOp.FmaF, (OperandRead(branch=0), 0.5))"),
    "single.check_mode TypestateError: takes a got": _v(
        _I32, '\n .vector_fxp_with_mode(FxpBinaryOp.SubFxp, "Mode10", 1)   # 1 - x',
        "\n .vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 1)"),
    "single._Fp._unary TypestateError: unaryargmode mode1 computes op": _way4(
        "\n .vector_fp_unary_with_mode(FpUnaryOp.Exp, UnaryArgMode.Mode1)",
        "\n .vector_fp_unary_with_mode(FpUnaryOp.Exp, UnaryArgMode.Mode1, 1.0)"),
    "plan.check_kind DtypeError: takes an operator of": _way4(
        "\n .vector_fp_unary(FpBinaryOp.AddF)",
        "\n .vector_fp_unary(FpUnaryOp.Exp)"),
    "plan.plan_concat LayoutError: vector_concat merges the innermost": module(
        _FOURS, _FOURS_PASS.format('.vector_concat(m["1"], m["B % 4 # 8"])   # one time step: nothing to pair'),
        _FOURS_PASS.format('.vector_pad_way8(m["B % 4 # 8"])')),
    "plan.plan_stash TypestateError: vector_stash is not available": _direct(
        "plan_stash", '"Filter", "Standalone", False', '"Fxp", "Standalone", False',
        "may a pass take its stash after the Filter stage?"),
    "plan.plan_write_operand TypestateError: vector_write_operand is not available": _direct(
        "plan_write_operand", 'WriteOperand(branch=0), "Filter", "Standalone", False',
        'WriteOperand(branch=0), "Fxp", "Standalone", False', "may a pass write its operand register after the "
        "Filter stage?", "WriteOperand, "),
    "plan.plan_write_operand TypestateError: vector_write_operand is unavailable in": _direct(
        "plan_write_operand", 'WriteOperand(branch=0), "Fxp", "Paired", False',
        'WriteOperand(branch=0), "Fxp", "Standalone", False', "may a two-group pass (after an unzip) write its "
        "operand register?", "WriteOperand, "),
    "intra._plan DtypeError: is not an intra-slice": _sum_rows({"op": "IntraSliceReduceOpI32.Max"},
                                                               {"op": "IntraSliceReduceOpF32.Max"}),
    "intra._plan LayoutError: the reduce axis is": _sum_rows(   # R spread over the slices, not over time
        {"a": "512", "slice_": 'm["A / 8 % 64, R"]', "element": 'm["A % 8"]', "time": 'm["1"]',
         "split": 'm["A % 8 / 4"]'}),
    "intra._plan LayoutError: packet mixes with other": _sum_rows(
        {"a": "512", "slice_": 'm["A / 2"]', "element": 'm["R, A % 2"]', "time": 'm["1"]', "packet": 'm["R, A % 2"]',
         "split": 'm["R / 2"]', "lanes": "[R, A % 2]", "otime": 'm["1"]', "opacket": 'm["[R, A % 2] % 4"]'}),
    "intra._plan LayoutError: opacket must be got": _sum_rows({"opacket": 'm["A % 2 # 4"]'}),
    "plan.plan_unzip LayoutError: the grouping axis must": stream(
        _T | {"axes": ", T=4"}, _T | {"axes": ", T=2"}),
    "plan.plan_unzip HardwareLimitError: the group inside holds": stream(   # 64 × 8 lanes of 4 bytes after I
        {k: v.format("I, T") for k, v in _BIG.items()} | {"vector": _UNZIP_IT.format("1 # 2, T")},
        {k: v.format("T, I") for k, v in _BIG.items()} | {"vector": _UNZIP_IT.format("T, 1 # 2")}),
    "relayout.plan_gather LayoutError: the holds axis which": stream(
        {"imports": _VRF_IMPORTS, "axes": ", B=8", "before": _VRF.format(dtype="i32").replace('m["A % 8"], 0)',
                                                                                            'm["B"], 0)'),
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")},
        {"imports": _VRF_IMPORTS, "axes": ", B=8", "before": _LOADED,
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "relayout.plan_gather LayoutError: the does not hold": stream(
        {"imports": _VRF_IMPORTS, "before": _VRF.format(dtype="i32").replace('m["A % 8"], 0)', 'm["A % 4"], 0)'),
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")},
        {"imports": _VRF_IMPORTS, "before": _LOADED, "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "relayout.plan_gather LayoutError: index is held by": stream(
        {"imports": _VRF_IMPORTS,
         "before": 'v = VrfTensor(ctx, i32, m["1"], m["1 # 2"], m["A % 256"], m["A / 256"], 0)\n',
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")},
        {"imports": _VRF_IMPORTS, "before": _LOADED, "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "elementwise.plan_branch UnsupportedFeatureError: branchmode is not a": _v(
        _I32, _ADD, _ADD, branch='BranchMode("Toggle")', fixed_branch='BranchMode.AxisToggle("A")'),
    "ops.axis_name LayoutError: an axis is named": _v(
        _I32, _ADD, _ADD, branch="BranchMode.AxisToggle(0)", fixed_branch='BranchMode.AxisToggle("A")'),
    "elementwise.vrf_branch_ids LayoutError: the branch log holds": kernel(
        {"imports": _VRF_IMPORTS, "to_dm": KERNEL_LINES["to_dm"] + _LOG,
         "vector": VECTOR.format(ops=_KADD).replace("Unconditional", "Vrf(v)")},
        {"imports": _VRF_IMPORTS, "to_dm": KERNEL_LINES["to_dm"] + _LOG,
         "vector": VECTOR.format(ops=_KADD).replace("Unconditional", "Vrf(v)"),
         "host": 'HostTensor.from_numpy(np.arange(2048) % 16, i32, m["A"])   # ids 0..15'}),
    "plan.plan_split LayoutError: vector_split needs a way8": _lanes(
        "plan_split", 'm["A / 4"], m["A % 4"], m["A / 2"], m["A % 2"]',
        'm["A / 8"], m["A % 8"], m["A / 4"], m["A % 4"]',
        "may a packet of 4 lanes be split in two?"),
    "plan.plan_trim LayoutError: vector_trim_way4 needs a way8": _lanes(
        "plan_trim", 'm["A / 4"], m["A % 4"], m["A % 4"]', 'm["A / 4"], m["A % 4 # 8"], m["A % 4"]',
        "may a packet of 4 lanes be trimmed to 4?"),
    "plan.plan_concat LayoutError: vector_concat needs a way4": _lanes(
        "plan_concat", 'm["A / 8"], m["A % 8"], m["A / 16"], m["A % 16"]',
        'm["A / 4"], m["A % 4"], m["A / 8"], m["A % 8"]', "may two time steps of 8 lanes be concatenated?"),
    "plan.plan_pad LayoutError: vector_pad_way8 needs a way4": _lanes(
        "plan_pad", 'm["A / 8"], m["A % 8"], m["A % 8 # 16"]', 'm["A / 4"], m["A % 4"], m["A % 4 # 8"]',
        "may a packet of 8 lanes be padded to 16?"),
    "plan.plan_entry LayoutError: requires a packet of": _lanes(
        "plan_entry", 'i32, m["A % 4"], "vector_intra_slice_branch"', 'i32, m["A % 8"], "vector_intra_slice_branch"',
        "may a stream of 4-lane packets enter the Branch stage?"),
    "elementwise.plan_operand_read TypestateError: operandread is unavailable in": Snippet(
        _OPERAND.format("Paired"), _OPERAND.format("Standalone")),
    "base.VeBase._vrf VisaError: the vrf operand belongs": stream(
        {"imports": _VRF_IMPORTS, "before": "other = Context.acquire()   # a second device\n"
                                            + _VRF.format(dtype="i32").replace("(ctx,", "(other,"),
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")},
        {"imports": _VRF_IMPORTS, "before": _VRF.format(dtype="i32"),
         "vector": ve("\n .vector_fxp(FxpBinaryOp.AddFxp, v)")}),
    "plan.remove_axis_dims LayoutError: the factor of mixes": Snippet(
        _WINDOW.format(question="slides a window T + I (a linear combination)", time="$(T : 1, I : 1)"),
        _WINDOW.format(question="holds I as a factor of its own", time="I, T")),
}
