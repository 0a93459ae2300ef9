"""Property tests: random small programs with if/while/for/break/continue/return give, through to_static, the
values and gradients eager Python gives."""
import linecache
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinyflow as tfl

# Tensor conditions on the two float variables; Python ones keep Python's meaning inside the same code.
CONDITIONS = ["tfl.reduce_sum(x) > {c}", "tfl.reduce_max(x * s) < {c}", "s > {c}", "tfl.reduce_min(x) < {c}",
              "True", "False"]
UPDATES = ["x = tfl.tanh(x * 1.3 + {c})", "s = s + tfl.reduce_sum(x * x) * 0.5", "x = x * s + {c}",
           "s = s * 0.9 - tfl.reduce_max(x)", "x = x - tfl.sigmoid(s) * 0.3"]


def constants():
    return st.sampled_from([-1.0, -0.3, 0.0, 0.4, 1.2])


@st.composite
def blocks(draw, depth, in_loop):
    """A list of source lines (indented by the caller), at most `depth` levels of nesting."""
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["update", "update"] + (["if", "for_rows", "for_range", "while"] if depth > 0 else []) \
            + (["break", "continue"] if in_loop else []) + ["return"]
        kind = draw(st.sampled_from(kinds))
        c = draw(constants())
        if kind == "update":
            lines.append(draw(st.sampled_from(UPDATES)).format(c=c))
        elif kind == "return":
            lines.append(f"return x * s + {c}")
        elif kind in ("break", "continue"):
            lines.append(f"if {draw(st.sampled_from(CONDITIONS)).format(c=c)}:")
            lines.append(f"    {kind}")
        elif kind == "if":
            lines.append(f"if {draw(st.sampled_from(CONDITIONS)).format(c=c)}:")
            lines += ["    " + line for line in draw(blocks(depth - 1, in_loop))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + line for line in draw(blocks(depth - 1, in_loop))]
        elif kind == "for_rows":
            lines.append("for row in m:")
            lines.append("    x = x + row * 0.1")
            lines += ["    " + line for line in draw(blocks(depth - 1, True))]
        elif kind == "for_range":
            lines.append("for i in tfl.range(n):")
            lines += ["    " + line for line in draw(blocks(depth - 1, True))]
        else:  # the counter moves first, so a continue cannot loop forever
            lines.append("k = 0")
            lines.append("while k < n:")
            lines.append("    k = k + 1")
            lines += ["    " + line for line in draw(blocks(depth - 1, True))]
    return lines


@st.composite
def programs(draw):
    body = draw(blocks(2, False)) + ["return x + s"]
    return "def program(x, m, n):\n    s = tfl.reduce_sum(x) * 0.2\n" + textwrap.indent("\n".join(body), "    ") + "\n"


_count = [0]


def compile_program(source):
    """The function defined by `source`, with its source findable (to_static reads it) under a fake file name."""
    _count[0] += 1
    filename = f"<control-flow-program-{_count[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"tfl": tfl}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the test's own generated code
    return namespace["program"]


def run_eager(fn, x, m, n):
    tx, tm = tfl.tensor(x, requires_grad=True), tfl.tensor(m, requires_grad=True)
    out = fn(tx, tm, tfl.tensor(n))
    tfl.reduce_sum(out).backward()
    return out.numpy(), [np.zeros_like(t.numpy()) if t.grad is None else t.grad for t in (tx, tm)]


def run_static(fn, x, m, n):
    tx, tm = tfl.tensor(x, requires_grad=True), tfl.tensor(m, requires_grad=True)
    out = tfl.jit.to_static(fn)(tx, tm, n)
    tfl.reduce_sum(out).backward()
    return out.numpy(), [np.zeros_like(t.numpy()) if t.grad is None else t.grad for t in (tx, tm)]


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs(), n=st.integers(0, 3), seed=st.integers(0, 3))
def test_random_programs_agree_with_eager_python(source, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(3).astype(np.float64) * 0.5
    m = rng.standard_normal((2, 3)).astype(np.float64)
    program = compile_program(source)
    value, grads = run_eager(program, x, m, np.array(n))
    static_value, static_grads = run_static(program, x, m, np.array(n))
    np.testing.assert_allclose(static_value, value, rtol=1e-9, atol=1e-12, err_msg=source)
    for got, expected in zip(static_grads, grads):
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10, err_msg=source)
