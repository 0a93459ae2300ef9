"""Eager ops remember the user's line cheaply (code object and offset) and name it exactly in error messages."""
import gc
import inspect
import sys
import weakref

import numpy as np
import pytest

import tinyflow as tfl

HERE = "test_creation_site.py"


def _line():
    """The caller's current line number."""
    return inspect.currentframe().f_back.f_lineno


def test_every_path_of_an_op_records_the_users_exact_line():
    x = tfl.tensor(np.ones((2, 3)), requires_grad=True)
    c = tfl.tensor(np.full((2, 3), 2.0))
    ops = {}
    ops[_line()] = x + c                       # operator shortcut (two Tensors of one shape)
    ops[_line()] = tfl.multiply(x, c)           # public function, metaclass shortcut
    ops[_line()] = -x                           # unary operator shortcut
    ops[_line()] = x * 3.0                      # generic path (a scalar broadcast)
    ops[_line()] = tfl.reduce_sum(x, axis=1)    # generic path (an op with attributes)
    ops[_line()] = tfl.nn.Linear(3, 2)(x)       # inside a layer: the line that called the layer
    for line, out in ops.items():
        assert out.grad_fn.creation_site.endswith(f"{HERE}:{line}"), (out.grad_fn.op_type, line)


def test_a_multi_line_expression_in_a_long_function_names_the_line_python_reports():
    class Probe:
        def __add__(self, other):
            self.line = sys._getframe(1).f_lineno  # what Python itself reports for the `+`
            return self

    source = "def build(x):\n" + "    pad = 0\n" * 300 + "    y = (x\n         + x)\n    return y\n"
    namespace = {}
    exec(compile(source, "long_script.py", "exec"), namespace)
    y = namespace["build"](tfl.tensor(np.ones(3), requires_grad=True))
    probe = namespace["build"](Probe())
    assert probe.line in (302, 303)
    assert y.grad_fn.creation_site == f"long_script.py:{probe.line}"


def test_graph_nodes_record_their_line_the_same_way():
    line = _line() + 1
    node = tfl.Placeholder((2,), "float32") * 2.0
    assert node.creation_site.endswith(f"{HERE}:{line}")


def test_the_version_error_names_the_line_of_the_op():
    x = tfl.tensor(np.ones(3), requires_grad=True)
    a = x * 1
    line = _line() + 1
    y = a * a
    a.add_(1)
    with pytest.raises(tfl.TinyflowError, match=rf"Multiply \(created at .*{HERE}:{line}\).*changed in place"):
        y.sum().backward()


def test_recording_keeps_no_frame_and_makes_no_cycle():
    class Marker:
        pass

    def build(x):
        local = Marker()  # a frame kept alive by the recorded op would keep this alive too
        return x + x, weakref.ref(local)

    x = tfl.tensor(np.ones(3), requires_grad=True)
    y, marker = build(x)
    assert marker() is None
    fn = weakref.ref(y.grad_fn)
    gc.disable()
    try:
        del y  # freed by reference counting alone: the op does not point back to its output Tensor
        assert fn() is None
    finally:
        gc.enable()


def test_a_loop_line_is_remembered_without_leaking_into_other_lines_or_paths():
    x = tfl.tensor(np.ones(3), requires_grad=True)
    c = tfl.tensor(np.full(3, 2.0))
    loop_line, made = _line() + 2, []
    for _ in range(3):
        made.append(x + c)                     # the same code and offset three times: remembered
    other_line = _line() + 1
    other = x + c                              # same function, another line
    via_function_line = _line() + 1
    via_function = tfl.add(x, c)               # the shortcut called from tinyflow's own code
    again_line = _line() + 1
    again = x + c

    def helper(a, b):
        return a + b                           # another code object at the same depth
    helper_line = _line() - 1
    from_helper = helper(x, c)
    assert [m.grad_fn.creation_site for m in made] == [f"{made[0].grad_fn.creation_site}"] * 3
    assert made[0].grad_fn.creation_site.endswith(f"{HERE}:{loop_line}")
    for out, line in ((other, other_line), (via_function, via_function_line), (again, again_line),
                      (from_helper, helper_line)):
        assert out.grad_fn.creation_site.endswith(f"{HERE}:{line}"), (line, out.grad_fn.creation_site)
