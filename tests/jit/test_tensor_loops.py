"""Tensor for-loops inside to_static: tfl.range, rows of a tensor, enumerate, zip, lists that collect values."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import ConversionError, InputSpec

from test_escapes import check_against_eager


def weighted_rows(x, n):
    total = x[0] * 0.0
    for i in tfl.range(n):                  # n a tensor: a while_loop
        total = total + x[i] * 2.0
    for k, row in enumerate(x):             # enumerate of a tensor
        if k > 0:
            total = total - row * 0.5
    for a, b in zip(x, x[1:]):              # zip of two tensors stops at the shorter
        total = total + a * b
    return total


def test_range_enumerate_and_zip_over_tensors():
    f = tfl.jit.to_static(weighted_rows)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    for n in (0, 2, 4):
        expected = sum(2 * x[i] for i in range(n)) - 0.5 * x[1:].sum(0) + (x[:-1] * x[1:]).sum(0)
        np.testing.assert_allclose(f(x, np.array(n)).numpy(), expected, rtol=1e-6, atol=1e-6)
    assert len(f.concrete_programs) == 1  # one program: the loops run in the graph
    assert sum(node.op_type == "WhileLoop" for node in f.concrete_programs[0].graph.nodes) == 3


def test_tfl_range_is_pythons_range_for_ints_and_refuses_iteration_outside_to_static():
    assert list(tfl.range(5)) == [0, 1, 2, 3, 4] and list(tfl.range(1, 7, 2)) == [1, 3, 5]
    assert list(tfl.range(tfl.tensor(np.array(3)))) == [0, 1, 2]  # an eager Tensor has its value
    with pytest.raises(tfl.TinyflowError, match="to_static"):
        iter(tfl.range(tfl.Placeholder((), "int64")))


def test_a_comprehension_over_enumerate_or_zip_of_a_tensor_raises_a_tinyflow_error():
    @tfl.jit.to_static
    def rows_of(x):
        return tfl.stack([row for _, row in enumerate(x)])

    @tfl.jit.to_static
    def pairs_of(x):
        return tfl.stack([a + b for a, b in zip(x, x)])

    for f in (rows_of, pairs_of):
        with pytest.raises(tfl.TinyflowError, match="only by a `for` statement"):
            f(tfl.tensor(np.ones((3, 2), np.float32)))


def rnn_collect(xs, w):
    h = xs[0] * 0.0
    outputs = []
    for x in xs:                            # the rows of a (T, B, D) tensor
        h = tfl.tanh(h * w + x)
        outputs.append(h)                   # collected per iteration, as TF's TensorArray
    return tfl.reduce_sum(tfl.concat(outputs, 0) ** 2) + tfl.reduce_sum(tfl.stack(outputs)[-1])


def test_a_list_appended_in_a_tensor_loop_becomes_a_stacked_tensor_with_gradients():
    rng = np.random.default_rng(0)
    check_against_eager(rnn_collect, rng.standard_normal((5, 2, 3)).astype(np.float32),
                        np.array([0.5, -0.3, 0.8], np.float32))


def downward(n):
    values = []
    for i in tfl.range(n, 0, -2):           # a negative step
        values.append(tfl.cast(i, "float32"))
    return tfl.add_n(values) + tfl.cast(len(values), "float32") * 100.0


def test_a_negative_range_step_and_len_of_a_collected_list():
    f = tfl.jit.to_static(downward)
    assert float(f(np.array(7))) == pytest.approx(7 + 5 + 3 + 1 + 400)
    assert float(f(np.array(0))) == pytest.approx(0.0)


def zips_a_list(x):
    total = x[0]
    for a, b in zip(x, [1.0, 2.0]):
        total = total + a * b
    return total


def test_zip_of_a_tensor_and_a_python_list_is_a_conversion_error():
    with pytest.raises(ConversionError, match="zip"):
        tfl.jit.to_static(zips_a_list)(np.ones((2, 3), np.float32))


def test_the_new_forms_survive_jit_save_and_load(tmp_path):
    from test_escapes import first_big_row, halve_until, skip_negative_rows

    def model(x):
        row = first_big_row(x)[0]
        return row + halve_until(row) + skip_negative_rows(x) + rnn_collect(x[:, None, :], row * 0.1)
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 3], "float32", "x")])
    tfl.jit.save(f, tmp_path / "model")
    loaded = tfl.jit.load(tmp_path / "model")
    for data in ([[0.5, 0.2, 0.1], [3.0, -1.0, 2.0], [2.0, 2.0, 0.0]], [[0.5, 0.2, 0.3]]):
        data = np.array(data, np.float32)
        np.testing.assert_allclose(loaded(data), f(data).numpy(), rtol=1e-6)


def rnn_steps(x, w, n):
    h = x * 0.0
    for _ in tfl.range(n):
        h = tfl.tanh(h * w + x)
    return tfl.reduce_sum(h * h)


@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_loop_gradients_match_eager_autograd_for_0_1_2_and_many_iterations(steps):
    rng = np.random.default_rng(steps)
    x, w = rng.standard_normal(4), rng.standard_normal(4)
    static_x, static_w = tfl.tensor(x, requires_grad=True), tfl.tensor(w, requires_grad=True)
    eager_x, eager_w = tfl.tensor(x, requires_grad=True), tfl.tensor(w, requires_grad=True)
    static = tfl.jit.to_static(rnn_steps)(static_x, static_w, np.array(steps))
    eager = rnn_steps(eager_x, eager_w, tfl.tensor(np.array(steps)))
    static.backward()
    eager.backward()
    np.testing.assert_allclose(float(static), float(eager), rtol=1e-12)
    for a, b in ((static_x, eager_x), (static_w, eager_w)):
        expected = np.zeros(4) if b.grad is None else b.grad  # no step: w is never used
        np.testing.assert_allclose(np.zeros(4) if a.grad is None else a.grad, expected, rtol=1e-10, atol=1e-14)


def indexes_a_list_with_a_counter(x, n):
    weights = [1.0, 2.0, 3.0]
    total = x * 0.0
    for i in tfl.range(n):
        total = total + x * weights[i]
    return total


def test_indexing_a_python_list_with_a_tensor_counter_says_what_to_write():
    with pytest.raises(ConversionError, match=r"indexing a list with a tensor.*tfl.stack"):
        tfl.jit.to_static(indexes_a_list_with_a_counter)(np.ones(2, np.float32), np.array(2))


def reads_a_collected_list(x):
    doubled = []
    for row in x:
        doubled.append(row * 2.0)
    total = x[0] * 0.0
    for k, y in enumerate(doubled):         # enumerate of a list a tensor loop collected
        total = total + y * k
    for a, y in zip(x, doubled):            # zip of a tensor and such a list
        total = total + a * y
    return total


def test_enumerate_and_zip_over_a_list_a_tensor_loop_collected():
    check_against_eager(reads_a_collected_list, np.arange(6, dtype=np.float32).reshape(3, 2) / 4)


def slices_a_collected_list(x):
    doubled = []
    for row in x:
        doubled.append(row * 2.0)
    return doubled[1:]


def test_slicing_a_collected_list_names_the_line_and_says_what_to_write():
    line = slices_a_collected_list.__code__.co_firstlineno + 4
    with pytest.raises(ConversionError, match=rf"test_tensor_loops.py:{line}: a list a tensor loop appended to takes "
                                              r"one integer index.*tfl.stack\(ys\)"):
        tfl.jit.to_static(slices_a_collected_list)(np.ones((3, 2), np.float32))


def squashed_steps(x, w, n):
    h = x
    for _ in tfl.range(n):
        h = tfl.tanh(h * w) + x
    return tfl.reduce_sum(h * h)


def derivative_of_order(fn, order, x, w, n):
    """d/d(x, w) of fn, then of the sum of the previous gradients (squared for x), `order` times (eager autograd)."""
    y = fn(x, w, n)
    for _ in range(order - 1):
        gx, gw = tfl.eager.grad(y, [x, w], create_graph=True)
        y = tfl.reduce_sum(gx * gx) + tfl.reduce_sum(gw)
    return [g.numpy() for g in tfl.eager.grad(y, [x, w])]


@pytest.mark.parametrize("order", [2, 3])
def test_eager_higher_order_gradients_through_a_to_static_loop(order):
    static = tfl.jit.to_static(squashed_steps)
    values = [np.array([0.3, -0.7]), np.array([0.5, 1.2])]
    expected = derivative_of_order(squashed_steps, order, *(tfl.tensor(v, requires_grad=True) for v in values),
                                   tfl.tensor(np.array(3)))
    got = derivative_of_order(static, order, *(tfl.tensor(v, requires_grad=True) for v in values), np.array(3))
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # a layer's parameters get their second-order gradients too
    layer = tfl.nn.Linear(2, 1)
    for fn in (layer, tfl.jit.to_static(layer)):
        x = tfl.tensor(np.array([[0.3, -0.7]], np.float32), requires_grad=True)
        (gx,) = tfl.eager.grad(tfl.reduce_sum(tfl.tanh(fn(x))), [x], create_graph=True)
        for p in layer.parameters():
            p.grad = None
        tfl.reduce_sum(gx * gx).backward()
        grads = [p.grad.copy() for p in layer.parameters()]
        if fn is layer:
            eager_grads = grads
    for a, b in zip(grads, eager_grads):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_the_stacks_of_an_eager_call_are_freed_after_backward(monkeypatch):
    import gc
    import weakref
    from tinyflow.control_flow import StackPush
    stacks, push = [], StackPush.compute

    def watched(self, stack, value):
        if not any(s() is stack for s in stacks):
            stacks.append(weakref.ref(stack))
        return push(self, stack, value)
    monkeypatch.setattr(StackPush, "compute", watched)
    static = tfl.jit.to_static(squashed_steps)
    x, w = tfl.tensor(np.full(100, 0.3), requires_grad=True), tfl.tensor(np.full(100, 0.5), requires_grad=True)
    for _ in range(2):
        static(x, w, np.array(5)).backward()
    gc.collect()
    assert stacks and all(s() is None for s in stacks)  # no run keeps a stack once its gradient loop ran
