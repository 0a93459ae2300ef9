"""AST conversion inside to_static: tensor-dependent if/while become graph control flow; the rest stays Python."""
import os

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import ConversionError

HERE = os.path.basename(__file__)


def line_of(text):
    """The line number of the first line of this file containing `text` (error messages name it)."""
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


def relu_or_square(x):
    if tfl.reduce_sum(x) > 0:
        y = tfl.relu(x)
    else:
        temp = x * x       # a branch-local temporary is fine
        y = temp + 1.0
    return y


def test_tensor_if_becomes_cond_and_each_call_takes_the_right_branch():
    f = tfl.jit.to_static(relu_or_square)
    pos, neg = np.array([1.0, -0.5, 2.0], np.float32), np.array([-1.0, 0.5, -2.0], np.float32)
    np.testing.assert_allclose(f(pos), np.maximum(pos, 0))
    np.testing.assert_allclose(f(neg), neg * neg + 1)
    assert len(f.concrete_programs) == 1  # one program, the branch is chosen at run time
    assert any(n.op_type == "Cond" for n in f.concrete_programs[0].graph.nodes)


def test_python_conditions_keep_python_semantics():
    def scaled(x, double):
        if double:
            x = x * 2.0
        n = 0
        while n < 3:
            x = x + 1.0
            n += 1
        return x

    f = tfl.jit.to_static(scaled)
    np.testing.assert_allclose(f(np.zeros(2, np.float32), True), [3.0, 3.0])
    np.testing.assert_allclose(f(np.ones(2, np.float32), False), [4.0, 4.0])
    assert not any(n.op_type in ("Cond", "WhileLoop") for n in tfl.get_default_graph().nodes)


def halve_until_small(x):
    steps = tfl.Constant(0)
    while tfl.reduce_max(tfl.abs(x)) > 1.0:
        x = x / 2.0
        steps = steps + 1
    return x, steps


def test_tensor_while_becomes_while_loop():
    f = tfl.jit.to_static(halve_until_small)
    x, steps = f(np.array([10.0, -3.0], np.float32))
    np.testing.assert_allclose(x, [0.625, -0.1875])
    assert isinstance(steps, tfl.Tensor) and int(steps) == 4
    x, steps = f(np.array([0.5, 0.25], np.float32))
    assert int(steps) == 0 and len(f.concrete_programs) == 1


def test_a_python_loop_switches_to_a_graph_loop_when_its_condition_becomes_a_tensor():
    def grow(x):
        total = 0.0
        while total < 100.0:   # a Python float first, then a tensor
            total = total + tfl.reduce_sum(x)
        return total

    np.testing.assert_allclose(tfl.jit.to_static(grow)(np.array([30.0], np.float32)), 120.0)


def helper_with_if(x):
    if tfl.reduce_mean(x) < 0:
        x = -x
    return x


def test_called_user_functions_are_converted_too():
    def doubled(x):
        return helper_with_if(x) * 2.0

    f = tfl.jit.to_static(doubled)
    np.testing.assert_allclose(f(np.array([-1.0, -2.0], np.float32)), [2.0, 4.0])


def test_comparisons_and_boolean_operators_on_tensors():
    def clip_sign(x):
        s = tfl.reduce_sum(x)
        if s > 0 and not s > 10:
            y = x
        else:
            y = x * 0.0
        return y

    f = tfl.jit.to_static(clip_sign)
    np.testing.assert_allclose(f(np.array([1.0, 2.0], np.float32)), [1.0, 2.0])
    np.testing.assert_allclose(f(np.array([10.0, 2.0], np.float32)), [0.0, 0.0])
    np.testing.assert_allclose(f(np.array([-1.0, -2.0], np.float32)), [0.0, 0.0])


def returns_two_shapes(x):
    if tfl.reduce_sum(x) > 0:
        return x
    return tfl.concat([x, x], 0)


def list_grows_in_a_tensor_if(x):
    ys = [x]
    if tfl.reduce_sum(x) > 0:
        ys.append(x * 2.0)
    return ys[-1]


def asks_for_a_value(x):
    return x * float(tfl.reduce_sum(x))


def asks_for_numpy(x):
    return x.numpy()


def uses_one_branch_variable(x):
    if tfl.reduce_sum(x) > 0:
        y = x
    return y


def tuple_or_tensor(x):
    if tfl.reduce_sum(x) > 0:    # tuple-or-tensor
        y = (x, x)
    else:
        y = x
    return y[0]


def tensor_or_text(x):
    if tfl.reduce_sum(x) > 0:    # tensor-or-text
        y = x
    else:
        y = "none"
    return y


def two_texts(x):
    if tfl.reduce_sum(x) > 0:    # two-texts
        y = "positive"
    else:
        y = "negative"
    return x if y else x


def loop_changes_a_structure(x):
    v = x
    while tfl.reduce_sum(v) < 10.0:    # changes-structure
        v = (v, v)
    return v


def loop_changes_a_dict(x):
    d = {}
    while tfl.reduce_sum(x) < 10.0:    # changes-a-dict
        d = {"x": x}
        x = x + 1.0
    return x


def loop_changes_nothing(x):
    while tfl.reduce_sum(x) < 10.0:    # changes-nothing
        pass
    return x


@pytest.mark.parametrize("fn, marker, message", [
    (returns_two_shapes, "    return tfl.concat([x, x], 0)", r"shape \(4,\).*the `return` at .*:\d+ gives shape \(2,\)"),
    (list_grows_in_a_tensor_if, "    if tfl.reduce_sum(x) > 0:\n        ys.append", "list 'ys' grows inside an `if`"),
    (asks_for_a_value, "x * float(", r"float\(\) of a symbolic tensor"),
    (asks_for_numpy, "x.numpy()", r"\.numpy\(\) of a symbolic tensor"),
    (uses_one_branch_variable, "    if tfl.reduce_sum(x) > 0:\n        y = x", "assigned in only one branch"),
    (tuple_or_tensor, "# tuple-or-tensor", r"variable 'y' is tuple .* in one branch of an `if` on a tensor and a tensor "
                                           r"of shape \(2,\) .* in the other; give it one structure"),
    (tensor_or_text, "# tensor-or-text", "variable 'y' is a tensor in one branch of an `if` on a tensor and a str in "
                                         "the other; make both tensors"),
    (two_texts, "# two-texts", r"variable 'y' gets different Python values in the two branches of an `if` on a tensor "
                               r"\('positive' / 'negative'\)"),
    (loop_changes_a_structure, "# changes-structure", "variable 'v' changes structure in a loop over a tensor"),
    (loop_changes_a_dict, "# changes-a-dict", r"variable 'd' \(dict\) changes in a loop on a tensor; only tensors "
                                              "and numbers can be loop variables"),
    (loop_changes_nothing, "# changes-nothing", "this loop on a tensor changes no variable"),
], ids=["return-shapes", "list-append", "float", "numpy", "one-branch", "if-structures", "if-tensor-or-text",
        "if-python-values", "loop-structure", "loop-python-object", "loop-changes-nothing"])
def test_unconvertible_code_names_the_file_line_and_the_fix(fn, marker, message):
    with open(__file__) as f:
        source = f.read()
    line = source[:source.index(marker)].count("\n") + 1
    with pytest.raises(ConversionError, match=message) as info:
        tfl.jit.to_static(fn)(np.ones(2, np.float32))
    assert f"{HERE}:{line}" in str(info.value)


def test_shape_changes_never_reuse_a_program_silently():
    f = tfl.jit.to_static(lambda x: tfl.reduce_sum(x, axis=1))
    np.testing.assert_allclose(f(np.ones((2, 3), np.float32)), [3.0, 3.0])
    np.testing.assert_allclose(f(np.ones((2, 5), np.float32)), [5.0, 5.0])
    np.testing.assert_allclose(f(np.ones((4, 5), np.float32)), [5.0] * 4)
    assert len(f.concrete_programs) == 3


def test_the_conversion_cache_converts_each_function_once():
    from tinyflow.jit import convert
    f = tfl.jit.to_static(relu_or_square)
    f(np.ones(2, np.float32))
    f(np.ones(3, np.float32))
    factory = convert._CACHE[relu_or_square.__code__]
    assert factory is not None and convert._factory(relu_or_square) is factory


def step_towards_zero(x):
    k = tfl.Constant(0)
    while k < 4:                      # a tensor loop whose body holds a tensor `if`
        if tfl.reduce_sum(x) > 0:
            x = x - 1.0
        else:
            x = x + 0.5
        k = k + 1
    return x


def test_a_tensor_if_inside_a_tensor_while():
    f = tfl.jit.to_static(step_towards_zero)
    np.testing.assert_allclose(f(np.array([1.0, 1.0], np.float32)), [0.0, 0.0])
    np.testing.assert_allclose(f(np.array([-5.0, 0.0], np.float32)), [-3.0, 2.0])
    ops = {n.op_type for n in f.concrete_programs[0].graph.nodes}
    assert {"Cond", "WhileLoop"} <= ops


class SignGate(tfl.nn.Layer):
    """A user-defined layer whose forward branches on a tensor: called inside a converted function, it is converted."""

    def forward(self, x):
        if tfl.reduce_sum(x) > 0:
            return x * 2.0
        return -x


@pytest.mark.parametrize("data", [[1.0, 2.0], [-3.0, 1.0]])
def test_a_user_layer_called_inside_a_converted_function_is_converted_too(data):
    gate = SignGate()

    def calls_a_user_layer(x):
        return gate(x) + 1.0
    x = np.array(data, np.float32)
    f = tfl.jit.to_static(calls_a_user_layer)
    np.testing.assert_allclose(f(x).numpy(), calls_a_user_layer(tfl.tensor(x)).numpy())
    assert any(n.op_type == "Cond" and n.name.startswith(f"{gate.scope}/") for n in f.concrete_programs[0].graph.nodes)


def float_of_a_one_branch_variable(x):
    if tfl.reduce_sum(x) > 0:    # float-of-one-branch
        y = 1.0
    return x * float(y)


def test_float_of_a_variable_assigned_in_one_branch_raises_conversion_error():
    """float() of a variable with no value after a tensor `if` says why (it was a raw TypeError)."""
    with open(__file__) as f:
        source = f.read()
    line = source[:source.index("# float-of-one-branch")].count("\n") + 1
    with pytest.raises(ConversionError, match=r"variable 'y' is assigned in only one branch") as info:
        tfl.jit.to_static(float_of_a_one_branch_variable)(np.ones(2, np.float32))
    assert f"{HERE}:{line}" in str(info.value)


def subtracts_from_a_popped_collected_item(x):
    ys = []
    for row in x:
        ys.append(row)
    return ys.pop() - 1.0


def test_arithmetic_on_an_item_a_tensor_loop_collected_raises_conversion_error():
    """`ys.pop() - 1` of a list a tensor loop appended to says how to use it (it was a raw TypeError)."""
    with pytest.raises(ConversionError, match=r"use it through tfl.stack\(ys\)"):
        tfl.jit.to_static(subtracts_from_a_popped_collected_item)(np.ones((3, 2), np.float32))
