"""return / break / continue inside tensor if/while/for: to_static gives what eager Python gives, values and gradients."""
import os

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import ConversionError

HERE = os.path.basename(__file__)


def line_of(text):
    """The line number of the first line of this file containing `text`."""
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


def check_against_eager(fn, *arrays, grads=True):
    """to_static(fn) and eager fn agree on the value and on the gradients of sum(result) for every input."""
    static_in = [tfl.tensor(a, requires_grad=grads) for a in arrays]
    eager_in = [tfl.tensor(a, requires_grad=grads) for a in arrays]
    static_out = tfl.jit.to_static(fn)(*static_in)
    eager_out = fn(*eager_in)
    np.testing.assert_allclose(static_out.numpy(), eager_out.numpy(), rtol=1e-5, atol=1e-6)
    if grads:
        tfl.reduce_sum(static_out).backward()
        tfl.reduce_sum(eager_out).backward()
        for a, b in zip(static_in, eager_in):
            np.testing.assert_allclose(np.zeros_like(a.numpy()) if a.grad is None else a.grad,
                                       np.zeros_like(b.numpy()) if b.grad is None else b.grad, rtol=1e-5, atol=1e-6)


def early_return(x):
    if tfl.reduce_sum(x) > 0:
        if tfl.reduce_max(x) > 2.0:
            return x * 3.0           # nested: returns from inside two tensor ifs
        return x * 2.0
    y = x - 1.0
    return y * y


@pytest.mark.parametrize("data", [[1.0, 2.0], [1.0, 5.0], [-1.0, -2.0]])
def test_return_inside_nested_tensor_ifs(data):
    check_against_eager(early_return, np.array(data, np.float32))


def halve_until(x):
    steps = 0
    while tfl.reduce_sum(x) > 0.1:
        x = x * 0.5
        steps += 1
        if steps > 3:
            break                    # a break in a tensor while
    else:
        x = x + 100.0                # runs when the loop ends without break
    return x


@pytest.mark.parametrize("data", [[0.3, 0.1], [10.0, 4.0], [-1.0, 0.0]])
def test_break_and_while_else(data):
    check_against_eager(halve_until, np.array(data, np.float32))


def skip_negative_rows(x):
    total = tfl.reduce_sum(x[0]) * 0.0
    for row in x:                    # a tensor for-loop over rows
        if tfl.reduce_sum(row) < 0:
            continue
        for value in row:            # nested: continue and break of the inner loop only
            if value > 2.0:
                break
            if value < 0:
                continue
            total = total + value * value
    return total


def test_continue_and_break_in_nested_tensor_for_loops():
    check_against_eager(skip_negative_rows, np.array([[1.0, 2.0, 3.0], [-3.0, 1.0, 0.5], [0.5, -0.5, 1.5],
                                                      [3.0, 1.0, 1.0]], np.float32))


def first_big_row(x):
    for k, row in enumerate(x):
        if tfl.reduce_max(row) > 1.0:
            return row * 2.0, k      # a tuple from inside a loop
    return x[0] * 0.0, -1


def test_return_inside_a_tensor_loop_with_a_tuple():
    f = tfl.jit.to_static(first_big_row)
    for data, k in [([[0.5, 0.2], [3.0, 1.0], [2.0, 2.0]], 1), ([[0.5, 0.2], [0.3, 1.0]], -1)]:
        row, index = f(np.array(data, np.float32))
        expected_row, expected_k = first_big_row(tfl.tensor(np.array(data, np.float32)))
        np.testing.assert_allclose(row.numpy(), expected_row.numpy())
        assert int(index) == expected_k == k
    def row_only(x):
        return first_big_row(x)[0]
    check_against_eager(row_only, np.array([[0.5, 0.2], [3.0, 1.0]], np.float32))


def python_loop_with_escapes(x, n):
    for i in range(n):               # a Python loop: unrolled, break/continue as in Python
        if i == 1:
            continue
        if i == 4:
            break
        x = x * 2.0
    return x


def test_python_loops_keep_python_semantics():
    f = tfl.jit.to_static(python_loop_with_escapes)
    np.testing.assert_allclose(f(np.ones(2, np.float32), 10).numpy(), [8.0, 8.0])
    assert not any(n.op_type in ("Cond", "WhileLoop") for n in f.concrete_programs[0].graph.nodes)


def tensor_break_in_python_loop(x):
    for scale in [2.0, 3.0, 4.0]:    # a Python list, but the stop flag becomes a tensor
        if tfl.reduce_sum(x) > 10.0:
            break
        x = x * scale
    return x


@pytest.mark.parametrize("data", [[1.0, 1.0], [4.0, 4.0], [20.0, 0.0]])
def test_a_tensor_break_in_a_python_loop_guards_the_remaining_iterations(data):
    check_against_eager(tensor_break_in_python_loop, np.array(data, np.float32))


def falls_off_the_end(x):
    if tfl.reduce_sum(x) > 0:
        return x  # and nothing on the other path


def test_returning_a_tensor_on_some_paths_only_is_an_error_naming_the_line():
    with pytest.raises(ConversionError, match="tensor of shape") as info:
        tfl.jit.to_static(falls_off_the_end)(np.ones(2, np.float32))
    assert f"{HERE}:{line_of('return x  # and nothing')}" in str(info.value)
