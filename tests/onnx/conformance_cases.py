"""ONNX's node conformance cases, run on tinyflow; their results make the op table in docs/onnx.md
(python scripts/onnx_conformance.py rewrites it). Test tooling: test_conformance.py and the script use it.

Each case (`onnx.backend.test.case.node.collect_testcases()`: a one-node model, or its function expanded,
`*_expanded`) runs through TinyflowBackend and ends as one Outcome: "pass", "fail" (wrong values, shapes or
dtypes, or an error) or "unsupported" (the import refuses a valid model), with the reason.
"""
import collections
import functools
import re
import warnings

import numpy as np

from tinyflow.errors import OnnxImportError

# the operators issues 24 and 36 (the recurrent ones, last) ask for: every node case of these must pass
REQUIRED_OPS = tuple("""
    Abs Add And ArgMax ArgMin AveragePool BatchNormalization Cast Ceil Clip Concat Constant ConstantOfShape Conv
    ConvTranspose Cos Div Dropout Einsum Elu Equal Erf Exp Expand Flatten Floor Gather Gelu Gemm GlobalAveragePool
    GlobalMaxPool Greater HardSigmoid HardSwish Identity InstanceNormalization LayerNormalization LeakyRelu Less Log
    LogSoftmax MatMul Max MaxPool Mean Min Mod Mul Neg Not Or Pad Pow PRelu Reciprocal ReduceL2 ReduceLogSumExp
    ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize Selu Shape Sigmoid Sign
    Sin Size Slice Softmax Softplus Softsign Split Sqrt Squeeze Sub Sum Tanh Tile TopK Transpose Trilu Unsqueeze Where
    If Loop LSTM GRU RNN""".split())
BACKENDS = ("numpy", "c")
_LABELS = {"fail": "failed", "unsupported": "not supported", "pass": "passed"}
_NODE_PREFIX = re.compile(r"^\w+ node (?:'[^']*'|producing '[^']*')(?: in [^:]*)?(?: \(opset \d+\))?: ")
_RESULTS = {}  # (case name, backend) -> Outcome: each case runs once per process and backend

Outcome = collections.namedtuple("Outcome", "status reason")
Case = collections.namedtuple("Case", "op name case")  # op: the operator the case tests (expanded ones too)


@functools.lru_cache(maxsize=1)
def all_cases():
    """Every node case of the installed onnx package, as Case(op, name, case), in onnx's order."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the case builders overflow casts on purpose
        cases = [c for c in collect_testcases() if c.kind == "node" and c.model is not None]
    ops = {c.name: c.model.graph.node[0].op_type for c in cases}  # an expanded case tests its base case's op
    return [Case(ops.get(re.sub(r"_expanded(_ver\d+)?$", "", c.name), ops[c.name]), c.name, c) for c in cases]


def required_cases():
    """The cases of the operators in REQUIRED_OPS."""
    return [c for c in all_cases() if c.op in REQUIRED_OPS]


def outcome(case, backend):
    """The Outcome of one Case on one tinyflow backend (computed once, then remembered)."""
    if (case.name, backend) not in _RESULTS:
        _RESULTS[(case.name, backend)] = run_case(case.case, backend)
    return _RESULTS[(case.name, backend)]


def run_case(case, backend):
    """Run one onnx TestCase with TinyflowBackend on `backend`; returns an Outcome."""
    from onnx import TensorProto, numpy_helper
    from tinyflow.onnx.backend import TinyflowBackend

    def arrays(values):
        return [numpy_helper.to_array(x) if isinstance(x, TensorProto) else x for x in values]

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # NaN and inf are answers here (log of negatives, ...)
            rep = TinyflowBackend.prepare(case.model, backend=backend)
            for inputs, expected in case.data_sets:
                problem = compare(arrays(expected), rep.run(arrays(inputs)), case.rtol, case.atol)
                if problem:
                    return Outcome("fail", problem)
    except OnnxImportError as err:
        return Outcome("unsupported" if err.unsupported else "fail", short_reason(str(err)))
    except Exception as err:  # noqa: BLE001 - any error is this case's failure, reported with its message
        return Outcome("fail", f"{type(err).__name__}: {short_reason(str(err))}")
    return Outcome("pass", "")


def compare(expected, got, rtol, atol):
    """None when the outputs match as ONNX's runner requires (same shape and dtype, values close), else why not."""
    if len(got) != len(expected):
        return f"{len(got)} outputs instead of {len(expected)}"
    for i, (want, have) in enumerate(zip(expected, got)):
        want, have = np.asarray(want), np.asarray(have)
        if want.shape != have.shape:
            return f"output {i} has shape {have.shape} instead of {want.shape}"
        if want.dtype != have.dtype:
            return f"output {i} has dtype {have.dtype} instead of {want.dtype}"
        if want.dtype.kind == "V":  # a narrow type (bfloat16, float8, int4, ...: ml_dtypes): compare the values
            want, have = want.astype(np.float32), have.astype(np.float32)
        exact = want.dtype.kind not in "fc"
        close = have == want if exact else np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
        if not np.all(close):
            bad = int(np.size(close) - np.count_nonzero(close))
            return f"output {i}: {bad} of {want.size} values differ beyond rtol={rtol:g}, atol={atol:g}"
    return None


def short_reason(message):
    """The reason of an outcome for the table: one line, the node's name left out (it is the case's)."""
    line = " ".join(message.split())
    line = _NODE_PREFIX.sub("", line).replace(" (not supported by tinyflow's import)", "")
    line = re.sub(r" tinyflow\.onnx\.rules\.IMPORTS lists .*", "", line).strip()
    return line if len(line) <= 160 else line[:157] + "..."


def markdown(backends=BACKENDS):
    """docs/onnx.md: per operator, the cases passed / failed / not supported, and why."""
    import onnx
    cases = all_cases()
    got = {(c.name, b): outcome(c, b) for c in cases for b in backends}
    by_op = collections.defaultdict(list)
    for c in cases:
        by_op[c.op].append(c)

    def passed(selection, backend):
        return sum(got[(c.name, backend)].status == "pass" for c in selection)

    def counts(selection):
        values = [passed(selection, b) for b in backends]
        return str(values[0]) if len(set(values)) == 1 else " / ".join(f"{v} ({b})" for v, b in zip(values, backends))

    def label(o):
        return f"{_LABELS[o.status]}: {o.reason}" if o.reason else _LABELS[o.status]
    required = [c for op in REQUIRED_OPS for c in by_op.get(op, [])]
    table, notes = [], []
    for op in REQUIRED_OPS:
        selection = by_op.get(op, [])
        failed = len({c.name for c in selection for b in backends if got[(c.name, b)].status == "fail"})
        unsupported = len({c.name for c in selection if got[(c.name, backends[0])].status == "unsupported"})
        table.append(f"| {op} | {len(selection)} | " + " | ".join(str(passed(selection, b)) for b in backends)
                     + f" | {failed} | {unsupported} |")
        op_notes = []
        for c in selection:
            seen = {b: got[(c.name, b)] for b in backends}
            if any(o.status != "pass" for o in seen.values()):
                op_notes.append(f"- `{c.name}`: " + (label(seen[backends[0]]) if len(set(seen.values())) == 1 else
                                                     "; ".join(f"{b}: {label(o)}" for b, o in seen.items())))
        notes += [f"### {op}", ""] + op_notes + [""] if op_notes else []
    others = sorted({c.op for c in cases} - set(REQUIRED_OPS))
    passing = [f"{op} {passed(by_op[op], backends[0])}/{len(by_op[op])}" for op in others
               if passed(by_op[op], backends[0])]
    return "\n".join([
        "# ONNX import: operators and conformance",
        "",
        "<!-- generated by scripts/onnx_conformance.py from a run of ONNX's node conformance cases; "
        "tests/onnx/test_conformance.py fails when this file differs from what the cases give -->",
        "",
        f"The node conformance cases of onnx {onnx.__version__} (`onnx.backend.test.case.node.collect_testcases()`) "
        f"run through `tinyflow.onnx.backend.TinyflowBackend` on tinyflow's {' and '.join(backends)} backends, "
        "compared as ONNX's own runner compares them (same shape and dtype, values within rtol 1e-3, atol 1e-7 "
        "unless a case says otherwise). A case is *not supported* when the import refuses the valid model "
        "(an op without an import rule, an attribute value or dtype tinyflow does not handle), and *failed* "
        "when tinyflow runs it but gets another answer or an error.",
        "",
        f"**Listed operators: {counts(required)} of {len(required)} cases pass.** "
        f"All ONNX operators: {counts(cases)} of {len(cases)} node cases pass.",
        "",
        "| operator | cases | " + " | ".join(f"pass ({b})" for b in backends) + " | failed | not supported |",
        "|---|---|" + "---|" * len(backends) + "---|---|",
        *table, "", "## Cases of the listed operators that do not pass", "", *notes, "## Other ONNX operators", "",
        f"{len(others)} operators outside the list have node cases; the import has no rule for most of them. "
        "Cases that pass anyway (their expanded function forms use operators tinyflow imports, or a rule "
        f"exists): {', '.join(passing) or 'none'}.", ""])


def summary():
    """One line per backend (none before a case ran): how many of the cases run in this process passed."""
    names = {c.name for c in required_cases()} if _RESULTS else set()
    lines = []
    for backend in sorted({b for _, b in _RESULTS}):
        mine = [(n, o.status) for (n, b), o in _RESULTS.items() if b == backend]
        listed = [status for n, status in mine if n in names]
        lines.append(f"ONNX conformance on {backend}: {sum(s == 'pass' for _, s in mine)} of {len(mine)} node cases "
                     f"run pass ({listed.count('pass')} of {len(listed)} of the listed operators; "
                     f"{listed.count('fail')} failed, {listed.count('unsupported')} not supported)")
    return lines
